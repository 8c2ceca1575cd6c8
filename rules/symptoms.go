package rules

import (
	"fmt"
	"math"
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
	Evaluable bool `json:"evaluable"`
	// Severity grades the strongest signal that is up (SeverityNone
	// when the symptom is absent).
	Severity Severity   `json:"severity,omitempty"`
	Evidence []Evidence `json:"evidence"`
	Missing  []Missing  `json:"missing,omitempty"`
	// Group names the slice of the fleet the symptom was judged on (e.g.
	// {"model_name": "llama"}) in the union of a split report's groups;
	// empty otherwise.
	Group map[string]string `json:"group,omitempty"`

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
		if s.Severity != SeverityNone {
			state += " (" + string(s.Severity) + ")"
		}
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
// set (value > target), otherwise against its baseline: up when the
// change is beyond noise and at least th.Rise x baseline (see Effect). A
// symptom is present when any of its signals is up, absent when every
// usable signal is not, and not evaluable when no signal is usable; its
// severity is that of its strongest signal.
//
//   - ttft: ttft_p95, and client_ttft_p95 when given (a late first token
//     on the client side is the user's symptom even when the server is
//     fine); and an E2E rise whose growth lies in the queue or prefill
//     phase (see below).
//   - tpot: tpot_p95 and itl_p95; tpot_mean stands in for tpot_p95 (against
//     the baseline only) when no per-request TPOT histogram exists; and an
//     E2E rise whose growth lies in the decode phase at a higher time per
//     token.
//   - tail: ttft_p99 or e2e_p99 up while the p50 of the same signal is not
//     up, or moved th.TailShape times less than the p99 (the shape of the
//     distribution changed: only some requests are slow).
//   - reliability: any failure share at or above the SLO's ErrorShare
//     (else th.ErrorShare, 1% of requests) and, with a baseline, at or
//     above th.Rise x baseline: error_share, abort_share, http_5xx_share,
//     http_429_share, timeout_share, abandon_share (requests abandoned
//     after prefill that vLLM V1 counts nowhere), lost_share (requests
//     lost in restarts), gateway_unserved_share; or one replica
//     restarting at least th.CrashLoop times in the window
//     (restarts_replica_max; a single planned restart is not a crash
//     loop); or an engine that completes nothing while requests are in
//     flight (stalled_replicas, frozen_gauge_replicas; stall_suspected from
//     one scrape, a mild suspicion) or rejects them at admission
//     (admission_rejection_share). The evidence names the signals that
//     are up. A share from lifetime counters (Fact.Lifetime: one scrape)
//     is marked so and counts as mild at most: it says how many failed,
//     not when.
//
// An E2E rise (e2e_p95) always lands in a symptom: the lifecycle means
// (queue_time_mean + prefill_time_mean + decode_time_mean ~ e2e_mean) say
// which phase grew most; decode → tpot, queue or prefill → ttft. Longer
// answers at an unchanged time per token are a workload change, not a
// slowdown: Evaluate notes them and no symptom is raised for them. Without
// the means, the E2E rise goes to ttft or tpot by which of ttft_p95 and
// tpot_p95 (itl_p95) rose more, else to tail.
func Symptoms(f Facts, slo SLO, th Thresholds) []Symptom {
	e := &env{facts: f, th: th}
	return e.judgeSymptoms(slo)
}

func (e *env) judgeSymptoms(slo SLO) []Symptom {
	out := make([]Symptom, 0, len(symptomIDs))
	for _, id := range symptomIDs {
		out = append(out, e.judgeSymptom(id, slo))
	}
	return out
}

// signal is one fact of a symptom with its SLO target (0: none) and the
// exact mean of the same histogram that confirms a quantile's rise.
type signal struct {
	id     FactID
	target float64
	mean   FactID
}

func (e *env) judgeSymptom(id SymptomID, slo SLO) Symptom {
	s := Symptom{ID: id}
	var rs []result
	switch id {
	case SymptomTTFT:
		rs = append(rs, e.latencyUp(signal{TTFTP95, slo.TTFTP95, TTFTMean}))
		// The exact mean stands beside the p95 against the baseline; an
		// SLO target judges the p95 alone.
		if _, ok := e.facts[TTFTMean]; ok && slo.TTFTP95 == 0 {
			rs = append(rs, e.latencyUp(signal{id: TTFTMean}))
		}
		if _, ok := e.facts[ClientTTFTP95]; ok {
			rs = append(rs, e.latencyUp(signal{id: ClientTTFTP95, target: slo.TTFTP95}))
		}
		if r := e.e2e(); r.route == routeTTFT && slo.TTFTP95 == 0 {
			rs = append(rs, r.res)
		}
	case SymptomTPOT:
		r := e.latencyUp(signal{TPOTP95, slo.TPOTP95, TPOTMean})
		m := e.latencyUp(signal{id: TPOTMean})
		if r.out == unknown && m.out != unknown {
			for i := range m.ev {
				m.ev[i].Text += " [tpot_mean from sums stands in for tpot_p95: " + r.missing[0].Reason() + "]"
			}
			r, m = m, result{}
		}
		rs = append(rs, r, e.latencyUp(signal{ITLP95, slo.ITLP95, TPOTMean}))
		if m.out != unknown && slo.TPOTP95 == 0 && slo.ITLP95 == 0 {
			rs = append(rs, m)
		}
		if r := e.e2e(); r.route == routeTPOT && slo.TPOTP95 == 0 && slo.ITLP95 == 0 {
			rs = append(rs, r.res)
		}
	case SymptomTail:
		rs = append(rs,
			e.tailOnly(signal{id: TTFTP99, target: slo.TTFTP99}, TTFTP50),
			e.tailOnly(signal{id: E2EP99, target: slo.E2EP99}, E2EP50))
		if r := e.e2e(); r.route == routeTail && slo.E2EP99 == 0 {
			rs = append(rs, r.res)
		}
	case SymptomReliability:
		rs = e.reliability(slo)
	}
	for _, r := range rs {
		switch r.out {
		case holds:
			s.Present, s.Evaluable = true, true
			s.up = append(s.up, r.ev...)
			if sev := e.th.strengthGrade(r.strength); sev.strength() > s.Severity.strength() {
				s.Severity = sev
			}
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
	f, err := e.fact(sg.id)
	if err != nil {
		return result{missing: []Missing{{sg.id, err}}}
	}
	ev := evidenceOf(sg.id, f)
	if sg.target > 0 {
		out := verdict(f.Incident.Value > sg.target)
		ev.Text = fmt.Sprintf("%s %s %s SLO %s", sg.id, fmtValue(sg.id, f.Incident.Value), upDown(out, ">", "<="), fmtValue(sg.id, sg.target))
		st := 0.0
		if out == holds {
			st = math.Max(SeverityMild.strength(), e.th.grade(f.Incident.Value/sg.target).strength())
		}
		return result{out: out, ev: []Evidence{ev}, strength: st}
	}
	if err := e.baseline(sg.id, f); err != nil {
		return result{missing: []Missing{{sg.id, fmt.Errorf("%w and no SLO target", err)}}}
	}
	ch, _ := f.Effect(e.th)
	out := verdict(ch.Up(e.th))
	no := fmt.Sprintf("not up: < %gx", e.th.Rise)
	if ch.Ratio >= e.th.Rise {
		no = "not up: within noise"
	}
	if out == holds && sg.mean != "" && !(ch.BoundsLower > 1) {
		// The rise stays within the resolution of the buckets: the exact
		// mean of the same histogram must confirm it.
		if mr := e.ratioOf(sg.mean); !math.IsNaN(mr) && mr < e.th.MeanConfirm {
			out = fails
			no = fmt.Sprintf("not up: within bucket resolution (%s-%s), and the exact %s moved only %s (< %gx)",
				fmtRatio(ch.BoundsLower), fmtRatio(ch.BoundsUpper), sg.mean, fmtRatio(mr), e.th.MeanConfirm)
		}
	}
	st := 0.0
	if out == holds {
		st = ch.Severity.strength()
	}
	ch = ch.Toward(sg.id)
	ev.Lead = fmt.Sprintf("%s %s vs baseline %s: %s", sg.id, fmtEst(sg.id, f.Incident), fmtEst(sg.id, f.Baseline), ch.ratioText(f))
	ev.Text = fmt.Sprintf("%s; %s (%s)", ev.Lead, ch.noiseText(), upDown(out, fmt.Sprintf("up: >= %gx", e.th.Rise), no))
	ev.Effect = &ch
	return result{out: out, ev: []Evidence{ev}, strength: st}
}

// tailOnly holds when the p99 signal is up and the p50 is not, or moved
// th.TailShape times less.
func (e *env) tailOnly(p99 signal, p50 FactID) result {
	hi := e.latencyUp(p99)
	if hi.out != holds {
		return hi
	}
	mid := e.latencyUp(signal{id: p50})
	r := result{ev: append(hi.ev, mid.ev...), missing: mid.missing, strength: hi.strength}
	switch mid.out {
	case holds:
		f99, _ := e.facts.lookup(p99.id)
		f50, _ := e.facts.lookup(p50)
		r99, r50 := ratio(f99.Incident.Value, f99.Baseline.Value), ratio(f50.Incident.Value, f50.Baseline.Value)
		shape := r99 / r50
		last := &r.ev[len(r.ev)-1]
		if !math.IsNaN(shape) && shape >= e.th.TailShape {
			r.out = holds
			last.Text += fmt.Sprintf(": the p99 moved %s the median's change (%s >= %gx): mostly the tail", fmtRatio(shape), fmtRatio(r50), e.th.TailShape)
		} else {
			r.out, r.strength = fails, 0
			last.Text += fmt.Sprintf(": the whole distribution moved (p99 change / p50 change %s < %gx)", fmtRatio(shape), e.th.TailShape)
		}
	case fails:
		r.out = holds
	default:
		r.strength = 0
	}
	return r
}

// Routes of an E2E rise.
const (
	routeNone     = iota // E2E not up, or unknown
	routeTTFT            // the queue or prefill phase grew
	routeTPOT            // the decode phase grew at a higher time per token
	routeTail            // no phase or TTFT/TPOT evidence to place it
	routeWorkload        // longer answers at an unchanged time per token
)

// e2eResult is where an E2E rise lands, with the evidence.
type e2eResult struct {
	route int
	res   result
}

// e2e places an E2E p95 rise in a symptom by the lifecycle decomposition.
// It is computed once per evaluation.
func (e *env) e2e() e2eResult {
	if e.e2eDone {
		return e.e2eRes
	}
	e.e2eDone = true
	up := e.latencyUp(signal{id: E2EP95, mean: E2EMean})
	if up.out != holds {
		if m := e.latencyUp(signal{id: E2EMean}); m.out == holds {
			up = m
		} else {
			return e.e2eRes
		}
	}
	phases := []FactID{QueueTimeMean, PrefillTimeMean, DecodeTimeMean}
	var deltas [3]float64
	known := true
	for i, id := range phases {
		f, err := e.fact(id)
		if err != nil || e.baseline(id, f) != nil {
			known = false
			break
		}
		deltas[i] = f.Incident.Value - f.Baseline.Value
	}
	res := up
	res.ev = append([]Evidence(nil), up.ev...)
	if known {
		top := 0
		for i := range deltas {
			if deltas[i] > deltas[top] {
				top = i
			}
		}
		total := deltas[0] + deltas[1] + deltas[2]
		ev := textEvidence(fmt.Sprintf("lifecycle: mean queue %+s, prefill %+s, decode %+s per request (sum %+s): the %s phase grew most",
			fmtSigned(QueueTimeMean, deltas[0]), fmtSigned(PrefillTimeMean, deltas[1]), fmtSigned(DecodeTimeMean, deltas[2]), fmtSigned(E2EMean, total),
			[]string{"queue", "prefill", "decode"}[top]))
		res.ev = append(res.ev, ev)
		switch {
		case !(deltas[top] > 0):
			e.e2eRes = e2eResult{routeTail, res}
		case top < 2:
			e.e2eRes = e2eResult{routeTTFT, res}
		default:
			// Decode grew: slower tokens, or more of them?
			if pt, err := e.fact(TPOTMean); err == nil && e.baseline(TPOTMean, pt) == nil {
				ch, _ := pt.Effect(e.th)
				ch = ch.Toward(TPOTMean)
				pev := evidenceOf(TPOTMean, pt)
				pev.Effect = &ch
				pev.Lead = fmt.Sprintf("%s %s vs baseline %s: %s", TPOTMean, fmtValue(TPOTMean, pt.Incident.Value), fmtValue(TPOTMean, pt.Baseline.Value), ch.ratioText(pt))
				pev.Text = pev.Lead + "; " + ch.noiseText()
				res.ev = append(res.ev, pev)
				if !ch.Up(e.th) {
					pev.Text += ": the time per token did not rise; answers got longer (a workload change, not a slowdown)"
					res.ev[len(res.ev)-1] = pev
					e.e2eRes = e2eResult{routeWorkload, res}
					return e.e2eRes
				}
			}
			e.e2eRes = e2eResult{routeTPOT, res}
		}
		return e.e2eRes
	}
	// No lifecycle sums: place it by which of TTFT and TPOT rose more.
	rt := e.ratioOf(TTFTP95)
	rd := math.Max(e.ratioOf(TPOTP95), e.ratioOf(ITLP95))
	switch {
	case rt >= e.th.Rise && !(rd > rt):
		e.e2eRes = e2eResult{routeTTFT, res}
	case rd >= e.th.Rise:
		e.e2eRes = e2eResult{routeTPOT, res}
	default:
		e.e2eRes = e2eResult{routeTail, res}
	}
	return e.e2eRes
}

// ratioOf is the fact's incident / baseline ratio, NaN when unusable.
func (e *env) ratioOf(id FactID) float64 {
	f, err := e.fact(id)
	if err != nil || e.baseline(id, f) != nil {
		return math.NaN()
	}
	return ratio(f.Incident.Value, f.Baseline.Value)
}

func fmtSigned(id FactID, v float64) string {
	if v >= 0 {
		return "+" + fmtValue(id, v)
	}
	return "-" + fmtValue(id, -v)
}

// shareUp judges one failure share.
func (e *env) shareUp(id FactID, target float64) result {
	f, err := e.fact(id)
	if err != nil {
		return result{missing: []Missing{{id, err}}}
	}
	ev := evidenceOf(id, f)
	lim, what := e.th.ErrorShare, "threshold"
	if target > 0 {
		lim, what = target, "SLO"
	}
	out := verdict(f.Incident.Value >= lim)
	ev.Text = fmt.Sprintf("%s %s %s %s %s", id, fmtNum(f.Incident.Value), upDown(out, ">=", "<"), what, fmtNum(lim))
	st := 0.0
	if out == holds {
		st = math.Max(SeverityMild.strength(), e.th.grade(f.Incident.Value/lim).strength())
	}
	if f.Lifetime {
		// Lifetime counters say how many requests failed since each
		// process started, not whether they fail now: mild at most.
		ev.Text += " (lifetime, since process start: how many, not when)"
		st = math.Min(st, SeverityMild.strength())
	}
	if out == holds && e.baseline(id, f) == nil {
		r := ratio(f.Incident.Value, f.Baseline.Value)
		out = verdict(r >= e.th.Rise)
		ev.Text += fmt.Sprintf(", baseline %s: %s (%s %gx)", fmtNum(f.Baseline.Value), fmtRatio(r), upDown(out, "up: >=", "not up: <"), e.th.Rise)
	}
	if out != holds {
		st = 0
	}
	return result{out: out, ev: []Evidence{ev}, strength: st}
}

// reliabilityShares are the failure shares of the reliability symptom;
// error_share is always judged (its absence is a reason), the others when
// computed.
var reliabilityShares = []FactID{ErrorShare, AbortShare, HTTP5xxShare, TimeoutShare,
	AbandonShare, HTTP429Share, LostShare, GatewayUnservedShare}

// reliability judges the signals of requests that do not complete, and
// names the ones that are up in a last sentence item.
func (e *env) reliability(slo SLO) []result {
	var rs []result
	var up []string
	for _, f := range reliabilityShares {
		if _, ok := e.facts[f]; ok || f == ErrorShare {
			r := e.shareUp(f, slo.ErrorShare)
			if r.out == holds {
				up = append(up, string(f))
			}
			rs = append(rs, r)
		}
	}
	if _, ok := e.facts[RestartsReplicaMax]; ok {
		r := e.crashLoop()
		if r.out == holds {
			up = append(up, string(RestartsReplicaMax))
		}
		rs = append(rs, r)
	}
	more, moreUp := e.engineReliability(slo)
	rs, up = append(rs, more...), append(up, moreUp...)
	if len(up) > 0 {
		rs = append(rs, result{ev: []Evidence{textEvidence("not completing: " + strings.Join(up, ", "))}})
	}
	return rs
}

// crashLoop holds when one replica restarted at least th.CrashLoop times
// in the incident window (with a baseline, more often than in it).
func (e *env) crashLoop() result {
	f, err := e.fact(RestartsReplicaMax)
	if err != nil {
		return result{missing: []Missing{{RestartsReplicaMax, err}}}
	}
	ev := evidenceOf(RestartsReplicaMax, f)
	lim := e.th.CrashLoop
	out := verdict(f.Incident.Value >= lim)
	ev.Text = fmt.Sprintf("%s %s %s crash loop %s", RestartsReplicaMax, fmtNum(f.Incident.Value), upDown(out, ">=", "<"), fmtNum(lim))
	if out == holds && f.HasBaseline() && f.Baseline.Value >= lim {
		out = verdict(f.Incident.Value > f.Baseline.Value)
		ev.Text += fmt.Sprintf(", baseline %s (%s)", fmtNum(f.Baseline.Value), upDown(out, "more often", "as often: not new"))
	}
	st := 0.0
	if out == holds {
		st = math.Max(SeverityMild.strength(), e.th.grade(f.Incident.Value/lim).strength())
	}
	return result{out: out, ev: []Evidence{ev}, strength: st}
}
