package rules

// This file is a read-only view of the decision map's conditions, for
// generators that translate the map into another language (package
// alerts writes Prometheus rules from it). It adds no behaviour: the
// conditions stay built in map.go, evaluated in cond.go.

// CondKind says what a condition tests; see the constants.
type CondKind int

// Condition kinds. "baseline" is the same fact in the baseline window;
// lim is the condition's threshold (Cond.Limit).
const (
	// CondRises: fact >= lim x baseline, beyond noise.
	CondRises CondKind = CondKind(kRises)
	// CondSteady: fact within [1/lim, lim] x baseline, or within noise.
	CondSteady CondKind = CondKind(kSteady)
	// CondFlat: not (fact >= lim x baseline, beyond noise).
	CondFlat CondKind = CondKind(kFlat)
	// CondFalls: fact <= baseline / lim, beyond noise.
	CondFalls CondKind = CondKind(kFalls)
	// CondDrops: baseline - fact >= lim (absolute, for ratios 0..1).
	CondDrops CondKind = CondKind(kDrops)
	// CondAtLeast: fact >= lim.
	CondAtLeast CondKind = CondKind(kAtLeast)
	// CondAbove: fact > lim.
	CondAbove CondKind = CondKind(kAbove)
	// CondBelow: fact < lim.
	CondBelow CondKind = CondKind(kBelow)
	// CondAtMost: fact <= lim.
	CondAtMost CondKind = CondKind(kAtMost)
	// CondAbsBelow: |fact| < lim.
	CondAbsBelow CondKind = CondKind(kAbsBelow)
	// CondRatioAtLeast: fact / other >= lim, in the incident window.
	CondRatioAtLeast CondKind = CondKind(kRatioAtLeast)
	// CondDeltaShare: fact - baseline >= lim x (other - other's baseline) > 0.
	CondDeltaShare CondKind = CondKind(kDeltaShare)
	// CondSymptom: any of Symptoms present.
	CondSymptom CondKind = CondKind(kSymptom)
	// CondNoSymptom: every one of Symptoms evaluated and absent.
	CondNoSymptom CondKind = CondKind(kNoSymptom)
	// CondAll: every one of Subs holds.
	CondAll CondKind = CondKind(kAll)
	// CondAny: some of Subs holds.
	CondAny CondKind = CondKind(kAny)
	// CondNot: the only one of Subs fails.
	CondNot CondKind = CondKind(kNot)
	// CondGrowsNoMore: fact / baseline <= lim x (other / other's
	// baseline): fact changed by no larger a factor than other.
	CondGrowsNoMore CondKind = CondKind(kGrowsNoMore)
)

// Kind returns what the condition tests.
func (c Cond) Kind() CondKind { return CondKind(c.kind) }

// Fact returns the fact the condition reads ("" for symptom and group
// conditions).
func (c Cond) Fact() FactID { return c.fact }

// Other returns the second fact of ratio and delta-share conditions, else "".
func (c Cond) Other() FactID { return c.other }

// Limit returns the condition's threshold under th and the name of its
// Thresholds field ("Rise", "KVHigh"); 0 and "" for conditions without one.
func (c Cond) Limit(th Thresholds) (float64, string) {
	if c.lim.get == nil {
		return 0, ""
	}
	return c.lim.get(th), c.lim.name
}

// Subs returns a copy of the parts of a group or negation ("all", "any",
// "not"); nil for the others.
func (c Cond) Subs() []Cond { return append([]Cond(nil), c.subs...) }

// Symptoms returns a copy of the symptoms of a symptom condition; nil for
// the others.
func (c Cond) Symptoms() []SymptomID { return append([]SymptomID(nil), c.syms...) }

// MinSamples returns the fewest observations the library requires of fact
// id in each window under th: th.MinSamplesTail for p99 quantiles,
// th.MinSamples for other quantiles and means, 0 for facts without a
// sample-count check.
func MinSamples(id FactID, th Thresholds) float64 {
	e := env{th: th}
	return e.minSamples(id)
}

// SymptomIDs returns the four symptoms in the article's order: ttft,
// tpot, tail, reliability.
func SymptomIDs() []SymptomID { return append([]SymptomID(nil), symptomIDs...) }
