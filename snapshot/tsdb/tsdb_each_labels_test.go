package tsdb

import (
	"context"
	"log/slog"
	"math"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/snapshot"
)

// writeLabelsOnlyTSDB writes two blocks (and an empty head), or a block
// and a head (wal/ and chunks_head/) when head is true, of one target
// scraped every 15 s, whose series test what ReadEach may list by labels
// (snapshot.Options.LabelsOnly) and what it must decode after all:
//
//   - measured: a gauge not listed, the target's scrape times;
//   - listed_gauge, listed_hist (a classic histogram): every scrape, so
//     listed by labels;
//   - listed_layout: a histogram that gains a bucket halfway, which a full
//     read splits in two layouts;
//   - listed_offset: a gauge of another scrape, 7 s later: its times are
//     scrapes of the target that the others lack;
//   - listed_late: every scrape but the last five, 3 s late (in the
//     head's open chunk when there is a head);
//   - listed_sparse: every other scrape, fewer samples than scrapes;
//   - listed_stale: a single staleness marker, which a full read drops;
//   - listed_deleted: every scrape, with a deletion (tombstone).
func writeLabelsOnlyTSDB(t *testing.T, dir string, head bool) {
	t.Helper()
	opts := tsdb.DefaultOptions()
	db, err := tsdb.Open(dir, slog.New(slog.DiscardHandler), nil, opts, nil)
	require.NoError(t, err)
	ctx := context.Background()
	t0 := time.Date(2026, 9, 22, 10, 0, 0, 0, time.UTC)
	const n = 960 // 4 h
	ls := func(name string, kv ...string) labels.Labels {
		return labels.FromStrings(append([]string{"__name__", name, "pod", "pod-a", "job", "vllm"}, kv...)...)
	}
	at := func(i int) int64 { return t0.Add(time.Duration(i) * 15 * time.Second).UnixMilli() }
	appendAt := func(i int) {
		app := db.AppenderV2(ctx)
		add := func(l labels.Labels, ts int64, v float64) {
			_, err := app.Append(0, l, 0, ts, v, nil, nil, storage.AOptions{})
			require.NoError(t, err)
		}
		ts := at(i)
		add(ls("measured"), ts, float64(i%5))
		add(ls("listed_gauge"), ts, float64(i%3))
		for k, le := range []string{"1", "+Inf"} {
			add(ls("listed_hist_bucket", "le", le), ts, float64((k+1)*i))
		}
		add(ls("listed_hist_sum"), ts, float64(i))
		add(ls("listed_hist_count"), ts, float64(2*i))
		les := []string{"1", "+Inf"}
		if i >= n/2 {
			les = []string{"1", "2", "+Inf"}
		}
		for k, le := range les {
			add(ls("listed_layout_bucket", "le", le), ts, float64((k+1)*i))
		}
		add(ls("listed_layout_count"), ts, float64(3*i))
		add(ls("listed_offset"), ts+7000, 1)
		if i%2 == 0 {
			add(ls("listed_sparse"), ts, 2)
		}
		add(ls("listed_deleted"), ts, 3)
		if i < n-5 {
			add(ls("listed_late"), ts, 4)
		} else {
			add(ls("listed_late"), ts+3000, 4)
		}
		if i == n/2+1 {
			add(ls("listed_stale"), ts, math.Float64frombits(value.StaleNaN))
		}
		require.NoError(t, app.Commit())
	}
	for i := range n / 2 {
		appendAt(i)
	}
	hd := db.Head()
	require.NoError(t, db.CompactHead(tsdb.NewRangeHead(hd, hd.MinTime(), hd.MaxTime())))
	for i := n / 2; i < n; i++ {
		appendAt(i)
	}
	if !head {
		hd = db.Head()
		require.NoError(t, db.CompactHead(tsdb.NewRangeHead(hd, hd.MinTime(), hd.MaxTime())))
	}
	require.NoError(t, db.Delete(ctx, at(100), at(110), labels.MustNewMatcher(labels.MatchEqual, model.MetricNameLabel, "listed_deleted")))
	require.NoError(t, db.Close())
	if head {
		require.Len(t, tsdbBlockDirs(t, dir), 1)
	} else {
		require.Len(t, tsdbBlockDirs(t, dir), 2)
	}
}

// TestReadEachLabelsOnly reads a TSDB with snapshot.Options.LabelsOnly
// and in full: the targets' scrapes and every family not listed by
// labels are the full read's, and a family listed by labels is the full
// read's without samples (Family.WithoutSamples), where the index shows
// that leaving its samples out changes nothing else; where it does not
// (another scrape's times, a bucket added, a gap, a deletion, a lone
// staleness marker), the series is decoded as in the full read. The
// same holds with a head, whose open chunk the index gives no end.
func TestReadEachLabelsOnly(t *testing.T) {
	for _, head := range []bool{false, true} {
		t.Run(map[bool]string{false: "blocks", true: "head"}[head], func(t *testing.T) {
			testReadEachLabelsOnly(t, head)
		})
	}
}

func testReadEachLabelsOnly(t *testing.T, head bool) {
	dir := filepath.Join(t.TempDir(), "data")
	writeLabelsOnlyTSDB(t, dir, head)
	listed := []string{"listed_gauge", "listed_hist", "listed_layout", "listed_offset", "listed_sparse", "listed_stale", "listed_deleted", "listed_late"}
	byLabels := map[string]bool{"listed_gauge": true, "listed_hist": true}

	read := func(opts snapshot.Options) []*snapshot.Target {
		var got []*snapshot.Target
		// As users read: through snapshot.ReadEach (the time checks, the
		// Builder).
		_, err := snapshot.ReadEach(context.Background(), []string{dir}, opts, func(tg *snapshot.Target) error {
			got = append(got, tg)
			return nil
		})
		require.NoError(t, err)
		return got
	}
	full := read(snapshot.Options{})
	got := read(snapshot.Options{LabelsOnly: listed})
	require.Len(t, full, 1)
	require.Len(t, got, 1)
	want, tg := full[0], got[0]
	deNaN(want, tg)
	require.Equal(t, want.Scrapes, tg.Scrapes)
	require.Len(t, want.Scrapes, 960*2+5, "the target's scrapes, listed_offset's and listed_late's")
	require.ElementsMatch(t, keys(want.Families), keys(tg.Families))
	assert.NotContains(t, keys(want.Families), "listed_stale", "a full read drops a lone staleness marker")
	require.Len(t, want.Families["listed_layout"].Histograms, 2, "a full read splits the layouts")
	for name, wf := range want.Families {
		gf := tg.Families[name]
		if byLabels[name] {
			assert.Equal(t, wf.WithoutSamples(), gf.WithoutSamples(), "%s: listed by labels", name)
			for _, s := range gf.Series {
				assert.Empty(t, s.T, "%s: listed by labels", name)
				assert.Empty(t, s.V, "%s: listed by labels", name)
			}
			for _, h := range gf.Histograms {
				assert.Zero(t, h.Len(), "%s: listed by labels", name)
			}
			continue
		}
		assert.Equal(t, wf, gf, "%s: decoded", name)
	}

	// Listed by labels, a family's series hold no samples.
	h := tg.Families["listed_hist"]
	require.Len(t, h.Histograms, 1)
	assert.Equal(t, []float64{1, math.Inf(1)}, h.Histograms[0].Bounds)
	assert.Zero(t, h.Histograms[0].Len())
	require.Len(t, tg.Families["listed_gauge"].Series, 1)
	assert.Empty(t, tg.Families["listed_gauge"].Series[0].T)

	// Listed target by target (Options.ForTarget), alone or beside
	// LabelsOnly, the same metrics give the same target; ForTarget sees a
	// sketch of the target's families, once per target.
	all := append([]string{"measured"}, listed...)
	for _, split := range []int{0, 4} {
		var (
			mu       sync.Mutex
			sketches []*snapshot.Target
		)
		byTarget := read(snapshot.Options{LabelsOnly: listed[:split],
			ForTarget: func(sk *snapshot.Target) snapshot.TargetSelection {
				mu.Lock()
				defer mu.Unlock()
				sketches = append(sketches, sk)
				return snapshot.TargetSelection{LabelsOnly: listed[split:]}
			}})
		require.Len(t, byTarget, 1)
		deNaN(byTarget[0])
		assert.Equal(t, tg, byTarget[0], "LabelsOnly %v, the rest by ForTarget", listed[:split])
		require.Len(t, sketches, 1)
		sk := sketches[0]
		assert.Equal(t, "pod-a", sk.Name)
		assert.ElementsMatch(t, all, keys(sk.Families))
		assert.Equal(t, "histogram", string(sk.Family("listed_hist").Type))
		assert.Zero(t, sk.Family("listed_hist").Histograms[0].Len())
	}

	// Skipped target by target, a family is not read at all, whether
	// LabelsOnly lists it or not; the rest is as read without it.
	skip := []string{"listed_gauge", "listed_hist", "measured"}
	skipped := read(snapshot.Options{LabelsOnly: listed[:1],
		ForTarget: func(*snapshot.Target) snapshot.TargetSelection {
			return snapshot.TargetSelection{Skip: skip, LabelsOnly: listed[1:2]}
		}})
	require.Len(t, skipped, 1)
	deNaN(skipped[0])
	for name, gf := range skipped[0].Families {
		assert.NotContains(t, skip, name)
		assert.Equal(t, want.Families[name], gf, "%s: decoded", name)
	}
	assert.ElementsMatch(t, slices.DeleteFunc(keys(want.Families), func(n string) bool { return slices.Contains(skip, n) }), keys(skipped[0].Families))

	// Read (not ReadEach) reads every sample.
	ev, err := snapshot.Read(context.Background(), []string{dir}, snapshot.Options{LabelsOnly: listed})
	require.NoError(t, err)
	require.Len(t, ev.Targets, 1)
	deNaN(ev.Targets...)
	assert.Equal(t, want, ev.Targets[0])

	// Decoded chunk by chunk as through a querier (a lone staleness
	// marker, a deletion, late samples), listed or not.
	requireDirectAsQuerier(t, dir, snapshot.Options{})
	requireDirectAsQuerier(t, dir, snapshot.Options{LabelsOnly: listed})
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
