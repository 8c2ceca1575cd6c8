package store

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/snapshot"
)

// FuzzColumnsAssembleClassic checks the assembly of classic histograms from
// bucket series that come and go (scrapes lost, layouts changed): every
// sample lands in exactly one row under its own bound, rows are in time
// order, and a new HistogramSeries starts exactly when the set of buckets
// present changes.
func FuzzColumnsAssembleClassic(f *testing.F) {
	f.Add([]byte{3, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{4, 0x0f, 0x0f, 0x03, 0xff, 0x00, 0x0f})
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		nb := int(data[0]%8) + 1
		rows := data[1:]
		if len(rows) > 64 {
			rows = rows[:64]
		}
		les := []float64{0.5, 1, 2.5, 5, 10, 25, 60, math.Inf(1)}[8-nb:]
		// Buckets are handed over in an order unrelated to le.
		g := &columnHistParts{labels: labels.FromStrings("pod", "p")}
		want := map[[2]float64]float64{} // (t, le) -> value
		times := map[int64]bool{}
		sum := &Column{lset: labels.FromStrings("__name__", "x_sum", "pod", "p")}
		for b := nb - 1; b >= 0; b-- {
			r := &Column{lset: labels.FromStrings("__name__", "x_bucket", "pod", "p", "le", strconv.FormatFloat(les[b], 'g', -1, 64))}
			for i, mask := range rows {
				if mask&(1<<b) == 0 {
					continue
				}
				ts := int64(1000 * i)
				v := float64(i*10 + b)
				r.t = append(r.t, ts)
				r.v = append(r.v, v)
				want[[2]float64{float64(ts), les[b]}] = v
				times[ts] = true
			}
			g.buckets = append(g.buckets, r)
		}
		for i := range rows {
			sum.t = append(sum.t, int64(1000*i))
			sum.v = append(sum.v, float64(i))
		}
		g.sum = sum
		// The aligned fast path, where it applies, is the general one.
		// (With a _count: DeepEqual holds NaN, the value of a missing
		// _count, unequal to itself.)
		withCount := copyParts(g)
		withCount.count = &Column{lset: labels.FromStrings("__name__", "x_count", "pod", "p"), t: slices.Clone(sum.t), v: slices.Clone(sum.v)}
		rows1, rows2 := copyParts(withCount), copyParts(withCount)
		bs1, bs2 := classicBuckets(rows1), classicBuckets(rows2)
		var all []int64
		for _, b := range bs1 {
			all = unionSorted(all, b.r.t)
		}
		if fast, ok := assembleAligned(rows1, bs1, all); ok {
			slow, matched := assembleRows(rows2, bs2, all)
			require.Equal(t, slow, fast)
			require.Equal(t, 2*len(rows), matched)
		}
		a := NewColumns("fuzz", snapshot.Options{})
		out, leftovers := a.assembleClassic("x", g)
		require.Empty(t, leftovers)

		seen := 0
		var lastT int64 = math.MinInt64
		for k, hs := range out {
			require.True(t, slices.IsSorted(hs.Bounds))
			require.NotEmpty(t, hs.T)
			require.Len(t, hs.Counts, len(hs.T)*len(hs.Bounds))
			require.Len(t, hs.Sum, len(hs.T))
			require.Len(t, hs.Count, len(hs.T))
			if k > 0 {
				require.NotEqual(t, out[k-1].Bounds, hs.Bounds, "a new series only on a layout change")
			}
			for i, ts := range hs.T {
				require.Greater(t, ts, lastT)
				lastT = ts
				require.Equal(t, float64(ts/1000), hs.Sum[i])
				require.True(t, math.IsNaN(hs.Count[i]))
				for j, le := range hs.Bounds {
					v, ok := want[[2]float64{float64(ts), le}]
					require.True(t, ok, "t=%d le=%g not written", ts, le)
					require.Equal(t, v, hs.Counts[i*len(hs.Bounds)+j])
					seen++
				}
			}
		}
		require.Equal(t, len(want), seen, "every bucket sample in exactly one row")
		rowsOut := 0
		for _, hs := range out {
			rowsOut += hs.Len()
		}
		require.Equal(t, len(times), rowsOut)
	})
}

// copyParts returns a deep copy of g's columns.
func copyParts(g *columnHistParts) *columnHistParts {
	cp := func(r *Column) *Column {
		if r == nil {
			return nil
		}
		return &Column{lset: r.lset, t: slices.Clone(r.t), v: slices.Clone(r.v)}
	}
	out := &columnHistParts{labels: g.labels, sum: cp(g.sum), count: cp(g.count)}
	for _, r := range g.buckets {
		out.buckets = append(out.buckets, cp(r))
	}
	return out
}

// classicBuckets returns g's buckets in le order, as assembleClassic
// passes them on.
func classicBuckets(g *columnHistParts) []classicBucket {
	var bs []classicBucket
	for _, r := range g.buckets {
		le, _ := strconv.ParseFloat(r.lset.Get("le"), 64)
		bs = append(bs, classicBucket{le: le, r: r})
	}
	slices.SortStableFunc(bs, func(a, b classicBucket) int { return cmp.Compare(a.le, b.le) })
	return bs
}
