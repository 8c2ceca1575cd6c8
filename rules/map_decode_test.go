package rules_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/whyslow/whyslow/rules"
)

// thrash is kvPreemption whose preemptions fall mostly on the few
// requests preempted twice or more.
func thrash() rules.Facts {
	return with(kvPreemption(),
		rules.RepeatPreemptionShare, fact(0.85, 0).WithBounds(0.85, 0.95),
		rules.RepeatPreemptedShare, fact(0.012, 0),
		rules.PreemptedShare, fact(0.02, 0).WithBounds(0.015, 0.02),
		rules.PreemptedShareLower, fact(0.015, 0),
		rules.PreemptionsPerRequestMean, fact(0.04, 0),
	)
}

// thrashSpikes is thrash whose backlog spikes and drains, with arrivals
// dispersed around their trend by dispersion (baseline 0.45).
func thrashSpikes(dispersion float64) rules.Facts {
	return with(thrash(),
		rules.BacklogSpike, fact(2.4, 1.28),
		rules.WaitingSlope, fact(-0.02, 0),
		rules.WaitingDrainedShare, fact(1, 1),
		rules.ArrivalDispersionDetrended, fact(dispersion, 0.45),
	)
}

// specDrop is decodePressure at steady demand whose drafts are accepted
// far less often.
func specDrop() rules.Facts {
	return with(decodePressure(),
		rules.SpecAcceptanceRate, fact(0.25, 0.7),
		rules.SpecAcceptanceLength, fact(1.75, 3.1),
		rules.SpecPos0Acceptance, fact(0.45, 0.85),
	)
}

// pdTransfer is a P/D fleet whose KV transfers slowed: the decode
// instances' TTFT rose by the transfer time.
func pdTransfer() rules.Facts {
	return with(healthy(),
		rules.TTFTP95, fact(1.8, 0.9),
		rules.TTFTP99, fact(2.8, 1.4),
		rules.TTFTMean, fact(0.75, 0.35),
		rules.PDDecodeReplicas, fact(2, 2),
		rules.PDPrefillReplicas, fact(2, 2),
		rules.KVTransferTimeMean, fact(0.45, 0.05),
		rules.TTFTMeanDecodeRole, fact(0.6, 0.15),
		rules.KVTransferFailureShare, fact(0, 0),
	)
}

func TestDecodeRules(t *testing.T) {
	tests := []struct {
		name    string
		facts   rules.Facts
		verdict rules.Verdict
		status  map[rules.HypothesisID]rules.Status
	}{
		{"thrash: a few requests preempted again and again", thrash(), rules.Verdict(rules.PreemptionThrash),
			map[rules.HypothesisID]rules.Status{rules.PreemptionThrash: rules.Supported, rules.KVPreemption: rules.Supported}},
		{"preemptions spread once over many requests", with(thrash(), rules.RepeatPreemptionShare, fact(0.2, 0).WithBounds(0.2, 0.3)),
			rules.Verdict(rules.KVPreemption), map[rules.HypothesisID]rules.Status{rules.PreemptionThrash: rules.Contradicted}},
		// The matrix's preemption-thrash fleet (3 pods, seed 1001): while
		// preempted prefills recompute the backlog spikes and drains, with
		// arrivals as steady around their trend as in the baseline: the
		// spikes are the thrash's, not bursts of arrivals.
		{"thrash: the queue spikes with steady arrivals", thrashSpikes(0.6), rules.Verdict(rules.PreemptionThrash),
			map[rules.HypothesisID]rules.Status{rules.PreemptionThrash: rules.Supported, rules.QueueBurst: rules.Supported}},
		// The same spikes with arrivals that did burst: the map cannot tell
		// which one queued the requests.
		{"thrash and arrival bursts", thrashSpikes(24), rules.Undetermined,
			map[rules.HypothesisID]rules.Status{rules.PreemptionThrash: rules.Supported, rules.QueueBurst: rules.Supported}},
		{"no per-request preemption histogram (before vLLM 0.30)", kvPreemption(), rules.Verdict(rules.KVPreemption),
			map[rules.HypothesisID]rules.Status{rules.PreemptionThrash: rules.NotEvaluable}},
		{"many requests preempted, some repeatedly", with(thrash(), rules.PreemptedShare, fact(0.3, 0).WithBounds(0.25, 0.3), rules.PreemptedShareLower, fact(0.25, 0)),
			rules.Verdict(rules.KVPreemption), map[rules.HypothesisID]rules.Status{rules.PreemptionThrash: rules.Contradicted}},
		// The matrix's preemption-thrash fleet (3 pods, seed 1001): 1.2% of
		// the requests preempted twice or more carry at least 59% of the
		// preemptions; the others, once each, make between 0 and 6.2% of
		// the requests (the truth: 3.1%). Only the upper bound reaches a
		// storm: the buckets do not show many requests preempted.
		{"a few requests thrash, the rest may or may not be many", with(thrash(),
			rules.RepeatPreemptionShare, fact(0.587, 0).WithBounds(0.587, 1),
			rules.RepeatPreemptedShare, fact(0.0119, 0),
			rules.PreemptedShare, fact(0.0743, 0).WithBounds(0.0119, 0.0743),
			rules.PreemptedShareLower, fact(0.0119, 0),
			rules.PreemptionShare, fact(0.154, 0)),
			rules.Verdict(rules.PreemptionThrash), map[rules.HypothesisID]rules.Status{rules.PreemptionThrash: rules.Supported, rules.KVPreemption: rules.Supported}},
		{"no lower bound of the preempted share: thrash not evaluable", without(thrash(), rules.PreemptedShareLower),
			rules.Verdict(rules.KVPreemption), map[rules.HypothesisID]rules.Status{rules.PreemptionThrash: rules.NotEvaluable}},
		{"few preemptions, even if repeated", with(thrash(), rules.PreemptionShare, fact(0.002, 0)),
			rules.Verdict(rules.KVPreemption), map[rules.HypothesisID]rules.Status{rules.PreemptionThrash: rules.Contradicted}},
		{"acceptance fell at steady demand", specDrop(), rules.Verdict(rules.SpecDecodeAcceptance),
			map[rules.HypothesisID]rules.Status{rules.SpecDecodeAcceptance: rules.Supported, rules.DecodePressure: rules.Supported}},
		{"acceptance fell but demand grew the batch", with(specDrop(), rules.ArrivalRate, fact(16, 10)),
			rules.Verdict(rules.DecodePressure), map[rules.HypothesisID]rules.Status{rules.SpecDecodeAcceptance: rules.Supported}},
		{"healthy speculative decoding under decode load", with(decodePressure(), rules.SpecAcceptanceRate, fact(0.7, 0.71),
			rules.SpecAcceptanceLength, fact(3.1, 3.1)), rules.Verdict(rules.DecodePressure),
			map[rules.HypothesisID]rules.Status{rules.SpecDecodeAcceptance: rules.Contradicted}},
		{"no speculative decoding", decodePressure(), rules.Verdict(rules.DecodePressure),
			map[rules.HypothesisID]rules.Status{rules.SpecDecodeAcceptance: rules.NotEvaluable}},
		{"P/D: KV transfer slowed the first token", pdTransfer(), rules.Verdict(rules.PDKVTransfer),
			map[rules.HypothesisID]rules.Status{rules.PDKVTransfer: rules.Supported}},
		{"P/D healthy: transfers steady", with(pdTransfer(), rules.TTFTP95, fact(0.9, 0.9), rules.TTFTP99, fact(1.4, 1.4),
			rules.TTFTMean, fact(0.35, 0.35), rules.KVTransferTimeMean, fact(0.05, 0.05), rules.TTFTMeanDecodeRole, fact(0.15, 0.15)),
			rules.NoIncident, map[rules.HypothesisID]rules.Status{rules.PDKVTransfer: rules.Contradicted}},
		// A fifth of the reads fail and are recomputed on the decode
		// instances (the matrix's pd-kv-transfer-failures): the transfers
		// that succeed take as long as before.
		{"P/D: transfers fail, the decode instances recompute", with(pdTransfer(), rules.KVTransferTimeMean, fact(0.05, 0.05), rules.KVTransferFailureShare, fact(0.2, 0)),
			rules.Verdict(rules.PDKVTransfer), map[rules.HypothesisID]rules.Status{rules.PDKVTransfer: rules.Supported}},
		// The decode instances' recompute queries their own prefix cache
		// and misses: the lost reuse is the failures' consequence.
		{"P/D: failed transfers recomputed, prefix reuse lost with them", with(prefixLoss(),
			rules.PDDecodeReplicas, fact(2, 2), rules.PDPrefillReplicas, fact(2, 2),
			rules.KVTransferTimeMean, fact(0.05, 0.05), rules.TTFTMeanDecodeRole, fact(0.6, 0.15),
			rules.KVTransferFailureShare, fact(0.4, 0)),
			rules.Verdict(rules.PDKVTransfer), map[rules.HypothesisID]rules.Status{rules.PDKVTransfer: rules.Supported, rules.PrefixCacheLoss: rules.Supported}},
		{"P/D: prefix reuse lost, transfers fine", with(prefixLoss(),
			rules.PDDecodeReplicas, fact(2, 2), rules.PDPrefillReplicas, fact(2, 2),
			rules.KVTransferTimeMean, fact(0.05, 0.05), rules.TTFTMeanDecodeRole, fact(0.6, 0.15),
			rules.KVTransferFailureShare, fact(0, 0)),
			rules.Verdict(rules.PrefixCacheLoss), map[rules.HypothesisID]rules.Status{rules.PDKVTransfer: rules.Contradicted}},
		{"P/D: transfers steady, failures not counted", without(with(pdTransfer(), rules.KVTransferTimeMean, fact(0.05, 0.05)), rules.KVTransferFailureShare),
			"", map[rules.HypothesisID]rules.Status{rules.PDKVTransfer: rules.NotEvaluable}},
		{"P/D: longer prompts move more KV", with(pdTransfer(), rules.PromptTokensP95, fact(4800, 2400), rules.PrefillTimeP95, fact(1.3, 0.64)),
			rules.Verdict(rules.PrefillLongPrompts), map[rules.HypothesisID]rules.Status{rules.PDKVTransfer: rules.Supported}},
		{"aggregated fleet: no decode role", without(pdTransfer(), rules.PDDecodeReplicas, rules.KVTransferTimeMean, rules.TTFTMeanDecodeRole),
			"", map[rules.HypothesisID]rules.Status{rules.PDKVTransfer: rules.NotEvaluable}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rules.Evaluate(tt.facts, rules.SLO{}, rules.DefaultThresholds)
			st := statuses(r)
			if tt.verdict != "" {
				assert.Equal(t, tt.verdict, r.Verdict, "statuses %v", st)
			}
			for id, want := range tt.status {
				assert.Equal(t, want, st[id], "%s", id)
			}
			for _, id := range []rules.HypothesisID{rules.PreemptionThrash, rules.SpecDecodeAcceptance, rules.PDKVTransfer} {
				assert.Contains(t, st, id)
			}
		})
	}
}
