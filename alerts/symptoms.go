package alerts

import (
	"fmt"
	"maps"
	"slices"

	"github.com/whyslow/whyslow/rules"
)

// rises is rules' "fact >= Rise x baseline" (the map's rises()).
func (t *translator) rises(id rules.FactID) tri {
	F, B, L := RecordName(id), baseName(id), num(t.th.Rise)
	return t.leaf([]rules.FactID{id}, true,
		fmt.Sprintf("%s >= %s * %s and %s > 0", F, L, B, F),
		fmt.Sprintf("%s < %s * %s or %s <= 0", F, L, B, F))
}

// up judges one latency signal against its SLO target, else its baseline
// (rules.Symptoms).
func (t *translator) up(id rules.FactID, target float64) tri {
	if target > 0 {
		F := RecordName(id)
		return t.leaf([]rules.FactID{id}, false, fmt.Sprintf("%s > %g", F, target), fmt.Sprintf("%s <= %g", F, target))
	}
	return t.rises(id)
}

// known selects the groups where r is known (holds or fails).
func known(r tri) string { return or(r.holds, r.fails) }

// anyUp is a symptom of several signals: present when one is up, absent
// when none is and one was judged.
func anyUp(rs ...tri) tri {
	var hs, fs []string
	for _, r := range rs {
		hs, fs = append(hs, r.holds), append(fs, r.fails)
	}
	h := or(hs...)
	return tri{h, unless(or(fs...), h)}
}

// tailOnly is the tail symptom of one signal: p99 up while p50 is not, or
// moved TailShape times less (rules.Symptoms).
func (t *translator) tailOnly(p99, p50 rules.FactID, target float64) tri {
	hi, mid := t.up(p99, target), t.rises(p50)
	if hi.holds == "" {
		return hi
	}
	shape := fmt.Sprintf("(%s / %s) / (%s / %s)", RecordName(p99), baseName(p99), RecordName(p50), baseName(p50))
	t.need.use(p99, true)
	wide := fmt.Sprintf("%s >= %g", shape, t.th.TailShape)
	narrow := fmt.Sprintf("%s < %g", shape, t.th.TailShape)
	return tri{
		holds: and(hi.holds, or(mid.fails, and(mid.holds, wide))),
		fails: or(hi.fails, and(hi.holds, mid.holds, narrow)),
	}
}

// share is a failure share at or above its limit and, with a baseline,
// at or above Rise x baseline.
func (t *translator) share(id rules.FactID, target float64) tri {
	F, B, R := RecordName(id), baseName(id), num(t.th.Rise)
	return t.leaf([]rules.FactID{id}, true,
		unless(fmt.Sprintf("%s >= %g", F, target), fmt.Sprintf("%s < %s * %s", F, R, B)),
		fmt.Sprintf("%s < %g or %s < %s * %s", F, target, F, R, B))
}

// symptom translates rules.Symptoms for one symptom. It leaves out what
// PromQL cannot follow: client TTFT and timeouts (caller-named metrics)
// and the placement of an E2E rise by the lifecycle means.
func (t *translator) symptom(id rules.SymptomID) tri {
	s := t.slo
	switch id {
	case rules.SymptomTTFT:
		rs := []tri{t.up(rules.TTFTP95, s.TTFTP95)}
		if s.TTFTP95 == 0 {
			rs = append(rs, t.rises(rules.TTFTMean))
		}
		return anyUp(rs...)
	case rules.SymptomTPOT:
		p95 := t.up(rules.TPOTP95, s.TPOTP95)
		rs := []tri{p95, t.up(rules.ITLP95, s.ITLP95)}
		if s.TPOTP95 == 0 && s.ITLP95 == 0 {
			// tpot_mean stands in where no per-request TPOT histogram exists.
			m := t.rises(rules.TPOTMean)
			rs = append(rs, tri{unless(m.holds, known(p95)), unless(m.fails, known(p95))})
		}
		return anyUp(rs...)
	case rules.SymptomTail:
		return anyUp(t.tailOnly(rules.TTFTP99, rules.TTFTP50, s.TTFTP99), t.tailOnly(rules.E2EP99, rules.E2EP50, s.E2EP99))
	case rules.SymptomReliability:
		lim := s.ErrorShare
		if lim == 0 {
			lim = t.th.ErrorShare
		}
		return anyUp(t.share(rules.ErrorShare, lim), t.share(rules.AbortShare, lim), t.share(rules.HTTP5xxShare, lim))
	}
	return tri{}
}

// sloTargets are the SLO targets of a symptom: the facts judged against
// them and their limits (none set: nil).
func sloTargets(id rules.SymptomID, slo rules.SLO) map[rules.FactID]float64 {
	out := map[rules.FactID]float64{}
	add := func(f rules.FactID, v float64) {
		if v > 0 {
			out[f] = v
		}
	}
	switch id {
	case rules.SymptomTTFT:
		add(rules.TTFTP95, slo.TTFTP95)
	case rules.SymptomTPOT:
		add(rules.TPOTP95, slo.TPOTP95)
		add(rules.ITLP95, slo.ITLP95)
	case rules.SymptomTail:
		add(rules.TTFTP99, slo.TTFTP99)
		add(rules.E2EP99, slo.E2EP99)
	case rules.SymptomReliability:
		add(rules.ErrorShare, slo.ErrorShare)
		add(rules.AbortShare, slo.ErrorShare)
		add(rules.HTTP5xxShare, slo.ErrorShare)
	}
	return out
}

// breach selects the groups where an SLO target of one of the symptoms
// is exceeded (the held-SLO gate of the hypothesis alerts): "" when none
// of them has a target.
func (t *translator) breach(ids []rules.SymptomID) string {
	var hs []string
	for _, id := range ids {
		ts := sloTargets(id, t.slo)
		for _, f := range slices.Sorted(maps.Keys(ts)) {
			if r := t.up(f, ts[f]); r.holds != "" {
				hs = append(hs, r.holds)
			}
		}
	}
	return or(hs...)
}

// sloGate is the gate of a hypothesis alert under an SLO: one of the
// targets of the symptoms it explains is exceeded, or, when none of them
// has a target, any target is. Nothing fires while the SLO holds. "" when
// no SLO is given.
func (t *translator) sloGate(explains []rules.SymptomID) string {
	if g := t.breach(explains); g != "" {
		return g
	}
	return t.breach(rules.SymptomIDs())
}
