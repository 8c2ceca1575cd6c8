package diagnose_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/diagnose"
	"github.com/whyslow/whyslow/internal/fleetsim"
	"github.com/whyslow/whyslow/internal/matrix"
	"github.com/whyslow/whyslow/report"
	"github.com/whyslow/whyslow/report/html"
	"github.com/whyslow/whyslow/rules"
	"github.com/whyslow/whyslow/snapshot"
)

// simulate runs cfg and reads its dumps through snapshot in memory
// (matrix.Evidence: the evidence `whyslow diagnose DIR` reads from the
// same dumps on disk, which TestFormatsSameDiagnosis reads from files).
func simulate(t testing.TB, cfg fleetsim.Config) *snapshot.Evidence {
	t.Helper()
	_, ev := simulateFleet(t, cfg)
	return ev
}

// scenarioReports caches the default diagnosis of each named fleetsim
// scenario, which TestScenarios and the HTML tests share: a scenario is
// simulated once per test binary. The reports are read, never modified.
var scenarioReports struct {
	sync.Mutex
	m map[string]*scenarioEntry
}

type scenarioEntry struct {
	once sync.Once
	rep  *report.Report
	err  error
}

// scenarioReport returns the default diagnosis of the named scenario's
// dumps, read through snapshot (see simulate).
func scenarioReport(t testing.TB, spec fleetsim.ScenarioSpec) *report.Report {
	t.Helper()
	rep, err := scenarioDiagnosis(spec)
	require.NoError(t, err, spec.Name)
	return rep
}

// scenarioDiagnosis is scenarioReport, returning the error; safe to call
// from any goroutine.
func scenarioDiagnosis(spec fleetsim.ScenarioSpec) (*report.Report, error) {
	scenarioReports.Lock()
	if scenarioReports.m == nil {
		scenarioReports.m = map[string]*scenarioEntry{}
	}
	e := scenarioReports.m[spec.Name]
	if e == nil {
		e = &scenarioEntry{}
		scenarioReports.m[spec.Name] = e
	}
	scenarioReports.Unlock()
	e.once.Do(func() {
		fleet, err := fleetsim.Run(spec.Config)
		if err != nil {
			e.err = err
			return
		}
		e.rep, e.err = diagnose.Diagnose(matrix.Evidence(fleet), diagnose.Options{})
	})
	return e.rep, e.err
}

// simulateFleet is simulate, also returning the fleet's ground truth.
func simulateFleet(t testing.TB, cfg fleetsim.Config) (*fleetsim.Fleet, *snapshot.Evidence) {
	t.Helper()
	fleet, err := fleetsim.Run(cfg)
	require.NoError(t, err)
	return fleet, matrix.Evidence(fleet)
}

// readBack lets write fill a temporary directory (dumps, a TSDB) and reads
// it back through snapshot.
func readBack(t testing.TB, write func(dir string) error) *snapshot.Evidence {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, write(dir))
	ev, err := snapshot.Read(context.Background(), []string{dir}, snapshot.Options{})
	require.NoError(t, err)
	return ev
}

// diagnoseTable diagnoses ev with the default options; the facts table
// is for failure messages.
func diagnoseTable(t testing.TB, ev *snapshot.Evidence) (*report.Report, string) {
	t.Helper()
	rep, err := diagnose.Diagnose(ev, diagnose.Options{})
	require.NoError(t, err)
	return rep, factsTable(rep)
}

// factsTable prints the facts of a report, for failure messages.
func factsTable(rep *report.Report) string {
	var b strings.Builder
	ids := make([]string, 0, len(rep.Facts))
	for id := range rep.Facts {
		ids = append(ids, string(id))
	}
	sort.Strings(ids)
	fmt.Fprintf(&b, "verdict %s: %s\nwindows: baseline %v–%v (%s) incident %v–%v (%s)\n", rep.Verdict, rep.Summary,
		rep.Windows.Baseline.Start.Format(time.TimeOnly), rep.Windows.Baseline.End.Format(time.TimeOnly), rep.Windows.Baseline.From,
		rep.Windows.Incident.Start.Format(time.TimeOnly), rep.Windows.Incident.End.Format(time.TimeOnly), rep.Windows.Incident.From)
	if cp := rep.Windows.ChangePoint; cp != nil {
		fmt.Fprintf(&b, "change point %v score %.2f used %v\n", cp.Time.Format(time.TimeOnly), cp.Score, cp.Used)
	}
	for _, id := range ids {
		f := rep.Facts[diagnose.FactIDForTest(id)]
		if f.Missing != nil {
			fmt.Fprintf(&b, "  %-22s missing: %s\n", id, f.Missing)
			continue
		}
		fmt.Fprintf(&b, "  %-22s %10.4g (n=%g)   baseline %10.4g (n=%g)\n", id, float64(f.Incident.Value), float64(f.Incident.Count), float64(f.Baseline.Value), float64(f.Baseline.Count))
	}
	for _, s := range rep.Symptoms {
		fmt.Fprintf(&b, "symptom %s present=%v evaluable=%v\n", s.ID, s.Present, s.Evaluable)
	}
	for _, h := range rep.Hypotheses {
		fmt.Fprintf(&b, "hypothesis %-22s %-14s %.2f\n", h.ID, h.Status, h.Score)
		for _, c := range h.CounterEvidence {
			fmt.Fprintf(&b, "     counter: %s\n", c.Text)
		}
		for _, m := range h.Missing {
			fmt.Fprintf(&b, "     missing: %s\n", m)
		}
	}
	for _, w := range rep.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", w)
	}
	return b.String()
}

// shortScenarios run under -short: one per kind of outcome.
var shortScenarios = map[string]bool{"healthy": true, "burst": true, "hot-replica": true, "restart": true}

// TestScenarios diagnoses every named fleetsim scenario from dumps written
// by the simulator and read back through snapshot, with default options:
// the verdict must be the scenario's expected hypothesis (or no-incident),
// every other hypothesis must rank below it, and the counter-cases must
// not read as incidents.
func TestScenarios(t *testing.T) {
	for _, spec := range fleetsim.Scenarios() {
		if testing.Short() && !shortScenarios[spec.Name] {
			continue
		}
		t.Run(spec.Name, func(t *testing.T) {
			t.Parallel()
			rep := scenarioReport(t, spec)
			table := factsTable(rep)
			require.Equal(t, spec.Expect, string(rep.Verdict), "%s: %s\n%s", spec.Name, spec.Description, table)
			if spec.Expect == "no-incident" {
				for _, h := range rep.Hypotheses {
					assert.NotEqual(t, "supported", string(h.Status), "%s supported in a healthy fleet\n%s", h.ID, table)
				}
			} else {
				require.NotEmpty(t, rep.Hypotheses)
				assert.Equal(t, spec.Expect, string(rep.Hypotheses[0].ID), "the primary hypothesis ranks first\n%s", table)
				for _, h := range rep.Hypotheses[1:] {
					assert.NotEqual(t, spec.Expect, string(h.ID))
				}
			}
			if spec.Expect != "no-incident" {
				// The incident starts at fleetsim.IncidentStart; a level
				// shift is found by the change-point search, bursts fall
				// back to halves, which start there too.
				start := spec.Config.Start
				if start.IsZero() {
					start = fleetsim.DefaultStart
				}
				assert.WithinDuration(t, start.Add(fleetsim.IncidentStart), rep.Windows.Incident.Start, 4*time.Minute, "%s", table)
			}
			checkSummary(t, "scenario-"+spec.Name, rep)
			switch spec.Name {
			case "restart":
				assert.True(t, hasWarning(rep, "counter reset"), "a restart inside the window is warned about\n%s", table)
			case "mixed-versions":
				assert.True(t, hasWarning(rep, "version skew"), "mixed versions are warned about\n%s", table)
			}
		})
	}
}

func hasWarning(rep *report.Report, substr string) bool {
	for _, w := range rep.Warnings {
		if strings.Contains(w, substr) {
			return true
		}
	}
	return false
}

// Fleets that serve several models: each model is diagnosed apart.

// modelFleet simulates scenario on pods named prefix-0..n-1 serving model,
// with the scenario's per-pod load, scraped every 30 s, and returns its
// dumps as evidence.
func modelFleet(t *testing.T, scenario, model, prefix string, pods int) *snapshot.Evidence {
	t.Helper()
	spec, ok := fleetsim.LookupScenario(scenario)
	require.True(t, ok, scenario)
	cfg := spec.Config
	require.Empty(t, cfg.Pods, "scenario %s configures its pods itself", scenario)
	require.Zero(t, cfg.NumPods)
	for i := 0; i < pods; i++ {
		cfg.Pods = append(cfg.Pods, fleetsim.PodConfig{Name: fmt.Sprintf("%s-%d", prefix, i)})
	}
	cfg.ModelName = model
	fleet, err := fleetsim.Run(perPodLoad(t, cfg, pods))
	require.NoError(t, err)
	b := snapshot.NewBuilder(snapshot.Options{})
	for _, p := range fleet.Pods {
		for _, sc := range p.Scrapes {
			name := fmt.Sprintf("%s_%s.prom", p.Name, sc.Time.UTC().Format("2006-01-02T15-04-05Z"))
			require.NoError(t, b.AddDump(name, sc.VLLM(), time.Time{}))
		}
	}
	return b.Evidence()
}

// A fleet serving two models, one in trouble and one healthy, is
// diagnosed per model: signals are never merged across models, and each
// group gets its own verdict.
func TestTwoModelsAreDiagnosedApart(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates two fleets")
	}
	sick := modelFleet(t, "long-prompts", "llama-70b", "llama", 3)
	well := modelFleet(t, "healthy", "qwen-7b", "qwen", 3)
	ev := snapshot.Merge(sick, well)
	require.Len(t, ev.Targets, 6)

	rep, err := diagnose.Diagnose(ev, diagnose.Options{})
	require.NoError(t, err)
	require.Len(t, rep.Groups, 2, "split by model_name by default")
	verdicts := map[string]rules.Verdict{}
	for _, g := range rep.Groups {
		verdicts[g.Group["model_name"]] = g.Verdict
		assert.Len(t, g.Inputs.Replicas, 3, "each model's own replicas")
		for _, r := range g.Inputs.Replicas {
			assert.Contains(t, r, g.Group["model_name"][:4], "replica %s in group %v", r, g.Group)
		}
	}
	assert.Equal(t, rules.Verdict(rules.PrefillLongPrompts), verdicts["llama-70b"])
	assert.Equal(t, rules.NoIncident, verdicts["qwen-7b"])
	assert.Equal(t, rules.Verdict(rules.PrefillLongPrompts), rep.Verdict, "the top level carries the most severe group's verdict")
	assert.Contains(t, rep.Summary, "split by model_name")

	// The top level carries the union of the groups' symptoms, each
	// naming its group, in the Go report and in the JSON.
	var union []rules.Symptom
	for _, g := range rep.Groups {
		for _, s := range g.Symptoms {
			s.Group = g.Group
			union = append(union, s)
		}
	}
	assert.Equal(t, union, rep.Symptoms)
	var js bytes.Buffer
	require.NoError(t, rep.WriteJSON(&js))
	var doc struct {
		Symptoms []struct {
			ID      string            `json:"id"`
			Present bool              `json:"present"`
			Group   map[string]string `json:"group"`
		} `json:"symptoms"`
	}
	require.NoError(t, json.Unmarshal(js.Bytes(), &doc))
	require.Len(t, doc.Symptoms, len(union))
	present := map[string][]string{}
	for _, s := range doc.Symptoms {
		require.Len(t, s.Group, 1, "%s names its model", s.ID)
		if s.Present {
			present[s.Group["model_name"]] = append(present[s.Group["model_name"]], s.ID)
		}
	}
	assert.Contains(t, present["llama-70b"], "ttft", "the sick model's symptoms at the top level")
	assert.Empty(t, present["qwen-7b"], "the healthy model has none")
	// Text and Markdown say the same symptoms for the group.
	var txt, md bytes.Buffer
	require.NoError(t, rep.WriteText(&txt))
	require.NoError(t, rep.WriteMarkdown(&md))
	line := "symptoms present: " + strings.Join(present["llama-70b"], ", ")
	var page bytes.Buffer
	require.NoError(t, html.Write(&page, rep))
	assert.Contains(t, txt.String(), line)
	assert.Contains(t, md.String(), line)
	assert.Contains(t, page.String(), line)

	// Model selects one group's replicas and nothing else.
	only, err := diagnose.Diagnose(ev, diagnose.Options{Model: "qwen-7b"})
	require.NoError(t, err)
	assert.Empty(t, only.Groups)
	assert.Equal(t, rules.NoIncident, only.Verdict)
	assert.Len(t, only.Inputs.Replicas, 3)

	// Quantiles refuse to mix the models unless one is chosen.
	_, err = diagnose.FleetQuantiles(ev, diagnose.QuantileRequest{Metric: "ttft"})
	assert.ErrorIs(t, err, diagnose.ErrSeveralModels)
	assert.NotContains(t, err.Error(), "--", "a library error names no command-line flag")
	assert.Contains(t, err.Error(), "FleetQuantilesBy")
	q, err := diagnose.FleetQuantiles(ev, diagnose.QuantileRequest{Metric: "ttft", Match: map[string]string{"model_name": "llama-70b"}})
	require.NoError(t, err)
	assert.Len(t, q.Replicas, 3)
}

// FleetQuantilesBy (the command's quantile --by) and Diagnose build the
// fleet histogram on one path: per model, the same TTFT p95 from the same
// observations over the same window.
func TestFleetQuantilesByMatchesDiagnose(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates two fleets")
	}
	ev := snapshot.Merge(modelFleet(t, "long-prompts", "llama-70b", "llama", 2), modelFleet(t, "healthy", "qwen-7b", "qwen", 2))
	rep, err := diagnose.Diagnose(ev, diagnose.Options{})
	require.NoError(t, err)
	require.Len(t, rep.Groups, 2)
	for _, g := range rep.Groups {
		inc := g.Windows.Incident
		groups, err := diagnose.FleetQuantilesBy(ev, diagnose.QuantileRequest{
			Metric: "ttft", Quantiles: []float64{0.95}, Window: snapshot.Window{Start: inc.Start, End: inc.End},
		}, "model_name")
		require.NoError(t, err)
		require.Len(t, groups, 2)
		var got *report.QuantileReport
		for _, qg := range groups {
			require.NoError(t, qg.Err)
			if qg.Value == g.Group["model_name"] {
				got = qg.Report
			}
		}
		require.NotNil(t, got, "group %v", g.Group)
		var want report.Quantile
		for _, s := range g.Signals.Fleet {
			if s.ID == "ttft" {
				require.NotNil(t, s.Incident)
				want = s.Incident.Quantiles[1]
			}
		}
		require.Equal(t, 0.95, want.Q)
		require.Len(t, got.Fleet, 1)
		assert.Equal(t, want.Count, got.Fleet[0].Count, "model %s", g.Group["model_name"])
		assert.Equal(t, want.Value, got.Fleet[0].Value, "model %s", g.Group["model_name"])
		assert.Len(t, got.Replicas, 2, "only the model's own replicas")
	}
	_, err = diagnose.FleetQuantilesBy(ev, diagnose.QuantileRequest{Metric: "ttft"}, "no_such_label")
	assert.ErrorContains(t, err, `no series of ttft carries label "no_such_label"`)
}

// TestReplicaTimelinesBounded: a fleet of more than MaxReplicaTimelines
// pods gets its fleet timelines whole and per-replica timelines for
// MaxReplicaTimelines replicas only, the culprit among them; a fleet of
// fewer gets every replica's.
func TestReplicaTimelinesBounded(t *testing.T) {
	spec, ok := fleetsim.LookupScenario("hot-replica")
	require.True(t, ok)
	for _, pods := range []int{8, 20} {
		cfg := spec.Config
		cfg.Pods = make([]fleetsim.PodConfig, pods)
		cfg.Workload.Phases = append([]fleetsim.Phase(nil), cfg.Workload.Phases...)
		for i := range cfg.Workload.Phases {
			p := &cfg.Workload.Phases[i]
			p.Rate *= float64(pods) / 8
			if p.Weights != nil {
				p.Weights = make([]float64, pods)
				for j := range p.Weights {
					p.Weights[j] = 1
				}
				p.Weights[0] = 3
			}
		}
		rep, err := diagnose.Diagnose(simulate(t, cfg), diagnose.Options{})
		require.NoError(t, err)
		fleet := map[string]bool{}
		replicas := map[string]bool{}
		for _, tl := range rep.Timelines {
			if tl.Replica == "" {
				fleet[tl.Signal] = true
			} else {
				replicas[tl.Replica] = true
			}
		}
		assert.Contains(t, fleet, "ttft", "pods=%d", pods)
		assert.Len(t, replicas, min(pods, diagnose.MaxReplicaTimelines), "pods=%d", pods)
		if c := rep.NamedCulprit(); c != nil && c.Kind == "replica" {
			assert.Contains(t, replicas, c.Name, "pods=%d: the culprit's timelines are kept", pods)
		} else if pods > diagnose.MaxReplicaTimelines {
			t.Errorf("pods=%d: no replica culprit named (verdict %s): the test cannot check the culprit is kept", pods, rep.Verdict)
		}
	}
}
