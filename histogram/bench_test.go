package histogram_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/histogram"
)

// Benchmarks; BENCHMARKS.md has the numbers and the command.

// bench30Bounds are 29 finite bounds plus +Inf, the size of vLLM's
// e2e_request_latency_seconds.
func bench30Bounds() []float64 {
	b := make([]float64, 0, 30)
	for i := range 29 {
		b = append(b, 0.01*math.Pow(1.5, float64(i)))
	}
	return append(b, math.Inf(+1))
}

func BenchmarkQuantile(b *testing.B) {
	h := latencyHistogram(bench30Bounds(), 12345, 0.8, 0.9)
	require.NoError(b, h.Validate())
	qs := [...]float64{0.5, 0.95, 0.99}
	var sink float64
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		sink += h.Quantile(qs[i%len(qs)]).Value
		i++
	}
	if math.IsNaN(sink) {
		b.Fatal("NaN")
	}
}

// replicas returns n replicas on vLLM's TTFT bounds; with mixed, every
// third replica has an older layout with two extra bounds and one missing.
func replicas(n int, mixed bool) []histogram.Histogram {
	rng := rand.New(rand.NewPCG(1, 1))
	old := []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.15, 0.25, 0.5, 0.75,
		1, 2.5, 5, 7.5, 10, 20, 40, 80, 640, math.Inf(+1)}
	hs := fleet(rng, n, vllmTTFTBounds)
	if mixed {
		for i := 0; i < n; i += 3 {
			hs[i] = latencyHistogram(old, hs[i].Count, 0.3, 0.8)
		}
	}
	return hs
}

func BenchmarkMerge(b *testing.B) {
	for _, mixed := range []bool{false, true} {
		name := "identical"
		if mixed {
			name = "mixed"
		}
		b.Run(fmt.Sprintf("%s/replicas=1000", name), func(b *testing.B) {
			hs := replicas(1000, mixed)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := histogram.Merge(hs...); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

var fleetQs = [...]float64{0.5, 0.95, 0.99}

// BenchmarkFleetQuantiles is the library answering a 1,000-replica fleet's
// p50, p95 and p99: merge, then three quantiles.
func BenchmarkFleetQuantiles(b *testing.B) {
	hs := replicas(1000, false)
	b.ReportAllocs()
	for b.Loop() {
		m, err := histogram.Merge(hs...)
		if err != nil {
			b.Fatal(err)
		}
		for _, q := range fleetQs {
			_ = m.Quantile(q)
		}
	}
}

// BenchmarkPromQLFleetQuantiles is the PromQL engine answering the same
// three histogram_quantile(q, sum by (le) (x_bucket)) queries from an
// in-memory TSDB (its head) at one instant.
func BenchmarkPromQLFleetQuantiles(b *testing.B) {
	hs := replicas(1000, false)
	var samples []sample
	for p, h := range hs {
		samples = append(samples, bucketSamples("x", h, plainLE, "pod", strconv.Itoa(p))...)
	}
	stor := newStorage(b, samples)
	eng := newEngine(b)
	m, err := histogram.Merge(hs...)
	require.NoError(b, err)
	exprs := make([]string, len(fleetQs))
	for i, q := range fleetQs {
		exprs[i] = fmt.Sprintf("histogram_quantile(%s, sum by (le) (x_bucket))", formatQ(q))
		vec := instant(b, eng, stor, exprs[i])
		require.Len(b, vec, 1)
		require.True(b, histogram.SameFloat(vec[0].F, m.Quantile(q).Value), "the two benchmarks compute the same answer")
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, e := range exprs {
			_ = instant(b, eng, stor, e)
		}
	}
}
