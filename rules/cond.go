package rules

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
)

// Cond is one condition of the decision map, such as "queue_time_p95 >=
// 1.5x baseline" or "gpu_util_mean < 0.5". Conditions are built by the
// map (see map.go); callers read them through String and Facts.
//
// A condition evaluates to holds, fails or unknown: unknown when a fact
// it needs is missing, has too few samples, or lacks the baseline the
// comparison needs. Unknown is never read as holds or fails.
type Cond struct {
	kind  condKind
	fact  FactID
	other FactID // second fact of ratio and delta-share conditions
	lim   limit
	syms  []SymptomID
	subs  []Cond
}

type condKind int

const (
	kRises        condKind = iota // fact >= lim x baseline
	kSteady                       // fact within [1/lim, lim] x baseline
	kFlat                         // not (fact >= lim x baseline, beyond noise)
	kFalls                        // fact <= baseline / lim, beyond noise
	kDrops                        // baseline - fact >= lim (absolute, for ratios 0..1)
	kAtLeast                      // fact >= lim
	kAbove                        // fact > lim
	kBelow                        // fact < lim
	kAtMost                       // fact <= lim
	kAbsBelow                     // |fact| < lim
	kRatioAtLeast                 // fact / other >= lim (incident window)
	kDeltaShare                   // (fact - baseline) >= lim x (other - other baseline) > 0
	kSymptom                      // any of syms present
	kNoSymptom                    // every one of syms evaluated and absent
	kAll                          // every sub holds
	kAny                          // some sub holds
	kNot                          // the only sub fails
	kGrowsNoMore                  // fact / baseline <= lim x (other / other baseline)
)

func rises(f FactID) Cond             { return Cond{kind: kRises, fact: f, lim: limRise} }
func steady(f FactID) Cond            { return Cond{kind: kSteady, fact: f, lim: limSteady} }
func flat(f FactID) Cond              { return Cond{kind: kFlat, fact: f, lim: limRise} }
func falls(f FactID) Cond             { return Cond{kind: kFalls, fact: f, lim: limRise} }
func drops(f FactID, l limit) Cond    { return Cond{kind: kDrops, fact: f, lim: l} }
func atLeast(f FactID, l limit) Cond  { return Cond{kind: kAtLeast, fact: f, lim: l} }
func above(f FactID, l limit) Cond    { return Cond{kind: kAbove, fact: f, lim: l} }
func below(f FactID, l limit) Cond    { return Cond{kind: kBelow, fact: f, lim: l} }
func atMost(f FactID, l limit) Cond   { return Cond{kind: kAtMost, fact: f, lim: l} }
func absBelow(f FactID, l limit) Cond { return Cond{kind: kAbsBelow, fact: f, lim: l} }
func ratioAtLeast(f, of FactID, l limit) Cond {
	return Cond{kind: kRatioAtLeast, fact: f, other: of, lim: l}
}
func explainsRise(f, of FactID, l limit) Cond {
	return Cond{kind: kDeltaShare, fact: f, other: of, lim: l}
}

// growsNoMore holds when f changed by no larger a factor than of did:
// f / f's baseline <= of / of's baseline.
func growsNoMore(f, of FactID) Cond {
	return Cond{kind: kGrowsNoMore, fact: f, other: of, lim: limSame}
}
func symptom(ids ...SymptomID) Cond   { return Cond{kind: kSymptom, syms: ids} }
func noSymptom(ids ...SymptomID) Cond { return Cond{kind: kNoSymptom, syms: ids} }
func allOf(cs ...Cond) Cond           { return Cond{kind: kAll, subs: cs} }
func anyOf(cs ...Cond) Cond           { return Cond{kind: kAny, subs: cs} }
func not(c Cond) Cond                 { return Cond{kind: kNot, subs: []Cond{c}} }

// Facts returns the facts the condition reads, in order of appearance,
// without duplicates.
func (c Cond) Facts() []FactID {
	var ids []FactID
	seen := map[FactID]bool{}
	var walk func(Cond)
	walk = func(c Cond) {
		for _, id := range []FactID{c.fact, c.other} {
			if id != "" && !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
		for _, s := range c.subs {
			walk(s)
		}
	}
	walk(c)
	return ids
}

// String describes the condition with the default thresholds.
func (c Cond) String() string { return c.Describe(DefaultThresholds) }

// Describe describes the condition with the given thresholds.
func (c Cond) Describe(th Thresholds) string {
	v := c.lim.get
	switch c.kind {
	case kRises:
		return fmt.Sprintf("%s >= %gx baseline, beyond noise", c.fact, v(th))
	case kSteady:
		return fmt.Sprintf("%s within %gx of baseline or within noise", c.fact, v(th))
	case kFlat:
		return fmt.Sprintf("%s not up (< %gx baseline or within noise)", c.fact, v(th))
	case kFalls:
		return fmt.Sprintf("%s <= baseline / %g, beyond noise", c.fact, v(th))
	case kDrops:
		return fmt.Sprintf("%s falls by >= %g from baseline", c.fact, v(th))
	case kAtLeast:
		return fmt.Sprintf("%s >= %s", c.fact, fmtValue(c.fact, v(th)))
	case kAbove:
		return fmt.Sprintf("%s > %s", c.fact, fmtValue(c.fact, v(th)))
	case kBelow:
		return fmt.Sprintf("%s < %s", c.fact, fmtValue(c.fact, v(th)))
	case kAtMost:
		return fmt.Sprintf("%s <= %s", c.fact, fmtValue(c.fact, v(th)))
	case kAbsBelow:
		return fmt.Sprintf("|%s| < %g", c.fact, v(th))
	case kRatioAtLeast:
		return fmt.Sprintf("%s >= %gx %s", c.fact, v(th), c.other)
	case kDeltaShare:
		return fmt.Sprintf("rise of %s covers >= %g of the rise of %s", c.fact, v(th), c.other)
	case kGrowsNoMore:
		return fmt.Sprintf("%s / baseline <= %gx (%s / baseline)", c.fact, v(th), c.other)
	case kSymptom:
		return "symptom " + joinSyms(c.syms, " or ")
	case kNoSymptom:
		return "no symptom " + joinSyms(c.syms, " or ")
	case kNot:
		return "not (" + c.subs[0].Describe(th) + ")"
	case kAll, kAny:
		sep := " and "
		if c.kind == kAny {
			sep = " or "
		}
		parts := make([]string, len(c.subs))
		for i, s := range c.subs {
			parts[i] = s.Describe(th)
			if s.kind == kAll || s.kind == kAny {
				parts[i] = "(" + parts[i] + ")"
			}
		}
		return strings.Join(parts, sep)
	}
	return "?"
}

func joinSyms(ids []SymptomID, sep string) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = string(id)
	}
	return strings.Join(s, sep)
}

// outcome is the three-valued result of a condition.
type outcome int8

const (
	unknown outcome = iota
	holds
	fails
)

// Missing names a fact that could not be evaluated, and why: the fact's
// own Missing (which may wrap ErrNoSource or ErrTooLittle), or the
// reason the rules found (too few observations, no baseline). Its JSON is
// {"fact", "reason"}, the reason being Err's text.
type Missing struct {
	Fact FactID
	Err  error
}

// String returns "fact: reason".
func (m Missing) String() string { return string(m.Fact) + ": " + m.Reason() }

// Reason returns Err's text, "" when Err is nil.
func (m Missing) Reason() string {
	if m.Err == nil {
		return ""
	}
	return m.Err.Error()
}

// missingJSON is a Missing's JSON form.
type missingJSON struct {
	Fact   FactID `json:"fact"`
	Reason string `json:"reason"`
}

// MarshalJSON writes {"fact", "reason"}, the reason being Err's text.
func (m Missing) MarshalJSON() ([]byte, error) {
	return json.Marshal(missingJSON{m.Fact, m.Reason()})
}

// UnmarshalJSON reads what MarshalJSON writes; the reason reads back as
// an error of no kind (a Warning with its text).
func (m *Missing) UnmarshalJSON(b []byte) error {
	var j missingJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*m = Missing{Fact: j.Fact}
	if j.Reason != "" {
		m.Err = Warning{Text: j.Reason}
	}
	return nil
}

// result is the evaluation of one condition.
type result struct {
	out     outcome
	ev      []Evidence // known facts behind the outcome
	missing []Missing
	// strength (0..1) is how strongly a condition that holds supports:
	// the grade of a change (mild 0.5, moderate 0.75, severe 1), 1 for a
	// limit that holds. 0 when the condition does not hold.
	strength float64
}

// env is what conditions are evaluated against.
type env struct {
	facts    Facts
	th       Thresholds
	symptoms []Symptom

	e2eDone bool // e2eRes is computed
	e2eRes  e2eResult
}

// fact returns a fact usable in the incident window, or the reason it is
// not: absent, marked missing, NaN, or a quantile with too few samples.
func (e *env) fact(id FactID) (Fact, error) {
	f, err := e.facts.lookup(id)
	if err != nil {
		return f, err
	}
	if min := e.minSamples(id); !math.IsNaN(f.Incident.Count) && f.Incident.Count < min {
		return f, TooLittle("only %s observations in the incident window, need >= %s", fmtNum(f.Incident.Count), fmtNum(min))
	}
	return f, nil
}

// errNoBaseline is the reason a fact without a baseline cannot be
// compared with it.
var errNoBaseline = errors.New("no baseline")

// baseline returns the reason the fact's baseline is not usable, or nil.
func (e *env) baseline(id FactID, f Fact) error {
	if !f.HasBaseline() {
		return errNoBaseline
	}
	if min := e.minSamples(id); !math.IsNaN(f.Baseline.Count) && f.Baseline.Count < min {
		return TooLittle("only %s observations in the baseline window, need >= %s", fmtNum(f.Baseline.Count), fmtNum(min))
	}
	return nil
}

func (e *env) minSamples(id FactID) float64 {
	info, ok := Info(id)
	if !ok || (info.Kind != KindQuantile && info.Kind != KindMean) {
		return 0
	}
	if strings.HasSuffix(string(id), "_p99") {
		return e.th.MinSamplesTail
	}
	return e.th.MinSamples
}

func (e *env) symptom(id SymptomID) Symptom {
	for _, s := range e.symptoms {
		if s.ID == id {
			return s
		}
	}
	return Symptom{ID: id, Missing: []Missing{{Err: errNotJudged}}}
}

// Reasons a symptom or condition could not be judged.
var (
	errNotJudged = errors.New("symptom not judged")
	errNoRatio   = errors.New("no ratio to the baseline")
)

func verdict(ok bool) outcome {
	if ok {
		return holds
	}
	return fails
}

func (c Cond) eval(e *env) result {
	switch c.kind {
	case kSymptom, kNoSymptom:
		return c.evalSymptoms(e)
	case kAll, kAny:
		return c.evalGroup(e)
	case kNot:
		r := c.subs[0].eval(e)
		switch r.out {
		case holds:
			r.out, r.strength = fails, 0
		case fails:
			r.out, r.strength = holds, 1
		}
		return r
	}
	if r, ok := c.evalUnresolved(e); ok {
		return r
	}
	f, err := e.fact(c.fact)
	if err != nil {
		return result{missing: []Missing{{c.fact, err}}}
	}
	lim := c.lim.get(e.th)
	ev := evidenceOf(c.fact, f)
	switch c.kind {
	case kRises, kSteady, kFlat, kFalls, kDrops, kDeltaShare, kGrowsNoMore:
		if err := e.baseline(c.fact, f); err != nil {
			return result{missing: []Missing{{c.fact, err}}}
		}
	}
	var out outcome
	strength := 1.0
	switch c.kind {
	case kRises, kFlat, kFalls, kSteady:
		ch, _ := f.Effect(e.th)
		var yes, no string
		switch c.kind {
		case kRises:
			out = verdict(ch.Beyond && ch.Ratio >= lim)
			yes, no = fmt.Sprintf("rises: >= %gx", lim), fmt.Sprintf("no rise: < %gx", lim)
			if ch.Ratio >= lim && !ch.Beyond {
				no = "no rise: within noise"
			}
			strength = ch.Severity.strength()
		case kFlat:
			out = verdict(!(ch.Beyond && ch.Ratio >= lim))
			yes, no = fmt.Sprintf("not up: < %gx", lim), fmt.Sprintf("up: >= %gx", lim)
			if ch.Ratio >= lim {
				yes = "not up: within noise"
			}
		case kFalls:
			out = verdict(ch.Beyond && ch.Ratio <= 1/lim)
			yes, no = fmt.Sprintf("falls: <= 1/%g", lim), fmt.Sprintf("no fall: > 1/%g", lim)
			if ch.Ratio <= 1/lim && !ch.Beyond {
				no = "no fall: within noise"
			}
			strength = ch.Severity.strength()
		case kSteady:
			out = verdict(ch.Steady(e.th))
			yes, no = fmt.Sprintf("steady: within %gx", lim), fmt.Sprintf("changed: outside %gx", lim)
			if !(ch.Ratio >= 1/lim && ch.Ratio <= lim) {
				yes = "steady: within noise"
			}
		}
		ch = ch.Toward(c.fact)
		ev.Lead = fmt.Sprintf("%s %s vs baseline %s: %s", c.fact, fmtEst(c.fact, f.Incident), fmtEst(c.fact, f.Baseline), ch.ratioText(f))
		ev.Text = fmt.Sprintf("%s; %s (%s)", ev.Lead, ch.noiseText(), upDown(out, yes, no))
		ev.Effect = &ch
	case kDrops:
		d := f.Baseline.Value - f.Incident.Value
		ch, _ := f.Effect(e.th)
		out = verdict(d >= lim && (!ch.NoiseKnown || ch.NoiseUpper < 1))
		no := fmt.Sprintf("does not fall by %g", lim)
		if d >= lim {
			no = "the fall is within noise"
		}
		ch = ch.Toward(c.fact)
		ev.Text = fmt.Sprintf("%s %s vs baseline %s (%s; %s)", c.fact, fmtValue(c.fact, f.Incident.Value), fmtValue(c.fact, f.Baseline.Value), upDown(out, fmt.Sprintf("falls by >= %g", lim), no), ch.noiseText())
		ev.Effect = &ch
	case kAtLeast, kAbove, kBelow, kAtMost, kAbsBelow:
		// The operator printed is the one that is true of the value, so
		// that the line reads as a fact: "0.3 (< 0.5)", never "not >=".
		var op, neg string
		switch c.kind {
		case kAtLeast:
			out, op, neg = verdict(f.Incident.Value >= lim), ">=", "<"
		case kAbove:
			out, op, neg = verdict(f.Incident.Value > lim), ">", "<="
		case kBelow:
			out, op, neg = verdict(f.Incident.Value < lim), "<", ">="
		case kAtMost:
			out, op, neg = verdict(f.Incident.Value <= lim), "<=", ">"
		case kAbsBelow:
			out, op, neg = verdict(math.Abs(f.Incident.Value) < lim), "|x| <", "|x| >="
		}
		ev.Text = fmt.Sprintf("%s %s (%s %s)", c.fact, fmtValue(c.fact, f.Incident.Value), upDown(out, op, neg), fmtValue(c.fact, lim))
		if f.Lifetime {
			// Since each process started (one scrape): how much, not
			// when; it cannot single out what happens now.
			ev.Text += " (lifetime)"
			strength = SeverityMild.strength()
		}
	case kRatioAtLeast, kDeltaShare, kGrowsNoMore:
		g, err := e.fact(c.other)
		if err != nil {
			return result{missing: []Missing{{c.other, err}}}
		}
		ev2 := evidenceOf(c.other, g)
		switch c.kind {
		case kRatioAtLeast:
			r := ratio(f.Incident.Value, g.Incident.Value)
			out = verdict(r >= lim)
			ev.Text = fmt.Sprintf("%s %s vs %s %s: %s (%s %gx)", c.fact, fmtValue(c.fact, f.Incident.Value), c.other, fmtValue(c.other, g.Incident.Value), fmtRatio(r), upDown(out, ">=", "<"), lim)
		case kGrowsNoMore:
			if err := e.baseline(c.other, g); err != nil {
				return result{missing: []Missing{{c.other, err}}}
			}
			rf, rg := ratio(f.Incident.Value, f.Baseline.Value), ratio(g.Incident.Value, g.Baseline.Value)
			if math.IsNaN(rf) || math.IsNaN(rg) {
				return result{missing: []Missing{{c.fact, errNoRatio}}}
			}
			out = verdict(rf <= lim*rg)
			ev.Text = fmt.Sprintf("%s changed %s while %s changed %s (%s)", c.fact, fmtRatio(rf), c.other, fmtRatio(rg),
				upDown(out, fmt.Sprintf("no more than %gx it", lim), fmt.Sprintf("more than %gx it", lim)))
		default:
			if err := e.baseline(c.other, g); err != nil {
				return result{missing: []Missing{{c.other, err}}}
			}
			d, dOther := f.Incident.Value-f.Baseline.Value, g.Incident.Value-g.Baseline.Value
			out = verdict(dOther > 0 && d >= lim*dOther)
			share := math.NaN()
			if dOther > 0 {
				share = d / dOther
			}
			ev.Text = fmt.Sprintf("%s rose by %s while %s rose by %s: covers %s (%s %g)", c.fact, fmtValue(c.fact, d), c.other, fmtValue(c.other, dOther), fmtNum(share), upDown(out, ">=", "<"), lim)
		}
		ev2.Text = fmt.Sprintf("%s %s (reference of the line above)", c.other, fmtValue(c.other, g.Incident.Value))
		ev.tested(c, out)
		ev2.tested(c, out)
		st := 0.0
		if out == holds {
			st = 1
		}
		return result{out: out, ev: []Evidence{ev, ev2}, strength: st}
	}
	if out != holds {
		strength = 0
	}
	ev.tested(c, out)
	return result{out: out, ev: []Evidence{ev}, strength: strength}
}

func upDown(o outcome, yes, no string) string {
	if o == holds {
		return yes
	}
	return no
}

func (c Cond) evalSymptoms(e *env) result {
	var r result
	var present, absent []Evidence
	anyPresent, allKnown := false, true
	for _, id := range c.syms {
		s := e.symptom(id)
		switch {
		case !s.Evaluable:
			allKnown = false
			r.missing = append(r.missing, s.Missing...)
		case s.Present:
			anyPresent = true
			present = append(present, s.up...)
		default:
			absent = append(absent, s.Evidence...)
		}
	}
	// Keep the evidence that decides: the signals that are up when a
	// symptom shows, else those that are not.
	r.ev = absent
	if anyPresent {
		r.ev = present
	}
	switch {
	case c.kind == kSymptom && anyPresent, c.kind == kNoSymptom && !anyPresent && allKnown:
		r.out = holds
	case anyPresent, allKnown:
		r.out = fails
	}
	if r.out != unknown {
		r.missing = nil
	}
	if r.out == holds {
		r.strength = 1
		if c.kind == kSymptom {
			r.strength = 0
			for _, id := range c.syms {
				if s := e.symptom(id); s.Present {
					r.strength = math.Max(r.strength, s.Severity.strength())
				}
			}
		}
	}
	return r
}

func (c Cond) evalGroup(e *env) result {
	rs := make([]result, len(c.subs))
	n := map[outcome]int{}
	for i, s := range c.subs {
		rs[i] = s.eval(e)
		n[rs[i].out]++
	}
	var out outcome
	if c.kind == kAll {
		switch {
		case n[fails] > 0:
			out = fails
		case n[unknown] == 0:
			out = holds
		}
	} else {
		switch {
		case n[holds] > 0:
			out = holds
		case n[unknown] == 0:
			out = fails
		}
	}
	// Keep the evidence that decided the outcome: for a failed "all" the
	// failing parts, for a held "any" the holding parts, else everything
	// known (with what is missing). A held "all" is as strong as its
	// weakest part, a held "any" as its strongest.
	r := result{out: out}
	if out == holds {
		r.strength = 1
		if c.kind == kAny {
			r.strength = 0
		}
		for _, s := range rs {
			if s.out != holds {
				continue
			}
			if c.kind == kAll {
				r.strength = math.Min(r.strength, s.strength)
			} else {
				r.strength = math.Max(r.strength, s.strength)
			}
		}
	}
	for _, s := range rs {
		keep := true
		switch {
		case c.kind == kAll && out == fails, c.kind == kAny && out == holds:
			keep = s.out == out
		}
		if keep {
			r.ev = append(r.ev, s.ev...)
			if out == unknown {
				r.missing = append(r.missing, s.missing...)
			}
		}
	}
	return r
}

func ratio(v, base float64) float64 {
	if base == 0 {
		if v == 0 {
			return 1
		}
		return math.Inf(int(math.Copysign(1, v)))
	}
	return v / base
}

// quantileMean maps a latency quantile to the exact mean (_sum / _count)
// of the same histogram.
var quantileMean = map[FactID]FactID{
	TTFTP50: TTFTMean, TTFTP95: TTFTMean, TTFTP99: TTFTMean,
	QueueTimeP50: QueueTimeMean, QueueTimeP95: QueueTimeMean,
	PrefillTimeP50: PrefillTimeMean, PrefillTimeP95: PrefillTimeMean,
	DecodeTimeP95: DecodeTimeMean,
	E2EP50:        E2EMean, E2EP95: E2EMean, E2EP99: E2EMean,
	TTFTP95WithoutHot: TTFTMeanWithoutHot,
}

// unresolved reports whether quantile fact id sits in its histogram's
// lowest bucket in both windows, where its value is only the linear
// interpolation from 0 (vLLM's first prefill bucket is [0, 0.3 s]): two
// such values say nothing of how the requests changed. It returns the
// mean that decides instead, when that mean is usable with its baseline,
// and the sentence that says so.
func (e *env) unresolved(id FactID) (FactID, Evidence, bool) {
	m, ok := quantileMean[id]
	if !ok {
		return "", Evidence{}, false
	}
	f, err := e.fact(id)
	if err != nil || e.baseline(id, f) != nil || !(f.Incident.Lower <= 0 && f.Baseline.Lower <= 0) {
		return "", Evidence{}, false
	}
	g, err := e.fact(m)
	if err != nil || e.baseline(m, g) != nil {
		return "", Evidence{}, false
	}
	ev := evidenceOf(id, f)
	ev.Lead = fmt.Sprintf("%s %s vs baseline %s: both inside the lowest bucket (up to %s), where a quantile is unresolved",
		id, fmtValue(id, f.Incident.Value), fmtValue(id, f.Baseline.Value), fmtValue(id, math.Max(f.Incident.Upper, f.Baseline.Upper)))
	ev.Text = fmt.Sprintf("%s; %s decides (line above)", ev.Lead, m)
	return m, ev, true
}

// evalUnresolved evaluates a comparison with the baseline of a latency
// quantile that is unresolved (see unresolved) on the histogram's mean
// instead, the quantile's evidence (after the mean's) saying why; ok is
// false when the condition reads no unresolved quantile. A delta share moves both facts
// to their means, which add up as the phases of a request do (TTFT ~
// queue + prefill) where quantiles do not.
func (c Cond) evalUnresolved(e *env) (result, bool) {
	switch c.kind {
	case kRises, kSteady, kFlat, kFalls, kGrowsNoMore:
	case kDeltaShare:
		mf, evf, okf := e.unresolved(c.fact)
		mo, evo, oko := e.unresolved(c.other)
		if !okf && !oko {
			return result{}, false
		}
		if !okf {
			mf = quantileMean[c.fact]
		}
		if !oko {
			mo = quantileMean[c.other]
		}
		if mf == "" || mo == "" {
			return result{}, false
		}
		alt := c
		alt.fact, alt.other = mf, mo
		r := alt.eval(e)
		if r.out == unknown {
			return result{}, false
		}
		if okf {
			r.ev = append(r.ev, evf)
		}
		if oko {
			r.ev = append(r.ev, evo)
		}
		return r, true
	default:
		return result{}, false
	}
	m, ev, ok := e.unresolved(c.fact)
	if !ok {
		return result{}, false
	}
	alt := c
	alt.fact = m
	r := alt.eval(e)
	r.ev = append(r.ev, ev)
	return r, true
}
