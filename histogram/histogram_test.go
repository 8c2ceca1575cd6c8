package histogram_test

import (
	"errors"
	"math"
	"testing"

	promhistogram "github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser/posrange"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/histogram"
)

var (
	inf = math.Inf(+1)
	nan = math.NaN()
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		h    histogram.Histogram
		errs []error
		msg  string
	}{
		{"valid", histogram.Histogram{Bounds: []float64{0.1, 1, inf}, Counts: []float64{1, 2, 3}, Count: 3, Sum: 1}, nil, ""},
		{"unknown count and sum are fine", histogram.Histogram{Bounds: []float64{1, inf}, Counts: []float64{1, 2}, Count: nan, Sum: nan}, nil, ""},
		{"float noise is not a decrease", histogram.Histogram{Bounds: []float64{1, inf}, Counts: []float64{1, 1 - 1e-14}, Count: 1}, nil, ""},
		{"no buckets", histogram.Histogram{}, []error{histogram.ErrNoInfBucket}, "no buckets"},
		{"lengths", histogram.Histogram{Bounds: []float64{inf}, Counts: []float64{1, 2}}, []error{histogram.ErrLengthMismatch}, "1 bounds, 2 counts"},
		{"unsorted", histogram.Histogram{Bounds: []float64{1, 0.5, inf}, Counts: []float64{1, 1, 1}, Count: 1},
			[]error{histogram.ErrUnsortedBounds}, "bucket 1 le=0.5 is not above bucket 0 le=1"},
		{"repeated bound", histogram.Histogram{Bounds: []float64{1, 1, inf}, Counts: []float64{1, 1, 1}, Count: 1},
			[]error{histogram.ErrUnsortedBounds}, "le=1 is not above"},
		{"NaN bound", histogram.Histogram{Bounds: []float64{nan, inf}, Counts: []float64{1, 1}, Count: 1},
			[]error{histogram.ErrUnsortedBounds}, "bound NaN"},
		{"no +Inf", histogram.Histogram{Bounds: []float64{1, 2}, Counts: []float64{1, 2}, Count: 2},
			[]error{histogram.ErrNoInfBucket}, "last bound is le=2"},
		{"count mismatch", histogram.Histogram{Bounds: []float64{1, inf}, Counts: []float64{1, 2}, Count: 3},
			[]error{histogram.ErrCountMismatch}, "count is 3, +Inf bucket has 2"},
		{"negative", histogram.Histogram{Bounds: []float64{1, inf}, Counts: []float64{-1, 2}, Count: 2},
			[]error{histogram.ErrNegativeCount}, "le=1 has -1"},
		{"NaN count", histogram.Histogram{Bounds: []float64{1, inf}, Counts: []float64{nan, 2}, Count: 2},
			[]error{histogram.ErrNaNCount}, "bucket le=1"},
		{"decrease", histogram.Histogram{Bounds: []float64{1, 2, inf}, Counts: []float64{5, 3, 5}, Count: 5},
			[]error{histogram.ErrNonMonotonic}, "le=2 has 3, below 5 at le=1"},
		{"several problems at once", histogram.Histogram{Bounds: []float64{2, 1}, Counts: []float64{5, -3}, Count: 7},
			[]error{histogram.ErrUnsortedBounds, histogram.ErrNoInfBucket, histogram.ErrNegativeCount, histogram.ErrNonMonotonic}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.h.Validate()
			if tt.errs == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, want := range tt.errs {
				assert.ErrorIs(t, err, want)
			}
			assert.Contains(t, err.Error(), tt.msg)
		})
	}
}

func TestQuantileDoesNotModifyInput(t *testing.T) {
	h := histogram.Histogram{Bounds: []float64{2, 1, 1, inf}, Counts: []float64{5, 3, 1, 4}}
	c := h.Clone()
	h.Quantile(0.5)
	h.Fraction(1.5)
	_, _ = histogram.Merge(c, c)
	assert.Equal(t, c, h)
}

func TestEstimate(t *testing.T) {
	h := histogram.Histogram{Bounds: []float64{0.5, 1, 2.5, inf}, Counts: []float64{100, 700, 990, 1000}, Count: 1000, Sum: 900}
	tests := []struct {
		q      float64
		stable bool
		str    string
	}{
		{0.5, true, "p50 0.8333 [0.5, 1] n=1000"},
		{0.95, true, "p95 2.293 [1, 2.5] n=1000"},
		{0.99, true, "p99 2.5 [1, 2.5] n=1000"},
		{0.999, false, "p99.9 2.5 [2.5, +Inf] n=1000 unstable (need n>=10000)"},
		{1.5, false, "p150 +Inf n=1000; histogram: quantile outside [0, 1]: q=1.5"},
	}
	for _, tt := range tests {
		e := h.Quantile(tt.q)
		assert.Equal(t, tt.stable, e.Stable, "q=%v", tt.q)
		assert.Equal(t, tt.str, e.String())
		if !math.IsNaN(e.Lower) {
			assert.True(t, e.Lower <= e.Value && e.Value <= e.Upper, "%v", e)
		}
	}
	// A p99 from 40 observations is flagged.
	few := histogram.Histogram{Bounds: []float64{1, inf}, Counts: []float64{39, 40}, Count: 40}
	assert.False(t, few.Quantile(0.99).Stable)
	assert.True(t, few.Quantile(0.5).Stable)
	assert.Contains(t, few.Quantile(0.99).String(), "unstable (need n>=1000)")

	repaired := histogram.Histogram{Bounds: []float64{1, 2, inf}, Counts: []float64{5, 3, 5}}.Quantile(0.5)
	assert.Equal(t, histogram.Repair{Forced: true, MinBound: 2, MaxBound: 2, MaxDrop: 2}, repaired.Repair)
	assert.Contains(t, repaired.String(), "repaired (counts went down by up to 2 at le=2..2)")
}

func TestMinCount(t *testing.T) {
	for q, want := range map[float64]float64{0.5: 20, 0.95: 200, 0.99: 1000, 0.1: 100, 0: inf, 1: inf, -1: inf, 2: inf} {
		assert.InDelta(t, want, histogram.MinCount(q), 1e-9, "q=%v", q)
	}
	assert.True(t, math.IsInf(histogram.MinCount(nan), +1))
}

func TestFraction(t *testing.T) {
	h := histogram.Histogram{Bounds: []float64{0.5, 1, 2.5, inf}, Counts: []float64{100, 700, 990, 1000}, Count: 1000}
	tests := []struct {
		x                      float64
		value                  float64
		lowB, atLow, upB, atUp float64
		str                    string
	}{
		{2, 0.7 + 0.29*(1.0/1.5), 1, 0.7, 2.5, 0.99, "<=2: 89.33% [70% at <=1, 99% at <=2.5] n=1000"},
		{1, 0.7, 1, 0.7, 1, 0.7, "<=1: 70% (exact, a bucket bound) n=1000"},
		{0.25, 0.05, math.Inf(-1), 0, 0.5, 0.1, "<=0.25: 5% [0% at <=-Inf, 10% at <=0.5] n=1000"},
		{10, 0.99, 2.5, 0.99, inf, 1, "<=10: 99% [99% at <=2.5, 100% at <=+Inf] n=1000"},
		{-1, 0, math.Inf(-1), 0, 0.5, 0.1, "<=-1: 0% [0% at <=-Inf, 10% at <=0.5] n=1000"},
		{nan, nan, nan, nan, nan, nan, "<=NaN: NaN n=1000"},
	}
	for _, tt := range tests {
		fe := h.Fraction(tt.x)
		assert.InDelta(t, tt.value, fe.Value, 1e-12, "x=%v", tt.x)
		if !math.IsNaN(tt.value) {
			assert.Equal(t, []float64{tt.lowB, tt.atLow, tt.upB, tt.atUp}, []float64{fe.LowerBound, fe.AtLower, fe.UpperBound, fe.AtUpper})
			assert.True(t, fe.AtLower <= fe.Value && fe.Value <= fe.AtUpper)
		}
		assert.Equal(t, tt.str, fe.String())
		assert.True(t, histogram.SameFloat(h.FractionBetween(math.Inf(-1), tt.x), fe.Value))
	}
	assert.InDelta(t, 0.29, h.FractionBetween(1, 2.5), 1e-12)
	assert.Equal(t, 0.0, h.FractionBetween(2, 1))
}

func TestSub(t *testing.T) {
	bounds := []float64{1, 2, inf}
	earlier := histogram.Histogram{Bounds: bounds, Counts: []float64{1, 2, 3}, Count: 3, Sum: 4}
	later := histogram.Histogram{Bounds: []float64{1.0, 2e0, inf}, Counts: []float64{3, 5, 8}, Count: 8, Sum: 14}

	d, err := histogram.Sub(later, earlier)
	require.NoError(t, err)
	assert.Equal(t, histogram.Histogram{Bounds: later.Bounds, Counts: []float64{2, 3, 5}, Count: 5, Sum: 10}, d)

	// A restart: a bucket went down. later is the increase since then.
	restarted := histogram.Histogram{Bounds: bounds, Counts: []float64{0, 2, 3}, Count: 3, Sum: 1}
	d, err = histogram.Sub(restarted, earlier)
	require.ErrorIs(t, err, histogram.ErrCounterReset)
	assert.Contains(t, err.Error(), "bucket le=1 went down from 1 to 0")
	assert.Equal(t, restarted, d)

	_, err = histogram.Sub(histogram.Histogram{Bounds: bounds, Counts: []float64{1, 2, 3}, Count: 2}, earlier)
	require.ErrorIs(t, err, histogram.ErrCounterReset)
	assert.Contains(t, err.Error(), "count went down from 3 to 2")

	_, err = histogram.Sub(histogram.Histogram{Bounds: []float64{1, 5, inf}, Counts: []float64{1, 2, 3}}, earlier)
	require.ErrorIs(t, err, histogram.ErrLayoutMismatch)
	assert.Contains(t, err.Error(), "bucket 1 is le=2 vs le=5")

	_, err = histogram.Sub(histogram.Histogram{Bounds: bounds, Counts: []float64{1}}, earlier)
	require.ErrorIs(t, err, histogram.ErrLengthMismatch)
}

func TestMerge(t *testing.T) {
	a := histogram.Histogram{Bounds: []float64{0.5, 1, 2.5, inf}, Counts: []float64{1, 2, 3, 4}, Count: 4, Sum: 3}
	b := histogram.Histogram{Bounds: []float64{0.5, 1, 2.5, inf}, Counts: []float64{10, 20, 30, 40}, Count: 40, Sum: 30}
	old := histogram.Histogram{Bounds: []float64{0.25, 1, 5, inf}, Counts: []float64{100, 200, 300, 400}, Count: 400, Sum: 300}

	m, err := histogram.Merge(a, b)
	require.NoError(t, err)
	assert.Equal(t, histogram.Merged{
		Histogram: histogram.Histogram{Bounds: a.Bounds, Counts: []float64{11, 22, 33, 44}, Count: 44, Sum: 33},
		Inputs:    2,
	}, m)
	assert.Equal(t, "merged 2: n=44 sum=33 mean=0.75 {0.5:11 1:22 2.5:33 +Inf:44}", m.String())

	m, err = histogram.Merge(a, old, b)
	require.NoError(t, err)
	assert.Equal(t, []float64{1, inf}, m.Bounds)
	assert.Equal(t, []float64{222, 444}, m.Counts)
	assert.Equal(t, []float64{0.25, 0.5, 2.5, 5}, m.Dropped)
	assert.Equal(t, 3, m.Inputs)
	assert.Contains(t, m.String(), "dropped le=[0.25 0.5 2.5 5] (not shared by all inputs)")

	unknown := a.Clone()
	unknown.Count = nan
	m, err = histogram.Merge(a, unknown)
	require.NoError(t, err)
	assert.True(t, math.IsNaN(m.Count), "an unknown count makes the total unknown")

	_, err = histogram.Merge(a, histogram.Histogram{Bounds: []float64{0.7, inf}, Counts: []float64{1, 1}})
	require.ErrorIs(t, err, histogram.ErrNoCommonBounds)
	assert.Contains(t, err.Error(), "[0.5 1 2.5 +Inf] vs [0.7 +Inf]")

	_, err = histogram.Merge()
	require.Error(t, err)
	_, err = histogram.Merge(a, histogram.Histogram{Bounds: []float64{1, 0.5, inf}, Counts: []float64{1, 1, 1}})
	require.ErrorIs(t, err, histogram.ErrUnsortedBounds)
	assert.Contains(t, err.Error(), "input 1")
	_, err = histogram.Merge(histogram.Histogram{Bounds: []float64{1}, Counts: []float64{1}})
	require.ErrorIs(t, err, histogram.ErrNoInfBucket)
}

func TestSameLayout(t *testing.T) {
	assert.True(t, histogram.SameLayout([]float64{1, inf}, []float64{1.0, inf}))
	assert.True(t, histogram.SameLayout(nil, []float64{}))
	assert.False(t, histogram.SameLayout([]float64{1, inf}, []float64{1, 2, inf}))
	assert.False(t, histogram.SameLayout([]float64{nan}, []float64{nan}))
}

func TestMeanStringClone(t *testing.T) {
	h := histogram.Histogram{Bounds: []float64{0.1, inf}, Counts: []float64{1, 4}, Count: 4, Sum: 2}
	assert.Equal(t, 0.5, h.Mean())
	assert.True(t, math.IsNaN(histogram.Histogram{}.Mean()))
	assert.Equal(t, "n=4 sum=2 mean=0.5 {0.1:1 +Inf:4}", h.String())
	c := h.Clone()
	c.Counts[0] = 9
	assert.Equal(t, 1.0, h.Counts[0])
	s := h.Scale(0.5)
	assert.Equal(t, []float64{0.5, 2}, s.Counts)
	assert.Equal(t, 4.0, h.Total())
}

func nhcb(custom []float64, counts []float64) *promhistogram.FloatHistogram {
	fh := &promhistogram.FloatHistogram{
		Schema:          promhistogram.CustomBucketsSchema,
		CustomValues:    custom,
		PositiveSpans:   []promhistogram.Span{{Offset: 0, Length: uint32(len(counts))}},
		PositiveBuckets: counts,
	}
	for _, c := range counts {
		fh.Count += c
	}
	return fh
}

func TestFromNHCB(t *testing.T) {
	// Integer NHCB with delta-encoded buckets, as textparse produces it.
	ih := &promhistogram.Histogram{
		Schema: promhistogram.CustomBucketsSchema, CustomValues: []float64{0.1, 0.5, 1, 2.5},
		PositiveSpans: []promhistogram.Span{{Offset: 0, Length: 5}}, PositiveBuckets: []int64{2, -2, 5, -5, 2},
		Count: 9, Sum: 12,
	}
	h, err := histogram.FromNHCB(ih.ToFloat(nil))
	require.NoError(t, err)
	assert.Equal(t, histogram.Histogram{Bounds: []float64{0.1, 0.5, 1, 2.5, inf}, Counts: []float64{2, 2, 7, 7, 9}, Count: 9, Sum: 12}, h)
	require.NoError(t, h.Validate())

	// Buckets outside the spans are empty.
	gap := &promhistogram.FloatHistogram{Schema: promhistogram.CustomBucketsSchema, CustomValues: []float64{0.1, 0.5, 1},
		PositiveSpans: []promhistogram.Span{{Offset: 0, Length: 1}, {Offset: 2, Length: 1}}, PositiveBuckets: []float64{2, 3}, Count: 5}
	h, err = histogram.FromNHCB(gap)
	require.NoError(t, err)
	assert.Equal(t, []float64{2, 2, 2, 5}, h.Counts)

	_, err = histogram.FromNHCB(&promhistogram.FloatHistogram{Schema: 3})
	require.ErrorIs(t, err, histogram.ErrNotCustomBuckets)
	assert.Contains(t, err.Error(), "schema 3")
	_, err = histogram.FromNHCB(nil)
	require.Error(t, err)
}

// TestNHCBDiffersFromPromQLNative pins where PromQL's histogram_quantile on
// an NHCB (promql.HistogramQuantile) differs from the classic semantics that
// FromNHCB + Quantile give (and that PromQL gives the same data as _bucket
// series): the native path skips empty buckets.
func TestNHCBDiffersFromPromQLNative(t *testing.T) {
	tests := []struct {
		name            string
		fh              *promhistogram.FloatHistogram
		q               float64
		classic, native float64
	}{
		// The rank falls exactly on the top of bucket (0,1]; (1,3] is
		// empty. Classic: 1, the top of the bucket that reaches the rank.
		// Native: 3, the bottom of the next populated bucket.
		{"rank at the start of empty buckets", nhcb([]float64{1, 2, 3}, []float64{5, 0, 0, 5}), 0.5, 1, 3},
		// q=0 with an empty first bucket: classic interpolates 0/0 = NaN,
		// native skips to the first populated bucket's lower edge.
		{"q=0 and empty first bucket", nhcb([]float64{1, 2, 3}, []float64{0, 5, 5, 0}), 0, nan, 1},
		{"same where no empty bucket is involved", nhcb([]float64{1, 2, 3}, []float64{2, 3, 4, 1}), 0.3, 1 + 1.0/3, 1 + 1.0/3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := histogram.FromNHCB(tt.fh)
			require.NoError(t, err)
			classic := h.Quantile(tt.q).Value
			native, _ := promql.HistogramQuantile(tt.q, tt.fh, "x", posrange.PositionRange{})
			bucket, _, _, _, _, _ := promql.BucketQuantile(tt.q, buckets(h))
			assert.True(t, histogram.SameFloat(tt.classic, classic), "classic %v", classic)
			assert.True(t, histogram.SameFloat(bucket, classic), "PromQL on _bucket series %v", bucket)
			assert.True(t, histogram.SameFloat(tt.native, native), "native %v", native)
		})
	}
}

func buckets(h histogram.Histogram) promql.Buckets {
	bs := make(promql.Buckets, len(h.Bounds))
	for i := range h.Bounds {
		bs[i] = promql.Bucket{UpperBound: h.Bounds[i], Count: h.Counts[i]}
	}
	return bs
}

func TestErrorsAreDistinct(t *testing.T) {
	all := []error{histogram.ErrLengthMismatch, histogram.ErrUnsortedBounds, histogram.ErrNoInfBucket,
		histogram.ErrCountMismatch, histogram.ErrNegativeCount, histogram.ErrNaNCount, histogram.ErrNonMonotonic,
		histogram.ErrCounterReset, histogram.ErrLayoutMismatch, histogram.ErrNoCommonBounds,
		histogram.ErrNotCustomBuckets, histogram.ErrInvalidQuantile}
	for i, a := range all {
		for j, b := range all {
			assert.Equal(t, i == j, errors.Is(a, b))
		}
	}
}

func TestQuantileAllocatesNothing(t *testing.T) {
	h := latencyHistogram(bench30Bounds(), 5000, 0.5, 0.8)
	broken := h.Clone()
	broken.Counts[10], broken.Counts[20] = broken.Counts[9]-3, nan // repaired on the fly, no copy
	for _, h := range []histogram.Histogram{h, broken} {
		allocs := testing.AllocsPerRun(100, func() {
			_ = h.Quantile(0.95)
			_ = h.Fraction(2)
		})
		assert.Zero(t, allocs, "%v", h)
	}
}
