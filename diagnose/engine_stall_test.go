package diagnose_test

import (
	"context"
	"fmt"
	"path/filepath"
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

// engineState is one scrape of a hand-written vLLM 0.30-style page:
// gauges, and the counters' values (not their increase).
type engineState struct {
	waiting, running, kv float64
	deferred             float64 // num_requests_waiting_by_reason{reason="deferred"}
	awake                float64 // engine_sleep_state{sleep_state="awake"}
	done, gen, prompt    float64 // request_success, generation and prompt tokens totals
	http                 float64 // http_requests_total{status="2xx"}; < 0: no HTTP metrics
}

// page writes s the way vLLM's exposition does (names, labels, a
// model_name and engine label on every engine series).
func (s engineState) page() []byte {
	var b strings.Builder
	l := `engine="0",model_name="m"`
	g := func(name string, v float64, extra string) {
		fmt.Fprintf(&b, "# TYPE %s gauge\n%s{%s%s} %g\n", name, name, l, extra, v)
	}
	c := func(name string, v float64, extra string) {
		fmt.Fprintf(&b, "# TYPE %s counter\n%s_total{%s%s} %g\n", name, name, l, extra, v)
	}
	g("vllm:num_requests_running", s.running, "")
	g("vllm:num_requests_waiting", s.waiting, "")
	fmt.Fprintf(&b, "# TYPE vllm:num_requests_waiting_by_reason gauge\n")
	fmt.Fprintf(&b, "vllm:num_requests_waiting_by_reason{%s,reason=\"capacity\"} %g\n", l, s.waiting-s.deferred)
	fmt.Fprintf(&b, "vllm:num_requests_waiting_by_reason{%s,reason=\"deferred\"} %g\n", l, s.deferred)
	g("vllm:kv_cache_usage_perc", s.kv, "")
	fmt.Fprintf(&b, "# TYPE vllm:engine_sleep_state gauge\n")
	fmt.Fprintf(&b, "vllm:engine_sleep_state{%s,sleep_state=\"awake\"} %g\n", l, s.awake)
	fmt.Fprintf(&b, "vllm:engine_sleep_state{%s,sleep_state=\"weights_offloaded\"} %g\n", l, 1-s.awake)
	c("vllm:request_success", s.done, `,finished_reason="stop"`)
	c("vllm:generation_tokens", s.gen, "")
	c("vllm:prompt_tokens", s.prompt, "")
	if s.http >= 0 {
		fmt.Fprintf(&b, "# TYPE http_requests_total counter\nhttp_requests_total{handler=\"/v1/completions\",method=\"POST\",status=\"2xx\"} %g\n", s.http)
	}
	return []byte(b.String())
}

// engineRun diagnoses one pod scraped every 15 s: healthy scrapes that
// serve, then the incident's, with the windows given.
func engineRun(t *testing.T, healthy int, incident []engineState) *report.Report {
	t.Helper()
	dir := t.TempDir()
	start := time.Date(2026, 5, 28, 12, 0, 0, 0, time.UTC)
	at := func(i int) time.Time { return start.Add(time.Duration(i) * 15 * time.Second) }
	s := engineState{waiting: 1, running: 8, kv: 0.3, awake: 1, done: 1000, gen: 200000, prompt: 500000, http: 1000}
	var states []engineState
	for range healthy {
		states = append(states, s)
		s.done, s.gen, s.prompt, s.http = s.done+20, s.gen+4000, s.prompt+10000, s.http+20
	}
	if len(incident) > 0 {
		// The incident's counters continue from where the healthy
		// scrapes left them.
		var base engineState
		if len(states) > 0 {
			base = states[len(states)-1]
		}
		for _, x := range incident {
			x.done, x.gen, x.prompt = base.done+x.done, base.gen+x.gen, base.prompt+x.prompt
			if x.http >= 0 {
				x.http += max(base.http, 0)
			}
			states = append(states, x)
		}
	}
	for i, st := range states {
		writeDump(t, filepath.Join(dir, "vllm-0", at(i).Format("2006-01-02T15-04-05Z")+".prom"), st.page())
	}
	ev, err := snapshot.Read(context.Background(), []string{dir}, snapshot.Options{})
	require.NoError(t, err)
	var opts diagnose.Options
	if healthy > 0 && len(incident) > 0 {
		opts.Baseline = snapshot.Window{Start: at(0), End: at(healthy - 1)}
		opts.Incident = snapshot.Window{Start: at(healthy - 1), End: at(len(states) - 1)}
	}
	rep, err := diagnose.Diagnose(ev, opts)
	require.NoError(t, err)
	return rep
}

func findingIn(rep *report.Report, id rules.HypothesisID) (rules.Finding, bool) {
	for _, f := range rep.Hypotheses {
		if f.ID == id {
			return f, true
		}
	}
	return rules.Finding{}, false
}

// repeat returns n copies of s, each changed by step(i, &copy).
func repeat(n int, s engineState, step func(i int, s *engineState)) []engineState {
	out := make([]engineState, n)
	for i := range out {
		out[i] = s
		if step != nil {
			step(i, &out[i])
		}
	}
	return out
}

func TestEngineStallScenarios(t *testing.T) {
	stuck := engineState{waiting: 6, kv: 0, awake: 1}
	tests := []struct {
		name     string
		healthy  int
		incident []engineState
		verdict  rules.Verdict
		// also: hypotheses that must be supported; never: hypotheses that
		// must not be; noCause: no hypothesis may be supported.
		also, never []rules.HypothesisID
		noCause     bool
	}{
		{
			name:    "stall: waiting grows, nothing runs or completes",
			healthy: 6,
			incident: repeat(8, stuck, func(i int, s *engineState) {
				s.waiting += float64(2 * i)
				s.http = 0
			}),
			verdict: rules.Verdict(rules.EngineStall),
			never:   []rules.HypothesisID{rules.StaleGauges, rules.QueueSustained, rules.KVPreemption, rules.DecodePressure, rules.AdmissionDeferral},
		},
		{
			// vLLM #22545, #29928: after every client aborted, running 106,
			// waiting 15, KV 90%, and nothing moves; the HTTP counter says
			// no client came.
			name:     "stale gauges after mass aborts",
			healthy:  6,
			incident: repeat(8, engineState{waiting: 15, running: 106, kv: 0.9, awake: 1}, nil),
			verdict:  rules.Verdict(rules.StaleGauges),
			never:    []rules.HypothesisID{rules.EngineStall, rules.QueueSustained, rules.QueueBurst, rules.KVPreemption, rules.DecodePressure},
		},
		{
			// The same page without HTTP metrics (the Rust frontend): no
			// arrival signal tells a stall from frozen gauges.
			name:     "frozen gauges without an arrival signal",
			healthy:  6,
			incident: repeat(8, engineState{waiting: 15, running: 106, kv: 0.9, awake: 1, http: -1}, nil),
			verdict:  rules.Undetermined,
			also:     []rules.HypothesisID{rules.EngineStall, rules.StaleGauges},
			never:    []rules.HypothesisID{rules.QueueSustained, rules.KVPreemption, rules.DecodePressure},
		},
		{
			// vLLM #53130: the queue is deferred requests, KV ~20%, no
			// completions.
			name:    "deferral holds the queue with KV low",
			healthy: 6,
			incident: repeat(8, engineState{kv: 0.2, awake: 1}, func(i int, s *engineState) {
				s.waiting = float64(90 + 50*i)
				s.deferred = s.waiting
			}),
			verdict: rules.Verdict(rules.AdmissionDeferral),
			never:   []rules.HypothesisID{rules.QueueSustained, rules.KVPreemption, rules.StaleGauges},
		},
		{
			name:     "sleeping engine is not a stall",
			healthy:  6,
			incident: repeat(8, engineState{waiting: 2, awake: 0}, nil),
			noCause:  true,
		},
		{
			name:     "idle pod",
			healthy:  6,
			incident: repeat(8, engineState{awake: 1}, nil),
			noCause:  true,
		},
		{
			name:    "healthy pod",
			healthy: 6,
			incident: repeat(8, engineState{waiting: 1, running: 8, kv: 0.3, awake: 1}, func(i int, s *engineState) {
				s.done, s.gen, s.prompt, s.http = float64(20*(i+1)), float64(4000*(i+1)), float64(10000*(i+1)), float64(20*(i+1))
			}),
			noCause: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := engineRun(t, tt.healthy, tt.incident)
			table := factsTable(rep)
			if tt.verdict != "" {
				assert.Equal(t, tt.verdict, rep.Verdict, table)
			}
			for _, id := range tt.also {
				f, ok := findingIn(rep, id)
				assert.True(t, ok && f.Status == rules.Supported, "%s supported\n%s", id, table)
			}
			for _, f := range rep.Hypotheses {
				if tt.noCause {
					assert.NotEqual(t, rules.Supported, f.Status, "%s must not be supported\n%s", f.ID, table)
				}
			}
			if tt.noCause {
				assert.Contains(t, []rules.Verdict{rules.NoIncident, rules.Undetermined}, rep.Verdict)
			}
			for _, id := range tt.never {
				f, _ := findingIn(rep, id)
				assert.NotEqual(t, rules.Supported, f.Status, "%s must not be supported\n%s", id, table)
			}
		})
	}
}

// One scrape of a stalled engine (6 waiting, 0 running, KV 0): a
// reliability symptom and "stall suspected", never "symptoms present:
// none".
func TestEngineStallOneScrape(t *testing.T) {
	rep := engineRun(t, 0, []engineState{{waiting: 6, kv: 0, awake: 1, done: 69, gen: 5000, prompt: 31000, http: -1}})
	table := factsTable(rep)
	assert.NotEqual(t, rules.NoIncident, rep.Verdict, table)
	present := false
	for _, s := range rep.Symptoms {
		present = present || (s.ID == rules.SymptomReliability && s.Present)
	}
	assert.True(t, present, "reliability symptom present\n%s", table)
	f, ok := findingIn(rep, rules.EngineStall)
	require.True(t, ok)
	assert.Equal(t, rules.Supported, f.Status, table)
	assert.Equal(t, rules.EngineStall, rep.Hypotheses[0].ID, "ranked first\n%s", table)
	text := rep.String()
	assert.NotContains(t, text, "symptoms present: none")
	assert.Contains(t, text, "stall suspected")
	assert.Contains(t, text, "a single scrape cannot show flat counters")
}

// A share of the waiting requests is unknown where no scrape saw one
// waiting (scrapes a minute apart can miss every deferral episode), not
// 0%: it neither counts against admission-deferral nor for a queue row.
func TestDeferralSharesWithoutWaiting(t *testing.T) {
	healthy := engineState{waiting: 0, running: 6, kv: 0.3, awake: 1, done: 20, gen: 4000, prompt: 10000, http: 20}
	rep := engineRun(t, 0, repeat(16, healthy, func(i int, s *engineState) {
		s.done, s.gen, s.prompt, s.http = float64(20*(i+1)), float64(4000*(i+1)), float64(10000*(i+1)), float64(20*(i+1))
	}))
	for _, id := range []rules.FactID{rules.DeferredShare, rules.DeferralQueueShare} {
		f := rep.Facts[id]
		require.Error(t, f.Missing, "%s: %v\n%s", id, f.Incident.Value, factsTable(rep))
		assert.ErrorIs(t, f.Missing, rules.ErrTooLittle, id)
		assert.Contains(t, f.Missing.Error(), "no request was waiting at a scrape of the window")
	}
	f, ok := findingIn(rep, rules.AdmissionDeferral)
	require.True(t, ok)
	assert.NotEqual(t, rules.Contradicted, f.Status, factsTable(rep))
}
