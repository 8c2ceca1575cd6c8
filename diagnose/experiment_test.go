package diagnose_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/diagnose"
	"github.com/whyslow/whyslow/internal/fleetsim"
	"github.com/whyslow/whyslow/rules"
	"github.com/whyslow/whyslow/snapshot"
)

// The scenarios replay one seeded request trace per repeat under two
// engine settings that differ in exactly one variable, write the fleets
// as dump folders, read them back through snapshot and judge them. No
// metric value or verdict is set by hand.

// workload is a chat mix with long outputs: decode-heavy.
func expWorkload(rate float64) fleetsim.Workload {
	ph := fleetsim.DefaultPhase
	ph.Rate = rate
	ph.Output = fleetsim.Dist{Median: 400, Sigma: 0.5, Min: 16}
	ph.MaxTokens = 2048
	return fleetsim.Workload{Phases: []fleetsim.Phase{ph}}
}

// simRun simulates one run and reads its dumps back as evidence.
func expSimRun(t testing.TB, name string, cfg fleetsim.Config) diagnose.Run {
	t.Helper()
	return diagnose.Run{Name: name, Evidence: simulate(t, cfg)}
}

// arms replays repeat i's trace (TraceSeed 100+i, engine Seed 1+i) under
// the baseline and the treatment engine, for n repeats.
func expArms(t testing.TB, n int, rate, treatRate float64, base, treat fleetsim.EngineConfig) (b, tr []diagnose.Run) {
	t.Helper()
	for i := range n {
		cfg := fleetsim.Config{
			Seed: uint64(1 + i), TraceSeed: uint64(100 + i), NumPods: 2,
			Duration: 10 * time.Minute, Engine: base, Workload: expWorkload(rate),
		}
		b = append(b, expSimRun(t, fmt.Sprintf("baseline-%d", i+1), cfg))
		cfg.Engine = treat
		cfg.Workload = expWorkload(treatRate)
		tr = append(tr, expSimRun(t, fmt.Sprintf("treatment-%d", i+1), cfg))
	}
	return b, tr
}

func expPlan(t testing.TB, id rules.HypothesisID, from, to string) rules.Plan {
	t.Helper()
	for _, r := range rules.Map() {
		if r.ID == id {
			p := r.Experiment
			p.Change.From, p.Change.To = from, to
			return p
		}
	}
	t.Fatalf("no rule %s", id)
	return rules.Plan{}
}

// first returns the first element of xs that ok accepts, or the zero
// value.
func first[T any](xs []T, ok func(T) bool) T {
	for _, x := range xs {
		if ok(x) {
			return x
		}
	}
	var zero T
	return zero
}

func expReason(j rules.Judgement, kind string, metric rules.FactID) rules.Reason {
	return first(j.Reasons, func(r rules.Reason) bool { return r.Kind == kind && r.Metric == metric })
}

// expFalsifier returns the reason of the plan's falsifier whose text
// starts with prefix.
func expFalsifier(j rules.Judgement, prefix string) rules.Reason {
	return first(j.Reasons, func(r rules.Reason) bool { return r.Kind == "falsifier" && strings.HasPrefix(r.Text, prefix) })
}

func expMetric(j rules.Judgement, id rules.FactID) rules.Comparison {
	return first(j.Metrics, func(c rules.Comparison) bool { return c.Metric == id })
}

var expOpts = diagnose.ExperimentOptions{WarmUp: 2 * time.Minute}

// expJudge simulates three repeats per arm (expArms) and judges them with
// the map's plan for hypothesis id, its variable changed from -> to.
func expJudge(t *testing.T, rate, treatRate float64, base, treat fleetsim.EngineConfig, id rules.HypothesisID, from, to string) (*diagnose.ExperimentReport, rules.Judgement) {
	t.Helper()
	b, tr := expArms(t, 3, rate, treatRate, base, treat)
	rep, err := diagnose.JudgeExperiment(expPlan(t, id, from, to), b, tr, expOpts)
	require.NoError(t, err)
	t.Log(rep)
	return rep, rep.Judgement
}

// Lowering max_num_seqs under decode pressure: TPOT improves, but the
// queue and TTFT grow by far more, so the plan's falsification condition
// "queue and TTFT get worse by more than TPOT improves" fires.
func TestExperimentDecodePressureQueueOutweighs(t *testing.T) {
	base, treat := fleetsim.DefaultEngine, fleetsim.DefaultEngine
	base.MaxNumSeqs, treat.MaxNumSeqs = 128, 96
	rep, j := expJudge(t, 12, 12, base, treat, rules.DecodePressure, "128", "96")

	tpot := expMetric(j, rules.TPOTP95)
	assert.Less(t, tpot.Change, -0.1, "TPOT p95 improves by more than 10%%\n%s", rep)
	assert.Equal(t, 3, tpot.Down, "in every repeat")
	assert.Greater(t, expMetric(j, rules.QueueTimeP95).Change, 1.0, "queue time p95 more than doubles")
	assert.Equal(t, rules.Reject, j.Verdict, rep.String())
	assert.Equal(t, "fired", expFalsifier(j, "queue and TTFT get worse by more than TPOT improves").Outcome, rep.String())
	assert.Contains(t, expFalsifier(j, "queue and TTFT get worse by more than TPOT improves").Text, "got worse by more than tpot_p95 improved")
	assert.Equal(t, "broke", expReason(j, "guard", rules.TTFTP95).Outcome)
	for _, w := range j.Workload {
		assert.Equal(t, "same", w.Outcome, w.Text)
	}
	// max_num_seqs is in no info metric: reported, not guessed.
	assert.False(t, rep.Configuration.Visible)
	assert.Empty(t, rep.Configuration.Differences)
	assert.Contains(t, strings.Join(rep.Warnings, "\n"), "max_num_seqs is not visible")
	assert.Contains(t, strings.Join(rep.Warnings, "\n"), "smallest attainable p is 0.100")
}

// At low load the running sequences never reach the limit: lowering
// max_num_seqs changes nothing, TPOT does not improve and the
// decode-pressure hypothesis is rejected.
func TestExperimentDecodePressureRejected(t *testing.T) {
	base, treat := fleetsim.DefaultEngine, fleetsim.DefaultEngine
	base.MaxNumSeqs, treat.MaxNumSeqs = 128, 96
	rep, j := expJudge(t, 6, 6, base, treat, rules.DecodePressure, "128", "96")
	assert.Equal(t, rules.Reject, j.Verdict, rep.String())
	assert.Equal(t, "fired", expFalsifier(j, "active sequences fall but TPOT p95 does not improve").Outcome, rep.String())
	assert.NotEqual(t, "held", expReason(j, "expect", rules.TPOTP95).Outcome)
}

// More KV space under KV pressure: preemptions vanish, E2E p99 falls, and
// the experiment is adopted. The info metric shows gpu_memory_utilization
// changed; num_gpu_blocks changed with it but is derived, not a second
// variable.
func TestExperimentKVPreemptionAdopted(t *testing.T) {
	base := fleetsim.DefaultEngine.WithGPUMemoryUtilization(0.6)
	treat := fleetsim.DefaultEngine.WithGPUMemoryUtilization(0.9)
	rep, j := expJudge(t, 10, 10, base, treat, rules.KVPreemption, "0.6", "0.9")
	assert.Equal(t, rules.Adopt, j.Verdict, rep.String())
	assert.Equal(t, "held", expReason(j, "expect", rules.PreemptionRate).Outcome)
	assert.Equal(t, "held", expReason(j, "expect", rules.E2EP99).Outcome)

	cc := rep.Configuration
	assert.True(t, cc.Visible, cc.Text)
	assert.Equal(t, []string{"vllm:cache_config_info"}, cc.Sources)
	var names []string
	for _, d := range cc.Differences {
		names = append(names, d.Name)
		if d.Name == "num_gpu_blocks" {
			assert.NotEmpty(t, d.DerivedFrom)
		}
	}
	assert.ElementsMatch(t, []string{"gpu_memory_utilization", "num_gpu_blocks"}, names)
	for _, w := range rep.Warnings {
		assert.NotContains(t, w, "configuration:", "one variable changed")
	}

	// The JSON form: verdict string, snake_case, non-finite as null.
	out, err := json.Marshal(rep)
	require.NoError(t, err)
	var back map[string]any
	require.NoError(t, json.Unmarshal(out, &back))
	assert.Equal(t, "adopt", back["verdict"])
	assert.Contains(t, back, "configuration")
	assert.Contains(t, back, "baseline_runs")
	assert.Contains(t, string(out), `"warm_up_seconds":120`)
}

// The treatment arm received 40% more requests: the arms did not see the
// same workload and the tool refuses to judge, naming what differs.
func TestExperimentWorkloadDiffersRefused(t *testing.T) {
	rep, j := expJudge(t, 8, 11.2, fleetsim.DefaultEngine, fleetsim.DefaultEngine.WithGPUMemoryUtilization(0.8), rules.KVPreemption, "0.9", "0.8")
	assert.Equal(t, rules.Refused, j.Verdict, rep.String())
	var texts []string
	for _, r := range j.Reasons {
		assert.Equal(t, "refused", r.Outcome)
		texts = append(texts, r.Text)
	}
	assert.Contains(t, strings.Join(texts, "\n"), "arrival_rate")
	assert.Contains(t, strings.Join(texts, "\n"), "requests")
}

func TestExperimentErrorsAndWarmUp(t *testing.T) {
	b, tr := expArms(t, 1, 6, 6, fleetsim.DefaultEngine, fleetsim.DefaultEngine)
	plan := expPlan(t, rules.DecodePressure, "128", "96")

	// Too few runs: refused, not an error.
	rep, err := diagnose.JudgeExperiment(plan, b, tr, expOpts)
	require.NoError(t, err)
	assert.Equal(t, rules.Refused, rep.Verdict)
	assert.Contains(t, rep.Reasons[0].Text, "baseline has 1 runs, the plan needs >= 3")

	// A warm-up longer than the run.
	_, err = diagnose.JudgeExperiment(plan, b, tr, diagnose.ExperimentOptions{WarmUp: time.Hour})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "baseline run 1 (baseline-1)")
	assert.Contains(t, err.Error(), "warm-up leaves no measurable window")

	// A window selecting a part of a longer series.
	start := b[0].Evidence.Targets[0].Scrapes[0].Time
	part := b[0]
	part.Window = snapshot.Window{Start: start, End: start.Add(6 * time.Minute)}
	rep, err = diagnose.JudgeExperiment(plan, []diagnose.Run{part}, tr, expOpts)
	require.NoError(t, err)
	assert.Contains(t, rep.Baseline[0].Window, start.Add(2*time.Minute).UTC().Format(time.RFC3339))
	assert.InDelta(t, 240, rep.Baseline[0].DurationSeconds, 1e-9)

	// No evidence at all.
	_, err = diagnose.JudgeExperiment(plan, []diagnose.Run{{Name: "empty"}}, tr, expOpts)
	require.Error(t, err)
}

// Two dumps per replica cannot exclude warm-up: warned, then measured
// whole.
func TestExperimentTwoDumpsWarn(t *testing.T) {
	run := expSimRun(t, "two-dumps", fleetsim.Config{Seed: 1, NumPods: 2, Duration: 10 * time.Minute, ScrapeInterval: 10 * time.Minute, Workload: expWorkload(6)})
	runs := []diagnose.Run{run, run, run}
	rep, err := diagnose.JudgeExperiment(expPlan(t, rules.DecodePressure, "128", "96"), runs, runs, expOpts)
	require.NoError(t, err)
	assert.Contains(t, strings.Join(rep.Warnings, "\n"), "warm-up cannot be excluded")
}
