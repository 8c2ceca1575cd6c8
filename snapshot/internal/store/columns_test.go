package store

import (
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/snapshot"
)

// TestColumnAppendFloatsShares checks when a column shares the times of
// the one appended before it, and that neither sees the other's later
// samples.
func TestColumnAppendFloatsShares(t *testing.T) {
	same := func(a, b []int64) bool { return len(a) > 0 && len(b) > 0 && &a[0] == &b[0] }
	cols := NewColumns("src", snapshot.Options{})
	col := func(le string) *Column {
		return cols.Series("src", labels.FromStrings("__name__", "x_bucket", "pod", "p", "le", le))
	}
	a, b, c, d := col("1"), col("2"), col("3"), col("+Inf")

	// One source: b and c share a's times, d (other times) does not.
	a.AppendFloats([]int64{10, 20, 30}, []float64{1, 2, 3}, nil, 5)
	charged := cols.bytes
	b.AppendFloats([]int64{10, 20, 30}, []float64{4, 5, 6}, a, 5)
	assert.Equal(t, int64(3*snapshot.FloatSampleBytes), cols.bytes-charged, "shared samples are charged in full")
	c.AppendFloats([]int64{10, 20, 30}, []float64{7, 8, 9}, b, 5)
	d.AppendFloats([]int64{10, 25, 30}, []float64{1, 1, 1}, c, 5)
	assert.True(t, same(a.t, b.t) && same(a.t, c.t), "b and c share a's times")
	assert.False(t, same(a.t, d.t), "d's times differ")
	assert.Equal(t, []float64{4, 5, 6}, b.v, "values are never shared")
	assert.Equal(t, 3, cap(b.t), "a shared view is capped at its length")

	// The next source: a appends in place, b and c follow it and share
	// again; d, given a's times now, does not (its earlier ones differ).
	a.AppendFloats([]int64{40}, []float64{4}, nil, 1)
	b.AppendFloats([]int64{40}, []float64{7}, a, 1)
	c.AppendFloats([]int64{41}, []float64{10}, b, 1)
	d.AppendFloats([]int64{40}, []float64{1}, a, 1)
	assert.Equal(t, []int64{10, 20, 30, 40}, a.t)
	assert.True(t, same(a.t, b.t), "b follows a into the next source")
	assert.Equal(t, []int64{10, 20, 30, 41}, c.t, "c, given other times, copies its own")
	assert.False(t, same(a.t, c.t))
	assert.Equal(t, []int64{10, 25, 30, 40}, d.t)

	// A later sample of a, in place, is not seen through b's view, and
	// one of b copies b's times first.
	a.AppendFloats([]int64{50}, []float64{5}, nil, 1)
	assert.Equal(t, []int64{10, 20, 30, 40}, b.t)
	b.AppendFloats([]int64{60}, []float64{8}, nil, 1)
	assert.Equal(t, []int64{10, 20, 30, 40, 50}, a.t)
	assert.Equal(t, []int64{10, 20, 30, 40, 60}, b.t)
	assert.False(t, a.unordered || b.unordered || c.unordered || d.unordered)
}

// TestColumnAppendFloatsUnordered checks that times out of order are
// flagged (as Append flags them) and never shared.
func TestColumnAppendFloatsUnordered(t *testing.T) {
	cols := NewColumns("src", snapshot.Options{})
	a := cols.Series("src", labels.FromStrings("__name__", "x", "pod", "a"))
	b := cols.Series("src", labels.FromStrings("__name__", "x", "pod", "b"))
	a.AppendFloats([]int64{10, 20}, []float64{1, 2}, nil, 2)
	a.AppendFloats([]int64{15, 30}, []float64{3, 4}, nil, 2) // overlapping blocks
	require.True(t, a.unordered)
	b.AppendFloats([]int64{15, 30}, []float64{3, 4}, a, 2)
	assert.False(t, b.unordered)
	assert.NotSame(t, &a.t[0], &b.t[0], "times of an unordered column are not shared")

	c := cols.Series("src", labels.FromStrings("__name__", "x", "pod", "c"))
	c.AppendFloats([]int64{10, 10}, []float64{1, 2}, nil, 2)
	assert.True(t, c.unordered, "a repeated time is out of order")
	c.AppendFloats(nil, nil, b, 4) // nothing to add
	assert.Equal(t, []int64{10, 10}, c.t)
}

// TestColumnsNameFromRanked checks that a target named by several labels
// (a pod label on some series, instance on others) says the most specific
// one, whatever the order the series are held in, as the Builder does.
func TestColumnsNameFromRanked(t *testing.T) {
	for range 20 {
		cols := NewColumns("src", snapshot.Options{})
		for i, ls := range []labels.Labels{
			labels.FromStrings("__name__", "a", "instance", "p"),
			labels.FromStrings("__name__", "b", "pod", "p"),
			labels.FromStrings("__name__", "c", "instance", "p"),
			labels.FromStrings("__name__", "d", "instance", "q"),
		} {
			cols.Series("src", ls).AppendFloats([]int64{10}, []float64{float64(i)}, nil, 1)
		}
		ev := cols.Evidence()
		require.Len(t, ev.Targets, 2)
		assert.Equal(t, "pod", ev.Target("p").NameFrom)
		assert.Equal(t, "instance", ev.Target("q").NameFrom)
	}
}
