package diagnose

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/report"
	"github.com/whyslow/whyslow/rules"
)

// This file computes the decode-side facts (rules/facts_decode.go):
// repeated preemption from vllm:request_num_preemptions, speculative
// decoding acceptance, and prefill/decode disaggregation.
//
// Roles of prefill/decode disaggregation are told per replica, first
// match wins:
//  1. a role label on the replica's series: llm_d_ai_role, role, pd_role,
//     dynamo_component, component or kv_role, whose value names prefill
//     (or kv_producer) or decode (or kv_consumer);
//  2. the shape of its metrics: a decode instance pulls KV (NIXL
//     transfers observed in vllm:nixl_xfer_time_seconds, or most of its
//     prompt tokens from source="external_kv_transfer"); a prefill
//     instance carries the NIXL families, observes no transfer and
//     finishes requests of one output token each (the prefill leg of a
//     P/D request asks for max_tokens=1).
//
// A replica with neither is aggregated (no role).

// decodeJobs adds the facts of this file to js.
func (c *factCtx) decodeJobs(js *factJobs) {
	both := func(id rules.FactID, f func(evalWindow) rules.Fact) {
		js.add(id, func() rules.Fact { return c.both(id, f) })
	}
	both(rules.RepeatPreemptedShare, func(w evalWindow) rules.Fact { return c.repeatPreemption(w, preemptedTwice) })
	both(rules.RepeatPreemptionShare, func(w evalWindow) rules.Fact { return c.repeatPreemption(w, preemptionsRepeated) })
	both(rules.PreemptedShare, func(w evalWindow) rules.Fact { return c.repeatPreemption(w, preemptedAny) })
	both(rules.PreemptedShareLower, func(w evalWindow) rules.Fact { return c.repeatPreemption(w, preemptedAnyLower) })
	both(rules.PreemptionsPerRequestMean, c.histMean(catalog.SignalRequestPreemptions))
	both(rules.SpecAcceptanceRate, func(w evalWindow) rules.Fact {
		return c.counterRatio(catalog.SignalSpecAcceptedTokens, catalog.SignalSpecDraftTokens, w, "no draft token in the window")
	})
	both(rules.SpecAcceptanceLength, c.specAcceptanceLength)
	both(rules.SpecPos0Acceptance, c.specPos0Acceptance)
	both(rules.KVTransferTimeMean, c.histMean(catalog.SignalKVTransferTime))
	both(rules.KVTransferFailureShare, c.kvTransferFailureShare)
	both(rules.PDDecodeReplicas, func(w evalWindow) rules.Fact { return c.roleCount(w, roleDecode) })
	both(rules.PDPrefillReplicas, func(w evalWindow) rules.Fact { return c.roleCount(w, rolePrefill) })
	both(rules.TTFTMeanDecodeRole, c.ttftMeanDecodeRole)
}

// What repeatPreemption measures.
const (
	preemptedTwice      = iota // rules.RepeatPreemptedShare
	preemptionsRepeated        // rules.RepeatPreemptionShare
	preemptedAny               // rules.PreemptedShare
	preemptedAnyLower          // rules.PreemptedShareLower
)

// repeatPreemption measures, from the fleet's vllm:request_num_preemptions
// over w, the share of finished requests preempted twice or more, the
// share of the preemptions that fell on them, or the share of requests
// preempted at all, with bounds (see rules.RepeatPreemptionShare).
func (c *factCtx) repeatPreemption(w evalWindow, what int) rules.Fact {
	id := catalog.SignalRequestPreemptions
	if !c.sc.has(id) {
		return rules.MissingFact(c.missingSignal(id))
	}
	inc, _, err := c.sc.fleetHist(id, w.w)
	if err != nil {
		return rules.MissingFact(err)
	}
	h := inc.Histogram
	n := h.Total()
	if !(n > 0) {
		return rules.MissingFact(rules.TooLittle("no request finished in the window"))
	}
	one := -1
	for i, b := range h.Bounds {
		if b == 1 {
			one = i
		}
	}
	if one < 0 {
		return rules.MissingFact(rules.NoSource("%s has no le=\"1\" bucket", c.sc.source(id)))
	}
	repeated := n - h.Counts[one]
	src := c.sc.source(id)
	if what == preemptedTwice {
		f := rules.Measured(repeated / n).WithSource(fmt.Sprintf("%s: (_count - bucket{le=\"1\"}) / _count", src))
		f.Incident.Count = n
		return f
	}
	sum := h.Sum
	if math.IsNaN(sum) {
		return rules.MissingFact(rules.NoSource("%s has no _sum", src))
	}
	if !(sum > 0) {
		return rules.MissingFact(rules.TooLittle("no request finished in the window had been preempted"))
	}
	lo, hi := 0.0, 0.0
	prev := 1.0
	for i := one + 1; i < len(h.Bounds); i++ {
		d := h.Counts[i] - h.Counts[i-1]
		lo += d * (math.Floor(prev) + 1)
		if math.IsInf(h.Bounds[i], 1) {
			if d > 0 {
				hi = math.Inf(1)
			}
		} else {
			hi += d * h.Bounds[i]
		}
		prev = h.Bounds[i]
	}
	// Requests in the first bucket were preempted at most once each.
	lo = math.Max(lo, sum-h.Counts[one])
	lo, hi = math.Min(lo, sum), math.Min(hi, sum)
	if what == preemptedAny || what == preemptedAnyLower {
		// Each preemption the repeated requests do not carry is one
		// request preempted once.
		up, down := (repeated+sum-lo)/n, (repeated+math.Max(0, sum-math.Max(lo, hi)))/n
		f := rules.Measured(up).WithBounds(down, up).
			WithSource(fmt.Sprintf("%s: (requests preempted twice or more + preemptions they do not carry) / _count", src))
		if what == preemptedAnyLower {
			f = rules.Measured(down).
				WithSource(fmt.Sprintf("%s: (requests preempted twice or more + preemptions they do not carry at their buckets' upper ends) / _count", src))
		}
		f.Incident.Count = n
		return f
	}
	f := rules.Measured(lo/sum).WithBounds(lo/sum, math.Max(lo, hi)/sum).
		WithSource(fmt.Sprintf("%s: preemptions of the requests in the buckets above le=\"1\" (at each bucket's lower end) / _sum; %.0f of %.0f finished requests preempted twice or more", src, repeated, n))
	f.Incident.Count = sum
	return f
}

// specAcceptanceLength is 1 + accepted tokens / drafts.
func (c *factCtx) specAcceptanceLength(w evalWindow) rules.Fact {
	f := c.counterRatio(catalog.SignalSpecAcceptedTokens, catalog.SignalSpecDrafts, w, "no draft in the window")
	if f.Known() {
		f.Incident.Value++
		f.Source = "1 + " + f.Source
	}
	return f
}

// specPos0Acceptance is the accepted tokens of draft position 0 over the
// drafts.
func (c *factCtx) specPos0Acceptance(w evalWindow) rules.Fact {
	num, den := catalog.SignalSpecAcceptedTokensByPos, catalog.SignalSpecDrafts
	if f, ok := c.need(num, den); !ok {
		return f
	}
	a, err := c.sc.fleetCounter(num, w.w, map[string]string{"position": "0"})
	if err != nil {
		return rules.MissingFact(err)
	}
	d, f, ok := c.fleetTotal(den, w, "no draft in the window")
	if !ok {
		return f
	}
	f = rules.Measured(a.Value / d).WithSource(c.sc.source(num) + `{position="0"} / ` + c.sc.source(den))
	f.Incident.Count = d
	return f
}

// kvTransferFailureShare is failed transfers over failed and observed
// ones.
func (c *factCtx) kvTransferFailureShare(w evalWindow) rules.Fact {
	if f, ok := c.need(catalog.SignalKVTransferFailures, catalog.SignalKVTransferTime); !ok {
		return f
	}
	fail, err := c.sc.fleetCounter(catalog.SignalKVTransferFailures, w.w, nil)
	if err != nil {
		return rules.MissingFact(err)
	}
	inc, _, err := c.sc.fleetHist(catalog.SignalKVTransferTime, w.w)
	if err != nil {
		return rules.MissingFact(err)
	}
	all := fail.Value + inc.Histogram.Total()
	if !(all > 0) {
		return rules.MissingFact(rules.TooLittle("no KV transfer in the window"))
	}
	f := rules.Measured(fail.Value / all).WithSource(c.sc.source(catalog.SignalKVTransferFailures) + " / (itself + " + c.sc.source(catalog.SignalKVTransferTime) + " _count)")
	f.Incident.Count = all
	return f
}

// pdRole is a replica's role in prefill/decode disaggregation.
type pdRole int

const (
	roleNone pdRole = iota
	rolePrefill
	roleDecode
)

// roleLabels are the label names that may carry a replica's role.
var roleLabels = []string{"llm_d_ai_role", "role", "pd_role", "dynamo_component", "component", "kv_role"}

// roleOfValue reads a role label's value.
func roleOfValue(v string) pdRole {
	v = strings.ToLower(v)
	switch {
	case strings.Contains(v, "prefill"), v == "kv_producer":
		return rolePrefill
	case strings.Contains(v, "decode"), v == "kv_consumer":
		return roleDecode
	}
	return roleNone
}

// labelRole returns the role a label of replica r's series names, with
// the label.
func (c *factCtx) labelRole(r int) (pdRole, string) {
	t := c.sc.replicas[r].t
	for _, name := range t.FamilyNames() {
		fam := t.Families[name]
		var ls labels.Labels
		switch {
		case len(fam.Series) > 0:
			ls = fam.Series[0].Labels
		case len(fam.Histograms) > 0:
			ls = fam.Histograms[0].Labels
		default:
			continue
		}
		for _, n := range roleLabels {
			v := ls.Get(n)
			if role := roleOfValue(v); role != roleNone {
				return role, fmt.Sprintf("label %s=%q", n, v)
			}
		}
	}
	return roleNone, ""
}

// roleOf returns replica r's role over w and how it was told.
func (c *factCtx) roleOf(r int, w evalWindow) (pdRole, string) {
	if role, how := c.labelRole(r); role != roleNone {
		return role, how
	}
	sc := c.sc
	xfer := sc.match(r, catalog.SignalKVTransferTime)
	if xfer.Found() {
		if res := sc.replicaHist(catalog.SignalKVTransferTime, r, w.w); res.err == nil && res.inc.Histogram.Total() > 0 {
			return roleDecode, "NIXL transfers observed"
		}
	}
	if sc.match(r, catalog.SignalPromptTokensBySource).Found() {
		ext, err1 := sc.replicaCounter(catalog.SignalPromptTokensBySource, r, w.w, map[string]string{"source": "external_kv_transfer"})
		all, err2 := sc.replicaCounter(catalog.SignalPromptTokensBySource, r, w.w, nil)
		if err1 == nil && err2 == nil && all.Value > 0 && ext.Value > all.Value/2 {
			return roleDecode, "most prompt tokens by KV transfer"
		}
	}
	if xfer.Found() || sc.match(r, catalog.SignalKVExpired).Found() {
		if res := sc.replicaHist(catalog.SignalGenerationTokens, r, w.w); res.err == nil {
			h := res.inc.Histogram
			if n := h.Total(); n > 0 && h.Sum/n <= 1.05 {
				return rolePrefill, "NIXL metrics, one output token per request"
			}
		}
	}
	return roleNone, ""
}

// roleCount is the number of the scope's replicas with role want over w;
// missing when no replica shows a sign of disaggregation.
func (c *factCtx) roleCount(w evalWindow, want pdRole) rules.Fact {
	n, any := 0, false
	hows := map[string]int{}
	for r := range c.sc.replicas {
		role, how := c.roleOf(r, w)
		if role == roleNone {
			continue
		}
		any = true
		if role == want {
			n++
			hows[how]++
		}
	}
	if !any {
		return rules.MissingFact(rules.NoSource("no prefill/decode disaggregation in the evidence (no role label, no NIXL transfer, no prompt tokens by KV transfer)"))
	}
	var parts []string
	for _, how := range []string{"NIXL transfers observed", "most prompt tokens by KV transfer", "NIXL metrics, one output token per request"} {
		if hows[how] > 0 {
			parts = append(parts, fmt.Sprintf("%d by %s", hows[how], how))
			delete(hows, how)
		}
	}
	labelled := 0
	for _, k := range hows {
		labelled += k
	}
	if labelled > 0 {
		parts = append(parts, fmt.Sprintf("%d by a role label", labelled))
	}
	src := "replica roles: " + strings.Join(parts, ", ")
	if n == 0 {
		src = "replica roles: none of this role"
	}
	f := rules.Measured(float64(n)).WithSource(src)
	f.Incident.Count = float64(len(c.sc.replicas))
	return f
}

// ttftMeanDecodeRole is the mean TTFT of the decode instances over w.
func (c *factCtx) ttftMeanDecodeRole(w evalWindow) rules.Fact {
	if !c.sc.has(catalog.SignalTTFT) {
		return rules.MissingFact(c.missingSignal(catalog.SignalTTFT))
	}
	var sum, n float64
	k := 0
	for r := range c.sc.replicas {
		if role, _ := c.roleOf(r, w); role != roleDecode {
			continue
		}
		k++
		res := c.sc.replicaHist(catalog.SignalTTFT, r, w.w)
		if res.err != nil || math.IsNaN(res.inc.Histogram.Sum) {
			continue
		}
		sum += res.inc.Histogram.Sum
		n += res.inc.Histogram.Total()
	}
	if k == 0 {
		return rules.MissingFact(errors.New("no decode instance told apart (see pd_decode_replicas)"))
	}
	if !(n > 0) {
		return rules.MissingFact(rules.TooLittle("no first token on the decode instances in the window"))
	}
	f := rules.Measured(sum / n).WithSource(fmt.Sprintf("%s _sum / _count of the %d decode instance(s)", c.sc.source(catalog.SignalTTFT), k))
	f.Incident.Count = n
	return f
}

// pdWarnings are the caveats of a scope with prefill/decode roles.
func pdWarnings(fs rules.Facts) []report.Warning {
	d := fs[rules.PDDecodeReplicas]
	if !d.Known() || !(d.Incident.Value > 0) {
		return nil
	}
	p := fs[rules.PDPrefillReplicas]
	np := 0.0
	if p.Known() {
		np = p.Incident.Value
	}
	return []report.Warning{warnf(report.WarnSignal, ErrMixedRoles, "prefill/decode disaggregation: %g decode and %g prefill instance(s) (%s): "+
		"the fleet's TTFT and ITL histograms mix both roles; TTFT measured on a decode instance starts after the prefill instance's work "+
		"and under-reports the user's TTFT (vLLM #29474): read the router's or gateway's TTFT for the whole; "+
		"the KV transfer is a phase of the decode instances' TTFT (kv_transfer_time_mean, ttft_mean_decode_role)", d.Incident.Value, np, d.Source)}
}
