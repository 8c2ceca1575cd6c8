package fleetsim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"time"
)

// The generalisation matrix: every incident hypothesis and
// counter-case built at any fleet size, seed and severity, from the
// physics (arrival rates, request shapes, prefixes, routing, KV capacity,
// CPU overhead), never by writing metric values. The named [Scenarios]
// are textbook cases on 8 pods; the matrix cases are deliberately
// moderate and different in shape (see each [MatrixCase]'s Description),
// so that reasoning calibrated on the scenarios is tried on fleets it has
// not seen.
//
// A matrix run lasts [MatrixDuration] with 15 s scrapes; the first half
// is the baseline and the incident starts at [MatrixIncidentStart]. The
// arrival rate scales with the fleet: every pod sees the same load at
// every size.

const (
	// MatrixDuration is the length of a matrix run: 40 minutes rather
	// than the scenarios' 60, because rendering and parsing the dumps is
	// most of the matrix's cost. Each half still holds 80 scrapes per pod
	// and 20 minutes of requests (about 5,000 per pod at the base load),
	// far above the diagnosis' minimum window and counts.
	MatrixDuration = 40 * time.Minute
	// MatrixIncidentStart is when a matrix incident begins.
	MatrixIncidentStart = 20 * time.Minute
)

// Symptom is the ground-truth measure of a matrix case: the fleet p95 of
// one per-request latency, taken from Fleet.Requests.
type Symptom string

const (
	// SymptomTTFT is time to first token (arrival to first token).
	SymptomTTFT Symptom = "ttft"
	// SymptomTPOT is per-request time per output token: (finish - first
	// token) / (output tokens - 1).
	SymptomTPOT Symptom = "tpot"
	// SymptomE2E is end-to-end latency (arrival to finish).
	SymptomE2E Symptom = "e2e"
)

// MatrixCase is one row of the generalisation matrix: an incident
// hypothesis with a severity knob, or a counter-case (no knob) that must
// read as no incident.
type MatrixCase struct {
	// Name is the hypothesis id for incidents (e.g. "queue-burst"), a
	// descriptive name for counter-cases (e.g. "kv-high-healthy").
	Name string
	// Expect is the verdict the case must produce: the hypothesis id, or
	// "no-incident".
	Expect string
	// Symptom is the primary symptom whose p95 change grades severity.
	Symptom Symptom
	// Knob names the one physics setting the severity table varies; empty
	// for counter-cases.
	Knob string
	// KnobMin and KnobMax bound the knob's meaningful range (the ground
	// truth grows with the knob on it).
	KnobMin, KnobMax float64
	// Description says what the fleet does.
	Description string
	// TSDB makes the matrix read the case from a Prometheus TSDB written
	// by simtsdb.Write (series with their target labels, instance
	// included) instead of from /metrics dumps.
	TSDB bool
	// GradedByTruth marks a case whose ground truth is chaotic in the
	// knob (a queue that forms only once a ramp passes capacity: seeds of
	// one knob land 1.4x and 2x apart): its knob table aims at the
	// severity, but each cell is graded by its own ground truth
	// (Severity of its Change), and TestSeverityTable only checks that
	// the table's knobs make an incident (+20% or more).
	GradedByTruth bool

	build func(pods int, seed uint64, knob float64, sp span) Config
}

// Incident reports whether the case is an incident (it has a knob).
func (c MatrixCase) Incident() bool { return c.Knob != "" }

// Config returns the fleet of the case with the given number of pods,
// seed and knob value (ignored by counter-cases).
func (c MatrixCase) Config(pods int, seed uint64, knob float64) Config {
	return c.VariantConfig(pods, seed, knob, Variant{})
}

// Variant changes how a matrix fleet is observed and when its incident
// happens; its zero value is the matrix' own (15 s scrapes, the incident
// from MatrixIncidentStart to the end of the run).
type Variant struct {
	// ScrapeInterval is the pods' scrape interval; zero means 15 s.
	ScrapeInterval time.Duration
	// Start is when the incident begins; zero means MatrixIncidentStart.
	Start time.Duration
	// Length is how long the incident lasts; zero means to the end of
	// the run. After it the workload and the engines are as before.
	Length time.Duration
	// Version is the vLLM generation of the pods that do not set their
	// own; zero keeps the case's.
	Version Version
}

// Span returns when the variant's incident begins and ends.
func (v Variant) Span() (start, end time.Duration) {
	start, end = MatrixIncidentStart, MatrixDuration
	if v.Start > 0 {
		start = v.Start
	}
	if v.Length > 0 {
		end = min(start+v.Length, MatrixDuration)
	}
	return start, end
}

// VariantConfig is Config observed and timed as v says.
func (c MatrixCase) VariantConfig(pods int, seed uint64, knob float64, v Variant) Config {
	start, end := v.Span()
	cfg := c.build(pods, seed, knob, span{start, end})
	cfg.Seed = seed
	cfg.Duration = MatrixDuration
	cfg.GPUExporter = DCGMPercent
	cfg.ScrapeInterval = v.ScrapeInterval
	if v.Version != 0 {
		cfg.Version = v.Version
	}
	return cfg
}

// span is when a matrix incident happens: [start, end).
type span struct{ start, end time.Duration }

// endOr is the span's end, or past when it runs to the end of the run.
func (sp span) endOr(past time.Duration) time.Duration {
	if sp.end < MatrixDuration {
		return sp.end
	}
	return past
}

// phases is base until the span, base changed by incident during it, and
// base again after it when it ends before the run does.
func (sp span) phases(base Phase, incident func(*Phase)) Workload {
	inc := base
	inc.Start = sp.start
	incident(&inc)
	w := Workload{Phases: []Phase{base, inc}}
	if sp.end < MatrixDuration {
		after := base
		after.Start = sp.end
		w.Phases = append(w.Phases, after)
	}
	return w
}

// Per-pod base loads, in requests per second per pod. A default pod
// serves about 9.5 requests/s of the default chat mix.
const (
	matrixPodRate     = 4.0 // ~42% of capacity, as the scenarios
	matrixPodRateHot  = 5.5 // ~58%: replicas at 2x their share then near saturation
	matrixPodRateBusy = 5.7 // ~60%: +60% arrivals then saturate the fleet
	// matrixPodRateThrash (~34%) leaves room for the long prompts'
	// prefills: their thrash, not a queue of everyone, is the incident.
	matrixPodRateThrash = 3.2
)

// matrixPhase is the default chat mix at perPod requests/s on every pod.
func matrixPhase(pods int, perPod float64) Phase {
	p := DefaultPhase
	p.Rate = perPod * float64(pods)
	return p
}

// caseRNG returns a generator for the case's seeded choices (which pod is
// hot, when a burst or a restart happens), independent of the trace.
func caseRNG(name string, seed uint64) *rand.Rand {
	var h uint64 = 1469598103934665603
	for i := 0; i < len(name); i++ {
		h = (h ^ uint64(name[i])) * 1099511628211
	}
	return rand.New(rand.NewPCG(seed, h))
}

func matrixCases() []MatrixCase {
	return []MatrixCase{
		{
			Name: "queue-sustained", Expect: "queue-sustained", Symptom: SymptomTTFT,
			Knob: "incident arrival rate / baseline rate", KnobMin: 1, KnobMax: 2.5,
			Description: "arrivals rise by the knob from a baseline at ~60% of capacity (a 60% rise is moderate, not a 3x storm)",
			build: func(pods int, seed uint64, k float64, sp span) Config {
				return Config{NumPods: pods, Workload: sp.phases(matrixPhase(pods, matrixPodRateBusy), func(p *Phase) {
					p.Rate *= k
				})}
			},
		},
		{
			Name: "queue-ramp", Expect: "queue-sustained", Symptom: SymptomTTFT,
			Knob: "arrival rate at the end of the ramp / baseline rate", KnobMin: 1, KnobMax: 2.5,
			Description:   "arrivals rise linearly over the incident from a baseline at ~60% of capacity to the knob times it (1.75 is the field's 40 -> 70 req/s): the queue builds only once the rate passes capacity, late in the ramp",
			GradedByTruth: true,
			build: func(pods int, seed uint64, k float64, sp span) Config {
				return Config{NumPods: pods, Workload: sp.phases(matrixPhase(pods, matrixPodRateBusy), func(p *Phase) {
					p.RampTo = k * p.Rate
				})}
			},
		},
		{
			Name: "queue-burst", Expect: "queue-burst", Symptom: SymptomTTFT,
			Knob: "burst rate / baseline rate (one 10 s burst a minute)", KnobMin: 0, KnobMax: 20,
			Description: "one 10 s burst every minute at a seeded offset; at knob 4 each burst carries half of its minute's arrivals; the mean rate stays inside capacity",
			build: func(pods int, seed uint64, k float64, sp span) Config {
				base := matrixPhase(pods, matrixPodRate)
				rng := caseRNG("queue-burst", seed)
				var bursts []Burst
				for m := sp.start; m+time.Minute <= sp.end; m += time.Minute {
					off := time.Duration(rng.IntN(46)) * time.Second
					bursts = append(bursts, Burst{At: m + off, Length: 10 * time.Second, Rate: k * base.Rate})
				}
				return Config{NumPods: pods, Workload: Workload{Phases: []Phase{base}, Bursts: bursts}}
			},
		},
		{
			Name: "prefill-long-prompts", Expect: "prefill-long-prompts", Symptom: SymptomTTFT,
			Knob: "share of ~4.5k-token document prompts", KnobMin: 0, KnobMax: 0.4,
			Description: "a share of prompts (the knob) become ~4.5k-token documents (sigma 0.35): prompt p50 flat, upper quantiles and prefill time up",
			build: func(pods int, seed uint64, k float64, sp span) Config {
				return Config{NumPods: pods, Workload: sp.phases(matrixPhase(pods, matrixPodRate), func(p *Phase) {
					p.Prompt.TailWeight, p.Prompt.TailMedian, p.Prompt.TailSigma = k, 4500, 0.35
				})}
			},
		},
		{
			Name: "prefix-cache-loss", Expect: "prefix-cache-loss", Symptom: SymptomTTFT,
			Knob: "share of shared-prefix requests whose prefix becomes unique", KnobMin: 0, KnobMax: 1,
			Description: "85% of requests share 8 system prompts of 1,280 tokens; a template change makes the knob's share of them per-request (unique), prompt lengths unchanged",
			build: func(pods int, seed uint64, k float64, sp span) Config {
				base := matrixPhase(pods, matrixPodRate)
				base.PrefixShare, base.PrefixGroups, base.PrefixLen = 0.9, 8, 2048
				return Config{NumPods: pods, Workload: sp.phases(base, func(p *Phase) {
					p.PrefixUnique = k
				})}
			},
		},
		{
			Name: "decode-pressure", Expect: "decode-pressure", Symptom: SymptomTPOT,
			Knob: "output length multiplier", KnobMin: 1, KnobMax: 8,
			Description: "answers become longer by the knob (median 160 tokens times the knob, max_tokens 2048) on 80 GB GPUs, whose KV pool holds the longer answers: running sequences and TPOT rise together, little queue and no preemption storm (case C, not case D)",
			build: func(pods int, seed uint64, k float64, sp span) Config {
				base := matrixPhase(pods, matrixPodRate)
				base.MaxTokens = 2048
				// On the default 48 GB GPU the severe answers fill the
				// KV pool: preemptions and a queue follow (case D, the
				// kv-preemption cases' physics), not decode pressure.
				eng := DefaultEngine
				eng.Memory.GPUBytes = 80e9
				return Config{NumPods: pods, Engine: eng, Workload: sp.phases(base, func(p *Phase) {
					p.Output.Median *= k
				})}
			},
		},
		{
			Name: "kv-preemption", Expect: "kv-preemption", Symptom: SymptomE2E,
			Knob: "prompt length multiplier", KnobMin: 1, KnobMax: 4,
			Description: "small KV cache (gpu_memory_utilization 0.58); prompts and outputs grow by the knob: KV usage saturates and sequences are preempted by recompute",
			build: func(pods int, seed uint64, k float64, sp span) Config {
				return Config{NumPods: pods, Engine: DefaultEngine.WithGPUMemoryUtilization(0.58),
					Workload: sp.phases(matrixPhase(pods, matrixPodRate), func(p *Phase) {
						p.Prompt.Median *= k
					})}
			},
		},
		{
			Name: "outside-gpu", Expect: "outside-gpu", Symptom: SymptomTTFT,
			Knob: "CPU milliseconds added per engine step (plus 6% of it per scheduled sequence)", KnobMin: 0, KnobMax: 40,
			Description: "the API server / scheduler CPU is starved from the incident on: every step costs the knob in ms plus 0.06x per sequence of CPU time while the GPU idles",
			build: func(pods int, seed uint64, k float64, sp span) Config {
				c := Config{NumPods: pods, Workload: Workload{Phases: []Phase{matrixPhase(pods, matrixPodRate)}}}
				step := time.Duration(k * float64(time.Millisecond))
				c.Workload.Slowdowns = []Slowdown{{From: sp.start, To: sp.endOr(2 * MatrixDuration), CPUPerStep: step, CPUPerSeq: step * 6 / 100}}
				return c
			},
		},
		{
			Name: "replica-hotspot", Expect: "replica-hotspot", Symptom: SymptomTTFT,
			Knob: "routing weight of the hot replicas (others 1)", KnobMin: 1, KnobMax: 4,
			Description: "routing (an affinity misconfiguration) sends the knob times their share to a seeded quarter of the replicas (1 of 3, 2 of 8, 4 of 16), from a baseline at ~58% of capacity; the fleet rate is unchanged",
			build: func(pods int, seed uint64, k float64, sp span) Config {
				hot := caseRNG("replica-hotspot", seed).Perm(pods)[:(pods+3)/4]
				return Config{NumPods: pods, Workload: sp.phases(matrixPhase(pods, matrixPodRateHot), func(p *Phase) {
					p.Weights = make([]float64, pods)
					for i := range p.Weights {
						p.Weights[i] = 1
					}
					for _, i := range hot {
						p.Weights[i] = k
					}
				})}
			},
		},
		{
			Name: "engine-stall", Expect: "engine-stall", Symptom: SymptomTTFT,
			Knob: "minutes the scheduler stands still", KnobMin: 0, KnobMax: 8,
			Description: "the scheduler of a seeded quarter of the pods (1 of 3, 2 of 8, 4 of 16) stops at the incident start for the knob's minutes (vLLM #45388, #45414): no step runs, arrivals keep coming and wait, the batch stays as it was; then it resumes and drains its backlog (a stall of a few minutes: the p95 jumps once the stuck requests pass 5% of the fleet's)",

			build: func(pods int, seed uint64, k float64, sp span) Config {
				c := Config{Pods: make([]PodConfig, pods), Workload: Workload{Phases: []Phase{matrixPhase(pods, matrixPodRate)}}}
				to := min(sp.start+time.Duration(k*float64(time.Minute)), sp.end)
				for _, i := range caseRNG("engine-stall", seed).Perm(pods)[:(pods+3)/4] {
					c.Pods[i].Stalls = []Stall{{From: sp.start, To: to}}
				}
				return c
			},
		},
		{
			Name: "admission-deferral", Expect: "admission-deferral", Symptom: SymptomTTFT,
			Knob: "seconds of every 4 minutes a transient constraint defers arrivals", KnobMin: 0, KnobMax: 150,
			Description: "on a seeded quarter of the pods a transient constraint (a KV-transfer connector, the LoRA budget; vLLM #53130) defers every arriving request for the knob's seconds of every 4 minutes, from a seeded offset: they wait as deferred (vllm:num_requests_waiting_by_reason) while the KV cache is low, then are scheduled together. Episodes longer than a scrape interval: the scrapes see them",
			build: func(pods int, seed uint64, k float64, sp span) Config {
				c := Config{Pods: make([]PodConfig, pods), Workload: Workload{Phases: []Phase{matrixPhase(pods, matrixPodRate)}}}
				rng := caseRNG("admission-deferral", seed)
				length := time.Duration(k * float64(time.Second))
				for _, i := range rng.Perm(pods)[:(pods+3)/4] {
					off := time.Duration(rng.IntN(240)) * time.Second
					for m := sp.start + off; m < sp.end; m += 4 * time.Minute {
						c.Pods[i].Deferrals = append(c.Pods[i].Deferrals, Deferral{From: m, To: min(m+length, sp.end)})
					}
				}
				return c
			},
		},
		{
			Name: "engine-imbalance", Expect: "engine-imbalance", Symptom: SymptomTTFT,
			Knob: "weight of engine 0 in the skewed pods' engine router (engine 1: 1)", KnobMin: 1, KnobMax: 12,
			Description: "every pod runs 2 data-parallel engines at ~58% of capacity; from the incident on, the router inside a seeded quarter of the pods (vLLM #48808) sends engine 0 the knob times what it sends engine 1; the pods' load is unchanged",

			build: func(pods int, seed uint64, k float64, sp span) Config {
				c := dpPods(pods, matrixPodRateHot)
				for _, i := range caseRNG("engine-imbalance", seed).Perm(pods)[:(pods+3)/4] {
					c.Pods[i].EngineSkews = []EngineSkew{{From: sp.start, To: sp.endOr(2 * MatrixDuration), Weights: []float64{k, 1}}}
				}
				return c
			},
		},
		{
			Name: "spec-decode-acceptance", Expect: "spec-decode-acceptance", Symptom: SymptomTPOT,
			Knob: "fall of the per-token draft acceptance probability from 0.8", KnobMin: 0, KnobMax: 0.8,
			Description: "speculative decoding with 4 draft tokens, each accepted with probability 0.8 given the previous one; from the incident on the traffic stops matching the drafter and the probability falls by the knob, arrivals and request shapes unchanged",
			build: func(pods int, seed uint64, k float64, sp span) Config {
				eng := DefaultEngine
				eng.SpecTokens = 4
				base := matrixPhase(pods, matrixPodRate)
				base.SpecAccept = 0.8
				return Config{NumPods: pods, Engine: eng, Workload: sp.phases(base, func(p *Phase) {
					p.SpecAccept = max(0.8-k, 0)
				})}
			},
		},
		{
			Name: "pd-kv-transfer", Expect: "pd-kv-transfer", Symptom: SymptomTTFT,
			Knob: "factor by which the KV link's bandwidth falls", KnobMin: 1, KnobMax: 200,
			Description: "prefill/decode disaggregation (llm-d, vLLM's NIXL connector): half the pods (at least one) prefill, the others decode, at the base load; from the incident on the KV link between them loses bandwidth by the knob (a congested fabric, RDMA falling back to TCP): every transfer takes longer, the decode pods' and the users' TTFT rise, the pods' compute is unchanged",
			build: func(pods int, seed uint64, k float64, sp span) Config {
				c := pdPods(pods)
				c.KVLink.Degradations = []KVLinkDegradation{{From: sp.start, To: sp.endOr(2 * MatrixDuration), Factor: k}}
				return c
			},
		},
		{
			Name: "pd-kv-transfer-failures", Expect: "pd-kv-transfer", Symptom: SymptomTTFT,
			Knob: "share of the KV transfers that fail", KnobMin: 0, KnobMax: 1,
			// A recomputed prompt costs one prefill: the TTFT p95 grows
			// by under 2x even when every read fails (3 pods: 1.3-1.6x).
			GradedByTruth: true,
			Description:   "prefill/decode disaggregation at the base load: half the pods (at least one) prefill, the others decode; from the incident on the knob's share of KV reads fail (a flapping NIC, a UCX timeout): the decode pod finds the blocks invalid when the read ends, counts vllm:nixl_num_failed_transfers and computes the whole prompt itself (vLLM's KV load failure recovery), so its first tokens wait for a second prefill while the transfers that succeed take as long as before",
			build: func(pods int, seed uint64, k float64, sp span) Config {
				c := pdPods(pods)
				c.KVLink.Failures = []KVLinkFailure{{From: sp.start, To: sp.endOr(2 * MatrixDuration), Share: k}}
				return c
			},
		},
		{
			Name: "pd-decode-hotspot", Expect: "replica-hotspot", Symptom: SymptomE2E,
			Knob: "routing weight of the hot decode pod (the other decode pods 1)", KnobMin: 1, KnobMax: 8,
			// Near the hot pod's saturation a queue forms or not by seed
			// (8 pods: 1.4x to 1.9x at one knob); on 3 pods the hot pod
			// takes at most twice its share, short of severe.
			GradedByTruth: true,
			Description:   "prefill/decode disaggregation at ~58% of capacity: half the pods (at least one) prefill, the others decode; from the incident on the scheduler sends one seeded decode pod the knob times the share of each other decode pod (a stale endpoint list, a prefix-aware scorer stuck on one pod): its batch grows and its tokens slow, the users' TPOT rises while the first tokens, prefilled elsewhere, barely move",
			build: func(pods int, seed uint64, k float64, sp span) Config {
				c := pdPods(pods)
				c.Workload.Phases[0] = matrixPhase(pods, matrixPodRateHot)
				var decode []int
				for i, p := range c.Pods {
					if p.Role == RoleDecode {
						decode = append(decode, i)
					}
				}
				hot := decode[caseRNG("pd-decode-hotspot", seed).IntN(len(decode))]
				c.Workload = sp.phases(c.Workload.Phases[0], func(p *Phase) {
					p.Weights = make([]float64, len(c.Pods))
					for i := range p.Weights {
						p.Weights[i] = 1
					}
					p.Weights[hot] = k
				})
				return c
			},
		},

		{
			Name: "admission-rejections", Expect: "admission-rejections", Symptom: SymptomE2E,
			Description: "every pod runs with --max-num-queued-reqs equal to its --max-num-seqs (128: the max_num_seqs value reused as the in-flight cap, vLLM PR 55124), from a baseline at ~60% of capacity; at the change arrivals double: the requests in flight reach the cap, so the API server answers ~15% of requests 503 at admission (vllm:admission_rejections_total) while nothing waits; the admitted ones run in a fuller batch. The 503s are the incident (no severity: the latency the admission limit protects rises little)",
			build: func(pods int, seed uint64, _ float64, sp span) Config {
				return Config{NumPods: pods, Engine: admissionLimitedEngine(), Workload: sp.phases(matrixPhase(pods, matrixPodRateBusy), func(p *Phase) {
					p.Rate *= 2
				})}
			},
		},
		{
			Name: "preemption-thrash", Expect: "preemption-thrash", Symptom: SymptomE2E,
			Knob: "share of ~14k-token prompts", KnobMin: 0, KnobMax: 0.08,
			// Thrash feeds on itself (a readmitted prefill holds the
			// blocks another needs): seeds of one knob land 1.1x and 1.6x
			// apart.
			GradedByTruth: true,
			Description:   "a small KV pool (gpu_memory_utilization 0.58) at ~34% of capacity; from the incident on a share of prompts (the knob) become ~14k-token documents (sigma 0.2) whose chunked prefills are admitted, preempted and readmitted again and again (vLLM #18115, #21809, #37307); the fleet exports vllm:request_num_preemptions (vLLM >= 0.30)",
			build: func(pods int, seed uint64, k float64, sp span) Config {
				return Config{NumPods: pods, RequestPreemptions: true, Engine: DefaultEngine.WithGPUMemoryUtilization(0.58),
					Workload: sp.phases(matrixPhase(pods, matrixPodRateThrash), func(p *Phase) {
						p.Prompt.TailWeight, p.Prompt.TailMedian, p.Prompt.TailSigma = k, 14000, 0.2
					})}
			},
		},

		// Counter-cases.
		{
			Name: "healthy", Expect: "no-incident", Symptom: SymptomTTFT,
			Description: "steady load at ~42% of capacity; nothing changes",
			build: func(pods int, seed uint64, _ float64, sp span) Config {
				return Config{NumPods: pods, Workload: Workload{Phases: []Phase{matrixPhase(pods, matrixPodRate)}}}
			},
		},
		{
			Name: "kv-high-healthy", Expect: "no-incident", Symptom: SymptomTTFT,
			Description: "long shared documents (14k tokens) resident in a small KV cache (gpu_memory_utilization 0.645): usage rises from ~0.5 to ~0.8 (peaks ~0.9) when two more documents become hot, no preemption, SLOs met",
			build: func(pods int, seed uint64, _ float64, sp span) Config {
				hk := matrixPhase(pods, 6)
				hk.Prompt = Dist{Median: 150, Sigma: 0.4, Min: 16}
				hk.Output = Dist{Median: 120, Sigma: 0.4, Min: 1}
				hk.PrefixShare, hk.PrefixGroups, hk.PrefixLen, hk.PrefixSkew = 0.97, 2, 14000, 1
				// 0.62 (the scenario's) preempts now and then on 3 pods.
				return Config{NumPods: pods, Engine: DefaultEngine.WithGPUMemoryUtilization(0.645),
					Workload: sp.phases(hk, func(p *Phase) { p.PrefixGroups = 4 })}
			},
		},
		{
			Name: "low-traffic", Expect: "no-incident", Symptom: SymptomTTFT,
			Description: "0.05 requests/s per pod: GPU mostly idle, no queue, SLOs met",
			build: func(pods int, seed uint64, _ float64, sp span) Config {
				return Config{NumPods: pods, Workload: Workload{Phases: []Phase{matrixPhase(pods, 0.05)}}}
			},
		},
		{
			Name: "restart", Expect: "no-incident", Symptom: SymptomTTFT,
			Description: "healthy load; one seeded pod restarts once at a seeded time in the second half (60 s down): counters reset, in-flight requests lost",
			build: func(pods int, seed uint64, _ float64, sp span) Config {
				rng := caseRNG("restart", seed)
				c := Config{Pods: make([]PodConfig, pods), Workload: Workload{Phases: []Phase{matrixPhase(pods, matrixPodRate)}}}
				at := sp.start + 2*time.Minute + time.Duration(rng.IntN(int((sp.end-sp.start)/2/time.Second)))*time.Second
				c.Pods[rng.IntN(pods)].Restarts = []Restart{{At: at, Downtime: time.Minute}}
				return c
			},
		},
		{
			Name: "rolling-restart-statefulset", Expect: "no-incident", Symptom: SymptomTTFT, TSDB: true,
			Description: "healthy load; from a seeded time in the second half every pod is restarted once, one after the other, stopped gracefully (45 s drain, 75 s down) and back under its own name at a new IP (a StatefulSet's rolling restart), read from a TSDB where the new instance label makes new series",
			build: func(pods int, seed uint64, _ float64, sp span) Config {
				return rollingRestart(pods, seed, "rolling-restart-statefulset", false)
			},
		},
		{
			Name: "rolling-restart-deployment", Expect: "no-incident", Symptom: SymptomTTFT, TSDB: true,
			Description: "as rolling-restart-statefulset, but every pod comes back under a new name and IP (a Deployment's rollout), read from a TSDB",
			build: func(pods int, seed uint64, _ float64, sp span) Config {
				return rollingRestart(pods, seed, "rolling-restart-deployment", true)
			},
		},
		{
			Name: "mixed-versions-steady", Expect: "no-incident", Symptom: SymptomTTFT,
			Description: "vLLM 0.11 (one pod with 2 data-parallel engines and twice the weight), 0.9-like and V0 pods side by side under steady load inside capacity",
			build: func(pods int, seed uint64, _ float64, sp span) Config {
				ps := mixedPods(pods)
				w := 0.0
				for _, p := range ps {
					w += max(p.Weight, 1)
				}
				ph := DefaultPhase
				ph.Rate = matrixPodRate * w
				return Config{Pods: ps, Workload: Workload{Phases: []Phase{ph}}}
			},
		},
		{
			Name: "stale-gauges", Expect: "stale-gauges", Symptom: SymptomTTFT,
			Description: "every client of a seeded pod disconnects at once at the change and the router drops the pod (vLLM #22545, #29928): its requests are aborted and its running, waiting and KV gauges keep their last values while its counters stand still; the other pods keep their load. Nothing is slower (no severity): the case must name stale-gauges, not read the frozen gauges as load",
			build: func(pods int, seed uint64, _ float64, sp span) Config {
				return outOfRotation(pods, caseRNG("stale-gauges", seed).IntN(pods), sp, func(p *PodConfig) {
					p.Freezes = []Freeze{{At: sp.start}}
				})
			},
		},
		{
			Name: "sleeping-pod", Expect: "no-incident", Symptom: SymptomTTFT,
			Description: "demand falls by one pod's share at the change: a seeded pod leaves the rotation and, once drained (30 s), is put to sleep (vLLM sleep mode level 1: vllm:engine_sleep_state awake 0); the other pods keep their load",
			build: func(pods int, seed uint64, _ float64, sp span) Config {
				return outOfRotation(pods, caseRNG("sleeping-pod", seed).IntN(pods), sp, func(p *PodConfig) {
					p.Sleeps = []Sleep{{From: sp.start + 30*time.Second, To: sp.endOr(2 * MatrixDuration)}}
				})
			},
		},
		{
			Name: "idle-pod", Expect: "no-incident", Symptom: SymptomTTFT,
			Description: "demand falls by one pod's share at the change: a seeded pod leaves the rotation (cordoned) and idles, awake, with its counters flat; the other pods keep their load",
			build: func(pods int, seed uint64, _ float64, sp span) Config {
				return outOfRotation(pods, caseRNG("idle-pod", seed).IntN(pods), sp, func(*PodConfig) {})
			},
		},
		{
			Name: "healthy-dp", Expect: "no-incident", Symptom: SymptomTTFT,
			Description: "every pod runs 2 data-parallel engines that take turns, at ~58% of capacity; nothing changes",
			build: func(pods int, seed uint64, _ float64, sp span) Config {
				return dpPods(pods, matrixPodRateHot)
			},
		},
		{
			Name: "admission-limit-unreached", Expect: "no-incident", Symptom: SymptomTTFT,
			Description: "every pod runs with the admission-rejections case's --max-num-queued-reqs (128); arrivals grow by 10% at the change, well inside capacity: the limit is never reached, nothing is refused",
			build: func(pods int, seed uint64, _ float64, sp span) Config {
				return Config{NumPods: pods, Engine: admissionLimitedEngine(), Workload: sp.phases(matrixPhase(pods, matrixPodRate), func(p *Phase) {
					p.Rate *= 1.1
				})}
			},
		},
		{
			Name: "healthy-pd", Expect: "no-incident", Symptom: SymptomTTFT, TSDB: true,
			Description: "prefill/decode disaggregation: half the pods (at least one) prefill, the others decode, at the base load over a healthy KV link; nothing changes. The roles' load shares, TTFTs and request counts differ by role (each request is counted by both its pods): none of it is an incident. Read from a TSDB, whose series carry the role as the pod label llm_d_ai_role (pd-kv-transfer, read from dumps, has the roles told by the metrics' shape)",
			build: func(pods int, seed uint64, _ float64, sp span) Config {
				return pdPods(pods)
			},
		},
		{
			Name: "traffic-growth-10", Expect: "no-incident", Symptom: SymptomTTFT,
			Description: "arrivals grow by 10% at the change, well inside capacity",
			build: func(pods int, seed uint64, _ float64, sp span) Config {
				return Config{NumPods: pods, Workload: sp.phases(matrixPhase(pods, matrixPodRate), func(p *Phase) {
					p.Rate *= 1.1
				})}
			},
		},
	}
}

// rollingRestart is the healthy fleet at the base load with every pod
// restarted once, gracefully, one after the other over at most 15
// minutes from a seeded time after MatrixIncidentStart; each comes back
// at a new address and, with rename, under a new name.
func rollingRestart(pods int, seed uint64, name string, rename bool) Config {
	rng := caseRNG(name, seed)
	c := Config{Pods: make([]PodConfig, pods), Workload: Workload{Phases: []Phase{matrixPhase(pods, matrixPodRate)}}}
	at := MatrixIncidentStart + time.Minute + time.Duration(rng.IntN(120))*time.Second
	gap := min(2*time.Minute, 15*time.Minute/time.Duration(pods))
	for i := range c.Pods {
		r := Restart{At: at + time.Duration(i)*gap, Downtime: 75 * time.Second, Drain: 45 * time.Second,
			Instance: fmt.Sprintf("10.43.%d.%d:8000", i/200, 10+i%200)}
		if rename {
			r.Name = fmt.Sprintf("vllm-%06x-%05d", rng.Uint32()&0xffffff, i)
		}
		c.Pods[i].Restarts = []Restart{r}
	}
	return c
}

// admissionLimitedEngine is the default engine with vLLM's
// --max-num-queued-reqs (PR 49445) set to its --max-num-seqs: at most as
// many requests in flight as can run, so the cap binds before a queue
// forms.
func admissionLimitedEngine() EngineConfig {
	e := DefaultEngine
	e.MaxNumQueuedReqs = e.MaxNumSeqs
	return e
}

// dpPods is pods pods of 2 data-parallel engines each, every engine at
// perEngine requests/s of the default chat mix.
func dpPods(pods int, perEngine float64) Config {
	c := Config{Pods: make([]PodConfig, pods), Workload: Workload{Phases: []Phase{matrixPhase(pods, 2*perEngine)}}}
	for i := range c.Pods {
		c.Pods[i].DataParallel = 2
	}
	return c
}

// pdPods is a disaggregated fleet of pods pods: the first half (at least
// one) prefill, the others decode, at the base load (matrixPodRate per
// pod) over a default KV link.
func pdPods(pods int) Config {
	c := Config{Pods: make([]PodConfig, pods), Workload: Workload{Phases: []Phase{matrixPhase(pods, matrixPodRate)}}}
	np := max(pods/2, 1)
	for i := range c.Pods {
		c.Pods[i].Role = RoleDecode
		if i < np {
			c.Pods[i].Role = RolePrefill
		}
		c.Pods[i].Name = fmt.Sprintf("vllm-%s-%d", c.Pods[i].Role, i)
	}
	return c
}

// outOfRotation is the healthy fleet at the base load in which pod out
// leaves the rotation during sp (the fleet's demand falls by its share,
// every other pod keeps its load), changed by pod.
func outOfRotation(pods, out int, sp span, pod func(*PodConfig)) Config {
	c := Config{Pods: make([]PodConfig, pods)}
	pod(&c.Pods[out])
	c.Workload = sp.phases(matrixPhase(pods, matrixPodRate), func(p *Phase) {
		p.Weights = make([]float64, pods)
		for i := range p.Weights {
			p.Weights[i] = 1
		}
		p.Weights[out] = 0
		p.Rate = matrixPodRate * float64(pods-1)
	})
	return c
}

// mixedPods returns n pods mixing vLLM generations: the 8-pod pattern of
// the mixed-versions scenario repeated, or for fewer than 8 pods one of
// each kind first.
func mixedPods(n int) []PodConfig {
	pattern := []PodConfig{
		{}, {}, {}, {Weight: 2, DataParallel: 2},
		{Version: VersionV1Early}, {Version: VersionV1Early}, {Version: VersionV1Early},
		{Version: VersionV0},
	}
	if n < len(pattern) {
		pattern = []PodConfig{{Weight: 2, DataParallel: 2}, {Version: VersionV1Early}, {Version: VersionV0}, {}, {Version: VersionV1Early}, {}, {}}
	}
	out := make([]PodConfig, n)
	for i := range out {
		out[i] = pattern[i%len(pattern)]
	}
	return out
}

// MatrixCases returns the cases of the generalisation matrix: the
// incident hypotheses with a severity knob (queue-ramp, a linear ramp of
// arrivals, has the verdict queue-sustained), then the cases without
// one: the counter-cases and stale-gauges, whose frozen gauges slow
// nothing.
func MatrixCases() []MatrixCase { return matrixCases() }

// LookupMatrixCase returns the matrix case with the given name.
func LookupMatrixCase(name string) (MatrixCase, bool) {
	return byName(matrixCases(), name, func(c MatrixCase) string { return c.Name })
}

// Change is the ground-truth change of one symptom's fleet p95 between
// the baseline half and the incident half of a run.
type Change struct {
	Symptom Symptom
	// Baseline and Incident are the p95 in seconds over the requests that
	// arrived in each half.
	Baseline, Incident float64
	// NBaseline and NIncident count those requests; Censored counts the
	// incident requests still waiting (TTFT) or unfinished (E2E) at the
	// end of the run, taken at their elapsed time (a lower bound).
	NBaseline, NIncident, Censored int
}

// Ratio is Incident / Baseline.
func (c Change) Ratio() float64 { return c.Incident / c.Baseline }

func (c Change) String() string {
	return fmt.Sprintf("%s p95 %.4gs -> %.4gs (%.2fx, n=%d/%d, censored %d)", c.Symptom, c.Baseline, c.Incident, c.Ratio(), c.NBaseline, c.NIncident, c.Censored)
}

// GroundTruth measures the change of the fleet p95 of sym between the
// requests arriving in [0, split) and in [split, Duration), from the
// simulator's own request records. Lost (restart), rejected (HTTP 400)
// and refused (HTTP 503 at admission) requests do not count; a request
// the run ended on counts at its elapsed time for TTFT and E2E (it is at
// least that slow) and not at all for TPOT.
func (f *Fleet) GroundTruth(sym Symptom, split time.Duration) Change {
	return f.GroundTruthSpan(sym, split, f.Config.Duration)
}

// GroundTruthSpan is GroundTruth of an incident that lasts from split to
// until: the requests arriving in [0, split) against those arriving in
// [split, until); the later ones count in neither.
func (f *Fleet) GroundTruthSpan(sym Symptom, split, until time.Duration) Change {
	end := f.Config.Duration
	var base, inc []float64
	ch := Change{Symptom: sym}
	for i := range f.Requests {
		r := &f.Requests[i]
		if r.Arrival < 0 || r.Arrival >= end || r.Status == StatusLost || r.Status == StatusRejected || r.Status == StatusRefused || r.Status == StatusAborted {
			continue
		}
		v, censored := math.NaN(), false
		switch sym {
		case SymptomTTFT:
			if r.FirstToken != NaNDuration {
				v = r.TTFT().Seconds()
			} else {
				v, censored = (end - r.Arrival).Seconds(), true
			}
		case SymptomTPOT:
			if r.Status == StatusFinished && r.OutputTokens > 1 {
				v = (r.Finished - r.FirstToken).Seconds() / float64(r.OutputTokens-1)
			}
		case SymptomE2E:
			if r.Status == StatusFinished {
				v = (r.Finished - r.Arrival).Seconds()
			} else {
				v, censored = (end - r.Arrival).Seconds(), true
			}
		}
		if math.IsNaN(v) {
			continue
		}
		if r.Arrival < split {
			base = append(base, v)
		} else if r.Arrival < until {
			inc = append(inc, v)
			if censored {
				ch.Censored++
			}
		}
	}
	ch.Baseline, ch.NBaseline = p95(base), len(base)
	ch.Incident, ch.NIncident = p95(inc), len(inc)
	return ch
}

// p95 is the nearest-rank 95th percentile of x (NaN when empty).
func p95(x []float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	sort.Float64s(x)
	return x[int(math.Ceil(0.95*float64(len(x))))-1]
}

// Severity grades a ground-truth ratio: "mild" for +20-40%, "moderate"
// for +40-100%, "severe" above 2x, "" below +20%.
func Severity(ratio float64) string {
	switch {
	case ratio > 2:
		return "severe"
	case ratio >= 1.4:
		return "moderate"
	case ratio >= 1.2:
		return "mild"
	}
	return ""
}

// Severities are the severity grades of the matrix, mildest first.
var Severities = []string{"mild", "moderate", "severe"}

// SeverityBand returns the ratio interval of a severity grade; severe's
// upper bound is +Inf.
func SeverityBand(sev string) (lo, hi float64) {
	switch sev {
	case "mild":
		return 1.2, 1.4
	case "moderate":
		return 1.4, 2
	case "severe":
		return 2, math.Inf(1)
	}
	return math.NaN(), math.NaN()
}

// SeverityTarget is the ratio the knob table aims at for a grade: the
// geometric middle of the band (3x for severe).
func SeverityTarget(sev string) float64 {
	switch sev {
	case "mild":
		return math.Sqrt(1.2 * 1.4)
	case "moderate":
		return math.Sqrt(1.4 * 2)
	case "severe":
		return 3
	}
	return math.NaN()
}

// MatrixSizes are the fleet sizes of the matrix; MatrixSeeds its seeds.
var (
	MatrixSizes = []int{3, 8, 16}
	MatrixSeeds = []uint64{1001, 1002, 1003}
)

// matrixKnobKey indexes matrixKnobs.
type matrixKnobKey struct {
	name string
	pods int
	sev  string
}

// MatrixKnob returns the knob value of the severity table (matrix_knobs.go,
// written by TestCalibrate -calibrate) for an incident case, fleet size and
// severity ("mild", "moderate", "severe").
func MatrixKnob(name string, pods int, sev string) (float64, bool) {
	k, ok := matrixKnobs[matrixKnobKey{name, pods, sev}]
	return k, ok
}
