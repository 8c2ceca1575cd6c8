package fleetsim

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// overloadDeadline is one overloaded pod whose clients give up after 15 s
// in the queue or 40 s in all, with the given accounting.
func overloadDeadline(t *testing.T, acc AbandonAccounting) *Fleet {
	t.Helper()
	ph := DefaultPhase
	ph.Rate = 9
	f, err := Run(Config{Seed: 3, NumPods: 1, Duration: 8 * time.Minute, Engine: EngineConfig{MaxNumSeqs: 48},
		Workload: Workload{Phases: []Phase{ph}, ClientTimeout: 15 * time.Second, ClientDeadline: 40 * time.Second, Abandon: acc}})
	require.NoError(t, err)
	checkInvariants(t, f)
	return f
}

// TestAbandonUncounted: with vLLM V1's accounting an abandoned request
// leaves no abort count and no per-request observation, but its prompt
// tokens count once its prefill finished and its first token is in TTFT;
// clients abandon both while waiting and while streaming.
func TestAbandonUncounted(t *testing.T) {
	f := overloadDeadline(t, AbandonUncounted)
	n := f.Abandoned(-Warmup, f.Config.Duration+time.Second)
	require.Greater(t, n.Traceable, 10, "abandoned while streaming")
	require.Greater(t, n.Total-n.Traceable, 10, "abandoned while waiting")
	for _, r := range withStatus(f, StatusAborted) {
		limit := 40.0
		if r.Scheduled == NaNDuration {
			limit = 15
		}
		assert.InDelta(t, limit, (r.Finished - r.Arrival).Seconds(), 0.5, "request %d gives up at its deadline", r.ID)
	}
	last := lastScrape(f, 0)
	st := last.snaps[0].st
	assert.Zero(t, st.success[reasonAbort], "no abort count")
	page := string(last.VLLM())
	assert.Contains(t, page, `vllm:request_success_total{engine="0",finished_reason="abort",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.0`)

	// Prompt tokens: finished requests plus the abandoned ones whose prefill
	// finished, plus the running ones whose prefill finished.
	var finished, traced float64
	var ttft uint64
	end := last.snaps[0].at
	for _, r := range f.Requests {
		if r.Finished == NaNDuration || r.Finished.Seconds() > end {
			continue
		}
		switch r.Status {
		case StatusFinished:
			finished += float64(r.PromptTokens)
			ttft++
		case StatusAborted:
			if r.FirstToken != NaNDuration {
				traced += float64(r.PromptTokens)
				ttft++
			}
		}
	}
	assert.Equal(t, float64(st.count(hPromptTokens)), st.success[reasonStop]+st.success[reasonLength], "per-request prompt histogram counts finished requests only")
	assert.GreaterOrEqual(t, st.promptTokens, finished+traced, "prompt_tokens_total counts traceable abandoned prefills")
	assert.InDelta(t, finished, st.sums[hPromptTokens], 0.5, "request_prompt_tokens_sum counts finished requests only")
	assert.GreaterOrEqual(t, st.count(hTTFT), ttft, "TTFT observes the first token of traceable abandoned requests")
}

// TestAbandonCounted: the older accounting counts every abandoned request
// as finished_reason="abort", streaming ones included.
func TestAbandonCounted(t *testing.T) {
	f := overloadDeadline(t, AbandonCounted)
	last := lastScrape(f, 0)
	n := f.Abandoned(-Warmup, last.Offset)
	require.Greater(t, n.Traceable, 0)
	assert.Greater(t, last.snaps[0].st.success[reasonAbort], float64(n.Traceable), "waiting and streaming aborts counted")
}

// TestServerErrors: a pod's API server answers a share of its requests
// with HTTP 500; they reach no engine and no vLLM metric.
func TestServerErrors(t *testing.T) {
	ph := DefaultPhase
	ph.Rate = 8
	f, err := Run(Config{Seed: 5, Duration: 6 * time.Minute,
		Pods:     []PodConfig{{ServerErrors: []ServerErrors{{From: 2 * time.Minute, To: time.Hour, Share: 0.2}}}, {}},
		Workload: Workload{Phases: []Phase{ph}}})
	require.NoError(t, err)
	checkInvariants(t, f)
	failed := withStatus(f, StatusFailed)
	for _, r := range failed {
		assert.Equal(t, 0, r.Pod)
		assert.GreaterOrEqual(t, r.Arrival, 2*time.Minute)
	}
	onPod := 0
	for _, r := range f.Requests {
		if r.Pod == 0 && r.Arrival >= 2*time.Minute && r.Arrival < f.Config.Duration {
			onPod++
		}
	}
	assert.InDelta(t, 0.2, float64(len(failed))/float64(onPod), 0.05)
	last := lastScrape(f, 0)
	assert.Contains(t, string(last.VLLM()), `http_requests_total{handler="/v1/chat/completions",method="POST",status="5xx"} `)
	assert.NotContains(t, string(lastScrape(f, 1).VLLM()), `status="5xx"`)
}

// TestRestartDrainAndIdentity: a graceful restart (Drain) loses no
// request of a pod at a light load, where a hard one loses those in
// flight; the process after a restart is stored under the restart's
// Instance and Name (dumps, TSDB target labels, the DCGM pod label), the
// one before under the old ones, and the old series go stale.
func TestRestartDrainAndIdentity(t *testing.T) {
	run := func(drain time.Duration) *Fleet {
		ph := DefaultPhase
		ph.Rate = 4
		f, err := Run(Config{Seed: 5, NumPods: 2, Duration: 6 * time.Minute, GPUExporter: DCGMPercent, Workload: Workload{Phases: []Phase{ph}},
			Pods: []PodConfig{{Restarts: []Restart{{At: 3 * time.Minute, Downtime: time.Minute, Drain: drain, Instance: "10.9.9.9:8000", Name: "vllm-new"}}}, {}}})
		require.NoError(t, err)
		checkInvariants(t, f)
		return f
	}
	lost := func(f *Fleet) int { return len(withStatus(f, StatusLost)) }
	assert.Positive(t, lost(run(0)), "a hard stop loses the requests in flight")
	f := run(45 * time.Second)
	require.Zero(t, lost(f), "the drain lets every request finish")

	p := f.Pods[0]
	require.Equal(t, []string{"vllm-0", "vllm-new"}, p.Names)
	require.Equal(t, []string{p.Instance, "10.9.9.9:8000"}, p.Instances)
	var before, after *Scrape
	for _, sc := range p.Scrapes {
		if sc.Offset < 3*time.Minute {
			before = sc
		} else if after == nil && sc.Offset >= 4*time.Minute {
			after = sc
		}
	}
	require.NotNil(t, before)
	require.NotNil(t, after)
	assert.Equal(t, "vllm-0", before.PodName())
	assert.Equal(t, "vllm-new", after.PodName())
	assert.Equal(t, "10.9.9.9:8000", after.Instance())
	assert.Contains(t, string(after.DCGM()), `pod="vllm-new"`)
	drained := p.Scrapes[slices.IndexFunc(p.Scrapes, func(sc *Scrape) bool { return sc.Offset >= 3*time.Minute+30*time.Second })]
	assert.Equal(t, "vllm-0", drained.PodName(), "scraped while it drains")
	assert.Zero(t, drained.Engines[0].Running+drained.Engines[0].Waiting, "no new request while it drains")

	var got []string
	require.NoError(t, f.EachStored(TSDBOptions{}, func(_ int, lset labels.Labels, _ int64, _ float64) error {
		pod := lset.Get("pod")
		if lset.Get("__name__") == "vllm:num_requests_running" && (pod == "vllm-0" || pod == "vllm-new") {
			got = append(got, pod+"@"+lset.Get("instance"))
		}
		return nil
	}))
	slices.Sort(got)
	assert.Equal(t, []string{"vllm-0@" + p.Instance, "vllm-new@10.9.9.9:8000"}, slices.Compact(got))

	dumps := t.TempDir()
	require.NoError(t, f.WriteDumps(dumps, DumpOptions{}))
	for _, name := range []string{"vllm-0", "vllm-new", "vllm-1"} {
		assert.DirExists(t, filepath.Join(dumps, name))
	}
}
