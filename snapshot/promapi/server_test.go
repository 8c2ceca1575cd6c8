package promapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/diagnose"
	"github.com/whyslow/whyslow/internal/fleetsim"
	"github.com/whyslow/whyslow/internal/fleetsim/simtsdb"
	"github.com/whyslow/whyslow/internal/jsondiff"
	"github.com/whyslow/whyslow/internal/promserver"
	"github.com/whyslow/whyslow/report"
	"github.com/whyslow/whyslow/snapshot"
	"github.com/whyslow/whyslow/snapshot/promapi"
	_ "github.com/whyslow/whyslow/snapshot/tsdb"
)

// startVictoriaMetrics imports the fleet as text exposition with
// timestamps and checks that no row was ignored.
func startVictoriaMetrics(t *testing.T, fleet *fleetsim.Fleet) string {
	bin := promserver.Binary(t, "victoria-metrics")
	addr := promserver.FreeAddr(t)
	promserver.Start(t, "http://"+addr+"/health", bin,
		"-storageDataPath="+filepath.Join(t.TempDir(), "vm"), "-retentionPeriod=100y", "-httpListenAddr="+addr,
		"-search.disableCache") // backfilled data: no response cache
	base := "http://" + addr
	var buf bytes.Buffer
	require.NoError(t, fleet.WriteFederate(&buf))
	want := federateSeries(buf.String())
	resp, err := http.Post(base+"/api/v1/import/prometheus", "text/plain", &buf)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Less(t, resp.StatusCode, 300, "import: %s", body)
	resp, err = http.Get(base + "/internal/force_flush")
	require.NoError(t, err)
	resp.Body.Close()
	// New series become searchable some time after the flush, the later
	// the busier the machine: wait until every one is (the count may
	// exceed the dump's, as a series is counted once a day).
	deadline := time.Now().Add(60 * time.Second)
	for n := -1; n < want; time.Sleep(200 * time.Millisecond) {
		require.True(t, time.Now().Before(deadline), "VictoriaMetrics holds %d of the %d series imported", n, want)
		resp, err = http.Get(base + "/api/v1/series/count")
		require.NoError(t, err)
		var count struct{ Data []int }
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&count))
		resp.Body.Close()
		if len(count.Data) == 1 {
			n = count.Data[0]
		}
	}
	resp, err = http.Get(base + "/metrics")
	require.NoError(t, err)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	ignored := regexp.MustCompile(`(?m)^vm_rows_ignored_total\{[^}]*\} (\S+)$`).FindAllSubmatch(body, -1)
	require.NotEmpty(t, ignored, "vm_rows_ignored_total is exposed")
	for _, m := range ignored {
		assert.Equal(t, "0", string(m[1]), "rows ignored by VictoriaMetrics: %s", m[0])
	}
	return base
}

// federateSeries counts the distinct series of a federate dump, whose
// sample lines end in a value and a timestamp.
func federateSeries(dump string) int {
	seen := map[string]bool{}
	for _, line := range strings.Split(dump, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		for range 2 {
			line = line[:max(strings.LastIndexByte(line, ' '), 0)]
		}
		seen[line] = true
	}
	return len(seen)
}

// span returns the first and last scrape time of the fleet.
func span(fleet *fleetsim.Fleet) (first, last time.Time) {
	for _, p := range fleet.Pods {
		if len(p.Scrapes) == 0 {
			continue
		}
		f, l := p.Scrapes[0].Time, p.Scrapes[len(p.Scrapes)-1].Time
		if first.IsZero() || f.Before(first) {
			first = f
		}
		if l.After(last) {
			last = l
		}
	}
	return first, last
}

// TestServersDiagnoseAsTSDB serves fleetsim fleets from a real Prometheus
// (a copy of the TSDB directory) and a real VictoriaMetrics (the fleet
// imported), and checks that diagnosing the URL gives the report of
// diagnosing the TSDB directory: same verdict, facts and quantiles (to
// 1e-9 relative), over the whole span and over a window that starts and
// ends between scrapes.
func TestServersDiagnoseAsTSDB(t *testing.T) {
	for _, scenario := range []string{"kv-preemption", "healthy", "restart", "mixed-versions"} {
		t.Run(scenario, func(t *testing.T) {
			spec, fleet := promserver.Fleet(t, scenario)
			dir := filepath.Join(t.TempDir(), "tsdb")
			require.NoError(t, simtsdb.Write(fleet, dir, fleetsim.TSDBOptions{HeadSpan: -1}))
			first, last := span(fleet)
			ranges := []snapshot.Options{
				{Start: first, End: last},
				{Start: first.Add(10*time.Minute + 7*time.Second), End: last.Add(-3 * time.Minute)},
			}
			servers := []struct {
				name  string
				start func(*testing.T) string // skips, or fails under CI, the test it is given
			}{
				{"prometheus", func(t *testing.T) string { return promserver.Prometheus(t, dir) }},
				{"victoria-metrics", func(t *testing.T) string { return startVictoriaMetrics(t, fleet) }},
			}
			for _, srv := range servers {
				t.Run(srv.name, func(t *testing.T) {
					url := srv.start(t)
					for i, opts := range ranges {
						ref, err := snapshot.Read(context.Background(), []string{dir}, opts)
						require.NoError(t, err)
						ctx := promapi.WithConfig(context.Background(), promapi.Config{MaxRange: 25 * time.Minute, TargetsPerQuery: 2})
						got, err := snapshot.Read(ctx, []string{url}, opts)
						require.NoError(t, err)
						for _, p := range got.Problems {
							assert.NotEqual(t, snapshot.SeverityError, p.Severity, "%v", p)
						}
						require.Len(t, got.Targets, len(ref.Targets))
						refRep, err := diagnose.Diagnose(ref, diagnose.Options{})
						require.NoError(t, err)
						gotRep, err := diagnose.Diagnose(got, diagnose.Options{})
						require.NoError(t, err)
						if i == 0 {
							assert.Equal(t, spec.Expect, string(refRep.Verdict), "the reference diagnosis")
						}
						assert.Equal(t, refRep.Verdict, gotRep.Verdict)
						diffs := jsondiff.Diff(reportJSON(t, refRep), reportJSON(t, gotRep), nearlyEqual)
						assert.Empty(t, diffs, "range %d: report differences (path: TSDB, server):\n%s", i, strings.Join(diffs, "\n"))
						assert.Equal(t, []string{url}, gotRep.Inputs.Sources)
					}
				})
			}
		})
	}
}

// reportJSON returns the report as generic JSON without its sources.
func reportJSON(t *testing.T, r *report.Report) any {
	t.Helper()
	b, err := json.Marshal(r)
	require.NoError(t, err)
	var v any
	require.NoError(t, json.Unmarshal(b, &v))
	if m, ok := v.(map[string]any); ok {
		if in, ok := m["inputs"].(map[string]any); ok {
			delete(in, "sources")
			// What the server read cost (a note only a server's read
			// has) is checked apart.
			notes, _ := in["notes"].([]any)
			notes = slices.DeleteFunc(notes, func(n any) bool { s, _ := n.(string); return strings.Contains(s, ": read with ") })
			if len(notes) == 0 {
				delete(in, "notes")
			} else {
				in["notes"] = notes
			}
		}
	}
	return v
}

// nearlyEqual compares two JSON values; numbers are equal within 1e-9
// relative (VictoriaMetrics keeps about 12 significant digits of floats),
// and so are texts that differ only in such numbers.
func nearlyEqual(a, b any) bool {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		return ok && math.Abs(x-y) <= 1e-9*math.Max(math.Abs(x), math.Abs(y))
	case string:
		y, ok := b.(string)
		return ok && (x == y || numericText(x, y))
	}
	return a == b
}

// numericText reports whether two texts differ only in numbers that agree
// to 1e-9 relative ("p95 0.41999999999 s" and "p95 0.42 s").
func numericText(a, b string) bool {
	num := regexp.MustCompile(`-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?`)
	if num.ReplaceAllString(a, "#") != num.ReplaceAllString(b, "#") {
		return false
	}
	na, nb := num.FindAllString(a, -1), num.FindAllString(b, -1)
	for i := range na {
		x, _ := strconv.ParseFloat(na[i], 64)
		y, _ := strconv.ParseFloat(nb[i], 64)
		if math.Abs(x-y) > 1e-9*math.Max(math.Abs(x), math.Abs(y)) {
			return false
		}
	}
	return true
}
