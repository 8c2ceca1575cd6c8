package snapshot_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"math"
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

	"github.com/whyslow/whyslow/internal/golden"
)

// summary prints what a test needs to see of an Evidence: targets,
// families with type and counts, and problems.
func summary(e *snapshot.Evidence) string {
	var sb strings.Builder
	for _, t := range e.Targets {
		fmt.Fprintf(&sb, "target %s (from %s): %d scrapes\n", t.Name, t.NameFrom, len(t.Scrapes))
		for _, name := range t.FamilyNames() {
			f := t.Families[name]
			typ := string(f.Type)
			if f.TypeInferred {
				typ += " (inferred)"
			}
			fmt.Fprintf(&sb, "  %s %s: %d series, %d histograms", name, typ, len(f.Series), len(f.Histograms))
			if len(f.Histograms) > 0 {
				var nb []string
				for _, h := range f.Histograms {
					nb = append(nb, fmt.Sprint(len(h.Bounds)))
				}
				fmt.Fprintf(&sb, " (buckets %s)", strings.Join(nb, ","))
			}
			if f.Unit != "" {
				fmt.Fprintf(&sb, " unit %s", f.Unit)
			}
			if f.Help != "" {
				sb.WriteString(" +help")
			}
			sb.WriteByte('\n')
		}
	}
	for _, p := range e.Problems {
		fmt.Fprintf(&sb, "%s\n", p.String())
	}
	return sb.String()
}

func realFiles(t testing.TB) []string {
	files, err := filepath.Glob("../testdata/realdata/vllm/*.prom")
	require.NoError(t, err)
	require.Len(t, files, 8, "the eight captures of ../shared/realdata/vllm")
	return files
}

// TestRealCaptures parses every real capture and compares a summary with
// its golden file; run with -update to rewrite them.
func TestRealCaptures(t *testing.T) {
	for _, path := range realFiles(t) {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			e, err := snapshot.ParseDump(data, name, snapshot.Options{})
			require.NoError(t, err)
			require.Len(t, e.Targets, 1)
			got := summary(e)
			golden.Check(t, filepath.Join("testdata", "golden", strings.TrimSuffix(name, ".prom")+".txt"), []byte(got))
			if *golden.Update {
				return
			}

			// Every valid histogram validates; only the expected problems.
			tg := e.Targets[0]
			for _, f := range tg.Families {
				for _, h := range f.Histograms {
					for i := range h.Len() {
						if err := h.At(i).Validate(); err != nil {
							assert.Equal(t, "vllm:iteration_tokens_total", f.Name, "only aibrix's cut histogram is invalid: %v", err)
						}
					}
				}
			}
			for _, p := range e.Problems {
				assert.Equal(t, name, p.File)
				switch {
				case errors.Is(p, snapshot.ErrNoTime):
				case errors.Is(p, snapshot.ErrInvalidHistogram):
					assert.Contains(t, name, "aibrix")
					assert.Equal(t, "vllm:iteration_tokens_total", p.Family)
					assert.Equal(t, snapshot.SeverityError, p.Severity)
					assert.Positive(t, p.Line)
				default:
					t.Errorf("unexpected problem %v", p)
				}
			}
		})
	}
}

// TestRealCaptureDetails checks facts stated in ../testdata/realdata/vllm/SOURCES.md.
func TestRealCaptureDetails(t *testing.T) {
	read := func(name string) *snapshot.Target {
		data, err := os.ReadFile(filepath.Join("../testdata/realdata/vllm", name))
		require.NoError(t, err)
		e, err := snapshot.ParseDump(data, name, snapshot.Options{})
		require.NoError(t, err)
		return e.Targets[0]
	}

	lora := read("lora-multitenancy-experiment-0.30.0.prom")
	// loraFamily returns the named family of lora, of type typ.
	loraFamily := func(name string, typ pmodel.MetricType) *snapshot.Family {
		f := lora.Family(name)
		require.NotNil(t, f, name)
		assert.Equal(t, typ, f.Type, name)
		return f
	}
	itl := loraFamily("vllm:inter_token_latency_seconds", pmodel.MetricTypeHistogram)
	require.Len(t, itl.Histograms, 1)
	h := itl.Histograms[0].At(0)
	assert.Equal(t, 1.38924e+06, h.Count, "e-notation counts")
	assert.Equal(t, "0", itl.Histograms[0].Labels.Get("engine"), "engine label kept")
	// Counters keep _total; text 0.0.4 X_created families stay gauges.
	loraFamily("vllm:request_success_total", pmodel.MetricTypeCounter)
	loraFamily("vllm:request_success_created", pmodel.MetricTypeGauge)
	// A histogram despite the _total suffix.
	loraFamily("vllm:iteration_tokens_total", pmodel.MetricTypeHistogram)
	// Summaries with only _sum and _count.
	sz := loraFamily("http_request_size_bytes", pmodel.MetricTypeSummary)
	var names []string
	for _, s := range sz.Series {
		names = append(names, s.Name)
	}
	assert.Subset(t, names, []string{"http_request_size_bytes_count", "http_request_size_bytes_sum"})
	info := lora.Family("vllm:cache_config_info")
	require.NotNil(t, info)
	require.Len(t, info.Series, 1)
	assert.Equal(t, "True", info.Series[0].Labels.Get("_block_size_resolved"))
	assert.Equal(t, "[]", info.Series[0].Labels.Get("kv_cache_dtype_skip_layers"))

	// _sum first, then buckets, then _count (V0).
	comp := read("vllm_composer-test-fixture-unknown.prom")
	ttft := comp.Family("vllm:time_to_first_token_seconds")
	require.NotNil(t, ttft)
	require.Len(t, ttft.Histograms, 1)
	assert.Equal(t, 8499.0, ttft.Histograms[0].At(0).Count)
	assert.NoError(t, ttft.Histograms[0].At(0).Validate())
	hit := comp.Family("vllm:gpu_prefix_cache_hit_rate")
	require.NotNil(t, hit)
	assert.Equal(t, -1.0, hit.Series[0].V[0], "negative gauges kept")

	// HELP/TYPE without samples: the family exists, empty.
	idle := read("hardware-aware-router-unknown.prom")
	http := idle.Family("http_requests_total")
	require.NotNil(t, http)
	assert.Empty(t, http.Series)
	assert.NotEmpty(t, http.Help)

	// Float-noise le values.
	sg := read("sglang-production-metrics-docs-unknown.prom")
	fl := sg.Family("sglang:func_latency_seconds")
	require.NotNil(t, fl)
	require.Len(t, fl.Histograms, 1)
	assert.Contains(t, fl.Histograms[0].Bounds, 0.07500000000000001)
}

// problemCase is a bad input and what must be said about it.
type problemCase struct {
	name     string
	file     string
	data     []byte
	opts     snapshot.Options
	sentinel error
	sev      snapshot.Severity
	line     int    // 0: not checked
	family   string // "" : not checked
	contains string
	fatal    bool // nothing usable: ParseDump returns an error
}

func gz(t testing.TB, data []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, err := w.Write(data)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return buf.Bytes()
}

func TestBadInput(t *testing.T) {
	hist := func(lines ...string) []byte {
		return []byte("# TYPE vllm:x histogram\n" + strings.Join(lines, "\n") + "\n")
	}
	many := func(n int) []byte {
		var sb strings.Builder
		for i := range n {
			fmt.Fprintf(&sb, "vllm:g{i=\"%d\"} 1\n", i)
		}
		return []byte(sb.String())
	}
	bomb := gz(t, bytes.Repeat([]byte("vllm:a 1\n"), 1<<18)) // 2.3 MB of text, a few KB gzipped
	cut := gz(t, many(2000))
	cut = cut[:len(cut)/2]

	cases := []problemCase{
		{name: "cut mid-line", data: []byte("vllm:a 1\nvllm:b{x=\"1"), sentinel: snapshot.ErrTruncated, line: 2, contains: "middle of a line", sev: snapshot.SeverityError},
		{name: "cut mid-line no newline at all", data: []byte("vllm:a 1\n# TYPE vllm:b gauge\nvllm:b{x"), sentinel: snapshot.ErrTruncated, line: 3, sev: snapshot.SeverityError},
		{name: "syntax error names the line", data: []byte("vllm:a 1\n\n# a comment\n\nbad{a=\"1\" 3\nvllm:c 2\n"), sentinel: snapshot.ErrSyntax, line: 5, contains: "expected label name", sev: snapshot.SeverityError},
		{name: "syntax error on line 1", data: []byte("not a metric line at all\n"), sentinel: snapshot.ErrSyntax, line: 1, fatal: true, sev: snapshot.SeverityError},
		{name: "bad value", data: []byte("vllm:a 1\nvllm:b 1x\n"), sentinel: snapshot.ErrSyntax, line: 2, contains: "1x", sev: snapshot.SeverityError},
		{name: "binary garbage", data: []byte("\x00\x01\x02\xff\xfe binary"), sentinel: snapshot.ErrNotExposition, line: 1, fatal: true, contains: "binary", sev: snapshot.SeverityError},
		{name: "binary after good lines", data: []byte("vllm:a 1\nvllm:b 2\n\x7fELF\x00\x00\x01"), sentinel: snapshot.ErrNotExposition, line: 3, contains: "binary", sev: snapshot.SeverityError},
		{name: "HTML error page", file: "vllm-0.prom", data: []byte("\n<!DOCTYPE html>\n<html><body>502 Bad Gateway</body></html>\n"), sentinel: snapshot.ErrNotExposition, line: 2, fatal: true, contains: "HTML page", sev: snapshot.SeverityError},
		{name: "empty file", data: []byte{}, sentinel: snapshot.ErrEmpty, fatal: true, sev: snapshot.SeverityError},
		{name: "comments only", data: []byte("# nothing here\n"), sentinel: snapshot.ErrEmpty, fatal: true, sev: snapshot.SeverityError},
		{name: "duplicate series", data: []byte("vllm:a{x=\"1\"} 1\nvllm:b 1\nvllm:a{x=\"1\"} 2\n"), sentinel: snapshot.ErrDuplicateSeries, line: 3, contains: `vllm:a{x="1"}`, sev: snapshot.SeverityWarning},
		{name: "duplicate bucket", data: hist(`vllm:x_bucket{le="1"} 1`, `vllm:x_bucket{le="+Inf"} 2`, `vllm:x_bucket{le="1.0"} 1`, `vllm:x_count 2`), sentinel: snapshot.ErrDuplicateSeries, line: 4, contains: "vllm:x repeated", sev: snapshot.SeverityWarning},
		{name: "histogram without +Inf", data: hist(`vllm:x_sum 3`, `vllm:x_bucket{le="1"} 1`, `vllm:x_bucket{le="2"} 2`), sentinel: snapshot.ErrInvalidHistogram, line: 2, family: "vllm:x", contains: "no +Inf bucket", sev: snapshot.SeverityError},
		{name: "histogram buckets out of order", data: hist(`vllm:x_bucket{le="2"} 2`, `vllm:x_bucket{le="1"} 1`, `vllm:x_bucket{le="+Inf"} 2`, `vllm:x_count 2`), sentinel: snapshot.ErrUnorderedBuckets, line: 2, family: "vllm:x", contains: "not in ascending order of le; sorted", sev: snapshot.SeverityWarning},
		{name: "histogram count mismatch", data: hist(`vllm:x_bucket{le="1"} 1`, `vllm:x_bucket{le="+Inf"} 2`, `vllm:x_count 5`), sentinel: snapshot.ErrInvalidHistogram, family: "vllm:x", contains: "count is 5", sev: snapshot.SeverityError},
		{name: "histogram counts decrease", data: hist(`vllm:x_bucket{le="1"} 3`, `vllm:x_bucket{le="+Inf"} 2`), sentinel: snapshot.ErrInvalidHistogram, family: "vllm:x", contains: "decrease", sev: snapshot.SeverityError},
		{name: "le not a number", data: hist(`vllm:x_bucket{le="one"} 1`, `vllm:x_bucket{le="+Inf"} 2`), sentinel: snapshot.ErrSyntax, line: 2, contains: `le="one"`, sev: snapshot.SeverityError},
		{name: "megabyte label value", data: []byte("vllm:a 1\nvllm:b{x=\"" + strings.Repeat("y", 1<<20) + "\"} 1\n"), sentinel: snapshot.ErrLimit, line: 2, contains: "MaxLabelBytes", sev: snapshot.SeverityError},
		{name: "cardinality bomb", data: many(100), opts: snapshot.Options{Limits: snapshot.Limits{MaxSeriesPerScrape: 10}}, sentinel: snapshot.ErrLimit, line: 11, contains: "the file is left out", sev: snapshot.SeverityError, fatal: true},
		{name: "cardinality bomb kept", data: many(100), opts: snapshot.Options{KeepCutFiles: true, Limits: snapshot.Limits{MaxSeriesPerScrape: 10}}, sentinel: snapshot.ErrLimit, line: 11, contains: "MaxSeriesPerScrape", sev: snapshot.SeverityError},
		{name: "too big", data: many(100), opts: snapshot.Options{Limits: snapshot.Limits{MaxBytesPerScrape: 100}}, sentinel: snapshot.ErrLimit, fatal: true, contains: "MaxBytesPerScrape", sev: snapshot.SeverityError},
		{name: "gzip bomb", file: "bomb.prom.gz", data: bomb, opts: snapshot.Options{Limits: snapshot.Limits{MaxBytesPerScrape: 1 << 20}}, sentinel: snapshot.ErrLimit, fatal: true, contains: "gzip", sev: snapshot.SeverityError},
		{name: "gzip cut short", file: "cut.prom.gz", data: cut, sentinel: snapshot.ErrTruncated, contains: "gzip stream cut", sev: snapshot.SeverityError},
		{name: "OpenMetrics without EOF", file: "x.om", data: []byte("# TYPE vllm:a gauge\nvllm:a 1\n"), sentinel: snapshot.ErrTruncated, line: 2, contains: "# EOF", sev: snapshot.SeverityError},
		{name: "no time", data: []byte("vllm:a 1\n"), sentinel: snapshot.ErrNoTime, sev: snapshot.SeverityWarning},
		{name: "native histogram type conflict across targets is not a problem", data: []byte("vllm:a{pod=\"p1\"} 1\nvllm:a{pod=\"p2\"} 2\n"), sentinel: snapshot.ErrNoTime, sev: snapshot.SeverityWarning},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			file := c.file
			if file == "" {
				file = "pod-a_2026-09-22T10-00-15Z.prom"
				if c.sentinel == snapshot.ErrNoTime {
					file = "dump.prom"
				}
			}
			e, err := snapshot.ParseDump(c.data, file, c.opts)
			if c.fatal {
				require.Error(t, err)
				assert.ErrorIs(t, err, c.sentinel)
				assert.Contains(t, err.Error(), file, "the error names the file")
			} else {
				require.NoError(t, err)
			}
			require.NotNil(t, e)
			var found *snapshot.Problem
			for i, p := range e.Problems {
				assert.Equal(t, file, p.File, "every problem names the file")
				if found == nil && errors.Is(p, c.sentinel) {
					found = &e.Problems[i]
				}
			}
			require.NotNil(t, found, "no %v problem in %v", c.sentinel, e.Problems)
			assert.Equal(t, c.sev, found.Severity, "%v", found)
			if c.line > 0 {
				assert.Equal(t, c.line, found.Line, "%v", found)
				assert.Contains(t, found.Error(), fmt.Sprintf("%s:%d: ", file, c.line))
			}
			if c.family != "" {
				assert.Equal(t, c.family, found.Family)
			}
			if c.contains != "" {
				assert.Contains(t, found.Error(), c.contains)
			}
			assert.Equal(t, c.sev == snapshot.SeverityError, e.Partial())
			if se := new(snapshot.SyntaxError); errors.As(found, &se) {
				assert.Equal(t, file, se.File)
				assert.Equal(t, found.Line, se.Line)
				assert.ErrorIs(t, se, c.sentinel)
			}
		})
	}
}

// TestPartialKeepsGoodPart: what precedes a syntax error is kept.
func TestPartialKeepsGoodPart(t *testing.T) {
	e, err := snapshot.ParseDump([]byte("vllm:a 1\nvllm:b 2\nvllm:c{x=\"1\" 3\n"), "p_1758535215.prom", snapshot.Options{})
	require.NoError(t, err)
	require.True(t, e.Partial())
	tg := e.Target("p")
	require.NotNil(t, tg)
	assert.Equal(t, []string{"vllm:a", "vllm:b"}, tg.FamilyNames())
	assert.Equal(t, int64(1758535215000), tg.Families["vllm:a"].Series[0].T[0])
}

// NaN and ±Inf in gauges and counters, and negative counters, are
// impossible values: left out of the evidence with one warning per file
// naming the first (file and line); the rest of the dump is read. A
// negative untyped gauge is possible; a negative value of a series in
// Options.NonNegative is not.
func TestSpecialValues(t *testing.T) {
	dump := "vllm:a NaN\nvllm:b +Inf\nvllm:c -Inf\nvllm:d -0.5e-3\n" +
		"# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting 3\n" +
		"# TYPE vllm:x_total counter\nvllm:x_total -1\n" +
		"# TYPE vllm:s summary\nvllm:s{quantile=\"0.5\"} NaN\nvllm:s_sum 0\nvllm:s_count 0\n"
	e, err := snapshot.ParseDump([]byte(dump), "p_1758535215.prom", snapshot.Options{})
	require.NoError(t, err)
	require.Len(t, e.Problems, 1, "%v", e.Problems)
	p := e.Problems[0]
	assert.ErrorIs(t, p, snapshot.ErrBadValue)
	assert.Equal(t, snapshot.SeverityWarning, p.Severity)
	assert.Equal(t, 1, p.Line)
	assert.Equal(t, int64(0), p.Offset)
	assert.Contains(t, p.Error(), `p_1758535215.prom:1: impossible sample value: "vllm:a" = NaN`)
	assert.Contains(t, p.Error(), "and 3 more samples")
	assert.False(t, e.Partial())
	tg := e.Targets[0]
	for _, name := range []string{"vllm:a", "vllm:b", "vllm:c", "vllm:x_total"} {
		if f := tg.Family(name); f != nil {
			assert.Empty(t, f.Series, name) // declared by its TYPE line, without samples
		}
	}
	assert.Equal(t, -0.5e-3, tg.Family("vllm:d").Series[0].V[0])
	assert.Equal(t, []float64{3}, tg.Family("vllm:num_requests_waiting").Series[0].V)
	assert.True(t, math.IsNaN(tg.Family("vllm:s").Series[0].V[0]), "a summary quantile over nothing is NaN")

	e, err = snapshot.ParseDump([]byte("vllm:num_requests_waiting -2\nvllm:num_requests_running 1\n"), "p_1758535215.prom",
		snapshot.Options{NonNegative: []string{"vllm:num_requests_waiting", "vllm:num_requests_running"}})
	require.NoError(t, err)
	require.Len(t, e.Problems, 1)
	assert.Contains(t, e.Problems[0].Error(), ":1: impossible sample value: \"vllm:num_requests_waiting\" = -2: this series cannot be negative")
	assert.Nil(t, e.Targets[0].Family("vllm:num_requests_waiting"))
}

func TestOpenMetrics(t *testing.T) {
	om := `# HELP vllm:num_preemptions Preemptions.
# TYPE vllm:num_preemptions counter
vllm:num_preemptions_total{engine="0",model_name="m"} 7 # {trace_id="a"} 1
vllm:num_preemptions_created{engine="0",model_name="m"} 1758535000.5
# TYPE vllm:e2e_request_latency_seconds histogram
# UNIT vllm:e2e_request_latency_seconds seconds
vllm:e2e_request_latency_seconds_bucket{le="1.0",model_name="m"} 1 # {trace_id="b"} 0.5 1758535100.0
vllm:e2e_request_latency_seconds_bucket{le="+Inf",model_name="m"} 3 # {trace_id="c"} 9
vllm:e2e_request_latency_seconds_count{model_name="m"} 3
vllm:e2e_request_latency_seconds_sum{model_name="m"} 12.5
vllm:e2e_request_latency_seconds_created{model_name="m"} 1758535000
# TYPE vllm:cache_config info
vllm:cache_config_info{block_size="16"} 1
# EOF
`
	for _, name := range []string{"p_1758535215.prom", "p_1758535215.om"} {
		e, err := snapshot.ParseDump([]byte(om), name, snapshot.Options{})
		require.NoError(t, err)
		assert.Empty(t, e.Problems)
		tg := e.Targets[0]
		assert.Equal(t, []string{"vllm:cache_config_info", "vllm:e2e_request_latency_seconds", "vllm:num_preemptions_total"}, tg.FamilyNames())
		c := tg.Family("vllm:num_preemptions_total")
		assert.Equal(t, pmodel.MetricTypeCounter, c.Type)
		assert.Equal(t, "Preemptions.", c.Help)
		require.Len(t, c.Series, 1)
		assert.Equal(t, []int64{1758535000500}, c.Series[0].StartT)
		assert.Equal(t, []float64{7}, c.Series[0].V)
		h := tg.Family("vllm:e2e_request_latency_seconds")
		assert.Equal(t, "seconds", h.Unit)
		require.Len(t, h.Histograms, 1)
		assert.Equal(t, "n=3 sum=12.5 mean=4.167 {1:1 +Inf:3}", h.Histograms[0].At(0).String())
		assert.Equal(t, pmodel.MetricTypeInfo, tg.Family("vllm:cache_config_info").Type)
	}
	// Forcing text on OpenMetrics with exemplars is a syntax error on line 3.
	e, err := snapshot.ParseDump([]byte(om), "p.prom", snapshot.Options{Format: "text"})
	require.NoError(t, err)
	require.NotEmpty(t, e.Problems)
	assert.ErrorIs(t, e.Problems[0], snapshot.ErrSyntax)
	assert.Equal(t, 3, e.Problems[0].Line)

	_, err = snapshot.ParseDump([]byte(om), "p.prom", snapshot.Options{Format: "json"})
	assert.ErrorContains(t, err, "Format")
}

// TestHistogramAnyOrder: parts in any order and le spelled in any way
// assemble into one histogram.
func TestHistogramAnyOrder(t *testing.T) {
	dump := `# TYPE vllm:ttft histogram
vllm:ttft_count{m="a"} 4
vllm:ttft_bucket{le="+Inf",m="a"} 4
vllm:ttft_sum{m="a"} 2.5
vllm:ttft_bucket{m="a",le="0.5"} 1
vllm:ttft_bucket{le="1e0",m="a"} 3
`
	e, err := snapshot.ParseDump([]byte(dump), "p_1758535215.prom", snapshot.Options{})
	require.NoError(t, err)
	f := e.Targets[0].Family("vllm:ttft")
	require.Len(t, f.Histograms, 1)
	h := f.Histograms[0]
	assert.Equal(t, []float64{0.5, 1, math.Inf(1)}, h.Bounds, "sorted by le, as PromQL sorts")
	assert.Equal(t, []float64{1, 3, 4}, h.Counts[:3])
	require.NoError(t, h.At(0).Validate())
	require.Len(t, e.Problems, 1, "a declared histogram out of order is worth a warning: %v", e.Problems)
	assert.Equal(t, snapshot.SeverityWarning, e.Problems[0].Severity)
	assert.ErrorIs(t, e.Problems[0], snapshot.ErrUnorderedBuckets)
	assert.Contains(t, e.Problems[0].Error(), "p_1758535215.prom:2: ")
	assert.Contains(t, e.Problems[0].Error(), "not in ascending order of le")

	// A /federate dump (untyped) orders series by label text, so le="+Inf"
	// comes first: sorted silently.
	fed := `vllm:ttft_bucket{le="+Inf",pod="p"} 4 1758535215000
vllm:ttft_bucket{le="0.5",pod="p"} 1 1758535215000
vllm:ttft_bucket{le="1.0",pod="p"} 3 1758535215000
vllm:ttft_count{pod="p"} 4 1758535215000
vllm:ttft_sum{pod="p"} 2.5 1758535215000
`
	e, err = snapshot.ParseDump([]byte(fed), "federate.txt", snapshot.Options{})
	require.NoError(t, err)
	assert.Empty(t, e.Problems)
	fh := e.Targets[0].Family("vllm:ttft")
	require.Len(t, fh.Histograms, 1)
	assert.Equal(t, []float64{0.5, 1, math.Inf(1)}, fh.Histograms[0].Bounds)
	assert.Equal(t, 0.75, fh.Histograms[0].At(0).Quantile(0.5).Value)

	// The same histogram in order, with le="1", "1.0" and "1e0" across
	// three scrapes of one target: one HistogramSeries.
	b := snapshot.NewBuilder(snapshot.Options{})
	for i, le := range []string{"1", "1.0", "1e0"} {
		d := fmt.Sprintf("# TYPE vllm:ttft histogram\nvllm:ttft_bucket{le=%q} %d\nvllm:ttft_bucket{le=\"+Inf\"} %d\nvllm:ttft_sum %d\nvllm:ttft_count %d\n", le, i, i+1, i, i+1)
		require.NoError(t, b.AddDump(fmt.Sprintf("p_%d.prom", 1758535215+15*i), []byte(d), time.Time{}))
	}
	e = b.Evidence()
	assert.Empty(t, e.Problems)
	f = e.Targets[0].Family("vllm:ttft")
	require.Len(t, f.Histograms, 1)
	assert.Equal(t, 3, f.Histograms[0].Len())
	assert.Equal(t, []float64{0, 1, 1, 2, 2, 3}, f.Histograms[0].Counts)
	names := append([]string(nil), e.Targets[0].FamilyNames()...)
	sort.Strings(names)
	assert.Equal(t, []string{"vllm:ttft"}, names)
}
