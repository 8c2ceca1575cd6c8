package rules

import (
	"fmt"
	"strings"
)

// SymptomID names one of the four user-visible symptoms the article
// keeps apart, never mixed into one average.
type SymptomID string

// Symptom ids (public contract).
const (
	// SymptomTTFT: the first token is late (server or client TTFT p95).
	SymptomTTFT SymptomID = "ttft"
	// SymptomTPOT: generation is slow after the first token (TPOT or ITL
	// p95).
	SymptomTPOT SymptomID = "tpot"
	// SymptomTail: only some requests are slow: p99 up while p50 is not.
	SymptomTail SymptomID = "tail"
	// SymptomReliability: requests do not complete (errors, aborts, HTTP
	// 5xx, timeouts).
	SymptomReliability SymptomID = "reliability"
)

// symptomIDs lists the symptoms in the article's order.
var symptomIDs = []SymptomID{SymptomTTFT, SymptomTPOT, SymptomTail, SymptomReliability}

// Symptom is the judgement of one symptom.
type Symptom struct {
	ID SymptomID `json:"id"`
	// Present is true when the symptom shows; false when it was judged
	// absent or could not be judged (see Evaluable).
	Present bool `json:"present"`
	// Evaluable is false when no fact needed to judge the symptom was
	// usable. A symptom that cannot be evaluated never counts as absent.
	// Missing lists the signals that were not usable, and why, in
	// either case.
	Evaluable bool       `json:"evaluable"`
	Evidence  []Evidence `json:"evidence"`
	Missing   []Missing  `json:"missing,omitempty"`

	up []Evidence // evidence of the signals that are up
}

// String prints the symptom on one line followed by its evidence.
func (s Symptom) String() string {
	var b strings.Builder
	state := "absent"
	switch {
	case !s.Evaluable:
		state = "not evaluable"
	case s.Present:
		state = "PRESENT"
	}
	fmt.Fprintf(&b, "symptom %s: %s\n", s.ID, state)
	for _, e := range s.Evidence {
		fmt.Fprintf(&b, "  %s\n", e)
	}
	for _, m := range s.Missing {
		fmt.Fprintf(&b, "  missing %s\n", m)
	}
	return b.String()
}

// Symptoms judges the four symptoms, in the order ttft, tpot, tail,
// reliability.
//
// Each latency signal is judged against its SLO target when the target is
// set (value > target), otherwise against its baseline (value >=
// th.Rise x baseline). A symptom is present when any of its signals is
// up, absent when every usable signal is not, and not evaluable when no
// signal is usable.
//
//   - ttft: ttft_p95, and client_ttft_p95 when given (a late first token
//     on the client side is the user's symptom even when the server is
//     fine).
//   - tpot: tpot_p95 and itl_p95; tpot_mean stands in for tpot_p95 (against
//     the baseline only) when no per-request TPOT histogram exists.
//   - tail: ttft_p99 or e2e_p99 up while the p50 of the same signal is
//     below th.Rise x baseline: only some requests are slow.
//   - reliability: error_share, abort_share, http_5xx_share or
//     timeout_share at or above the SLO's ErrorShare (else th.ErrorShare)
//     and, with a baseline, at or above th.Rise x baseline.
func Symptoms(f Facts, slo SLO, th Thresholds) []Symptom {
	e := &env{facts: f, th: th}
	out := make([]Symptom, 0, len(symptomIDs))
	for _, id := range symptomIDs {
		out = append(out, e.judgeSymptom(id, slo))
	}
	return out
}

// signal is one fact of a symptom with its SLO target (0: none).
type signal struct {
	id     FactID
	target float64
}

func (e *env) judgeSymptom(id SymptomID, slo SLO) Symptom {
	s := Symptom{ID: id}
	var rs []result
	switch id {
	case SymptomTTFT:
		rs = append(rs, e.latencyUp(signal{TTFTP95, slo.TTFTP95}))
		if _, ok := e.facts[ClientTTFTP95]; ok {
			rs = append(rs, e.latencyUp(signal{ClientTTFTP95, slo.TTFTP95}))
		}
	case SymptomTPOT:
		r := e.latencyUp(signal{TPOTP95, slo.TPOTP95})
		if r.out == unknown {
			if m := e.latencyUp(signal{TPOTMean, 0}); m.out != unknown {
				for i := range m.ev {
					m.ev[i].Text += " [tpot_mean from sums stands in for tpot_p95: " + r.missing[0].Reason + "]"
				}
				r = m
			}
		}
		rs = append(rs, r, e.latencyUp(signal{ITLP95, slo.ITLP95}))
	case SymptomTail:
		rs = append(rs,
			e.tailOnly(signal{TTFTP99, slo.TTFTP99}, TTFTP50),
			e.tailOnly(signal{E2EP99, slo.E2EP99}, E2EP50))
	case SymptomReliability:
		for _, f := range []FactID{ErrorShare, AbortShare, HTTP5xxShare, TimeoutShare} {
			if _, ok := e.facts[f]; ok || f == ErrorShare {
				rs = append(rs, e.shareUp(f, slo.ErrorShare))
			}
		}
	}
	for _, r := range rs {
		switch r.out {
		case holds:
			s.Present, s.Evaluable = true, true
			s.up = append(s.up, r.ev...)
		case fails:
			s.Evaluable = true
		}
		s.Evidence = append(s.Evidence, r.ev...)
		s.Missing = append(s.Missing, r.missing...)
	}
	return s
}

// latencyUp judges one latency signal against its target or baseline.
func (e *env) latencyUp(sg signal) result {
	f, why := e.fact(sg.id)
	if why != "" {
		return result{missing: []Missing{{sg.id, why}}}
	}
	ev := evidenceOf(sg.id, f)
	if sg.target > 0 {
		out := verdict(f.Value > sg.target)
		ev.Text = fmt.Sprintf("%s %s %s SLO %s", sg.id, fmtValue(sg.id, f.Value), upDown(out, ">", "<="), fmtValue(sg.id, sg.target))
		return result{out: out, ev: []Evidence{ev}}
	}
	if why := e.baseline(sg.id, f); why != "" {
		return result{missing: []Missing{{sg.id, why + " and no SLO target"}}}
	}
	r := ratio(f.Value, f.Baseline)
	out := verdict(r >= e.th.Rise)
	ev.Text = fmt.Sprintf("%s %s vs baseline %s: %s (%s %gx)", sg.id, fmtEst(sg.id, f.Value, f.Upper), fmtEst(sg.id, f.Baseline, f.BaselineUpper), fmtRatioEst(r, f), upDown(out, "up: >=", "not up: <"), e.th.Rise)
	return result{out: out, ev: []Evidence{ev}}
}

// tailOnly holds when the p99 signal is up and the p50 is not.
func (e *env) tailOnly(p99 signal, p50 FactID) result {
	hi := e.latencyUp(p99)
	if hi.out != holds {
		return hi
	}
	mid := e.latencyUp(signal{p50, 0})
	r := result{ev: append(hi.ev, mid.ev...), missing: mid.missing}
	switch mid.out {
	case holds:
		r.out = fails
		r.ev[len(r.ev)-1].Text += ": the whole distribution moved, not only the tail"
	case fails:
		r.out = holds
	}
	return r
}

// shareUp judges one failure share.
func (e *env) shareUp(id FactID, target float64) result {
	f, why := e.fact(id)
	if why != "" {
		return result{missing: []Missing{{id, why}}}
	}
	ev := evidenceOf(id, f)
	lim, what := e.th.ErrorShare, "threshold"
	if target > 0 {
		lim, what = target, "SLO"
	}
	out := verdict(f.Value >= lim)
	ev.Text = fmt.Sprintf("%s %s %s %s %s", id, fmtNum(f.Value), upDown(out, ">=", "<"), what, fmtNum(lim))
	if out == holds && e.baseline(id, f) == "" {
		r := ratio(f.Value, f.Baseline)
		out = verdict(r >= e.th.Rise)
		ev.Text += fmt.Sprintf(", baseline %s: %s (%s %gx)", fmtNum(f.Baseline), fmtRatio(r), upDown(out, "up: >=", "not up: <"), e.th.Rise)
	}
	return result{out: out, ev: []Evidence{ev}}
}
