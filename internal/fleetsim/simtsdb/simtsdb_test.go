package simtsdb

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/internal/fleetsim"
)

// smallFleet is a 2-pod, 20-minute fleet whose second pod restarts at 12
// minutes, with a GPU exporter.
func smallFleet(t *testing.T) *fleetsim.Fleet {
	t.Helper()
	ph := fleetsim.DefaultPhase
	ph.Rate = 6
	f, err := fleetsim.Run(fleetsim.Config{
		Seed: 11, Duration: 20 * time.Minute, GPUExporter: fleetsim.DCGMPercent,
		Pods:     []fleetsim.PodConfig{{}, {Restarts: []fleetsim.Restart{{At: 12 * time.Minute, Downtime: 45 * time.Second}}}},
		Workload: fleetsim.Workload{Phases: []fleetsim.Phase{ph}},
	})
	require.NoError(t, err)
	return f
}

// sample is one stored sample; v is the value's bits, so that staleness
// markers compare equal.
type sample struct {
	t int64
	v uint64
}

// stored returns the samples EachStored gives for f, by series.
func stored(t *testing.T, f *fleetsim.Fleet, opts fleetsim.TSDBOptions) map[string][]sample {
	t.Helper()
	out := map[string][]sample{}
	require.NoError(t, f.EachStored(opts, func(_ int, lset labels.Labels, ts int64, v float64) error {
		out[lset.String()] = append(out[lset.String()], sample{ts, math.Float64bits(v)})
		return nil
	}))
	return out
}

// readBack opens the TSDB at dir read-only and returns its blocks, its
// samples by series (blocks and head together) and the series' labels.
func readBack(t *testing.T, dir string) ([]tsdb.BlockReader, map[string][]sample, map[string]labels.Labels) {
	t.Helper()
	db, err := tsdb.OpenDBReadOnly(dir, t.TempDir(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	blocks, err := db.Blocks()
	require.NoError(t, err)
	q, err := db.Querier(math.MinInt64, math.MaxInt64)
	require.NoError(t, err)
	defer q.Close()
	out, lsets := map[string][]sample{}, map[string]labels.Labels{}
	ss := q.Select(context.Background(), true, nil, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+"))
	var it chunkenc.Iterator
	for ss.Next() {
		s := ss.At()
		key := s.Labels().String()
		lsets[key] = s.Labels()
		it = s.Iterator(it)
		for it.Next() == chunkenc.ValFloat {
			ts, v := it.At()
			out[key] = append(out[key], sample{ts, math.Float64bits(v)})
		}
		require.NoError(t, it.Err())
	}
	require.NoError(t, ss.Err())
	return blocks, out, lsets
}

// TestWriteMatchesEachStored: the TSDB holds exactly the samples
// EachStored gives (staleness markers and up series included), the part
// before the head span in blocks aligned on the block range and the rest
// in the head only.
func TestWriteMatchesEachStored(t *testing.T) {
	f := smallFleet(t)
	tests := []struct {
		name       string
		opts       fleetsim.TSDBOptions
		span, br   time.Duration
		wantBlocks int
	}{
		{"defaults", fleetsim.TSDBOptions{}, 10 * time.Minute, 2 * time.Hour, 1},
		{"up, small blocks", fleetsim.TSDBOptions{Up: true, HeadSpan: 5 * time.Minute, BlockDuration: 10 * time.Minute}, 5 * time.Minute, 10 * time.Minute, 2},
		{"all in blocks", fleetsim.TSDBOptions{HeadSpan: -1, BlockDuration: 7 * time.Minute}, 0, 7 * time.Minute, 4},
		{"all in the WAL, no stale markers", fleetsim.TSDBOptions{HeadSpan: time.Hour, NoStaleMarkers: true}, time.Hour, 2 * time.Hour, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := stored(t, f, tt.opts)
			dir := t.TempDir()
			require.NoError(t, Write(f, dir, tt.opts))
			blocks, got, _ := readBack(t, dir)
			require.Equal(t, want, got)

			mint, maxt, stale, up := int64(math.MaxInt64), int64(math.MinInt64), 0, 0
			for key, ss := range want {
				for _, s := range ss {
					mint, maxt = min(mint, s.t), max(maxt, s.t)
					if value.IsStaleNaN(math.Float64frombits(s.v)) {
						stale++
					}
				}
				if strings.HasPrefix(key, `{__name__="up"`) {
					up++
				}
			}
			assert.Equal(t, tt.opts.NoStaleMarkers, stale == 0, "staleness markers: %d", stale)
			assert.Equal(t, tt.opts.Up, up > 0, "up series: %d", up)

			cut := maxt + 1 - tt.span.Milliseconds()
			inBlocks := 0
			for _, ss := range want {
				for _, s := range ss {
					if s.t < cut {
						inBlocks++
					}
				}
			}
			require.Len(t, blocks, tt.wantBlocks)
			br := tt.br.Milliseconds()
			n := 0
			for _, b := range blocks {
				m := b.Meta()
				assert.GreaterOrEqual(t, m.MinTime, mint)
				assert.LessOrEqual(t, m.MaxTime, cut, "the last %s stay in the head", tt.span)
				assert.Equal(t, m.MinTime/br, (m.MaxTime-1)/br, "block [%d, %d) within one block range", m.MinTime, m.MaxTime)
				n += int(m.Stats.NumSamples)
			}
			assert.Equal(t, inBlocks, n, "samples before the head span are in blocks")
			if tt.span > 0 {
				assert.DirExists(t, filepath.Join(dir, "wal"))
			}
		})
	}
}

// TestWrite: every scraped sample is stored with the target labels
// Prometheus attaches, and only the restarting pod goes stale.
func TestWrite(t *testing.T) {
	f := smallFleet(t)
	dir := t.TempDir()
	require.NoError(t, Write(f, dir, fleetsim.TSDBOptions{HeadSpan: 5 * time.Minute, BlockDuration: 10 * time.Minute}))
	blocks, got, lsets := readBack(t, dir)
	require.NotEmpty(t, blocks, "older data is in persisted blocks")

	scraped := 0
	f.EachStoredSample(nil, func(string, time.Time, float64) { scraped++ })
	total, stale := 0, 0
	dcgm := map[string]bool{}
	for key, ss := range got {
		lset := lsets[key]
		for _, s := range ss {
			if value.IsStaleNaN(math.Float64frombits(s.v)) {
				stale++
				assert.Equal(t, "vllm-1", lset.Get("pod"), "only the restarting pod goes stale")
				continue
			}
			total++
		}
		if lset.Get("__name__") == "DCGM_FI_DEV_GPU_UTIL" {
			assert.Equal(t, "dcgm-exporter", lset.Get("job"))
			assert.True(t, strings.HasSuffix(lset.Get("instance"), ":9400"))
			dcgm[lset.Get("pod")] = true
		}
	}
	assert.Equal(t, scraped, total, "every scraped sample is stored, blocks + WAL")
	assert.Greater(t, stale, 100, "staleness markers at the failed scrape")
	assert.Equal(t, map[string]bool{"vllm-0": true, "vllm-1": true}, dcgm)
}

// TestWriteUp: with Up, every scrape of a target stores up 1 and every
// scrape a restarting pod missed stores up 0.
func TestWriteUp(t *testing.T) {
	f := smallFleet(t)
	dir := t.TempDir()
	require.NoError(t, Write(f, dir, fleetsim.TSDBOptions{Up: true}))
	_, got, lsets := readBack(t, dir)
	ups, downs := map[string]int{}, map[string]int{}
	for key, ss := range got {
		lset := lsets[key]
		if lset.Get("__name__") != "up" {
			continue
		}
		target := lset.Get("job") + "/" + lset.Get("pod") + lset.Get("instance")
		for _, s := range ss {
			if math.Float64frombits(s.v) == 1 {
				ups[target]++
			} else {
				downs[target]++
			}
		}
	}
	require.NotEmpty(t, downs)
	for target, n := range downs {
		assert.True(t, strings.Contains(target, "vllm-1") || strings.Contains(target, ":9400"), "only the restarting pod is down: %s", target)
		assert.Equal(t, 3, n, "45 s down with 15 s scrapes: %s", target)
	}
	assert.Len(t, ups, 4, "vLLM and DCGM targets of two pods")
	assert.Equal(t, len(f.Pods[0].Scrapes), ups["vllm/vllm-0"+f.Pods[0].Instance])
}

// TestWriteError: a directory that cannot be created is an error naming it.
func TestWriteError(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(dir, nil, 0o600))
	err := Write(smallFleet(t), filepath.Join(dir, "tsdb"), fleetsim.TSDBOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), dir)
}
