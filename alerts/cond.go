package alerts

import (
	"fmt"
	"strings"

	"github.com/whyslow/whyslow/rules"
)

// tri is the PromQL translation of one condition of the decision map in
// three-valued logic: holds selects the groups where the condition holds,
// fails those where it fails; a group in neither is unknown (a fact not
// computable, too few observations, no baseline). "" is an expression
// that never selects anything (the condition can never be known so).
type tri struct{ holds, fails string }

// RecordName is the name of the recording rule Generate writes for fact
// id's current measure: "whyslow:" and the fact id, or the name of a newer
// measure of the fact (whyslow:waiting_mean_raw for waiting_mean), so that
// a record never changes its meaning. The names are a public contract:
// whyslow diagnose reads some of them from a server (README, "Reading
// from a server").
func RecordName(id rules.FactID) string {
	if r := factTable[id].record; r != "" {
		return "whyslow:" + r
	}
	return "whyslow:" + string(id)
}

// Recording-rule names of a fact's baseline, legacy measure and counts.
func baseName(id rules.FactID) string { return RecordName(id) + ":baseline" }
func legacyName(id rules.FactID) string {
	if r := factTable[id].legacyRecord; r != "" {
		return "whyslow:" + r
	}
	return "whyslow:" + string(id)
}
func countName(id rules.FactID) string     { return "whyslow:" + string(id) + ":count" }
func baseCountName(id rules.FactID) string { return "whyslow:" + string(id) + ":count_baseline" }
func symName(id rules.SymptomID, state string) string {
	return "whyslow:symptom_" + string(id) + ":" + state
}

// need records which recording rules the alerts read.
type need struct {
	fact, base map[rules.FactID]bool
	order      []rules.FactID
	// notExpressible lists the facts the map reads that PromQL cannot
	// compute, with the reason.
	notExpressible map[rules.FactID]string
	// names are the metric names of the versions the rules target.
	names names
}

func newNeed(nm names) *need {
	return &need{fact: map[rules.FactID]bool{}, base: map[rules.FactID]bool{}, notExpressible: map[rules.FactID]string{}, names: nm}
}

func (n *need) use(id rules.FactID, baseline bool) {
	if !n.fact[id] {
		n.fact[id] = true
		n.order = append(n.order, id)
	}
	if baseline {
		n.base[id] = true
	}
}

// expressible reports whether fact id has a PromQL expression, noting
// why not.
func (n *need) expressible(id rules.FactID) bool {
	fe, ok := factTable[id]
	if ok && fe.expr != nil {
		for _, s := range fe.signals {
			if len(n.names.of(s)) == 0 {
				n.notExpressible[id] = fmt.Sprintf("%s reads signal %s, which the vLLM versions these rules are generated for do not export "+
					"(generate them for a release that does: Options.VLLMVersion)", id, s)
				return false
			}
		}
		return true
	}
	if !ok {
		n.notExpressible[id] = "no PromQL expression for this fact yet (new in the decision map?)"
	} else {
		n.notExpressible[id] = fe.note
	}
	return false
}

func par(s string) string { return "(" + s + ")" }

func and(parts ...string) string {
	for _, p := range parts {
		if p == "" {
			return ""
		}
	}
	ps := make([]string, len(parts))
	for i, p := range parts {
		ps[i] = par(p)
	}
	return strings.Join(ps, " and ")
}

func or(parts ...string) string {
	var ps []string
	for _, p := range parts {
		if p != "" {
			ps = append(ps, par(p))
		}
	}
	return strings.Join(ps, " or ")
}

func unless(a, b string) string {
	if a == "" || b == "" {
		return a
	}
	return par(a) + " unless " + par(b)
}

// guard is the minimum-count condition of fact id (current window, and
// the baseline window when base): increase(X_count[w]) >= N.
func (t *translator) guard(id rules.FactID, base bool) []string {
	min := rules.MinSamples(id, t.th)
	if min <= 0 || factTable[id].count == nil {
		return nil
	}
	t.need.count(id, base)
	gs := []string{fmt.Sprintf("%s >= %g", countName(id), min)}
	if base {
		gs = append(gs, fmt.Sprintf("%s >= %g", baseCountName(id), min))
	}
	return gs
}

func (n *need) count(id rules.FactID, base bool) {
	n.use(id, base)
}

// floors are the least values at which a fact's rise counts, from the
// map's thresholds: a queue must exist (QueueMin waiting requests, fleet
// sum) before its growth over a baseline of none means anything.
var floors = map[rules.FactID]func(rules.Thresholds) float64{
	rules.WaitingMean: func(th rules.Thresholds) float64 { return th.QueueMin },
}

// translator turns conditions into tri expressions.
type translator struct {
	th   rules.Thresholds
	slo  rules.SLO
	need *need
}

func num(v float64) string { return fmt.Sprintf("%g", v) }

// leaf builds holds and fails from comparisons, guarded.
func (t *translator) leaf(ids []rules.FactID, base bool, holds, fails string) tri {
	for _, id := range ids {
		if !t.need.expressible(id) {
			return tri{}
		}
	}
	var gs []string
	for _, id := range ids {
		t.need.use(id, base)
		gs = append(gs, t.guard(id, base)...)
	}
	wrap := func(e string) string {
		if len(gs) == 0 {
			return e
		}
		return and(append([]string{e}, gs...)...)
	}
	return tri{wrap(holds), wrap(fails)}
}

func (t *translator) cond(c rules.Cond) tri {
	lim, _ := c.Limit(t.th)
	f, o := c.Fact(), c.Other()
	F, B := RecordName(f), baseName(f)
	L := num(lim)
	switch c.Kind() {
	case rules.CondRises, rules.CondFlat:
		// A rise needs the fact above its floor, if it has one: from a
		// baseline of 0, any value is a rise.
		floor := "0"
		if fl, ok := floors[f]; ok {
			floor = num(fl(t.th))
		}
		r := t.leaf([]rules.FactID{f}, true,
			fmt.Sprintf("%s >= %s * %s and %s > 0 and %s >= %s", F, L, B, F, F, floor),
			fmt.Sprintf("%s < %s * %s or %s <= 0 or %s < %s", F, L, B, F, F, floor))
		if floor == "0" {
			r = t.leaf([]rules.FactID{f}, true,
				fmt.Sprintf("%s >= %s * %s and %s > 0", F, L, B, F),
				fmt.Sprintf("%s < %s * %s or %s <= 0", F, L, B, F))
		}
		if c.Kind() == rules.CondFlat {
			return tri{r.fails, r.holds}
		}
		return r
	case rules.CondSteady:
		return t.leaf([]rules.FactID{f}, true,
			fmt.Sprintf("%s <= %s * %s and %s >= %s / %s", F, L, B, F, B, L),
			fmt.Sprintf("%s > %s * %s or %s < %s / %s", F, L, B, F, B, L))
	case rules.CondFalls:
		return t.leaf([]rules.FactID{f}, true,
			fmt.Sprintf("%s <= %s / %s and %s < %s", F, B, L, F, B),
			fmt.Sprintf("%s > %s / %s or %s >= %s", F, B, L, F, B))
	case rules.CondDrops:
		return t.leaf([]rules.FactID{f}, true,
			fmt.Sprintf("%s - %s >= %s", B, F, L),
			fmt.Sprintf("%s - %s < %s", B, F, L))
	case rules.CondAtLeast:
		return t.leaf([]rules.FactID{f}, false, fmt.Sprintf("%s >= %s", F, L), fmt.Sprintf("%s < %s", F, L))
	case rules.CondAbove:
		return t.leaf([]rules.FactID{f}, false, fmt.Sprintf("%s > %s", F, L), fmt.Sprintf("%s <= %s", F, L))
	case rules.CondBelow:
		return t.leaf([]rules.FactID{f}, false, fmt.Sprintf("%s < %s", F, L), fmt.Sprintf("%s >= %s", F, L))
	case rules.CondAtMost:
		return t.leaf([]rules.FactID{f}, false, fmt.Sprintf("%s <= %s", F, L), fmt.Sprintf("%s > %s", F, L))
	case rules.CondAbsBelow:
		return t.leaf([]rules.FactID{f}, false, fmt.Sprintf("abs(%s) < %s", F, L), fmt.Sprintf("abs(%s) >= %s", F, L))
	case rules.CondRatioAtLeast:
		O := RecordName(o)
		return t.leaf([]rules.FactID{f, o}, false,
			fmt.Sprintf("%s >= %s * %s and %s > 0", F, L, O, F),
			fmt.Sprintf("%s < %s * %s or %s <= 0", F, L, O, F))
	case rules.CondDeltaShare:
		O, OB := RecordName(o), baseName(o)
		d, dO := fmt.Sprintf("(%s - %s)", F, B), fmt.Sprintf("(%s - %s)", O, OB)
		return t.leaf([]rules.FactID{f, o}, true,
			fmt.Sprintf("%s >= %s * %s and %s > 0", d, L, dO, dO),
			fmt.Sprintf("%s < %s * %s or %s <= 0", d, L, dO, dO))
	case rules.CondGrowsNoMore:
		O, OB := RecordName(o), baseName(o)
		return t.leaf([]rules.FactID{f, o}, true,
			fmt.Sprintf("%s / %s <= %s * %s / %s and %s > 0 and %s > 0", F, B, L, O, OB, B, OB),
			fmt.Sprintf("%s / %s > %s * %s / %s and %s > 0 and %s > 0", F, B, L, O, OB, B, OB))
	case rules.CondSymptom, rules.CondNoSymptom:
		var hs, fs []string
		for _, s := range c.Symptoms() {
			hs = append(hs, symName(s, "present"))
			fs = append(fs, symName(s, "absent"))
		}
		// Present when any is present; absent when every one was judged
		// absent.
		r := tri{or(hs...), and(fs...)}
		if c.Kind() == rules.CondNoSymptom {
			r = tri{r.fails, r.holds}
		}
		return r
	case rules.CondAll, rules.CondAny:
		var hs, fs []string
		for _, s := range c.Subs() {
			r := t.cond(s)
			hs, fs = append(hs, r.holds), append(fs, r.fails)
		}
		if c.Kind() == rules.CondAll {
			return tri{and(hs...), or(fs...)}
		}
		return tri{or(hs...), and(fs...)}
	case rules.CondNot:
		r := t.cond(c.Subs()[0])
		return tri{r.fails, r.holds}
	}
	return tri{}
}
