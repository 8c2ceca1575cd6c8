package promapi_test

import (
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/diagnose"
	"github.com/whyslow/whyslow/histogram"
	"github.com/whyslow/whyslow/internal/fleetsim"
	"github.com/whyslow/whyslow/internal/fleetsim/simtsdb"
	"github.com/whyslow/whyslow/internal/jsondiff"
	"github.com/whyslow/whyslow/internal/promserver"
	"github.com/whyslow/whyslow/report"
	"github.com/whyslow/whyslow/snapshot"
	"github.com/whyslow/whyslow/snapshot/promapi"
	_ "github.com/whyslow/whyslow/snapshot/tsdb"
)

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
				{"victoria-metrics", func(t *testing.T) string { return promserver.VictoriaMetrics(t, fleet) }},
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
						diffs := jsondiff.Diff(reportJSON(t, refRep), reportJSON(t, gotRep), jsondiff.NearlyEqual)
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

// TestEngineSamplesAsSums serves fleetsim fleets from a real Prometheus
// and checks that an Engine's answer one row per pod from the pods'
// samples (remote read) is its answer from the server's sums (queries
// only), to the bit, on every interval of a one-minute grid over the
// fleet's span; and that its cost note counts the remote reads.
func TestEngineSamplesAsSums(t *testing.T) {
	for _, scenario := range []string{"kv-preemption", "healthy"} {
		t.Run(scenario, func(t *testing.T) {
			_, fleet := promserver.Fleet(t, scenario)
			dir := filepath.Join(t.TempDir(), "tsdb")
			require.NoError(t, simtsdb.Write(fleet, dir, fleetsim.TSDBOptions{HeadSpan: -1}))
			url := promserver.Prometheus(t, dir)
			first, last := span(fleet)
			grid := snapshot.Grid(snapshot.Window{Start: first.Truncate(time.Minute).Add(time.Minute), End: last.Truncate(time.Minute)}, time.Minute)
			var targets []*snapshot.Target
			for _, p := range fleet.Pods {
				targets = append(targets, &snapshot.Target{Name: p.Name, NameFrom: "pod"})
			}
			q := snapshot.HistogramQuery{Metric: "vllm:time_to_first_token_seconds", Targets: targets, Grid: grid, Each: true}
			ctx := context.Background()
			answer := func(cfg promapi.Config) ([][]*histogram.Histogram, string) {
				eng, err := cfg.Engine(ctx, url, snapshot.Options{})
				require.NoError(t, err)
				rows, err := eng.HistogramIncreases(q)
				require.NoError(t, err)
				return rows, eng.Cost().Error()
			}
			fromSamples, note := answer(promapi.Config{})
			fromSums, sumsNote := answer(promapi.Config{QueryOnly: true})
			assert.Contains(t, note, " remote reads of the samples of the replicas shown")
			assert.NotContains(t, sumsNote, "remote reads")
			require.Len(t, fromSamples, len(targets))
			measured := 0
			for k := range targets {
				for i := range grid {
					s, p := fromSamples[k][i], fromSums[k][i]
					require.Equal(t, p == nil, s == nil, "%s, interval %d", targets[k].Name, i)
					if s == nil {
						continue
					}
					measured++
					assert.Equal(t, p.Bounds, s.Bounds, "%s, interval %d", targets[k].Name, i)
					assert.Equal(t, p.Counts, s.Counts, "%s, interval %d", targets[k].Name, i)
					assert.Equal(t, p.Count, s.Count, "%s, interval %d", targets[k].Name, i)
					assert.Equal(t, p.Sum, s.Sum, "%s, interval %d", targets[k].Name, i)
				}
			}
			assert.Greater(t, measured, len(grid), "most intervals of every pod are measured")

			// Without _sum (HistogramQuery.SkipSum), from the samples and
			// from the sums, per pod and for the fleet: the same buckets
			// and counts, Sum NaN.
			for _, each := range []bool{true, false} {
				q.Each = each
				for _, cfg := range []promapi.Config{{}, {QueryOnly: true}} {
					q.SkipSum = false
					whole, _ := answer(cfg)
					q.SkipSum = true
					skipped, _ := answer(cfg)
					require.Len(t, skipped, len(whole))
					for k := range whole {
						for i, w := range whole[k] {
							s := skipped[k][i]
							require.Equal(t, w == nil, s == nil, "each %v, query only %v, row %d, interval %d", each, cfg.QueryOnly, k, i)
							if s == nil {
								continue
							}
							assert.Equal(t, w.Bounds, s.Bounds)
							assert.Equal(t, w.Counts, s.Counts)
							assert.Equal(t, w.Count, s.Count)
							assert.True(t, math.IsNaN(s.Sum), "each %v, query only %v: Sum %v", each, cfg.QueryOnly, s.Sum)
						}
					}
				}
			}
		})
	}
}

// TestEnginePresenceAsCount serves fleets whose pods come, go and
// restart from a real Prometheus and a real VictoriaMetrics, and checks
// that an Engine's Presence, which asks only for the edges where a pod
// lacks some of its series, is what "count by (pod) (M_count)" gives at
// every edge of the grid, on a grid over the fleet's span and on one that
// starts and ends amid the samples.
func TestEnginePresenceAsCount(t *testing.T) {
	for _, scenario := range []string{"restart", "mixed-versions", "rolling-restart-deployment", "rolling-restart-statefulset"} {
		t.Run(scenario, func(t *testing.T) {
			var fleet *fleetsim.Fleet
			if mc, ok := fleetsim.LookupMatrixCase(scenario); ok {
				var err error
				fleet, err = fleetsim.Run(mc.VariantConfig(3, fleetsim.MatrixSeeds[0], 0, fleetsim.Variant{ScrapeInterval: 30 * time.Second}))
				require.NoError(t, err)
			} else {
				_, fleet = promserver.Fleet(t, scenario)
			}
			dir := filepath.Join(t.TempDir(), "tsdb")
			require.NoError(t, simtsdb.Write(fleet, dir, fleetsim.TSDBOptions{HeadSpan: -1}))
			first, last := span(fleet)
			grids := [][]snapshot.Window{
				snapshot.Grid(snapshot.Window{Start: first.Truncate(time.Minute), End: last.Truncate(time.Minute).Add(time.Minute)}, time.Minute),
				amid(first.Add(17*time.Minute+13*time.Second), last.Add(-9*time.Minute), 2*time.Minute),
			}
			var refused *atomic.Int64 // by the server without @
			for _, srv := range []struct {
				name  string
				start func(*testing.T) string
			}{
				{"prometheus", func(t *testing.T) string { return promserver.Prometheus(t, dir) }},
				{"victoria-metrics", func(t *testing.T) string { return promserver.VictoriaMetrics(t, fleet) }},
				// A Prometheus before 2.33: Presence asks for every
				// edge's count instead, after one refusal.
				{"prometheus-without-@", func(t *testing.T) string {
					var url string
					url, refused = promserver.RefusingAt(t, promserver.Prometheus(t, dir))
					return url
				}},
			} {
				t.Run(srv.name, func(t *testing.T) {
					url := srv.start(t)
					client, err := api.NewClient(api.Config{Address: url})
					require.NoError(t, err)
					ctx := context.Background()
					eng, err := promapi.Config{TargetsPerQuery: 1}.Engine(ctx, url, snapshot.Options{})
					require.NoError(t, err)
					// Every pod the server holds (a Deployment's rollout
					// names new ones), and one it does not.
					names, _, _, err := v1.NewAPI(client).LabelValues(ctx, "pod", nil, first.Add(-time.Hour), last.Add(time.Hour))
					require.NoError(t, err)
					targets := []*snapshot.Target{{Name: "vllm-none", NameFrom: "pod"}}
					for _, n := range names {
						targets = append(targets, &snapshot.Target{Name: string(n), NameFrom: "pod"})
					}
					fewer := 0
					for g, grid := range grids {
						q := snapshot.HistogramQuery{Metric: "vllm:time_to_first_token_seconds", Targets: targets, Grid: grid}
						got, err := eng.Presence(q)
						require.NoError(t, err)
						require.Len(t, got, len(targets))
						step := grid[0].End.Sub(grid[0].Start)
						val, _, _, err := v1.NewAPI(client).QueryRange(ctx, `count by (pod) (vllm:time_to_first_token_seconds_count)`,
							v1.Range{Start: grid[0].Start, End: grid[len(grid)-1].End, Step: step})
						require.NoError(t, err)
						want := make(map[string][]int)
						for _, tg := range targets {
							want[tg.Name] = make([]int, len(grid)+1)
						}
						for _, s := range val.(model.Matrix) {
							row := want[string(s.Metric["pod"])]
							require.NotNil(t, row, "%v", s.Metric)
							for _, p := range s.Values {
								row[p.Timestamp.Time().Sub(grid[0].Start)/step] = int(p.Value)
							}
						}
						for k, tg := range targets {
							assert.Equal(t, want[tg.Name], got[k], "grid %d, %s", g, tg.Name)
							for _, c := range got[k] {
								if c < slices.Max(got[k]) {
									fewer++
								}
							}
						}
					}
					assert.Positive(t, fewer, "edges where a pod has fewer series than at others")
					if srv.name == "prometheus-without-@" {
						assert.Equal(t, int64(1), refused.Load(), "queries with @ refused")
						assert.Contains(t, eng.Cost().Error(), "refused PromQL's @ modifier")
					} else {
						assert.NotContains(t, eng.Cost().Error(), "@")
					}
				})
			}
		})
	}
}

// amid is a grid of windows of length step from start, the last ending at
// or before end.
func amid(start, end time.Time, step time.Duration) []snapshot.Window {
	return snapshot.Grid(snapshot.Window{Start: start, End: start.Add(end.Sub(start).Truncate(step))}, step)
}

// TestListedAsSeries serves fleets from a real Prometheus and checks that
// the series a read lists by their labels (Options.LabelsOnly: asked for
// by remote read, labels only) are those /api/v1/series lists
// (Config.QueryOnly), over the whole span and over a range amid the
// samples: the same evidence.
func TestListedAsSeries(t *testing.T) {
	for _, scenario := range []string{"restart", "mixed-versions"} {
		t.Run(scenario, func(t *testing.T) {
			_, fleet := promserver.Fleet(t, scenario)
			dir := filepath.Join(t.TempDir(), "tsdb")
			require.NoError(t, simtsdb.Write(fleet, dir, fleetsim.TSDBOptions{HeadSpan: -1}))
			url := promserver.Prometheus(t, dir)
			first, last := span(fleet)
			for _, opts := range []snapshot.Options{
				{Start: first, End: last},
				{Start: first.Add(31*time.Minute + 7*time.Second), End: last.Add(-23 * time.Minute)},
			} {
				opts.LabelsOnly = []string{"vllm:time_to_first_token_seconds", "vllm:e2e_request_latency_seconds",
					"vllm:num_requests_waiting", "vllm:request_success", "process_start_time_seconds"}
				cfg := promapi.Config{TargetsPerQuery: 2}
				got, err := cfg.Read(context.Background(), url, opts)
				require.NoError(t, err)
				cfg.QueryOnly = true
				want, err := cfg.Read(context.Background(), url, opts)
				require.NoError(t, err)
				require.Equal(t, len(want.Targets), len(got.Targets))
				listed := 0
				for i, tg := range want.Targets {
					require.Equal(t, tg, got.Targets[i], "%s", tg.Name)
					for _, name := range opts.LabelsOnly {
						if f := tg.Family(name); f != nil {
							listed += len(f.Series) + len(f.Histograms)
						}
					}
				}
				assert.GreaterOrEqual(t, listed, 4*len(want.Targets), "series listed by their labels")
			}
		})
	}
}
