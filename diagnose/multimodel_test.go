package diagnose_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/diagnose"
	"github.com/whyslow/whyslow/internal/fleetsim"
	"github.com/whyslow/whyslow/rules"
	"github.com/whyslow/whyslow/snapshot"
)

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
	const of = 8 // the scenarios' fleet size
	cfg.NumPods = 0
	for i := 0; i < pods; i++ {
		cfg.Pods = append(cfg.Pods, fleetsim.PodConfig{Name: fmt.Sprintf("%s-%d", prefix, i)})
	}
	cfg.Workload.Phases = slices.Clone(cfg.Workload.Phases)
	for i := range cfg.Workload.Phases {
		cfg.Workload.Phases[i].Rate *= float64(pods) / of
	}
	cfg.ScrapeInterval = 30 * time.Second
	cfg.ModelName = model
	fleet, err := fleetsim.Run(cfg)
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
		var got *diagnose.QuantileReport
		for _, qg := range groups {
			require.NoError(t, qg.Err)
			if qg.Value == g.Group["model_name"] {
				got = qg.Report
			}
		}
		require.NotNil(t, got, "group %v", g.Group)
		var want diagnose.Quantile
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
