package fleetsim

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// admissionRun runs one pod for 12 minutes: 4 minutes at ~40% of its
// capacity, 6 at ~2x (overload), 2 without arrivals (drained), with
// engine e.
func admissionRun(t *testing.T, e EngineConfig) *Fleet {
	t.Helper()
	light, heavy, none := DefaultPhase, DefaultPhase, DefaultPhase
	light.Rate, heavy.Rate, none.Rate = 4, 20, 0
	heavy.Start, none.Start = 4*time.Minute, 10*time.Minute
	f, err := Run(Config{Seed: 11, Duration: 12 * time.Minute, ScrapeSkew: -1, NumPods: 1, Engine: e,
		Workload: Workload{Phases: []Phase{light, heavy, none}}})
	require.NoError(t, err)
	checkInvariants(t, f)
	return f
}

// inFlightMax is the largest number of requests in flight (running and
// waiting) at a scrape of pod 0 in [from, to).
func inFlightMax(f *Fleet, from, to time.Duration) int {
	n := 0
	for _, sc := range f.Pods[0].Scrapes {
		if sc.Offset >= from && sc.Offset < to {
			n = max(n, sc.Engines[0].Running+sc.Engines[0].Waiting)
		}
	}
	return n
}

// TestAdmissionLimit: with --max-num-queued-reqs, the API server refuses
// the requests that arrive while as many are in flight (running or
// waiting, vLLM PR 49445) with HTTP 503; every request is either refused
// or served (refused + finished = arrived); the refusals happen only
// when the requests in flight reach the limit; they count in
// vllm:admission_rejections_total{model_name,reason} and
// http_requests_total{status="5xx"}, in no latency histogram and not in
// vllm:request_success_total (checkInvariants).
func TestAdmissionLimit(t *testing.T) {
	const limit = 32
	free := admissionRun(t, EngineConfig{})
	e := DefaultEngine
	e.MaxNumQueuedReqs = limit
	f := admissionRun(t, e)

	// The same trace without the limit holds more in flight: the limit
	// binds in the overload, never in the light phase.
	require.Greater(t, inFlightMax(free, 4*time.Minute, time.Hour), limit)
	assert.Less(t, inFlightMax(free, 0, 4*time.Minute), limit, "the light phase stays under the limit")
	assert.Equal(t, limit, inFlightMax(f, 4*time.Minute, 10*time.Minute), "the overload fills the limit")
	assert.Empty(t, withStatus(free, StatusRefused))

	refused := withStatus(f, StatusRefused)
	require.NotEmpty(t, refused)
	for _, r := range refused {
		assert.GreaterOrEqual(t, r.Arrival, 4*time.Minute, "request %d refused in the light phase", r.ID)
		assert.Equal(t, NaNDuration, r.Queued, "a refused request never reaches the engine")
		assert.Equal(t, NaNDuration, r.FirstToken)
	}
	// At each refusal the requests admitted before it and not yet
	// finished are exactly the limit (one finishing at that instant
	// finished first: a step ends before the arrivals are admitted).
	for _, r := range refused {
		n := 0
		for _, q := range f.Requests {
			if q.Queued != NaNDuration && q.Queued <= r.Finished && q.Finished > r.Finished {
				n++
			}
		}
		require.Equal(t, limit, n, "requests in flight when request %d was refused at %v", r.ID, r.Finished)
	}
	finished := withStatus(f, StatusFinished)
	assert.Equal(t, len(f.Requests), len(refused)+len(finished), "refused + finished = arrived (nothing left in flight after the drain)")

	last := lastScrape(f, 0)
	assert.Zero(t, last.Engines[0].Running+last.Engines[0].Waiting)
	text := string(last.VLLM())
	model := f.Config.ModelName
	assert.Contains(t, text, "# TYPE vllm:admission_rejections_total counter\n")
	assert.Contains(t, text, fmt.Sprintf("vllm:admission_rejections_total{model_name=%q,reason=\"max_num_queued_reqs\"} %s\n", model, formatFloat(float64(len(refused)))))
	assert.Contains(t, text, fmt.Sprintf("vllm:admission_rejections_total{model_name=%q,reason=\"max_num_queued_tokens\"} 0.0\n", model))
	assert.Contains(t, text, fmt.Sprintf("http_requests_total{handler=\"/v1/chat/completions\",method=\"POST\",status=\"5xx\"} %s\n", formatFloat(float64(len(refused)))))
	assert.Contains(t, text, fmt.Sprintf("http_requests_total{handler=\"/v1/chat/completions\",method=\"POST\",status=\"2xx\"} %s\n", formatFloat(float64(len(finished)))))
	types, _, series := parseText(t, last.VLLM(), "text/plain; version=0.0.4")
	assert.Equal(t, "counter", types["vllm:admission_rejections_total"])
	n := 0
	for _, ls := range series {
		if ls.Get("__name__") == "vllm:admission_rejections_total" {
			n++
			assert.Empty(t, ls.Get("engine"), "the API server counts for the pod: no engine label")
			assert.Equal(t, 3, ls.Len(), "labels: %v", ls)
		}
	}
	assert.Equal(t, 2, n, "one series per reason")
	assert.NotContains(t, string(lastScrape(free, 0).VLLM()), "admission_rejections", "no limit, no family")
}

// TestAdmissionTokenLimit: --max-num-queued-tokens refuses while the
// prompt tokens of the requests still in prefill (no output token yet)
// reach it, counted under its own reason.
func TestAdmissionTokenLimit(t *testing.T) {
	e := DefaultEngine
	e.MaxNumQueuedTokens = 16000 // ~27 median prompts
	f := admissionRun(t, e)
	refused := withStatus(f, StatusRefused)
	require.NotEmpty(t, refused)
	for _, r := range refused {
		assert.GreaterOrEqual(t, r.Arrival, 4*time.Minute, "request %d refused in the light phase", r.ID)
	}
	assert.Equal(t, len(f.Requests), len(refused)+len(withStatus(f, StatusFinished)))
	text := string(lastScrape(f, 0).VLLM())
	assert.Contains(t, text, fmt.Sprintf("reason=\"max_num_queued_tokens\"} %s\n", formatFloat(float64(len(refused)))))
	assert.Contains(t, text, "reason=\"max_num_queued_reqs\"} 0.0\n")
}

// TestAdmissionLimitConfig: the limits are per API server of one engine
// (vLLM counts them across a pod's data-parallel engines, PR 55124) and
// exist only in V1; negative values are errors.
func TestAdmissionLimitConfig(t *testing.T) {
	e := DefaultEngine
	e.MaxNumQueuedReqs = 10
	for _, c := range []Config{
		{Engine: e, Pods: []PodConfig{{DataParallel: 2}}},
		{Engine: e, Version: VersionV0},
		{Engine: e, Version: VersionV1Early},
		{Engine: EngineConfig{MaxNumQueuedTokens: -1}},
	} {
		_, err := c.withDefaults()
		require.Error(t, err)
		assert.True(t, strings.Contains(err.Error(), "MaxNumQueued"), err.Error())
	}
	_, err := Config{Engine: e}.withDefaults()
	require.NoError(t, err)
}
