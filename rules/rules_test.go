package rules_test

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/rules"
)

// fact is a measured fact with a baseline and plenty of samples.
func fact(v, base float64) rules.Fact {
	return rules.Measured(v).WithBaseline(base).WithCount(5000, 5000).
		WithWindow("incident 10:00-10:30Z (30m)", "baseline 09:00-09:30Z (30m)")
}

// healthy is a fleet where nothing changed between the windows.
func healthy() rules.Facts {
	return rules.Facts{
		rules.TTFTP50:             fact(0.3, 0.3),
		rules.TTFTP95:             fact(0.9, 0.9),
		rules.TTFTP99:             fact(1.4, 1.4),
		rules.QueueTimeP50:        fact(0.02, 0.02),
		rules.QueueTimeP95:        fact(0.12, 0.12),
		rules.PrefillTimeP95:      fact(0.64, 0.64),
		rules.DecodeTimeP95:       fact(12, 12),
		rules.TPOTP50:             fact(0.035, 0.035),
		rules.TPOTP95:             fact(0.042, 0.042),
		rules.ITLP95:              fact(0.05, 0.05),
		rules.E2EP50:              fact(6, 6),
		rules.E2EP95:              fact(14, 14),
		rules.E2EP99:              fact(20, 20),
		rules.InferenceTimeP95:    fact(13, 13),
		rules.PromptTokensP50:     fact(850, 850),
		rules.PromptTokensP95:     fact(2400, 2400),
		rules.PromptTokensP99:     fact(3800, 3800),
		rules.GenerationTokensP50: fact(250, 250),
		rules.GenerationTokensP95: fact(700, 700),
		rules.ArrivalRate:         fact(10, 10),
		rules.CompletionRate:      fact(10, 10),
		rules.ErrorShare:          fact(0, 0),
		rules.AbortShare:          fact(0.002, 0.002),
		rules.WaitingMean:         fact(0.4, 0.4),
		rules.WaitingMax:          fact(3, 3),
		rules.WaitingSlope:        fact(0, 0),
		rules.WaitingBurst:        fact(1.6, 1.6),
		rules.RunningMean:         fact(120, 120),
		rules.RunningMax:          fact(180, 180),
		rules.MaxNumSeqs:          fact(1024, 1024),
		rules.KVUsageMean:         fact(0.55, 0.55),
		rules.KVUsageMax:          fact(0.7, 0.7),
		rules.PreemptionRate:      fact(0, 0),
		rules.PrefixHitRatio:      fact(0.6, 0.6),
		rules.GPUUtilMean:         fact(0.85, 0.85),
		rules.ReplicaShareMax:     fact(1.05, 1.05),
		rules.ReplicaTTFTRatio:    fact(1.1, 1.1),
		rules.CorrRunningTPOT:     fact(0.1, 0.1),
		rules.PromptTokenRate:     fact(9000, 9000),
		rules.GenerationTokenRate: fact(2600, 2600),
		rules.QueueTimeMean:       fact(0.03, 0.03),
		rules.PrefillTimeMean:     fact(0.25, 0.25),
		rules.DecodeTimeMean:      fact(6, 6),
		rules.TTFTMean:            fact(0.35, 0.35),
		rules.E2EMean:             fact(6.5, 6.5),
		rules.TPOTMean:            fact(0.024, 0.024),
		rules.WaitingMedian:       fact(0, 0),
		rules.WaitingBusyShare:    fact(0.1, 0.1),
		rules.ArrivalDispersion:   fact(1.1, 1.1),
		rules.GPUUtilWaiting:      fact(0.95, 0.95),
		rules.ReplicaLoadShareMax: fact(1.05, 1.05),
		rules.PreemptionShare:     fact(0, 0),

		rules.ArrivalDispersionDetrended: fact(1, 1),
		rules.WaitingDrainedShare:        fact(0.9, 0.9),
		rules.BacklogSpike:               fact(1.3, 1.3),
		rules.OccupancySeen:              fact(1, 1),
	}
}

// with returns a copy of fs with the given facts replaced.
func with(fs rules.Facts, kv ...any) rules.Facts {
	out := rules.Facts{}
	for k, v := range fs {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		out[kv[i].(rules.FactID)] = kv[i+1].(rules.Fact)
	}
	return out
}

// without returns a copy of fs without the given facts.
func without(fs rules.Facts, ids ...rules.FactID) rules.Facts {
	out := with(fs)
	for _, id := range ids {
		delete(out, id)
	}
	return out
}

func queueSustained() rules.Facts {
	return with(healthy(),
		rules.TTFTP50, fact(1.2, 0.3),
		rules.TTFTP95, fact(2.4, 0.9),
		rules.TTFTP99, fact(3.5, 1.4),
		rules.QueueTimeP95, fact(1.5, 0.12),
		rules.WaitingMean, fact(40, 0.4),
		rules.WaitingMax, fact(90, 3),
		rules.WaitingSlope, fact(0.08, 0),
		rules.WaitingBusyShare, fact(0.98, 0.1),
		rules.WaitingDrainedShare, fact(0.1, 0.9),
		rules.WaitingMedian, fact(38, 0),
		rules.QueueTimeMean, fact(1.1, 0.03),
		rules.TTFTMean, fact(1.4, 0.35),
		rules.E2EMean, fact(7.6, 6.5),
		rules.GPUUtilWaiting, fact(0.97, 0.95),
		rules.ArrivalRate, fact(13, 10),
		rules.CompletionRate, fact(11, 10),
		rules.RunningMax, fact(1024, 180),
		rules.GPUUtilMean, fact(0.97, 0.85),
	)
}

func queueBurst() rules.Facts {
	return with(healthy(),
		rules.TTFTP99, fact(4.5, 1.4),
		rules.E2EP99, fact(31, 20),
		rules.QueueTimeP95, fact(0.4, 0.12),
		rules.WaitingMax, fact(60, 3),
		rules.WaitingBurst, fact(7, 1.6),
		rules.WaitingSlope, fact(0.001, 0),
		rules.WaitingBusyShare, fact(0.2, 0.1),
		rules.WaitingDrainedShare, fact(0.95, 0.9),
		rules.ArrivalDispersion, fact(9, 1.1),
		rules.ArrivalDispersionDetrended, fact(9, 1),
	)
}

// longPrompts is the article's section 10 table.
func longPrompts() rules.Facts {
	return with(healthy(),
		rules.PromptTokensP50, fact(870, 850),
		rules.PromptTokensP95, fact(6100, 2400),
		rules.PromptTokensP99, fact(9000, 3800),
		rules.QueueTimeP95, fact(0.13, 0.12),
		rules.PrefillTimeP95, fact(1.9, 0.64),
		rules.PrefillTimeMean, fact(0.7, 0.25),
		rules.TTFTMean, fact(0.8, 0.35),
		rules.TTFTP95, fact(2.2, 0.9),
		rules.TPOTP95, fact(0.043, 0.042),
		rules.PrefixHitRatio, fact(0.3, 0.6), // longer unique suffixes lower the ratio too
	)
}

func prefixLoss() rules.Facts {
	return with(healthy(),
		rules.PrefixHitRatio, fact(0.05, 0.6),
		rules.PrefillTimeP95, fact(1.6, 0.64),
		rules.PrefillTimeMean, fact(0.6, 0.25),
		rules.TTFTP95, fact(1.9, 0.9),
		rules.TTFTMean, fact(0.7, 0.35),
	)
}

func decodePressure() rules.Facts {
	return with(healthy(),
		rules.TPOTP95, fact(0.09, 0.042),
		rules.TPOTMean, fact(0.05, 0.024),
		rules.ITLP95, fact(0.1, 0.05),
		rules.RunningMean, fact(240, 120),
		rules.RunningMax, fact(256, 180),
		rules.CorrRunningTPOT, fact(0.85, 0.2),
		rules.GenerationTokenRate, fact(2900, 2600),
	)
}

func kvPreemption() rules.Facts {
	return with(decodePressure(),
		rules.KVUsageMean, fact(0.93, 0.6),
		rules.KVUsageMax, fact(0.99, 0.75),
		rules.PreemptionRate, fact(0.4, 0),
		rules.PreemptionShare, fact(0.04, 0),
		rules.E2EP99, fact(45, 20),
	)
}

func outsideGPU() rules.Facts {
	return with(healthy(),
		rules.TTFTP95, fact(3, 0.9),
		rules.TTFTMean, fact(1.2, 0.35),
		rules.QueueTimeMean, fact(0.9, 0.03),
		rules.QueueTimeP95, fact(2, 0.12),
		rules.WaitingMean, fact(25, 0.4),
		rules.WaitingSlope, fact(0.03, 0),
		rules.WaitingBusyShare, fact(0.95, 0.1),
		rules.GPUUtilMean, fact(0.3, 0.85),
		rules.GPUUtilWaiting, fact(0.3, 0.9),
	)
}

func hotspot() rules.Facts {
	return with(queueSustained(),
		rules.ReplicaShareMax, fact(2.4, 1.05),
		rules.ReplicaLoadShareMax, fact(2.4, 1.05),
		rules.ReplicaTTFTRatio, fact(2.8, 1.1),
	)
}

func proxy() rules.Facts {
	return with(healthy(),
		rules.ClientTTFTP95, fact(3.1, 1.0),
	)
}

func highKVHealthy() rules.Facts {
	return with(healthy(),
		rules.KVUsageMean, fact(0.9, 0.88),
		rules.KVUsageMax, fact(0.93, 0.92),
	)
}

func lowTraffic() rules.Facts {
	return with(healthy(),
		rules.GPUUtilMean, fact(0.15, 0.2),
		rules.WaitingMean, fact(0, 0),
		rules.WaitingMax, fact(0, 0),
		rules.ArrivalRate, fact(1, 1.2),
		rules.CompletionRate, fact(1, 1.2),
	)
}

func statuses(r rules.Result) map[rules.HypothesisID]rules.Status {
	m := map[rules.HypothesisID]rules.Status{}
	for _, f := range r.Findings {
		m[f.ID] = f.Status
	}
	return m
}

// noteIDs lists the ids of r's notes, in order.
func noteIDs(r rules.Result) []string {
	var ids []string
	for _, n := range r.Notes {
		ids = append(ids, n.ID)
	}
	return ids
}

func finding(t *testing.T, r rules.Result, id rules.HypothesisID) rules.Finding {
	t.Helper()
	for _, f := range r.Findings {
		if f.ID == id {
			return f
		}
	}
	t.Fatalf("no finding %s", id)
	return rules.Finding{}
}

func symptom(t *testing.T, ss []rules.Symptom, id rules.SymptomID) rules.Symptom {
	t.Helper()
	for _, s := range ss {
		if s.ID == id {
			return s
		}
	}
	t.Fatalf("no symptom %s", id)
	return rules.Symptom{}
}

const (
	S = rules.Supported
	C = rules.Contradicted
	N = rules.NotEvaluable
)

// TestScenarios checks the verdict and the status of every rule for one
// synthetic fleet per case of the article.
func TestScenarios(t *testing.T) {
	all := []rules.HypothesisID{rules.QueueSustained, rules.QueueBurst, rules.PrefillLongPrompts, rules.PrefixCacheLoss,
		rules.DecodePressure, rules.KVPreemption, rules.OutsideGPU, rules.ReplicaHotspot, rules.ProxyNetwork}
	tests := []struct {
		name    string
		facts   rules.Facts
		verdict rules.Verdict
		// status per hypothesis, in the order of all.
		status []rules.Status
		notes  []string
	}{
		{"healthy", healthy(), rules.NoIncident, []rules.Status{C, C, C, C, C, C, C, C, C}, nil},
		{"queue sustained", queueSustained(), "queue-sustained", []rules.Status{S, C, C, C, C, C, C, C, N}, nil},
		{"queue burst", queueBurst(), "queue-burst", []rules.Status{C, S, C, C, C, C, C, C, C}, nil},
		{"long prompts", longPrompts(), "prefill-long-prompts", []rules.Status{C, C, S, C, C, C, C, C, N}, nil},
		{"prefix cache loss", prefixLoss(), "prefix-cache-loss", []rules.Status{C, C, C, S, C, C, C, C, N}, nil},
		{"decode pressure", decodePressure(), "decode-pressure", []rules.Status{C, C, C, C, S, C, C, C, C}, nil},
		{"kv preemption", kvPreemption(), "kv-preemption", []rules.Status{C, C, C, C, S, S, C, C, C}, nil},
		{"outside gpu", outsideGPU(), "outside-gpu", []rules.Status{S, C, C, C, C, C, S, C, N}, nil},
		{"hot replica", hotspot(), "replica-hotspot", []rules.Status{S, C, C, C, C, C, C, S, N}, nil},
		{"proxy", proxy(), "proxy-network", []rules.Status{C, C, C, C, C, C, C, C, S}, nil},
		{"high kv healthy", highKVHealthy(), rules.NoIncident, []rules.Status{C, C, C, C, C, C, C, C, C}, []string{"kv-high-healthy"}},
		{"low traffic", lowTraffic(), rules.NoIncident, []rules.Status{C, C, C, C, C, C, C, C, C}, []string{"low-traffic"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rules.Evaluate(tt.facts, rules.SLO{}, rules.DefaultThresholds)
			assert.Equal(t, tt.verdict, r.Verdict, "%s", r)
			got := statuses(r)
			for i, id := range all {
				assert.Equal(t, tt.status[i], got[id], "%s", id)
			}
			assert.Equal(t, tt.notes, noteIDs(r))
			if tt.verdict != rules.NoIncident && tt.verdict != rules.Undetermined {
				assert.Equal(t, rules.HypothesisID(tt.verdict), r.Findings[0].ID)
			}
		})
	}
}

// TestNotEvaluable removes a fact each rule needs from its own supporting
// scenario: the rule must become not-evaluable and name the fact.
func TestNotEvaluable(t *testing.T) {
	tests := []struct {
		id    rules.HypothesisID
		facts rules.Facts
		drop  []rules.FactID
	}{
		{rules.QueueSustained, queueSustained(), []rules.FactID{rules.WaitingSlope, rules.WaitingBusyShare, rules.ArrivalRate}},
		{rules.QueueBurst, queueBurst(), []rules.FactID{rules.WaitingBurst, rules.ArrivalDispersionDetrended}},
		{rules.PrefillLongPrompts, longPrompts(), []rules.FactID{rules.PrefillTimeP95, rules.PrefillTimeMean}},
		{rules.PrefixCacheLoss, prefixLoss(), []rules.FactID{rules.PrefixHitRatio}},
		{rules.DecodePressure, decodePressure(), []rules.FactID{rules.RunningMean, rules.CorrRunningTPOT}},
		{rules.KVPreemption, kvPreemption(), []rules.FactID{rules.PreemptionRate}},
		{rules.OutsideGPU, outsideGPU(), []rules.FactID{rules.GPUUtilMean, rules.GPUUtilWaiting}},
		{rules.ReplicaHotspot, hotspot(), []rules.FactID{rules.ReplicaLoadShareMax}},
		{rules.ProxyNetwork, proxy(), []rules.FactID{rules.TTFTP95}},
	}
	for _, tt := range tests {
		t.Run(string(tt.id), func(t *testing.T) {
			r := rules.Evaluate(without(tt.facts, tt.drop...), rules.SLO{}, rules.DefaultThresholds)
			f := finding(t, r, tt.id)
			require.Equal(t, rules.NotEvaluable, f.Status, "%s", f)
			var named []rules.FactID
			for _, m := range f.Missing {
				named = append(named, m.Fact)
			}
			for _, id := range tt.drop {
				assert.Contains(t, named, id)
			}
			assert.NotEqual(t, rules.Verdict(tt.id), r.Verdict)
		})
	}
}

// TestMissingIsNotZero marks facts missing instead of deleting them; the
// reason must travel to the finding.
func TestMissingIsNotZero(t *testing.T) {
	none := rules.MissingFact(rules.NoSource("no GPU exporter in the evidence"))
	fs := with(outsideGPU(), rules.GPUUtilMean, none, rules.GPUUtilWaiting, none)
	r := rules.Evaluate(fs, rules.SLO{}, rules.DefaultThresholds)
	f := finding(t, r, rules.OutsideGPU)
	require.Equal(t, rules.NotEvaluable, f.Status)
	assert.Equal(t, []string{"gpu_util_waiting: no GPU exporter in the evidence", "gpu_util_mean: no GPU exporter in the evidence"}, missingTexts(f.Missing))
	for _, m := range f.Missing {
		assert.ErrorIs(t, m.Err, rules.ErrNoSource, "the fact's own reason, kind and all")
	}
	// A NaN value is missing too.
	fs = with(outsideGPU(), rules.GPUUtilMean, fact(math.NaN(), 0.8), rules.GPUUtilWaiting, fact(math.NaN(), 0.8))
	f = finding(t, rules.Evaluate(fs, rules.SLO{}, rules.DefaultThresholds), rules.OutsideGPU)
	assert.Equal(t, rules.NotEvaluable, f.Status)
}

func TestVerdict(t *testing.T) {
	tests := []struct {
		name    string
		facts   rules.Facts
		slo     rules.SLO
		verdict rules.Verdict
		warning string
	}{
		{"healthy", healthy(), rules.SLO{}, rules.NoIncident, ""},
		{"tpot signals missing", without(healthy(), rules.TPOTP95, rules.ITLP95, rules.TPOTMean), rules.SLO{}, rules.Undetermined, "symptom tpot cannot be evaluated"},
		{"no facts at all", rules.Facts{}, rules.SLO{}, rules.Undetermined, "symptom ttft cannot be evaluated: ttft_p95: not computed"},
		{"ttft up, nothing explains it", with(healthy(), rules.TTFTP95, fact(2, 0.9), rules.TTFTMean, fact(0.7, 0.35)), rules.SLO{}, rules.Undetermined, ""},
		{"ttft up, queue facts missing", without(queueSustained(), rules.WaitingSlope, rules.WaitingBusyShare, rules.ArrivalRate, rules.WaitingBurst, rules.ArrivalDispersion, rules.ArrivalDispersionDetrended, rules.GPUUtilMean, rules.GPUUtilWaiting, rules.ReplicaShareMax, rules.ReplicaLoadShareMax, rules.ReplicaTTFTRatio), rules.SLO{}, rules.Undetermined, ""},
		// Failed requests alone are the server-errors row.
		{"errors only", with(healthy(), rules.ErrorShare, fact(0.08, 0.001)), rules.SLO{}, "server-errors", ""},
		{"slo met without baseline", noBaseline(healthy()), rules.SLO{TTFTP95: 2, TTFTP99: 3, TPOTP95: 0.1, ITLP95: 0.1, E2EP99: 30}, rules.NoIncident, ""},
		{"no baseline, no slo", noBaseline(healthy()), rules.SLO{}, rules.Undetermined, "no baseline and no SLO target"},
		{"slo broken", with(queueSustained()), rules.SLO{TTFTP95: 2}, "queue-sustained", ""},
		{"slo met though baseline moved", with(healthy(), rules.TTFTP95, fact(1.5, 0.9)), rules.SLO{TTFTP95: 2}, rules.NoIncident, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rules.Evaluate(tt.facts, tt.slo, rules.DefaultThresholds)
			assert.Equal(t, tt.verdict, r.Verdict, "%s", r)
			if tt.warning != "" {
				var texts []string
				for _, w := range r.Warnings {
					texts = append(texts, w.Error())
				}
				assert.Contains(t, strings.Join(texts, "\n"), tt.warning)
			}
			if r.Verdict == rules.NoIncident {
				for _, s := range r.Symptoms {
					assert.True(t, s.Evaluable && !s.Present, "%s", s)
				}
			}
		})
	}
}

// noBaseline drops every baseline; the windows stay.
func noBaseline(fs rules.Facts) rules.Facts {
	out := rules.Facts{}
	for k, v := range fs {
		v.Baseline.Value = math.NaN()
		out[k] = v
	}
	return out
}

func TestSymptoms(t *testing.T) {
	th := rules.DefaultThresholds
	t.Run("order", func(t *testing.T) {
		var ids []rules.SymptomID
		for _, s := range rules.Symptoms(healthy(), rules.SLO{}, th) {
			ids = append(ids, s.ID)
		}
		assert.Equal(t, []rules.SymptomID{"ttft", "tpot", "tail", "reliability"}, ids)
	})
	t.Run("slo target", func(t *testing.T) {
		fs := rules.Facts{rules.TTFTP95: rules.Measured(2.5)}
		s := symptom(t, rules.Symptoms(fs, rules.SLO{TTFTP95: 2}, th), rules.SymptomTTFT)
		assert.True(t, s.Present && s.Evaluable)
		assert.Equal(t, "ttft_p95 2.5s > SLO 2s", s.Evidence[0].Text)
		s = symptom(t, rules.Symptoms(fs, rules.SLO{}, th), rules.SymptomTTFT)
		assert.False(t, s.Evaluable)
		assert.Equal(t, []string{"ttft_p95: no baseline and no SLO target"}, missingTexts(s.Missing))
	})
	t.Run("client ttft alone", func(t *testing.T) {
		s := symptom(t, rules.Symptoms(proxy(), rules.SLO{}, th), rules.SymptomTTFT)
		assert.True(t, s.Present)
	})
	t.Run("tpot falls back to mean from sums", func(t *testing.T) {
		fs := with(without(healthy(), rules.TPOTP95, rules.ITLP95), rules.TPOTMean, fact(0.08, 0.035))
		s := symptom(t, rules.Symptoms(fs, rules.SLO{}, th), rules.SymptomTPOT)
		require.True(t, s.Present)
		assert.Contains(t, s.Evidence[0].Text, "tpot_mean from sums stands in for tpot_p95")
	})
	t.Run("tail only when p50 is steady", func(t *testing.T) {
		s := symptom(t, rules.Symptoms(queueBurst(), rules.SLO{}, th), rules.SymptomTail)
		assert.True(t, s.Present)
		s = symptom(t, rules.Symptoms(queueSustained(), rules.SLO{}, th), rules.SymptomTail)
		assert.False(t, s.Present, "p50 moved too: not tail-only")
		assert.True(t, s.Evaluable)
	})
	t.Run("p99 needs more samples", func(t *testing.T) {
		fs := with(queueBurst(),
			rules.TTFTP99, fact(4.5, 1.4).WithCount(60, 5000),
			rules.E2EP99, fact(31, 20).WithCount(5000, 40))
		s := symptom(t, rules.Symptoms(fs, rules.SLO{}, th), rules.SymptomTail)
		assert.False(t, s.Evaluable)
		assert.Equal(t, []string{
			"ttft_p99: only 60 observations in the incident window, need >= 100",
			"e2e_p99: only 40 observations in the baseline window, need >= 100 and no SLO target",
		}, missingTexts(s.Missing))
		for _, m := range s.Missing {
			assert.ErrorIs(t, m.Err, rules.ErrTooLittle, "%s", m)
		}
	})
	t.Run("reliability", func(t *testing.T) {
		s := symptom(t, rules.Symptoms(with(healthy(), rules.HTTP5xxShare, fact(0.05, 0)), rules.SLO{}, th), rules.SymptomReliability)
		assert.True(t, s.Present)
		// A steady abort share above the threshold is the normal level.
		s = symptom(t, rules.Symptoms(with(healthy(), rules.AbortShare, fact(0.03, 0.028)), rules.SLO{}, th), rules.SymptomReliability)
		assert.False(t, s.Present)
		s = symptom(t, rules.Symptoms(with(healthy(), rules.AbortShare, fact(0.03, 0.028)), rules.SLO{ErrorShare: 0.02}, th), rules.SymptomReliability)
		assert.False(t, s.Present, "baseline shows the same share")
		s = symptom(t, rules.Symptoms(rules.Facts{}, rules.SLO{}, th), rules.SymptomReliability)
		assert.False(t, s.Evaluable)
	})
}

func TestRanking(t *testing.T) {
	rank := func(r rules.Result) []rules.HypothesisID {
		var ids []rules.HypothesisID
		for _, f := range r.Findings {
			if f.Status == rules.Supported {
				ids = append(ids, f.ID)
			}
		}
		return ids
	}
	th := rules.DefaultThresholds
	assert.Equal(t, []rules.HypothesisID{rules.KVPreemption, rules.DecodePressure}, rank(rules.Evaluate(kvPreemption(), rules.SLO{}, th)))
	assert.Equal(t, []rules.HypothesisID{rules.ReplicaHotspot, rules.QueueSustained}, rank(rules.Evaluate(hotspot(), rules.SLO{}, th)))
	assert.Equal(t, []rules.HypothesisID{rules.OutsideGPU, rules.QueueSustained}, rank(rules.Evaluate(outsideGPU(), rules.SLO{}, th)))

	// Statuses are grouped, scores descend within a status.
	order := map[rules.Status]int{rules.Supported: 0, rules.NotEvaluable: 1, rules.Contradicted: 2}
	for _, fs := range []rules.Facts{healthy(), queueSustained(), kvPreemption(), hotspot(), without(longPrompts(), rules.PrefixHitRatio)} {
		r := rules.Evaluate(fs, rules.SLO{}, th)
		for i := 1; i < len(r.Findings); i++ {
			a, b := r.Findings[i-1], r.Findings[i]
			require.LessOrEqual(t, order[a.Status], order[b.Status])
			if a.Status == b.Status {
				require.GreaterOrEqual(t, a.Score, b.Score)
			}
		}
	}
}

func TestCounterEvidenceNamed(t *testing.T) {
	r := rules.Evaluate(highKVHealthy(), rules.SLO{}, rules.DefaultThresholds)
	f := finding(t, r, rules.KVPreemption)
	require.Equal(t, rules.Contradicted, f.Status)
	assert.Equal(t, "counter-evidence: preemption rate 0 (high KV usage alone is not an incident)", f.CounterEvidence[0].Text)
	assert.Equal(t, rules.PreemptionRate, f.CounterEvidence[1].ID)

	r = rules.Evaluate(longPrompts(), rules.SLO{}, rules.DefaultThresholds)
	f = finding(t, r, rules.PrefixCacheLoss)
	require.Equal(t, rules.Contradicted, f.Status)
	var facts []rules.FactID
	for _, e := range f.CounterEvidence {
		facts = append(facts, e.ID)
	}
	assert.Contains(t, facts, rules.PromptTokensP95, "a falling hit ratio with longer prompts is not lost reuse")
}

func TestEvaluateDoesNotModifyFacts(t *testing.T) {
	fs := kvPreemption()
	before := with(fs)
	rules.Evaluate(fs, rules.SLO{TTFTP95: 1}, rules.DefaultThresholds)
	assert.Equal(t, len(before), len(fs))
	for k, v := range before {
		assert.Equal(t, v.Incident.Value, fs[k].Incident.Value)
		assert.Equal(t, v.Baseline.Value, fs[k].Baseline.Value)
	}
}

func TestDeterministic(t *testing.T) {
	a := rules.Evaluate(hotspot(), rules.SLO{}, rules.DefaultThresholds)
	for range 20 {
		b := rules.Evaluate(hotspot(), rules.SLO{}, rules.DefaultThresholds)
		require.Equal(t, a.String(), b.String())
	}
}

func TestUnknownFactWarns(t *testing.T) {
	r := rules.Evaluate(with(healthy(), rules.FactID("ttft_p90"), fact(1, 1)), rules.SLO{}, rules.DefaultThresholds)
	require.Contains(t, r.Warnings, rules.Warning{Err: rules.ErrUnusedFact, Text: "fact ttft_p90 is not used by any rule"})
	for _, w := range r.Warnings {
		if w.Text == "fact ttft_p90 is not used by any rule" {
			assert.ErrorIs(t, w, rules.ErrUnusedFact)
			assert.NotErrorIs(t, w, rules.ErrNotEvaluable)
		}
	}
	b, err := json.Marshal(r.Warnings)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"fact ttft_p90 is not used by any rule"`, "a warning is its text in JSON")
}

func TestResultJSON(t *testing.T) {
	fs := with(kvPreemption(), rules.TTFTP95, fact(0.9, 0.9).WithBounds(0.5, math.Inf(1)))
	b, err := json.Marshal(rules.Evaluate(fs, rules.SLO{}, rules.DefaultThresholds))
	require.NoError(t, err)
	var v struct {
		Verdict    string `json:"verdict"`
		Hypotheses []struct {
			ID         string           `json:"id"`
			Status     string           `json:"status"`
			Evidence   []map[string]any `json:"evidence"`
			Experiment rules.Plan       `json:"experiment"`
		} `json:"hypotheses"`
	}
	require.NoError(t, json.Unmarshal(b, &v))
	assert.Equal(t, "kv-preemption", v.Verdict)
	assert.Equal(t, "supported", v.Hypotheses[0].Status)
	assert.Equal(t, "max_num_seqs", v.Hypotheses[1].Experiment.Change.Name)
	assert.Contains(t, string(b), `"upper":null`)
}

// Every fact id the package declares is in its catalog: a fact diagnose
// computes never draws the "not used by any rule" warning.
func TestEveryDeclaredFactIsKnown(t *testing.T) {
	declared := []rules.FactID{
		rules.TTFTP50, rules.TTFTP95, rules.TTFTP99, rules.QueueTimeP50, rules.QueueTimeP95, rules.PrefillTimeP50, rules.PrefillTimeP95, rules.DecodeTimeP95,
		rules.TPOTP50, rules.TPOTP95, rules.TPOTMean, rules.ITLP95, rules.E2EP50, rules.E2EP95, rules.E2EP99, rules.InferenceTimeP95, rules.ClientTTFTP95,
		rules.PromptTokensP50, rules.PromptTokensP95, rules.PromptTokensP99, rules.GenerationTokensP50, rules.GenerationTokensP95,
		rules.ArrivalRate, rules.CompletionRate, rules.ErrorShare, rules.AbortShare, rules.HTTP5xxShare, rules.TimeoutShare, rules.PromptTokenRate,
		rules.GenerationTokenRate, rules.PreemptionRate, rules.PrefixHitRatio, rules.WaitingMean, rules.WaitingMax, rules.WaitingSlope, rules.WaitingBurst,
		rules.RunningMean, rules.RunningMax, rules.MaxNumSeqs, rules.KVUsageMean, rules.KVUsageMax, rules.GPUUtilMean, rules.BacklogEnd,
		rules.ReplicaShareMax, rules.ReplicaTTFTRatio, rules.ReplicaTTFTMeanMedian, rules.CorrRunningTPOT,
		rules.QueueTimeMean, rules.PrefillTimeMean, rules.DecodeTimeMean, rules.TTFTMean, rules.E2EMean,
		rules.WaitingMedian, rules.WaitingBusyShare, rules.ArrivalDispersion, rules.GPUUtilWaiting,
		rules.ArrivalDispersionDetrended, rules.WaitingDrainedShare, rules.BacklogSpike,
		rules.ReplicaLoadShareMax, rules.PreemptionShare,
		rules.HTTP429Share, rules.HTTP5xxShareMax, rules.AbandonShare, rules.LostShare, rules.GatewayUnservedShare,
		rules.AbandonedPromptTokens, rules.AbandonedByTokens, rules.AbandonedAfterFirstToken, rules.AbandonedRequests,
		rules.QueueUnservedMin, rules.GatewayUnserved, rules.Restarts, rules.RestartsReplicaMax, rules.RestartsPerHourMax,
		rules.RequestsLost, rules.OOMKills, rules.FBRiseRestarts,
		rules.KVUsagePreempting, rules.KVFullSharePreempting, rules.TTFTP95WithoutHot, rules.TTFTMeanWithoutHot, rules.TPOTP95WithoutHot, rules.TPOTMeanWithoutHot,
		rules.StalledReplicas, rules.FrozenGaugeReplicas, rules.FrozenQuietReplicas, rules.FrozenGaugeShare,
		rules.StallSuspected, rules.DeferredShare, rules.AdmissionRejectionShare,
		rules.RepeatPreemptedShare, rules.RepeatPreemptionShare, rules.PreemptedShare, rules.PreemptedShareLower, rules.PreemptionsPerRequestMean, rules.SpecAcceptanceRate,
		rules.SpecAcceptanceLength, rules.SpecPos0Acceptance, rules.KVTransferTimeMean, rules.KVTransferFailureShare,
		rules.PDDecodeReplicas, rules.PDPrefillReplicas, rules.TTFTMeanDecodeRole,
		rules.EngineLoadShareMax, rules.EngineInflightShareMax, rules.EngineInflightShareLast,
		rules.OccupancySeen, rules.DeferralQueueShare, rules.OutageLoadFactor,
	}
	for _, id := range declared {
		_, ok := rules.Info(id)
		assert.True(t, ok, "fact %s has no catalog entry", id)
	}
	assert.Len(t, rules.FactIDs(), len(declared), "a declared fact is missing from this list")
}

// An estimate in the +Inf bucket is only a lower bound, and so is its
// ratio to the baseline: the evidence says ">=".
func TestLowerBoundEstimatesSaySo(t *testing.T) {
	f := rules.Facts{
		rules.TTFTP95: rules.Measured(10).WithBounds(10, math.Inf(1)).WithBaseline(2).WithCount(5000, 5000),
	}
	var text string
	for _, e := range symptom(t, rules.Symptoms(f, rules.SLO{}, rules.DefaultThresholds), rules.SymptomTTFT).Evidence {
		if e.ID == rules.TTFTP95 {
			text = e.Text
		}
	}
	assert.Contains(t, text, "ttft_p95 >= 10s vs baseline 2s: >= 5.00x")
}

func TestThresholdsSetByName(t *testing.T) {
	th := rules.DefaultThresholds
	require.NoError(t, th.Set("kv_high", 0.95))
	assert.Equal(t, 0.95, th.KVHigh)
	v, ok := th.Get("kv_high")
	assert.True(t, ok)
	assert.Equal(t, 0.95, v)
	assert.Equal(t, 0.9, rules.DefaultThresholds.KVHigh, "the defaults are not changed")
	assert.ErrorContains(t, th.Set("kv", 1), `unknown threshold "kv"`)
	assert.Error(t, th.Set("rise", -1))
	assert.Error(t, th.Set("rise", math.NaN()))
	assert.Len(t, rules.ThresholdNames(), reflect.TypeOf(th).NumField(), "every field has a name")
	for _, n := range rules.ThresholdNames() {
		_, ok := th.Get(n)
		assert.True(t, ok, n)
	}
}

// TestEvidenceCarriesItsCondition checks that evidence names the
// condition its fact was put to, and whether it held, as data.
func TestEvidenceCarriesItsCondition(t *testing.T) {
	r := rules.Evaluate(queueSustained(), rules.SLO{}, rules.DefaultThresholds)
	f := finding(t, r, rules.QueueSustained)
	require.Equal(t, rules.Supported, f.Status)
	tested := 0
	for _, e := range f.Evidence {
		if e.Cond == nil {
			continue
		}
		tested++
		assert.Contains(t, e.Cond.Facts(), e.ID, "%s", e.Text)
		if e.ID == rules.QueueTimeP95 {
			assert.Equal(t, rules.CondRises, e.Cond.Kind())
			lim, name := e.Cond.Limit(rules.DefaultThresholds)
			assert.Equal(t, "Rise", name)
			assert.Equal(t, rules.DefaultThresholds.Rise, lim)
			assert.True(t, e.Holds, "%s", e.Text)
		}
	}
	assert.Positive(t, tested, "a supported finding's evidence names its conditions")

	// Counter-evidence of a contradicted finding: the sentence, then the
	// counter condition that held (preemption rate at most the limit).
	r = rules.Evaluate(highKVHealthy(), rules.SLO{}, rules.DefaultThresholds)
	f = finding(t, r, rules.KVPreemption)
	require.Equal(t, rules.Contradicted, f.Status)
	assert.Nil(t, f.CounterEvidence[0].Cond, "a sentence")
	require.NotNil(t, f.CounterEvidence[1].Cond)
	assert.Equal(t, rules.PreemptionRate, f.CounterEvidence[1].Cond.Fact())
	assert.Equal(t, rules.CondAtMost, f.CounterEvidence[1].Cond.Kind())
	assert.True(t, f.CounterEvidence[1].Holds)
}

// missingTexts returns each missing fact as "fact: reason".
func missingTexts(ms []rules.Missing) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.String()
	}
	return out
}
