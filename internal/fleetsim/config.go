package fleetsim

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// DefaultStart is the wall-clock instant at which a run begins when
// [Config.Start] is zero. It is fixed so that output is reproducible.
var DefaultStart = time.Date(2026, 9, 22, 10, 0, 0, 0, time.UTC)

// Config describes one simulated fleet: its pods, their engine settings, the
// request workload and how the pods are scraped. The zero value of every
// field means "use the default" as documented on the field; [Scenario]
// returns ready-made configurations.
type Config struct {
	// Seed drives engine-side randomness (step-time jitter, scrape skew).
	Seed uint64
	// TraceSeed drives the request trace: arrival times, prompt and
	// output lengths, prefix groups and routing. Zero means Seed. Two
	// configurations with the same TraceSeed, Workload, pods and duration
	// see exactly the same requests, whatever their engine settings (see
	// [Replay]).
	TraceSeed uint64

	// Start is the wall-clock time of offset 0; zero means DefaultStart.
	Start time.Time
	// Duration of the run; zero means 60 minutes.
	Duration time.Duration
	// ScrapeInterval between two scrapes of a pod; zero means 15 s.
	ScrapeInterval time.Duration
	// ScrapeSkew is the largest offset, in whole seconds, between the
	// scrape instants of different pods (each pod gets a seeded offset in
	// [0, ScrapeSkew]); zero means 2 s, a negative value aligns all pods.
	// It must be shorter than ScrapeInterval.
	ScrapeSkew time.Duration

	// ModelName is the served model name (label model_name); empty
	// means "meta-llama/Llama-3.1-8B-Instruct".
	ModelName string
	// Namespace is the Kubernetes namespace used in target labels and
	// DCGM attribution; empty means "llm".
	Namespace string

	// Version is the vLLM metric generation of pods that do not set
	// their own; zero means VersionV1.
	Version Version
	// Engine holds the engine settings of pods that do not set their own.
	Engine EngineConfig
	// Pods lists the replicas. When empty, NumPods pods named
	// "vllm-0".."vllm-N" with default settings are used.
	Pods []PodConfig
	// NumPods is the number of default pods when Pods is empty; zero
	// means 8.
	NumPods int

	// Workload describes the requests sent to the whole fleet.
	Workload Workload

	// GPUExporter selects the DCGM exporter generation scraped next to
	// every pod; zero means none.
	GPUExporter GPUExporter
	// RequestPreemptions exports vllm:request_num_preemptions (vLLM >=
	// 0.30: preemptions of each finished request, buckets 1, 2, 3, 4, 5,
	// 10, 20) on V1 pods.
	RequestPreemptions bool
	// KVLink is the network between prefill and decode pods; used only
	// when pods have roles (PodConfig.Role).
	KVLink KVLink
}

// Roles of prefill/decode disaggregation (PodConfig.Role), the values of
// llm-d's pod label llm-d.ai/role.
const (
	RolePrefill = "prefill"
	RoleDecode  = "decode"
)

// RoleLabel is the label the role of a pod reaches Prometheus under:
// llm-d labels its model-server pods llm-d.ai/role=prefill|decode, and a
// PodMonitor or scrape config that maps the pod labels
// (__meta_kubernetes_pod_label_<name>, with every character a label name
// cannot hold turned into "_") stores it as llm_d_ai_role.
const RoleLabel = "llm_d_ai_role"

// KVLink is the KV-cache transfer path of prefill/decode disaggregation
// (vLLM's NIXL connector, vllm/distributed/kv_transfer/kv_connector/v1/
// nixl): after a prefill pod has computed a request's prompt (it serves
// the request with max_tokens=1), the decode pod reads the prompt's KV
// blocks over the link, then decodes. One transfer of b bytes takes
// Latency + b/Bandwidth.
type KVLink struct {
	// Bandwidth in bytes per second of one transfer; zero means 12.5e9
	// (100 Gb/s RDMA).
	Bandwidth float64
	// Latency is the fixed cost of one transfer (handshake, RDMA post,
	// notification); zero means 2 ms.
	Latency time.Duration
	// Degradations are periods in which the link is slower.
	Degradations []KVLinkDegradation
	// Failures are periods in which transfers fail.
	Failures []KVLinkFailure
}

// KVLinkFailure makes each transfer that starts in [From, To) fail with
// probability Share (a flapping NIC, a UCX timeout): the decode pod finds
// the blocks invalid when the read ends, counts a failed transfer
// (vllm:nixl_num_failed_transfers) and, as vLLM's KV load failure
// recovery does, reschedules the request to compute its whole prompt
// itself. A failed transfer is not observed by the transfer histograms.
type KVLinkFailure struct {
	From, To time.Duration
	Share    float64
}

// failShare is the probability that a transfer starting at t (offset
// seconds) fails.
func (l *KVLink) failShare(t float64) float64 {
	p := 0.0
	for _, f := range l.Failures {
		if t >= f.From.Seconds() && t < f.To.Seconds() {
			p = max(p, f.Share)
		}
	}
	return p
}

// KVLinkDegradation divides the link's bandwidth by Factor (> 1: a
// congested fabric, RDMA falling back to TCP) and adds Latency to every
// transfer that starts in [From, To).
type KVLinkDegradation struct {
	From, To time.Duration
	Factor   float64
	Latency  time.Duration
}

// transferTime is how long a transfer of bytes starting at t (offset
// seconds) takes.
func (l *KVLink) transferTime(t, bytes float64) float64 {
	bw, lat := l.Bandwidth, l.Latency.Seconds()
	for _, d := range l.Degradations {
		if t >= d.From.Seconds() && t < d.To.Seconds() {
			if d.Factor > 0 {
				bw /= d.Factor
			}
			lat += d.Latency.Seconds()
		}
	}
	return lat + bytes/bw
}

// disaggregated reports whether the fleet's pods have prefill/decode
// roles.
func (c *Config) disaggregated() bool {
	return slices.ContainsFunc(c.Pods, func(p PodConfig) bool { return p.Role != "" })
}

// PodConfig describes one replica (one Kubernetes pod running one vLLM API
// server).
type PodConfig struct {
	// Name of the pod; empty means "vllm-<index>".
	Name string
	// Weight is the routing weight of the pod (its share of requests is
	// Weight divided by the sum of weights); zero means 1. A phase's
	// Weights override it.
	Weight float64
	// Version overrides Config.Version when non-zero.
	Version Version
	// Engine overrides Config.Engine when non-nil.
	Engine *EngineConfig
	// DataParallel is the number of engine cores in the pod (label
	// engine="0", "1", ...); zero means 1. VersionV0 supports only 1.
	// Requests are spread over the engines round-robin.
	DataParallel int
	// EngineSkews bias the router among the pod's engines (see EngineSkew).
	EngineSkews []EngineSkew
	// Restarts lists the process restarts of the pod.
	Restarts []Restart
	// Slowdowns lists periods in which the pod suffers extra per-step
	// costs (e.g. CPU contention), in addition to Workload.Slowdowns.
	Slowdowns []Slowdown
	// ServerErrors lists periods in which the pod's API server fails
	// requests with HTTP 5xx.
	ServerErrors []ServerErrors
	// Stalls lists periods in which the pod's scheduler runs no step.
	Stalls []Stall
	// Freezes holds at most one mass abort after which the pod's
	// scheduler gauges stop updating.
	Freezes []Freeze
	// Deferrals lists periods in which the pod's scheduler defers every
	// arriving request.
	Deferrals []Deferral
	// Sleeps lists periods in which the pod's engines sleep (see Sleep).
	Sleeps []Sleep
	// Role is the pod's role in prefill/decode disaggregation: ""
	// (aggregated, the default), RolePrefill or RoleDecode. When any pod
	// has a role, every pod must have one, with at least one of each:
	// every request is prefilled on a prefill pod, its KV sent over
	// Config.KVLink, and decoded on a decode pod (see KVLink). Roles need
	// VersionV1, whose pods then export the NIXL connector's families.
	Role string
}

// AbandonAccounting is how a vLLM version accounts for a request whose
// client gave up.
type AbandonAccounting int

const (
	// AbandonCounted counts the request as finished_reason="abort" in
	// vllm:request_success_total (V0 and early V1).
	AbandonCounted AbandonAccounting = iota
	// AbandonUncounted is current vLLM V1's accounting (vLLM issues
	// #31503 and #55634): the abandoned request leaves no abort count and
	// no per-request histogram observation (E2E, queue, prefill, decode,
	// prompt and generation tokens); only what was observed while it ran
	// remains: its prompt tokens in vllm:prompt_tokens_total if its
	// prefill finished, its first token in TTFT if one was produced, its
	// output tokens in vllm:generation_tokens_total and its steps in ITL.
	AbandonUncounted
)

// ServerErrors makes the API server of a pod answer a share of the
// requests that arrive from From to To (offsets) with HTTP 500 before they
// reach the engine (a failing engine call): they count in
// http_requests_total{status="5xx"} and in no vLLM metric. Which requests
// fail is a function of their id, so the trace is unchanged.
type ServerErrors struct {
	From, To time.Duration
	// Share is the fraction (0..1) of the pod's requests that fail.
	Share float64
}

// Restart stops a pod's process at offset At and starts a new one after
// Downtime (zero means 30 s). Requests in flight at At are lost; counters
// restart from zero; requests that arrive while the pod is down are routed
// to the other pods; the pod is not scraped while down.
type Restart struct {
	At       time.Duration
	Downtime time.Duration
	// Reason is why the container stopped, as kube-state-metrics would
	// report it; "" is a planned restart. RestartOOMKilled makes the GPU
	// framebuffer use (DCGM_FI_DEV_FB_USED) climb above the pod's steady
	// level over the OOMRamp before At, as a leak does before the kill.
	Reason string
	// Drain makes the stop graceful, as Kubernetes stops a pod: from At
	// the pod gets no new request (its endpoint is removed) and its
	// process serves the requests it holds for Drain more, scraped as
	// usual, before it stops; only those still unfinished then are lost.
	// Zero stops the process at At. Drain must be shorter than Downtime.
	Drain time.Duration
	// Instance is the pod's address (label instance) from the restart on:
	// a StatefulSet pod restarted keeps its name and gets a new IP. Empty
	// keeps the address.
	Instance string
	// Name is the pod's name from the restart on: a Deployment's rollout
	// replaces the pod by one with a new name (and address). Empty keeps
	// the name.
	Name string
}

// RestartOOMKilled is the Restart.Reason of a container killed for lack
// of memory.
const RestartOOMKilled = "OOMKilled"

// OOMRamp is how long the framebuffer use of a pod climbs before an
// OOMKilled restart.
const OOMRamp = 2 * time.Minute

// Slowdown adds CPU-side work to every engine step from From to To (offsets
// from the start): the GPU idles while the CPU works. It models a
// bottleneck outside the GPU, such as a starved API server, detokenizer or
// scheduler.
type Slowdown struct {
	From, To time.Duration
	// CPUPerStep is added to every engine step.
	CPUPerStep time.Duration
	// CPUPerSeq is added per scheduled sequence in a step.
	CPUPerSeq time.Duration
}

// EngineConfig holds the settings of one vLLM engine core and the cost model
// of the GPU it runs on. Zero fields take the defaults shown in
// DefaultEngine.
type EngineConfig struct {
	// MaxNumSeqs is the largest number of running sequences (--max-num-seqs).
	MaxNumSeqs int
	// MaxNumBatchedTokens is the token budget of one step
	// (--max-num-batched-tokens).
	MaxNumBatchedTokens int
	// MaxModelLen is the context limit (--max-model-len); it also fixes
	// the token-count histogram buckets.
	MaxModelLen int
	// BlockSize is the KV block size in tokens (--block-size).
	BlockSize int
	// NumGPUBlocks is the number of KV blocks. Zero derives it from
	// GPUMemoryUtilization and Memory.
	NumGPUBlocks int
	// GPUMemoryUtilization is --gpu-memory-utilization (0..1).
	GPUMemoryUtilization float64
	// DisablePrefixCaching turns automatic prefix caching off
	// (--no-enable-prefix-caching).
	DisablePrefixCaching bool
	// DisableChunkedPrefill turns chunked prefill off: a prompt is then
	// admitted only if it fits whole in the step's remaining budget.
	DisableChunkedPrefill bool
	// Memory is used to derive NumGPUBlocks when it is zero.
	Memory MemoryModel
	// Cost is the step-time model.
	Cost CostModel
	// SpecTokens is num_speculative_tokens: each decode step drafts this
	// many tokens per sequence and the target model accepts a prefix of
	// them (see Phase.SpecAccept); zero turns speculative decoding off.
	// Drafting and verifying cost SpecCost decode-steps' worth per
	// drafted token and sequence.
	SpecTokens int
	// MaxNumQueuedReqs is vLLM's --max-num-queued-reqs (PR 49445): the
	// API server refuses a request with HTTP 503, before it reaches the
	// engine, when the requests it has not finished (waiting, deferred
	// and running alike: "in flight", not only queued) are already this
	// many, and counts it in vllm:admission_rejections_total (PR 55812).
	// The refused request counts in no other vLLM metric. Zero means no
	// limit. vLLM counts the limit across a pod's data-parallel engines
	// (PR 55124), which the simulator runs apart: it needs DataParallel 1
	// and VersionV1.
	MaxNumQueuedReqs int
	// MaxNumQueuedTokens is vLLM's --max-num-queued-tokens (PR 49445):
	// the API server refuses a request with HTTP 503 when the prompt
	// tokens of its unfinished requests still in prefill (no output
	// token yet, counted whole, cached prefix included) reach it; the
	// request limit is checked first. Zero means no limit; it needs
	// what MaxNumQueuedReqs needs.
	MaxNumQueuedTokens int
}

// SpecCost is the cost of drafting and verifying one draft token of one
// sequence, as a share of the per-sequence decode cost.
const SpecCost = 0.15

// MemoryModel derives the number of KV blocks from the GPU memory budget:
// blocks = (GPUMemoryUtilization*GPUBytes - WeightBytes - ActivationBytes) /
// (KVBytesPerToken*BlockSize).
type MemoryModel struct {
	GPUBytes        float64
	WeightBytes     float64
	ActivationBytes float64
	KVBytesPerToken float64
}

// CostModel gives the duration of one engine step:
//
//	GPU time = StepOverhead + PrefillPerToken*prefill tokens
//	         + DecodePerSeq*decoding sequences
//	         + AttentionPerKToken*(context tokens of all scheduled sequences)/1000
//	CPU time = CPUPerStep + CPUPerSeq*scheduled sequences (+ active Slowdowns)
//	step     = (GPU time)*(1 ± Jitter) + CPU time
//
// The GPU is busy only during GPU time, which is what the DCGM utilisation
// reports.
type CostModel struct {
	StepOverhead       time.Duration
	PrefillPerToken    time.Duration
	DecodePerSeq       time.Duration
	AttentionPerKToken time.Duration
	CPUPerStep         time.Duration
	CPUPerSeq          time.Duration
	// Jitter is the relative half-width of the uniform noise applied to
	// GPU time; zero means 0.03, a negative value means none.
	Jitter float64
	// FrontendPerRequest and FrontendPerPromptToken model the API server
	// (tokenisation, routing) before a request reaches the engine; they
	// count in TTFT and E2E but not in queue time.
	FrontendPerRequest     time.Duration
	FrontendPerPromptToken time.Duration
}

// DefaultEngine is the engine used when Config.Engine is zero: an 8B model
// on one 48 GB GPU.
var DefaultEngine = EngineConfig{
	MaxNumSeqs:           128,
	MaxNumBatchedTokens:  4096,
	MaxModelLen:          16384,
	BlockSize:            16,
	GPUMemoryUtilization: 0.9,
	Memory: MemoryModel{
		GPUBytes:        48e9,
		WeightBytes:     16.1e9,
		ActivationBytes: 4e9,
		KVBytesPerToken: 131072,
	},
	Cost: CostModel{
		StepOverhead:           8 * time.Millisecond,
		PrefillPerToken:        60 * time.Microsecond,
		DecodePerSeq:           120 * time.Microsecond,
		AttentionPerKToken:     60 * time.Microsecond,
		CPUPerStep:             500 * time.Microsecond,
		CPUPerSeq:              10 * time.Microsecond,
		Jitter:                 0.03,
		FrontendPerRequest:     4 * time.Millisecond,
		FrontendPerPromptToken: 2 * time.Microsecond,
	},
}

// Workload describes the requests the fleet receives.
type Workload struct {
	// Phases are periods with their own arrival rate and request shape,
	// sorted by Start; the first one should start at 0. When empty,
	// DefaultPhase is used for the whole run.
	Phases []Phase
	// Bursts add short periods of extra arrivals.
	Bursts []Burst
	// ClientTimeout makes clients give up on a request that has not
	// been scheduled after this long (vLLM counts it as
	// finished_reason="abort" unless Abandon says otherwise); zero means
	// clients wait forever.
	ClientTimeout time.Duration
	// ClientDeadline makes clients give up on a request that has not
	// finished this long after it arrived, whether it still waits or is
	// already streaming (a client that reads a little and closes); zero
	// means none. Under overload it abandons requests both in the queue
	// and after their first tokens.
	ClientDeadline time.Duration
	// Abandon is how vLLM accounts for a request whose client gave up
	// (ClientTimeout, ClientDeadline); zero means AbandonCounted.
	Abandon AbandonAccounting
	// Slowdowns apply to every pod (see PodConfig.Slowdowns).
	Slowdowns []Slowdown
}

// Phase is a period of the workload that lasts until the next phase starts.
type Phase struct {
	// Start is the offset from the beginning of the run.
	Start time.Duration
	// Rate is the mean arrival rate of the whole fleet, in requests per
	// second (Poisson arrivals).
	Rate float64
	// RampTo, when positive, makes the phase a linear ramp: the arrival
	// rate moves in a straight line from Rate at Start to RampTo at the
	// phase's end (the next phase's Start, or the end of the run), a
	// non-homogeneous Poisson process. Zero keeps Rate constant.
	RampTo float64
	// Prompt and Output are the distributions of prompt and output
	// lengths in tokens. Output is the length the model would produce
	// before stopping; it is cut at MaxTokens.
	Prompt, Output Dist
	// MaxTokens is the max_tokens parameter of every request; zero means
	// 2048. Outputs cut at it finish with reason "length".
	MaxTokens int
	// PrefixShare is the fraction of requests that start with one of
	// PrefixGroups shared prefixes of PrefixLen tokens (system prompts,
	// few-shot examples, documents). Prefix k (from 0) is chosen with
	// probability proportional to (1+k)^-PrefixSkew (Zipf); PrefixSkew
	// zero means 1.2, a value <= 1 means uniform. The same k and PrefixLen
	// in two phases is the same prefix.
	PrefixShare  float64
	PrefixGroups int
	PrefixLen    int
	PrefixSkew   float64
	// PrefixUnique is the fraction of the prefixed requests whose
	// PrefixLen-token prefix is their own (a template that embeds a
	// per-request value at its top): same lengths, nothing to reuse. Zero
	// means none (and draws nothing from the trace generator).
	PrefixUnique float64
	// Weights, when non-nil, replaces the pods' routing weights during
	// the phase (one entry per pod).
	Weights []float64
	// SpecAccept is the probability that the target model accepts each
	// draft token of this phase's requests given the previous one was
	// accepted (how well the drafter predicts this traffic); used only
	// with EngineConfig.SpecTokens.
	SpecAccept float64
}

// Burst adds Poisson arrivals at Rate requests per second (fleet-wide) from
// At for Length, with the request shape of the phase in force.
type Burst struct {
	At, Length time.Duration
	Rate       float64
}

// Dist is a distribution of token counts: a log-normal body with the given
// median and shape, mixed with an optional log-normal tail drawn with
// probability TailWeight, clamped to [Min, Max]. Sigma 0 gives the median
// exactly.
type Dist struct {
	Median, Sigma         float64
	TailWeight            float64
	TailMedian, TailSigma float64
	// Min and Max clamp draws; zero means 1 and no upper clamp (other
	// than the model's context limit).
	Min, Max int
}

// DefaultPhase is the workload of a run without phases: a chat-like mix
// at 32 requests per second over the fleet.
var DefaultPhase = Phase{
	Rate:         32,
	Prompt:       Dist{Median: 600, Sigma: 0.7, Min: 16},
	Output:       Dist{Median: 160, Sigma: 0.8, Min: 1},
	MaxTokens:    1024,
	PrefixShare:  0.6,
	PrefixGroups: 12,
	PrefixLen:    384,
}

// Version is a generation of vLLM's /metrics exposition.
type Version int

const (
	// VersionV1 exposes what vLLM ≈0.11 (V1 engine) exposes: labels
	// model_name and engine, _created gauge families,
	// vllm:kv_cache_usage_perc, vllm:prefix_cache_*,
	// vllm:inter_token_latency_seconds,
	// vllm:request_time_per_output_token_seconds, the deprecated
	// vllm:time_per_output_token_seconds, extended buckets (TTFT_EXT,
	// TPOT_EXT, REQ_EXT), ITER_FIXED iteration buckets and HTTP metrics.
	VersionV1 Version = iota + 1
	// VersionV1Early exposes what vLLM ≈0.8.4–0.9.1 (V1 engine) exposes:
	// vllm:gpu_cache_usage_perc, vllm:gpu_prefix_cache_*,
	// vllm:time_per_output_token_seconds (per-step ITL) and no per-request
	// TPOT, extended buckets, ITER_OLD iteration buckets.
	VersionV1Early
	// VersionV0 exposes what the V0 engine of vLLM ≈0.6.4–0.7 exposes in
	// its default multiprocess mode: label model_name only, no _created,
	// no process/python/HTTP families, short buckets (TTFT_V0, TPOT_V0,
	// REQ_V0), histogram samples written _sum first, and V0-only gauges
	// (num_requests_swapped, cpu_cache_usage_perc, prefix hit-rate
	// gauges, average throughput gauges).
	VersionV0
)

var versionNames = [...]string{VersionV1: "0.11", VersionV1Early: "0.9", VersionV0: "0.6-v0"}

// String returns the vLLM release the version mimics, e.g. "0.11".
func (v Version) String() string { return enumString(v, "Version", versionNames[:]) }

// GPUExporter selects the generation of the NVIDIA DCGM exporter.
type GPUExporter int

const (
	// NoGPUExporter: no DCGM scrape.
	NoGPUExporter GPUExporter = iota
	// DCGMPercent is dcgm-exporter ≤ 4.8: DCGM_FI_DEV_GPU_UTIL in
	// percent (0-100), memory in MiB, label Hostname.
	DCGMPercent
	// DCGMRatio is dcgm-exporter ≥ 4.9: utilisation as a 0..1 ratio,
	// memory in bytes, label hostname.
	DCGMRatio
)

// withDefaults returns a copy of c with every zero field replaced by its
// default, pods expanded and engines resolved, or an error naming the first
// invalid field.
func (c Config) withDefaults() (Config, error) {
	if c.TraceSeed == 0 {
		c.TraceSeed = c.Seed
	}
	if c.Start.IsZero() {
		c.Start = DefaultStart
	}
	if c.Duration == 0 {
		c.Duration = time.Hour
	}
	if c.ScrapeInterval == 0 {
		c.ScrapeInterval = 15 * time.Second
	}
	if c.ScrapeSkew == 0 {
		c.ScrapeSkew = 2 * time.Second
	}
	if c.ModelName == "" {
		c.ModelName = "meta-llama/Llama-3.1-8B-Instruct"
	}
	if c.Namespace == "" {
		c.Namespace = "llm"
	}
	if c.Version == 0 {
		c.Version = VersionV1
	}
	c.Engine = c.Engine.withDefaults()
	if c.Duration < 0 || c.ScrapeInterval < time.Second {
		return c, fmt.Errorf("fleetsim: Duration %v and ScrapeInterval %v must be positive (interval >= 1s)", c.Duration, c.ScrapeInterval)
	}
	if c.ScrapeSkew >= c.ScrapeInterval {
		return c, fmt.Errorf("fleetsim: ScrapeSkew %v must be shorter than ScrapeInterval %v", c.ScrapeSkew, c.ScrapeInterval)
	}
	if len(c.Pods) == 0 {
		n := c.NumPods
		if n == 0 {
			n = 8
		}
		c.Pods = make([]PodConfig, n)
	} else {
		c.Pods = append([]PodConfig(nil), c.Pods...)
	}
	names := map[string]bool{}
	for i := range c.Pods {
		p := &c.Pods[i]
		if p.Name == "" {
			p.Name = fmt.Sprintf("vllm-%d", i)
		}
		if names[p.Name] {
			return c, fmt.Errorf("fleetsim: duplicate pod name %q", p.Name)
		}
		names[p.Name] = true
		if p.Weight == 0 {
			p.Weight = 1
		}
		if p.Weight < 0 {
			return c, fmt.Errorf("fleetsim: pod %s: negative weight", p.Name)
		}
		if p.Version == 0 {
			p.Version = c.Version
		}
		if p.DataParallel == 0 {
			p.DataParallel = 1
		}
		if p.Version == VersionV0 && p.DataParallel != 1 {
			return c, fmt.Errorf("fleetsim: pod %s: VersionV0 has no data-parallel engines", p.Name)
		}
		if err := p.checkEngineSkews(); err != nil {
			return c, err
		}
		e := c.Engine
		if p.Engine != nil {
			e = p.Engine.withDefaults()
		}
		if err := e.validate(); err != nil {
			return c, fmt.Errorf("fleetsim: pod %s: %w", p.Name, err)
		}
		if e.admissionLimited() && (p.DataParallel != 1 || p.Version != VersionV1) {
			// vLLM counts the limits over the API server's engines
			// (PR 55124) and has them from 0.31 on (V1 only).
			return c, fmt.Errorf("fleetsim: pod %s: MaxNumQueuedReqs and MaxNumQueuedTokens need DataParallel 1 and VersionV1", p.Name)
		}
		p.Engine = &e
		p.Restarts = append([]Restart(nil), p.Restarts...)
		for j := range p.Restarts {
			if p.Restarts[j].Downtime == 0 {
				p.Restarts[j].Downtime = 30 * time.Second
			}
			if r := p.Restarts[j]; r.Drain < 0 || r.Drain >= r.Downtime {
				return c, fmt.Errorf("fleetsim: pod %s: restart at %v: drain %v must be in [0, downtime %v)", p.Name, r.At, r.Drain, r.Downtime)
			}
		}
	}
	if err := c.checkRoles(); err != nil {
		return c, err
	}
	if len(c.Workload.Phases) == 0 {
		c.Workload.Phases = []Phase{DefaultPhase}
	}
	c.Workload.Phases = append([]Phase(nil), c.Workload.Phases...)
	for i := range c.Workload.Phases {
		ph := &c.Workload.Phases[i]
		if ph.MaxTokens == 0 {
			ph.MaxTokens = 2048
		}
		if i > 0 && ph.Start < c.Workload.Phases[i-1].Start {
			return c, fmt.Errorf("fleetsim: phase %d starts before phase %d", i, i-1)
		}
		if ph.Weights != nil && len(ph.Weights) != len(c.Pods) {
			return c, fmt.Errorf("fleetsim: phase %d has %d weights for %d pods", i, len(ph.Weights), len(c.Pods))
		}
		if ph.Rate < 0 || math.IsNaN(ph.Rate) || ph.RampTo < 0 || math.IsNaN(ph.RampTo) {
			return c, fmt.Errorf("fleetsim: phase %d: invalid rate %v (ramp to %v)", i, ph.Rate, ph.RampTo)
		}
	}
	return c, nil
}

// checkRoles validates the pods' roles and fills KVLink's defaults when
// the fleet is disaggregated.
func (c *Config) checkRoles() error {
	if !c.disaggregated() {
		return nil
	}
	n := map[string]int{}
	for _, p := range c.Pods {
		switch p.Role {
		case RolePrefill, RoleDecode:
		default:
			return fmt.Errorf("fleetsim: pod %s: role %q: with roles every pod is %q or %q", p.Name, p.Role, RolePrefill, RoleDecode)
		}
		if p.Version != VersionV1 {
			return fmt.Errorf("fleetsim: pod %s: roles need VersionV1 (the NIXL connector's metrics)", p.Name)
		}
		n[p.Role]++
	}
	if n[RolePrefill] == 0 || n[RoleDecode] == 0 {
		return errors.New("fleetsim: a disaggregated fleet needs at least one prefill and one decode pod")
	}
	l := &c.KVLink
	if l.Bandwidth == 0 {
		l.Bandwidth = 12.5e9
	}
	if l.Latency == 0 {
		l.Latency = 2 * time.Millisecond
	}
	if l.Bandwidth < 0 || l.Latency < 0 {
		return errors.New("fleetsim: KVLink: negative bandwidth or latency")
	}
	l.Degradations = slices.Clone(l.Degradations)
	return nil
}

// withDefaults fills the zero fields of e from DefaultEngine.
func (e EngineConfig) withDefaults() EngineConfig {
	d := DefaultEngine
	if e.MaxNumSeqs == 0 {
		e.MaxNumSeqs = d.MaxNumSeqs
	}
	if e.MaxNumBatchedTokens == 0 {
		e.MaxNumBatchedTokens = d.MaxNumBatchedTokens
	}
	if e.MaxModelLen == 0 {
		e.MaxModelLen = d.MaxModelLen
	}
	if e.BlockSize == 0 {
		e.BlockSize = d.BlockSize
	}
	if e.GPUMemoryUtilization == 0 {
		e.GPUMemoryUtilization = d.GPUMemoryUtilization
	}
	if e.Memory == (MemoryModel{}) {
		e.Memory = d.Memory
	}
	c, dc := &e.Cost, d.Cost
	if c.StepOverhead == 0 {
		c.StepOverhead = dc.StepOverhead
	}
	if c.PrefillPerToken == 0 {
		c.PrefillPerToken = dc.PrefillPerToken
	}
	if c.DecodePerSeq == 0 {
		c.DecodePerSeq = dc.DecodePerSeq
	}
	if c.AttentionPerKToken == 0 {
		c.AttentionPerKToken = dc.AttentionPerKToken
	}
	if c.CPUPerStep == 0 {
		c.CPUPerStep = dc.CPUPerStep
	}
	if c.CPUPerSeq == 0 {
		c.CPUPerSeq = dc.CPUPerSeq
	}
	if c.Jitter == 0 {
		c.Jitter = dc.Jitter
	}
	if c.FrontendPerRequest == 0 {
		c.FrontendPerRequest = dc.FrontendPerRequest
	}
	if c.FrontendPerPromptToken == 0 {
		c.FrontendPerPromptToken = dc.FrontendPerPromptToken
	}
	if e.NumGPUBlocks == 0 {
		e.NumGPUBlocks = e.derivedBlocks()
	}
	return e
}

// derivedBlocks applies the MemoryModel.
func (e EngineConfig) derivedBlocks() int {
	m := e.Memory
	free := e.GPUMemoryUtilization*m.GPUBytes - m.WeightBytes - m.ActivationBytes
	if free <= 0 || m.KVBytesPerToken <= 0 {
		return 0
	}
	return int(free / (m.KVBytesPerToken * float64(e.BlockSize)))
}

// WithGPUMemoryUtilization returns e with --gpu-memory-utilization set to u
// and NumGPUBlocks derived again from the memory model, as vLLM does at
// start-up. It is the one-variable change an experiment on
// gpu_memory_utilization makes.
func (e EngineConfig) WithGPUMemoryUtilization(u float64) EngineConfig {
	e = e.withDefaults()
	e.GPUMemoryUtilization = u
	e.NumGPUBlocks = e.derivedBlocks()
	return e
}

func (e EngineConfig) validate() error {
	switch {
	case e.NumGPUBlocks <= 0:
		return errors.New("no KV blocks: NumGPUBlocks <= 0 (GPU memory budget too small)")
	case e.MaxNumSeqs <= 0 || e.MaxNumBatchedTokens <= 0 || e.BlockSize <= 0 || e.MaxModelLen <= 0:
		return errors.New("MaxNumSeqs, MaxNumBatchedTokens, BlockSize and MaxModelLen must be positive")
	case e.DisableChunkedPrefill && e.MaxNumBatchedTokens < e.MaxModelLen:
		return fmt.Errorf("without chunked prefill MaxNumBatchedTokens (%d) must be >= MaxModelLen (%d)", e.MaxNumBatchedTokens, e.MaxModelLen)
	case e.MaxNumQueuedReqs < 0 || e.MaxNumQueuedTokens < 0:
		return errors.New("MaxNumQueuedReqs and MaxNumQueuedTokens must not be negative")
	case e.NumGPUBlocks*e.BlockSize < e.MaxModelLen:
		return fmt.Errorf("%d KV blocks of %d tokens cannot hold one request of MaxModelLen %d", e.NumGPUBlocks, e.BlockSize, e.MaxModelLen)
	}
	return nil
}

// admissionLimited reports whether the API server refuses requests at
// admission (MaxNumQueuedReqs or MaxNumQueuedTokens set).
func (e EngineConfig) admissionLimited() bool {
	return e.MaxNumQueuedReqs > 0 || e.MaxNumQueuedTokens > 0
}
