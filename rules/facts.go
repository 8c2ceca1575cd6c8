package rules

import (
	"errors"
	"math"
	"sort"
)

// FactID names one fact, the input vocabulary of the decision map. Fact
// ids are snake_case strings and part of the public contract: package
// diagnose computes them from metrics, reports print them, and experiment
// plans name their metrics with them.
//
// Conventions shared by all facts:
//   - values are in base units: seconds, tokens, requests, ratios in 0..1;
//   - "_pNN" facts are quantiles of a histogram merged across the fleet
//     (buckets summed over replicas, then histogram_quantile), over the
//     window; Lower and Upper are the bucket bounds that contain the
//     quantile and Count is the number of observations in the window;
//   - "_rate" facts are per second, from counter increases over the window
//     (resets handled); Count is the counter increase when it is a count
//     of events, else the number of scrapes;
//   - "_share" facts are fractions 0..1 of finished requests;
//   - gauge facts ("_mean", "_max") are over the scrapes in the window,
//     summed over replicas at each scrape time; Count is the number of
//     scrape times.
type FactID string

// Latency quantiles (seconds), from vLLM request histograms.
const (
	// TTFTP50 is the median time to first token (s), from
	// vllm:time_to_first_token_seconds.
	TTFTP50 FactID = "ttft_p50"
	// TTFTP95 is the 95th percentile time to first token (s).
	TTFTP95 FactID = "ttft_p95"
	// TTFTP99 is the 99th percentile time to first token (s).
	TTFTP99 FactID = "ttft_p99"
	// QueueTimeP50 is the median time spent waiting before the first
	// schedule (s), from vllm:request_queue_time_seconds.
	QueueTimeP50 FactID = "queue_time_p50"
	// QueueTimeP95 is the 95th percentile queue time (s).
	QueueTimeP95 FactID = "queue_time_p95"
	// PrefillTimeP50 is the median prefill time (s), from
	// vllm:request_prefill_time_seconds. Lost prefix reuse shows here
	// first: the p95 is often held by long prompts that were never cached.
	PrefillTimeP50 FactID = "prefill_time_p50"
	// PrefillTimeP95 is the 95th percentile prefill time (s), from
	// vllm:request_prefill_time_seconds.
	PrefillTimeP95 FactID = "prefill_time_p95"
	// DecodeTimeP95 is the 95th percentile decode time (s), from
	// vllm:request_decode_time_seconds.
	DecodeTimeP95 FactID = "decode_time_p95"
	// TPOTP50 is the median per-request time per output token (s), from
	// vllm:request_time_per_output_token_seconds (vLLM >= 0.11). Never the
	// older per-step vllm:time_per_output_token_seconds, which is ITL.
	TPOTP50 FactID = "tpot_p50"
	// TPOTP95 is the 95th percentile per-request time per output token
	// (s); see TPOTP50.
	TPOTP95 FactID = "tpot_p95"
	// TPOTMean is the mean decode time per output token (s) where no
	// per-request TPOT histogram exists: request_decode_time_seconds_sum /
	// (request_generation_tokens_sum - request_generation_tokens_count)
	// over the window. It stands in for TPOTP95 in the tpot symptom, with
	// that substitution stated in the evidence.
	TPOTMean FactID = "tpot_mean"
	// ITLP95 is the 95th percentile inter-token latency (s), from
	// vllm:inter_token_latency_seconds or, before vLLM 0.11,
	// vllm:time_per_output_token_seconds (one observation per step).
	ITLP95 FactID = "itl_p95"
	// E2EP50 is the median end-to-end request latency (s), from
	// vllm:e2e_request_latency_seconds.
	E2EP50 FactID = "e2e_p50"
	// E2EP95 is the 95th percentile end-to-end latency (s).
	E2EP95 FactID = "e2e_p95"
	// E2EP99 is the 99th percentile end-to-end latency (s).
	E2EP99 FactID = "e2e_p99"
	// InferenceTimeP95 is the 95th percentile prefill+decode time (s),
	// from vllm:request_inference_time_seconds.
	InferenceTimeP95 FactID = "inference_time_p95"
	// ClientTTFTP95 is the 95th percentile TTFT measured on the client or
	// gateway side (s), from a histogram the caller names. Optional: only
	// the proxy-network hypothesis needs it.
	ClientTTFTP95 FactID = "client_ttft_p95"
)

// Lifecycle means (seconds), from the _sum and _count of vLLM request
// histograms over the window (article section 3): E2E ~ queue + prefill +
// decode (+ the rest), TTFT ~ queue + prefill. Count is the number of
// requests. The decomposition says which phase of a request grew.
const (
	// QueueTimeMean is the mean queue time (s), from
	// vllm:request_queue_time_seconds _sum / _count.
	QueueTimeMean FactID = "queue_time_mean"
	// PrefillTimeMean is the mean prefill time (s).
	PrefillTimeMean FactID = "prefill_time_mean"
	// DecodeTimeMean is the mean decode time (s).
	DecodeTimeMean FactID = "decode_time_mean"
	// TTFTMean is the mean time to first token (s).
	TTFTMean FactID = "ttft_mean"
	// E2EMean is the mean end-to-end latency (s).
	E2EMean FactID = "e2e_mean"
)

// Request sizes (tokens), from vLLM request histograms.
const (
	// PromptTokensP50 is the median prompt length (tokens), from
	// vllm:request_prompt_tokens.
	PromptTokensP50 FactID = "prompt_tokens_p50"
	// PromptTokensP95 is the 95th percentile prompt length (tokens).
	PromptTokensP95 FactID = "prompt_tokens_p95"
	// PromptTokensP99 is the 99th percentile prompt length (tokens).
	PromptTokensP99 FactID = "prompt_tokens_p99"
	// GenerationTokensP50 is the median output length (tokens), from
	// vllm:request_generation_tokens.
	GenerationTokensP50 FactID = "generation_tokens_p50"
	// GenerationTokensP95 is the 95th percentile output length (tokens).
	GenerationTokensP95 FactID = "generation_tokens_p95"
)

// Rates and shares.
const (
	// ArrivalRate is the estimated arrival rate (requests/s): completions
	// per second plus the growth of (waiting + running) over the window,
	// divided by the window length. http_requests_total counts responses
	// when they end, so it is a completion rate, not arrivals.
	ArrivalRate FactID = "arrival_rate"
	// CompletionRate is finished requests per second, all finished_reason
	// values, from rate(vllm:request_success_total).
	CompletionRate FactID = "completion_rate"
	// ErrorShare is the share (0..1) of finished requests with
	// finished_reason="error".
	ErrorShare FactID = "error_share"
	// AbortShare is the share (0..1) of finished requests with
	// finished_reason="abort" (client cancellations and disconnects,
	// often client timeouts).
	AbortShare FactID = "abort_share"
	// HTTP5xxShare is the share (0..1) of HTTP responses with status 5xx,
	// from http_requests_total{status="5xx"} over all statuses.
	HTTP5xxShare FactID = "http_5xx_share"
	// TimeoutShare is the share (0..1) of requests that timed out, from a
	// gateway or client metric the caller names. Optional.
	TimeoutShare FactID = "timeout_share"
	// HTTP429Share is the share (0..1) of HTTP responses with status 429
	// (rate limited), from http_requests_total{status="429"} (or "4xx"
	// split by code) over all statuses.
	HTTP429Share FactID = "http_429_share"
	// HTTP5xxShareMax is the largest 5xx share (0..1) of any one replica's
	// HTTP responses; Source names the replica. Well above http_5xx_share,
	// the errors come from that replica.
	HTTP5xxShareMax FactID = "http_5xx_share_max"
	// AbandonShare is the share (0..1) of requests abandoned by their
	// clients without vLLM counting them: abandoned_requests over
	// completions + abandoned_requests. A lower bound: requests abandoned
	// while still queued leave no trace in vLLM's metrics.
	AbandonShare FactID = "abandon_share"
	// LostShare is the share (0..1) of requests lost in restarts:
	// requests_lost over completions + requests_lost.
	LostShare FactID = "lost_share"
	// GatewayUnservedShare is gateway_unserved over the gateway's
	// arrivals (0..1). Needs a gateway arrival counter (alias
	// gateway_requests).
	GatewayUnservedShare FactID = "gateway_unserved_share"
	// PromptTokenRate is prompt tokens processed per second, from
	// rate(vllm:prompt_tokens_total).
	PromptTokenRate FactID = "prompt_token_rate"
	// GenerationTokenRate is output tokens per second, from
	// rate(vllm:generation_tokens_total).
	GenerationTokenRate FactID = "generation_token_rate"
	// PreemptionRate is preemptions per second, from
	// rate(vllm:num_preemptions_total) over the window (never the
	// lifetime counter value); Count is the increase.
	PreemptionRate FactID = "preemption_rate"
	// PreemptionShare is preemptions per finished request over the window
	// (increase of vllm:num_preemptions_total over the increase of
	// vllm:request_success_total); Count is the completions.
	PreemptionShare FactID = "preemption_share"
	// PrefixHitRatio is the prefix-cache hit ratio (0..1): increase of
	// vllm:prefix_cache_hits_total over increase of
	// vllm:prefix_cache_queries_total (tokens), or the older
	// gpu_prefix_cache_* series.
	PrefixHitRatio FactID = "prefix_hit_ratio"
)

// Scheduler state, from gauges sampled at scrape times (fleet sum per
// scrape time unless stated).
const (
	// WaitingMean is the mean of vllm:num_requests_waiting (requests).
	WaitingMean FactID = "waiting_mean"
	// WaitingMax is the maximum of vllm:num_requests_waiting (requests).
	WaitingMax FactID = "waiting_max"
	// WaitingSlope is the least-squares slope of waiting over time
	// (requests/s, gonum stat.LinearRegression of value on seconds):
	// clearly positive means the queue accumulates.
	WaitingSlope FactID = "waiting_slope"
	// WaitingBurst is the peak short-interval arrival rate (or, lacking
	// arrivals, the peak waiting) divided by its window mean (ratio >= 1):
	// a large value with no slope means bursts that drain again.
	WaitingBurst FactID = "waiting_burst"
	// WaitingMedian is the median over scrape times of the fleet's
	// waiting requests: a queue that spikes and drains has a median near
	// 0 and a large maximum.
	WaitingMedian FactID = "waiting_median"
	// WaitingBusyShare is the share (0..1) of the fleet's scrape times at
	// which at least one request waits: near 1 when the queue persists,
	// small when bursts queue and drain.
	WaitingBusyShare FactID = "waiting_busy_share"
	// ArrivalDispersion is the index of dispersion (variance / mean) of
	// the arrivals per scrape interval (completions + growth of waiting
	// and running): about 1 for steady (Poisson) arrivals, large when
	// bursts carry a big share of them.
	ArrivalDispersion FactID = "arrival_dispersion"
	// ArrivalDispersionDetrended is the index of dispersion of the
	// arrivals per scrape interval around their local level (the median
	// of the intervals within 2 minutes on either side): about 1 for
	// Poisson arrivals whatever their trend (a ramp, a step of demand),
	// large when bursts shorter than the level's reach carry a big share
	// of them. arrival_dispersion, around the window's mean, reads a trend
	// as dispersion.
	ArrivalDispersionDetrended FactID = "arrival_dispersion_detrended"
	// WaitingDrainedShare is the share (0..1) of the queue's mass (the
	// fleet's waiting requests summed over the window's scrape intervals)
	// that lies in episodes of waiting which drained (fell below one
	// request) before the window ended: near 1 when bursts queue and drain
	// between them, 0 when the queue builds and stays.
	WaitingDrainedShare FactID = "waiting_drained_share"
	// BacklogSpike is the largest ratio, over the window's scrape
	// intervals, of the fleet's requests in the engines (waiting +
	// running, mean per interval) to their local level (the median of the
	// intervals within 2 minutes on either side): near 1 for a steady or
	// trending load, large when bursts fill the batch and drain again. A
	// burst shows in the engines' backlog even when the scrapes are too
	// far apart to show it in the arrivals per interval.
	BacklogSpike FactID = "backlog_spike"
	// OccupancySeen is the fleet's requests in the engines at the scrapes
	// (waiting + running, mean) over the requests in flight the counters
	// imply by Little's law (the e2e latency _sum's increase over the
	// window's seconds): near 1 when the scrapes see the load as it is,
	// well under 1 when the load arrives and drains between scrapes
	// (bursts shorter than the scrape interval).
	OccupancySeen FactID = "occupancy_seen"
	// RunningMean is the mean of vllm:num_requests_running (requests).
	RunningMean FactID = "running_mean"
	// RunningMax is the maximum of vllm:num_requests_running (requests).
	RunningMax FactID = "running_max"
	// MaxNumSeqs is the configured max_num_seqs summed over replicas
	// (requests), from vllm:cache_config_info or the caller; optional.
	MaxNumSeqs FactID = "max_num_seqs"
	// KVUsageMean is the mean KV-cache usage (0..1) of vllm:kv_cache_usage_perc
	// (vllm:gpu_cache_usage_perc before 0.9), averaged over replicas.
	KVUsageMean FactID = "kv_usage_mean"
	// KVUsageMax is the maximum KV-cache usage (0..1) of any replica.
	KVUsageMax FactID = "kv_usage_max"
	// KVUsagePreempting is the KV-cache usage (0..1) of the replicas where
	// it matters: at the scrapes bounding each scrape interval in which a
	// replica's preemption counter rose, the higher of the two, averaged
	// over those intervals of every replica. A fleet mean (kv_usage_mean)
	// dilutes a cache that is full exactly where requests are preempted;
	// this does not. Count is the number of such replica intervals;
	// missing when nothing was preempted in the window.
	KVUsagePreempting FactID = "kv_usage_preempting"
	// KVFullSharePreempting is the share (0..1) of the scrapes of the
	// replicas that preempted in the window at which their KV usage was at
	// or above Thresholds.KVHigh: how long the cache of those replicas
	// stayed at its ceiling. Count is the number of their scrapes.
	KVFullSharePreempting FactID = "kv_full_share_preempting"
	// GPUUtilMean is the mean GPU utilisation (0..1) over GPUs and
	// scrapes, from DCGM_FI_DEV_GPU_UTIL (0-100, divide by 100) or a ratio
	// metric such as DCGM_FI_PROF_GR_ENGINE_ACTIVE. Where the GPUs map to
	// replicas, it counts the replicas in rotation only (those that served
	// or held requests in each interval): a cordoned or sleeping replica
	// idles its GPU without a bottleneck.
	GPUUtilMean FactID = "gpu_util_mean"
	// GPUUtilWaiting is the mean GPU utilisation (0..1) of the replicas at
	// the scrapes at which requests waited on them: what a GPU does while
	// work waits for it. A fed GPU is busy then; one that is not points
	// outside the GPU (CPU, scheduler, gateway). Count is the number of
	// replica scrapes.
	GPUUtilWaiting FactID = "gpu_util_waiting"
	// BacklogEnd is waiting + running at the last scrape of the window
	// (requests): work left when an experiment run ends.
	BacklogEnd FactID = "backlog_end"
)

// Requests that do not complete and that vLLM counts nowhere (article
// symptom 4): client abandonment hidden by vLLM V1's accounting, requests
// lost in restarts, crash loops. Estimates carry Lower and Upper; Source
// states the assumptions they rest on.
const (
	// AbandonedPromptTokens is the prompt tokens prefilled for requests
	// that never finished in the window: increase(vllm:prompt_tokens_total)
	// - increase(vllm:request_prompt_tokens_sum), corrected for the
	// requests running at both edges (and before each restart) with the
	// running gauge times the mean prompt length. Lower and Upper allow
	// for the in-flight requests' prompt lengths differing from the mean.
	AbandonedPromptTokens FactID = "abandoned_prompt_tokens"
	// AbandonedByTokens is abandoned_prompt_tokens divided by the mean
	// prompt length of finished requests (requests).
	AbandonedByTokens FactID = "abandoned_by_tokens"
	// AbandonedAfterFirstToken is the requests that got a first token
	// but never finished in the window: the TTFT count minus the E2E
	// count (vLLM V1 observes TTFT when the first token is produced and
	// E2E only when the request finishes), corrected for the requests
	// running at both edges and before each restart (requests).
	AbandonedAfterFirstToken FactID = "abandoned_after_first_token"
	// AbandonedRequests is the estimate of requests abandoned after their
	// prefill finished (traceable abandonment): abandoned_after_first_token
	// when it can be computed, else abandoned_by_tokens; Lower and Upper
	// span both estimates' bounds.
	AbandonedRequests FactID = "abandoned_requests"
	// QueueUnservedMin is a lower bound of the requests that left a
	// replica unserved (abandoned or lost): the sum over scrape intervals
	// of how far waiting + running fell beyond the completions of the
	// interval (requests). Arrivals during the interval hide the rest.
	QueueUnservedMin FactID = "queue_unserved_min"
	// GatewayUnserved is a gateway's arrivals minus vLLM's completions
	// minus the growth of waiting + running (requests): what entered and
	// neither finished nor still waits. Needs a gateway arrival counter
	// (alias gateway_requests).
	GatewayUnserved FactID = "gateway_unserved"
	// Restarts is the number of process restarts in the window over the
	// fleet: changes of process_start_time_seconds, or counters of a
	// target dropping together (vLLM V0 has no process metrics).
	Restarts FactID = "restarts"
	// OutageLoadFactor is the load the replicas that stayed took on while
	// others were away in the window (restarting, a scrape gap, gone or
	// not yet joined): the usual number of replicas present over the
	// fewest present at one scrape time. 1 when none was away; 2 when one
	// of two restarted: its load moved to the other, whatever the demand.
	OutageLoadFactor FactID = "outage_load_factor"
	// RestartsReplicaMax is the largest number of restarts of one
	// replica in the window; Source names it. A planned restart is one; a
	// crash loop is several.
	RestartsReplicaMax FactID = "restarts_replica_max"
	// RestartsPerHourMax is RestartsReplicaMax per hour of window (1/h).
	RestartsPerHourMax FactID = "restarts_per_hour_max"
	// RequestsLost is the requests in flight (waiting + running) at the
	// last scrape before each restart, summed (requests): lost with the
	// process, counted by no metric.
	RequestsLost FactID = "requests_lost"
	// OOMKills is the number of the fleet's containers whose last
	// termination was OOMKilled, from kube-state-metrics'
	// kube_pod_container_status_last_terminated_reason.
	OOMKills FactID = "oom_kills"
	// FBRiseRestarts is the number of restarts preceded by GPU
	// framebuffer use (DCGM_FI_DEV_FB_USED) at least 2% above the pod's
	// own median level earlier in that process lifetime: memory
	// exhaustion. vLLM preallocates, so only a rise above the pod's own
	// steady level says anything.
	FBRiseRestarts FactID = "fb_rise_restarts"
)

// Replica balance and relations.
const (
	// ReplicaShareMax is the largest replica's share of completions
	// divided by the fair share 1/N (ratio; 1 = balanced, 2 = twice its
	// share). Needs at least two replicas.
	ReplicaShareMax FactID = "replica_share_max"
	// ReplicaLoadShareMax is the largest replica's share of the arrivals
	// (its completions plus the growth of its waiting and running
	// requests) divided by its fair share (its engines over the fleet's):
	// 1 = balanced, 2 = twice its share. Load, unlike completions, keeps
	// counting when the hot replica saturates. The fair share weighs each
	// replica's engines by the time it was in rotation in the window
	// (from its first to its last interval serving or holding requests):
	// a replica that left the rotation has no share of the rest. Source
	// names the replica.
	ReplicaLoadShareMax FactID = "replica_load_share_max"
	// ReplicaTTFTRatio is the worst replica's TTFT p95 divided by the
	// fleet TTFT p95 (ratio).
	ReplicaTTFTRatio FactID = "replica_ttft_ratio"
	// ReplicaTTFTMeanMedian is the median over the replicas of each one's
	// mean TTFT (s, _sum / _count), of the replicas with at least
	// Thresholds.MinSamples requests in the window, the slowest of them
	// left out (with two replicas, the other one's); Count is the number
	// of replicas in the median. A cause on the fleet's load (arrivals
	// beyond capacity, bursts the router spreads) moves it with the
	// fleet's mean TTFT; a cause on a minority of the replicas leaves it
	// where it was. Missing for a prefill/decode fleet, whose roles' TTFT
	// differ.
	ReplicaTTFTMeanMedian FactID = "replica_ttft_mean_median"
	// CorrRunningTPOT is the Pearson correlation (-1..1, gonum
	// stat.Correlation) between running sequences and windowed TPOT (or
	// ITL) per scrape interval over the incident window; Count is the
	// number of intervals.
	CorrRunningTPOT FactID = "corr_running_tpot"
	// TTFTP95WithoutHot is the fleet TTFT p95 (s) of the replicas that are
	// not hot spots: those whose share of the arrivals (as in
	// replica_load_share_max) stays below Thresholds.Hotspot times their
	// fair share in the incident window, in both windows. When the fleet
	// without its hot replicas barely moved, the hot spot explains the
	// fleet's change; when it carries much of the fleet's rise, something
	// that reaches every replica does. Source names the replicas left
	// out; missing when no replica is hot or none is left.
	TTFTP95WithoutHot FactID = "ttft_p95_without_hot"
	// TTFTMeanWithoutHot is the mean TTFT (s, _sum / _count) of the same
	// replicas as ttft_p95_without_hot: it decides where the p95 sits in
	// one coarse bucket.
	TTFTMeanWithoutHot FactID = "ttft_mean_without_hot"
	// TPOTP95WithoutHot is the fleet TPOT p95 (s) of the same replicas as
	// ttft_p95_without_hot: where only the decode side moved (a decode
	// hot spot of a prefill/decode fleet), it decides whether the hot
	// spot explains the fleet's change.
	TPOTP95WithoutHot FactID = "tpot_p95_without_hot"
	// TPOTMeanWithoutHot is tpot_mean (decode time per output token,
	// from sums) of the same replicas as ttft_p95_without_hot.
	TPOTMeanWithoutHot FactID = "tpot_mean_without_hot"
)

// Kind says how a fact was measured; it decides the sample-count checks.
type Kind int

const (
	// KindQuantile is a histogram quantile with bucket bounds.
	KindQuantile Kind = iota
	// KindRate is a per-second rate or a share derived from counters.
	KindRate
	// KindGauge is a statistic of a gauge over scrape times.
	KindGauge
	// KindDerived is a ratio or correlation computed from other signals, or a
	// configuration value.
	KindDerived
	// KindMean is a histogram's mean from _sum / _count; it needs as many
	// observations as a quantile.
	KindMean
)

// FactInfo documents one fact.
type FactInfo struct {
	ID   FactID
	Kind Kind
	// Unit is the unit of the value: one of the Unit constants ("s",
	// "tokens", "req/s", "tokens/s", "1/s", "1/h", "ratio" (0..1),
	// "requests", "count", "x" (dimensionless multiple)) or "r"
	// (correlation).
	Unit Unit
	// Better is the direction in which the fact improves ("lower",
	// "higher"), or "" when neither is better by itself.
	Better Direction
	// Doc says what the fact means, in one line.
	Doc string
}

// catalog lists every fact the rules know, sorted by id at init.
var catalog = []FactInfo{
	{AbortShare, KindRate, "ratio", Lower, "share of finished requests aborted (finished_reason=abort)"},
	{AbandonShare, KindRate, "ratio", Lower, "share of requests abandoned after prefill and counted nowhere"},
	{AbandonedAfterFirstToken, KindDerived, "requests", Lower, "TTFT count - E2E count, in-flight corrected"},
	{AbandonedByTokens, KindDerived, "requests", Lower, "hidden prompt tokens / mean prompt length"},
	{AbandonedPromptTokens, KindDerived, "tokens", Lower, "prompt_tokens_total - request_prompt_tokens_sum, in-flight corrected"},
	{AbandonedRequests, KindDerived, "requests", Lower, "estimated requests abandoned after prefill (traceable)"},
	{GatewayUnserved, KindDerived, "requests", Lower, "gateway arrivals - completions - growth of waiting + running"},
	{GatewayUnservedShare, KindRate, "ratio", Lower, "gateway_unserved / gateway arrivals"},
	{HTTP429Share, KindRate, "ratio", Lower, "share of HTTP responses with status 429"},
	{HTTP5xxShareMax, KindRate, "ratio", Lower, "largest 5xx share of one replica"},
	{LostShare, KindRate, "ratio", Lower, "share of requests lost in restarts"},
	{OOMKills, KindDerived, "count", Lower, "containers last terminated OOMKilled (kube-state-metrics)"},
	{FBRiseRestarts, KindDerived, "count", Lower, "restarts preceded by framebuffer use above the pod's own level"},
	{QueueUnservedMin, KindDerived, "requests", Lower, "lower bound of requests leaving unserved (backlog fell beyond completions)"},
	{RequestsLost, KindDerived, "requests", Lower, "requests in flight at the last scrape before a restart"},
	{Restarts, KindDerived, "count", Lower, "process restarts in the window"},
	{OutageLoadFactor, KindDerived, "x", Lower, "usual replicas present / fewest present at a scrape time in the window"},
	{RestartsPerHourMax, KindDerived, "1/h", Lower, "restarts per hour of the most restarted replica"},
	{RestartsReplicaMax, KindDerived, "count", Lower, "restarts of the most restarted replica"},
	{ArrivalDispersion, KindDerived, "x", "", "variance / mean of arrivals per scrape interval"},
	{ArrivalDispersionDetrended, KindDerived, "x", "", "variance around their local level (running median) / mean of arrivals per scrape interval"},
	{ArrivalRate, KindRate, "req/s", "", "estimated arrivals: completions + growth of waiting and running"},
	{BacklogEnd, KindGauge, "requests", Lower, "waiting + running at the end of the window"},
	{BacklogSpike, KindDerived, "x", "", "peak of waiting + running over its local level (running median)"},
	{OccupancySeen, KindDerived, "x", "", "waiting + running at the scrapes over e2e _sum / seconds (Little's law)"},
	{ClientTTFTP95, KindQuantile, "s", Lower, "client/gateway-side TTFT p95"},
	{CompletionRate, KindRate, "req/s", Higher, "finished requests per second"},
	{CorrRunningTPOT, KindDerived, "r", "", "Pearson correlation of running sequences and windowed TPOT"},
	{DecodeTimeMean, KindMean, "s", Lower, "mean decode time"},
	{DecodeTimeP95, KindQuantile, "s", Lower, "decode time p95"},
	{E2EMean, KindMean, "s", Lower, "mean end-to-end latency"},
	{E2EP50, KindQuantile, "s", Lower, "end-to-end latency p50"},
	{E2EP95, KindQuantile, "s", Lower, "end-to-end latency p95"},
	{E2EP99, KindQuantile, "s", Lower, "end-to-end latency p99"},
	{ErrorShare, KindRate, "ratio", Lower, "share of finished requests with finished_reason=error"},
	{GenerationTokenRate, KindRate, "tokens/s", Higher, "output tokens per second"},
	{GenerationTokensP50, KindQuantile, "tokens", "", "output length p50"},
	{GenerationTokensP95, KindQuantile, "tokens", "", "output length p95"},
	{GPUUtilMean, KindGauge, "ratio", "", "mean GPU utilisation"},
	{GPUUtilWaiting, KindGauge, "ratio", "", "mean GPU utilisation where requests wait"},
	{HTTP5xxShare, KindRate, "ratio", Lower, "share of HTTP responses with status 5xx"},
	{InferenceTimeP95, KindQuantile, "s", Lower, "prefill + decode time p95"},
	{ITLP95, KindQuantile, "s", Lower, "inter-token latency p95"},
	{KVUsageMax, KindGauge, "ratio", "", "maximum KV-cache usage of any replica"},
	{KVUsageMean, KindGauge, "ratio", "", "mean KV-cache usage"},
	{KVUsagePreempting, KindGauge, "ratio", "", "KV-cache usage of the replicas at the intervals in which they preempted"},
	{KVFullSharePreempting, KindGauge, "ratio", "", "share of the preempting replicas' scrapes with KV usage at its ceiling (>= kv_high)"},
	{MaxNumSeqs, KindDerived, "requests", "", "configured max_num_seqs, summed over replicas"},
	{PreemptionRate, KindRate, "1/s", Lower, "preemptions per second"},
	{PreemptionShare, KindRate, "ratio", Lower, "preemptions per finished request"},
	{PrefillTimeMean, KindMean, "s", Lower, "mean prefill time"},
	{PrefillTimeP50, KindQuantile, "s", Lower, "prefill time p50"},
	{PrefillTimeP95, KindQuantile, "s", Lower, "prefill time p95"},
	{PrefixHitRatio, KindRate, "ratio", Higher, "prefix-cache hit ratio (tokens hit / tokens queried)"},
	{PromptTokenRate, KindRate, "tokens/s", "", "prompt tokens per second"},
	{PromptTokensP50, KindQuantile, "tokens", "", "prompt length p50"},
	{PromptTokensP95, KindQuantile, "tokens", "", "prompt length p95"},
	{PromptTokensP99, KindQuantile, "tokens", "", "prompt length p99"},
	{QueueTimeMean, KindMean, "s", Lower, "mean queue time"},
	{QueueTimeP50, KindQuantile, "s", Lower, "queue time p50"},
	{QueueTimeP95, KindQuantile, "s", Lower, "queue time p95"},
	{ReplicaShareMax, KindDerived, "x", Lower, "largest replica's completion share / fair share"},
	{ReplicaLoadShareMax, KindDerived, "x", Lower, "largest replica's arrivals share / fair share"},
	{ReplicaTTFTRatio, KindDerived, "x", Lower, "worst replica TTFT p95 / fleet TTFT p95"},
	{ReplicaTTFTMeanMedian, KindDerived, "s", Lower, "median of the replicas' mean TTFTs, the slowest left out"},
	{RunningMax, KindGauge, "requests", "", "maximum running sequences"},
	{RunningMean, KindGauge, "requests", "", "mean running sequences"},
	{TimeoutShare, KindRate, "ratio", Lower, "share of requests that timed out (gateway or client metric)"},
	{TPOTMean, KindRate, "s", Lower, "mean decode time per output token, from sums"},
	{TPOTP50, KindQuantile, "s", Lower, "per-request time per output token p50"},
	{TPOTP95, KindQuantile, "s", Lower, "per-request time per output token p95"},
	{TTFTMean, KindMean, "s", Lower, "mean time to first token"},
	{TTFTP50, KindQuantile, "s", Lower, "time to first token p50"},
	{TTFTP95, KindQuantile, "s", Lower, "time to first token p95"},
	{TTFTP99, KindQuantile, "s", Lower, "time to first token p99"},
	{TTFTP95WithoutHot, KindQuantile, "s", Lower, "fleet TTFT p95 without the hot replicas"},
	{TTFTMeanWithoutHot, KindMean, "s", Lower, "mean TTFT of the fleet without the hot replicas"},
	{TPOTP95WithoutHot, KindQuantile, "s", Lower, "fleet TPOT p95 without the hot replicas"},
	{TPOTMeanWithoutHot, KindMean, "s", Lower, "mean time per output token of the fleet without the hot replicas"},
	{WaitingBurst, KindDerived, "x", "", "peak short-interval arrivals (or waiting) / window mean"},
	{WaitingBusyShare, KindGauge, "ratio", "", "share of scrapes with requests waiting"},
	{WaitingMax, KindGauge, "requests", "", "maximum waiting requests"},
	{WaitingMean, KindGauge, "requests", "", "mean waiting requests"},
	{WaitingMedian, KindGauge, "requests", "", "median waiting requests"},
	{WaitingSlope, KindDerived, "requests/s", "", "trend of waiting requests (regression slope)"},
	{WaitingDrainedShare, KindGauge, "ratio", "", "share of the queue's mass in episodes that drained within the window"},
}

func init() {
	sort.Slice(catalog, func(i, j int) bool { return catalog[i].ID < catalog[j].ID })
}

// FactIDs returns every fact id the rules know, sorted.
func FactIDs() []FactID {
	ids := make([]FactID, len(catalog))
	for i, c := range catalog {
		ids[i] = c.ID
	}
	return ids
}

// Info returns the documentation of a fact, and false for an unknown id.
func Info(id FactID) (FactInfo, bool) {
	i := sort.Search(len(catalog), func(i int) bool { return catalog[i].ID >= id })
	if i < len(catalog) && catalog[i].ID == id {
		return catalog[i], true
	}
	return FactInfo{}, false
}

// A Measurement is one measured value: what was measured, the bounds of
// an estimate, the observations behind it and the window it covers.
// Unknown numbers are NaN, never zero.
type Measurement struct {
	// Value is the value measured.
	Value float64
	// Lower and Upper bound Value when it is an estimate (the bucket that
	// holds a histogram quantile); NaN when exact or unknown. Upper may
	// be +Inf.
	Lower, Upper float64
	// Count is the number of observations behind Value (requests for a
	// histogram, events for a counter, scrapes for a gauge); NaN when
	// unknown. Quantiles with fewer than Thresholds.MinSamples
	// observations are not evaluated.
	Count float64
	// Window describes the window measured, e.g. "10:00-10:30Z (30m)".
	Window string
}

// Unmeasured returns a measurement whose numbers are all unknown.
func Unmeasured() Measurement {
	nan := math.NaN()
	return Measurement{Value: nan, Lower: nan, Upper: nan, Count: nan}
}

// A Fact is what the rules judge: one quantity measured in the incident
// window and in the baseline window, the noise of their ratio, and where
// it came from.
//
// Unknown numbers are NaN, never zero: build facts with Measured (which
// sets every optional number to NaN) and the With methods, or set all
// fields in a literal. A fact whose Incident.Value is NaN, or whose
// Missing is not nil, cannot be evaluated; rules that need it report
// "not-evaluable".
type Fact struct {
	// Incident is the value measured in the incident window.
	Incident Measurement
	// Baseline is the value measured in the baseline window; its Value
	// is NaN when there is no baseline.
	Baseline Measurement

	// NoiseLower and NoiseUpper bound the ratio of the incident value to
	// the baseline's with the variation between the windows' intervals:
	// the 0.5th and 99.5th percentiles of the ratio over resamples of
	// each window's intervals (package diagnose resamples minutes; see
	// Change). Meaningful only when Intervals and BaselineIntervals are
	// both positive.
	NoiseLower, NoiseUpper float64
	// Intervals and BaselineIntervals are the number of intervals behind
	// the noise bounds, in the incident and baseline windows; 0 when the
	// noise is unknown (a single scrape, lifetime counters, a literal).
	Intervals, BaselineIntervals int

	// Unprecedented is, for a histogram quantile whose incident value
	// lies above every baseline observation (above the upper edge of the
	// highest bucket the baseline reached, with at least 10/(1-q)
	// baseline observations), the number of incident observations above
	// that edge; 0 otherwise, NaN when not measured. The baseline never
	// produced such a value: a rise carried by at least
	// Thresholds.MinSamples of them is beyond the baseline's range,
	// whatever the variation between intervals (an incident in episodes
	// fills few of them).
	Unprecedented float64

	// SamplingZ is, for a histogram quantile with a baseline, how many
	// standard errors of sampling the incident lies from the baseline at
	// the baseline's quantile: the two-proportion z statistic of the
	// shares of each window's observations above the baseline's value
	// (positive for a rise). A quantile of a hundred requests rests on a
	// handful in its tail; a change below Thresholds.SamplingZ could be
	// their luck of the draw. Measured only when SamplingKnown.
	SamplingZ     float64
	SamplingKnown bool

	// Source names the metric (and version) the value came from, e.g.
	// "vllm:time_to_first_token_seconds (V1)".
	Source string
	// Replica names the replica a per-replica fact singles out (the one
	// that takes the largest share of arrivals, restarts most), which
	// Source names too; empty for a fact of the fleet. Not written to
	// JSON.
	Replica string
	// Missing, when not nil, says why the fact cannot be evaluated,
	// e.g. "no GPU exporter (DCGM) metric in the evidence". It wraps
	// ErrNoSource or ErrTooLittle when the reason is of that kind. A
	// missing fact is never read as zero.
	Missing error
	// Lifetime is set when Incident.Value is from lifetime counters,
	// since each process started (one scrape per replica), not over a
	// window: it says how much happened, not when.
	Lifetime bool
}

// Measured returns a fact with the given incident value and every
// optional number (bounds, count, baseline) unknown.
func Measured(value float64) Fact {
	nan := math.NaN()
	return Fact{
		Incident: Measurement{Value: value, Lower: nan, Upper: nan, Count: nan},
		Baseline: Unmeasured(), NoiseLower: nan, NoiseUpper: nan, Unprecedented: nan,
	}
}

// WithNoise returns f with the noise bounds of its ratio to the baseline
// and the interval counts behind them.
func (f Fact) WithNoise(lower, upper float64, intervals, baselineIntervals int) Fact {
	f.NoiseLower, f.NoiseUpper = lower, upper
	f.Intervals, f.BaselineIntervals = intervals, baselineIntervals
	return f
}

// MissingFact returns a fact that cannot be evaluated, for the given
// reason (not nil).
func MissingFact(reason error) Fact {
	f := Measured(math.NaN())
	f.Missing = reason
	return f
}

// WithBaseline returns f with its baseline value set.
func (f Fact) WithBaseline(baseline float64) Fact {
	f.Baseline.Value = baseline
	return f
}

// WithBounds returns f with the bounds of its incident value set.
func (f Fact) WithBounds(lower, upper float64) Fact {
	f.Incident.Lower, f.Incident.Upper = lower, upper
	return f
}

// WithCount returns f with the incident and baseline sample counts set.
func (f Fact) WithCount(incident, baseline float64) Fact {
	f.Incident.Count, f.Baseline.Count = incident, baseline
	return f
}

// WithWindow returns f with the incident and baseline window texts set.
func (f Fact) WithWindow(incident, baseline string) Fact {
	f.Incident.Window, f.Baseline.Window = incident, baseline
	return f
}

// WithSource returns f with its source set.
func (f Fact) WithSource(source string) Fact {
	f.Source = source
	return f
}

// Known reports whether the incident value can be evaluated.
func (f Fact) Known() bool { return f.Missing == nil && !math.IsNaN(f.Incident.Value) }

// HasBaseline reports whether the fact carries a baseline value.
func (f Fact) HasBaseline() bool { return !math.IsNaN(f.Baseline.Value) }

// Facts holds the facts of one evaluation, keyed by id.
//
// A map rather than a struct with one field per fact: the vocabulary is
// sparse (evidence rarely carries every signal, and an absent key reads
// as "not computed", never as zero), it grows without breaking callers,
// and a caller can add facts under ids the rules do not know yet
// (Evaluate warns about them). Evaluation never ranges over the map, so
// its order does not leak into results.
type Facts map[FactID]Fact

// lookup returns the fact and the reason it cannot be evaluated, if so:
// not given (errNotComputed), its Missing, or no value.
func (fs Facts) lookup(id FactID) (Fact, error) {
	f, ok := fs[id]
	switch {
	case !ok:
		return Measured(math.NaN()), errNotComputed
	case f.Missing != nil:
		return f, f.Missing
	case math.IsNaN(f.Incident.Value):
		return f, errNoValue
	}
	return f, nil
}

// Reasons of lookup.
var (
	errNotComputed = errors.New("not computed")
	errNoValue     = errors.New("no value")
)

// Sorted returns the ids present in fs, sorted.
func (fs Facts) Sorted() []FactID {
	ids := make([]FactID, 0, len(fs))
	for id := range fs {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}
