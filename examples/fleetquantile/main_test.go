package main

import (
	"bytes"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/histogram"
)

func TestRun(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out))
	got := out.String()
	for _, want := range []string{
		"healthy (1800 requests): p95 0.2812 [0.25, 0.5] n=1800\n",
		"slow     (200 requests): p95 2.5 [1, 2.5] n=200\n",
		"average of the two p95:  1.39s",
		"fleet (merged buckets):  p95 0.8947 [0.5, 1] n=2000\n",
		"requests slower than the averaged p95: 3.2% (between 0.5% and 4.2%), not 5%\n",
		"2. The sample fleet (long-prompts), TTFT over the incident half",
		"fleet (merged)",
		"vllm-0", "vllm-3",
		"average of the 4 replicas' p95:",
	} {
		assert.Contains(t, got, want)
	}
}

// TestHandMadeArithmetic checks the numbers the program prints against
// a computation by hand: the merged histogram's p95 interpolates in the
// (0.5, 1] bucket, where the ranks 1840 and 1916 lie.
func TestHandMadeArithmetic(t *testing.T) {
	a := histogram.Histogram{Bounds: ttftBounds, Counts: []float64{1200, 1700, 1780, 1796, 1800, 1800}, Count: 1800, Sum: 270}
	b := histogram.Histogram{Bounds: ttftBounds, Counts: []float64{10, 20, 60, 120, 190, 200}, Count: 200, Sum: 280}
	m, err := histogram.Merge(a, b)
	require.NoError(t, err)
	assert.Equal(t, []float64{1210, 1720, 1840, 1916, 1990, 2000}, m.Counts)
	want := 0.5 + (1900.0-1840)/(1916-1840)*0.5
	assert.InDelta(t, want, m.Quantile(0.95).Value, 1e-12)
	avg := (a.Quantile(0.95).Value + b.Quantile(0.95).Value) / 2
	assert.InDelta(t, (0.25+10.0/80*0.25+2.5)/2, avg, 1e-12)
	assert.Greater(t, math.Abs(avg-want)/want, 0.5, "the example must show a large error")
}
