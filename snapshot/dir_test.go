package snapshot_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	pmodel "github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/snapshot"
	_ "github.com/whyslow/whyslow/snapshot/tsdb" // Read reads the TSDB case of TestProgress
)

// vllmDump is a small V1 dump: one gauge, one counter, one histogram.
func vllmDump(running, preempt float64, ttft [3]float64) string {
	return fmt.Sprintf(`# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} %g
# HELP vllm:num_preemptions_total Cumulative number of preemption from the engine.
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{engine="0",model_name="m"} %g
# TYPE vllm:num_preemptions_created gauge
vllm:num_preemptions_created{engine="0",model_name="m"} 1.7585e+09
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.1",model_name="m"} %g
vllm:time_to_first_token_seconds_bucket{engine="0",le="1.0",model_name="m"} %g
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="m"} %g
vllm:time_to_first_token_seconds_count{engine="0",model_name="m"} %g
vllm:time_to_first_token_seconds_sum{engine="0",model_name="m"} 1.5
`, running, preempt, ttft[0], ttft[1], ttft[2], ttft[2])
}

// dcgmDump is a GPU exporter dump: its GPUs carry the pod they serve.
func dcgmDump(util0, util1 float64) string {
	return fmt.Sprintf(`# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %%).
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-a",Hostname="node-1",namespace="llm",pod="vllm-0",container="vllm"} %g
DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-b",Hostname="node-1",namespace="llm",pod="vllm-1",container="vllm"} %g
`, util0, util1)
}

func writeFiles(t testing.TB, root string, files map[string]string) {
	for name, content := range files {
		p := filepath.Join(root, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

// treeHash hashes names, modes, sizes, mtimes and contents of a tree.
func treeHash(t testing.TB, root string) string {
	h := sha256.New()
	require.NoError(t, filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		fi, err := os.Lstat(path)
		require.NoError(t, err)
		fmt.Fprintf(h, "%s %v %d %d\n", path, fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		if fi.Mode().IsRegular() {
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			h.Write(data)
		}
		return nil
	}))
	return fmt.Sprintf("%x", h.Sum(nil))
}

func TestReadPodDirectories(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"vllm-0/2026-09-22T10-00-00Z.prom":      vllmDump(3, 0, [3]float64{1, 2, 2}),
		"vllm-0/2026-09-22T10-00-15Z.prom":      vllmDump(5, 1, [3]float64{1, 4, 5}),
		"vllm-0/dcgm-2026-09-22T10-00-15Z.prom": dcgmDump(90, 40),
		"vllm-1/2026-09-22T10-00-15Z.prom":      vllmDump(1, 0, [3]float64{0, 1, 1}),
		"vllm-1/README.md":                      "notes",
		".hidden/2026-09-22T10-00-15Z.prom":     "garbage",
	})
	gzipped := gz(t, []byte(vllmDump(7, 2, [3]float64{2, 6, 8})))
	require.NoError(t, os.WriteFile(filepath.Join(root, "vllm-0", "2026-09-22T10-00-30Z.prom.gz"), gzipped, 0o644))
	before := treeHash(t, root)

	e, err := snapshot.Read(context.Background(), []string{root}, snapshot.Options{})
	require.NoError(t, err)
	assert.Equal(t, before, treeHash(t, root), "the input tree is unchanged")

	require.Len(t, e.Targets, 2, summary(e))
	v0 := e.Target("vllm-0")
	require.NotNil(t, v0)
	assert.Equal(t, "pod", v0.NameFrom, "the directory's name, confirmed by the exporter's pod label")
	require.Len(t, v0.Scrapes, 3)
	want := time.Date(2026, 9, 22, 10, 0, 15, 0, time.UTC)
	assert.Equal(t, want, v0.Scrapes[1].Time)
	assert.Equal(t, snapshot.TimeFromFileName, v0.Scrapes[1].TimeFrom)
	assert.Len(t, v0.Scrapes[1].Files, 2, "vLLM's and the GPU exporter's dump form one scrape")

	run := v0.Family("vllm:num_requests_running")
	require.Len(t, run.Series, 1)
	assert.Equal(t, []float64{3, 5, 7}, run.Series[0].V)
	assert.Equal(t, []int64{want.UnixMilli() - 15000, want.UnixMilli(), want.UnixMilli() + 15000}, run.Series[0].T)
	ttft := v0.Family("vllm:time_to_first_token_seconds")
	require.Len(t, ttft.Histograms, 1)
	assert.Equal(t, []float64{2, 5, 8}, ttft.Histograms[0].Count)

	// The GPU exporter's series joined their pods through the pod label.
	gpu := v0.Family("DCGM_FI_DEV_GPU_UTIL")
	require.NotNil(t, gpu)
	require.Len(t, gpu.Series, 1)
	assert.Equal(t, "0", gpu.Series[0].Labels.Get("gpu"))
	gpu1 := e.Target("vllm-1").Family("DCGM_FI_DEV_GPU_UTIL")
	require.NotNil(t, gpu1)
	assert.Equal(t, []float64{40}, gpu1.Series[0].V)

	// README.md was skipped with a warning; .hidden was not read.
	var skipped bool
	for _, p := range e.Problems {
		assert.Equal(t, snapshot.SeverityWarning, p.Severity, "%v", p)
		if strings.Contains(p.Error(), "README.md") {
			skipped = true
		}
		assert.NotContains(t, p.Error(), ".hidden")
	}
	assert.True(t, skipped)
	assert.False(t, e.Partial())
	assert.Len(t, e.Sources, 5)
}

func TestReadFlatDirectory(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"vllm-0_20260922T100000Z.prom":          vllmDump(1, 0, [3]float64{0, 0, 0}),
		"vllm-0_20260922T100015Z.prom":          vllmDump(2, 0, [3]float64{0, 0, 0}),
		"vllm-1_1758535200.prom":                vllmDump(3, 0, [3]float64{0, 0, 0}),
		"vllm-1_1758535215.txt":                 vllmDump(4, 0, [3]float64{0, 0, 0}),
		"2026-09-22T10:00:00+02:00/vllm-2.prom": vllmDump(5, 0, [3]float64{0, 0, 0}),
	})
	e, err := snapshot.Read(context.Background(), []string{root}, snapshot.Options{})
	require.NoError(t, err)
	require.Len(t, e.Targets, 3, summary(e))
	for i, name := range []string{"vllm-0", "vllm-1", "vllm-2"} {
		tg := e.Targets[i]
		assert.Equal(t, name, tg.Name)
		for _, sc := range tg.Scrapes {
			assert.Equal(t, snapshot.TimeFromFileName, sc.TimeFrom)
		}
	}
	assert.Equal(t, time.Date(2026, 9, 22, 10, 0, 15, 0, time.UTC), e.Targets[0].Scrapes[1].Time)
	assert.Equal(t, time.Unix(1758535215, 0).UTC(), e.Targets[1].Scrapes[1].Time)
	assert.Equal(t, time.Date(2026, 9, 22, 8, 0, 0, 0, time.UTC), e.Targets[2].Scrapes[0].Time)
}

func TestReadTimeFallbacks(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"mtime.prom":   "vllm:a 1\n",
		"samples.prom": "vllm:a 1 1758535215000\nvllm:b 2\n",
	})
	mt := time.Date(2026, 9, 22, 11, 0, 0, 0, time.UTC)
	require.NoError(t, os.Chtimes(filepath.Join(root, "mtime.prom"), mt, mt))
	e, err := snapshot.Read(context.Background(), []string{root}, snapshot.Options{})
	require.NoError(t, err)

	m := e.Target("mtime")
	require.NotNil(t, m)
	assert.Equal(t, []snapshot.Scrape{{Time: mt, TimeFrom: snapshot.TimeFromModTime, Files: []string{filepath.Join(root, "mtime.prom")}}}, m.Scrapes)
	var warned bool
	for _, p := range e.Problems {
		if errors.Is(p, snapshot.ErrNoTime) {
			warned = true
			assert.Equal(t, filepath.Join(root, "mtime.prom"), p.File)
			var nt *snapshot.NoTimeError
			require.ErrorAs(t, p, &nt, "the time the scrape was placed at, as data")
			assert.True(t, nt.At.Equal(mt))
			assert.False(t, nt.Live)
			assert.Equal(t, nt.Reason(mt.UTC().Format(time.RFC3339)), nt.Error())
		}
	}
	assert.True(t, warned)

	// Samples without timestamp take the latest sample timestamp.
	s := e.Target("samples")
	require.Len(t, s.Scrapes, 1)
	assert.Equal(t, snapshot.TimeFromSamples, s.Scrapes[0].TimeFrom)
	assert.Equal(t, int64(1758535215000), s.Family("vllm:b").Series[0].T[0])
}

func TestReadErrors(t *testing.T) {
	ctx := context.Background()
	empty := t.TempDir()
	_, err := snapshot.Read(ctx, []string{empty}, snapshot.Options{})
	require.Error(t, err)
	assert.ErrorIs(t, err, snapshot.ErrEmpty)
	assert.Contains(t, err.Error(), empty)

	// One block of a TSDB named instead of its data directory: the error
	// says so and names the parent, and no file of the block is listed
	// as "not a dump".
	block := filepath.Join(t.TempDir(), "01K5NZ0000000000000000000A")
	writeFiles(t, block, map[string]string{"meta.json": "{}", "index": "", "chunks/000001": ""})
	_, err = snapshot.Read(ctx, []string{block}, snapshot.Options{})
	require.Error(t, err)
	assert.ErrorIs(t, err, snapshot.ErrEmpty)
	assert.Contains(t, err.Error(), "one Prometheus TSDB block")
	assert.Contains(t, err.Error(), filepath.Dir(block))
	assert.NotContains(t, err.Error(), "not dumps by name")

	_, err = snapshot.Read(ctx, []string{filepath.Join(empty, "missing.prom")}, snapshot.Options{})
	assert.ErrorIs(t, err, fs.ErrNotExist)

	_, err = snapshot.Read(ctx, nil, snapshot.Options{})
	assert.ErrorIs(t, err, snapshot.ErrEmpty)

	// One bad file among good ones: partial result, no error.
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"vllm-0/2026-09-22T10-00-00Z.prom": vllmDump(1, 0, [3]float64{0, 0, 0}),
		"vllm-0/2026-09-22T10-00-15Z.prom": "<html><body>503</body></html>",
		"vllm-0/2026-09-22T10-00-30Z.prom": vllmDump(1, 0, [3]float64{0, 0, 0})[:300],
	})
	e, err := snapshot.Read(ctx, []string{root}, snapshot.Options{})
	require.NoError(t, err)
	assert.True(t, e.Partial())
	var kinds []string
	for _, p := range e.Problems {
		switch {
		case errors.Is(p, snapshot.ErrNotExposition):
			kinds = append(kinds, "html")
			assert.Equal(t, 1, p.Line)
		case errors.Is(p, snapshot.ErrTruncated):
			kinds = append(kinds, "cut")
			assert.Equal(t, 6, p.Line, "%v", p)
		}
	}
	sort.Strings(kinds)
	assert.Equal(t, []string{"cut", "html"}, kinds)

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	e, err = snapshot.Read(cctx, []string{root}, snapshot.Options{})
	assert.ErrorIs(t, err, context.Canceled)
	assert.Nil(t, e)
}

// Read reports its progress over a dump folder and a TSDB: never
// backwards, and complete at the end.
func TestProgress(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"vllm-0_2026-09-22T10-00-00Z.prom", "vllm-0_2026-09-22T10-00-15Z.prom", "vllm-0_2026-09-22T10-00-30Z.prom"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting 1\n"), 0o644))
	}
	tests := []struct {
		name string
		path string
		what string
	}{
		{"dump folder", dir, "dumps"},
		{"tsdb", "tsdb/testdata/tsdb-promtool", "tsdb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []snapshot.Progress
			_, err := snapshot.Read(context.Background(), []string{tt.path}, snapshot.Options{
				Progress: func(p snapshot.Progress) { got = append(got, p) },
			})
			require.NoError(t, err)
			require.NotEmpty(t, got)
			last := got[len(got)-1]
			assert.Equal(t, last.Total, last.Done, "the last call reports completion: %+v", got)
			assert.Contains(t, last.What, tt.what)
			for i := 1; i < len(got); i++ {
				assert.GreaterOrEqual(t, got[i].Done, got[i-1].Done, "progress never goes back: %+v", got)
			}
		})
	}
}

func TestReadFilters(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"vllm-0/2026-09-22T10-00-00Z.prom": vllmDump(1, 0, [3]float64{0, 0, 0}),
		"vllm-0/2026-09-22T10-00-15Z.prom": vllmDump(2, 0, [3]float64{0, 0, 0}),
		"vllm-0/2026-09-22T10-00-30Z.prom": vllmDump(3, 0, [3]float64{0, 0, 0}),
	})
	opts := snapshot.Options{
		Metrics: []string{"vllm:num_requests_running", "vllm:time_to_first_token_seconds"},
		Start:   time.Date(2026, 9, 22, 10, 0, 10, 0, time.UTC),
		End:     time.Date(2026, 9, 22, 10, 0, 30, 0, time.UTC),
	}
	e, err := snapshot.Read(context.Background(), []string{root}, opts)
	require.NoError(t, err)
	tg := e.Target("vllm-0")
	require.NotNil(t, tg)
	assert.Equal(t, []string{"vllm:num_requests_running", "vllm:time_to_first_token_seconds"}, tg.FamilyNames())
	assert.Equal(t, []float64{2, 3}, tg.Family("vllm:num_requests_running").Series[0].V)
	assert.Len(t, tg.Scrapes, 2)

	// Options.TargetName renames.
	opts = snapshot.Options{TargetName: func(path, name string) string { return "fleet/" + name }}
	e, err = snapshot.Read(context.Background(), []string{root}, opts)
	require.NoError(t, err)
	require.Len(t, e.Targets, 1)
	assert.Equal(t, "fleet/vllm-0", e.Targets[0].Name)
	assert.Equal(t, "override", e.Targets[0].NameFrom)
}

// federateDump is what Prometheus's /federate writes: untyped families,
// explicit timestamps, job/instance/pod labels, several targets.
const federateDump = `# TYPE vllm:num_requests_running untyped
vllm:num_requests_running{engine="0",instance="10.0.0.1:8000",job="vllm",model_name="m",pod="vllm-0"} 3 1758535200000
vllm:num_requests_running{engine="0",instance="10.0.0.2:8000",job="vllm",model_name="m",pod="vllm-1"} 4 1758535200000
vllm:num_requests_running{engine="0",instance="10.0.0.1:8000",job="vllm",model_name="m",pod="vllm-0"} 5 1758535215000
# TYPE vllm:request_success_total untyped
vllm:request_success_total{engine="0",finished_reason="stop",instance="10.0.0.1:8000",job="vllm",model_name="m",pod="vllm-0"} 10 1758535200000
vllm:request_success_total{engine="0",finished_reason="stop",instance="10.0.0.3:8000",job="vllm",model_name="m"} 1 1758535200000
# TYPE vllm:e2e_request_latency_seconds_bucket untyped
vllm:e2e_request_latency_seconds_bucket{engine="0",instance="10.0.0.1:8000",job="vllm",le="1",model_name="m",pod="vllm-0"} 4 1758535200000
vllm:e2e_request_latency_seconds_bucket{engine="0",instance="10.0.0.1:8000",job="vllm",le="+Inf",model_name="m",pod="vllm-0"} 10 1758535200000
vllm:e2e_request_latency_seconds_bucket{engine="0",instance="10.0.0.1:8000",job="vllm",le="1",model_name="m",pod="vllm-0"} 5 1758535215000
vllm:e2e_request_latency_seconds_bucket{engine="0",instance="10.0.0.1:8000",job="vllm",le="+Inf",model_name="m",pod="vllm-0"} 12 1758535215000
# TYPE vllm:e2e_request_latency_seconds_count untyped
vllm:e2e_request_latency_seconds_count{engine="0",instance="10.0.0.1:8000",job="vllm",model_name="m",pod="vllm-0"} 10 1758535200000
vllm:e2e_request_latency_seconds_count{engine="0",instance="10.0.0.1:8000",job="vllm",model_name="m",pod="vllm-0"} 12 1758535215000
# TYPE vllm:e2e_request_latency_seconds_sum untyped
vllm:e2e_request_latency_seconds_sum{engine="0",instance="10.0.0.1:8000",job="vllm",model_name="m",pod="vllm-0"} 20 1758535200000
vllm:e2e_request_latency_seconds_sum{engine="0",instance="10.0.0.1:8000",job="vllm",model_name="m",pod="vllm-0"} 25 1758535215000
vllm:e2e_request_latency_seconds_sum{engine="0",instance="10.0.0.1:8000",job="vllm",model_name="m",pod="vllm-0"} 26 1758535215000
`

func TestFederate(t *testing.T) {
	e, err := snapshot.ParseDump([]byte(federateDump), "federate.prom", snapshot.Options{})
	require.NoError(t, err)
	require.Len(t, e.Targets, 3, summary(e))
	assert.Equal(t, []string{"10.0.0.3:8000", "vllm-0", "vllm-1"}, []string{e.Targets[0].Name, e.Targets[1].Name, e.Targets[2].Name})
	assert.Equal(t, "instance", e.Targets[0].NameFrom)
	v0 := e.Target("vllm-0")
	assert.Equal(t, "pod", v0.NameFrom)
	require.Len(t, v0.Scrapes, 2)
	assert.Equal(t, snapshot.TimeFromSamples, v0.Scrapes[0].TimeFrom)
	assert.Equal(t, []string{"vllm:e2e_request_latency_seconds", "vllm:num_requests_running", "vllm:request_success_total"}, v0.FamilyNames())

	h := v0.Family("vllm:e2e_request_latency_seconds")
	assert.Equal(t, pmodel.MetricTypeHistogram, h.Type)
	assert.True(t, h.TypeInferred)
	require.Len(t, h.Histograms, 1)
	assert.Equal(t, "n=12 sum=25 mean=2.083 {1:5 +Inf:12}", h.Histograms[0].At(1).String())
	c := v0.Family("vllm:request_success_total")
	assert.Equal(t, pmodel.MetricTypeCounter, c.Type)
	assert.True(t, c.TypeInferred)
	g := v0.Family("vllm:num_requests_running")
	assert.Equal(t, pmodel.MetricTypeUnknown, g.Type)
	assert.False(t, g.TypeInferred, "declared untyped")
	assert.Equal(t, []float64{3, 5}, g.Series[0].V)

	// Only the repeat of _sum at the same timestamp is a duplicate.
	var dups int
	for _, p := range e.Problems {
		if errors.Is(p, snapshot.ErrDuplicateSeries) {
			dups++
			assert.Equal(t, 19, p.Line)
		}
	}
	assert.Equal(t, 1, dups, "%v", e.Problems)
}

func TestMerge(t *testing.T) {
	a, err := snapshot.ParseDump([]byte(vllmDump(1, 0, [3]float64{0, 1, 1})), "vllm-0/1758535200.prom", snapshot.Options{})
	require.NoError(t, err)
	b, err := snapshot.ParseDump([]byte(vllmDump(2, 1, [3]float64{1, 2, 3})), "vllm-0/1758535215.prom", snapshot.Options{})
	require.NoError(t, err)
	c, err := snapshot.ParseDump([]byte(dcgmDump(50, 60)), "vllm-0/dcgm-1758535215.prom", snapshot.Options{})
	require.NoError(t, err)
	dup, err := snapshot.ParseDump([]byte(vllmDump(9, 9, [3]float64{1, 2, 3})), "copy/vllm-0/1758535215.prom", snapshot.Options{})
	require.NoError(t, err)

	m := snapshot.Merge(b, c, a, dup) // out of time order on purpose
	require.Len(t, m.Targets, 2)
	v0 := m.Target("vllm-0")
	require.Len(t, v0.Scrapes, 2)
	assert.ElementsMatch(t, []string{"vllm-0/1758535215.prom", "vllm-0/dcgm-1758535215.prom", "copy/vllm-0/1758535215.prom"}, v0.Scrapes[1].Files)
	run := v0.Family("vllm:num_requests_running").Series[0]
	assert.Equal(t, []float64{1, 2}, run.V, "sorted by time, first of the duplicates kept")
	h := v0.Family("vllm:time_to_first_token_seconds").Histograms
	require.Len(t, h, 1)
	assert.Equal(t, []float64{1, 3}, h[0].Count)
	var dups int
	for _, p := range m.Problems {
		if errors.Is(p, snapshot.ErrDuplicateSeries) {
			dups++
		}
	}
	assert.Equal(t, 4, dups, "one per series repeated: two gauges, a counter, a histogram")
	// The inputs are unchanged.
	assert.Equal(t, []float64{2}, b.Targets[0].Family("vllm:num_requests_running").Series[0].V)
}

// A dump with HELP and TYPE lines and no sample, among good dumps, is a
// lost scrape: an error-severity problem naming it (so the evidence is
// partial), while it still names its target. A syntax error in such a
// dump is reported alone.
func TestDumpWithoutSamples(t *testing.T) {
	declOnly := "# HELP vllm:num_requests_running Number of requests.\n# TYPE vllm:num_requests_running gauge\n" +
		"# TYPE vllm:num_preemptions_total counter\n"
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"vllm-0/2026-09-22T10-00-00Z.prom": vllmDump(1, 0, [3]float64{0, 0, 0}),
		"vllm-0/2026-09-22T10-00-15Z.prom": vllmDump(2, 0, [3]float64{0, 0, 0}),
		"vllm-1/2026-09-22T10-00-00Z.prom": declOnly,
		"vllm-2/2026-09-22T10-00-00Z.prom": declOnly + "vllm:num_requests_running{ 1\n",
	})
	e, err := snapshot.Read(context.Background(), []string{root}, snapshot.Options{})
	require.NoError(t, err)
	assert.True(t, e.Partial())
	empty := e.ProblemsOf(snapshot.ErrEmpty)
	require.Len(t, empty, 1, "problems: %v", e.Problems)
	assert.Equal(t, filepath.Join(root, "vllm-1", "2026-09-22T10-00-00Z.prom"), empty[0].File)
	assert.Equal(t, snapshot.SeverityError, empty[0].Severity)
	assert.Contains(t, empty[0].Error(), "no samples, only the HELP and TYPE lines of 2 families")
	assert.NotNil(t, e.Target("vllm-1"), "a dump without samples still names its target")
	assert.Len(t, e.ProblemsOf(snapshot.ErrSyntax), 1, "vllm-2's syntax error, alone")
}
