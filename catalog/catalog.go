package catalog

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/prometheus/common/model"

	"github.com/whyslow/whyslow/snapshot"
)

// SignalID is the stable snake_case identifier of a signal. The ids are a
// public contract: they appear in JSON reports and in docs/ids.md.
type SignalID string

// Signal ids of the default catalog, in catalog order.
const (
	// Latency histograms of finished requests (seconds).
	SignalTTFT          SignalID = "ttft"           // arrival to first token
	SignalQueueTime     SignalID = "queue_time"     // queued to first scheduled
	SignalPrefillTime   SignalID = "prefill_time"   // first scheduled to first token
	SignalDecodeTime    SignalID = "decode_time"    // first token to last token
	SignalTPOT          SignalID = "tpot"           // per-request time per output token
	SignalITL           SignalID = "itl"            // per-step inter-token latency
	SignalE2E           SignalID = "e2e"            // arrival to last token
	SignalInferenceTime SignalID = "inference_time" // first scheduled to last token
	SignalClientTTFT    SignalID = "client_ttft"    // TTFT seen by a gateway or client

	// Token histograms of finished requests (tokens).
	SignalPromptTokens     SignalID = "prompt_tokens"     // prompt length
	SignalGenerationTokens SignalID = "generation_tokens" // output length
	SignalMaxTokens        SignalID = "max_tokens"        // max_tokens requested
	SignalIterationTokens  SignalID = "iteration_tokens"  // tokens per engine step

	// Instantaneous gauges.
	SignalWaiting            SignalID = "waiting"               // queued requests
	SignalRunning            SignalID = "running"               // requests in the running batch
	SignalSwapped            SignalID = "swapped"               // V0 requests swapped to CPU
	SignalMaxNumSeqs         SignalID = "max_num_seqs"          // configured batch limit
	SignalKVUsage            SignalID = "kv_usage"              // KV cache block usage 0..1
	SignalGPUUtil            SignalID = "gpu_util"              // GPU busy ratio 0..1
	SignalPrefixCacheHitRate SignalID = "prefix_cache_hit_rate" // V0 hit-rate gauge

	// Counters.
	SignalPreemptions           SignalID = "preemptions"
	SignalPrefixCacheQueries    SignalID = "prefix_cache_queries"
	SignalPrefixCacheHits       SignalID = "prefix_cache_hits"
	SignalPromptTokensTotal     SignalID = "prompt_tokens_total"
	SignalGenerationTokensTotal SignalID = "generation_tokens_total"
	SignalRequestSuccess        SignalID = "request_success" // by finished_reason
	SignalHTTPRequests          SignalID = "http_requests"   // responses by status

	// Process and configuration.
	SignalProcessStart SignalID = "process_start" // restart detection
	SignalCacheConfig  SignalID = "cache_config"  // info: config drift

	// Requests that do not complete, from outside vLLM.
	SignalGatewayRequests  SignalID = "gateway_requests"  // arrivals counted by a gateway
	SignalTerminatedReason SignalID = "terminated_reason" // kube-state-metrics: why a container last ended
	SignalFBUsed           SignalID = "fb_used"           // GPU framebuffer memory in use

	// Scheduler and admission detail of vLLM 0.30+ (V1).
	SignalWaitingByReason      SignalID = "waiting_by_reason"       // waiting split by reason (capacity, deferred)
	SignalAdmissionRejections  SignalID = "admission_rejections"    // frontend admission rejections by reason
	SignalPromptTokensBySource SignalID = "prompt_tokens_by_source" // prompt tokens by origin
	SignalPromptTokensCached   SignalID = "prompt_tokens_cached"    // prompt tokens served from a cache
	SignalRequestPreemptions   SignalID = "request_preemptions"     // preemptions per finished request
	SignalPrefillComputed      SignalID = "prefill_computed_tokens" // prompt tokens computed per request
	SignalEngineSleepState     SignalID = "engine_sleep_state"      // sleep-mode flags

	// Speculative decoding (counters, only when it is configured).
	SignalSpecDrafts              SignalID = "spec_drafts"          // draft rounds
	SignalSpecDraftTokens         SignalID = "spec_draft_tokens"    // proposed tokens
	SignalSpecAcceptedTokens      SignalID = "spec_accepted_tokens" // accepted tokens
	SignalSpecAcceptedTokensByPos SignalID = "spec_accepted_by_pos" // accepted tokens per draft position

	// KV transfer between prefill and decode instances (NIXL connector).
	SignalKVTransferTime     SignalID = "kv_transfer_time"     // duration of one KV transfer
	SignalKVTransferFailures SignalID = "kv_transfer_failures" // failed KV transfers
)

// SignalKind is the Prometheus shape a signal's metric must have.
type SignalKind int

const (
	// KindHistogram: a classic histogram (or NHCB converted to one).
	KindHistogram SignalKind = iota + 1
	// KindCounter: a monotonic counter, judged by its increase.
	KindCounter
	// KindGauge: an instantaneous value sampled at scrape time.
	KindGauge
	// KindInfo: a gauge fixed at 1 whose labels carry configuration.
	KindInfo
)

var signalKindNames = [...]string{KindHistogram: "histogram", KindCounter: "counter", KindGauge: "gauge", KindInfo: "info"}

// String returns "histogram", "counter", "gauge" or "info".
func (k SignalKind) String() string { return enumString(k, "SignalKind", signalKindNames[:]) }

// enumString returns the name of v in names, indexed by value, or
// "typ(v)" for a value without a name: the String method of the
// package's int enums.
func enumString[E ~int](v E, typ string, names []string) string {
	if v >= 0 && int(v) < len(names) && names[v] != "" {
		return names[v]
	}
	return fmt.Sprintf("%s(%d)", typ, int(v))
}

// accepts reports whether a family of type t can carry a signal of kind k.
// Families whose type was not declared (federate dumps, TSDB) are "unknown"
// and accepted for every kind but histograms, which snapshot recognises by
// their _bucket series.
func (k SignalKind) accepts(t model.MetricType) bool {
	switch k {
	case KindHistogram:
		return t == model.MetricTypeHistogram || t == model.MetricTypeGaugeHistogram
	case KindCounter:
		return t == model.MetricTypeCounter || t == model.MetricTypeUnknown
	case KindGauge:
		return t == model.MetricTypeGauge || t == model.MetricTypeUnknown
	case KindInfo:
		return t == model.MetricTypeGauge || t == model.MetricTypeInfo || t == model.MetricTypeUnknown
	}
	return false
}

// Units of the catalog's signals. Values are in base units: seconds,
// tokens, ratios 0..1.
const (
	UnitSeconds     = "seconds"
	UnitTokens      = "tokens"
	UnitRequests    = "requests"
	UnitRatio       = "ratio"
	UnitUnixSeconds = "unix seconds"
	UnitCount       = "count"
	UnitNone        = ""
)

// PercentGuardLimit is the largest raw value a ratio source may show before
// ScaleFor reads it as a percentage. A ratio never exceeds 1; the margin
// absorbs exporters that overshoot slightly at sampling edges. The guard
// misreads a percent source that stays at or below 1.5 % (a nearly idle
// GPU) as a ratio, which is why a source's unit is taken from its name
// first and the guard is only the fallback.
const PercentGuardLimit = 1.5

// Candidate is one metric that may carry a signal.
type Candidate struct {
	// Metric is the family's lookup name (see snapshot.Family.Name):
	// counters with _total, histograms without _bucket.
	Metric string
	// Versions are the vLLM versions that emit Metric by default, one
	// range per engine generation, from the name history; nil for names
	// the history does not know (exporters, gateways, aliases).
	Versions []VersionRange
	// Scale multiplies raw values (and histogram bounds) into the
	// signal's unit: 0.01 for a percentage, 0.001 for milliseconds, else 1.
	Scale float64
	// PercentGuard is set on ratio sources whose unit is not certain:
	// ScaleFor reads them as percentages when a value exceeds
	// PercentGuardLimit.
	PercentGuard bool
	// Confidence says how well the name is established as a source of the
	// signal (Unverified for the renamed DCGM fields of exporter 4.9).
	Confidence Confidence
	// Added is true for names added by Alias or WithPrefix.
	Added bool
	// Note says what to know about this source, e.g. "per-step ITL".
	Note string
}

// ScaleFor returns the factor that turns the raw values of s into the
// signal's unit, given the largest raw value seen over the series used
// (NaN when none). It is Scale, except that a guarded ratio source showing
// a value above PercentGuardLimit is a percentage and gets 0.01.
//
// The decision is per series, not per value: scaling each value on its
// own would read 1.2 % as 120 % and 1.6 % as 1.6 %.
func (s Candidate) ScaleFor(maxRaw float64) float64 {
	scale := s.Scale
	if scale == 0 {
		scale = 1
	}
	if s.PercentGuard && scale == 1 && maxRaw > PercentGuardLimit {
		return 0.01
	}
	return scale
}

// SignalSpec describes one quantity the diagnosis reasons about, with the metric names
// that carry it.
type SignalSpec struct {
	// ID is the stable snake_case identifier.
	ID SignalID
	// Kind is the shape its metric must have.
	Kind SignalKind
	// Unit is the unit of the signal's values after Candidate.ScaleFor:
	// one of the Unit constants.
	Unit string
	// Aggregation combines one replica's series (engines, GPUs).
	Aggregation snapshot.Aggregation
	// SplitBy names the label whose values are kept apart, e.g.
	// "finished_reason" for request_success; "" for none.
	SplitBy string
	// Candidates are the candidate metrics, most preferred first: the first
	// present in a target wins. Empty for signals only the caller can
	// supply (client_ttft, max_num_seqs).
	Candidates []Candidate
	// Description says what the signal measures and how to read it.
	Description string
	// Fallback, when not empty, describes how the signal layer estimates
	// the signal when no source is present; FallbackFrom lists the
	// signals it needs.
	Fallback     string
	FallbackFrom []SignalID
}

// String returns "ttft (histogram, seconds)".
func (s SignalSpec) String() string {
	if s.Unit == UnitNone {
		return fmt.Sprintf("%s (%s)", s.ID, s.Kind)
	}
	return fmt.Sprintf("%s (%s, %s)", s.ID, s.Kind, s.Unit)
}

// Metrics returns the candidate metric names in order.
func (s SignalSpec) Metrics() []string {
	out := make([]string, len(s.Candidates))
	for i, src := range s.Candidates {
		out[i] = src.Metric
	}
	return out
}

// TPOTFallback describes the estimate of per-request TPOT used when
// vllm:request_time_per_output_token_seconds is missing (before 0.11, and
// on every V0 engine). MeanTPOTFromSums computes it.
const TPOTFallback = "mean decode time per output token from sums: " +
	"request_decode_time_seconds_sum / (request_generation_tokens_sum - request_generation_tokens_count)"

// MeanTPOTFromSums estimates the mean time per output token of finished
// requests, the quantity vLLM >= 0.11 observes per request as
// vllm:request_time_per_output_token_seconds (decode time / (generated
// tokens - 1)), from the sums of older histograms:
//
//	decodeTimeSum / (generationTokensSum - generationTokensCount)
//
// decodeTimeSum is the increase of vllm:request_decode_time_seconds_sum and
// generationTokensSum and generationTokensCount the increases of
// vllm:request_generation_tokens_sum and _count over the same window and
// replicas. Each finished request decodes all its output tokens but the
// first, which prefill produces; so the denominator counts decoded tokens.
//
// The result is a token-weighted mean, not the mean of per-request TPOT:
// long outputs weigh more, and it has no quantiles. It returns NaN when an
// input is NaN or negative, or when no token was decoded (every request
// produced at most one token).
func MeanTPOTFromSums(decodeTimeSum, generationTokensSum, generationTokensCount float64) float64 {
	if math.IsNaN(decodeTimeSum) || math.IsNaN(generationTokensSum) || math.IsNaN(generationTokensCount) ||
		decodeTimeSum < 0 || generationTokensSum < 0 || generationTokensCount < 0 {
		return math.NaN()
	}
	decoded := generationTokensSum - generationTokensCount
	if !(decoded > 0) || math.IsInf(decoded, 0) {
		return math.NaN()
	}
	return decodeTimeSum / decoded
}

// Catalog is the list of signals and their candidate metrics. Build one
// with Default, then adapt it with Alias and WithPrefix. A Catalog
// is a value: copies are independent (methods that change it copy what they
// change), and the zero Catalog has no signal.
type Catalog struct {
	signals  []SignalSpec
	prefixes []string
}

// ErrUnknownSignal is returned (wrapped) by Alias for an id the catalog
// does not have.
var ErrUnknownSignal = errors.New("catalog: unknown signal id")

// RayPrefix is the prefix under which Ray Serve re-exports vLLM's metrics
// (ray_vllm:num_requests_waiting for vllm:num_requests_waiting). Every
// catalog recognises it without WithPrefix: see ForEvidence.
const RayPrefix = "ray_vllm:"

// KServePrefix is the prefix under which KServe (OpenShift AI) re-exports
// vLLM's metrics (kserve_vllm:num_requests_waiting). Every catalog
// recognises it without WithPrefix, like RayPrefix.
const KServePrefix = "kserve_vllm:"

// builtinPrefixes are the re-export prefixes ForEvidence adds when the
// evidence uses them.
var builtinPrefixes = []string{RayPrefix, KServePrefix}

// ReexportPrefixes returns the re-export prefixes every catalog
// recognises without WithPrefix (RayPrefix, KServePrefix), in the order
// ForEvidence tries them.
func ReexportPrefixes() []string { return slices.Clone(builtinPrefixes) }

// Default returns a fresh catalog of every signal whyslow knows, with
// vLLM's names from 0.3 to the newest main (V1 names first, then older and
// V0 ones), the HTTP metrics of vLLM's OpenAI server, the process collector
// and NVIDIA's DCGM exporter. Names under ReexportPrefixes are recognised when
// the evidence has them (ForEvidence).
func Default() Catalog {
	h := history()
	src := func(metric, note string) Candidate {
		rs, conf := rangesOf(h, metric)
		return Candidate{Metric: metric, Versions: rs, Scale: 1, Confidence: conf, Note: note}
	}
	other := func(metric string, scale float64, guard bool, conf Confidence, note string) Candidate {
		s := src(metric, note)
		s.Scale, s.PercentGuard, s.Confidence = scale, guard, conf
		return s
	}
	hist := func(id SignalID, unit, desc string, sources ...Candidate) SignalSpec {
		return SignalSpec{ID: id, Kind: KindHistogram, Unit: unit, Aggregation: snapshot.AggregateSum, Candidates: sources, Description: desc}
	}
	counter := func(id SignalID, unit, split, desc string, sources ...Candidate) SignalSpec {
		return SignalSpec{ID: id, Kind: KindCounter, Unit: unit, Aggregation: snapshot.AggregateSum, SplitBy: split, Candidates: sources, Description: desc}
	}
	gauge := func(id SignalID, unit string, agg snapshot.Aggregation, desc string, sources ...Candidate) SignalSpec {
		return SignalSpec{ID: id, Kind: KindGauge, Unit: unit, Aggregation: agg, Candidates: sources, Description: desc}
	}

	withSplit := func(s SignalSpec, label string) SignalSpec { s.SplitBy = label; return s }

	tpot := hist(SignalTPOT, UnitSeconds,
		"Per finished request: decode time / (output tokens - 1), vLLM >= 0.11. Not the per-step ITL.",
		src("vllm:request_time_per_output_token_seconds", ""))
	tpot.Fallback = TPOTFallback
	tpot.FallbackFrom = []SignalID{SignalDecodeTime, SignalGenerationTokens}

	return Catalog{signals: append([]SignalSpec{
		hist(SignalTTFT, UnitSeconds,
			"Frontend arrival (tokenization included) to first token: queue + prefill + scheduling overhead.",
			src("vllm:time_to_first_token_seconds", "")),
		hist(SignalQueueTime, UnitSeconds,
			"Engine queued to first scheduled; observed when the request finishes.",
			src("vllm:request_queue_time_seconds", ""),
			src("vllm:time_in_queue_requests", "V0 duplicate of request_queue_time_seconds")),
		hist(SignalPrefillTime, UnitSeconds,
			"First scheduled to first token.",
			src("vllm:request_prefill_time_seconds", "")),
		hist(SignalDecodeTime, UnitSeconds,
			"First token to last token.",
			src("vllm:request_decode_time_seconds", "")),
		tpot,
		hist(SignalITL, UnitSeconds,
			"Gap between successive outputs of a request, one observation per engine step "+
				"(a step may carry several tokens with speculative decoding).",
			src("vllm:inter_token_latency_seconds", ""),
			src("vllm:time_per_output_token_seconds", "per-step ITL despite its name, not per-request TPOT")),
		hist(SignalE2E, UnitSeconds,
			"Arrival to last token: about queue + inference + frontend.",
			src("vllm:e2e_request_latency_seconds", "")),
		hist(SignalInferenceTime, UnitSeconds,
			"First scheduled to last token: prefill + decode, preemptions included.",
			src("vllm:request_inference_time_seconds", "")),
		hist(SignalClientTTFT, UnitSeconds,
			"TTFT measured by a gateway or client; by default the Gateway API Inference Extension's (and llm-d's) "+
				"endpoint picker histogram, else supply one with Alias. Well above server TTFT points at the proxy or network.",
			other("inference_objective_request_ttft_seconds", 1, false, Documented,
				"Gateway API Inference Extension >= 1.2 and llm-d endpoint picker; observed only with the predicted-latency plugin")),
		hist(SignalPromptTokens, UnitTokens,
			"Prompt length per finished request; buckets depend on max_model_len.",
			src("vllm:request_prompt_tokens", "")),
		hist(SignalGenerationTokens, UnitTokens,
			"Output length per finished request.",
			src("vllm:request_generation_tokens", "")),
		hist(SignalMaxTokens, UnitTokens,
			"max_tokens asked for per request: an output cap.",
			src("vllm:request_params_max_tokens", "")),
		hist(SignalIterationTokens, UnitTokens,
			"Prompt + generated tokens per engine step (batch size in tokens); buckets vary by version and CUDA graphs.",
			src("vllm:iteration_tokens_total", "a histogram despite _total")),
		gauge(SignalWaiting, UnitRequests, snapshot.AggregateSum,
			"Requests queued, not yet scheduled, at scrape time.",
			src("vllm:num_requests_waiting", "")),
		gauge(SignalRunning, UnitRequests, snapshot.AggregateSum,
			"Requests in the running batch at scrape time; compare with max_num_seqs.",
			src("vllm:num_requests_running", "")),
		gauge(SignalSwapped, UnitRequests, snapshot.AggregateSum,
			"V0 only: preempted requests swapped to CPU memory.",
			src("vllm:num_requests_swapped", "")),
		gauge(SignalMaxNumSeqs, UnitRequests, snapshot.AggregateSum,
			"The scheduler's batch limit. vLLM exposes no such metric; supply one with Alias (e.g. from a config exporter)."),
		gauge(SignalKVUsage, UnitRatio, snapshot.AggregateMean,
			"KV cache block usage, fraction 0..1 (not a percentage despite _perc). High alone is not an incident; with preemptions it is KV pressure.",
			src("vllm:kv_cache_usage_perc", ""),
			src("vllm:gpu_cache_usage_perc", "old name, removed in 0.12")),
		gauge(SignalGPUUtil, UnitRatio, snapshot.AggregateMean,
			"GPU busy ratio 0..1 from the DCGM exporter: 'a kernel was running', not SM saturation.",
			other("DCGM_FI_DEV_GPU_UTIL", 0.01, false, Documented, "percent 0-100, exporter <= 4.8; invalid under MIG"),
			other("DCGM_FI_PROF_GR_ENGINE_ACTIVE", 1, true, Documented, "ratio, profiling field; works with MIG"),
			other("DCGM_FI_DEV_GPU_UTIL_RATIO", 1, true, Unverified, "ratio, exporter >= 4.9 name (unverified)"),
			other("DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO", 1, true, Unverified, "ratio, exporter >= 4.9 name (unverified)")),
		gauge(SignalPrefixCacheHitRate, UnitRatio, snapshot.AggregateMean,
			"V0 only: prefix-cache block hit rate over every lookup since the process started, -1 when unknown (the window's rate is recovered weighting it by prompt tokens); V1 uses the hits/queries counters.",
			src("vllm:gpu_prefix_cache_hit_rate", "")),
		counter(SignalPreemptions, UnitCount, "",
			"Scheduler preemptions (recompute); a sustained rate means KV pressure.",
			src("vllm:num_preemptions_total", "")),
		counter(SignalPrefixCacheQueries, UnitTokens, "",
			"Prompt tokens looked up in the local prefix cache.",
			src("vllm:prefix_cache_queries_total", ""),
			src("vllm:gpu_prefix_cache_queries_total", "blocks, not tokens, in early 0.8.x")),
		counter(SignalPrefixCacheHits, UnitTokens, "",
			"Prompt tokens found in the local prefix cache; hits/queries is the hit ratio.",
			src("vllm:prefix_cache_hits_total", ""),
			src("vllm:gpu_prefix_cache_hits_total", "blocks, not tokens, in early 0.8.x")),
		counter(SignalPromptTokensTotal, UnitTokens, "",
			"Prompt tokens of completed prefills, prefix-cache hits included: input tokens per second.",
			src("vllm:prompt_tokens_total", "")),
		counter(SignalGenerationTokensTotal, UnitTokens, "",
			"Output tokens: output tokens per second.",
			src("vllm:generation_tokens_total", "")),
		counter(SignalRequestSuccess, UnitRequests, "finished_reason",
			"Finished requests by finished_reason (stop, length, abort; newer: error, repetition), aborts included: completions, not arrivals.",
			src("vllm:request_success_total", "")),
		counter(SignalHTTPRequests, UnitRequests, "status",
			"HTTP responses by status class (2xx, 4xx, 5xx) and handler. Counted when a response ends, "+
				"so it gives completions by status, not arrivals; a stream counts when it ends.",
			src("http_requests_total", "prometheus-fastapi-instrumentator")),
		gauge(SignalProcessStart, UnitUnixSeconds, snapshot.AggregateNone,
			"Start time of the API server process; a change means a restart (counters reset). Absent in multiprocess mode.",
			src("process_start_time_seconds", "prometheus_client process collector")),
		{
			ID: SignalCacheConfig, Kind: KindInfo, Unit: UnitNone, Aggregation: snapshot.AggregateNone,
			Description: "KV cache configuration as labels (block_size, gpu_memory_utilization, num_gpu_blocks, " +
				"enable_prefix_caching, …); values that differ between pods are configuration drift.",
			Candidates: []Candidate{src("vllm:cache_config_info", "")},
		},
		counter(SignalGatewayRequests, UnitRequests, "",
			"Requests that arrived at a gateway or load balancer in front of vLLM, counted when they arrive; by default "+
				"the Gateway API Inference Extension's (and llm-d's) endpoint picker counter, else supply one with Alias. "+
				"Arrivals minus completions minus the growth of the queue are requests "+
				"that left unserved, including those abandoned while queued, which vLLM counts nowhere.",
			other("inference_objective_request_total", 1, false, Documented,
				"Gateway API Inference Extension >= 1.1 and llm-d endpoint picker; counted when a request is routed, before its response"),
			other("inference_model_request_total", 1, false, Documented,
				"Gateway API Inference Extension <= 1.0.x name; counted when a request is routed, before its response")),
		gauge(SignalTerminatedReason, UnitNone, snapshot.AggregateNone,
			"kube-state-metrics: 1 for the reason a container last terminated (reason=OOMKilled, Error, Completed); "+
				"OOMKilled before a restart is memory exhaustion.",
			other("kube_pod_container_status_last_terminated_reason", 1, false, Documented, "kube-state-metrics")),
		gauge(SignalFBUsed, UnitNone, snapshot.AggregateSum,
			"GPU framebuffer memory in use from the DCGM exporter, MiB (exporter <= 4.8) or bytes (>= 4.9): compared only with "+
				"the pod's own level, because vLLM preallocates (near total is every pod's normal state); a rise before a restart points at OOM.",
			other("DCGM_FI_DEV_FB_USED", 1, false, Documented, "MiB, bytes from exporter 4.9")),
		withSplit(gauge(SignalWaitingByReason, UnitRequests, snapshot.AggregateSum,
			"Waiting requests by reason: capacity (waiting for scheduling capacity) or deferred (held back by "+
				"transient constraints: LoRA budget, KV transfer, blocked status); the reasons sum to waiting, so a "+
				"deferred queue is not a capacity queue.",
			src("vllm:num_requests_waiting_by_reason", "")), "reason"),
		counter(SignalAdmissionRejections, UnitRequests, "reason",
			"Requests the frontend refused (HTTP 503) because --max-num-queued-reqs or --max-num-queued-tokens was "+
				"reached, by reason; counted per admission attempt.",
			src("vllm:admission_rejections_total", "no engine label")),
		counter(SignalPromptTokensBySource, UnitTokens, "source",
			"Prompt tokens by origin: local_compute (prefilled here), local_cache_hit, external_kv_transfer; "+
				"local_compute over the total is the share of prompts computed rather than reused.",
			src("vllm:prompt_tokens_by_source_total", "")),
		counter(SignalPromptTokensCached, UnitTokens, "",
			"Prompt tokens served from a prefix cache, local or external.",
			src("vllm:prompt_tokens_cached_total", "")),
		hist(SignalRequestPreemptions, UnitCount,
			"Preemptions per finished request. The first bucket is le=1, so never-preempted and once-preempted "+
				"requests share it: count - bucket{le=1} is the requests preempted twice or more; _sum is every preemption.",
			src("vllm:request_num_preemptions", "")),
		hist(SignalPrefillComputed, UnitTokens,
			"Prompt tokens computed in prefill per finished request, cached tokens excluded; buckets depend on max_model_len.",
			src("vllm:request_prefill_kv_computed_tokens", "")),
		withSplit(gauge(SignalEngineSleepState, UnitNone, snapshot.AggregateNone,
			"Sleep-mode flags per engine: awake=1 when awake, 0 when asleep (weights_offloaded=1 at level 1, "+
				"discard_all=1 at level 2). A sleeping engine serves nothing by design: it is not an incident.",
			src("vllm:engine_sleep_state", "")), "sleep_state"),
		counter(SignalSpecDrafts, UnitCount, "",
			"Speculative decoding draft rounds; mean acceptance length = 1 + accepted / drafts.",
			src("vllm:spec_decode_num_drafts_total", "")),
		counter(SignalSpecDraftTokens, UnitTokens, "",
			"Speculative decoding tokens proposed by the drafter.",
			src("vllm:spec_decode_num_draft_tokens_total", "")),
		counter(SignalSpecAcceptedTokens, UnitTokens, "",
			"Speculative decoding draft tokens accepted; accepted / draft tokens is the acceptance rate.",
			src("vllm:spec_decode_num_accepted_tokens_total", "")),
		counter(SignalSpecAcceptedTokensByPos, UnitTokens, "position",
			"Accepted draft tokens by draft position (0 first); over drafts, the acceptance rate at each position.",
			src("vllm:spec_decode_num_accepted_tokens_per_pos_total", "")),
		hist(SignalKVTransferTime, UnitSeconds,
			"Duration of one KV cache transfer of the NIXL connector (prefill/decode disaggregation): a phase of the "+
				"decode instance's TTFT.",
			src("vllm:nixl_xfer_time_seconds", "NIXL connector only")),
		counter(SignalKVTransferFailures, UnitCount, "",
			"Failed KV cache transfers of the NIXL connector.",
			src("vllm:nixl_num_failed_transfers_total", "NIXL connector only")),
	}, decodeSignals()...)}
}

// Signals returns a copy of the catalog's signals in order.
func (c Catalog) Signals() []SignalSpec {
	out := make([]SignalSpec, len(c.signals))
	for i, s := range c.signals {
		out[i] = s.clone()
	}
	return out
}

// IDs returns the signal ids in catalog order.
func (c Catalog) IDs() []SignalID {
	out := make([]SignalID, len(c.signals))
	for i, s := range c.signals {
		out[i] = s.ID
	}
	return out
}

// Signal returns the signal with the given id.
func (c Catalog) Signal(id SignalID) (SignalSpec, bool) {
	i := c.index(id)
	if i < 0 {
		return SignalSpec{}, false
	}
	return c.signals[i].clone(), true
}

// Prefixes returns the prefixes added with WithPrefix.
func (c Catalog) Prefixes() []string { return slices.Clone(c.prefixes) }

func (c Catalog) index(id SignalID) int {
	return slices.IndexFunc(c.signals, func(s SignalSpec) bool { return s.ID == id })
}

func (s SignalSpec) clone() SignalSpec {
	s.Candidates = slices.Clone(s.Candidates)
	for i := range s.Candidates {
		s.Candidates[i].Versions = slices.Clone(s.Candidates[i].Versions)
	}
	s.FallbackFrom = slices.Clone(s.FallbackFrom)
	return s
}

// Alias makes metric the preferred source of the signal id: it is tried
// before every other candidate (if it was already one, it moves to the
// front). Use it for a name the catalog does not know: a gateway's
// client-side TTFT histogram for client_ttft, a custom GPU utilisation
// metric, a renamed vLLM metric.
//
// metric is the family's lookup name as snapshot reads it (see
// snapshot.Family.Name): a counter's name with its _total suffix, a
// histogram's without _bucket. Its unit is taken from the name: for a
// seconds signal, a name ending in _milliseconds or _ms is scaled by 0.001
// and one in _microseconds or _us by 1e-6; for a ratio signal, a name with
// "ratio", "fraction" or the vLLM suffix "_perc" is a ratio, one with
// "percent", "pct" or "util" a percentage, and any other a ratio guarded by
// PercentGuardLimit.
//
// Alias returns an error wrapping ErrUnknownSignal, listing the valid ids,
// when the catalog has no signal id, and an error when metric is not a
// valid metric name.
func (c *Catalog) Alias(id SignalID, metric string) error {
	i := c.index(id)
	if i < 0 {
		return fmt.Errorf("%w %q; valid ids: %s", ErrUnknownSignal, id, joinIDs(c.IDs()))
	}
	if metric == "" || !model.UTF8Validation.IsValidMetricName(metric) || strings.ContainsAny(metric, " \t\n{}\"") {
		return fmt.Errorf("catalog: alias for %s: invalid metric name %q", id, metric)
	}
	sig := c.signals[i].clone()
	var added Candidate
	if j := slices.IndexFunc(sig.Candidates, func(s Candidate) bool { return s.Metric == metric }); j >= 0 {
		added = sig.Candidates[j]
		sig.Candidates = slices.Delete(sig.Candidates, j, j+1)
	} else {
		added = Candidate{Metric: metric, Added: true, Confidence: Unverified, Note: "alias"}
		added.Versions, _ = c.historyOf(metric)
		added.Scale, added.PercentGuard = scaleFromName(sig.Unit, metric)
	}
	sig.Candidates = slices.Insert(sig.Candidates, 0, added)
	c.signals = slices.Clone(c.signals)
	c.signals[i] = sig
	return nil
}

// WithPrefix returns a copy of c in which every vllm: name also matches
// under prefix, tried right after the vllm: name: WithPrefix("ray_vllm:")
// reads Ray Serve's re-export, whose vllm:num_requests_waiting is
// ray_vllm:num_requests_waiting. Prefixed names count as vLLM names for
// version inference. RayPrefix and KServePrefix need no WithPrefix (see
// ForEvidence); adding one changes only Signals and Metrics before
// resolution. It
// returns an error when prefix is empty, is "vllm:", or cannot start a
// metric name.
func (c Catalog) WithPrefix(prefix string) (Catalog, error) {
	return c.withPrefix(prefix, true)
}

// ForEvidence returns c with the built-in re-export prefixes (RayPrefix,
// KServePrefix) that some family of ev uses added as WithPrefix would add
// them, so Ray Serve's ray_vllm: and KServe's kserve_vllm: names resolve
// without an alias; otherwise it returns c. Resolve, ResolveTarget and package diagnose call it; call it before
// reading Signals or Metrics for evidence yourself.
func (c Catalog) ForEvidence(ev *snapshot.Evidence) Catalog {
	if ev == nil {
		return c
	}
	return c.forTargets(ev.Targets...)
}

func (c Catalog) forTargets(ts ...*snapshot.Target) Catalog {
	for _, p := range builtinPrefixes {
		if slices.Contains(c.prefixes, p) || !slices.ContainsFunc(ts, func(t *snapshot.Target) bool { return usesPrefix(t, p) }) {
			continue
		}
		c, _ = c.withPrefix(p, false) // a valid constant prefix: no error
	}
	return c
}

// usesPrefix reports whether a family of t is named under prefix.
func usesPrefix(t *snapshot.Target, prefix string) bool {
	if t == nil {
		return false
	}
	for name := range t.Families {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}

// withPrefix is WithPrefix; added marks the new candidates as the caller's
// (Candidate.Added) rather than built in.
func (c Catalog) withPrefix(prefix string, added bool) (Catalog, error) {
	if prefix == "" || prefix == "vllm:" || !model.LegacyValidation.IsValidMetricName(prefix+"x") {
		return c, fmt.Errorf("catalog: invalid metric name prefix %q", prefix)
	}
	if slices.Contains(c.prefixes, prefix) {
		return c, nil
	}
	out := Catalog{signals: make([]SignalSpec, len(c.signals)), prefixes: append(slices.Clone(c.prefixes), prefix)}
	for i, s := range c.signals {
		s = s.clone()
		var srcs []Candidate
		for _, src := range s.Candidates {
			srcs = append(srcs, src)
			if rest, ok := strings.CutPrefix(src.Metric, "vllm:"); ok {
				p := src
				p.Metric = prefix + rest
				p.Added = added
				if p.Note == "" {
					p.Note = "prefix " + prefix
				} else {
					p.Note += "; prefix " + prefix
				}
				if !slices.ContainsFunc(s.Candidates, func(x Candidate) bool { return x.Metric == p.Metric }) {
					srcs = append(srcs, p)
				}
			}
		}
		s.Candidates = srcs
		out.signals[i] = s
	}
	return out, nil
}

// canonical maps a name under one of c's prefixes back to its vllm: name.
func (c Catalog) canonical(name string) string {
	for _, p := range c.prefixes {
		if rest, ok := strings.CutPrefix(name, p); ok {
			return "vllm:" + rest
		}
	}
	return name
}

// historyOf returns the version ranges of a (possibly prefixed) name.
func (c Catalog) historyOf(metric string) ([]VersionRange, Confidence) {
	return rangesOf(history(), c.canonical(metric))
}

// rangesOf returns the ranges of the name eras of metric in h, and the
// weakest confidence among them (Documented when there is none).
func rangesOf(h []Era, metric string) ([]VersionRange, Confidence) {
	var rs []VersionRange
	conf := Documented
	for _, e := range h {
		if e.Metric == metric && e.Bounds == nil {
			rs = append(rs, e.Versions)
			conf = max(conf, e.Confidence)
		}
	}
	return rs, conf
}

// scaleFromName guesses the unit of an aliased metric from its name; see
// Alias.
func scaleFromName(unit, metric string) (scale float64, guard bool) {
	n := strings.ToLower(metric)
	switch unit {
	case UnitSeconds:
		base := strings.TrimSuffix(n, "_total")
		switch {
		case strings.HasSuffix(base, "_milliseconds"), strings.HasSuffix(base, "_ms"):
			return 0.001, false
		case strings.HasSuffix(base, "_microseconds"), strings.HasSuffix(base, "_us"):
			return 1e-6, false
		}
	case UnitRatio:
		switch {
		case strings.Contains(n, "ratio"), strings.Contains(n, "fraction"), strings.HasSuffix(n, "_perc"):
			return 1, true
		case strings.Contains(n, "percent"), strings.Contains(n, "pct"), strings.Contains(n, "util"):
			return 0.01, false
		}
		return 1, true
	}
	return 1, false
}

func joinIDs(ids []SignalID) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = string(id)
	}
	return strings.Join(s, ", ")
}
