package tsdb

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	promhistogram "github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/stretchr/testify/require"
)

// tsdbFix describes the TSDB fixture written by writeTSDBFixture: two pods
// scraped every step for n steps from t0; the first nBlock scrapes are
// compacted into a block, the rest stay in the head (wal/, chunks_head/).
type tsdbFix struct {
	dir          string
	t0           time.Time
	step         time.Duration
	n, nBlock    int
	pods         []string
	resetAt      int // pod-b's counter restarts from 0 at this scrape
	staleMarkers int // stale markers written (pod-b's gauge, after the last scrape)
}

func (f *tsdbFix) ts(i int) int64 { return f.t0.Add(time.Duration(i) * f.step).UnixMilli() }

// Sample values of the fixture at scrape i.
func tsdbGauge(i int) float64 { return float64(i % 7) }

func (f *tsdbFix) counter(pod string, i int) float64 {
	if pod == "pod-b" && i >= f.resetAt {
		return float64(2 * (i - f.resetAt))
	}
	return float64(2 * i)
}

// Classic histogram vllm:e2e_request_latency_seconds: cumulative counts at
// le 0.5, 1, +Inf.
func tsdbClassic(i int) (counts [3]float64, sum, count float64) {
	return [3]float64{float64(i), float64(2 * i), float64(3 * i)}, 1.5 * float64(i), float64(3 * i)
}

// NHCB vllm:time_to_first_token_seconds with custom bounds 0.1, 0.5: per
// bucket i, i, i+1.
func tsdbNHCB(i int) *promhistogram.Histogram {
	a, b, c := int64(i), int64(i), int64(i+1)
	return &promhistogram.Histogram{
		Schema:          promhistogram.CustomBucketsSchema,
		Count:           uint64(a + b + c),
		Sum:             0.25 * float64(i),
		PositiveSpans:   []promhistogram.Span{{Offset: 0, Length: 3}},
		PositiveBuckets: []int64{a, b - a, c - b},
		CustomValues:    []float64{0.1, 0.5},
	}
}

func tsdbNHCBCum(i int) []float64 {
	return []float64{float64(i), float64(2 * i), float64(3*i + 1)}
}

// An exponential native histogram (schema 0), which whyslow rejects.
func tsdbExp(i int) *promhistogram.Histogram {
	return &promhistogram.Histogram{
		Schema:          0,
		Count:           uint64(2 * i),
		Sum:             float64(i),
		PositiveSpans:   []promhistogram.Span{{Offset: 0, Length: 2}},
		PositiveBuckets: []int64{int64(i), 0},
	}
}

func tsdbLabels(pod, name string, kv ...string) labels.Labels {
	return labels.FromStrings(append([]string{"__name__", name, "pod", pod, "job", "vllm", "instance", pod + ":8000", "model_name", "m"}, kv...)...)
}

// writeTSDBFixture writes the fixture with the tsdb package, the way a
// Prometheus server would leave it after a crash (no Close is skipped; the
// head remains in wal/ and chunks_head/ because it was never compacted).
func writeTSDBFixture(t testing.TB, dir string) *tsdbFix {
	t.Helper()
	f := &tsdbFix{
		dir:          dir,
		t0:           time.Date(2026, 9, 22, 10, 0, 0, 0, time.UTC),
		step:         30 * time.Second,
		n:            360, // 3 h
		nBlock:       240, // 2 h in a block
		pods:         []string{"pod-a", "pod-b"},
		resetAt:      300,
		staleMarkers: 1,
	}
	db, err := tsdb.Open(dir, slog.New(slog.DiscardHandler), nil, tsdb.DefaultOptions(), nil)
	require.NoError(t, err)
	ctx := context.Background()
	appendAt := func(i int) {
		app := db.AppenderV2(ctx)
		ts := f.ts(i)
		add := func(ls labels.Labels, v float64, h *promhistogram.Histogram) {
			_, err := app.Append(0, ls, 0, ts, v, h, nil, storage.AOptions{})
			require.NoError(t, err)
		}
		for _, pod := range f.pods {
			add(tsdbLabels(pod, "vllm:num_requests_waiting"), tsdbGauge(i), nil)
			add(tsdbLabels(pod, "vllm:request_success_total"), f.counter(pod, i), nil)
			c, sum, count := tsdbClassic(i)
			for k, le := range []string{"0.5", "1", "+Inf"} {
				add(tsdbLabels(pod, "vllm:e2e_request_latency_seconds_bucket", "le", le), c[k], nil)
			}
			add(tsdbLabels(pod, "vllm:e2e_request_latency_seconds_sum"), sum, nil)
			add(tsdbLabels(pod, "vllm:e2e_request_latency_seconds_count"), count, nil)
			add(tsdbLabels(pod, "vllm:time_to_first_token_seconds"), 0, tsdbNHCB(i))
			if pod == "pod-a" {
				add(tsdbLabels(pod, "vllm:exp_latency_seconds"), 0, tsdbExp(i))
			}
		}
		require.NoError(t, app.Commit())
	}
	for i := range f.nBlock {
		appendAt(i)
	}
	hd := db.Head()
	require.NoError(t, db.CompactHead(tsdb.NewRangeHead(hd, hd.MinTime(), hd.MaxTime())))
	for i := f.nBlock; i < f.n; i++ {
		appendAt(i)
	}
	// The target disappeared: Prometheus writes a stale marker.
	app := db.AppenderV2(ctx)
	_, err = app.Append(0, tsdbLabels("pod-b", "vllm:num_requests_waiting"), 0, f.ts(f.n), math.Float64frombits(value.StaleNaN), nil, nil, storage.AOptions{})
	require.NoError(t, err)
	require.NoError(t, app.Commit())
	require.NoError(t, db.Close())
	require.Len(t, tsdbBlockDirs(t, dir), 1)
	return f
}

func tsdbBlockDirs(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		if e.IsDir() && isULID(e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out
}

// copyTSDBFixture copies a fixture directory (cheaper than writing one).
func copyTSDBFixture(t testing.TB, src *tsdbFix) *tsdbFix {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "data")
	require.NoError(t, copyTree(src.dir, dst))
	f := *src
	f.dir = dst
	return &f
}

// treeHash hashes everything observable about a directory tree that a
// reader could alter: names, types, modes, sizes, modification times,
// change times (where the platform gives them), and contents.
func treeHash(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		desc := fmt.Sprintf("mode=%v size=%d mtime=%d ctime=%d", fi.Mode(), fi.Size(), fi.ModTime().UnixNano(), tsdbCtime(fi))
		if fi.Mode().IsRegular() {
			fh, err := os.Open(path)
			if err != nil {
				return err
			}
			h := sha256.New()
			_, err = io.Copy(h, fh)
			fh.Close()
			if err != nil {
				return err
			}
			desc += " sha256=" + hex.EncodeToString(h.Sum(nil))
		}
		out[rel] = desc
		return nil
	})
	require.NoError(t, err)
	return out
}

// requireTreeUnchanged compares two tree hashes, naming what changed.
func requireTreeUnchanged(t testing.TB, before, after map[string]string) {
	t.Helper()
	var diffs []string
	for k, v := range before {
		if w, ok := after[k]; !ok {
			diffs = append(diffs, "removed "+k)
		} else if v != w {
			diffs = append(diffs, fmt.Sprintf("changed %s: %s -> %s", k, v, w))
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			diffs = append(diffs, "created "+k)
		}
	}
	sort.Strings(diffs)
	require.Empty(t, diffs, "evidence altered:\n%s", strings.Join(diffs, "\n"))
}

// copyTree copies the directories and regular files under src to dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type().IsRegular():
			return copyFile(path, target)
		}
		return nil
	})
}

// copyFile copies the regular file src to a new file dst.
func copyFile(src, dst string) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, out.Close()) }()
	_, err = io.Copy(out, in)
	return err
}
