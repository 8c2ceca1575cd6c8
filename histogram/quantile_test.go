package histogram

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/util/almost"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func inf() float64 { return math.Inf(+1) }

func toBuckets(h Histogram) promql.Buckets {
	bs := make(promql.Buckets, len(h.Bounds))
	for i := range h.Bounds {
		bs[i] = promql.Bucket{UpperBound: h.Bounds[i], Count: h.Counts[i]}
	}
	return bs
}

// sameFloat reports whether a and b are equal to 1e-9 relative, with NaN
// equal to NaN and infinities equal only to themselves. It is the
// equality of the external tests too (as SameFloat, in export_test.go).
func sameFloat(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	if math.IsInf(a, 0) || math.IsInf(b, 0) {
		return a == b
	}
	return almost.Equal(a, b, 1e-9)
}

func TestQuantileEdgeCases(t *testing.T) {
	nan := math.NaN()
	std := Histogram{Bounds: []float64{0.1, 0.5, 1, 2.5, inf()}, Counts: []float64{2, 2, 7, 7, 9}, Count: 9, Sum: 12}
	tests := []struct {
		name         string
		h            Histogram
		q            float64
		value        float64
		lower, upper float64
		forced       bool
	}{
		{"median interpolates", std, 0.5, 0.5 + 0.5*(4.5-2)/5, 0.5, 1, false},
		{"q NaN", std, nan, nan, nan, nan, false},
		{"q below 0", std, -0.1, math.Inf(-1), nan, nan, false},
		{"q above 1", std, 1.01, inf(), nan, nan, false},
		{"q 1 lands at lowest full bucket", Histogram{Bounds: []float64{1, 2, inf()}, Counts: []float64{3, 5, 5}}, 1, 2, 1, 2, false},
		{"rank in +Inf bucket", std, 0.9, 2.5, 2.5, inf(), false},
		{"empty", Histogram{Bounds: []float64{1, inf()}, Counts: []float64{0, 0}}, 0.5, nan, nan, nan, false},
		{"only +Inf bucket", Histogram{Bounds: []float64{inf()}, Counts: []float64{5}}, 0.5, nan, nan, nan, false},
		{"no +Inf bucket", Histogram{Bounds: []float64{1, 2}, Counts: []float64{1, 2}}, 0.5, nan, nan, nan, false},
		{"no buckets", Histogram{}, 0.5, nan, nan, nan, false},
		{"first bound positive", Histogram{Bounds: []float64{1, inf()}, Counts: []float64{4, 4}}, 0.25, 0.25, 0, 1, false},
		{"first bound zero", Histogram{Bounds: []float64{0, 1, inf()}, Counts: []float64{4, 8, 8}}, 0.25, 0, math.Inf(-1), 0, false},
		{"first bound negative", Histogram{Bounds: []float64{-1, 1, inf()}, Counts: []float64{4, 8, 8}}, 0.75, 0, -1, 1, false},
		{"q 0 with empty first bucket is NaN", Histogram{Bounds: []float64{0.001, 1, inf()}, Counts: []float64{0, 8, 8}}, 0, nan, 0, 0.001, false},
		{"non-monotonic repaired", Histogram{Bounds: []float64{1, 2, 3, inf()}, Counts: []float64{5, 3, 8, 8}}, 0.5, 0.8, 0, 1, true},
		{"+Inf bucket raised by repair", Histogram{Bounds: []float64{1, 2, inf()}, Counts: []float64{5, 10, 8}}, 0.9, 1 + 4/5.0, 1, 2, true},
		{"small delta ignored", Histogram{Bounds: []float64{1, 2, inf()}, Counts: []float64{5, 5 * (1 - 1e-13), 10}}, 0.5, 1, 0, 1, false},
		{"unsorted and duplicate bounds", Histogram{Bounds: []float64{0.2, 0.1, 0.2, inf()}, Counts: []float64{1, 1, 2, 4}}, 0.5, 0.15, 0.1, 0.2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := tt.h.Quantile(tt.q)
			assert.True(t, sameFloat(tt.value, e.Value), "value: want %v got %v", tt.value, e.Value)
			assert.True(t, sameFloat(tt.lower, e.Lower), "lower: want %v got %v", tt.lower, e.Lower)
			assert.True(t, sameFloat(tt.upper, e.Upper), "upper: want %v got %v", tt.upper, e.Upper)
			assert.Equal(t, tt.forced, e.Repair.Forced)
			if len(tt.h.Bounds) > 0 {
				want, forced, _, _, _, _ := promql.BucketQuantile(tt.q, toBuckets(tt.h))
				assert.True(t, sameFloat(want, e.Value), "promql.BucketQuantile: %v, we: %v", want, e.Value)
				assert.Equal(t, forced, e.Repair.Forced)
			}
		})
	}
}

func TestQuantileMatchesBucketQuantile(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 20000 {
		h := randomHistogram(rng)
		for _, q := range []float64{0, 0.01, 0.25, 0.5, 0.9, 0.95, 0.99, 1, rng.Float64()} {
			want, forced, _, _, _, _ := promql.BucketQuantile(q, toBuckets(h))
			got := h.Quantile(q)
			require.True(t, sameFloat(want, got.Value), "case %d q=%v %v: promql %v, got %v", i, q, h, want, got.Value)
			require.Equal(t, forced, got.Repair.Forced, "case %d", i)
		}
		for _, x := range []float64{math.Inf(-1), -1, 0, 0.3, 1, 2.5, 7, inf(), rng.Float64() * 10} {
			want := promql.BucketFraction(math.Inf(-1), x, toBuckets(h))
			got := h.Fraction(x)
			require.True(t, sameFloat(want, got.Value), "case %d x=%v %v: promql %v, got %v", i, x, h, want, got.Value)
		}
	}
}

// randomHistogram returns a histogram that is often awkward: unsorted or
// repeated bounds, decreasing counts, NaN, zero, tiny deltas.
func randomHistogram(rng *rand.Rand) Histogram {
	n := rng.IntN(8)
	var h Histogram
	b := rng.NormFloat64() * 3
	c := 0.0
	for range n {
		h.Bounds = append(h.Bounds, b)
		h.Counts = append(h.Counts, c)
		b += rng.ExpFloat64()
		switch rng.IntN(10) {
		case 0:
			// same
		case 1:
			c -= float64(rng.IntN(3))
		case 2:
			c *= 1 + 1e-13
		default:
			c += float64(rng.IntN(20))
		}
	}
	if rng.IntN(10) > 0 {
		h.Bounds = append(h.Bounds, inf())
		h.Counts = append(h.Counts, c+float64(rng.IntN(5)))
	}
	switch rng.IntN(20) {
	case 0:
		if n > 0 {
			h.Counts[rng.IntN(n)] = math.NaN()
		}
	case 1:
		rng.Shuffle(len(h.Bounds), func(i, j int) { h.Bounds[i], h.Bounds[j] = h.Bounds[j], h.Bounds[i] })
	case 2:
		if n > 1 {
			h.Bounds[1] = h.Bounds[0]
		}
	case 3:
		for i := range h.Counts {
			h.Counts[i] = 0
		}
	}
	h.Count = h.Total()
	return h
}
