package tsdb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/internal/heappeak"
	"github.com/whyslow/whyslow/snapshot"
)

// problemStrings returns the problems as text, for comparing sets of
// problems whose errors are not comparable values.
func problemStrings(ps []snapshot.Problem) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}

// nanSentinel stands for NaN in targets compared with testify (NaN is
// not equal to itself).
const nanSentinel = -math.MaxFloat64

// deNaN replaces every NaN of the targets' samples with nanSentinel, so
// that equal targets compare equal.
func deNaN(ts ...*snapshot.Target) {
	fix := func(v []float64) {
		for i := range v {
			if math.IsNaN(v[i]) {
				v[i] = nanSentinel
			}
		}
	}
	for _, t := range ts {
		for _, f := range t.Families {
			for _, s := range f.Series {
				fix(s.V)
			}
			for _, h := range f.Histograms {
				fix(h.Counts)
				fix(h.Sum)
				fix(h.Count)
			}
		}
	}
}

// readEachAll runs snapshot.ReadEach keeping every target visited.
func readEachAll(paths []string, opts snapshot.Options) ([]*snapshot.Target, *snapshot.Evidence, error) {
	var got []*snapshot.Target
	ev, err := snapshot.ReadEach(context.Background(), paths, opts, func(t *snapshot.Target) error {
		got = append(got, t)
		return nil
	})
	return got, ev, err
}

// requireEachAsRead checks that snapshot.ReadEach visits the targets of
// snapshot.Read, equal and in order, and returns the same sources,
// problems (as a set) and error; and that the source's own ReadEach
// visits the targets of its Read. It returns Read's Evidence.
func requireEachAsRead(t *testing.T, paths []string, opts snapshot.Options) *snapshot.Evidence {
	t.Helper()
	want, werr := snapshot.Read(context.Background(), paths, opts)
	got, ev, err := readEachAll(paths, opts)
	if werr != nil {
		require.Error(t, err, "Read failed with %v", werr)
	} else {
		require.NoError(t, err)
	}
	if want == nil {
		assert.Nil(t, ev)
		return nil
	}
	require.NotNil(t, ev)
	require.NotEmpty(t, want.Targets)
	require.Equal(t, len(want.Targets), len(got), "targets visited")
	deNaN(want.Targets...)
	deNaN(got...)
	for i := range want.Targets {
		require.Equal(t, want.Targets[i], got[i], "target %d (%s)", i, want.Targets[i].Name)
	}
	assert.Nil(t, ev.Targets)
	assert.Equal(t, want.Sources, ev.Sources)
	assert.ElementsMatch(t, problemStrings(want.Problems), problemStrings(ev.Problems))

	if len(paths) == 1 && snapshot.IsTSDB(paths[0]) {
		// The source alone: tsdb.ReadEach against tsdb.Read.
		swant, serr := Read(context.Background(), paths[0], opts)
		var sgot []*snapshot.Target
		spans := 0
		sev, err := ReadEach(context.Background(), paths[0], opts, func(minT, maxT int64) error {
			spans++
			if minT <= maxT {
				for _, tg := range swant.Targets {
					for _, sc := range tg.Scrapes {
						ms := sc.Time.UnixMilli()
						require.True(t, ms >= minT && ms <= maxT, "scrape %v of %s outside the span", sc.Time, tg.Name)
					}
				}
			}
			return nil
		}, func(t *snapshot.Target) error {
			sgot = append(sgot, t)
			return nil
		})
		require.Equal(t, serr == nil, err == nil, "%v / %v", serr, err)
		if swant != nil {
			deNaN(swant.Targets...)
			deNaN(sgot...)
			assert.Equal(t, 1, spans)
			require.Equal(t, swant.Targets, sgot)
			assert.Equal(t, swant.Sources, sev.Sources)
			assert.ElementsMatch(t, problemStrings(swant.Problems), problemStrings(sev.Problems))
		}
	}
	return want
}

// requireDirectAsQuerier checks that Read and ReadEach of dir give the
// same evidence, problems in the same order, when blocks are decoded chunk
// by chunk from their files (directDecode and readFiles, the default) as
// when every series is read through a querier and the block's own
// readers, the path it stands for.
func requireDirectAsQuerier(t *testing.T, dir string, opts snapshot.Options) {
	t.Helper()
	defer func(d, f bool) { directDecode, readFiles = d, f }(directDecode, readFiles)
	read := func(direct bool) (*snapshot.Evidence, []*snapshot.Target, *snapshot.Evidence, error, error) {
		directDecode, readFiles = direct, direct
		ev, err := Read(context.Background(), dir, opts)
		var each []*snapshot.Target
		eev, eerr := ReadEach(context.Background(), dir, opts, func(int64, int64) error { return nil }, func(t *snapshot.Target) error {
			each = append(each, t)
			return nil
		})
		if ev != nil {
			deNaN(ev.Targets...)
		}
		deNaN(each...)
		return ev, each, eev, err, eerr
	}
	want, wantEach, wantEv, werr, weerr := read(false)
	got, gotEach, gotEv, err, eerr := read(true)
	require.Equal(t, fmt.Sprint(werr), fmt.Sprint(err))
	require.Equal(t, fmt.Sprint(weerr), fmt.Sprint(eerr))
	if want != nil {
		require.Equal(t, want.Targets, got.Targets)
		assert.Equal(t, want.Sources, got.Sources)
		assert.Equal(t, problemStrings(want.Problems), problemStrings(got.Problems))
	}
	require.Equal(t, wantEach, gotEach)
	if wantEv != nil {
		assert.Equal(t, problemStrings(wantEv.Problems), problemStrings(gotEv.Problems))
	}
}

// writeNamingTSDB writes two overlapping blocks of series named every way
// a target can be: exported_pod (over the pod of the exporter), pod,
// instance, job, none (the directory's name), and one target named both
// by exported_pod and by pod. The second block repeats the first's series
// over a later, overlapping range with other values: where both hold a
// sample, the first block's is kept.
func writeNamingTSDB(t *testing.T, dir string, t0 time.Time) {
	t.Helper()
	ctx := context.Background()
	series := []labels.Labels{
		labels.FromStrings("__name__", "DCGM_FI_DEV_GPU_UTIL", "exported_pod", "gpu-x", "pod", "dcgm-1", "job", "dcgm", "instance", "10.0.1.1:9400"),
		labels.FromStrings("__name__", "vllm:num_requests_waiting", "pod", "gpu-x", "job", "vllm", "instance", "10.0.0.9:8000"),
		labels.FromStrings("__name__", "vllm:num_requests_waiting", "pod", "pod-a", "job", "vllm", "instance", "10.0.0.1:8000"),
		labels.FromStrings("__name__", "vllm:request_success_total", "pod", "pod-a", "job", "vllm", "instance", "10.0.0.1:8000"),
		labels.FromStrings("__name__", "vllm:e2e_request_latency_seconds_bucket", "pod", "pod-a", "le", "1"),
		labels.FromStrings("__name__", "vllm:e2e_request_latency_seconds_bucket", "pod", "pod-a", "le", "+Inf"),
		labels.FromStrings("__name__", "vllm:e2e_request_latency_seconds_sum", "pod", "pod-a"),
		labels.FromStrings("__name__", "vllm:e2e_request_latency_seconds_count", "pod", "pod-a"),
		labels.FromStrings("__name__", "vllm:num_requests_waiting", "instance", "10.0.0.2:8000", "job", "vllm"),
		labels.FromStrings("__name__", "vllm:num_requests_waiting", "job", "batch"),
		labels.FromStrings("__name__", "vllm:num_requests_waiting", "zone", "a"),
	}
	for blk, rng := range [][2]int{{0, 120}, {60, 180}} {
		w, err := tsdb.NewBlockWriter(slog.New(slog.DiscardHandler), dir, (4 * time.Hour).Milliseconds())
		require.NoError(t, err)
		refs := make([]storage.SeriesRef, len(series))
		for i := rng[0]; i < rng[1]; i++ {
			app := w.AppenderV2(ctx)
			ts := t0.Add(time.Duration(i) * 30 * time.Second).UnixMilli()
			for k, ls := range series {
				v := float64(i*(k+1) + 1000*blk)
				if ls.Get("le") == "+Inf" || ls.Get(model.MetricNameLabel) == "vllm:e2e_request_latency_seconds_count" {
					v *= 2
				}
				refs[k], err = app.Append(refs[k], ls, 0, ts, v, nil, nil, storage.AOptions{})
				require.NoError(t, err)
			}
			require.NoError(t, app.Commit())
		}
		_, err = w.Flush(ctx)
		require.NoError(t, err)
		require.NoError(t, w.Close())
	}
}

// writeOutlierTSDB writes pod-a and pod-b over 3 h, and pod-c over the
// same 3 h and for a few scrapes two days later: outliers of a span wider
// than the margin of the check, which the streamed read must find as
// Read does, before visiting any target.
func writeOutlierTSDB(t *testing.T, dir string, t0 time.Time) {
	t.Helper()
	ctx := context.Background()
	for _, part := range []struct {
		from time.Time
		n    int
		pods []string
	}{
		{t0, 360, []string{"pod-a", "pod-b", "pod-c"}},
		{t0.Add(48 * time.Hour), 4, []string{"pod-c"}},
	} {
		w, err := tsdb.NewBlockWriter(slog.New(slog.DiscardHandler), dir, (4 * time.Hour).Milliseconds())
		require.NoError(t, err)
		for i := range part.n {
			app := w.AppenderV2(ctx)
			ts := part.from.Add(time.Duration(i) * 30 * time.Second).UnixMilli()
			for _, pod := range part.pods {
				_, err := app.Append(0, tsdbLabels(pod, "vllm:num_requests_waiting"), 0, ts, float64(i%5), nil, nil, storage.AOptions{})
				require.NoError(t, err)
				_, err = app.Append(0, tsdbLabels(pod, "vllm:request_success_total"), 0, ts, float64(i), nil, nil, storage.AOptions{})
				require.NoError(t, err)
			}
			require.NoError(t, app.Commit())
		}
		_, err = w.Flush(ctx)
		require.NoError(t, err)
		require.NoError(t, w.Close())
	}
}

func TestReadEachTSDBAsRead(t *testing.T) {
	f := writeTSDBFixture(t, filepath.Join(t.TempDir(), "data"))
	at := func(i int) time.Time { return time.UnixMilli(f.ts(i)) }
	t0 := time.Date(2026, 9, 22, 10, 0, 0, 0, time.UTC)
	naming := filepath.Join(t.TempDir(), "naming")
	writeNamingTSDB(t, naming, t0)
	outliers := filepath.Join(t.TempDir(), "outliers")
	writeOutlierTSDB(t, outliers, t0)

	torn := copyTSDBFixture(t, f)
	tearWAL(t, torn.dir, 400)
	headOnly := copyTSDBFixture(t, f)
	require.NoError(t, os.RemoveAll(filepath.Join(headOnly.dir, tsdbBlockDirs(t, headOnly.dir)[0])))
	// Deleted samples of pod-a, in the block and in the head: tombstones.
	deleted := copyTSDBFixture(t, f)
	{
		db, err := tsdb.Open(deleted.dir, slog.New(slog.DiscardHandler), nil, tsdb.DefaultOptions(), nil)
		require.NoError(t, err)
		require.NoError(t, db.Delete(context.Background(), f.ts(100), f.ts(260), labels.MustNewMatcher(labels.MatchEqual, "pod", "pod-a")))
		require.NoError(t, db.Close())
		blocks := tsdbBlockDirs(t, deleted.dir)
		require.Len(t, blocks, 1)
		fi, err := os.Stat(filepath.Join(deleted.dir, blocks[0], "tombstones"))
		require.NoError(t, err)
		require.Greater(t, fi.Size(), int64(9), "the block has tombstones, not only the file's header")
	}
	for _, tc := range []struct {
		name  string
		dir   string
		opts  snapshot.Options
		check func(t *testing.T, ev *snapshot.Evidence)
	}{
		{name: "torn WAL", dir: torn.dir, check: func(t *testing.T, ev *snapshot.Evidence) {
			assert.NotEmpty(t, ev.ProblemsOf(ErrHeadNotRead))
		}},
		{name: "head only", dir: headOnly.dir},
		{name: "tombstones", dir: deleted.dir, check: func(t *testing.T, ev *snapshot.Evidence) {
			_, a := countKept(ev.Target("pod-a"))
			_, b := countKept(ev.Target("pod-b"))
			assert.Less(t, a, b, "pod-a's samples deleted")
		}},
		{name: "tombstones, range", dir: deleted.dir, opts: snapshot.Options{Start: at(90), End: at(300)}},
		{name: "blocks and head", dir: f.dir, check: func(t *testing.T, ev *snapshot.Evidence) {
			checkTSDBFixture(t, f, ev, 0, f.n)
			assert.NotEmpty(t, ev.ProblemsOf(snapshot.ErrInconsistent), "pod-b's counter drops")
		}},
		{name: "range across block and head", dir: f.dir, opts: snapshot.Options{Start: at(200), End: at(300)}},
		{name: "range in the block", dir: f.dir, opts: snapshot.Options{Start: at(10), End: at(20)}},
		{name: "range in the head", dir: f.dir, opts: snapshot.Options{Start: at(250), End: at(350)}},
		{name: "matchers", dir: f.dir, opts: snapshot.Options{Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "pod", "pod-b")}}},
		{name: "metrics", dir: f.dir, opts: snapshot.Options{Metrics: []string{"vllm:e2e_request_latency_seconds", "vllm:num_requests_waiting", "vllm:time_to_first_token_seconds_bucket"}}},
		{name: "metrics and range", dir: f.dir, opts: snapshot.Options{Metrics: []string{"vllm:request_success_total"}, Start: at(100), End: at(340)}},
		{name: "target name override", dir: f.dir, opts: snapshot.Options{TargetName: func(_, name string) string { return "replica/" + name }}},
		{name: "override merging targets", dir: f.dir, opts: snapshot.Options{TargetName: func(string, string) string { return "fleet" }}},
		{name: "MaxSeriesPerScrape", dir: f.dir, opts: snapshot.Options{Limits: snapshot.Limits{MaxSeriesPerScrape: 3}}},
		{name: "MaxLabelBytes", dir: f.dir, opts: snapshot.Options{Limits: snapshot.Limits{MaxLabelBytes: 90}}},
		{name: "MaxWALBytes", dir: f.dir, opts: snapshot.Options{Limits: snapshot.Limits{MaxWALBytes: 1000}}},
		{name: "naming and overlapping blocks", dir: naming, check: func(t *testing.T, ev *snapshot.Evidence) {
			var names []string
			for _, tg := range ev.Targets {
				names = append(names, tg.Name+"/"+tg.NameFrom)
			}
			assert.Equal(t, []string{"10.0.0.2:8000/instance", "batch/tsdb", "gpu-x/pod", "naming/tsdb", "pod-a/pod"}, names)
			g := ev.Target("pod-a").Family("vllm:num_requests_waiting").Series[0]
			require.Len(t, g.T, 180)
			assert.Equal(t, float64(100*3), g.V[100], "the first block's sample where both overlap")
			assert.Equal(t, float64(150*3+1000), g.V[150])
		}},
		{name: "naming, one target", dir: naming, opts: snapshot.Options{TargetName: func(string, string) string { return "all" }}},
		{name: "naming, matchers", dir: naming, opts: snapshot.Options{Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, "job", "vllm|batch")}}},
		{name: "time outliers", dir: outliers, check: func(t *testing.T, ev *snapshot.Evidence) {
			require.NotEmpty(t, ev.ProblemsOf(snapshot.ErrTimeOutlier))
			assert.Len(t, ev.Target("pod-c").Scrapes, 360, "the scrapes two days later left out")
		}},
		{name: "time outliers kept", dir: outliers, opts: snapshot.Options{KeepTimeOutliers: true}, check: func(t *testing.T, ev *snapshot.Evidence) {
			assert.Len(t, ev.Target("pod-c").Scrapes, 364)
		}},
		{name: "time outliers out of range", dir: outliers, opts: snapshot.Options{End: t0.Add(24 * time.Hour)}, check: func(t *testing.T, ev *snapshot.Evidence) {
			assert.Empty(t, ev.ProblemsOf(snapshot.ErrTimeOutlier))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := requireEachAsRead(t, []string{tc.dir}, tc.opts)
			if tc.check != nil {
				tc.check(t, ev)
			}
			requireDirectAsQuerier(t, tc.dir, tc.opts)
			// The same one target at a time, and four at once with the
			// blocks opened afresh after every batch (remap).
			defer func(b int64, p func() int) { remapBytes, parallelism = b, p }(remapBytes, parallelism)
			parallelism = func() int { return 1 }
			requireEachAsRead(t, []string{tc.dir}, tc.opts)
			remapBytes, parallelism = 0, func() int { return 4 }
			requireEachAsRead(t, []string{tc.dir}, tc.opts)
		})
	}
}

// TestReadEachTSDBCorruptions damages one of two overlapping blocks as
// TestReadTSDBCorruptions does: ReadEach reports the same problems as Read
// and visits the same targets.
func TestReadEachTSDBCorruptions(t *testing.T) {
	base := writeTSDBFixture(t, filepath.Join(t.TempDir(), "data"))
	good := tsdbBlockDirs(t, base.dir)[0]
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, block string)
	}{
		{"missing index", removeInBlock("index")},
		{"broken meta.json", overwriteInBlock("meta.json", `{"ulid": "01`)},
		{"corrupt chunk", corruptChunk},
		{"corrupt series entry", corruptSeriesEntry},
		{"missing chunks dir", removeInBlock("chunks")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, _ := withDamagedCopy(t, base.dir, good, tc.damage)
			ev := requireEachAsRead(t, []string{dir}, snapshot.Options{})
			require.NotEmpty(t, ev.ProblemsOf(ErrBadBlock), "%v", ev.Problems)
			requireDirectAsQuerier(t, dir, snapshot.Options{})
		})
	}
	t.Run("all blocks bad", func(t *testing.T) {
		dir := withoutIndex(t, base.dir, good)
		want, werr := snapshot.Read(context.Background(), []string{dir}, snapshot.Options{})
		require.Error(t, werr)
		visited := 0
		ev, err := snapshot.ReadEach(context.Background(), []string{dir}, snapshot.Options{}, func(*snapshot.Target) error { visited++; return nil })
		require.ErrorIs(t, err, ErrBadBlock)
		assert.Equal(t, werr.Error(), err.Error())
		assert.Zero(t, visited)
		require.NotNil(t, ev)
		assert.Equal(t, problemStrings(want.Problems), problemStrings(ev.Problems))
		assert.Equal(t, want.Sources, ev.Sources)
	})
}

// TestReadEachTSDBStops: a visitor's error ends the read and is returned;
// a cancelled context and a start after the end are Read's errors.
func TestReadEachTSDBStops(t *testing.T) {
	f := writeTSDBFixture(t, filepath.Join(t.TempDir(), "data"))
	stop := errors.New("enough")
	var names []string
	ev, err := snapshot.ReadEach(context.Background(), []string{f.dir}, snapshot.Options{}, func(tg *snapshot.Target) error {
		names = append(names, tg.Name)
		return stop
	})
	require.ErrorIs(t, err, stop)
	assert.Nil(t, ev)
	assert.Equal(t, []string{"pod-a"}, names)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = snapshot.ReadEach(ctx, []string{f.dir}, snapshot.Options{}, func(*snapshot.Target) error { return nil })
	require.ErrorIs(t, err, context.Canceled)

	_, err = snapshot.ReadEach(context.Background(), []string{f.dir}, snapshot.Options{Start: time.UnixMilli(f.ts(2)), End: time.UnixMilli(f.ts(1))}, func(*snapshot.Target) error { return nil })
	require.ErrorContains(t, err, "after end")
}

// TestReadEachTSDBMaxTotalBytes: past Limits.MaxTotalBytes, counted over
// the targets read, no further target is read, and the result is partial.
func TestReadEachTSDBMaxTotalBytes(t *testing.T) {
	f := writeTSDBFixture(t, filepath.Join(t.TempDir(), "data"))
	for _, tc := range []struct {
		name    string
		max     int64
		targets int
	}{
		{"within", 1 << 20, 2},
		{"past the first target", 100, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ev, err := readEachAll([]string{f.dir}, snapshot.Options{Metrics: []string{"vllm:num_requests_waiting"},
				Limits: snapshot.Limits{MaxTotalBytes: tc.max}})
			require.NoError(t, err)
			assert.Len(t, got, tc.targets)
			limited := 0
			for _, p := range ev.ProblemsOf(snapshot.ErrLimit) {
				assert.Contains(t, p.Error(), "MaxTotalBytes")
				limited++
			}
			assert.Equal(t, tc.targets == 1, limited > 0, "%v", ev.Problems)
			assert.Equal(t, tc.targets == 1, ev.Partial())
		})
	}
}

// TestReadEachTSDBProgress: progress counts targets.
func TestReadEachTSDBProgress(t *testing.T) {
	f := writeTSDBFixture(t, filepath.Join(t.TempDir(), "data"))
	var got []snapshot.Progress
	_, err := snapshot.ReadEach(context.Background(), []string{f.dir}, snapshot.Options{
		Progress: func(p snapshot.Progress) { got = append(got, p) },
	}, func(*snapshot.Target) error { return nil })
	require.NoError(t, err)
	assert.Equal(t, []snapshot.Progress{
		{Path: f.dir, What: "tsdb target", Done: 0, Total: 2},
		{Path: f.dir, What: "tsdb target", Done: 1, Total: 2},
		{Path: f.dir, What: "tsdb target", Done: 2, Total: 2},
	}, got)
}

// TestReadEachTSDBMemory: the memory budget is charged while a target is
// held and released after its visit, so that a budget too small for the
// fleet, but large enough for one target, streams; a budget too small for
// one target fails as Read does.
func TestReadEachTSDBMemory(t *testing.T) {
	f := writeTSDBFixture(t, filepath.Join(t.TempDir(), "data"))
	m := snapshot.NewMemoryBudget(0)
	_, err := snapshot.Read(context.Background(), []string{f.dir}, snapshot.Options{Memory: m})
	require.NoError(t, err)
	fleet := m.Used()
	require.Positive(t, fleet)

	for _, tc := range []struct {
		name    string
		max     int64
		wantErr bool
	}{
		{"fleet fits", fleet + 1, false},
		{"one target fits", fleet*2/3 + 1, false},
		{"no target fits", fleet / 4, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := snapshot.Options{Limits: snapshot.Limits{MaxMemory: tc.max}}
			_, rerr := snapshot.Read(context.Background(), []string{f.dir}, opts)
			budget := snapshot.NewMemoryBudget(tc.max)
			opts.Memory = budget
			n := 0
			_, err := snapshot.ReadEach(context.Background(), []string{f.dir}, opts, func(*snapshot.Target) error { n++; return nil })
			if tc.wantErr {
				require.ErrorIs(t, err, snapshot.ErrLimit)
				var le *snapshot.LimitError
				require.True(t, errors.As(err, &le))
				assert.Equal(t, "Limits.MaxMemory", le.Limit)
				require.ErrorIs(t, rerr, snapshot.ErrLimit)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, 2, n)
			assert.Zero(t, budget.Used(), "every target released")
			if tc.max <= fleet {
				require.ErrorIs(t, rerr, snapshot.ErrLimit, "Read holds the fleet")
			}
		})
	}
}

// TestReadEachTSDBLetsTargetsGo: once visit returns, nothing of ReadEach
// holds the target's samples: a dropped target is collected while the
// next one is visited.
func TestReadEachTSDBLetsTargetsGo(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "naming")
	writeNamingTSDB(t, dir, time.Date(2026, 9, 22, 10, 0, 0, 0, time.UTC))
	var freed []chan struct{}
	_, err := snapshot.ReadEach(context.Background(), []string{dir}, snapshot.Options{}, func(tg *snapshot.Target) error {
		if n := len(freed); n > 0 {
			runtime.GC()
			select {
			case <-freed[n-1]:
			case <-time.After(5 * time.Second):
				t.Errorf("the target before %s is still held", tg.Name)
			}
		}
		done := make(chan struct{})
		freed = append(freed, done)
		s := tg.Family("vllm:num_requests_waiting").Series[0]
		runtime.AddCleanup(&s.T[0], func(ch chan struct{}) { close(ch) }, done)
		return nil
	})
	require.NoError(t, err)
	assert.Len(t, freed, 5, "every target visited")
}

// TestReadEachTSDBPeakHeap reads a fleet of 40 pods over 2 h with Read
// and with ReadEach (the visitor drops each target): the peak heap of
// ReadEach is that of one target and what every read holds (the index,
// the series refs, the read buffers), a fraction of Read's. (With 20 pods
// the part every read holds was a quarter of Read's peak, give or take
// the sampling: the fleet is large enough that one target is not.)
func TestReadEachTSDBPeakHeap(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 6 M-sample fixture")
	}
	dir := t.TempDir()
	const pods = 40
	_, samples := writeTSDBFleet(t, dir, pods, time.Date(2026, 9, 22, 0, 0, 0, 0, time.UTC), 2*time.Hour)
	// The peak of one run moves with the GC's pacing (a collection that
	// comes late lets garbage of the last target stand beside the next):
	// the least peak of three runs is the memory the read needs.
	measure := func(read func() error) uint64 {
		var least uint64
		for i := 0; i < 3; i++ {
			runtime.GC()
			stop := heappeak.Start(time.Millisecond)
			require.NoError(t, read())
			if p := stop().Above(); i == 0 || p < least {
				least = p
			}
		}
		return least
	}
	opts := snapshot.Options{Limits: snapshot.Limits{MaxMemory: 8 << 30}}
	targets := 0
	whole := measure(func() error {
		ev, err := snapshot.Read(context.Background(), []string{dir}, opts)
		if err == nil {
			targets = len(ev.Targets)
		}
		return err
	})
	require.Equal(t, pods, targets)
	n := 0
	each := measure(func() error {
		n = 0
		_, err := snapshot.ReadEach(context.Background(), []string{dir}, opts, func(*snapshot.Target) error { n++; return nil })
		return err
	})
	require.Equal(t, pods, n)
	t.Logf("%d samples: peak heap Read %.1f MB, ReadEach %.1f MB", samples, float64(whole)/(1<<20), float64(each)/(1<<20))
	assert.Less(t, each, whole/4, "ReadEach holds one target of %d", pods)
}

// TestReadEachPoolHolds: the workers of pass B decode ahead of the
// caller, while it visits, by at most passB.held targets: twice the
// workers when the memory budget allows, one when it holds only one
// target at a time; and they do decode ahead when they may.
func TestReadEachPoolHolds(t *testing.T) {
	dir := t.TempDir()
	const pods = 12
	writeTSDBFleet(t, dir, pods, time.Date(2026, 9, 22, 0, 0, 0, 0, time.UTC), 30*time.Minute)
	defer func(p func() int, d func(int)) { parallelism, poolDone = p, d }(parallelism, poolDone)
	parallelism = func() int { return 4 }
	var most []int
	poolDone = func(n int) { most = append(most, n) }
	read := func(opts snapshot.Options) {
		t.Helper()
		most = nil
		n := 0
		_, err := snapshot.ReadEach(context.Background(), []string{dir}, opts, func(*snapshot.Target) error {
			n++
			time.Sleep(20 * time.Millisecond) // the workers get ahead
			return nil
		})
		require.NoError(t, err)
		require.Equal(t, pods, n)
		require.Len(t, most, 1, "one pool a read")
	}
	read(snapshot.Options{})
	assert.LessOrEqual(t, most[0], 2*4, "at most twice the workers ahead")
	assert.Greater(t, most[0], 4, "the workers decode ahead of the caller")

	// Budgets that hold a target five and two and a half times over: one
	// worker, with one target ahead (passB.ahead wants three times the
	// target free) and without.
	m := snapshot.NewMemoryBudget(0)
	_, err := snapshot.Read(context.Background(), []string{dir}, snapshot.Options{Memory: m})
	require.NoError(t, err)
	one := m.Used() / pods
	read(snapshot.Options{Memory: snapshot.NewMemoryBudget(5 * one)})
	assert.LessOrEqual(t, most[0], 2, "one worker, one target ahead")
	read(snapshot.Options{Memory: snapshot.NewMemoryBudget(5 * one / 2)})
	assert.Equal(t, 1, most[0], "one target at a time")
}
