package histogram_test

import (
	"context"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/teststorage"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/whyslow/whyslow/histogram"
)

// Test helpers shared by the oracle tests and the benchmarks: in-memory
// Prometheus storage filled with classic bucket series, and realistic fleets.

// vllmTTFTBounds are the bounds of vLLM's time_to_first_token_seconds.
var vllmTTFTBounds = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
	1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560, math.Inf(+1)}

// sample is one float sample of a series.
type sample struct {
	lset labels.Labels
	v    float64
}

// bucketSamples returns the _bucket series of h under name with the given
// extra labels; spell formats each bound as an le value.
func bucketSamples(name string, h histogram.Histogram, spell func(float64) string, extra ...string) []sample {
	out := make([]sample, len(h.Bounds))
	for i, b := range h.Bounds {
		kv := append([]string{model.MetricNameLabel, name + "_bucket", labels.BucketLabel, spell(b)}, extra...)
		out[i] = sample{labels.FromStrings(kv...), h.Counts[i]}
	}
	return out
}

// plainLE spells a bound the way Prometheus 3 does.
func plainLE(b float64) string {
	if math.IsInf(b, +1) {
		return "+Inf"
	}
	return strconv.FormatFloat(b, 'g', -1, 64)
}

// oddLE spells a bound in one of the forms clients use ("1", "1.0",
// "1e+00"), chosen by rng.
func oddLE(rng *rand.Rand) func(float64) string {
	return func(b float64) string {
		if math.IsInf(b, +1) {
			return [...]string{"+Inf", "Inf", "+inf"}[rng.IntN(3)]
		}
		switch rng.IntN(3) {
		case 0:
			return strconv.FormatFloat(b, 'e', -1, 64)
		case 1:
			if b == math.Trunc(b) && math.Abs(b) < 1e15 {
				return strconv.FormatFloat(b, 'f', 1, 64)
			}
		}
		return strconv.FormatFloat(b, 'g', -1, 64)
	}
}

// newStorage returns an in-memory TSDB holding every sample at time 0.
func newStorage(tb testing.TB, samples []sample) *teststorage.TestStorage {
	tb.Helper()
	stor := teststorage.New(tb)
	app := stor.AppenderV2(context.Background())
	for _, s := range samples {
		_, err := app.Append(0, s.lset, 0, 0, s.v, nil, nil, storage.AOptions{})
		require.NoError(tb, err)
	}
	require.NoError(tb, app.Commit())
	return stor
}

func newEngine(tb testing.TB) *promql.Engine {
	eng := promql.NewEngine(promql.EngineOpts{MaxSamples: 50_000_000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	tb.Cleanup(func() { _ = eng.Close() })
	return eng
}

// instant evaluates expr at time 0.
func instant(tb testing.TB, eng *promql.Engine, q storage.Queryable, expr string) promql.Vector {
	qry, err := eng.NewInstantQuery(context.Background(), q, nil, expr, time.Unix(0, 0))
	require.NoError(tb, err)
	defer qry.Close()
	vec, err := qry.Exec(context.Background()).Vector()
	require.NoError(tb, err, expr)
	return vec
}

// latencyHistogram returns the expected cumulative counts of n
// observations from a log-normal latency distribution with the given
// median and shape sigma, rounded to whole observations.
func latencyHistogram(bounds []float64, n, median, sigma float64) histogram.Histogram {
	d := distuv.LogNormal{Mu: math.Log(median), Sigma: sigma}
	h := histogram.Histogram{Bounds: bounds, Counts: make([]float64, len(bounds)), Count: n}
	for i, b := range bounds {
		h.Counts[i] = math.Round(n * d.CDF(b))
	}
	h.Counts[len(bounds)-1] = n
	h.Sum = n * math.Exp(d.Mu+sigma*sigma/2)
	return h
}

// fleet returns replicas of one vLLM deployment on the given bounds: most
// pods alike, with per-pod load and latency spread, and one hot pod that
// takes more traffic and is slower.
func fleet(rng *rand.Rand, pods int, bounds []float64) []histogram.Histogram {
	hs := make([]histogram.Histogram, pods)
	for i := range hs {
		n := math.Round(500 + 1000*rng.Float64())
		median := 0.2 * math.Exp(0.3*rng.NormFloat64())
		if i == 0 {
			n *= 3
			median *= 6
		}
		hs[i] = latencyHistogram(bounds, n, median, 0.6+0.4*rng.Float64())
	}
	return hs
}

// bucketQuantile is PromQL's own classic quantile on h's buckets.
func bucketQuantile(q float64, h histogram.Histogram) (float64, bool, bool, float64, float64, float64) {
	return promql.BucketQuantile(q, buckets(h))
}
