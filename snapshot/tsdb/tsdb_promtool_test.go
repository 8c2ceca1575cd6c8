package tsdb

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/whyslow/whyslow/internal/promserver"
	"github.com/whyslow/whyslow/snapshot"
)

// TestReadTSDBPromtoolBlocks reads blocks written by Prometheus's own code:
// promtool tsdb create-blocks-from openmetrics.
func TestReadTSDBPromtoolBlocks(t *testing.T) {
	promtool := promserver.Binary(t, "promtool") // .ci/run installs Debian's prometheus package
	const (
		t0   = 1758535200 // 2025-09-22T10:00:00Z, seconds
		step = 30
		n    = 600 // 5 h: blocks cut at 2 h boundaries
		pods = 2
	)
	var om strings.Builder
	om.WriteString("# HELP vllm:num_requests_running Running requests.\n# TYPE vllm:num_requests_running gauge\n")
	for p := range pods {
		for i := range n {
			fmt.Fprintf(&om, "vllm:num_requests_running{pod=\"pod-%d\"} %d %d\n", p, (i+p)%5, t0+i*step)
		}
	}
	om.WriteString("# TYPE vllm:generation_tokens counter\n")
	for p := range pods {
		for i := range n {
			fmt.Fprintf(&om, "vllm:generation_tokens_total{pod=\"pod-%d\"} %d %d\n", p, 10*i, t0+i*step)
		}
	}
	om.WriteString("# TYPE vllm:request_queue_time_seconds histogram\n")
	for p := range pods {
		for i := range n {
			ts := t0 + i*step
			for k, le := range []string{"0.3", "1.0", "+Inf"} {
				fmt.Fprintf(&om, "vllm:request_queue_time_seconds_bucket{pod=\"pod-%d\",le=\"%s\"} %d %d\n", p, le, (k+1)*i, ts)
			}
			fmt.Fprintf(&om, "vllm:request_queue_time_seconds_sum{pod=\"pod-%d\"} %g %d\n", p, 0.5*float64(i), ts)
			fmt.Fprintf(&om, "vllm:request_queue_time_seconds_count{pod=\"pod-%d\"} %d %d\n", p, 3*i, ts)
		}
	}
	om.WriteString("# EOF\n")
	in := filepath.Join(t.TempDir(), "in.om")
	require.NoError(t, os.WriteFile(in, []byte(om.String()), 0o644))
	out := filepath.Join(t.TempDir(), "data")
	require.NoError(t, os.Mkdir(out, 0o755))
	cmd := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", in, out)
	msg, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", msg)
	require.True(t, snapshot.IsTSDB(out))
	require.Greater(t, len(tsdbBlockDirs(t, out)), 1, "several blocks")
	before := treeHash(t, out)

	ev, err := Read(context.Background(), out, snapshot.Options{})
	require.NoError(t, err)
	require.Empty(t, ev.Problems)
	require.Len(t, ev.Targets, pods)
	for p := range pods {
		tg := ev.Target(fmt.Sprintf("pod-%d", p))
		require.NotNil(t, tg)
		require.Len(t, tg.Scrapes, n)
		g := tg.Family("vllm:num_requests_running")
		require.Len(t, g.Series, 1)
		require.Equal(t, n, g.Series[0].Len())
		for i, v := range g.Series[0].V {
			require.Equal(t, float64((i+p)%5), v)
			require.Equal(t, int64(t0+i*step)*1000, g.Series[0].T[i])
		}
		c := tg.Family("vllm:generation_tokens_total")
		assert.Equal(t, model.MetricTypeCounter, c.Type)
		require.Equal(t, float64(10*(n-1)), c.Series[0].V[n-1])
		h := tg.Family("vllm:request_queue_time_seconds")
		require.Len(t, h.Histograms, 1)
		hs := h.Histograms[0]
		assert.Equal(t, []float64{0.3, 1, math.Inf(1)}, hs.Bounds)
		require.Equal(t, n, hs.Len())
		last := hs.At(n - 1)
		assert.Equal(t, []float64{n - 1, 2 * (n - 1), 3 * (n - 1)}, last.Counts)
		assert.Equal(t, 0.5*(n-1), last.Sum)
		assert.Equal(t, float64(3*(n-1)), last.Count)
	}
	// Prometheus's own blocks, decoded chunk by chunk as through its
	// querier, whole and over a range that cuts chunks.
	requireDirectAsQuerier(t, out, snapshot.Options{})
	requireDirectAsQuerier(t, out, snapshot.Options{Start: time.Unix(t0+101*step+7, 0), End: time.Unix(t0+407*step+3, 0)})
	requireTreeUnchanged(t, before, treeHash(t, out))
}

// TestReadTSDBCommittedPromtoolBlock reads the tiny block committed under
// testdata/tsdb-promtool, made by promtool 2.42 (see its README), so that
// Prometheus-written blocks are tested even without promtool.
func TestReadTSDBCommittedPromtoolBlock(t *testing.T) {
	dir := filepath.Join("testdata", "tsdb-promtool")
	before := treeHash(t, dir)
	ev, err := Read(context.Background(), dir, snapshot.Options{})
	require.NoError(t, err)
	require.Empty(t, ev.Problems)
	tg := ev.Target("vllm-0")
	require.NotNil(t, tg)
	require.Len(t, tg.Scrapes, 20)
	h := tg.Family("vllm:time_to_first_token_seconds")
	require.NotNil(t, h)
	require.Len(t, h.Histograms, 1)
	assert.Equal(t, []float64{0.1, 0.5, math.Inf(1)}, h.Histograms[0].Bounds)
	assert.Equal(t, []float64{19, 38, 57}, h.Histograms[0].At(19).Counts)
	w := tg.Family("vllm:kv_cache_usage_perc").Series[0]
	assert.Equal(t, 0.95, w.V[19])
	requireDirectAsQuerier(t, dir, snapshot.Options{})
	requireTreeUnchanged(t, before, treeHash(t, dir))
}
