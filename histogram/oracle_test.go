package histogram_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/histogram"
)

// The oracle tests compare Quantile, and Quantile of Merge, with the PromQL
// engine evaluating histogram_quantile over the same data in an in-memory
// TSDB: equal to 1e-9 relative, NaN and ±Inf identical.

var oracleQs = []float64{-0.5, 0, 0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 1, 1.5, math.NaN()}

// unlessShort is n, or short with -short.
func unlessShort(n, short int) int {
	if testing.Short() {
		return short
	}
	return n
}

func formatQ(q float64) string { return strconv.FormatFloat(q, 'g', -1, 64) }

// byLabel indexes a PromQL result by the value of one label.
func byLabel(t *testing.T, vec promql.Vector, name string) map[string]float64 {
	out := make(map[string]float64, len(vec))
	for _, s := range vec {
		out[s.Metric.Get(name)] = s.F
	}
	require.Len(t, out, len(vec))
	return out
}

// awkwardHistogram returns a histogram with a random layout and, often,
// the trouble real data has: bounds at or below zero, empty buckets,
// decreasing counts, differences of float noise, huge and fractional
// counts, no +Inf bucket, a bound spelled twice, NaN. spellings holds the le
// value of each bound (all distinct, as they are label values).
func awkwardHistogram(rng *rand.Rand) (h histogram.Histogram, spellings []string) {
	n := 1 + rng.IntN(12)
	b := 0.0
	switch rng.IntN(4) {
	case 0:
		b = -rng.ExpFloat64() * 5
	case 1:
		b = 0
	default:
		b = rng.ExpFloat64() * 0.01
	}
	scale := [...]float64{1, 0.37, 1e6, 1e12}[rng.IntN(4)]
	c := 0.0
	spell := oddLE(rng)
	for range n - 1 {
		h.Bounds = append(h.Bounds, b)
		h.Counts = append(h.Counts, c)
		switch rng.IntN(12) {
		case 0:
			b += 1e-9 * (1 + math.Abs(b))
		default:
			b += rng.ExpFloat64() * (1 + math.Abs(b))
		}
		switch rng.IntN(12) {
		case 0: // empty bucket
		case 1:
			c -= scale * float64(1+rng.IntN(3)) // non-monotonic
		case 2:
			c *= 1 + (rng.Float64()-0.5)*4e-12 // float noise
		default:
			c += scale * float64(rng.IntN(20))
		}
	}
	if rng.IntN(15) > 0 {
		h.Bounds = append(h.Bounds, math.Inf(+1))
		h.Counts = append(h.Counts, c+scale*float64(rng.IntN(4)))
	} else {
		h.Bounds = append(h.Bounds, b)
		h.Counts = append(h.Counts, c)
	}
	if rng.IntN(40) == 0 {
		h.Counts[rng.IntN(len(h.Counts))] = math.NaN()
	}
	if rng.IntN(30) == 0 {
		for i := range h.Counts {
			h.Counts[i] = 0
		}
	}
	for _, b := range h.Bounds {
		spellings = append(spellings, spell(b))
	}
	// A bound spelled twice ("0.5" and "5e-01"): two series that PromQL
	// sums into one bucket.
	if k := rng.IntN(len(h.Bounds)); rng.IntN(20) == 0 && !math.IsInf(h.Bounds[k], 0) {
		alt := strconv.FormatFloat(h.Bounds[k], 'e', -1, 64)
		if alt == spellings[k] {
			alt = strings.ToUpper(alt)
		}
		{
			h.Bounds = append(h.Bounds, h.Bounds[k])
			h.Counts = append(h.Counts, scale*float64(rng.IntN(5)))
			spellings = append(spellings, alt)
		}
	}
	h.Count, h.Sum = math.NaN(), math.NaN()
	return h, spellings
}

// awkwardStorage makes n histograms with awkwardHistogram and stores them
// as series h_bucket{id="<index>"} for the PromQL engine it returns.
func awkwardStorage(t *testing.T, rng *rand.Rand, n int) ([]histogram.Histogram, storage.Queryable, *promql.Engine) {
	hs := make([]histogram.Histogram, n)
	var samples []sample
	for i := range hs {
		h, spellings := awkwardHistogram(rng)
		hs[i] = h
		j := 0
		samples = append(samples, bucketSamples("h", h, func(float64) string { j++; return spellings[j-1] }, "id", strconv.Itoa(i))...)
	}
	return hs, newStorage(t, samples), newEngine(t)
}

func TestOracleQuantile(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	n := unlessShort(4000, 800)
	hs, stor, eng := awkwardStorage(t, rng, n)
	checked := 0
	var seen struct{ nan, overflow, forced, precision, warned, interpolated int }
	for _, q := range append(slices.Clone(oracleQs), rng.Float64(), rng.Float64()) {
		got := byLabel(t, instant(t, eng, stor, fmt.Sprintf("histogram_quantile(%s, h_bucket)", formatQ(q))), "id")
		require.Len(t, got, n, "PromQL answers for every histogram")
		for i, h := range hs {
			want := got[strconv.Itoa(i)]
			e := h.Quantile(q)
			if !histogram.SameFloat(want, e.Value) {
				t.Fatalf("histogram %d %v q=%v: PromQL %v, Quantile %v", i, h, q, want, e.Value)
			}
			checked++
			switch {
			case math.IsNaN(e.Value):
				seen.nan++
			case math.IsInf(e.Upper, +1):
				seen.overflow++
			case e.Lower < e.Value && e.Value < e.Upper:
				seen.interpolated++
			}
			if e.Repair.Forced {
				seen.forced++
			}
			if e.Repair.Precision {
				seen.precision++
			}
			if len(e.Warnings) > 0 {
				seen.warned++
			}
		}
	}
	t.Logf("%d quantiles of %d histograms equal to PromQL; %+v", checked, n, seen)
	// The generator must reach the awkward paths, or the test proves little.
	assert.Positive(t, seen.nan)
	assert.Positive(t, seen.overflow)
	assert.Positive(t, seen.forced)
	assert.Positive(t, seen.precision)
	assert.Positive(t, seen.warned)
	assert.Positive(t, seen.interpolated)
}

// TestOracleFraction does for Fraction what TestOracleQuantile does for
// Quantile, with histogram_fraction(-Inf, x, ...).
func TestOracleFraction(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	n := unlessShort(1500, 300)
	hs, stor, eng := awkwardStorage(t, rng, n)
	for _, x := range []float64{math.Inf(-1), -3, 0, 0.005, 0.5, 1, 2.5, 10, 1e9, math.Inf(+1), math.NaN()} {
		got := byLabel(t, instant(t, eng, stor, fmt.Sprintf("histogram_fraction(-Inf, %s, h_bucket)", formatQ(x))), "id")
		for i, h := range hs {
			want := got[strconv.Itoa(i)]
			if fe := h.Fraction(x); !histogram.SameFloat(want, fe.Value) {
				t.Fatalf("histogram %d %v x=%v: PromQL %v, Fraction %v", i, h, x, want, fe.Value)
			}
		}
	}
}

// randomLayout returns ascending finite bounds.
func randomLayout(rng *rand.Rand, n int) []float64 {
	out := make([]float64, n)
	b := rng.ExpFloat64() * 0.01
	for i := range out {
		out[i] = b
		b += rng.ExpFloat64() * b * 2
	}
	return out
}

// perturb makes some replicas awkward: empty, or with a decreasing count.
func perturb(rng *rand.Rand, h histogram.Histogram) histogram.Histogram {
	switch rng.IntN(10) {
	case 0:
		h = h.Scale(0)
	case 1:
		h = h.Clone()
		if k := rng.IntN(len(h.Counts)); k > 0 {
			h.Counts[k] = h.Counts[k-1] - float64(rng.IntN(3))
		}
	}
	return h
}

func TestOracleFleetSameLayout(t *testing.T) {
	checkFleetQuantiles(t, rand.NewPCG(5, 8), "fleet", func(rng *rand.Rand, f int) (histogram.Merged, []sample) {
		var samples []sample
		bounds := append(randomLayout(rng, 1+rng.IntN(25)), math.Inf(+1))
		pods := fleet(rng, 1+rng.IntN(30), bounds)
		for p := range pods {
			pods[p] = perturb(rng, pods[p])
			samples = append(samples, bucketSamples("fleet", pods[p], oddLE(rng), "fleet", strconv.Itoa(f), "pod", strconv.Itoa(p))...)
		}
		m, err := histogram.Merge(pods...)
		require.NoError(t, err)
		require.Empty(t, m.Dropped)
		return m, samples
	})
}

// checkFleetQuantiles builds fleets (300, or 60 with -short) with
// mergeFleet, which returns fleet f merged and the samples of its
// replicas, series <metric>_bucket{fleet="<f>", pod=...}; it stores the
// samples and asserts that PromQL's histogram_quantile of their sum by
// fleet equals the Quantile of each merged fleet, for every oracle
// quantile.
func checkFleetQuantiles(t *testing.T, src rand.Source, metric string, mergeFleet func(rng *rand.Rand, f int) (histogram.Merged, []sample)) {
	t.Helper()
	rng := rand.New(src)
	merged := make([]histogram.Merged, unlessShort(300, 60))
	var samples []sample
	for f := range merged {
		m, s := mergeFleet(rng, f)
		merged[f] = m
		samples = append(samples, s...)
	}
	stor := newStorage(t, samples)
	eng := newEngine(t)
	for _, q := range oracleQs {
		got := byLabel(t, instant(t, eng, stor, fmt.Sprintf("histogram_quantile(%s, sum by (fleet, le) (%s_bucket))", formatQ(q), metric)), "fleet")
		require.Len(t, got, len(merged))
		for f, m := range merged {
			if want, e := got[strconv.Itoa(f)], m.Quantile(q); !histogram.SameFloat(want, e.Value) {
				t.Fatalf("fleet %d %v q=%v: PromQL %v, Quantile %v", f, m, q, want, e.Value)
			}
		}
	}
}

// TestOracleFleetMixedLayouts merges fleets whose replicas use two layouts
// that share some bounds, and gives PromQL only the shared bounds (its
// answer on the union of bounds is the artefact Merge refuses to make).
func TestOracleFleetMixedLayouts(t *testing.T) {
	checkFleetQuantiles(t, rand.NewPCG(13, 21), "shared", func(rng *rand.Rand, f int) (histogram.Merged, []sample) {
		var samples []sample
		// Shared bounds, and two disjoint sets of extra bounds.
		all := randomLayout(rng, 3+rng.IntN(30))
		var shared, layoutA, layoutB []float64
		for _, b := range all {
			switch rng.IntN(3) {
			case 0:
				shared = append(shared, b)
				layoutA = append(layoutA, b)
				layoutB = append(layoutB, b)
			case 1:
				layoutA = append(layoutA, b)
			case 2:
				layoutB = append(layoutB, b)
			}
		}
		if len(shared) == 0 {
			shared, layoutA, layoutB = []float64{all[0]}, append(layoutA, all[0]), append(layoutB, all[0])
			slices.Sort(layoutA)
			slices.Sort(layoutB)
			layoutA, layoutB = slices.Compact(layoutA), slices.Compact(layoutB)
		}
		inf := math.Inf(+1)
		shared, layoutA, layoutB = append(shared, inf), append(layoutA, inf), append(layoutB, inf)
		nA := 1 + rng.IntN(15)
		pods := append(fleet(rng, nA, layoutA), fleet(rng, 1+rng.IntN(15), layoutB)...)
		for p := range pods {
			pods[p] = perturb(rng, pods[p])
			// PromQL gets only the shared bounds of each replica.
			var onShared histogram.Histogram
			for i, b := range pods[p].Bounds {
				if slices.Contains(shared, b) {
					onShared.Bounds = append(onShared.Bounds, b)
					onShared.Counts = append(onShared.Counts, pods[p].Counts[i])
				}
			}
			samples = append(samples, bucketSamples("shared", onShared, oddLE(rng), "fleet", strconv.Itoa(f), "pod", strconv.Itoa(p))...)
		}
		m, err := histogram.Merge(pods...)
		require.NoError(t, err)
		require.Equal(t, shared, m.Bounds, "fleet %d keeps the shared bounds", f)
		var dropped []float64
		for _, b := range all {
			if !slices.Contains(shared, b) {
				dropped = append(dropped, b)
			}
		}
		require.Equal(t, dropped, m.Dropped, "fleet %d", f)
		require.Equal(t, len(pods), m.Inputs)
		return m, samples
	})
}

// TestAverageOfPodP95IsNotFleetP95 shows, on a realistic fleet (vLLM TTFT
// buckets, 12 replicas, one hot), how far the average of per-pod p95s, the
// common dashboard mistake, is from the p95 of the merged histogram.
func TestAverageOfPodP95IsNotFleetP95(t *testing.T) {
	rng := rand.New(rand.NewPCG(2026, 11))
	pods := fleet(rng, 12, vllmTTFTBounds)
	var sum float64
	for _, p := range pods {
		sum += p.Quantile(0.95).Value
	}
	avg := sum / float64(len(pods))
	m, err := histogram.Merge(pods...)
	require.NoError(t, err)
	fleetP95 := m.Quantile(0.95)
	require.True(t, fleetP95.Stable, "%v", fleetP95)
	gap := (fleetP95.Value - avg) / fleetP95.Value
	t.Logf("fleet %v; average of per-pod p95 %.3g: %.0f%% below", fleetP95, avg, gap*100)
	// The hot replica holds most of the tail; averaging gives it 1/12 of
	// the weight and the answer lands buckets below the fleet's p95.
	assert.Greater(t, gap, 0.3, "average of pod p95s is materially below the fleet p95")
}
