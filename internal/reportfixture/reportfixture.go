// Package reportfixture builds, by hand, the report that the rendering
// tests of report, report/html and diagnose render, and holds the checks
// they share. It is for tests only; no library package imports it.
package reportfixture

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/report"
	"github.com/whyslow/whyslow/report/html"
	"github.com/whyslow/whyslow/rules"
)

// The report the golden tests render: the article's section 10 incident
// (prompt p50 850 -> 870 tokens, p95 2400 -> 6100; queue time p95 120ms
// -> 130ms; prefill p95 640ms -> 1.9s; TTFT p95 900ms -> 2.2s; TPOT p95
// 42ms -> 43ms) on three replicas. The findings are real: they come from
// rules.Evaluate on matching facts.

var (
	renderT0       = time.Date(2026, 3, 14, 9, 30, 0, 0, time.UTC)
	renderSplit    = renderT0.Add(30 * time.Minute)
	renderT1       = renderSplit.Add(30 * time.Minute)
	renderBaseline = report.WindowInfo{Start: renderT0, End: renderSplit, From: "change-point", Scrapes: 360}
	renderIncident = report.WindowInfo{Start: renderSplit, End: renderT1, From: "change-point", Scrapes: 360}
	renderReplicas = []string{"vllm-0", "vllm-1", "vllm-2"}
)

const (
	renderBaseText     = "2026-03-14 09:30:00–10:00:00Z (30m0s)"
	renderIncidentText = "2026-03-14 10:00:00–10:30:00Z (30m0s)"
	renderVersions     = "v0.11.0 and later"
)

// renderFact is a fact of both windows with counts, windows and source.
func renderFact(inc, base, n, baseN float64, source string) rules.Fact {
	f := rules.Measured(inc).WithBaseline(base).WithCount(n, baseN).
		WithWindow(renderIncidentText, renderBaseText).WithSource(source)
	return f
}

// renderQ is a quantile fact with the bucket bounds of its incident value.
func renderQ(inc, base, lo, hi, n, baseN float64, metric string) rules.Fact {
	return renderFact(inc, base, n, baseN, metric+" ("+renderVersions+")").WithBounds(lo, hi)
}

func renderFacts() rules.Facts {
	const (
		ttft    = "vllm:time_to_first_token_seconds"
		queue   = "vllm:request_queue_time_seconds"
		prefill = "vllm:request_prefill_time_seconds"
		tpot    = "vllm:request_time_per_output_token_seconds"
		itl     = "vllm:inter_token_latency_seconds"
		e2e     = "vllm:e2e_request_latency_seconds"
		prompt  = "vllm:request_prompt_tokens"
		gen     = "vllm:request_generation_tokens"
	)
	n, bn := 4000.0, 3900.0
	return rules.Facts{
		rules.TTFTP50:             renderQ(0.31, 0.29, 0.25, 0.5, n, bn, ttft),
		rules.TTFTP95:             renderQ(2.2, 0.9, 1, 2.5, n, bn, ttft),
		rules.TTFTP99:             renderQ(3.4, 1.3, 2.5, 5, n, bn, ttft),
		rules.QueueTimeP50:        renderQ(0.02, 0.02, 0, 0.3, n, bn, queue),
		rules.QueueTimeP95:        renderQ(0.13, 0.12, 0, 0.3, n, bn, queue),
		rules.PrefillTimeP95:      renderQ(1.9, 0.64, 1.5, 2, n, bn, prefill),
		rules.DecodeTimeP95:       renderQ(9.1, 8.8, 5, 10, n, bn, "vllm:request_decode_time_seconds"),
		rules.TPOTP50:             renderQ(0.031, 0.03, 0.025, 0.05, n, bn, tpot),
		rules.TPOTP95:             renderQ(0.043, 0.042, 0.025, 0.05, n, bn, tpot),
		rules.ITLP95:              renderQ(0.038, 0.037, 0.025, 0.05, 812000, 790000, itl),
		rules.E2EP50:              renderQ(6.2, 6.1, 5, 10, n, bn, e2e),
		rules.E2EP95:              renderQ(12.4, 11.2, 10, 15, n, bn, e2e),
		rules.E2EP99:              renderQ(16.8, 13.9, 15, 20, n, bn, e2e),
		rules.PromptTokensP50:     renderQ(870, 850, 500, 1000, n, bn, prompt),
		rules.PromptTokensP95:     renderQ(6100, 2400, 5000, 10000, n, bn, prompt),
		rules.PromptTokensP99:     renderQ(8900, 3900, 5000, 10000, n, bn, prompt),
		rules.GenerationTokensP50: renderQ(190, 185, 100, 200, n, bn, gen),
		rules.GenerationTokensP95: renderQ(410, 400, 200, 500, n, bn, gen),
		rules.ArrivalRate:         renderFact(2.23, 2.17, n, bn, "completions + growth of waiting and running"),
		rules.CompletionRate:      renderFact(2.22, 2.17, n, bn, "vllm:request_success_total"),
		rules.ErrorShare:          renderFact(0, 0, n, bn, "vllm:request_success_total{finished_reason=\"error\"}"),
		rules.AbortShare:          renderFact(0.004, 0.003, n, bn, "vllm:request_success_total{finished_reason=\"abort\"}"),
		rules.HTTP5xxShare:        rules.MissingFact(errors.New("no http_requests_total in the evidence")),
		rules.PromptTokenRate:     renderFact(5300, 2700, 120, 120, "vllm:prompt_tokens_total"),
		rules.GenerationTokenRate: renderFact(470, 455, 120, 120, "vllm:generation_tokens_total"),
		rules.PreemptionRate:      renderFact(0, 0, 0, 0, "vllm:num_preemptions_total"),
		rules.PrefixHitRatio:      renderFact(0.41, 0.43, 1.1e7, 5.6e6, "vllm:prefix_cache_hits_total / vllm:prefix_cache_queries_total"),
		rules.WaitingMean:         renderFact(0.6, 0.5, 120, 120, "vllm:num_requests_waiting"),
		rules.WaitingMax:          renderFact(4, 3, 120, 120, "vllm:num_requests_waiting"),
		rules.WaitingSlope:        renderFact(0.0002, -0.0001, 120, 120, "vllm:num_requests_waiting"),
		rules.WaitingBurst:        renderFact(1.9, 1.8, 120, 120, "vllm:num_requests_waiting"),
		rules.RunningMean:         renderFact(41, 38, 120, 120, "vllm:num_requests_running"),
		rules.RunningMax:          renderFact(63, 58, 120, 120, "vllm:num_requests_running"),
		rules.MaxNumSeqs:          renderFact(768, 768, 3, 3, "vllm:cache_config_info"),
		rules.KVUsageMean:         renderFact(0.58, 0.44, 120, 120, "vllm:kv_cache_usage_perc"),
		rules.KVUsageMax:          renderFact(0.81, 0.63, 120, 120, "vllm:kv_cache_usage_perc"),
		rules.GPUUtilMean:         rules.MissingFact(errors.New("no GPU exporter in the evidence (DCGM_FI_DEV_GPU_UTIL)")),
		rules.BacklogEnd:          renderFact(44, 40, 3, 3, "vllm:num_requests_waiting + vllm:num_requests_running"),
		rules.ReplicaShareMax:     renderFact(1.04, 1.03, n, bn, "vllm:request_success_total per replica"),
		rules.ReplicaTTFTRatio:    renderFact(1.12, 1.08, n, bn, "vllm:time_to_first_token_seconds per replica"),
		rules.CorrRunningTPOT:     renderFact(0.18, math.NaN(), 30, math.NaN(), "running vs TPOT per 1m interval"),
		rules.ClientTTFTP95:       rules.MissingFact(errors.New("no client-side TTFT histogram named (Options.Catalog.Alias client_ttft)")),
	}
}

// renderQs are p50, p95 and p99 with bounds and a count.
func renderQs(n float64, v ...float64) []report.Quantile {
	qs := []float64{0.5, 0.95, 0.99}
	out := make([]report.Quantile, len(qs))
	for i, q := range qs {
		out[i] = report.Quantile{Q: q, Value: rules.Number(v[3*i]), Lower: rules.Number(v[3*i+1]),
			Upper: rules.Number(v[3*i+2]), Count: rules.Number(n), Stable: n >= 100}
	}
	return out
}

func renderNaNMeasure(w report.WindowInfo) *report.Measure {
	n := rules.Number(math.NaN())
	return &report.Measure{Window: w, Mean: n, Count: n, Rate: n, Min: n, Max: n, Last: n, Slope: n}
}

// renderHist is a histogram signal; index 0 of mean and n, and base, are
// the baseline window's, index 1 and inc the incident window's.
func renderHist(id, metric, unit string, mean [2]float64, n [2]float64, base, inc []float64) report.Signal {
	m := func(w report.WindowInfo, k int, qs []float64) *report.Measure {
		x := renderNaNMeasure(w)
		x.Quantiles, x.Mean, x.Count, x.Rate = renderQs(n[k], qs...), rules.Number(mean[k]), rules.Number(n[k]), rules.Number(n[k]/1800)
		return x
	}
	return report.Signal{ID: id, Kind: "histogram", Unit: unit, Metric: metric, Versions: renderVersions,
		Baseline: m(renderBaseline, 0, base), Incident: m(renderIncident, 1, inc)}
}

// renderTTFT is the fleet's TTFT over n requests, with the given incident
// p95 (a replica's differs from the fleet's).
func renderTTFT(n [2]float64, p95 float64) report.Signal {
	return renderHist("ttft", "vllm:time_to_first_token_seconds", "s", [2]float64{0.36, 0.61}, n,
		[]float64{0.29, 0.25, 0.5, 0.9, 0.75, 1, 1.3, 1, 2.5}, []float64{0.31, 0.25, 0.5, p95, 1, 2.5, 3.4, 2.5, 5})
}

// renderQueueTime is the fleet's queue time over n requests.
func renderQueueTime(n [2]float64) report.Signal {
	return renderHist("queue_time", "vllm:request_queue_time_seconds", "s", [2]float64{0.035, 0.038}, n,
		[]float64{0.02, 0, 0.3, 0.12, 0, 0.3, 0.21, 0, 0.3}, []float64{0.02, 0, 0.3, 0.13, 0, 0.3, 0.24, 0, 0.3})
}

func renderCounter(id, metric, unit string, base, inc float64) report.Signal {
	m := func(w report.WindowInfo, v float64) *report.Measure {
		x := renderNaNMeasure(w)
		x.Count, x.Rate = rules.Number(v), rules.Number(v/1800)
		return x
	}
	return report.Signal{ID: id, Kind: "counter", Unit: unit, Metric: metric, Versions: renderVersions,
		Baseline: m(renderBaseline, base), Incident: m(renderIncident, inc)}
}

func renderGauge(id, metric, unit string, base, inc [4]float64) report.Signal {
	m := func(w report.WindowInfo, v [4]float64) *report.Measure {
		x := renderNaNMeasure(w)
		x.Mean, x.Max, x.Slope, x.Count = rules.Number(v[0]), rules.Number(v[1]), rules.Number(v[2]), rules.Number(v[3])
		x.Min, x.Last = 0, rules.Number(v[0])
		return x
	}
	return report.Signal{ID: id, Kind: "gauge", Unit: unit, Metric: metric, Versions: renderVersions,
		Baseline: m(renderBaseline, base), Incident: m(renderIncident, inc)}
}

func renderDerived(id, unit, source string, base, inc, n float64, rate bool) report.Signal {
	m := func(w report.WindowInfo, v float64) *report.Measure {
		x := renderNaNMeasure(w)
		x.Count = rules.Number(n)
		if rate {
			x.Rate = rules.Number(v)
		} else {
			x.Mean = rules.Number(v)
		}
		return x
	}
	return report.Signal{ID: id, Kind: "ratio", Unit: unit, Metric: source, Baseline: m(renderBaseline, base), Incident: m(renderIncident, inc)}
}

func renderFleetSignals() []report.Signal {
	n := [2]float64{3900, 4000}
	return []report.Signal{
		renderTTFT(n, 2.2),
		renderQueueTime(n),
		renderHist("prefill_time", "vllm:request_prefill_time_seconds", "s", [2]float64{0.21, 0.43}, n,
			[]float64{0.17, 0, 0.3, 0.64, 0.5, 0.8, 0.95, 0.8, 1}, []float64{0.18, 0, 0.3, 1.9, 1.5, 2, 2.4, 2, 2.5}),
		renderHist("decode_time", "vllm:request_decode_time_seconds", "s", [2]float64{5.7, 5.8}, n,
			[]float64{5.6, 5, 10, 8.8, 5, 10, 12.1, 10, 15}, []float64{5.7, 5, 10, 9.1, 5, 10, 12.6, 10, 15}),
		renderHist("tpot", "vllm:request_time_per_output_token_seconds", "s", [2]float64{0.031, 0.032}, n,
			[]float64{0.03, 0.025, 0.05, 0.042, 0.025, 0.05, 0.048, 0.025, 0.05}, []float64{0.031, 0.025, 0.05, 0.043, 0.025, 0.05, 0.049, 0.025, 0.05}),
		renderHist("e2e", "vllm:e2e_request_latency_seconds", "s", [2]float64{6.3, 6.7}, n,
			[]float64{6.1, 5, 10, 11.2, 10, 15, 13.9, 10, 15}, []float64{6.2, 5, 10, 12.4, 10, 15, 16.8, 15, 20}),
		renderHist("prompt_tokens", "vllm:request_prompt_tokens", "tokens", [2]float64{1010, 1420}, n,
			[]float64{850, 500, 1000, 2400, 2000, 5000, 3900, 2000, 5000}, []float64{870, 500, 1000, 6100, 5000, 10000, 8900, 5000, 10000}),
		renderHist("generation_tokens", "vllm:request_generation_tokens", "tokens", [2]float64{205, 211}, n,
			[]float64{185, 100, 200, 400, 200, 500, 460, 200, 500}, []float64{190, 100, 200, 410, 200, 500, 470, 200, 500}),
		{ID: "client_ttft", Kind: "histogram", Unit: "s", Missing: "no client-side TTFT histogram named (Options.Catalog.Alias client_ttft)"},
		renderGauge("waiting", "vllm:num_requests_waiting", "requests", [4]float64{0.5, 3, -0.0001, 120}, [4]float64{0.6, 4, 0.0002, 120}),
		renderGauge("running", "vllm:num_requests_running", "requests", [4]float64{38, 58, 0.001, 120}, [4]float64{41, 63, 0.002, 120}),
		renderGauge("kv_usage", "vllm:kv_cache_usage_perc", "ratio", [4]float64{0.44, 0.63, 0, 120}, [4]float64{0.58, 0.81, 0.0001, 120}),
		{ID: "gpu_util", Kind: "gauge", Unit: "ratio", Missing: "no GPU exporter in the evidence (DCGM_FI_DEV_GPU_UTIL)"},
		renderCounter("preemptions", "vllm:num_preemptions_total", "count", 0, 0),
		renderCounter("prompt_tokens_total", "vllm:prompt_tokens_total", "tokens", 4.86e6, 9.54e6),
		renderCounter("request_success", "vllm:request_success_total", "requests", 3906, 3996),
		renderCounter("request_success_stop", "vllm:request_success_total{finished_reason=\"stop\"}", "requests", 3610, 3702),
		renderCounter("request_success_length", "vllm:request_success_total{finished_reason=\"length\"}", "requests", 284, 278),
		renderCounter("request_success_abort", "vllm:request_success_total{finished_reason=\"abort\"}", "requests", 12, 16),
		renderDerived("prefix_hit_ratio", "ratio", "vllm:prefix_cache_hits_total / vllm:prefix_cache_queries_total", 0.43, 0.41, 1.1e7, false),
		renderDerived("arrival_rate", "requests", "completions + growth of waiting and running", 2.17, 2.23, 4000, true),
	}
}

func renderReplicaSignals() map[string][]report.Signal {
	out := map[string][]report.Signal{}
	// Per replica: a share of the completions and a TTFT p95 near the
	// fleet's; vllm-2 a little hotter.
	share := []float64{0.32, 0.33, 0.35}
	ttft := []float64{2.0, 2.1, 2.4}
	kv := []float64{0.55, 0.57, 0.62}
	for i, name := range renderReplicas {
		n := [2]float64{3900 * share[i], 4000 * share[i]}
		out[name] = []report.Signal{
			renderTTFT(n, ttft[i]),
			renderQueueTime(n),
			renderGauge("waiting", "vllm:num_requests_waiting", "requests", [4]float64{0.17, 2, 0, 120}, [4]float64{0.2, 2, 0, 120}),
			renderGauge("kv_usage", "vllm:kv_cache_usage_perc", "ratio", [4]float64{0.44, 0.6, 0, 120}, [4]float64{kv[i], kv[i] + 0.19, 0, 120}),
			renderCounter("preemptions", "vllm:num_preemptions_total", "count", 0, 0),
			renderCounter("request_success", "vllm:request_success_total", "requests", math.Round(3906*share[i]), math.Round(3996*share[i])),
		}
	}
	return out
}

// renderWave is a deterministic wobble in [-1, 1].
func renderWave(i int) float64 { return math.Sin(float64(i)*1.7) * math.Cos(float64(i)*0.45) }

func renderTimelines() []report.Timeline {
	step := time.Minute
	mk := func(signal, stat, replica string, count float64, f func(i int, incident bool) float64) report.Timeline {
		t := report.Timeline{Signal: signal, Stat: stat, Replica: replica, Step: step}
		for i := range 60 {
			end := renderT0.Add(time.Duration(i+1) * step)
			t.Points = append(t.Points, report.Point{T: end, Value: rules.Number(f(i, i >= 30)), Count: rules.Number(count)})
		}
		return t
	}
	up := func(base, inc, noise float64) func(int, bool) float64 {
		return func(i int, incident bool) float64 {
			v := base
			if incident {
				v = inc
			}
			return v * (1 + noise*renderWave(i))
		}
	}
	tls := []report.Timeline{
		mk("ttft", "p95", "", 133, up(0.9, 2.2, 0.08)),
		mk("queue_time", "p95", "", 133, up(0.12, 0.13, 0.1)),
		mk("prefill_time", "p95", "", 133, up(0.64, 1.9, 0.08)),
		mk("tpot", "p95", "", 133, up(0.042, 0.043, 0.03)),
		mk("waiting", "mean", "", 4, up(0.5, 0.6, 0.6)),
		mk("running", "mean", "", 4, up(38, 41, 0.1)),
		mk("kv_usage", "mean", "", 4, up(0.44, 0.58, 0.1)),
		mk("preemptions", "rate", "", 0, func(int, bool) float64 { return 0 }),
	}
	// One minute without observations: a gap in the plots, not a zero.
	tls[0].Points[12].Value, tls[0].Points[12].Count = rules.Number(math.NaN()), 0
	for k, name := range renderReplicas {
		off := float64(k) * 0.1
		tls = append(tls,
			mk("waiting", "mean", name, 4, func(i int, inc bool) float64 { return up(0.17+off/3, 0.2+off/2, 0.6)(i+k, inc) }),
			mk("kv_usage", "mean", name, 4, func(i int, inc bool) float64 { return up(0.42+off/5, 0.55+off/3, 0.1)(i+k, inc) }),
		)
	}
	return tls
}

// Article builds the report of the article's section 10 incident.
func Article() *report.Report {
	facts := renderFacts()
	res := rules.Evaluate(facts, rules.SLO{}, rules.DefaultThresholds)
	rep := &report.Report{
		SchemaVersion: report.SchemaVersion,
		Verdict:       res.Verdict,
		Summary: "prefill-long-prompts (prefill cost of longer prompts), symptoms ttft, tail: " +
			"ttft_p95 2.2s vs baseline 900ms: 2.44x (up: >= 1.5x); queue_time_p95 130ms vs baseline 120ms: 1.08x (not up: < 1.5x); " +
			"prompt_tokens_p95 6100 tokens vs baseline 2400 tokens: 2.54x (rises: >= 1.5x)",
		Windows: report.Windows{Baseline: renderBaseline, Incident: renderIncident, ChangePoint: &report.ChangePoint{
			Time: renderSplit, Score: 7.42, Used: true,
			Method: "split maximising the sum of standardised shifts of fleet TTFT p95 and fleet waiting per 1m0s interval, at least 5m0s each side",
		}},
		Symptoms:   res.Symptoms,
		Hypotheses: res.Findings,
		Notes:      res.Notes,
		Signals:    report.Signals{Fleet: renderFleetSignals(), Replicas: renderReplicaSignals()},
		Timelines:  renderTimelines(),
		Facts:      facts,
		Inputs: report.Inputs{
			Sources:  []string{"evidence/incident-2026-03-14/"},
			Replicas: renderReplicas,
			Versions: map[string]string{"vllm-0": renderVersions, "vllm-1": renderVersions, "vllm-2": renderVersions},
		},
		Dimensions: []report.Dimension{
			{Name: "model and replica", Supported: true, How: "model_name label (model_name=\"llama-3-70b\"); 3 replicas, each with its own signals"},
			{Name: "workload type", Supported: false, How: "vLLM's metrics carry no workload label; when a gateway adds one (chat, RAG, agent), split by it with Options.By"},
			{Name: "streaming vs not", Supported: false, How: "not visible: vLLM's metrics do not tell streamed from non-streamed requests"},
		},
		Warnings: append([]string{"vllm-1: process_start_time_seconds takes 2 values: the process restarted"}, warningTexts(res.Warnings)...),
		Group:    map[string]string{"model_name": "llama-3-70b"},
	}
	return rep
}

// Split is a report split by model_name into two groups: the
// section 10 incident, and a small model that served well.
func Split() *report.Report {
	llama := Article()
	small := Article()
	small.Group = map[string]string{"model_name": "qwen-7b"}
	facts := rules.Facts{}
	for id, f := range renderFacts() {
		if f.Known() && f.HasBaseline() {
			f.Incident.Value = f.Baseline.Value // nothing moved
		}
		facts[id] = f
	}
	res := rules.Evaluate(facts, rules.SLO{}, rules.DefaultThresholds)
	small.Verdict, small.Symptoms, small.Hypotheses, small.Notes = res.Verdict, res.Symptoms, res.Findings, res.Notes
	small.Facts = facts
	small.Summary = fmt.Sprintf("%s: every symptom was evaluated and none is present", res.Verdict)
	small.Timelines = nil
	small.Signals = report.Signals{Fleet: renderFleetSignals()[:3]}
	small.Warnings = nil
	return &report.Report{
		SchemaVersion: report.SchemaVersion,
		Verdict:       llama.Verdict,
		Summary:       "split by model_name into 2 groups (model_name=llama-3-70b: prefill-long-prompts; model_name=qwen-7b: " + string(res.Verdict) + "); the top-level verdict is that of model_name=llama-3-70b",
		Windows:       llama.Windows,
		Inputs:        llama.Inputs,
		Dimensions:    llama.Dimensions[:1],
		Groups:        []*report.Report{llama, small},
	}
}

// warningTexts returns the texts of an evaluation's warnings.
func warningTexts(ws []rules.Warning) []string {
	var out []string
	for _, w := range ws {
		out = append(out, w.Text)
	}
	return out
}

// InOrder checks that every part stands in text, in the order given.
func InOrder(t *testing.T, text string, parts []string) {
	t.Helper()
	last := -1
	for _, s := range parts {
		i := strings.Index(text, s)
		require.GreaterOrEqual(t, i, 0, "%q missing", s)
		assert.Greater(t, i, last, "%q out of order", s)
		last = i
	}
}

// svgElement matches one inline SVG plot.
var svgElement = regexp.MustCompile(`(?s)<svg .*?</svg>`)

// Plots returns the inline SVG plots of an HTML report, in order.
func Plots(html string) []string { return svgElement.FindAllString(html, -1) }

// StripSVG replaces the plots, whose coordinates are floating-point
// output of gonum/plot, with a placeholder: the golden file holds the
// document around them.
func StripSVG(html []byte) []byte {
	return svgElement.ReplaceAll(html, []byte(`<svg><!-- plot drawn by gonum/plot --></svg>`))
}

// Figure returns the HTML of the plot titled title.
func Figure(t *testing.T, html, title string) string {
	t.Helper()
	i := strings.Index(html, "<strong>"+title)
	require.GreaterOrEqual(t, i, 0, "no plot %q", title)
	fig := html[i:]
	return fig[:strings.Index(fig, "</figure>")]
}

// Legend returns the HTML of the plot titled title without its SVG.
func Legend(t *testing.T, html, title string) string {
	t.Helper()
	return string(StripSVG([]byte(Figure(t, html, title))))
}

// HTML writes r as the HTML report (html.Write), failing t on an error.
func HTML(t testing.TB, r *report.Report) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, html.Write(&b, r))
	return b.String()
}
