package rules_test

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/rules"
)

// noisy is fact(v, base) with noise bounds over 30 intervals each side.
func noisy(v, base, lo, hi float64) rules.Fact {
	return fact(v, base).WithNoise(lo, hi, 30, 30)
}

// unprecedented is f with n incident observations above every baseline
// observation.
func unprecedented(f rules.Fact, n float64) rules.Fact {
	f.Unprecedented = n
	return f
}

// sampled is f with its quantile's sampling z statistic.
func sampled(f rules.Fact, z float64) rules.Fact {
	f.SamplingZ, f.SamplingKnown = z, true
	return f
}

func TestEffect(t *testing.T) {
	th := rules.DefaultThresholds
	tests := []struct {
		name     string
		f        rules.Fact
		beyond   bool
		known    bool
		severity rules.Severity
		up, down bool
		steady   bool
	}{
		// The first case: 1.48x on 70,000 requests, tight noise.
		{"1.48x beyond noise is moderate", noisy(0.0724, 0.0488, 1.41, 1.55), true, true, rules.SeverityModerate, true, false, false},
		{"1.25x beyond noise is mild", noisy(1.25, 1, 1.1, 1.4), true, true, rules.SeverityMild, true, false, false},
		{"2.6x is severe", noisy(2.6, 1, 2.2, 3.1), true, true, rules.SeveritySevere, true, false, false},
		{"1.6x within noise is not up", noisy(1.6, 1, 0.8, 2.9), false, true, rules.SeverityNone, false, false, true},
		{"1.1x beyond noise is below the practical minimum", noisy(1.1, 1, 1.05, 1.15), true, true, rules.SeverityNone, false, false, true},
		{"a fall to 0.6x beyond noise", noisy(0.6, 1, 0.55, 0.66), true, true, rules.SeverityModerate, false, true, false},
		{"unknown noise judges by the ratio", fact(1.5, 1), true, false, rules.SeverityModerate, true, false, false},
		{"no change", noisy(1, 1, 0.95, 1.05), false, true, rules.SeverityNone, false, false, true},
		// Episodes in 5 of 22 intervals: the bootstrap's lower bound
		// reaches 1, but 420 requests were slower than any of the
		// baseline's.
		{"an episodic rise beyond the baseline's range", unprecedented(noisy(17.4, 0.246, 0.995, 124.6), 420), true, true, rules.SeveritySevere, true, false, false},
		{"too few unprecedented observations", unprecedented(noisy(1.6, 1, 0.8, 2.9), 5), false, true, rules.SeverityNone, false, false, true},
		{"unprecedented observations do not make a fall", unprecedented(noisy(0.6, 1, 0.4, 1.2), 420), false, true, rules.SeverityNone, false, false, true},
		// A p95 of about a hundred requests per window: the interval
		// bootstrap calls 1.9x beyond noise, but the share of requests
		// above the baseline's p95 moved by under 2.6 standard errors.
		{"1.9x within sampling noise", sampled(noisy(0.182, 0.0959, 1.16, 2.23), 1.99), false, true, rules.SeverityNone, false, false, true},
		{"1.9x beyond sampling noise", sampled(noisy(0.182, 0.0959, 1.16, 2.23), 4.2), true, true, rules.SeverityModerate, true, false, false},
		{"a fall within sampling noise", sampled(noisy(0.6, 1, 0.55, 0.66), -1.5), false, true, rules.SeverityNone, false, false, true},
		{"a fall beyond sampling noise", sampled(noisy(0.6, 1, 0.55, 0.66), -3), true, true, rules.SeverityModerate, false, true, false},
		{"sampling does not overrule unprecedented observations", sampled(unprecedented(noisy(17.4, 0.246, 0.995, 124.6), 420), 1), true, true, rules.SeveritySevere, true, false, false},
		{"sampling noise of a change the intervals already call noise", sampled(noisy(1.6, 1, 0.8, 2.9), 1), false, true, rules.SeverityNone, false, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, ok := tt.f.Effect(th)
			require.True(t, ok)
			assert.Equal(t, tt.beyond, c.Beyond, "beyond")
			assert.Equal(t, tt.known, c.NoiseKnown, "known")
			assert.Equal(t, tt.severity, c.Severity, "severity")
			assert.Equal(t, tt.up, c.Up(th), "up")
			assert.Equal(t, tt.down, c.Down(th), "down")
			assert.Equal(t, tt.steady, c.Steady(th), "steady")
			// WithinSampling says when sampling alone turned the verdict.
			intervalsBeyond := tt.f.SamplingKnown && !tt.beyond && (tt.f.NoiseLower > 1 || tt.f.NoiseUpper < 1)
			assert.Equal(t, intervalsBeyond, c.WithinSampling, "within sampling")
		})
	}
	_, ok := rules.Measured(1).Effect(th)
	assert.False(t, ok, "no baseline, no effect")
	_, ok = rules.MissingFact(errors.New("gone")).Effect(th)
	assert.False(t, ok)
}

func TestEffectBounds(t *testing.T) {
	f := fact(0.0724, 0.0488).WithBounds(0.05, 0.075)
	f.Baseline.Lower, f.Baseline.Upper = 0.025, 0.05
	c, ok := f.Effect(rules.DefaultThresholds)
	require.True(t, ok)
	assert.InDelta(t, 1, c.BoundsLower, 1e-12)
	assert.InDelta(t, 3, c.BoundsUpper, 1e-12)
	assert.True(t, math.IsNaN(c.NoiseLower))
}

// TestSymptomsFromStrength covers the cliffs the issue names: a 1.48x TPOT
// rise on many requests is a symptom; a TTFT p99 9.9x with p50 1.6x is a
// tail; an E2E rise lands in the symptom of the phase that grew.
func TestSymptomsFromStrength(t *testing.T) {
	th := rules.DefaultThresholds
	present := func(fs rules.Facts) map[rules.SymptomID]rules.Severity {
		out := map[rules.SymptomID]rules.Severity{}
		for _, s := range rules.Symptoms(fs, rules.SLO{}, th) {
			if s.Present {
				out[s.ID] = s.Severity
			}
		}
		return out
	}
	t.Run("tpot 1.48x beyond noise", func(t *testing.T) {
		fs := with(healthy(), rules.TPOTP95, noisy(0.0724, 0.0488, 1.41, 1.55), rules.TPOTMean, noisy(0.031, 0.024, 1.2, 1.4))
		assert.Equal(t, map[rules.SymptomID]rules.Severity{rules.SymptomTPOT: rules.SeverityModerate}, present(fs))
		// Within one bucket and not confirmed by the exact mean: no symptom.
		fs = with(healthy(), rules.TPOTP95, noisy(0.0486, 0.0243, 1.9, 2.1).WithBounds(0.025, 0.05), rules.TPOTMean, noisy(0.025, 0.024, 1.01, 1.07))
		f := fs[rules.TPOTP95]
		f.Baseline.Lower, f.Baseline.Upper = 0.01, 0.025
		fs[rules.TPOTP95] = f
		assert.Empty(t, present(fs))
	})
	t.Run("tpot 1.48x within noise", func(t *testing.T) {
		fs := with(healthy(), rules.TPOTP95, noisy(0.0724, 0.0488, 0.9, 2.1))
		assert.Empty(t, present(fs))
	})
	t.Run("tail from shape", func(t *testing.T) {
		fs := with(healthy(), rules.TTFTP99, fact(13.9, 1.4), rules.TTFTP50, fact(0.48, 0.3), rules.TTFTP95, fact(1.0, 0.9))
		assert.Contains(t, present(fs), rules.SymptomTail)
	})
	t.Run("the whole distribution moved", func(t *testing.T) {
		fs := with(healthy(), rules.TTFTP99, fact(2.8, 1.4), rules.TTFTP50, fact(0.6, 0.3), rules.TTFTP95, fact(1.8, 0.9), rules.TTFTMean, fact(0.7, 0.35))
		got := present(fs)
		assert.NotContains(t, got, rules.SymptomTail)
		assert.Contains(t, got, rules.SymptomTTFT)
	})
	t.Run("e2e up in the decode phase at a higher time per token", func(t *testing.T) {
		fs := with(healthy(), rules.E2EP95, fact(28, 14), rules.E2EMean, fact(11, 6.5),
			rules.DecodeTimeMean, fact(10.5, 6), rules.TPOTMean, fact(0.04, 0.024))
		assert.Equal(t, map[rules.SymptomID]rules.Severity{rules.SymptomTPOT: rules.SeveritySevere}, present(fs))
	})
	t.Run("e2e up in the queue phase", func(t *testing.T) {
		fs := with(healthy(), rules.E2EP95, fact(21, 14), rules.E2EMean, fact(9.5, 6.5), rules.QueueTimeMean, fact(3, 0.03))
		assert.Equal(t, map[rules.SymptomID]rules.Severity{rules.SymptomTTFT: rules.SeverityModerate}, present(fs))
	})
	t.Run("longer answers at the same time per token", func(t *testing.T) {
		fs := with(healthy(), rules.E2EP95, fact(28, 14), rules.E2EMean, fact(11, 6.5),
			rules.DecodeTimeMean, fact(10.5, 6), rules.GenerationTokensP50, fact(440, 250))
		assert.Empty(t, present(fs))
		r := rules.Evaluate(fs, rules.SLO{}, th)
		assert.Contains(t, noteIDs(r), "longer-answers")
		assert.Equal(t, rules.NoIncident, r.Verdict)
	})
}

// TestVerdictNeedsALead: two unrelated supported causes close together
// give undetermined with both listed; a hot replica that only is slower
// under an equal share is a note, not a hot spot.
func TestVerdictNeedsALead(t *testing.T) {
	th := rules.DefaultThresholds
	// A burst and a prefix-cache loss at once, with equal strength.
	fs := with(queueBurst(),
		rules.TTFTP95, fact(1.9, 0.9),
		rules.PrefixHitRatio, fact(0.05, 0.6),
		rules.PrefillTimeP95, fact(1.6, 0.64))
	r := rules.Evaluate(fs, rules.SLO{}, th)
	if r.Verdict == rules.Undetermined {
		assert.GreaterOrEqual(t, len(r.Candidates), 2, "%s", r)
	} else {
		top := r.Findings[0]
		assert.NotEqual(t, rules.Low, top.Confidence)
		assert.NotEmpty(t, top.ConfidenceReason)
	}

	slower := with(queueSustained(), rules.ReplicaTTFTRatio, fact(2.1, 1.1), rules.ReplicaLoadShareMax, fact(1.02, 1.03))
	r = rules.Evaluate(slower, rules.SLO{}, th)
	assert.Equal(t, rules.Contradicted, finding(t, r, rules.ReplicaHotspot).Status)
	assert.Contains(t, noteIDs(r), "replica-slower")
	assert.Equal(t, rules.Verdict(rules.QueueSustained), r.Verdict)
	assert.NotEmpty(t, finding(t, r, rules.QueueSustained).Confidence)
}

// TestDefaultThresholdsSet catches a threshold added to the struct but not
// to DefaultThresholds: every limit but Preemption (any preemption) is
// positive by default, and every field has a name for --thresholds.
func TestDefaultThresholdsSet(t *testing.T) {
	v := reflect.ValueOf(rules.DefaultThresholds)
	for i := 0; i < v.NumField(); i++ {
		name := v.Type().Field(i).Name
		if name == "Preemption" {
			continue
		}
		assert.Greater(t, v.Field(i).Float(), 0.0, "DefaultThresholds.%s", name)
	}
	assert.Len(t, rules.ThresholdNames(), v.NumField(), "every threshold has a --thresholds name")
}

// A change in a fact's better direction is an improvement: it says
// "improved" and carries no severity, in the text and in JSON; the same
// change in the bad direction keeps its grade.
func TestEffectImproved(t *testing.T) {
	th := rules.DefaultThresholds
	tests := []struct {
		name     string
		id       rules.FactID
		f        rules.Fact
		severity rules.Severity
		improved bool
		text     string
	}{
		{"latency down is improved", rules.TTFTP95, fact(0.117, 0.238), rules.SeverityNone, true, "0.49x, improved (noise unknown)"},
		{"latency up is severe", rules.TTFTP95, fact(0.476, 0.238), rules.SeveritySevere, false, "2.00x, severe (noise unknown)"},
		{"hit ratio down is severe", rules.PrefixHitRatio, fact(0.2, 0.6), rules.SeveritySevere, false, "0.33x, severe (noise unknown)"},
		{"hit ratio up is improved", rules.PrefixHitRatio, fact(0.9, 0.6), rules.SeverityNone, true, "1.50x, improved (noise unknown)"},
		{"no better direction keeps the grade", rules.ArrivalRate, fact(0.5, 1), rules.SeveritySevere, false, "0.50x, severe (noise unknown)"},
		{"a small fall is neither", rules.TTFTP95, fact(0.95, 1), rules.SeverityNone, false, "0.95x (noise unknown)"},
		{"within noise is neither", rules.TTFTP95, noisy(0.5, 1, 0.3, 1.4), rules.SeverityNone, false, "0.50x (within noise 0.30x-1.40x over 30/30 intervals)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, ok := tt.f.Effect(th)
			require.True(t, ok)
			c = c.Toward(tt.id)
			assert.Equal(t, tt.severity, c.Severity)
			assert.Equal(t, tt.improved, c.Improved)
			assert.Equal(t, tt.text, c.String())
			js, err := json.Marshal(c)
			require.NoError(t, err)
			if tt.improved {
				assert.Contains(t, string(js), `"improved":true`)
				assert.NotContains(t, string(js), `"severity"`)
			} else {
				assert.NotContains(t, string(js), `"improved"`)
			}
		})
	}
	// Through the symptoms: the evidence line of a TTFT p95 that halved.
	fs := rules.Facts{rules.TTFTP95: fact(0.117, 0.238)}
	s := symptom(t, rules.Symptoms(fs, rules.SLO{}, th), rules.SymptomTTFT)
	require.NotEmpty(t, s.Evidence)
	assert.Contains(t, s.Evidence[0].Text, "0.49x, improved")
	assert.NotContains(t, s.Evidence[0].Text, "severe")
	require.NotNil(t, s.Evidence[0].Effect)
	assert.True(t, s.Evidence[0].Effect.Improved)
}

// TestMinorityCarries: where the fleet's mean TTFT rose and the median
// replica's did not (a cause on a minority of the replicas), the rows of
// causes that reach every replica are contradicted; where the median
// replica rose with the fleet, or the fact is missing, they stand.
func TestMinorityCarries(t *testing.T) {
	for _, c := range []struct {
		name   string
		median rules.Fact
		want   rules.Status
	}{
		{"median flat", fact(0.34, 0.35), rules.Contradicted},
		{"median rose a tenth of the fleet's rise", fact(0.455, 0.35), rules.Contradicted},
		{"median rose with the fleet", fact(1.3, 0.35), rules.Supported},
		{"median rose a third of the fleet's rise", fact(0.7, 0.35), rules.Supported},
		{"no median", rules.MissingFact(rules.TooLittle("fewer than two replicas")), rules.Supported},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := rules.Evaluate(with(queueSustained(), rules.ReplicaTTFTMeanMedian, c.median), rules.SLO{}, rules.DefaultThresholds)
			assert.Equal(t, c.want, finding(t, r, rules.QueueSustained).Status, "%s", r)
		})
	}
}
