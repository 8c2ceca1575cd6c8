package rules

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A fact reads back from its JSON as it was, unknown numbers included,
// so that a report's facts re-evaluate to the report's verdict.
func TestFactJSONRoundTrip(t *testing.T) {
	quantile := Measured(2.5).WithBaseline(0.4).WithBounds(2, 3).WithCount(900, 1200).
		WithNoise(3.1, 9.4, 30, 30).WithWindow("10:00-10:30Z (30m)", "09:30-10:00Z (30m)").WithSource("vllm:time_to_first_token_seconds")
	quantile.Baseline.Lower, quantile.Baseline.Upper = 0.3, 0.5
	quantile.SamplingZ, quantile.SamplingKnown = 7.5, true
	quantile.Unprecedented = 120
	lifetime := Measured(0.25).WithCount(400, math.NaN())
	lifetime.Lifetime = true
	noneAbove := Measured(1.1).WithBaseline(1)
	noneAbove.Unprecedented = 0
	for _, tc := range []struct {
		name string
		fact Fact
		want Fact // zero: fact
	}{
		{name: "quantile with every field", fact: quantile},
		{name: "lifetime share", fact: lifetime},
		{name: "missing", fact: MissingFact(NoSource("no GPU exporter in the evidence"))},
		{name: "infinite upper bound", fact: Measured(4).WithBounds(2.5, math.Inf(1))},
		// Unprecedented 0 (measured, none above) is written as absent:
		// read back as not measured, which Effect treats alike.
		{name: "none unprecedented", fact: noneAbove, want: Measured(1.1).WithBaseline(1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.fact)
			require.NoError(t, err)
			var got Fact
			require.NoError(t, json.Unmarshal(b, &got))
			want := tc.want
			if want == (Fact{}) {
				want = tc.fact
			}
			if math.IsInf(want.Incident.Upper, 1) {
				// JSON has no +Inf: an unbounded upper bound reads as unknown.
				want.Incident.Upper = math.NaN()
			}
			assert.Equal(t, factString(want), factString(got), "%s", b)
		})
	}
}

// factString prints every field of f, NaN included (which == and
// assert.Equal do not compare).
func factString(f Fact) string {
	b, _ := json.Marshal(struct {
		F  Fact
		Z  Number
		U  Number
		SK bool
	}{f, Number(f.SamplingZ), Number(f.Unprecedented), f.SamplingKnown})
	return string(b) + " " + formatNaNs(f)
}

// formatNaNs lists which of f's numbers are NaN.
func formatNaNs(f Fact) string {
	s := ""
	for _, v := range []float64{f.Incident.Value, f.Incident.Lower, f.Incident.Upper, f.Incident.Count, f.Baseline.Value, f.Baseline.Lower, f.Baseline.Upper,
		f.Baseline.Count, f.NoiseLower, f.NoiseUpper, f.SamplingZ, f.Unprecedented} {
		if math.IsNaN(v) {
			s += "N"
		} else {
			s += "."
		}
	}
	return s
}

// Evidence reads back from its JSON with the fact's written numbers; the
// fields evidence does not write (baseline bounds, noise) read as unknown.
func TestEvidenceJSONRoundTrip(t *testing.T) {
	f := Measured(2.5).WithBaseline(0.4).WithBounds(2, 3).WithCount(900, 1200).
		WithWindow("10:00-10:30Z (30m)", "09:30-10:00Z (30m)").WithSource("vllm:time_to_first_token_seconds")
	e := evidenceOf(TTFTP95, f)
	e.Text, e.Lead = "ttft_p95 2.5s vs baseline 400ms: 6.25x, severe; beyond noise", "ttft_p95 2.5s vs baseline 400ms: 6.25x, severe"
	e.Effect = &Effect{Ratio: 6.25, Beyond: true, Severity: SeveritySevere}
	b, err := json.Marshal(e)
	require.NoError(t, err)
	var got Evidence
	require.NoError(t, json.Unmarshal(b, &got))
	assert.Equal(t, TTFTP95, got.ID)
	assert.Equal(t, e.Text, got.Text)
	assert.Empty(t, got.Lead, "the lead is not written")
	assert.Equal(t, e.Effect, got.Effect)
	want := f
	want.Baseline.Lower, want.Baseline.Upper = math.NaN(), math.NaN()
	assert.Equal(t, factString(want), factString(got.Fact), "%s", b)
	again, err := json.Marshal(got)
	require.NoError(t, err)
	assert.JSONEq(t, string(b), string(again))
}
