package snapshot_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/histogram"
	"github.com/whyslow/whyslow/snapshot"
)

// TestMergeInto folds random increases one at a time with MergeInto and
// with MergeHistogramIncreases of the running result and the next, and
// requires the same result to the bit at every step: same layouts (the
// in-place path), layouts that change (a bucket added, dropped), layouts
// that share too little, invalid ones, NaN sums and counts, and the
// other fields (windows, counts of series, warnings).
func TestMergeInto(t *testing.T) {
	inf := math.Inf(1)
	layouts := [][]float64{
		{0.1, 0.5, 1, inf},
		{0.1, 0.5, 1, inf},
		{0.1, 0.25, 0.5, 1, inf},
		{5, inf},      // shares only +Inf with the others
		{0.1, 0.5, 1}, // no +Inf: invalid
		{inf},         // no finite bound: Merge fails even with itself
	}
	w0 := snapshot.Window{Start: time.Unix(0, 0), End: time.Unix(60, 0)}
	w1 := snapshot.Window{Start: time.Unix(60, 0), End: time.Unix(120, 0)}
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 7))
		inc := func() snapshot.HistogramIncrease {
			l := layouts[0]
			if rng.IntN(4) == 0 {
				l = layouts[rng.IntN(len(layouts))]
			}
			if seed%5 == 0 && rng.IntN(2) == 0 {
				l = layouts[len(layouts)-1] // runs of [+Inf] alone
			}
			h := histogram.Histogram{Bounds: append([]float64(nil), l...), Counts: make([]float64, len(l))}
			c := 0.0
			for k := range h.Counts {
				c += float64(rng.IntN(50)) + rng.Float64()
				h.Counts[k] = c
			}
			h.Count, h.Sum = c, rng.NormFloat64()*100
			switch rng.IntN(8) {
			case 0:
				h.Sum = math.NaN()
			case 1:
				h.Count = math.NaN()
			case 2:
				h.Sum = math.Copysign(0, -1) // -0: the sum starts from +0
			}
			w := w0
			if rng.IntN(3) == 0 {
				w = w1
			}
			out := snapshot.HistogramIncrease{Window: w, From: w.Start.Add(time.Duration(rng.IntN(30)) * time.Second),
				To: w.End.Add(-time.Duration(rng.IntN(30)) * time.Second), Histogram: h, N: rng.IntN(9), Series: 1 + rng.IntN(3),
				Resets: rng.IntN(2), LowerBound: rng.IntN(5) == 0, StartClipped: rng.IntN(5) == 0}
			if rng.IntN(6) == 0 {
				out.Warnings = []error{errors.New("w")}
			}
			return out
		}
		first := inc()
		want, err := snapshot.MergeHistogramIncreases(first)
		require.NoError(t, err)
		got, err := snapshot.MergeHistogramIncreases(first)
		require.NoError(t, err)
		for step := range 12 {
			next := inc()
			w, werr := snapshot.MergeHistogramIncreases(want, next)
			gerr := snapshot.MergeInto(&got, next)
			require.Equal(t, werr == nil, gerr == nil, "seed %d step %d: %v / %v", seed, step, werr, gerr)
			if werr != nil {
				require.Equal(t, werr.Error(), gerr.Error())
				continue // both unchanged
			}
			want = w
			require.Equal(t, bitsOf(want), bitsOf(got), "seed %d step %d", seed, step)
		}
	}
}

// bitsOf describes an increase with its floats as bits (NaN equal to
// itself, -0 apart from 0).
func bitsOf(inc snapshot.HistogramIncrease) string {
	h := inc.Histogram
	inc.Histogram = histogram.Histogram{}
	bits := func(v []float64) []uint64 {
		out := make([]uint64, len(v))
		for i, x := range v {
			out[i] = math.Float64bits(x)
		}
		return out
	}
	return fmt.Sprintf("%+v %v %v %x %x", inc, bits(h.Bounds), bits(h.Counts), math.Float64bits(h.Count), math.Float64bits(h.Sum))
}
