package rules_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/rules"
)

// engineQuiet is the engine facts of a fleet where every replica
// progresses: nothing stalled, frozen, deferred or rejected.
func engineQuiet(fs rules.Facts) rules.Facts {
	return with(fs,
		rules.StalledReplicas, fact(0, 0),
		rules.FrozenGaugeReplicas, fact(0, 0),
		rules.FrozenQuietReplicas, fact(0, 0),
		rules.FrozenGaugeShare, fact(0, 0),
		rules.StallSuspected, fact(0, 0),
		rules.DeferredShare, fact(0, 0),
		rules.AdmissionRejectionShare, fact(0, 0))
}

func findingOf(t *testing.T, res rules.Result, id rules.HypothesisID) rules.Finding {
	t.Helper()
	for _, f := range res.Findings {
		if f.ID == id {
			return f
		}
	}
	t.Fatalf("no finding %s", id)
	return rules.Finding{}
}

func TestEngineRules(t *testing.T) {
	oneScrape := func(v float64) rules.Fact {
		return rules.Measured(v).WithCount(1, 0).WithSource("one scrape")
	}
	tests := []struct {
		name    string
		facts   rules.Facts
		verdict rules.Verdict
		// candidates, when set, are the tied hypotheses of an
		// undetermined verdict.
		candidates []rules.HypothesisID
		supported  []rules.HypothesisID
		refuted    []rules.HypothesisID
	}{
		{
			name:    "healthy fleet",
			facts:   engineQuiet(healthy()),
			verdict: rules.NoIncident,
			refuted: []rules.HypothesisID{rules.EngineStall, rules.StaleGauges, rules.AdmissionDeferral, rules.AdmissionRejections},
		},
		{
			// 6 waiting, 0 running, KV 0 in one scrape: no counter can
			// be flat yet, so a suspicion, never a confirmed cause.
			name: "one scrape: stall suspected",
			facts: rules.Facts{
				rules.WaitingMean:         oneScrape(6),
				rules.RunningMean:         oneScrape(0),
				rules.KVUsageMax:          oneScrape(0),
				rules.StallSuspected:      oneScrape(1),
				rules.StalledReplicas:     rules.MissingFact(errors.New("a single scrape cannot show flat counters")),
				rules.FrozenGaugeReplicas: rules.MissingFact(errors.New("a single scrape cannot show flat counters")),
			},
			verdict:    rules.Undetermined,
			candidates: []rules.HypothesisID{rules.EngineStall},
			supported:  []rules.HypothesisID{rules.EngineStall},
		},
		{
			name: "stall: requests keep arriving, nothing completes",
			facts: with(engineQuiet(healthy()),
				rules.StalledReplicas, fact(1, 0),
				rules.KVUsageMax, fact(0.02, 0.3)),
			verdict:   rules.Verdict(rules.EngineStall),
			supported: []rules.HypothesisID{rules.EngineStall},
			refuted:   []rules.HypothesisID{rules.StaleGauges},
		},
		{
			// Nothing moves and no arrival signal exists: a stall and
			// frozen gauges look the same.
			name: "frozen without an arrival signal: both, undetermined",
			facts: with(engineQuiet(healthy()),
				rules.FrozenGaugeReplicas, fact(1, 0),
				rules.FrozenGaugeShare, fact(1, 0)),
			verdict:    rules.Undetermined,
			candidates: []rules.HypothesisID{rules.EngineStall, rules.StaleGauges},
			supported:  []rules.HypothesisID{rules.EngineStall, rules.StaleGauges},
		},
		{
			// vLLM #22545: running 106, waiting 15, KV 90% after all
			// clients aborted; the gauges alone read as a sustained
			// queue and KV pressure.
			name: "stale gauges: frozen, frontend counters flat",
			facts: with(engineQuiet(queueSustained()),
				rules.FrozenGaugeReplicas, fact(1, 0),
				rules.FrozenQuietReplicas, fact(1, 0),
				rules.FrozenGaugeShare, fact(1, 0),
				rules.KVUsageMax, fact(0.9, 0.5)),
			verdict:   rules.Verdict(rules.StaleGauges),
			supported: []rules.HypothesisID{rules.StaleGauges},
			refuted:   []rules.HypothesisID{rules.EngineStall, rules.QueueSustained, rules.QueueBurst, rules.DecodePressure, rules.KVPreemption},
		},
		{
			// vLLM #53130: the queue is deferred requests, KV ~20%.
			name: "deferral carries the queue",
			facts: with(engineQuiet(queueSustained()),
				rules.DeferredShare, fact(0.95, 0),
				rules.KVUsageMax, fact(0.2, 0.3)),
			verdict:   rules.Verdict(rules.AdmissionDeferral),
			supported: []rules.HypothesisID{rules.AdmissionDeferral},
			refuted:   []rules.HypothesisID{rules.QueueSustained, rules.QueueBurst},
		},
		{
			// fleetsim's admission-deferral fleets: the GPUs idle while
			// the deferred queue waits, and the held-back requests,
			// released together, lengthen the decode steps
			// (decode-pressure holds). A queue of deferred requests is
			// not work the GPU could run: no bottleneck outside it.
			name: "deferral explains the idle GPU",
			facts: with(engineQuiet(with(outsideGPU(), rules.TPOTP95, fact(0.16, 0.042),
				rules.TPOTMean, fact(0.05, 0.024), rules.ITLP95, fact(0.1, 0.05),
				rules.RunningMean, fact(240, 120), rules.RunningMax, fact(256, 180),
				rules.CorrRunningTPOT, fact(0.85, 0.2))),
				rules.DeferredShare, fact(0.97, 0),
				rules.KVUsageMax, fact(0.7, 0.16)),
			verdict:   rules.Verdict(rules.AdmissionDeferral),
			supported: []rules.HypothesisID{rules.AdmissionDeferral, rules.DecodePressure},
			refuted:   []rules.HypothesisID{rules.OutsideGPU},
		},
		{
			// Scrapes just after each release see the released backlog
			// waiting for capacity as often as the deferred requests
			// (deferred_share under the majority), but the queue comes
			// and goes with the deferral episodes: the GPU idled because
			// the requests were held, not starved by the front end.
			name: "deferral episodes and the backlog they release",
			facts: with(engineQuiet(with(outsideGPU(), rules.TPOTP95, fact(0.05, 0.042))),
				rules.DeferredShare, fact(0.48, 0),
				rules.DeferralQueueShare, fact(0.99, 0),
				rules.KVUsageMax, fact(0.76, 0.56)),
			verdict:   rules.Verdict(rules.AdmissionDeferral),
			supported: []rules.HypothesisID{rules.AdmissionDeferral},
			refuted:   []rules.HypothesisID{rules.OutsideGPU, rules.QueueSustained},
		},
		{
			// A capacity queue on replicas that never deferred: deferral
			// is a small share whichever way it is counted.
			name: "a capacity queue beside a little deferral",
			facts: with(engineQuiet(outsideGPU()),
				rules.DeferredShare, fact(0.05, 0),
				rules.DeferralQueueShare, fact(0.1, 0),
				rules.KVUsageMax, fact(0.5, 0.5)),
			verdict: rules.Verdict(rules.OutsideGPU),
			refuted: []rules.HypothesisID{rules.AdmissionDeferral},
		},
		{
			// One of two replicas restarted: for a minute the other
			// served everything, and its batch doubled. The decode and
			// queue effects follow the capacity lost, not demand.
			name: "the load of a replica away moved to the other",
			facts: with(decodePressure(),
				rules.OutageLoadFactor, fact(2, 1)),
			refuted: []rules.HypothesisID{rules.DecodePressure, rules.QueueSustained, rules.QueueBurst},
		},
		{
			// One of eight restarted: the others took an eighth more,
			// under the practical minimum.
			name: "one of eight away is no capacity change",
			facts: with(decodePressure(),
				rules.OutageLoadFactor, fact(8.0/7, 1)),
			verdict:   rules.Verdict(rules.DecodePressure),
			supported: []rules.HypothesisID{rules.DecodePressure},
		},
		{
			name: "deferred with a full KV cache is not admission-deferral",
			facts: with(engineQuiet(queueSustained()),
				rules.DeferredShare, fact(0.95, 0),
				rules.KVUsageMax, fact(0.97, 0.3)),
			refuted: []rules.HypothesisID{rules.AdmissionDeferral},
		},
		{
			name: "admission rejections explain the 503s",
			facts: with(engineQuiet(healthy()),
				rules.AdmissionRejectionShare, fact(0.06, 0),
				rules.HTTP5xxShare, fact(0.06, 0)),
			verdict:   rules.Verdict(rules.AdmissionRejections),
			supported: []rules.HypothesisID{rules.AdmissionRejections, rules.ServerErrors},
		},
		{
			// --max-num-queued-reqs at max_num_seqs (it counts the
			// running requests, vLLM PR 49445) and twice the arrivals:
			// the engines run a full batch, nothing waits, 15% are
			// refused. Queue-sustained reads the fuller batch; the
			// rejections carry the story and explain it.
			name: "rejections with a full batch and no queue",
			facts: with(engineQuiet(healthy()),
				rules.ArrivalRate, fact(20, 10),
				rules.CompletionRate, fact(17, 10),
				rules.RunningMean, fact(600, 120),
				rules.RunningMax, fact(640, 180),
				rules.TTFTP95, fact(1.45, 0.9),
				rules.TTFTMean, fact(0.6, 0.35),
				rules.TPOTP95, fact(0.126, 0.042),
				rules.TPOTMean, fact(0.072, 0.024),
				rules.ITLP95, fact(0.15, 0.05),
				rules.E2EP95, fact(42, 14),
				rules.E2EMean, fact(19, 6.5),
				rules.WaitingMean, fact(0.2, 0.4),
				rules.AdmissionRejectionShare, fact(0.15, 0),
				rules.HTTP5xxShare, fact(0.15, 0)),
			verdict:   rules.Verdict(rules.AdmissionRejections),
			supported: []rules.HypothesisID{rules.AdmissionRejections, rules.QueueSustained},
		},
		{
			// The same rejections from a queue that fills its limit: a
			// full queue rejects, the queue is the story.
			name: "rejections from a full queue",
			facts: with(engineQuiet(queueSustained()),
				rules.AdmissionRejectionShare, fact(0.15, 0),
				rules.HTTP5xxShare, fact(0.15, 0)),
			verdict:   rules.Verdict(rules.QueueSustained),
			supported: []rules.HypothesisID{rules.AdmissionRejections, rules.QueueSustained},
		},
		{
			// No http_* (the Rust frontend): the rejections alone make
			// the reliability symptom present.
			name: "admission rejections without HTTP metrics",
			facts: with(engineQuiet(without(healthy(), rules.HTTP5xxShare)),
				rules.AdmissionRejectionShare, fact(0.06, 0)),
			verdict:   rules.Verdict(rules.AdmissionRejections),
			supported: []rules.HypothesisID{rules.AdmissionRejections},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := rules.Evaluate(tt.facts, rules.SLO{}, rules.DefaultThresholds)
			if tt.verdict != "" {
				assert.Equal(t, tt.verdict, res.Verdict, "candidates %v", res.Candidates)
			}
			if tt.candidates != nil {
				assert.ElementsMatch(t, tt.candidates, res.Candidates)
			}
			for _, id := range tt.supported {
				assert.Equal(t, rules.Supported, findingOf(t, res, id).Status, "%s", id)
			}
			for _, id := range tt.refuted {
				assert.Equal(t, rules.Contradicted, findingOf(t, res, id).Status, "%s", id)
			}
		})
	}
}

// A single scrape with requests waiting and none running makes the
// reliability symptom present, and says it is a suspicion.
func TestStallSuspectedSymptom(t *testing.T) {
	fs := rules.Facts{rules.StallSuspected: rules.Measured(1).WithCount(1, 0)}
	res := rules.Evaluate(fs, rules.SLO{}, rules.DefaultThresholds)
	var rel rules.Symptom
	for _, s := range res.Symptoms {
		if s.ID == rules.SymptomReliability {
			rel = s
		}
	}
	require.True(t, rel.Present)
	assert.Contains(t, rel.String(), "stall suspected (one scrape cannot show flat counters)")
	assert.NotEqual(t, rules.NoIncident, res.Verdict)
}
