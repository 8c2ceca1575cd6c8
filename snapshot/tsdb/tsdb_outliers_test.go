package tsdb

import (
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/whyslow/whyslow/snapshot"
)

// redateBlock copies block good of the TSDB in src to a block named name
// in dir, with its meta.json's minTime and maxTime moved to begin at
// from (its chunks are left as they are, as a copy edited by hand
// leaves them), and returns the new block's directory.
func redateBlock(t *testing.T, src, good, dir, name string, from time.Time) string {
	t.Helper()
	bdir := filepath.Join(dir, name)
	require.NoError(t, copyTree(filepath.Join(src, good), bdir))
	fn := filepath.Join(bdir, tsdbMetaFile)
	b, err := os.ReadFile(fn)
	require.NoError(t, err)
	var meta map[string]any
	require.NoError(t, json.Unmarshal(b, &meta))
	span := int64(meta["maxTime"].(float64) - meta["minTime"].(float64))
	meta["minTime"], meta["maxTime"] = from.UnixMilli(), from.UnixMilli()+span
	b, err = json.Marshal(meta)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(fn, b, 0o644))
	return bdir
}

// writeGaugeBlock writes a block of pod-a's gauge, n samples every 30 s
// from t0, into dir.
func writeGaugeBlock(t *testing.T, dir string, t0 time.Time, n int) {
	t.Helper()
	ctx := context.Background()
	w, err := tsdb.NewBlockWriter(slog.New(slog.DiscardHandler), dir, (4 * time.Hour).Milliseconds())
	require.NoError(t, err)
	app := w.AppenderV2(ctx)
	for i := range n {
		_, err := app.Append(0, tsdbLabels("pod-a", "vllm:num_requests_waiting"), 0, t0.Add(time.Duration(i)*30*time.Second).UnixMilli(), 1, nil, nil, storage.AOptions{})
		require.NoError(t, err)
	}
	require.NoError(t, app.Commit())
	_, err = w.Flush(ctx)
	require.NoError(t, err)
	require.NoError(t, w.Close())
}

// TestReadTSDBBlockTimeOutliers puts a block far from the fixture's
// (blocks and head, 2026-09-22 10:00 to 13:00): it is set apart, named
// with its time range, and the rest, the head included, is read as
// without it; Options.KeepTimeOutliers keeps it.
func TestReadTSDBBlockTimeOutliers(t *testing.T) {
	base := writeTSDBFixture(t, filepath.Join(t.TempDir(), "data"))
	good := tsdbBlockDirs(t, base.dir)[0]
	y2099 := time.Date(2099, 9, 22, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		// add adds the outlier to the fixture's copy in dir, and returns
		// its directory.
		add  func(t *testing.T, dir string) string
		want []string // in the problem
		// kept: the samples of pod-a's gauge with the outlier kept.
		kept int
	}{
		{
			// The issue's: a copy of the block, its meta.json re-dated.
			// Half the samples are then in 2099: only the block's ULID,
			// the time it was written, tells which half is wrong.
			name: "copy re-dated to 2099",
			add: func(t *testing.T, dir string) string {
				return redateBlock(t, base.dir, good, dir, "01M8KZHE6580JP2RMGCQKZFXCD", y2099)
			},
			want: []string{"block 01M8KZHE6580JP2RMGCQKZFXCD", "2099-09-22T10:00:00Z to 2099-09-22T11:59:30Z", "after it was written", "left out"},
			// The copy's chunks hold the 2026 samples again; the head is
			// not read past the 2099 block's end.
			kept: base.nBlock,
		},
		{
			name: "block written with 2099 samples",
			add: func(t *testing.T, dir string) string {
				writeGaugeBlock(t, dir, y2099, 240)
				return filepath.Join(dir, newBlockDir(t, dir, good))
			},
			want: []string{"2099-09-22T10:00:00Z to 2099-09-22T11:59:30Z", "after it was written"},
			kept: base.nBlock + 240,
		},
		{
			name: "a few samples of 2001",
			add: func(t *testing.T, dir string) string {
				writeGaugeBlock(t, dir, time.Date(2001, 1, 2, 3, 4, 0, 0, time.UTC), 4)
				return filepath.Join(dir, newBlockDir(t, dir, good))
			},
			want: []string{"2001-01-02T03:04:00Z to 2001-01-02T03:05:30Z", "before the rest of the evidence (2026-09-22T10:", "left out"},
			kept: base.n + 4,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := copyTSDBFixture(t, base)
			bad := tc.add(t, f.dir)
			before := treeHash(t, f.dir)

			ev, err := Read(context.Background(), f.dir, snapshot.Options{})
			require.NoError(t, err)
			out := ev.ProblemsOf(snapshot.ErrTimeOutlier)
			require.Len(t, out, 1, "%v", ev.Problems)
			assert.Equal(t, bad, out[0].File)
			assert.Equal(t, snapshot.SeverityWarning, out[0].Severity)
			for _, w := range tc.want {
				assert.Contains(t, out[0].Error(), w)
			}
			checkTSDBFixture(t, f, ev, 0, f.n)
			first, last := ev.Span()
			assert.Equal(t, f.ts(0), first.UnixMilli())
			assert.Equal(t, f.ts(f.n-1), last.UnixMilli())

			// ReadEach: the same, and its span is the fixture's.
			var lo, hi int64
			each := requireEachAsRead(t, []string{f.dir}, snapshot.Options{})
			assert.Len(t, each.ProblemsOf(snapshot.ErrTimeOutlier), 1)
			_, err = ReadEach(context.Background(), f.dir, snapshot.Options{},
				func(minT, maxT int64) error { lo, hi = minT, maxT; return nil }, func(*snapshot.Target) error { return nil })
			require.NoError(t, err)
			assert.Equal(t, f.ts(0), lo)
			assert.Equal(t, f.ts(f.n), hi, "the stale marker after the last scrape")

			ev, err = Read(context.Background(), f.dir, snapshot.Options{KeepTimeOutliers: true})
			require.NoError(t, err)
			out = ev.ProblemsOf(snapshot.ErrTimeOutlier)
			require.NotEmpty(t, out)
			assert.Equal(t, bad, out[0].File)
			assert.Contains(t, out[0].Error(), "kept (Options.KeepTimeOutliers)")
			n := 0
			for _, s := range ev.Target("pod-a").Family("vllm:num_requests_waiting").Series {
				n += s.Len()
			}
			assert.Equal(t, tc.kept, n)
			requireTreeUnchanged(t, before, treeHash(t, f.dir))
		})
	}
	t.Run("outlier outside the range read", func(t *testing.T) {
		f := copyTSDBFixture(t, base)
		redateBlock(t, base.dir, good, f.dir, "01M8KZHE6580JP2RMGCQKZFXCD", y2099)
		ev, err := Read(context.Background(), f.dir, snapshot.Options{End: base.t0.Add(24 * time.Hour)})
		require.NoError(t, err)
		assert.Empty(t, ev.ProblemsOf(snapshot.ErrTimeOutlier))
		checkTSDBFixture(t, f, ev, 0, f.n)
	})
}

// newBlockDir returns the block directory of dir that is neither the
// fixture's block good nor another known.
func newBlockDir(t *testing.T, dir, good string) string {
	t.Helper()
	for _, b := range tsdbBlockDirs(t, dir) {
		if b != good {
			return b
		}
	}
	t.Fatal("no new block")
	return ""
}

// TestReadTSDBHeadTimeOutlier writes a block of two hours and a head of
// four scrapes ten years later: the head is set apart, named by wal/.
func TestReadTSDBHeadTimeOutlier(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	t0 := time.Date(2016, 9, 22, 10, 0, 0, 0, time.UTC)
	db, err := tsdb.Open(dir, slog.New(slog.DiscardHandler), nil, tsdb.DefaultOptions(), nil)
	require.NoError(t, err)
	ctx := context.Background()
	appendAt := func(ts time.Time) {
		app := db.AppenderV2(ctx)
		for _, pod := range []string{"pod-a", "pod-b"} {
			_, err := app.Append(0, tsdbLabels(pod, "vllm:num_requests_waiting"), 0, ts.UnixMilli(), 1, nil, nil, storage.AOptions{})
			require.NoError(t, err)
		}
		require.NoError(t, app.Commit())
	}
	for i := range 240 {
		appendAt(t0.Add(time.Duration(i) * 30 * time.Second))
	}
	hd := db.Head()
	require.NoError(t, db.CompactHead(tsdb.NewRangeHead(hd, hd.MinTime(), hd.MaxTime())))
	later := t0.AddDate(10, 0, 0)
	for i := range 4 {
		appendAt(later.Add(time.Duration(i) * 30 * time.Second))
	}
	require.NoError(t, db.Close())

	for _, keep := range []bool{false, true} {
		ev, err := Read(ctx, dir, snapshot.Options{KeepTimeOutliers: keep})
		require.NoError(t, err)
		out := ev.ProblemsOf(snapshot.ErrTimeOutlier)
		require.Len(t, out, 1, "%v", ev.Problems)
		assert.Equal(t, filepath.Join(dir, tsdbWALDir), out[0].File)
		assert.Contains(t, out[0].Error(), "the head (wal/, 2026-09-22T10:00:00Z to 2026-09-22T10:01:30Z) lies")
		_, last := ev.Span()
		scrapes := 240
		if keep {
			scrapes += 4
			assert.Contains(t, out[0].Error(), "kept")
		} else {
			assert.Equal(t, t0.Add(239*30*time.Second), last.UTC())
		}
		assert.Len(t, ev.Target("pod-a").Scrapes, scrapes)
		requireEachAsRead(t, []string{dir}, snapshot.Options{KeepTimeOutliers: keep})
	}
}

func TestTimeBulk(t *testing.T) {
	for _, tc := range []struct {
		name string
		srcs []timeSource
		ok   bool
		out  []bool
	}{
		{name: "too few samples", srcs: []timeSource{{0, 10, 2}}},
		{name: "one block", srcs: []timeSource{{0, 7200_000, 240}}, ok: true, out: []bool{false}},
		{name: "contiguous blocks", srcs: []timeSource{{0, 7200_000, 240}, {7200_000, 14400_000, 240}, {14400_000, 16000_000, 50}}, ok: true, out: []bool{false, false, false}},
		{name: "a small block far ahead", srcs: []timeSource{{0, 7200_000, 240}, {7200_000, 14400_000, 240}, {1e12, 1e12 + 60_000, 4}}, ok: true, out: []bool{false, false, true}},
		{name: "halves apart", srcs: []timeSource{{0, 7200_000, 240}, {4e12, 4e12 + 7200_000, 240}}, ok: true, out: []bool{false, false}},
		{name: "ends of int64", srcs: []timeSource{{math.MinInt64 + 1, 0, 240}, {0, math.MaxInt64, 240}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lo, hi, low, high, ok := timeBulk(tc.srcs)
			require.Equal(t, tc.ok, ok)
			if !ok {
				return
			}
			assert.LessOrEqual(t, low, lo)
			assert.LessOrEqual(t, lo, hi)
			assert.LessOrEqual(t, hi, high)
			for i, s := range tc.srcs {
				_, side := s.outside(lo, hi, low, high)
				assert.Equal(t, tc.out[i], side != "", "source %d", i)
			}
		})
	}
}
