package diagnose_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/diagnose"
	"github.com/whyslow/whyslow/internal/fleetsim"
	"github.com/whyslow/whyslow/internal/fleetsim/simtsdb"
	"github.com/whyslow/whyslow/report"
	"github.com/whyslow/whyslow/rules"
	"github.com/whyslow/whyslow/snapshot"
	_ "github.com/whyslow/whyslow/snapshot/tsdb" // Read reads the TSDB case
)

// abandonOverload is the sustained-overload scenario with clients that
// give up after 60 s, accounted as current vLLM V1 does.
func abandonOverload(rate float64) fleetsim.Config {
	cfg := fleetsim.Scenario("sustained-overload")
	cfg.Workload.Phases[1].Rate = rate
	cfg.Workload.ClientDeadline = time.Minute
	cfg.Workload.Abandon = fleetsim.AbandonUncounted
	return cfg
}

// truthIn counts the simulator's abandoned requests in the report's
// incident window.
func truthIn(f *fleetsim.Fleet, rep *report.Report) fleetsim.AbandonCount {
	start := f.Config.Start
	return f.Abandoned(rep.Windows.Incident.Start.Sub(start), rep.Windows.Incident.End.Sub(start)+time.Millisecond)
}

// TestAbandonmentOverload: a sustained overload whose clients give up
// after 60 s, with vLLM V1's accounting (no abort counted): reliability is
// present, the abandonment estimate is within 25% of the simulator's true
// count of requests abandoned after their prefill, and the verdict is the
// overload, with client-abandonment supported and explained by it.
func TestAbandonmentOverload(t *testing.T) {
	f, ev := simulateFleet(t, abandonOverload(78))
	rep, table := diagnoseTable(t, ev)
	truth := truthIn(f, rep)
	require.Greater(t, truth.Traceable, 500, "the scenario abandons requests\n%s", table)

	rel := reportSymptom(rep, "reliability")
	require.True(t, rel.Present, "%s", table)
	assert.Contains(t, evidenceTexts(rel.Evidence), "not completing: abandon_share")
	assert.Zero(t, float64(rep.Facts[rules.AbortShare].Incident.Value), "V1 counts no abort")

	est := rep.Facts[rules.AbandonedRequests]
	require.NoError(t, est.Missing)
	got, want := float64(est.Incident.Value), float64(truth.Traceable)
	t.Logf("abandoned after prefill: estimate %.0f [%.0f, %.0f], truth %v (error %+.1f%%); by tokens %.0f; all abandoned %d",
		got, float64(est.Incident.Lower), float64(est.Incident.Upper), want, 100*(got-want)/want, float64(rep.Facts[rules.AbandonedByTokens].Incident.Value), truth.Total)
	assert.InEpsilon(t, want, got, 0.25, "estimate vs truth\n%s", table)
	assert.InEpsilon(t, want, float64(rep.Facts[rules.AbandonedByTokens].Incident.Value), 0.25, "token estimate vs truth")
	assert.InEpsilon(t, float64(truth.TraceablePromptTokens), float64(rep.Facts[rules.AbandonedPromptTokens].Incident.Value), 0.25, "abandoned prompt tokens vs truth")
	assert.Contains(t, est.Source, "counts no abandoned request", "the report says which accounting the version implies")
	assert.Contains(t, rep.Facts[rules.AbandonShare].Source, "lower bound")

	require.Equal(t, "queue-sustained", string(rep.Verdict), "%s", table)
	require.Equal(t, "queue-sustained", string(rep.Hypotheses[0].ID), "the cause ranks first\n%s", table)
	for _, h := range rep.Hypotheses {
		if h.ID == rules.ClientAbandonment {
			assert.Equal(t, rules.Supported, h.Status, "%s", table)
		}
	}
	assert.Contains(t, rep.Hypotheses[0].Explains, rules.SymptomReliability)
}

// TestAbandonmentCountedAccounting: the same overload with the older
// accounting counts the aborts; the estimate then says it may repeat them.
func TestAbandonmentCountedAccounting(t *testing.T) {
	cfg := abandonOverload(78)
	cfg.Workload.Abandon = fleetsim.AbandonCounted
	_, ev := simulateFleet(t, cfg)
	rep, err := diagnose.Diagnose(ev, diagnose.Options{})
	require.NoError(t, err)
	assert.Greater(t, float64(rep.Facts[rules.AbortShare].Incident.Value), 0.01, "%s", factsTable(rep))
	assert.Contains(t, rep.Facts[rules.AbandonedRequests].Source, "counts aborts")
	assert.Equal(t, "queue-sustained", string(rep.Verdict), "%s", factsTable(rep))
}

// crashLoop is the healthy fleet with vllm-3 restarting four times in the
// incident window, 45 s down each time.
func crashLoop() fleetsim.Config {
	cfg := fleetsim.Scenario("healthy")
	cfg.Pods = make([]fleetsim.PodConfig, 8)
	for _, at := range []time.Duration{34, 41, 48, 55} {
		cfg.Pods[3].Restarts = append(cfg.Pods[3].Restarts, fleetsim.Restart{At: at * time.Minute, Downtime: 45 * time.Second})
	}
	return cfg
}

// TestCrashLoopTSDB: the crash loop read from a TSDB whose up series marks
// the missed scrapes (up == 0 adds scrape times without vLLM samples).
func TestCrashLoopTSDB(t *testing.T) {
	f, err := fleetsim.Run(crashLoop())
	require.NoError(t, err)
	ev := readBack(t, func(dir string) error { return simtsdb.Write(f, dir, fleetsim.TSDBOptions{Up: true}) })
	rep, table := diagnoseTable(t, ev)
	require.Equal(t, "replica-restarts", string(rep.Verdict), "%s", table)
	assert.Equal(t, 4.0, float64(rep.Facts[rules.RestartsReplicaMax].Incident.Value), "%s", table)
	assert.Contains(t, rep.Facts[rules.Restarts].Source, "4 scrape gap(s)")
	assert.Zero(t, float64(rep.Facts[rules.FBRiseRestarts].Incident.Value), "planned-looking restarts: framebuffer flat")
}

// TestOOMLoop: the crash loop killed for memory each time: framebuffer use
// climbs above the pod's own level before every restart.
func TestOOMLoop(t *testing.T) {
	cfg := crashLoop()
	for i := range cfg.Pods[3].Restarts {
		cfg.Pods[3].Restarts[i].Reason = fleetsim.RestartOOMKilled
	}
	_, ev := simulateFleet(t, cfg)
	rep, table := diagnoseTable(t, ev)
	require.Equal(t, "replica-restarts", string(rep.Verdict), "%s", table)
	assert.Equal(t, 4.0, float64(rep.Facts[rules.FBRiseRestarts].Incident.Value), "%s", table)
	assert.Contains(t, rep.Facts[rules.FBRiseRestarts].Source, "vllm-3")
	var check rules.NextCheck
	for _, h := range rep.Hypotheses {
		if h.ID == rules.ReplicaRestarts {
			for _, c := range h.NextChecks {
				if strings.Contains(c.Text, "framebuffer") {
					check = c
				}
			}
		}
	}
	assert.Equal(t, rules.CheckHolds, check.Outcome)
}

// TestCrashLoop: one replica restarts four times in the incident window
// and loses its requests in flight each time: replica-restarts.
func TestCrashLoop(t *testing.T) {
	f, ev := simulateFleet(t, crashLoop())
	rep, table := diagnoseTable(t, ev)
	require.Equal(t, "replica-restarts", string(rep.Verdict), "%s", table)
	assert.Equal(t, 4.0, float64(rep.Facts[rules.RestartsReplicaMax].Incident.Value), "%s", table)
	assert.Contains(t, rep.Facts[rules.RestartsReplicaMax].Source, "vllm-3")
	lost := 0
	for _, r := range f.Requests {
		if r.Status == fleetsim.StatusLost && r.Pod == 3 {
			lost++
		}
	}
	// In flight at the last scrape before each restart: the requests that
	// arrived after it are lost too, unseen.
	got := float64(rep.Facts[rules.RequestsLost].Incident.Value)
	assert.LessOrEqual(t, got, float64(lost), "%s", table)
	assert.Greater(t, got, 0.5*float64(lost), "%s", table)
	assert.Less(t, float64(rep.Facts[rules.AbandonShare].Incident.Value), 0.01, "lost requests are not read as abandoned")
	assert.Contains(t, evidenceTexts(reportSymptom(rep, "reliability").Evidence), "not completing: restarts_replica_max")
}

// TestServerErrorsOneReplica: one replica's API server fails a fifth of
// its requests with HTTP 500 from the incident on: server-errors, and
// the per-replica share names it.
func TestServerErrorsOneReplica(t *testing.T) {
	cfg := fleetsim.Scenario("healthy")
	cfg.Pods = make([]fleetsim.PodConfig, 8)
	cfg.Pods[5].ServerErrors = []fleetsim.ServerErrors{{From: fleetsim.IncidentStart, To: time.Hour, Share: 0.2}}
	_, ev := simulateFleet(t, cfg)
	rep, table := diagnoseTable(t, ev)
	require.Equal(t, "server-errors", string(rep.Verdict), "%s", table)
	assert.InDelta(t, 0.2/8, float64(rep.Facts[rules.HTTP5xxShare].Incident.Value), 0.01, "%s", table)
	assert.InDelta(t, 0.2, float64(rep.Facts[rules.HTTP5xxShareMax].Incident.Value), 0.05, "%s", table)
	assert.Contains(t, rep.Facts[rules.HTTP5xxShareMax].Source, "vllm-5")
}

// relState is one hand-built scrape of one pod: cumulative counters
// since its process started, gauges at the scrape.
type relState struct {
	start               float64 // process_start_time_seconds
	prompt              float64 // vllm:prompt_tokens_total
	promptSum, finished float64 // vllm:request_prompt_tokens _sum, _count
	ttft, e2e           float64 // observation counts
	abort               float64
	running, waiting    float64
	// oomKilled writes kube-state-metrics' last terminated reason
	// (OOMKilled); a zero start writes no process_start_time_seconds (V0).
	oomKilled bool
	gateway   float64 // gateway_requests_total, a gateway's arrivals; 0: none
}

func (s relState) exposition() string {
	var b strings.Builder
	hist := func(name string, count, sum float64, le string) {
		fmt.Fprintf(&b, "# TYPE %s histogram\n", name)
		fmt.Fprintf(&b, "%s_bucket{engine=\"0\",le=%q,model_name=\"m\"} %g\n", name, le, count)
		fmt.Fprintf(&b, "%s_bucket{engine=\"0\",le=\"+Inf\",model_name=\"m\"} %g\n", name, count)
		fmt.Fprintf(&b, "%s_sum{engine=\"0\",model_name=\"m\"} %g\n", name, sum)
		fmt.Fprintf(&b, "%s_count{engine=\"0\",model_name=\"m\"} %g\n", name, count)
	}
	hist("vllm:request_prompt_tokens", s.finished, s.promptSum, "1000.0")
	hist("vllm:time_to_first_token_seconds", s.ttft, 0.3*s.ttft, "1.0")
	hist("vllm:e2e_request_latency_seconds", s.e2e, 5*s.e2e, "10.0")
	b.WriteString("# TYPE vllm:prompt_tokens_total counter\n")
	fmt.Fprintf(&b, "vllm:prompt_tokens_total{engine=\"0\",model_name=\"m\"} %g\n", s.prompt)
	b.WriteString("# TYPE vllm:request_success_total counter\n")
	fmt.Fprintf(&b, "vllm:request_success_total{engine=\"0\",finished_reason=\"stop\",model_name=\"m\"} %g\n", s.finished)
	fmt.Fprintf(&b, "vllm:request_success_total{engine=\"0\",finished_reason=\"abort\",model_name=\"m\"} %g\n", s.abort)
	b.WriteString("# TYPE vllm:num_requests_running gauge\n")
	fmt.Fprintf(&b, "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} %g\n", s.running)
	b.WriteString("# TYPE vllm:num_requests_waiting gauge\n")
	fmt.Fprintf(&b, "vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} %g\n", s.waiting)
	if s.start != 0 {
		b.WriteString("# TYPE process_start_time_seconds gauge\n")
		fmt.Fprintf(&b, "process_start_time_seconds %g\n", s.start)
	}
	if s.gateway > 0 {
		b.WriteString("# TYPE gateway_requests_total counter\n")
		fmt.Fprintf(&b, "gateway_requests_total %g\n", s.gateway)
	}
	if s.oomKilled {
		b.WriteString("# TYPE kube_pod_container_status_last_terminated_reason gauge\n")
		for _, r := range []string{"Completed", "Error", "OOMKilled"} {
			v := 0
			if r == "OOMKilled" {
				v = 1
			}
			fmt.Fprintf(&b, "kube_pod_container_status_last_terminated_reason{container=\"vllm\",namespace=\"llm\",pod=\"pod\",reason=%q} %d\n", r, v)
		}
	}
	return b.String()
}

// TestHiddenAbandonmentEstimates: the estimates on hand-built scrapes one
// minute apart (baseline t0-t1, incident t1-t4) with a mean prompt of 100
// tokens, where the true abandonment is known by construction.
func TestHiddenAbandonmentEstimates(t *testing.T) {
	p1, p2 := float64(t0.Unix()-3600), float64(t0.Unix()+150)
	idle := relState{start: p1, prompt: 1000, ttft: 10, running: 10}
	tests := []struct {
		name      string
		scrapes   [5]relState // t0..t4
		abandoned float64
		restarts  float64
		lost      float64
		oom       float64 // 0: no kube-state-metrics
	}{
		{
			// 10 running at the start finish inside; 14 prefilled inside
			// are still running at the end; 50 finish, none abandoned.
			name: "in flight at both edges, nothing abandoned",
			scrapes: [5]relState{idle, idle,
				{start: p1, prompt: 3000, promptSum: 2000, finished: 20, ttft: 30, e2e: 20, running: 10},
				{start: p1, prompt: 5000, promptSum: 4000, finished: 40, ttft: 50, e2e: 40, running: 12},
				{start: p1, prompt: 6400, promptSum: 5000, finished: 50, ttft: 64, e2e: 50, running: 14}},
		},
		{
			// The same, and 6 more got their first token and were abandoned.
			name: "in flight at both edges, 6 abandoned after their first token",
			scrapes: [5]relState{idle, idle,
				{start: p1, prompt: 3300, promptSum: 2000, finished: 20, ttft: 33, e2e: 20, running: 10},
				{start: p1, prompt: 5400, promptSum: 4000, finished: 40, ttft: 54, e2e: 40, running: 12},
				{start: p1, prompt: 7000, promptSum: 5000, finished: 50, ttft: 70, e2e: 50, running: 14}},
			abandoned: 6,
		},
		{
			// Before the restart (between t2 and t3): 20 finish, 2 are
			// abandoned, 8 running and 3 waiting are lost. After it: 15
			// finish, 3 are abandoned, 5 still run at the end.
			name: "a restart inside the window",
			scrapes: [5]relState{idle, idle,
				{start: p1, prompt: 3000, promptSum: 2000, finished: 20, ttft: 30, e2e: 20, running: 8, waiting: 3},
				{start: p2, prompt: 1200, promptSum: 800, finished: 8, ttft: 12, e2e: 8, running: 4},
				{start: p2, prompt: 2300, promptSum: 1500, finished: 15, ttft: 23, e2e: 15, running: 5}},
			abandoned: 5, restarts: 1, lost: 11,
		},
		{
			// The same on a V0 pod (no process start time: every counter
			// drops together), OOM-killed according to kube-state-metrics.
			name: "a restart without process_start_time_seconds, OOM-killed",
			scrapes: [5]relState{{prompt: 1000, ttft: 10, running: 10}, {prompt: 1000, ttft: 10, running: 10},
				{prompt: 3000, promptSum: 2000, finished: 20, ttft: 30, e2e: 20, running: 8, waiting: 3},
				{prompt: 1200, promptSum: 800, finished: 8, ttft: 12, e2e: 8, running: 4, oomKilled: true},
				{prompt: 2300, promptSum: 1500, finished: 15, ttft: 23, e2e: 15, running: 5, oomKilled: true}},
			abandoned: 5, restarts: 1, lost: 11, oom: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var evs []*snapshot.Evidence
			for i, s := range tt.scrapes {
				at := t0.Add(time.Duration(i) * time.Minute)
				name := "pod/" + at.UTC().Format("2006-01-02T15-04-05Z") + ".prom"
				ev, err := snapshot.ParseDump([]byte(s.exposition()), name, snapshot.Options{})
				require.NoError(t, err)
				evs = append(evs, ev)
			}
			rep, err := diagnose.Diagnose(snapshot.Merge(evs...), diagnose.Options{
				Baseline: snapshot.Window{Start: t0, End: t0.Add(time.Minute)},
				Incident: snapshot.Window{Start: t0.Add(time.Minute), End: t0.Add(4 * time.Minute)},
			})
			require.NoError(t, err)
			table := factsTable(rep)
			for _, id := range []rules.FactID{rules.AbandonedAfterFirstToken, rules.AbandonedByTokens, rules.AbandonedRequests} {
				f := rep.Facts[id]
				require.NoError(t, f.Missing, "%s\n%s", id, table)
				assert.InDelta(t, tt.abandoned, float64(f.Incident.Value), 1e-9, "%s\n%s", id, table)
				assert.LessOrEqual(t, float64(f.Incident.Lower), tt.abandoned, id)
				assert.GreaterOrEqual(t, float64(f.Incident.Upper), tt.abandoned, id)
			}
			assert.InDelta(t, 100*tt.abandoned, float64(rep.Facts[rules.AbandonedPromptTokens].Incident.Value), 1e-6)
			assert.Equal(t, tt.restarts, float64(rep.Facts[rules.Restarts].Incident.Value), "%s", table)
			assert.Equal(t, tt.lost, float64(rep.Facts[rules.RequestsLost].Incident.Value), "%s", table)
			if tt.oom > 0 {
				assert.Equal(t, tt.oom, float64(rep.Facts[rules.OOMKills].Incident.Value), "%s", table)
			} else {
				assert.ErrorContains(t, rep.Facts[rules.OOMKills].Missing, "kube-state-metrics")
			}
			if tt.abandoned == 0 {
				assert.Zero(t, float64(rep.Facts[rules.AbandonShare].Incident.Value))
			} else {
				done := tt.scrapes[4].finished - tt.scrapes[1].finished
				if tt.restarts > 0 {
					done = 35
				}
				assert.InDelta(t, tt.abandoned/(done+tt.abandoned), float64(rep.Facts[rules.AbandonShare].Incident.Value), 1e-9)
			}
		})
	}
}

func reportSymptom(rep *report.Report, id string) rules.Symptom {
	return first(rep.Symptoms, func(s rules.Symptom) bool { return string(s.ID) == id })
}

func evidenceTexts(ev []rules.Evidence) string {
	var b strings.Builder
	for _, e := range ev {
		b.WriteString(e.Text)
		b.WriteByte('\n')
	}
	return b.String()
}

// TestGatewayUnserved: with a gateway's arrival counter aliased, requests
// abandoned while still queued are counted too: 64 arrive in the
// incident, 50 finish, the backlog grows by 4, so 10 left unserved (6
// after their first token, 4 from the queue).
func TestGatewayUnserved(t *testing.T) {
	p1 := float64(t0.Unix() - 3600)
	idle := relState{start: p1, prompt: 1000, ttft: 10, running: 10, gateway: 500}
	scrapes := []relState{idle, idle,
		{start: p1, prompt: 3300, promptSum: 2000, finished: 20, ttft: 33, e2e: 20, running: 10, gateway: 530},
		{start: p1, prompt: 5400, promptSum: 4000, finished: 40, ttft: 54, e2e: 40, running: 12, gateway: 550},
		{start: p1, prompt: 7000, promptSum: 5000, finished: 50, ttft: 70, e2e: 50, running: 14, gateway: 564}}
	var evs []*snapshot.Evidence
	for i, s := range scrapes {
		at := t0.Add(time.Duration(i) * time.Minute)
		ev, err := snapshot.ParseDump([]byte(s.exposition()), "pod/"+at.UTC().Format("2006-01-02T15-04-05Z")+".prom", snapshot.Options{})
		require.NoError(t, err)
		evs = append(evs, ev)
	}
	opts := diagnose.Options{
		Baseline: snapshot.Window{Start: t0, End: t0.Add(time.Minute)},
		Incident: snapshot.Window{Start: t0.Add(time.Minute), End: t0.Add(4 * time.Minute)},
	}
	rep, err := diagnose.Diagnose(snapshot.Merge(evs...), opts)
	require.NoError(t, err)
	assert.ErrorContains(t, rep.Facts[rules.GatewayUnserved].Missing, "Catalog.Alias gateway_requests=METRIC", "no gateway counter without an alias")

	cat := catalog.Default()
	require.NoError(t, cat.Alias("gateway_requests", "gateway_requests_total"))
	opts.Catalog = &cat
	rep, err = diagnose.Diagnose(snapshot.Merge(evs...), opts)
	require.NoError(t, err)
	table := factsTable(rep)
	assert.Equal(t, 10.0, float64(rep.Facts[rules.GatewayUnserved].Incident.Value), "%s", table)
	assert.InDelta(t, 10.0/64, float64(rep.Facts[rules.GatewayUnservedShare].Incident.Value), 1e-9, "%s", table)
	assert.Equal(t, 6.0, float64(rep.Facts[rules.AbandonedRequests].Incident.Value), "vLLM's counters see only the 6 abandoned after their first token")
	assert.True(t, reportSymptom(rep, "reliability").Present)
}

// TestAbandonmentWhileQueued: clients that also give up after 30 s in the
// queue leave no trace in vLLM's metrics: the estimate still matches the
// requests abandoned after their prefill and stays below all abandonment,
// a lower bound, as its source says.
func TestAbandonmentWhileQueued(t *testing.T) {
	cfg := abandonOverload(84)
	cfg.Workload.ClientTimeout = 30 * time.Second
	f, ev := simulateFleet(t, cfg)
	rep, table := diagnoseTable(t, ev)
	truth := truthIn(f, rep)
	require.Greater(t, truth.Total-truth.Traceable, 1000, "abandoned in the queue\n%s", table)
	got := float64(rep.Facts[rules.AbandonedRequests].Incident.Value)
	assert.InEpsilon(t, float64(truth.Traceable), got, 0.25, "%s", table)
	assert.Less(t, got, float64(truth.Total))
	assert.Contains(t, rep.Facts[rules.AbandonShare].Source, "abandoned while queued leave no trace")
	assert.Equal(t, "queue-sustained", string(rep.Verdict), "%s", table)
}

// TestLifetimeUnfinished: one scrape per replica. Lifetime counters show
// the requests that got a first token and never finished (TTFT count -
// E2E count - those running and waiting at the scrape); the reliability
// symptom is present with the lifetime caveat, and no hypothesis becomes
// the verdict from it. A healthy scrape (counts equal, or apart by the
// requests in flight) stays quiet: reliability absent, nothing supported
// (the latency symptoms of one scrape are not evaluable without an SLO).
func TestLifetimeUnfinished(t *testing.T) {
	start := float64(t0.Unix() - 3600)
	tests := []struct {
		name      string
		s         relState
		abandoned float64
		present   bool
	}{
		{"31 of 69 unfinished, nothing in flight",
			relState{start: start, ttft: 69, e2e: 38, finished: 38, promptSum: 38000, prompt: 69000}, 31, true},
		{"counts equal",
			relState{start: start, ttft: 50, e2e: 50, finished: 50, promptSum: 50000, prompt: 50000}, 0, false},
		{"apart by the requests running and waiting",
			relState{start: start, ttft: 60, e2e: 50, finished: 50, promptSum: 50000, prompt: 56000, running: 6, waiting: 4}, 0, false},
		{"apart by more than those in flight",
			relState{start: start, ttft: 60, e2e: 50, finished: 50, promptSum: 50000, prompt: 58000, running: 2}, 8, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "pod/" + t0.UTC().Format("2006-01-02T15-04-05Z") + ".prom"
			ev, err := snapshot.ParseDump([]byte(tt.s.exposition()), name, snapshot.Options{})
			require.NoError(t, err)
			rep, table := diagnoseTable(t, ev)
			f := rep.Facts[rules.AbandonedAfterFirstToken]
			require.NoError(t, f.Missing, "%s", table)
			assert.InDelta(t, tt.abandoned, float64(f.Incident.Value), 1e-9, "%s", table)
			assert.GreaterOrEqual(t, float64(f.Incident.Upper), tt.abandoned+tt.s.waiting, "waiting requests may have had a first token")
			assert.Contains(t, f.Source, "lifetime counters")
			assert.Contains(t, f.Incident.Window, "lifetime")
			share := rep.Facts[rules.AbandonShare]
			require.NoError(t, share.Missing, "%s", table)
			assert.InDelta(t, tt.abandoned/(tt.s.finished+tt.abandoned), float64(share.Incident.Value), 1e-9)
			rel := reportSymptom(rep, "reliability")
			assert.Equal(t, tt.present, rel.Present, "%s", table)
			// The report's JSON facts, read back, judge the same
			// (Fact.Lifetime travels with them).
			again := rules.Evaluate(readBackJSON(t, rep).RuleFacts(), rules.SLO{}, rules.DefaultThresholds)
			assert.Equal(t, rep.Verdict, again.Verdict)
			for _, s := range again.Symptoms {
				assert.Equal(t, reportSymptom(rep, string(s.ID)).Present, s.Present, "%s from the JSON facts", s.ID)
			}
			if tt.present {
				assert.Contains(t, evidenceTexts(rel.Evidence), "abandon_share")
				assert.Contains(t, evidenceTexts(rel.Evidence), "lifetime, since process start")
				assert.Equal(t, rules.Undetermined, rep.Verdict, "lifetime counters say how many, not when: no verdict\n%s", table)
			} else {
				for _, h := range rep.Hypotheses {
					assert.NotEqual(t, rules.Supported, h.Status, "%s: nothing to explain\n%s", h.ID, table)
				}
			}
		})
	}
}

// TestLifetimeUnfinishedRealCapture: a real V0 capture (vLLM 0.6, one
// scrape) whose TTFT count (8,499) exceeds its E2E count (6,226) by far
// more than the 3 running and 2 waiting requests, with no preemption that
// could repeat a first token: 2,268 requests got a first token and never
// finished; the reliability symptom is present, as lifetime evidence.
func TestLifetimeUnfinishedRealCapture(t *testing.T) {
	ev, err := snapshot.Read(context.Background(), []string{"../testdata/realdata/vllm/vllm_composer-test-fixture-unknown.prom"}, snapshot.Options{})
	require.NoError(t, err)
	rep, table := diagnoseTable(t, ev)
	f := rep.Facts[rules.AbandonedAfterFirstToken]
	require.NoError(t, f.Missing, "%s", table)
	assert.Equal(t, 8499.0-6226-3-2, float64(f.Incident.Value), "%s", table)
	assert.Contains(t, f.Source, "lifetime counters")
	assert.Positive(t, float64(rep.Facts[rules.AbandonedPromptTokens].Incident.Value), "prompt_tokens_total is 1.5M tokens above the finished requests' sum")
	rel := reportSymptom(rep, "reliability")
	require.True(t, rel.Present, "%s", table)
	assert.Contains(t, evidenceTexts(rel.Evidence), "not completing: abandon_share")
	assert.Equal(t, rules.Undetermined, rep.Verdict)
	assert.Equal(t, rules.ClientAbandonment, rep.Hypotheses[0].ID, "the candidate to check first\n%s", table)
}
