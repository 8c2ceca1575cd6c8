package tsdb

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/whyslow/whyslow/snapshot"
)

// checkTSDBFixture checks everything Read returned for scrapes
// [from, to) of the fixture.
func checkTSDBFixture(t *testing.T, f *tsdbFix, ev *snapshot.Evidence, from, to int) {
	t.Helper()
	require.Len(t, ev.Targets, len(f.pods))
	for _, pod := range f.pods {
		tg := ev.Target(pod)
		require.NotNil(t, tg, pod)
		assert.Equal(t, "pod", tg.NameFrom)
		require.Len(t, tg.Scrapes, to-from, pod)
		for k, s := range tg.Scrapes {
			require.Equal(t, f.ts(from+k), s.Time.UnixMilli())
			require.Equal(t, snapshot.TimeFromTSDB, s.TimeFrom)
			require.Empty(t, s.Files)
		}
		assert.Equal(t, []string{
			"vllm:e2e_request_latency_seconds",
			"vllm:num_requests_waiting",
			"vllm:request_success_total",
			"vllm:time_to_first_token_seconds",
		}, tg.FamilyNames(), pod)

		g := tg.Family("vllm:num_requests_waiting")
		assert.Equal(t, model.MetricTypeUnknown, g.Type)
		assert.True(t, g.TypeInferred)
		require.Len(t, g.Series, 1)
		s := g.Series[0]
		assert.Equal(t, "vllm:num_requests_waiting", s.Name)
		assert.Equal(t, "m", s.Labels.Get("model_name"))
		assert.False(t, s.Labels.Has(model.MetricNameLabel))
		require.Equal(t, to-from, s.Len(), "stale marker must not be a sample")
		for k := range s.T {
			require.Equal(t, f.ts(from+k), s.T[k])
			require.Equal(t, tsdbGauge(from+k), s.V[k])
		}

		c := tg.Family("vllm:request_success_total")
		assert.Equal(t, model.MetricTypeCounter, c.Type)
		require.Len(t, c.Series, 1)
		for k, v := range c.Series[0].V {
			require.Equal(t, f.counter(pod, from+k), v)
		}

		h := tg.Family("vllm:e2e_request_latency_seconds")
		assert.Equal(t, model.MetricTypeHistogram, h.Type)
		assert.Empty(t, h.Series)
		require.Len(t, h.Histograms, 1)
		hs := h.Histograms[0]
		assert.Equal(t, []float64{0.5, 1, math.Inf(1)}, hs.Bounds)
		assert.False(t, hs.Labels.Has("le"))
		assert.False(t, hs.Labels.Has(model.MetricNameLabel))
		require.Equal(t, to-from, hs.Len())
		for k := range hs.T {
			want, sum, count := tsdbClassic(from + k)
			got := hs.At(k)
			require.Equal(t, want[:], got.Counts)
			require.Equal(t, sum, got.Sum)
			require.Equal(t, count, got.Count)
		}

		n := tg.Family("vllm:time_to_first_token_seconds")
		assert.Equal(t, model.MetricTypeHistogram, n.Type)
		require.Len(t, n.Histograms, 1)
		ns := n.Histograms[0]
		assert.Equal(t, []float64{0.1, 0.5, math.Inf(1)}, ns.Bounds)
		require.Equal(t, to-from, ns.Len())
		for k := range ns.T {
			require.Equal(t, f.ts(from+k), ns.T[k])
			got := ns.At(k)
			require.Equal(t, tsdbNHCBCum(from+k), got.Counts)
			require.Equal(t, float64(3*(from+k)+1), got.Count)
			require.Equal(t, 0.25*float64(from+k), got.Sum)
		}
	}
	// The exponential histogram of pod-a is reported, not read.
	exp := ev.ProblemsOf(ErrExponentialHistogram)
	require.Len(t, exp, 1, "%v", ev.Problems)
	assert.Equal(t, "vllm:exp_latency_seconds", exp[0].Family)
	assert.Equal(t, snapshot.SeverityError, exp[0].Severity)
	assert.Contains(t, exp[0].Error(), "samples")
}

func TestReadTSDBBlocksAndHead(t *testing.T) {
	f := writeTSDBFixture(t, filepath.Join(t.TempDir(), "data"))
	require.DirExists(t, filepath.Join(f.dir, "wal"))
	require.True(t, snapshot.IsTSDB(f.dir))
	before := treeHash(t, f.dir)

	ev, err := Read(context.Background(), f.dir, snapshot.Options{})
	require.NoError(t, err)
	checkTSDBFixture(t, f, ev, 0, f.n)
	assert.Equal(t, []string{f.dir}, ev.Sources)
	assert.True(t, ev.Partial(), "the exponential histogram was dropped")
	for _, p := range ev.Problems {
		if !errors.Is(p, ErrExponentialHistogram) {
			t.Errorf("unexpected problem: %v", p)
		}
	}
	requireTreeUnchanged(t, before, treeHash(t, f.dir))
}

// tearWAL cuts the last record of the last WAL segment, as a crash during
// a write leaves it: the segment ends inside the record.
func tearWAL(t *testing.T, dir string, cut int) (segment string) {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(dir, "wal", "0*"))
	require.NoError(t, err)
	require.NotEmpty(t, segs)
	segment = segs[len(segs)-1]
	b, err := os.ReadFile(segment)
	require.NoError(t, err)
	end := len(b)
	for end > 0 && b[end-1] == 0 { // page padding written on Close
		end--
	}
	require.Greater(t, end, cut)
	require.NoError(t, os.Truncate(segment, int64(end-cut)))
	return segment
}

func TestReadTSDBTornWAL(t *testing.T) {
	f := writeTSDBFixture(t, filepath.Join(t.TempDir(), "data"))
	seg := tearWAL(t, f.dir, 4)

	// Prometheus's own read-only replay gives up on the torn tail, and its
	// hard links into its sandbox change the ctime of chunks_head files.
	before := treeHash(t, f.dir)
	db, err := tsdb.OpenDBReadOnly(f.dir, t.TempDir(), nil)
	require.NoError(t, err)
	_, qerr := db.Querier(math.MinInt64, math.MaxInt64)
	require.ErrorContains(t, qerr, "read WAL")
	require.NoError(t, db.Close())
	if runtime.GOOS == "linux" {
		assert.NotEqual(t, before, treeHash(t, f.dir), "OpenDBReadOnly hard-links chunks_head")
	}

	before = treeHash(t, f.dir)

	ev, err := Read(context.Background(), f.dir, snapshot.Options{})
	require.NoError(t, err)
	// The cut record was the stale marker: no sample is lost.
	checkTSDBFixture(t, f, ev, 0, f.n)
	torn := ev.ProblemsOf(ErrHeadNotRead)
	require.Len(t, torn, 1, "%v", ev.Problems)
	assert.Equal(t, seg, torn[0].File)
	assert.Equal(t, snapshot.SeverityWarning, torn[0].Severity, "a torn tail is what a crash leaves")
	assert.Positive(t, torn[0].Offset)
	assert.Contains(t, torn[0].Error(), "torn or corrupt WAL record")
	requireTreeUnchanged(t, before, treeHash(t, f.dir))
}

func TestReadTSDBTornWALLosesLastScrape(t *testing.T) {
	f := writeTSDBFixture(t, filepath.Join(t.TempDir(), "data"))
	// Cut deeper: into the records of the last scrape.
	tearWAL(t, f.dir, 400)
	ev, err := Read(context.Background(), f.dir, snapshot.Options{})
	require.NoError(t, err)
	// Every series is a prefix of what was written: the blocks and the
	// head up to the tear are kept, and something after it is lost.
	lost := 0
	for _, pod := range f.pods {
		tg := ev.Target(pod)
		require.NotNil(t, tg)
		g := tg.Family("vllm:num_requests_waiting").Series[0]
		for k := range g.T {
			require.Equal(t, f.ts(k), g.T[k])
			require.Equal(t, tsdbGauge(k), g.V[k])
		}
		h := tg.Family("vllm:e2e_request_latency_seconds").Histograms[0]
		for k := range h.T {
			require.Equal(t, f.ts(k), h.T[k])
		}
		n := tg.Family("vllm:time_to_first_token_seconds").Histograms[0]
		for k := range n.T {
			require.Equal(t, tsdbNHCBCum(k), n.At(k).Counts)
		}
		lost += 3*f.n - g.Len() - h.Len() - n.Len()
		assert.GreaterOrEqual(t, g.Len(), f.n-1)
	}
	assert.Positive(t, lost, "the torn records held samples")

	// The problem says from when samples may be missing: from the last
	// intact record's oldest sample, at or before every lost one.
	var lr *snapshot.LostRangeError
	var torn []snapshot.Problem
	for _, p := range ev.Problems {
		if errors.As(p.Err, &lr) {
			torn = append(torn, p)
		}
	}
	require.Len(t, torn, 1, "%v", ev.Problems)
	require.True(t, errors.As(torn[0].Err, &lr))
	assert.True(t, errors.Is(torn[0], ErrHeadNotRead))
	assert.Equal(t, snapshot.SeverityWarning, torn[0].Severity)
	require.False(t, lr.From.IsZero())
	assert.True(t, lr.To.IsZero(), "open-ended")
	assert.LessOrEqual(t, lr.From.UnixMilli(), f.ts(f.n-1), "the last scrape was torn")
	assert.GreaterOrEqual(t, lr.From.UnixMilli(), f.ts(0))
	assert.Contains(t, torn[0].Error(), "from "+lr.From.Format(time.RFC3339Nano)+" on may be missing")
	last := time.UnixMilli(f.ts(f.n - 1))
	assert.Len(t, ev.LostIn(last.Add(-time.Minute), last), 1, "a window over the tear")
	assert.Empty(t, ev.LostIn(time.UnixMilli(f.ts(0)), lr.From.Add(-time.Millisecond)), "a window before it")
}

// readWholeFixture reads all of the fixture f, checks every sample, and
// that the directory was not written.
func readWholeFixture(t *testing.T, f *tsdbFix) {
	t.Helper()
	before := treeHash(t, f.dir)
	ev, err := Read(context.Background(), f.dir, snapshot.Options{})
	require.NoError(t, err)
	checkTSDBFixture(t, f, ev, 0, f.n)
	requireTreeUnchanged(t, before, treeHash(t, f.dir))
}

// TestReadTSDBWhileLocked reads a TSDB that a live tsdb.DB (as a running
// Prometheus) holds open and locked, with a `lock` file.
func TestReadTSDBWhileLocked(t *testing.T) {
	f := writeTSDBFixture(t, filepath.Join(t.TempDir(), "data"))
	db, err := tsdb.Open(f.dir, slog.New(slog.DiscardHandler), nil, tsdb.DefaultOptions(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	require.FileExists(t, filepath.Join(f.dir, "lock"))
	db.DisableCompactions()

	readWholeFixture(t, f)
}

// TestReadTSDBReadOnlyEvidence reads a write-protected copy. The tests run
// as root, for whom permissions do not stop writes, so the tree hash is
// what proves nothing was written.
func TestReadTSDBReadOnlyEvidence(t *testing.T) {
	f := writeTSDBFixture(t, filepath.Join(t.TempDir(), "data"))
	require.NoError(t, os.WriteFile(filepath.Join(f.dir, "lock"), nil, 0o644))
	require.NoError(t, filepath.WalkDir(f.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		return os.Chmod(p, fi.Mode().Perm()&^0o222)
	}))
	t.Cleanup(func() {
		filepath.WalkDir(f.dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil {
				os.Chmod(p, 0o755)
			}
			return nil
		})
	})
	readWholeFixture(t, f)
}

func TestReadTSDBSelection(t *testing.T) {
	f := writeTSDBFixture(t, filepath.Join(t.TempDir(), "data"))
	at := func(i int) time.Time { return time.UnixMilli(f.ts(i)) }
	t.Run("range across block and head", func(t *testing.T) {
		ev, err := Read(context.Background(), f.dir, snapshot.Options{Start: at(200), End: at(300)})
		require.NoError(t, err)
		checkTSDBFixture(t, f, ev, 200, 301) // both ends inclusive
	})
	t.Run("range in the block skips the head", func(t *testing.T) {
		// A WAL limit that any replay would exceed proves the WAL is not
		// read.
		ev, err := Read(context.Background(), f.dir, snapshot.Options{Start: at(10), End: at(20), Limits: snapshot.Limits{MaxWALBytes: 1}})
		require.NoError(t, err)
		checkTSDBFixture(t, f, ev, 10, 21)
		assert.Empty(t, ev.ProblemsOf(ErrHeadNotRead))
	})
	t.Run("matchers", func(t *testing.T) {
		ev, err := Read(context.Background(), f.dir, snapshot.Options{
			Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "pod", "pod-b")},
		})
		require.NoError(t, err)
		require.Len(t, ev.Targets, 1)
		assert.Equal(t, "pod-b", ev.Targets[0].Name)
		assert.False(t, ev.Partial(), "pod-b has no exponential histogram: %v", ev.Problems)
	})
	t.Run("metrics", func(t *testing.T) {
		ev, err := Read(context.Background(), f.dir, snapshot.Options{
			Metrics: []string{"vllm:e2e_request_latency_seconds", "vllm:num_requests_waiting", "vllm:time_to_first_token_seconds_bucket"},
		})
		require.NoError(t, err)
		require.Len(t, ev.Targets, 2)
		for _, tg := range ev.Targets {
			assert.Equal(t, []string{"vllm:e2e_request_latency_seconds", "vllm:num_requests_waiting", "vllm:time_to_first_token_seconds"}, tg.FamilyNames())
			assert.Len(t, tg.Family("vllm:e2e_request_latency_seconds").Histograms[0].T, f.n)
		}
		assert.Empty(t, ev.Problems, "the exponential histogram was not even selected")
	})
	t.Run("target name override", func(t *testing.T) {
		ev, err := Read(context.Background(), f.dir, snapshot.Options{
			TargetName: func(path, name string) string { return "replica/" + name },
			Metrics:    []string{"vllm:num_requests_waiting"},
		})
		require.NoError(t, err)
		require.NotNil(t, ev.Target("replica/pod-a"))
		assert.Equal(t, "override", ev.Target("replica/pod-a").NameFrom)
	})
	t.Run("start after end", func(t *testing.T) {
		_, err := Read(context.Background(), f.dir, snapshot.Options{Start: at(2), End: at(1)})
		require.ErrorContains(t, err, "after end")
	})
	t.Run("canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := Read(ctx, f.dir, snapshot.Options{})
		require.ErrorIs(t, err, context.Canceled)
	})
}

func TestReadTSDBLimits(t *testing.T) {
	f := writeTSDBFixture(t, filepath.Join(t.TempDir(), "data"))
	t.Run("MaxWALBytes", func(t *testing.T) {
		ev, err := Read(context.Background(), f.dir, snapshot.Options{Limits: snapshot.Limits{MaxWALBytes: 1000}})
		require.NoError(t, err)
		require.True(t, ev.Partial())
		head := ev.ProblemsOf(ErrHeadNotRead)
		require.NotEmpty(t, head, "%v", ev.Problems)
		p := head[len(head)-1]
		assert.ErrorIs(t, p, snapshot.ErrLimit)
		assert.Equal(t, filepath.Join(f.dir, "wal"), p.File)
		assert.Contains(t, p.Error(), "MaxWALBytes")
		// The block is still read.
		checkTSDBFixture(t, f, ev, 0, f.nBlock)
	})
	t.Run("MaxSeriesPerScrape", func(t *testing.T) {
		ev, err := Read(context.Background(), f.dir, snapshot.Options{Limits: snapshot.Limits{MaxSeriesPerScrape: 3}})
		require.NoError(t, err)
		require.True(t, ev.Partial())
		assert.ErrorIs(t, ev.Problems[len(ev.Problems)-1], snapshot.ErrLimit)
	})
	t.Run("MaxTotalBytes", func(t *testing.T) {
		ev, err := Read(context.Background(), f.dir, snapshot.Options{Limits: snapshot.Limits{MaxTotalBytes: 10_000}})
		require.NoError(t, err)
		require.True(t, ev.Partial())
		found := false
		for _, p := range ev.Problems {
			found = found || (errors.Is(p, snapshot.ErrLimit) && strings.Contains(p.Error(), "MaxTotalBytes"))
		}
		assert.True(t, found, "%v", ev.Problems)
	})
}

func TestIsTSDB(t *testing.T) {
	f := writeTSDBFixture(t, filepath.Join(t.TempDir(), "data"))
	dumps := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dumps, "pod-a_2026-09-22T10-00-00Z.prom"), []byte("x 1\n"), 0o644))
	blocksOnly := t.TempDir()
	require.NoError(t, copyTree(filepath.Join(f.dir, tsdbBlockDirs(t, f.dir)[0]), filepath.Join(blocksOnly, tsdbBlockDirs(t, f.dir)[0])))
	for _, tc := range []struct {
		path string
		want bool
	}{
		{f.dir, true},
		{blocksOnly, true},
		{dumps, false},
		{filepath.Join(dumps, "pod-a_2026-09-22T10-00-00Z.prom"), false},
		{t.TempDir(), false},
		{"/nonexistent", false},
	} {
		assert.Equal(t, tc.want, snapshot.IsTSDB(tc.path), tc.path)
	}
}

// The samples a TSDB read keeps count against Limits.MaxMemory: past it
// the read stops with an error naming the limit and the directory.
func TestReadTSDBMaxMemory(t *testing.T) {
	f := writeTSDBFixture(t, filepath.Join(t.TempDir(), "data"))
	m := snapshot.NewMemoryBudget(0)
	_, err := Read(context.Background(), f.dir, snapshot.Options{Memory: m})
	require.NoError(t, err)
	require.Positive(t, m.Used())

	ev, err := Read(context.Background(), f.dir, snapshot.Options{Limits: snapshot.Limits{MaxMemory: m.Used() / 2}})
	require.Error(t, err)
	assert.Nil(t, ev)
	var le *snapshot.LimitError
	require.True(t, errors.As(err, &le), "%v", err)
	assert.Equal(t, "Limits.MaxMemory", le.Limit)
	assert.Contains(t, err.Error(), "tsdb "+f.dir)
	assert.Contains(t, err.Error(), "more than Limits.MaxMemory")

	// Through snapshot.Read, the error is the whole read's.
	_, err = snapshot.Read(context.Background(), []string{f.dir}, snapshot.Options{Limits: snapshot.Limits{MaxMemory: m.Used() / 2}})
	require.ErrorIs(t, err, snapshot.ErrLimit)
	require.True(t, errors.As(err, &le))
	assert.Equal(t, "Limits.MaxMemory", le.Limit)
}

// TestSizingAhead checks the room Read makes in a series for the blocks
// after the one read: a block's span within the range (maxT exclusive, at
// least 1 ms), and the growth it gives.
func TestSizingAhead(t *testing.T) {
	b := tsdbBlock{minT: 1000, maxT: 3000}
	for _, c := range []struct {
		name       string
		mint, maxt int64
		want       float64
	}{
		{"whole range", math.MinInt64, math.MaxInt64, 2000},
		{"the range's end inside", math.MinInt64, 1999, 1000},
		{"the range's start inside", 2500, math.MaxInt64, 500},
		{"a 1 ms block", 2999, math.MaxInt64, 1},
		{"outside", 4000, 5000, 1},
	} {
		assert.Equal(t, c.want, b.spanIn(c.mint, c.maxt), c.name)
	}
	assert.Equal(t, 120, growth(120, 1), "the last block: exactly its samples")
	assert.Equal(t, 120, growth(120, 0.5))
	assert.Equal(t, 0, growth(0, 3))
	// One more sample to come (a 1 ms block after 2 h): room for it.
	g := growth(480, 1+1/7.2e6)
	assert.Greater(t, g, 480)
	assert.Less(t, g, 500)
	// Three blocks of as many samples: three times, and a margin.
	assert.InDelta(t, 3*480*33/32, growth(480, 3), 2)
}
