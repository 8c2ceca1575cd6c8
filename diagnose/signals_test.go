package diagnose_test

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/diagnose"
	"github.com/whyslow/whyslow/report"
	"github.com/whyslow/whyslow/rules"
	"github.com/whyslow/whyslow/snapshot"
)

// t0 is the first scrape of the hand-built fleets.
var t0 = time.Date(2026, 9, 22, 10, 0, 0, 0, time.UTC)

// podState is the cumulative state of one vLLM V1 pod at one scrape, for
// hand-built evidence: counters are totals since start, ttft holds the
// cumulative counts at ttftBounds.
type podState struct {
	model   string
	ttft    []float64 // cumulative, at ttftBounds
	ttftSum float64
	stop    float64
	abort   float64
	waiting float64
	running float64
	kv      float64
	gpuPct  float64 // NaN: no GPU exporter
}

var ttftBounds = []string{"0.1", "0.5", "1", "+Inf"}

// exposition writes the states (one per model served) as a text 0.0.4
// dump.
func exposition(states ...podState) string {
	var b strings.Builder
	b.WriteString("# TYPE vllm:time_to_first_token_seconds histogram\n")
	for _, s := range states {
		for i, le := range ttftBounds {
			fmt.Fprintf(&b, "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=%q,model_name=%q} %g\n", le, s.model, s.ttft[i])
		}
		fmt.Fprintf(&b, "vllm:time_to_first_token_seconds_sum{engine=\"0\",model_name=%q} %g\n", s.model, s.ttftSum)
		fmt.Fprintf(&b, "vllm:time_to_first_token_seconds_count{engine=\"0\",model_name=%q} %g\n", s.model, s.ttft[len(s.ttft)-1])
	}
	b.WriteString("# TYPE vllm:request_success_total counter\n")
	for _, s := range states {
		fmt.Fprintf(&b, "vllm:request_success_total{engine=\"0\",finished_reason=\"stop\",model_name=%q} %g\n", s.model, s.stop)
		fmt.Fprintf(&b, "vllm:request_success_total{engine=\"0\",finished_reason=\"length\",model_name=%q} 0\n", s.model)
		fmt.Fprintf(&b, "vllm:request_success_total{engine=\"0\",finished_reason=\"abort\",model_name=%q} %g\n", s.model, s.abort)
	}
	b.WriteString("# TYPE vllm:num_requests_waiting gauge\n")
	for _, s := range states {
		fmt.Fprintf(&b, "vllm:num_requests_waiting{engine=\"0\",model_name=%q} %g\n", s.model, s.waiting)
	}
	b.WriteString("# TYPE vllm:num_requests_running gauge\n")
	for _, s := range states {
		fmt.Fprintf(&b, "vllm:num_requests_running{engine=\"0\",model_name=%q} %g\n", s.model, s.running)
	}
	b.WriteString("# TYPE vllm:kv_cache_usage_perc gauge\n")
	for _, s := range states {
		fmt.Fprintf(&b, "vllm:kv_cache_usage_perc{engine=\"0\",model_name=%q} %g\n", s.model, s.kv)
	}
	if len(states) > 0 && !math.IsNaN(states[0].gpuPct) {
		b.WriteString("# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n")
		fmt.Fprintf(&b, "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",Hostname=\"node\"} %g\n", states[0].gpuPct)
	}
	return b.String()
}

// scrape is one dump of one pod.
type scrape struct {
	pod    string
	at     time.Time
	states []podState
}

// evidenceOf parses the dumps as snapshot would read them from files.
func evidenceOf(t testing.TB, scrapes ...scrape) *snapshot.Evidence {
	t.Helper()
	var evs []*snapshot.Evidence
	for _, s := range scrapes {
		name := s.pod + "/" + s.at.UTC().Format("2006-01-02T15-04-05Z") + ".prom"
		ev, err := snapshot.ParseDump([]byte(exposition(s.states...)), name, snapshot.Options{})
		require.NoError(t, err, name)
		evs = append(evs, ev)
	}
	return snapshot.Merge(evs...)
}

// twoPodFleet has pods a and b scraped at t0, +60 s and +120 s: the first
// minute is the baseline, the second the incident, in which pod a's first
// tokens become slow while pod b stays fast.
func twoPodFleet(t testing.TB) *snapshot.Evidence {
	a := []podState{
		{ttft: []float64{0, 0, 0, 0}, waiting: 2, running: 10, kv: 0.5, gpuPct: 40},
		{ttft: []float64{100, 100, 100, 100}, ttftSum: 5, stop: 100, waiting: 4, running: 10, kv: 0.5, gpuPct: 40},
		{ttft: []float64{100, 100, 200, 200}, ttftSum: 80, stop: 190, abort: 10, waiting: 6, running: 12, kv: 0.5, gpuPct: 40},
	}
	b := []podState{
		{ttft: []float64{0, 0, 0, 0}, kv: 0.9, gpuPct: 40},
		{ttft: []float64{100, 100, 100, 100}, ttftSum: 5, stop: 100, kv: 0.9, gpuPct: 40},
		{ttft: []float64{400, 400, 400, 400}, ttftSum: 20, stop: 400, kv: 0.9, gpuPct: 40},
	}
	var ss []scrape
	for i := range a {
		a[i].model, b[i].model = "m", "m"
		at := t0.Add(time.Duration(i) * time.Minute)
		ss = append(ss, scrape{"a", at, a[i : i+1]}, scrape{"b", at, b[i : i+1]})
	}
	return evidenceOf(t, ss...)
}

func givenWindows() diagnose.Options {
	return diagnose.Options{
		Baseline: snapshot.Window{Start: t0, End: t0.Add(time.Minute)},
		Incident: snapshot.Window{Start: t0.Add(time.Minute), End: t0.Add(2 * time.Minute)},
	}
}

func TestFactsFromHandBuiltEvidence(t *testing.T) {
	ev := twoPodFleet(t)
	rep, err := diagnose.Diagnose(ev, givenWindows())
	require.NoError(t, err)
	fact := func(id rules.FactID) rules.Fact {
		f, ok := rep.Facts[id]
		require.True(t, ok, "fact %s not computed", id)
		return f
	}

	// Fleet TTFT: buckets merged first. Incident: a has 100 in (0.5, 1],
	// b has 300 <= 0.1; rank 0.95*400 = 380 lies in (0.5, 1]:
	// 0.5 + (380-300)/100 * 0.5 = 0.9. The average of the two pods' p95s
	// (0.975 and 0.095) would be 0.535.
	ttft := fact(rules.TTFTP95)
	assert.NoError(t, ttft.Missing)
	assert.InDelta(t, 0.9, float64(ttft.Incident.Value), 1e-9)
	assert.Equal(t, 0.5, float64(ttft.Incident.Lower))
	assert.Equal(t, 1.0, float64(ttft.Incident.Upper))
	assert.Equal(t, 400.0, float64(ttft.Incident.Count))
	assert.InDelta(t, 0.095, float64(ttft.Baseline.Value), 1e-9)
	assert.Equal(t, 200.0, float64(ttft.Baseline.Count))
	assert.Contains(t, ttft.Source, "vllm:time_to_first_token_seconds")
	assert.NotEmpty(t, ttft.Incident.Window)
	assert.NotEmpty(t, ttft.Baseline.Window)

	// Shares and rates: 400 finished in the incident minute, 10 aborted.
	assert.InDelta(t, 10.0/400, float64(fact(rules.AbortShare).Incident.Value), 1e-12)
	assert.InDelta(t, 400.0/60, float64(fact(rules.CompletionRate).Incident.Value), 1e-9)
	assert.ErrorContains(t, fact(rules.ErrorShare).Missing, "error", "an uncounted reason is missing, never zero")
	// b finished 300 of 400: 300/400 * 2 replicas = 1.5.
	assert.InDelta(t, 1.5, float64(fact(rules.ReplicaShareMax).Incident.Value), 1e-12)
	// Arrivals: 400 completions + growth of waiting+running (14 -> 18).
	assert.InDelta(t, (400.0+4)/60, float64(fact(rules.ArrivalRate).Incident.Value), 1e-9)

	// Gauges: waiting summed over pods at each scrape (4, then 6).
	assert.InDelta(t, 5, float64(fact(rules.WaitingMean).Incident.Value), 1e-12)
	assert.InDelta(t, 6, float64(fact(rules.WaitingMax).Incident.Value), 1e-12)
	assert.InDelta(t, 2.0/60, float64(fact(rules.WaitingSlope).Incident.Value), 1e-12)
	assert.InDelta(t, 11, float64(fact(rules.RunningMean).Incident.Value), 1e-12) // (10+12)/2 + 0
	// KV usage is averaged across replicas; its max is the worst replica's.
	assert.InDelta(t, 0.7, float64(fact(rules.KVUsageMean).Incident.Value), 1e-12)
	assert.InDelta(t, 0.9, float64(fact(rules.KVUsageMax).Incident.Value), 1e-12)
	// DCGM_FI_DEV_GPU_UTIL is in percent.
	assert.InDelta(t, 0.4, float64(fact(rules.GPUUtilMean).Incident.Value), 1e-12)
	// Waiting + running at the window's last scrape.
	assert.Equal(t, 18.0, float64(fact(rules.BacklogEnd).Incident.Value))

	// Signals this capture does not carry are missing with the reason.
	for _, id := range []rules.FactID{rules.PreemptionRate, rules.QueueTimeP95, rules.PromptTokensP95, rules.ClientTTFTP95, rules.MaxNumSeqs, rules.TimeoutShare} {
		f := fact(id)
		assert.ErrorIs(t, f.Missing, rules.ErrNoSource, "%s", id)
		assert.True(t, math.IsNaN(float64(f.Incident.Value)), "%s: a missing fact is NaN, never zero", id)
	}
	assert.ErrorContains(t, fact(rules.PreemptionRate).Missing, "vllm:num_preemptions_total")

	// Every fact of the vocabulary is present, computed or missing.
	for _, id := range rules.FactIDs() {
		_, ok := rep.Facts[id]
		assert.True(t, ok, "fact %s absent", id)
	}
}

func TestSignalsFleetAndReplicas(t *testing.T) {
	rep, err := diagnose.Diagnose(twoPodFleet(t), givenWindows())
	require.NoError(t, err)
	find := func(sigs []report.Signal, id string) report.Signal {
		for _, s := range sigs {
			if s.ID == id {
				return s
			}
		}
		t.Fatalf("signal %s not reported", id)
		return report.Signal{}
	}
	ttft := find(rep.Signals.Fleet, "ttft")
	require.NotNil(t, ttft.Incident)
	require.NotNil(t, ttft.Baseline)
	assert.Equal(t, "vllm:time_to_first_token_seconds", ttft.Metric)
	require.Len(t, ttft.Incident.Quantiles, 3)
	p95 := ttft.Incident.Quantiles[1]
	assert.Equal(t, 0.95, p95.Q)
	assert.InDelta(t, 0.9, float64(p95.Value), 1e-9)
	assert.Equal(t, 400.0, float64(p95.Count))
	assert.True(t, p95.Stable, "400 observations make a stable p95")
	assert.False(t, ttft.Incident.Quantiles[2].Stable, "400 observations make an unstable p99")
	assert.NotEmpty(t, ttft.Warnings, "low counts are warned about")

	a := find(rep.Signals.Replicas["a"], "ttft")
	assert.InDelta(t, 0.975, float64(a.Incident.Quantiles[1].Value), 1e-9)
	b := find(rep.Signals.Replicas["b"], "ttft")
	assert.InDelta(t, 0.095, float64(b.Incident.Quantiles[1].Value), 1e-9)

	stop := find(rep.Signals.Fleet, "request_success_stop")
	assert.Equal(t, 390.0, float64(stop.Incident.Count))
	waiting := find(rep.Signals.Fleet, "waiting")
	assert.Equal(t, 5.0, float64(waiting.Incident.Mean))
	missing := find(rep.Signals.Fleet, "queue_time")
	assert.Nil(t, missing.Incident)
	assert.NotEmpty(t, missing.Missing)
	tpot := find(rep.Signals.Fleet, "tpot")
	assert.Contains(t, tpot.Missing, "tpot_mean")
}

func TestSplitByModel(t *testing.T) {
	// One pod serves two models; the other serves only "big".
	st := func(model string, n float64) podState {
		return podState{model: model, ttft: []float64{n, n, n, n}, ttftSum: n * 0.05, stop: n, gpuPct: math.NaN()}
	}
	var ss []scrape
	for i := range 3 {
		n := float64(i * 100)
		at := t0.Add(time.Duration(i) * time.Minute)
		ss = append(ss,
			scrape{"a", at, []podState{st("big", n), st("small", 2*n)}},
			scrape{"b", at, []podState{st("big", n)}})
	}
	ev := evidenceOf(t, ss...)

	rep, err := diagnose.Diagnose(ev, givenWindows())
	require.NoError(t, err)
	require.Len(t, rep.Groups, 2, "several models: one report per model")
	assert.Equal(t, map[string]string{"model_name": "big"}, rep.Groups[0].Group)
	assert.Equal(t, []string{"a", "b"}, rep.Groups[0].Inputs.Replicas)
	assert.Equal(t, []string{"a"}, rep.Groups[1].Inputs.Replicas)
	// Never merged across models: "small" counts only its own requests.
	assert.Equal(t, 200.0, float64(rep.Groups[1].Facts[rules.TTFTP95].Incident.Count))
	assert.Equal(t, 200.0, float64(rep.Groups[0].Facts[rules.TTFTP95].Incident.Count))

	opts := givenWindows()
	opts.Model = "small"
	one, err := diagnose.Diagnose(ev, opts)
	require.NoError(t, err)
	assert.Empty(t, one.Groups)
	assert.Equal(t, []string{"a"}, one.Inputs.Replicas)

	opts.Model = "nope"
	_, err = diagnose.Diagnose(ev, opts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "big, small")
}
