package diagnose_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/diagnose"
	"github.com/whyslow/whyslow/internal/fleetsim"
	"github.com/whyslow/whyslow/internal/fleetsim/simtsdb"
	"github.com/whyslow/whyslow/internal/jsondiff"
	"github.com/whyslow/whyslow/internal/promserver"
	"github.com/whyslow/whyslow/report"
	"github.com/whyslow/whyslow/snapshot"
	_ "github.com/whyslow/whyslow/snapshot/tsdb" // Read reads the TSDB cases
)

// evidenceFormat is one way an SRE may have preserved a fleet's metrics.
type evidenceFormat struct {
	name string
	// short formats also run under -short.
	short bool
	// startTimes is set when the format carries OpenMetrics _created
	// samples, which snapshot turns into Series.StartT: a counter whose
	// start time moves forward counts as reset even when its value did
	// not drop (a counter at 0 before and after a restart). Text 0.0.4
	// dumps, /federate and TSDB keep _created as plain gauge families, so
	// only such a format may see more counter resets than the others.
	startTimes bool
	// write preserves the fleet under dir and returns the path to read.
	write func(t *testing.T, p *preserved, dir string) string
}

// preserved is one simulated fleet, written in several formats.
type preserved struct {
	fleet *fleetsim.Fleet
	// dir lives as long as the fleet's test.
	dir string
	// om is the OpenMetrics file under dir once written.
	om string
}

// openMetrics writes the fleet as one OpenMetrics document with timestamps,
// once; later calls return the same file.
func (p *preserved) openMetrics(t *testing.T) string {
	t.Helper()
	if p.om != "" {
		return p.om
	}
	name := filepath.Join(p.dir, "fleet.om")
	writeFile(t, name, false, func(w io.Writer) error { return p.fleet.WriteOpenMetrics(w, true) })
	p.om = name
	return name
}

// writeFile creates name and fills it with write, gzip-compressed when
// gz is set.
func writeFile(t *testing.T, name string, gz bool, write func(io.Writer) error) {
	t.Helper()
	var buf bytes.Buffer
	w := io.Writer(&buf)
	var zw *gzip.Writer
	if gz {
		// BestSpeed: the test is about reading, not compression.
		zw, _ = gzip.NewWriterLevel(&buf, gzip.BestSpeed)
		w = zw
	}
	require.NoError(t, write(w))
	if zw != nil {
		require.NoError(t, zw.Close())
	}
	require.NoError(t, os.WriteFile(name, buf.Bytes(), 0o644))
}

// evidenceFormats lists every kind of evidence snapshot reads. The first one
// is the reference the others are compared with.
var evidenceFormats = []evidenceFormat{
	{name: "dump-dirs", short: true, write: func(t *testing.T, p *preserved, dir string) string {
		require.NoError(t, p.fleet.WriteDumps(dir, fleetsim.DumpOptions{Layout: fleetsim.LayoutPodDirs}))
		return dir
	}},
	{name: "flat-gzip", write: func(t *testing.T, p *preserved, dir string) string {
		require.NoError(t, p.fleet.WriteDumps(dir, fleetsim.DumpOptions{Layout: fleetsim.LayoutFlat, Gzip: true}))
		return dir
	}},
	{name: "federate-gzip", write: func(t *testing.T, p *preserved, dir string) string {
		name := filepath.Join(dir, "federate.txt.gz")
		writeFile(t, name, true, p.fleet.WriteFederate)
		return name
	}},
	{name: "openmetrics", startTimes: true, write: func(t *testing.T, p *preserved, dir string) string {
		return p.openMetrics(t)
	}},
	{name: "tsdb", short: true, write: func(t *testing.T, p *preserved, dir string) string {
		// 30-minute blocks and a 20-minute head: the first 40 minutes are
		// persisted blocks, the rest is replayed from the WAL.
		require.NoError(t, simtsdb.Write(p.fleet, dir, fleetsim.TSDBOptions{HeadSpan: 20 * time.Minute, BlockDuration: 30 * time.Minute}))
		var blocks int
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		for _, e := range entries {
			if _, err := os.Stat(filepath.Join(dir, e.Name(), "meta.json")); err == nil {
				blocks++
			}
		}
		require.Positive(t, blocks, "persisted blocks")
		wal, err := os.ReadDir(filepath.Join(dir, "wal"))
		require.NoError(t, err)
		require.NotEmpty(t, wal, "WAL segments")
		return dir
	}},
	{name: "promtool-backfill", write: func(t *testing.T, p *preserved, dir string) string {
		promtool := promserver.Binary(t, "promtool")
		om := p.openMetrics(t)
		out, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", om, dir).CombinedOutput()
		require.NoError(t, err, "promtool: %s", out)
		return dir
	}},
}

// formatFleet returns the named scenario at a size that keeps the test
// fast: three of its eight pods, with 3/8 of its traffic so that each pod's
// load is the scenario's, scraped every 30 s.
func formatFleet(t *testing.T, name string) (fleetsim.ScenarioSpec, *fleetsim.Fleet) {
	t.Helper()
	spec, ok := fleetsim.LookupScenario(name)
	require.True(t, ok, name)
	cfg := spec.Config
	const pods = 3
	if len(cfg.Pods) > 0 {
		require.Len(t, cfg.Pods, scenarioPods)
		cfg.Pods = slices.Clone(cfg.Pods[:pods])
	} else {
		require.Zero(t, cfg.NumPods)
		cfg.NumPods = pods
	}
	fleet, err := fleetsim.Run(perPodLoad(t, cfg, pods))
	require.NoError(t, err)
	return spec, fleet
}

// scenarioPods is the size of the scenarios' fleets.
const scenarioPods = 8

// perPodLoad returns a scenario's cfg with pods/scenarioPods of its
// traffic, so that each of pods pods carries the load of one of the
// scenario's, scraped every 30 s.
func perPodLoad(t testing.TB, cfg fleetsim.Config, pods int) fleetsim.Config {
	t.Helper()
	cfg.Workload.Phases = slices.Clone(cfg.Workload.Phases)
	for i := range cfg.Workload.Phases {
		cfg.Workload.Phases[i].Rate *= float64(pods) / scenarioPods
		require.Nil(t, cfg.Workload.Phases[i].Weights, "per-pod weights cannot be scaled")
	}
	cfg.ScrapeInterval = 30 * time.Second
	return cfg
}

// TestFormatsSameDiagnosis writes one simulated fleet as every kind of
// evidence whyslow reads (a dump folder per pod, flat gzip'ed dumps, a
// gzip'ed /federate dump, OpenMetrics with timestamps, a TSDB data
// directory with blocks and a WAL head, and a TSDB backfilled by promtool
// from the OpenMetrics file), reads each back through snapshot.Read and
// diagnoses it, with the windows chosen by Diagnose and with given ones.
//
// The fleet's vLLM samples are the same in every format, so the reports
// must be identical, number for number, whatever the format: same verdict
// (the scenario's), same ranked hypotheses, symptoms, facts, windows,
// signals and timelines. The only expected difference is that an
// OpenMetrics file, whose _created samples give each counter its start
// time, may count more counter resets than the others (see
// evidenceFormat.startTimes). Reading must change nothing under the input
// path.
func TestFormatsSameDiagnosis(t *testing.T) {
	for _, scenario := range []string{"kv-preemption", "restart"} {
		t.Run(scenario, func(t *testing.T) {
			t.Parallel()
			spec, fleet := formatFleet(t, scenario)
			p := &preserved{fleet: fleet, dir: t.TempDir()}
			start := fleet.Config.Start
			given := diagnose.Options{
				Baseline: snapshot.Window{Start: start.Add(5 * time.Minute), End: start.Add(25 * time.Minute)},
				Incident: snapshot.Window{Start: start.Add(fleetsim.IncidentStart + 5*time.Minute), End: start.Add(55 * time.Minute)},
			}
			var (
				refEv  *snapshot.Evidence
				refRep [2]*report.Report
			)
			for k, format := range evidenceFormats {
				isRef := k == 0
				t.Run(format.name, func(t *testing.T) {
					if testing.Short() && !format.short {
						t.Skip("-short runs only the dump folder and the TSDB")
					}
					if !isRef && refRep[1] == nil {
						t.Skip("the reference format failed")
					}
					path := format.write(t, p, t.TempDir())
					before := treeState(t, path)
					ev, err := snapshot.Read(context.Background(), []string{path}, snapshot.Options{})
					require.NoError(t, err)
					assert.Equal(t, before, treeState(t, path), "reading changed the input")

					for _, pr := range ev.Problems {
						assert.NotEqual(t, snapshot.SeverityError, pr.Severity, "problem: %v", pr)
					}
					requireScrapesAsSimulated(t, fleet, ev)
					if isRef {
						refEv = ev
					} else {
						assertSameSamples(t, refEv, ev)
					}

					for i, opts := range []diagnose.Options{{}, given} {
						rep, err := diagnose.Diagnose(ev, opts)
						require.NoError(t, err)
						windows := []string{"chosen windows", "given windows"}[i]
						assert.Equal(t, spec.Expect, string(rep.Verdict), "%s: %s", windows, rep.Summary)
						assert.False(t, rep.Inputs.Partial, windows)
						assert.Len(t, rep.Inputs.Replicas, len(fleet.Pods), windows)
						if i == 1 {
							assert.Equal(t, "given", rep.Windows.Baseline.From)
							assert.Equal(t, "given", rep.Windows.Incident.From)
						}
						if isRef {
							refRep[i] = rep
						} else {
							assertSameReport(t, refRep[i], rep, format.startTimes, windows)
						}
					}
				})
			}
		})
	}
}

// requireScrapesAsSimulated checks that ev holds one target per pod with
// exactly the pod's scrape instants: none lost, none invented (a
// restarting pod's gap and its TSDB staleness markers included).
func requireScrapesAsSimulated(t *testing.T, fleet *fleetsim.Fleet, ev *snapshot.Evidence) {
	t.Helper()
	require.Len(t, ev.Targets, len(fleet.Pods))
	for _, pod := range fleet.Pods {
		tg := ev.Target(pod.Name)
		require.NotNil(t, tg, pod.Name)
		want := make([]int64, len(pod.Scrapes))
		for i, sc := range pod.Scrapes {
			want[i] = sc.Time.UnixMilli()
		}
		got := make([]int64, len(tg.Scrapes))
		for i, sc := range tg.Scrapes {
			got[i] = sc.Time.UnixMilli()
		}
		require.Equal(t, want, got, "scrape instants of %s", pod.Name)
	}
}

// targetLabels are the labels a Prometheus server adds to what a pod
// exposes; /federate, OpenMetrics and TSDB series carry them, dumps do not.
var targetLabels = []string{"instance", "job", "namespace", "pod"}

// seriesKey identifies a series within a target whatever the format.
func seriesKey(name string, ls labels.Labels) string {
	return name + labels.NewBuilder(ls).Del(targetLabels...).Labels().String()
}

// assertSameSamples checks that got holds exactly the samples of ref in
// the families the diagnosis reads: every vllm: family and the GPU
// exporter's utilisation. _created families are left out (OpenMetrics
// turns them into start times), and so are the GPU exporter's other
// gauges: its page prints power with six decimals while fleetsim's
// /federate, OpenMetrics and TSDB writers keep every digit.
func assertSameSamples(t *testing.T, ref, got *snapshot.Evidence) {
	t.Helper()
	nan := func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }
	for _, rt := range ref.Targets {
		gt := got.Target(rt.Name)
		require.NotNil(t, gt, rt.Name)
		compared := 0
		for _, name := range rt.FamilyNames() {
			if !strings.HasPrefix(name, "vllm:") && name != "DCGM_FI_DEV_GPU_UTIL" || strings.HasSuffix(name, "_created") {
				continue
			}
			rf, gf := rt.Family(name), gt.Family(name)
			if !assert.NotNil(t, gf, "%s: family %s", rt.Name, name) {
				continue
			}
			series := map[string]*snapshot.Series{}
			for _, s := range gf.Series {
				series[seriesKey(s.Name, s.Labels)] = s
			}
			assert.Len(t, gf.Series, len(rf.Series), "%s: series of %s", rt.Name, name)
			for _, rs := range rf.Series {
				key := seriesKey(rs.Name, rs.Labels)
				gs := series[key]
				if assert.NotNil(t, gs, "%s: series %s", rt.Name, key) {
					assert.Equal(t, rs.T, gs.T, "%s: times of %s", rt.Name, key)
					assert.True(t, slices.EqualFunc(rs.V, gs.V, nan), "%s: values of %s", rt.Name, key)
				}
			}
			hists := map[string]*snapshot.HistogramSeries{}
			for _, h := range gf.Histograms {
				hists[seriesKey(name, h.Labels)] = h
			}
			assert.Len(t, gf.Histograms, len(rf.Histograms), "%s: histograms of %s", rt.Name, name)
			for _, rh := range rf.Histograms {
				key := seriesKey(name, rh.Labels)
				gh := hists[key]
				if assert.NotNil(t, gh, "%s: histogram %s", rt.Name, key) {
					assert.Equal(t, rh.Bounds, gh.Bounds, "%s: bounds of %s", rt.Name, key)
					assert.Equal(t, rh.T, gh.T, "%s: times of %s", rt.Name, key)
					assert.Equal(t, rh.Counts, gh.Counts, "%s: counts of %s", rt.Name, key)
					assert.True(t, slices.EqualFunc(rh.Sum, gh.Sum, nan), "%s: sums of %s", rt.Name, key)
					assert.True(t, slices.EqualFunc(rh.Count, gh.Count, nan), "%s: counts of %s", rt.Name, key)
				}
			}
			compared++
		}
		assert.Greater(t, compared, 20, "%s: families compared", rt.Name)
	}
}

// assertSameReport checks that got says what ref says: the verdict, the
// ranking, the fleet's TTFT p95 and the replicas are checked by name for
// readable failures, then the whole report (but the list of files read)
// is compared field by field. With startTimes, counter resets may be more
// numerous in got (see evidenceFormat.startTimes), never fewer.
func assertSameReport(t *testing.T, ref, got *report.Report, startTimes bool, windows string) {
	t.Helper()
	assert.Equal(t, ref.Verdict, got.Verdict, windows)
	assert.Equal(t, topHypotheses(ref, 3), topHypotheses(got, 3), windows)
	refP95, gotP95 := fleetQuantile(t, ref, catalog.SignalTTFT, 0.95), fleetQuantile(t, got, catalog.SignalTTFT, 0.95)
	require.False(t, math.IsNaN(float64(refP95.Value)), "%s: fleet TTFT p95 is measured", windows)
	// The merged buckets are the same counts in the same order, so the
	// estimate is the same float, not merely close.
	assert.Equal(t, refP95, gotP95, "%s: fleet TTFT p95", windows)
	assert.Equal(t, ref.Inputs.Replicas, got.Inputs.Replicas, windows)
	assert.Equal(t, ref.Inputs.Versions, got.Inputs.Versions, windows)

	if startTimes {
		assertResetsAtLeast(t, ref.Signals.Fleet, got.Signals.Fleet, windows+", fleet")
		for name, sigs := range ref.Signals.Replicas {
			assertResetsAtLeast(t, sigs, got.Signals.Replicas[name], windows+", "+name)
		}
	}
	diffs := jsondiff.Diff(reportJSON(t, ref, startTimes), reportJSON(t, got, startTimes), nil)
	if len(diffs) > 0 {
		t.Errorf("%s: the reports differ (JSON path: reference, this format):\n%s", windows, strings.Join(diffs, "\n"))
	}
}

// topHypotheses returns "id status" of the first n ranked hypotheses.
func topHypotheses(r *report.Report, n int) []string {
	var top []string
	for _, h := range r.Hypotheses[:min(n, len(r.Hypotheses))] {
		top = append(top, fmt.Sprintf("%s %s", h.ID, h.Status))
	}
	return top
}

// fleetQuantile returns quantile q of a fleet signal over the incident.
func fleetQuantile(t *testing.T, r *report.Report, id catalog.SignalID, q float64) report.Quantile {
	t.Helper()
	for _, s := range r.Signals.Fleet {
		if s.ID != string(id) {
			continue
		}
		require.NotNil(t, s.Incident, "%s over the incident: %s", id, s.Missing)
		for _, e := range s.Incident.Quantiles {
			if e.Q == q {
				return e
			}
		}
	}
	require.Failf(t, "no such quantile", "%s p%g", id, 100*q)
	return report.Quantile{}
}

// assertResetsAtLeast checks that every counter measure of got sees at
// least the resets of ref, and is a lower bound whenever ref's is.
func assertResetsAtLeast(t *testing.T, ref, got []report.Signal, where string) {
	t.Helper()
	require.Len(t, got, len(ref), where)
	for i, rs := range ref {
		gs := got[i]
		require.Equal(t, rs.ID, gs.ID, where)
		for _, m := range [][2]*report.Measure{{rs.Baseline, gs.Baseline}, {rs.Incident, gs.Incident}} {
			if m[0] == nil || m[1] == nil {
				continue
			}
			assert.GreaterOrEqual(t, m[1].Resets, m[0].Resets, "%s: %s resets", where, rs.ID)
			assert.True(t, !m[0].LowerBound || m[1].LowerBound, "%s: %s lower bound", where, rs.ID)
		}
	}
}

// reportJSON returns r's JSON form, decoded, without the list of files
// read. With dropResets, the reset counts, lower-bound flags and reset
// warnings of counter signals are removed.
func reportJSON(t *testing.T, r *report.Report, dropResets bool) any {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, r.WriteJSON(&buf))
	var doc map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &doc))
	delete(doc["inputs"].(map[string]any), "sources")
	if !dropResets {
		return doc
	}
	drop := func(sigs any) {
		for _, s := range sigs.([]any) {
			sig := s.(map[string]any)
			if sig["kind"] != "counter" {
				continue
			}
			for _, w := range []string{"baseline", "incident"} {
				if m, ok := sig[w].(map[string]any); ok {
					delete(m, "resets")
					delete(m, "lower_bound")
				}
			}
			if ws, ok := sig["warnings"].([]any); ok {
				sig["warnings"] = slices.DeleteFunc(ws, func(w any) bool { return strings.Contains(w.(string), "counter reset") })
			}
		}
	}
	signals := doc["signals"].(map[string]any)
	drop(signals["fleet"])
	for _, sigs := range signals["replicas"].(map[string]any) {
		drop(sigs)
	}
	return doc
}

// treeState describes every file and directory under path (path itself
// included): name, mode, size, modification time and, for files, a hash of
// the content.
func treeState(t *testing.T, path string) map[string]string {
	t.Helper()
	state := map[string]string{}
	err := filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		desc := fmt.Sprintf("%v %d %s", info.Mode(), info.Size(), info.ModTime().Format(time.RFC3339Nano))
		if info.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			desc += fmt.Sprintf(" %x", sha256.Sum256(data))
		}
		rel, err := filepath.Rel(path, p)
		if err != nil {
			return err
		}
		state[rel] = desc
		return nil
	})
	require.NoError(t, err)
	return state
}

// A Ray Serve dump (every vllm: name under ray_vllm:) is diagnosed as the
// plain dump is, with no alias and no "not vLLM" warning: neither snapshot
// nor the catalog judges it non-vLLM.
func TestRayPrefixNeedsNoAlias(t *testing.T) {
	data, err := os.ReadFile("../testdata/realdata/vllm/lora-multitenancy-experiment-0.30.0.prom")
	require.NoError(t, err)
	diag := func(dump string) *report.Report {
		ev, err := snapshot.ParseDump([]byte(dump), "pod-0", snapshot.Options{})
		require.NoError(t, err)
		rep, err := diagnose.Diagnose(ev, diagnose.Options{})
		require.NoError(t, err)
		return rep
	}
	plain := diag(string(data))
	ray := diag(strings.ReplaceAll(string(data), "vllm:", "ray_vllm:"))
	for _, w := range ray.Warnings {
		assert.NotContains(t, w, "no vllm: metric")
	}
	require.Equal(t, len(plain.Signals.Fleet), len(ray.Signals.Fleet))
	found := 0
	for i, p := range plain.Signals.Fleet {
		r := ray.Signals.Fleet[i]
		assert.Equal(t, p.ID, r.ID)
		assert.Equal(t, p.Missing == "", r.Missing == "", p.ID)
		assert.Equal(t, strings.ReplaceAll(p.Metric, "vllm:", "ray_vllm:"), r.Metric, p.ID)
		if p.Incident != nil && r.Incident != nil {
			assert.Equal(t, p.Incident.Count, r.Incident.Count, p.ID)
			found++
		}
	}
	assert.NotZero(t, found, "the capture measures some signal")
}

// shortSelection are the scenarios TestSelectionSameDiagnosis reads
// under -short.
var shortSelection = map[string]bool{"burst": true, "restart": true}

// TestSelectionSameDiagnosis checks that reading only what a diagnosis
// needs (Options.Selection: the catalog's metrics, and with given windows
// their range) changes nothing a diagnosis decides. Every fleetsim
// scenario is written as every kind of evidence; each is read twice, in
// full (snapshot.Read with no selection, the reference) and through the
// selection, and both are diagnosed.
//
// With the windows chosen by Diagnose (the change-point search over the
// whole history) the selection only drops families, and the reports must
// be identical, JSON for JSON. With given windows the selection also
// narrows the time range, and the verdict, hypotheses, symptoms, facts
// and signals must be identical; only the timelines and the change point
// shown beside the given windows cover the ranges read (see
// Options.Selection and Options.ReadRanges; the windows are read apart, as
// the command reads them), and so does the JSON writer's count of unknown
// numbers.
func TestSelectionSameDiagnosis(t *testing.T) {
	// -short reads two scenarios: an incident, and a restart (targets
	// whose series end and begin inside the range read).
	for _, spec := range fleetsim.Scenarios() {
		if testing.Short() && !shortSelection[spec.Name] {
			continue
		}
		t.Run(spec.Name, func(t *testing.T) {
			t.Parallel()
			fleet := selectionFleet(t, spec)
			p := &preserved{fleet: fleet, dir: t.TempDir()}
			start := fleet.Config.Start
			given := diagnose.Options{
				Baseline: snapshot.Window{Start: start.Add(5 * time.Minute), End: start.Add(25 * time.Minute)},
				Incident: snapshot.Window{Start: start.Add(fleetsim.IncidentStart + 5*time.Minute), End: start.Add(55 * time.Minute)},
			}
			for _, format := range evidenceFormats {
				t.Run(format.name, func(t *testing.T) {
					if testing.Short() && !format.short {
						t.Skip("-short runs only the dump folder and the TSDB")
					}
					path := format.write(t, p, t.TempDir())
					full, err := snapshot.Read(context.Background(), []string{path}, snapshot.Options{})
					require.NoError(t, err)
					for i, opts := range []diagnose.Options{{}, given, {Incident: given.Incident}} {
						windows := []string{"chosen windows", "given windows", "given incident"}[i]
						sel := opts.Selection()
						require.NotEmpty(t, sel.Metrics)
						require.Equal(t, i >= 1, !sel.Start.IsZero(), windows)
						ev, err := snapshot.Read(context.Background(), []string{path}, sel)
						require.NoError(t, err)
						if rs := opts.ReadRanges(); len(rs) > 1 {
							// As the command reads them: each window apart.
							var evs []*snapshot.Evidence
							for _, r := range rs {
								o := sel
								o.Start, o.End = r.Start, r.End
								e, err := snapshot.Read(context.Background(), []string{path}, o)
								require.NoError(t, err)
								evs = append(evs, e)
							}
							ev = snapshot.MergeRanges(evs...)
						}
						// As the command collects a TSDB's targets: each
						// trimmed to what the diagnosis measures.
						trim, err := opts.Trimmer()
						require.NoError(t, err)
						for k, tg := range ev.Targets {
							ev.Targets[k] = trim(tg)
						}
						// The selection must have read less: the fleet's
						// exporters write families no diagnosis reads.
						require.Less(t, evidenceSamples(ev), evidenceSamples(full), windows)
						ref, err := diagnose.Diagnose(full, opts)
						require.NoError(t, err)
						got, err := diagnose.Diagnose(ev, opts)
						require.NoError(t, err)
						if i < 2 {
							assert.Equal(t, spec.Expect, string(got.Verdict), "%s: %s", windows, got.Summary)
						}
						a, b := reportJSON(t, ref, false), reportJSON(t, got, false)
						if i >= 1 {
							for _, doc := range []any{a, b} {
								m := doc.(map[string]any)
								delete(m, "timelines")
								delete(m["windows"].(map[string]any), "change_point")
								// The JSON writer counts the unknown numbers it
								// wrote as null, the timelines' included.
								if ws, ok := m["warnings"].([]any); ok {
									m["warnings"] = slices.DeleteFunc(ws, func(w any) bool { return strings.Contains(w.(string), "unknown number(s)") })
								}
								if ws, ok := m["warning_details"].([]any); ok {
									m["warning_details"] = slices.DeleteFunc(ws, func(w any) bool {
										return strings.Contains(fmt.Sprint(w), "unknown number(s)")
									})
								}
							}
						}
						diffs := jsondiff.Diff(a, b, nil)
						if len(diffs) > 0 {
							t.Errorf("%s: the selective read diagnoses otherwise (JSON path: full read, selective read):\n%s", windows, strings.Join(diffs, "\n"))
						}
						if i == 0 {
							// As the command diagnoses a history: surveyed one
							// target at a time, then only the windows read
							// (10-minute windows leave most of the hour unread).
							for k, o := range []diagnose.Options{{}, {MaxWindow: 10 * time.Minute}, {}} {
								// The third: a survey whose first read lists
								// the TTFT family it measures (as when a sketch
								// foretells another match): a second pass.
								wrong := k == 2
								ref, err := diagnose.Diagnose(full, o)
								require.NoError(t, err)
								sv := surveyDiagnose(t, path, sel, o, wrong)
								diffs := jsondiff.Diff(reportJSON(t, ref, false), reportJSON(t, sv, false), nil)
								if len(diffs) > 0 {
									t.Errorf("surveyed, MaxWindow %v, foretold wrongly %v: the survey and window read diagnoses otherwise (JSON path: full read, survey):\n%s", o.MaxWindow, wrong, strings.Join(diffs, "\n"))
								}
							}
						}
					}
				})
			}
		})
	}
}

// surveyDiagnose diagnoses path as the command diagnoses a history
// without given windows: a survey of the targets read one at a time
// (snapshot.ReadEach, with Surveyor.LabelsOnly and LabelsOnlyFor; a
// second pass when the survey asks for one), then a read of only the
// windows it chose (without what Survey.SkipFor skips), each target
// trimmed (Options.Trimmer), diagnosed with the survey. With wrong, the
// first read also lists the TTFT family the survey measures, as a sketch
// that foretold another match would: the survey must notice and ask for
// a second pass.
func surveyDiagnose(t *testing.T, path string, sel snapshot.Options, opts diagnose.Options, wrong bool) *report.Report {
	t.Helper()
	s, err := diagnose.NewSurveyor(opts)
	require.NoError(t, err)
	var sv *diagnose.Survey
	streams := snapshot.Streams([]string{path})
	for pass := 0; sv == nil; pass++ {
		require.Less(t, pass, 2, "a survey takes at most two passes")
		o := sel
		// As the command surveys: the families it does not measure listed
		// by their labels.
		o.LabelsOnly = s.LabelsOnly()
		var sketched atomic.Int64 // called from the reader's goroutines
		o.ForTarget = func(sk *snapshot.Target) snapshot.TargetSelection {
			sketched.Add(1)
			more := s.LabelsOnlyFor(sk)
			if wrong && pass == 0 {
				more = append(more, catalog.Default().SignalMetrics(catalog.SignalTTFT)...)
			}
			return snapshot.TargetSelection{LabelsOnly: more}
		}
		_, err := snapshot.ReadEach(context.Background(), []string{path}, o, s.Add)
		require.NoError(t, err)
		var again bool
		sv, again, err = s.Survey()
		require.NoError(t, err)
		require.Equal(t, again, sv == nil)
		if wrong && streams && pass == 0 {
			require.True(t, again, "a measured family listed by labels: the survey asks for a second pass")
		}
		if !streams {
			assert.Zero(t, sketched.Load(), "only a source that lists by labels sketches the targets")
		}
	}
	trim, err := opts.Trimmer()
	require.NoError(t, err)
	var evs []*snapshot.Evidence
	for _, r := range sv.ReadRanges() {
		o := sel
		o.Start, o.End = r.Start, r.End
		// As the command reads the windows: without the families the
		// survey read by labels and the diagnosis does not measure.
		o.ForTarget = func(sk *snapshot.Target) snapshot.TargetSelection {
			return snapshot.TargetSelection{Skip: sv.SkipFor(sk)}
		}
		var targets []*snapshot.Target
		e, err := snapshot.ReadEach(context.Background(), []string{path}, o, func(tg *snapshot.Target) error {
			targets = append(targets, trim(tg))
			return nil
		})
		require.NoError(t, err)
		e.Targets = targets
		evs = append(evs, e)
	}
	require.NotEmpty(t, evs, "the survey chose windows")
	opts.Survey = sv
	rep, err := diagnose.Diagnose(snapshot.MergeRanges(evs...), opts)
	require.NoError(t, err)
	return rep
}

// selectionFleet runs a scenario as formatFleet does (three of its eight
// pods, scraped every 30 s), or whole when its traffic has per-pod
// weights, which cannot be scaled to fewer pods.
func selectionFleet(t *testing.T, spec fleetsim.ScenarioSpec) *fleetsim.Fleet {
	t.Helper()
	for _, ph := range spec.Config.Workload.Phases {
		if ph.Weights != nil {
			cfg := spec.Config
			cfg.ScrapeInterval = 30 * time.Second
			fleet, err := fleetsim.Run(cfg)
			require.NoError(t, err)
			return fleet
		}
	}
	_, fleet := formatFleet(t, spec.Name)
	return fleet
}

// evidenceSamples counts the samples of ev (a histogram sample counts its
// buckets, _sum and _count).
func evidenceSamples(ev *snapshot.Evidence) int {
	n := 0
	for _, tg := range ev.Targets {
		for _, f := range tg.Families {
			for _, s := range f.Series {
				n += s.Len()
			}
			for _, h := range f.Histograms {
				n += h.Len() * (len(h.Bounds) + 2)
			}
		}
	}
	return n
}
