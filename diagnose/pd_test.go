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
	"github.com/whyslow/whyslow/rules"
	"github.com/whyslow/whyslow/snapshot"
)

// pdDumps writes the /metrics dumps of a prefill/decode pair of pools, as
// vLLM 0.30 with the NIXL connector writes them (names, labels and
// buckets of vllm/v1/metrics/loggers.py and the NIXL stats): two prefill
// pods finish one-token requests and expire no KV; two decode pods pull
// each request's KV (vllm:nixl_xfer_time_seconds) and receive its prompt
// by transfer. Their TTFT is their queue (~20 ms) plus the transfer plus
// one decode step (~30 ms), their time per output token steady; from minute 20 the transfer takes
// xferIncident instead of 40 ms. label, when set, is a role label name
// put on every series.
func pdDumps(t *testing.T, dir string, xferIncident float64, label string) {
	t.Helper()
	start := time.Date(2026, 5, 28, 12, 0, 0, 0, time.UTC)
	ttftB := []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20, 40, 80, 160, 640, 2560}
	xferB := []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 5.0}
	tokB := []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000}
	type hist struct {
		counts []float64
		sum    float64
	}
	observe := func(h *hist, bounds []float64, v float64) {
		if h.counts == nil {
			h.counts = make([]float64, len(bounds)+1)
		}
		for i, b := range bounds {
			if v <= b {
				h.counts[i]++
			}
		}
		h.counts[len(bounds)]++
		h.sum += v
	}
	type pod struct {
		name                       string
		decode                     bool
		ttft, xfer, prompt, gen    hist
		tpot                       hist
		done, promptExt, promptLoc float64
	}
	pods := []*pod{{name: "llm-prefill-0"}, {name: "llm-prefill-1"}, {name: "llm-decode-0", decode: true}, {name: "llm-decode-1", decode: true}}
	const perScrape = 60
	for k := 0; k <= 80; k++ {
		now := start.Add(time.Duration(k) * 30 * time.Second)
		for pi, p := range pods {
			if k > 0 {
				for i := 0; i < perScrape; i++ {
					prompt := float64(800 + 40*((i+pi)%25))
					observe(&p.prompt, tokB, prompt)
					if !p.decode {
						observe(&p.gen, tokB, 1)
						observe(&p.ttft, ttftB, 0.02+prompt/40000+0.002*float64(i%7))
						p.promptLoc += prompt
						p.done++
						continue
					}
					x := 0.04
					if k > 40 {
						x = xferIncident
					}
					x *= 1 + 0.05*float64(i%9-4)
					observe(&p.xfer, xferB, x)
					observe(&p.gen, tokB, float64(100+5*(i%30)))
					observe(&p.tpot, ttftB, 0.018+0.001*float64(i%5))
					observe(&p.ttft, ttftB, 0.02+x+0.03+0.002*float64(i%7))
					p.promptExt += prompt
					p.done++
				}
			}
			var b strings.Builder
			lbl := `engine="0",model_name="m"`
			if label != "" {
				role := "prefill"
				if p.decode {
					role = "decode"
				}
				lbl += fmt.Sprintf(",%s=%q", label, role)
			}
			writeHist := func(name, help string, bounds []float64, h hist) {
				fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name)
				counts := h.counts
				if counts == nil {
					counts = make([]float64, len(bounds)+1)
				}
				for i, bd := range bounds {
					fmt.Fprintf(&b, "%s_bucket{%s,le=\"%g\"} %g\n", name, lbl, bd, counts[i])
				}
				fmt.Fprintf(&b, "%s_bucket{%s,le=\"+Inf\"} %g\n%s_count{%s} %g\n%s_sum{%s} %g\n", name, lbl, counts[len(bounds)], name, lbl, counts[len(bounds)], name, lbl, h.sum)
			}
			running := 0.0
			if p.decode {
				running = 12
			}
			fmt.Fprintf(&b, "# HELP vllm:num_requests_running x\n# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{%s} %g\n", lbl, running)
			fmt.Fprintf(&b, "# HELP vllm:num_requests_waiting x\n# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{%s} 0\n", lbl)
			fmt.Fprintf(&b, "# HELP vllm:kv_cache_usage_perc x\n# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{%s} 0.3\n", lbl)
			fmt.Fprintf(&b, "# HELP vllm:num_preemptions_total x\n# TYPE vllm:num_preemptions_total counter\nvllm:num_preemptions_total{%s} 0\n", lbl)
			fmt.Fprintf(&b, "# HELP vllm:request_success_total x\n# TYPE vllm:request_success_total counter\nvllm:request_success_total{%s,finished_reason=\"stop\"} %g\n", lbl, p.done)
			fmt.Fprintf(&b, "# HELP vllm:prompt_tokens_by_source_total x\n# TYPE vllm:prompt_tokens_by_source_total counter\n")
			fmt.Fprintf(&b, "vllm:prompt_tokens_by_source_total{%s,source=\"local_compute\"} %g\n", lbl, p.promptLoc)
			fmt.Fprintf(&b, "vllm:prompt_tokens_by_source_total{%s,source=\"external_kv_transfer\"} %g\n", lbl, p.promptExt)
			fmt.Fprintf(&b, "# HELP vllm:nixl_num_failed_transfers_total x\n# TYPE vllm:nixl_num_failed_transfers_total counter\nvllm:nixl_num_failed_transfers_total{%s} 0\n", lbl)
			fmt.Fprintf(&b, "# HELP vllm:nixl_num_kv_expired_reqs_total x\n# TYPE vllm:nixl_num_kv_expired_reqs_total counter\nvllm:nixl_num_kv_expired_reqs_total{%s} 0\n", lbl)
			writeHist("vllm:nixl_xfer_time_seconds", "Histogram of transfer duration for NIXL KV Cache transfers.", xferB, p.xfer)
			writeHist("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", ttftB, p.ttft)
			if p.decode {
				writeHist("vllm:request_time_per_output_token_seconds", "Histogram of time_per_output_token_seconds per request.", ttftB, p.tpot)
			}
			writeHist("vllm:request_prompt_tokens", "Number of prefill tokens processed.", tokB, p.prompt)
			writeHist("vllm:request_generation_tokens", "Number of generation tokens processed.", tokB, p.gen)
			writeDump(t, filepath.Join(dir, p.name, now.Format("2006-01-02T15-04-05Z")+".prom"), []byte(b.String()))
		}
	}
}

func TestPrefillDecodeRoles(t *testing.T) {
	tests := []struct {
		name     string
		xfer     float64
		label    string
		verdict  rules.Verdict
		decodeBy string
	}{
		{"slow transfer, roles from the metrics' shape", 0.4, "", rules.Verdict(rules.PDKVTransfer), "NIXL transfers observed"},
		{"slow transfer, roles from a label", 0.4, "llm_d_ai_role", rules.Verdict(rules.PDKVTransfer), "role label"},
		{"healthy P/D", 0.04, "", rules.NoIncident, "NIXL transfers observed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			pdDumps(t, dir, tt.xfer, tt.label)
			ev, err := snapshot.Read(context.Background(), []string{dir}, snapshot.Options{})
			require.NoError(t, err)
			rep, err := diagnose.Diagnose(ev, diagnose.Options{})
			require.NoError(t, err)
			table := factsTable(rep)
			assert.Equal(t, tt.verdict, rep.Verdict, table)
			d, p := rep.Facts[rules.PDDecodeReplicas], rep.Facts[rules.PDPrefillReplicas]
			assert.Equal(t, 2.0, float64(d.Incident.Value), table)
			assert.Equal(t, 2.0, float64(p.Incident.Value), table)
			assert.Contains(t, d.Source, tt.decodeBy)
			dm := rep.Facts[rules.TTFTMeanDecodeRole]
			assert.Greater(t, float64(dm.Incident.Value), float64(rep.Facts[rules.TTFTMean].Incident.Value), "the decode instances' TTFT apart from the prefill instances'")
			caveat := false
			for _, w := range rep.Warnings {
				caveat = caveat || strings.Contains(w, "vLLM #29474")
			}
			assert.True(t, caveat, "the under-reporting caveat: %v", rep.Warnings)
		})
	}
}
