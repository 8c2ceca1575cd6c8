package rules

// This file is the decision map of the article "vLLM은 왜 느려졌을까?"
// (sections 4-13), one struct literal per row. It is a map of what to
// check next, not a table of verdicts: no single metric decides a root
// cause.
//
//	observed combination            hypothesis to check first               counter-evidence
//	TTFT up + queue up              arrivals exceed capacity / admission    same inbound rate, no queue growth
//	TTFT up + short queue + long    prefill cost, or loss of prefix reuse   prompt length and prefill time stable
//	  prompts
//	TTFT normal + TPOT/ITL up       decode concurrency or memory pressure   active sequences and TPOT unrelated
//	KV up + preemptions up          KV space shortage and recompute         preemption rate 0 and SLOs fine
//	GPU low + queue up              bottleneck outside the GPU              GPU steadily fed with work
//
// plus the checks of cases A-E: burst vs sustained queue, one replica over
// its share, client vs server TTFT.

import "time"

const minute = time.Minute

// bursty holds when arrivals per scrape interval are dispersed around
// their local level beyond the limit and beyond the baseline's, or when
// the engines' backlog spikes far above its local level, more than in the
// baseline (bursts that fill the batch, seen even by scrapes too far
// apart to resolve them in the arrivals): bursts, not a ramp or a step of
// demand. A third sign needs no resolution at all: the scrapes see far
// fewer requests in the engines than the counters say were there
// (occupancy_seen falls; Little's law), so the load came and drained
// between scrapes. A sustained rise of demand is in flight at every
// instant, and a gauge sampled at any instant sees it.
func bursty() Cond {
	return anyOf(
		allOf(rises(ArrivalDispersionDetrended), atLeast(ArrivalDispersionDetrended, limDispersionDetrended)),
		allOf(rises(BacklogSpike), atLeast(BacklogSpike, limBacklogSpike)),
		falls(OccupancySeen),
	)
}

// preemptionSpikes is why preemptions explain a queue that spikes.
const preemptionSpikes = "arrivals did not burst (steady around their trend at the scrape interval) while requests were preempted: the queue spikes while preempted prefills recompute"

// accumulates holds when the waiting queue builds steadily: its slope
// says it grows and its shape says it stays (most of its mass never
// drained within the window), not spikes that drain between bursts.
func accumulates() Cond {
	return allOf(atLeast(WaitingSlope, limAccumulating), below(WaitingDrainedShare, limDrainedShare))
}

// inFlightRose holds when the engines hold more requests at the scrapes,
// running or waiting. A sustained rise of arrivals raises the requests in
// flight at every instant (Little's law: arrivals times time in the
// engine), wherever the scrapes fall; arrivals added in bursts that drain
// between two scrapes leave the gauges where they were, so that a rise of
// the arrival rate without it is no evidence of a sustained overload.
func inFlightRose() Cond {
	return anyOf(rises(RunningMean), rises(WaitingMean))
}

// minorityCarries holds when the fleet's mean TTFT rose and the median
// replica's mean TTFT (replica_ttft_mean_median: the slowest replica left
// out) rose by at most MinorityShare of that rise: a minority of the
// replicas carries it. Arrivals beyond capacity or in
// bursts reach every replica the router spreads them over and move the
// median replica with the fleet; a cause on a few replicas (a stall, a
// deferral, a slow host) leaves it where it was.
func minorityCarries() Cond {
	return allOf(rises(TTFTMean), not(explainsRise(ReplicaTTFTMeanMedian, TTFTMean, limMinorityShare)))
}

// minorityText is why minorityCarries contradicts the rows of arrivals.
const minorityText = "a minority of the replicas carries the TTFT rise: the median replica's mean TTFT moved little, while arrivals the router spreads reach every replica (see replica_ttft_ratio)"

// held returns what every experiment keeps the same in both arms
// (section 12).
func held() []string {
	return []string{"dataset", "arrival trace", "output policy", "cache state", "duration"}
}

// Map returns the decision map, one rule per hypothesis, in the article's
// order. Each call returns a fresh copy the caller may change. Every
// rule's experiment tests the rule's own hypothesis, holds what every
// experiment holds (held) and repeats each arm MinRuns times.
func Map() []Rule {
	rs := []Rule{
		{
			ID:       QueueSustained,
			Title:    "arrivals exceed capacity, or admission blocks",
			Observed: "TTFT up + queue up and accumulating",
			Source:   "sections 4, 5 (case A)",
			Explains: []SymptomID{SymptomTTFT, SymptomTail, SymptomTPOT, SymptomReliability},
			Support: []Cond{
				// More work than the fleet serves at its usual speed slows
				// the first token (queue) and every step (a larger batch).
				symptom(SymptomTTFT, SymptomTail, SymptomTPOT),
				// The work in the engines grew: queued or in the batch.
				anyOf(rises(QueueTimeP95), rises(QueueTimeMean), rises(WaitingMean), rises(RunningMean)),
				// Demand rose and the engines hold more work at the scrapes,
				// or the queue accumulates or persists at most scrapes (a
				// stable queue near saturation does not grow).
				anyOf(allOf(rises(ArrivalRate), inFlightRose()), accumulates(), atLeast(WaitingBusyShare, limBusyShare)),
			},
			Counter: []Counter{
				{"same inbound rate and no queue growth", allOf(steady(ArrivalRate), flat(WaitingMean), below(WaitingSlope, limAccumulating))},
				{"arrivals come in bursts around their trend and the queue does not build steadily (see queue-burst)", allOf(bursty(), not(accumulates()))},
				{minorityText, minorityCarries()},
			},
			Checks: []Check{
				{Text: "Did demand rise (arrival rate up beyond noise)?", When: ptr(rises(ArrivalRate)), Neutral: true},
				{Text: "Arrivals steady while the queue grows: did capacity fall (see outside-gpu, kv-preemption, decode-pressure, prefill-long-prompts, prefix-cache-loss)?", When: ptr(steady(ArrivalRate)), Neutral: true},
				auto("Has the gap between arrival and completion rates grown?", ratioAtLeast(ArrivalRate, CompletionRate, limArrivalExcess)),
				auto("Does the queue-time increase explain the TTFT increase?", explainsRise(QueueTimeP95, TTFTP95, limExplains)),
				auto("Are running sequences at max_num_seqs (engine saturated)?", ratioAtLeast(RunningMax, MaxNumSeqs, limNearCapacity)),
				auto("Is the load spread over the replicas (else see replica-hotspot)?", below(ReplicaShareMax, limHotspot)),
				manual("Do interactive and batch requests compete in the same pool?"),
				manual("Do client retries amplify the real arrivals?"),
			},
			Mitigations: []string{
				"tighten admission control or rate limits at the gateway",
				"cap client retries (retry budget, backoff)",
				"move batch traffic out of the interactive pool for now",
				"add replicas or route to healthy ones",
			},
			RootCause: []string{
				"compare the sustained arrival rate with the completion rate the fleet holds within SLO",
				"replay the incident's arrival trace to measure the sustainable rate per replica",
				"compare admission control, retry limits, workload split, routing, replica count and scheduler settings one at a time (a larger batch is not the default answer)",
			},
			Prevention: []string{
				"alert on queue time p95 and the waiting trend, not on mean RPS",
				"document headroom and admission criteria per workload type",
			},
			Experiment: Plan{
				Change: Change{Name: "replicas", From: "current", To: "current + 1"},
				Expect: []Expectation{
					{Metric: QueueTimeP95, Direction: Lower, MinEffect: 0.3},
					{Metric: TTFTP95, Direction: Lower, MinEffect: 0.2},
				},
				Guards: []Guard{
					guard(TPOTP95, 0.1),
					guard(ErrorShare, 0.1),
				},
				Falsification: []Falsifier{
					{Kind: NoImprovement, Metric: QueueTimeP95, Text: "queue time p95 does not fall with more capacity: admission or routing blocks, not capacity"},
					inconsistent(TTFTP95, "TTFT p95"),
				},
				WarmUp: 5 * minute,
			},
			// An overloaded engine runs at max_num_seqs: decode slows as a consequence.
			Refines: []HypothesisID{DecodePressure, ClientAbandonment},
		},
		{
			ID:       QueueBurst,
			Title:    "bursts of arrivals queue and drain again",
			Observed: "TTFT or tail up + waiting spikes without accumulating",
			Source:   "section 5 (case A)",
			Explains: []SymptomID{SymptomTail, SymptomTTFT, SymptomTPOT},
			Support: []Cond{
				// A burst queues (TTFT, tail) or fills the batch (TPOT).
				symptom(SymptomTail, SymptomTTFT, SymptomTPOT),
				// Arrivals come in bursts: a short-interval peak far above
				// the mean, or arrivals per interval far more dispersed
				// around their trend than in the baseline (a ramp is a
				// trend, not a burst).
				anyOf(atLeast(WaitingBurst, limBurst), bursty()),
				// The queue spikes and drains rather than building (a
				// burst the batch absorbs never waits at all).
				not(accumulates()),
			},
			Counter: []Counter{
				{"waiting builds steadily over the window (sustained, not bursts)", accumulates()},
				{minorityText, minorityCarries()},
			},
			Checks: []Check{
				auto("Is the mean arrival rate unchanged (a 10 s burst hides in a 5 min mean)?", steady(ArrivalRate)),
				auto("Did queue time p95 rise?", rises(QueueTimeP95)),
				auto("Is the load spread over the replicas (else see replica-hotspot)?", below(ReplicaShareMax, limHotspot)),
				manual("Look at arrivals per 10 s around the p99 spikes: do batch jobs, fan-out or client retries start together?"),
			},
			Mitigations: []string{
				"smooth bursts at the gateway (token bucket, queue with deadline)",
				"spread scheduled batch jobs over time",
				"cap client retries with jittered backoff",
			},
			RootCause: []string{
				"find the burst sources in gateway logs at 10 s resolution",
				"replay the burst trace and measure p99 with and without smoothing",
			},
			Prevention: []string{
				"dashboards with short-interval (10 s) arrival peaks, not only 5 min means",
				"alert on p99 with a minimum sample count and duration",
			},
			Experiment: Plan{
				Change: Change{Name: "gateway burst limit", From: "current", To: "token bucket at the mean arrival rate"},
				Expect: []Expectation{
					{Metric: TTFTP99, Direction: Lower, MinEffect: 0.2},
					{Metric: QueueTimeP95, Direction: Lower, MinEffect: 0.2},
				},
				Guards: []Guard{
					guard(CompletionRate, 0.05),
					guard(ErrorShare, 0.1),
				},
				Falsification: []Falsifier{
					{Kind: NoImprovement, Metric: TTFTP99, Text: "TTFT p99 does not improve when bursts are smoothed"},
					{Kind: WorseThanGain, Metric: TTFTP99, Versus: []FactID{CompletionRate}, Text: "completions fall by more than TTFT p99 improves"},
					inconsistent(TTFTP99, "TTFT p99"),
				},
				WarmUp: 5 * minute,
			},
			// A burst fills the batch: decode slows while it drains.
			Refines: []HypothesisID{DecodePressure, ClientAbandonment},
			// A preempted prefill holds the batch while it recomputes:
			// the queue spikes and drains with arrivals that never
			// burst. Arrivals seen steady around their trend at the
			// scrape interval (dispersion under the burst line) leave
			// the spikes to the preemptions.
			ExplainedBy: []Explained{
				{By: PreemptionThrash, When: below(ArrivalDispersionDetrended, limDispersionDetrended), Why: preemptionSpikes},
				{By: KVPreemption, When: below(ArrivalDispersionDetrended, limDispersionDetrended), Why: preemptionSpikes},
			},
		},
		{
			ID:       PrefillLongPrompts,
			Title:    "prefill cost of longer prompts",
			Observed: "TTFT up + short queue + long prompts (p95/p99 up)",
			Source:   "sections 4, 6 (case B), 10",
			Explains: []SymptomID{SymptomTTFT, SymptomTail},
			Support: []Cond{
				symptom(SymptomTTFT, SymptomTail),
				anyOf(rises(PromptTokensP95), rises(PromptTokensP99)),
				// A queue may follow (the token demand rose): that is
				// explained, not a counter-argument (Refines). A small
				// group of long prompts moves the mean prefill time
				// little, yet enough to carry most of the TTFT rise (TTFT
				// ~ queue + prefill, exact for means): that is the
				// evidence of case B too.
				anyOf(rises(PrefillTimeP95), rises(PrefillTimeMean), explainsRise(PrefillTimeMean, TTFTMean, limExplains)),
			},
			Counter: []Counter{
				{"prompt length and prefill time stable", allOf(steady(PromptTokensP95), steady(PrefillTimeP95))},
			},
			Checks: []Check{
				auto("Is prompt tokens p50 unchanged while p95/p99 grew (a group of long requests)?", steady(PromptTokensP50)),
				auto("Does the prefill-time increase explain the TTFT increase?", explainsRise(PrefillTimeP95, TTFTP95, limExplains)),
				auto("Is TPOT stable (decode unaffected)?", noSymptom(SymptomTPOT)),
				manual("Did RAG return more chunks or more tokens?"),
				manual("Did the system prompt or tool schemas grow?"),
				manual("Are cold-cache and warm-cache traffic mixed in the dashboards?"),
				manual("Is chunked prefill applied as expected (startup log, max_num_batched_tokens)?"),
			},
			Mitigations: []string{
				"apply the approved context-length cap",
				"route long-context requests to a separate pool",
				"reduce retrieved chunks for now",
			},
			RootCause: []string{
				"find the request group with long prompts (workload type, RAG pipeline, tenant) and its change record",
				"shrink retrieval results, compress context, simplify tool schemas, keep a stable prefix",
				"then compare max_num_batched_tokens on the same workload",
			},
			Prevention: []string{
				"dashboards of prompt tokens p50/p95/p99 per workload type",
				"regression benchmark with the long-prompt mix before prompt or RAG releases",
			},
			Experiment: Plan{
				Change: Change{Name: "max_num_batched_tokens", From: "current", To: "2x current"},
				Expect: []Expectation{
					{Metric: PrefillTimeP95, Direction: Lower, MinEffect: 0.15},
					{Metric: TTFTP95, Direction: Lower, MinEffect: 0.15},
				},
				Guards: []Guard{
					guard(ITLP95, 0.1),
					guard(TPOTP95, 0.1),
				},
				Falsification: []Falsifier{
					{Kind: NoImprovement, Metric: TTFTP95, Text: "TTFT p95 does not improve with a larger token budget"},
					{Kind: WorseThanGain, Metric: TTFTP95, Versus: []FactID{ITLP95, TPOTP95}, Text: "ITL and TPOT get worse by more than TTFT improves"},
					inconsistent(TTFTP95, "TTFT p95"),
				},
				WarmUp: 5 * minute,
			},
			// Longer prefills cut capacity (the queue grows) and share
			// mixed steps with decode (ITL rises).
			Refines: []HypothesisID{QueueSustained, DecodePressure},
		},
		{
			ID:       PrefixCacheLoss,
			Title:    "loss of prefix-cache reuse",
			Observed: "TTFT up + short queue + prefix hit ratio down, prompts not longer",
			Source:   "sections 4, 6 (case B)",
			Explains: []SymptomID{SymptomTTFT, SymptomTail},
			Support: []Cond{
				symptom(SymptomTTFT, SymptomTail),
				// The hit ratio falls by PrefixDrop, or by a factor of Rise,
				// beyond noise.
				anyOf(drops(PrefixHitRatio, limPrefixDrop), falls(PrefixHitRatio)),
				// Longer prompts lower the hit ratio by themselves (their
				// new tokens were never cached), and a cache they fill
				// evicts the cached prefixes: prompts not longer, at the
				// p95 or at the median (a surge of mid-length prompts moves
				// the median and leaves the p95 inside its bucket).
				steady(PromptTokensP95),
				not(rises(PromptTokensP50)),
				// The p95 is often held by long prompts that were never
				// cached; lost reuse shows in the median first. vLLM's
				// prefill buckets start at 0.3 s, too coarse for short
				// prefills; with the queue flat, a rise of the TTFT
				// median (fine buckets) is prefill time too.
				anyOf(rises(PrefillTimeP50), rises(PrefillTimeP95), rises(PrefillTimeMean), rises(TTFTP50)),
			},
			Counter: []Counter{
				{"prefix-cache hit ratio stable", not(anyOf(drops(PrefixHitRatio, limPrefixDrop), falls(PrefixHitRatio)))},
			},
			Checks: []Check{
				auto("Is KV usage high (cached prefixes evicted)?", atLeast(KVUsageMax, limKVHigh)),
				manual("Is a per-request time or id placed before the shared instructions? Automatic prefix caching reuses identical token prefixes only"),
				manual("Did the prompt template, system prompt or tokenizer change?"),
				manual("Did restarts or scale-out leave caches cold?"),
			},
			Mitigations: []string{
				"roll back the prompt template change",
				"route sessions to the replica that holds their prefix (sticky routing)",
			},
			RootCause: []string{
				"diff the prompt templates before and after at the token level",
				"move per-request fields (time, ids) after the shared prefix",
			},
			Prevention: []string{
				"track the prefix-cache hit ratio per workload type",
				"review prompt templates for a stable shared prefix",
			},
			Experiment: Plan{
				Change: Change{Name: "prompt prefix layout", From: "current", To: "per-request fields after the shared prefix"},
				Expect: []Expectation{
					{Metric: PrefixHitRatio, Direction: Higher, MinEffect: 0.1},
					{Metric: TTFTP95, Direction: Lower, MinEffect: 0.1},
				},
				Guards: []Guard{
					guard(TPOTP95, 0.1),
				},
				Falsification: []Falsifier{
					{Kind: NoImprovement, Metric: PrefixHitRatio, Text: "the hit ratio does not recover with a stable prefix"},
					{Kind: NoImprovement, Metric: TTFTP95, Text: "the hit ratio recovers but TTFT p95 does not improve"},
					inconsistent(TTFTP95, "TTFT p95"),
				},
				WarmUp: 5 * minute,
			},
			// Recomputed prefixes fill the token budget of mixed steps (ITL
			// rises) and cut capacity (the queue grows) as consequences.
			Refines: []HypothesisID{DecodePressure, QueueSustained},
		},
		{
			ID:       DecodePressure,
			Title:    "decode concurrency or memory-bandwidth pressure",
			Observed: "TTFT normal + TPOT/ITL up + more running sequences",
			Source:   "sections 4, 7 (case C), 12",
			Explains: []SymptomID{SymptomTPOT, SymptomTail},
			Support: []Cond{
				symptom(SymptomTPOT),
				anyOf(rises(RunningMean), atLeast(CorrRunningTPOT, limCorrStrong)),
				// Case C: the first token is on time. Decode load lengthens
				// every step, the one that prefills a first token too, so a
				// TTFT that grew by no more than the time per token is
				// still normal; one that grew faster waited for something
				// else (a queue, preemption and recompute, prefill) -- unless
				// that queue is the decode load's own: with arrivals and
				// prompts steady, requests that decode longer hold their
				// seats longer (occupancy = arrivals x time in the engine),
				// the batch fills and new requests wait; each request's
				// decode then grew more than its first token did. With
				// material preemptions the first token waits for recompute
				// instead (case D: kv-preemption); with the load uneven a
				// hot replica's overload queues them (replica-hotspot).
				anyOf(noSymptom(SymptomTTFT), growsNoMore(TTFTP95, TPOTP95), growsNoMore(TTFTP95, ITLP95), growsNoMore(TTFTP95, TPOTMean),
					decodeBuiltQueue()),
			},
			Counter: []Counter{
				{"active sequences and TPOT unrelated", allOf(absBelow(CorrRunningTPOT, limCorrWeak), steady(RunningMean))},
				// A minority's released backlog fills its own batch: the
				// fleet's ITL tail rises while its mean TPOT does not.
				{"a minority of the replicas carries the TTFT rise and the fleet's mean time per output token did not rise: the slower tokens are that minority's batch, not concurrency across the fleet", allOf(minorityCarries(), not(rises(TPOTMean)))},
			},
			Checks: []Check{
				auto("Is TTFT normal?", noSymptom(SymptomTTFT)),
				auto("Is a TTFT rise the queue the longer decoding built (arrivals, prompts and the load spread steady, few preemptions, each request's decode grew more than its first token)?", decodeBuiltQueue()),
				auto("Did active sequences and TPOT worsen at the same time?", atLeast(CorrRunningTPOT, limCorrStrong)),
				{Text: "Did the output length distribution change?", When: ptr(rises(GenerationTokensP95)), Neutral: true},
				manual("After raising max_num_seqs, did output goodput actually grow?"),
				manual("Does batch work share the pool with interactive decode?"),
				manual("Is TPOT bad while ITL is fine, or do mid-stream stalls worsen too?"),
			},
			Mitigations: []string{
				"lower max_num_seqs one step within the approved range",
				"move batch traffic to a separate pool",
				"apply the approved output-length cap",
			},
			RootCause: []string{
				"line up running sequences and TPOT on one timeline",
				"check whether the output length distribution shifted",
				"replay the trace with max_num_seqs one step lower",
			},
			Prevention: []string{
				"separate serving pools for interactive and batch latency needs",
				"regression benchmark of TPOT against concurrency around upgrades",
			},
			Experiment: Plan{
				Change: Change{Name: "max_num_seqs", From: "current", To: "one step lower"},
				Expect: []Expectation{
					{Metric: TPOTP95, Direction: Lower, MinEffect: 0.1},
				},
				Guards: []Guard{
					guard(TTFTP95, 0.1),
					guard(GenerationTokenRate, 0.1),
					guard(ErrorShare, 0.1),
					guard(BacklogEnd, 0.1),
				},
				Falsification: []Falsifier{
					{Kind: NoImprovement, Metric: TPOTP95, Text: "active sequences fall but TPOT p95 does not improve"},
					{Kind: WorseThanGain, Metric: TPOTP95, Versus: []FactID{QueueTimeP95, TTFTP95}, Text: "queue and TTFT get worse by more than TPOT improves"},
					{Kind: Inconsistent, Metric: TPOTP95, Text: "the direction of the TPOT change is not the same in every repeat"},
					{Kind: Manual, Text: "GPU memory activity (e.g. DCGM_FI_PROF_DRAM_ACTIVE) and TPOT are unrelated"},
				},
				WarmUp: 5 * minute,
			},
		},
		{
			ID:       KVPreemption,
			Title:    "KV-cache shortage with preemption and recompute",
			Observed: "KV usage high + preemptions + latency up",
			Source:   "sections 4, 8 (case D), 11",
			Explains: []SymptomID{SymptomTail, SymptomTPOT, SymptomTTFT, SymptomReliability},
			Support: []Cond{
				symptom(SymptomTail, SymptomTPOT, SymptomTTFT),
				atLeast(KVUsageMax, limKVHigh),
				above(PreemptionRate, limPreemption),
				// Preemptions that appear or rise beyond noise, or enough of
				// them to matter (>= 1% of requests recomputed): a steady
				// trickle in both windows is the fleet's normal state.
				anyOf(rises(PreemptionRate), atLeast(PreemptionShare, limPreemptionShare)),
			},
			Counter: []Counter{
				{"preemption rate 0 (high KV usage alone is not an incident)", atMost(PreemptionRate, limPreemption)},
			},
			Checks: []Check{
				auto("Did preemptions rise over the baseline window (increase, not lifetime counters)?", rises(PreemptionRate)),
				// Judged where requests were preempted: a fleet mean of 0.7
				// hides replicas that each sat at 100% when they preempted.
				auto("Is KV usage high where requests were preempted (on the replicas that preempted, not only as a fleet mean)?", anyOf(atLeast(KVUsagePreempting, limKVHigh), atLeast(KVUsageMean, limKVHigh))),
				auto("Are running sequences near max_num_seqs?", ratioAtLeast(RunningMax, MaxNumSeqs, limNearCapacity)),
				manual("Split preempted requests by prompt and output length: do a few very long requests push the cache out, or does it happen at normal concurrency?"),
				manual("Check pod restarts and counter resets inside the window"),
			},
			Mitigations: []string{
				"lower max_num_seqs or max_num_batched_tokens within the approved range",
				"apply the approved context cap or route very long requests to a separate pool",
				"tighten admission",
			},
			RootCause: []string{
				"preserve the config snapshot (gpu_memory_utilization, num_gpu_blocks, max_num_seqs)",
				"replay with more KV memory or lower concurrency, one at a time",
				"consider another parallelism layout for more KV space",
			},
			Prevention: []string{
				"alert on KV high + preemptions + SLO breach together, not on KV > 90% alone",
				"record the KV block count of every release",
			},
			Experiment: Plan{
				Change: Change{Name: "gpu_memory_utilization", From: "current", To: "higher (more KV blocks)"},
				Expect: []Expectation{
					{Metric: PreemptionRate, Direction: Lower, MinEffect: 0.5},
					{Metric: E2EP99, Direction: Lower, MinEffect: 0.1},
				},
				Guards: []Guard{
					guard(TTFTP95, 0.1),
					guard(GenerationTokenRate, 0.05),
					guard(ErrorShare, 0.1),
				},
				Falsification: []Falsifier{
					{Kind: NoImprovement, Metric: PreemptionRate, Text: "preemptions do not fall with more KV space"},
					{Kind: NoImprovement, Metric: E2EP99, Text: "preemptions fall but E2E p99 does not improve: recompute was not the cost"},
					inconsistent(E2EP99, "E2E p99"),
				},
				WarmUp: 5 * minute,
			},
			// Preemption and recompute shrink capacity: the queue grows and
			// decode slows as consequences.
			// Preempted requests are prefilled again: prefill time rises
			// as a consequence, whatever the prompts.
			Refines: []HypothesisID{DecodePressure, QueueSustained, PrefillLongPrompts},
			// Section 8: what fills the cache decides the mitigation.
			Drivers: []Driver{
				{"longer answers fill the cache: outputs grew while the prompts did not (cap output length, lower max_num_seqs, or route long generations apart)",
					allOf(anyOf(rises(GenerationTokensP50), rises(GenerationTokensP95)), steady(PromptTokensP95))},
				{"longer prompts fill the cache (apply the context cap, or route long-context requests apart)",
					anyOf(rises(PromptTokensP95), rises(PromptTokensP99))},
				{"more concurrent sequences of unchanged size fill the cache (ordinary concurrency: tighten admission or lower max_num_seqs)",
					allOf(rises(RunningMean), steady(PromptTokensP95), steady(GenerationTokensP95))},
			},
			// Answers that got longer hold their KV blocks longer. When
			// few requests were preempted, or a moderate share was while
			// neither TTFT nor the queue grew (case C: TTFT normal), the
			// preemptions are a side effect of the decode load. Material
			// preemptions with a late first token or a growing queue are
			// case D: kv-preemption's own story, the longer answers its
			// driver.
			ExplainedBy: []Explained{{By: DecodePressure,
				When: allOf(anyOf(rises(GenerationTokensP50), rises(GenerationTokensP95)),
					anyOf(below(PreemptionShare, limPreemptionShare),
						allOf(below(PreemptionShare, limPreemptionStorm), noSymptom(SymptomTTFT), not(queueGrew())))),
				Why: "answers got longer while few requests were preempted, or while neither TTFT nor the queue grew: long decodes fill the KV cache, and the preemptions follow from the decode load"},
				// Prefix caching stores a shared prefix once; when reuse
				// is lost every request holds its own copy, and the cache
				// fills. A few preemptions then follow from the lost reuse.
				{By: PrefixCacheLoss,
					When: below(PreemptionShare, limPreemptionShare),
					Why:  "few requests were preempted while prefix reuse was lost: unshared prefixes fill the KV cache, and the preemptions follow from the lost reuse"},
				// Longer prompts hold more KV blocks each: a few preemptions
				// follow, but under 1% of requests recomputed cannot carry
				// the latency; the prefill of the longer prompts does.
				{By: PrefillLongPrompts,
					When: allOf(anyOf(rises(PromptTokensP95), rises(PromptTokensP99)), below(PreemptionShare, limPreemptionShare)),
					Why:  "prompts got longer while few requests were preempted: longer prompts fill the KV cache, and the preemptions follow from the prompt load, whose prefill is the cost"}},
		},
		{
			ID:       OutsideGPU,
			Title:    "bottleneck outside the GPU: CPU, gateway, routing or clients",
			Observed: "GPU utilisation low + queue up",
			Source:   "sections 4, 9 (case E)",
			Explains: []SymptomID{SymptomTTFT, SymptomTail, SymptomTPOT},
			Support: []Cond{
				// A starved scheduler delays the first token and every step.
				symptom(SymptomTTFT, SymptomTail, SymptomTPOT),
				// Work waits: in the queue, or as sequences that stay in
				// the batch longer.
				anyOf(atLeast(WaitingMean, limQueueMin), rises(QueueTimeP95), rises(QueueTimeMean), rises(RunningMean)),
				// Where requests wait, the GPU is not busy: below the level
				// a fed GPU reaches, or below its own baseline level.
				anyOf(below(GPUUtilWaiting, limGPUSaturated), falls(GPUUtilMean)),
			},
			Counter: []Counter{
				{"GPU steadily fed with work", allOf(atLeast(GPUUtilWaiting, limGPUSaturated), not(falls(GPUUtilMean)))},
				{"a minority of the replicas carries the TTFT rise: a gateway, the network or the clients would slow every replica's requests (see replica_ttft_ratio for the replica to look at)", minorityCarries()},
			},
			Checks: []Check{
				auto("Is the load spread over the replicas?", below(ReplicaShareMax, limHotspot)),
				manual("CPU tokenisation or request preprocessing (API-server CPU throttling)"),
				manual("API gateway or proxy buffering"),
				manual("client connection pools and synchronous calls"),
				manual("network or model storage problems"),
				manual("saturation of the load generator itself"),
				manual("many tiny requests and scheduling overhead"),
			},
			Mitigations: []string{
				"route to healthy replicas",
				"scale the gateway or tokenisation workers",
				"roll back a recent gateway or client change",
			},
			RootCause: []string{
				"put CPU throttling, gateway latency, accepted RPS, running and waiting on one timeline",
				"rule out the load generator and client pools",
			},
			Prevention: []string{
				"dashboards of gateway latency and API-server CPU next to GPU utilisation",
			},
			Experiment: Plan{
				Change: Change{Name: "api_server_count", From: "current", To: "2x current"},
				Expect: []Expectation{
					{Metric: TTFTP95, Direction: Lower, MinEffect: 0.2},
					{Metric: GPUUtilMean, Direction: Higher, MinEffect: 0.1},
				},
				Guards: []Guard{
					guard(TPOTP95, 0.1),
					guard(ErrorShare, 0.1),
				},
				Falsification: []Falsifier{
					{Kind: NoImprovement, Metric: TTFTP95, Text: "TTFT p95 does not improve with more front-end capacity"},
					inconsistent(TTFTP95, "TTFT p95"),
				},
				WarmUp: 5 * minute,
			},
			// A starved scheduler also slows every decode step.
			Refines: []HypothesisID{QueueSustained, DecodePressure},
		},
		{
			ID:       ReplicaHotspot,
			Title:    "one replica takes more than its share",
			Observed: "one replica takes well above its share of the arrivals",
			Source:   "sections 5, 9, 11",
			Explains: []SymptomID{SymptomTTFT, SymptomTail, SymptomTPOT},
			Support: []Cond{
				symptom(SymptomTTFT, SymptomTail, SymptomTPOT),
				// Load concentrated on one replica (section 5: are requests
				// piling onto one replica?). A replica that is only slower
				// under an equal share has a local cause (see the note
				// replica-slower).
				atLeast(ReplicaLoadShareMax, limHotspot),
			},
			Counter: []Counter{
				{"replicas balanced in load", below(ReplicaLoadShareMax, limHotspot)},
			},
			Checks: []Check{
				auto("Does the hot replica explain the fleet's change (the fleet without it barely moved)?", not(restMoved())),
				manual("Do sticky sessions, prefix-aware routing or a stale endpoint list send load to one pod?"),
				manual("Does the hot replica differ in version or configuration?"),
			},
			Mitigations: []string{
				"route away from the hot replica or rebalance",
				"drain or restart the replica only after preserving its counters",
			},
			RootCause: []string{
				"compare per-replica completions, waiting and TTFT",
				"check the router policy and endpoint health checks",
			},
			Prevention: []string{
				"keep per-replica panels next to fleet quantiles: fleet sums hide hot spots",
			},
			Experiment: Plan{
				Change: Change{Name: "routing policy", From: "current", To: "least outstanding requests"},
				Expect: []Expectation{
					{Metric: ReplicaShareMax, Direction: Lower, MinEffect: 0.2},
					{Metric: TTFTP95, Direction: Lower, MinEffect: 0.1},
				},
				Guards: []Guard{
					guard(PrefixHitRatio, 0.1),
					guard(ErrorShare, 0.1),
				},
				Falsification: []Falsifier{
					{Kind: NoImprovement, Metric: TTFTP95, Text: "load evens out but TTFT p95 does not improve"},
					inconsistent(TTFTP95, "TTFT p95"),
				},
				WarmUp: 5 * minute,
			},
			// The hot replica's queue is the fleet's queue; its batch is
			// the fleet's slowest decode; its KV cache, filled by more
			// than its share of the requests, is where they are
			// preempted.
			Refines: []HypothesisID{QueueSustained, QueueBurst, DecodePressure, KVPreemption},
			// A hot spot is the fleet's cause only when the fleet without
			// it barely moved; when the rest moved too, a cause that
			// reaches every replica explains the fleet, and the hot spot
			// is secondary.
			ExplainedBy: fleetWide(),
		},
		{
			ID:       ProxyNetwork,
			Title:    "proxy buffering or network between client and server",
			Observed: "client TTFT well above server TTFT",
			Source:   "sections 3, 9",
			Explains: []SymptomID{SymptomTTFT},
			Support: []Cond{
				symptom(SymptomTTFT),
				ratioAtLeast(ClientTTFTP95, TTFTP95, limProxyGap),
			},
			Counter: []Counter{
				{"client and server TTFT agree", not(ratioAtLeast(ClientTTFTP95, TTFTP95, limProxyGap))},
			},
			Checks: []Check{
				auto("Is server TTFT normal?", flat(TTFTP95)),
				manual("Align where both sides start measuring and what counts as the first streamed event"),
				manual("Does a proxy buffer streamed responses?"),
				manual("Network path, TLS, connection-pool limits"),
			},
			Mitigations: []string{
				"disable response buffering on streaming routes",
				"bypass the slow proxy hop for interactive traffic",
			},
			RootCause: []string{
				"trace one request across client, gateway and server timestamps",
			},
			Prevention: []string{
				"record client-side TTFT next to server TTFT, with the same definition",
			},
			Experiment: Plan{
				Change: Change{Name: "proxy response buffering", From: "current", To: "off"},
				Expect: []Expectation{
					{Metric: ClientTTFTP95, Direction: Lower, MinEffect: 0.2},
				},
				Guards: []Guard{
					guard(TTFTP95, 0.1),
					guard(ErrorShare, 0.1),
				},
				Falsification: []Falsifier{
					{Kind: NoImprovement, Metric: ClientTTFTP95, Text: "client TTFT p95 does not improve without buffering"},
					inconsistent(ClientTTFTP95, "client TTFT p95"),
				},
				WarmUp: 5 * minute,
			},
		},
		{
			ID:       ClientAbandonment,
			Title:    "clients give up on requests that vLLM does not count",
			Observed: "prompt tokens and first tokens of requests that never finish (vLLM V1 counts no abort)",
			Source:   "sections 2, 5 (symptom 4: not completing; vLLM issues #31503, #55634)",
			Explains: []SymptomID{SymptomReliability},
			Support: []Cond{
				symptom(SymptomReliability),
				// Hidden (V1) or counted (older versions) abandonment.
				anyOf(atLeast(AbandonShare, limErrorShare), atLeast(AbortShare, limErrorShare), atLeast(GatewayUnservedShare, limErrorShare)),
			},
			Counter: []Counter{
				{"every request that got a first token finished (no abort, nothing hidden beyond the requests in flight)",
					allOf(below(AbandonShare, limErrorShare), below(AbortShare, limErrorShare))},
			},
			Checks: []Check{
				auto("Did queue time rise (clients give up while they wait)?", rises(QueueTimeP95)),
				auto("Do requests get a first token and never finish (clients leave mid-stream)?", above(AbandonedAfterFirstToken, limAny)),
				auto("Does the backlog fall by more than the completions (requests leave the queue unserved)?", above(QueueUnservedMin, limAny)),
				{Text: "Is the fleet saturated (see queue-sustained and queue-burst, which explain abandonment)?", When: ptr(atLeast(WaitingMean, limQueueMin)), Neutral: true},
				manual("Compare the client and gateway timeouts with TTFT p99 and E2E p99"),
				manual("Count client disconnects at the gateway (e.g. HTTP 499) next to vLLM's completions"),
				manual("Requests abandoned while still queued leave no trace in vLLM's metrics: alias a gateway's arrival counter (Catalog.Alias gateway_requests=METRIC) to count them"),
			},
			Mitigations: []string{
				"relieve the queue first (admission limits, more replicas): a fast 429 costs less than a prefill the client will not read",
				"cap client retries, so that abandoned requests are not sent again at once",
				"raise client timeouts above E2E p99 for long generations, or stream earlier",
			},
			RootCause: []string{
				"put client and gateway timeouts, gateway disconnects, queue time and E2E on one timeline",
				"estimate the wasted prefill: abandoned prompt tokens / prompt tokens",
				"find which clients (tenant, SDK, timeout setting) abandon",
			},
			Prevention: []string{
				"alert on increase(vllm:prompt_tokens_total) - increase(vllm:request_prompt_tokens_sum) beyond the requests in flight",
				"keep a gateway request counter so that arrivals can be compared with completions",
				"use a vLLM version that counts aborted requests (e.g. vLLM PR #55837)",
			},
			Experiment: Plan{
				Change: Change{Name: "gateway admission limit", From: "none", To: "max in-flight requests per replica = max_num_seqs + a short queue"},
				Expect: []Expectation{
					{Metric: AbandonShare, Direction: Lower, MinEffect: 0.5},
					{Metric: TTFTP95, Direction: Lower, MinEffect: 0.2},
				},
				Guards: []Guard{
					guard(CompletionRate, 0.05),
					guard(HTTP5xxShare, 0.1),
				},
				Falsification: []Falsifier{
					{Kind: NoImprovement, Metric: AbandonShare, Text: "the abandon share does not fall with a short queue: clients leave for another reason (UI cancels, client bugs)"},
					{Kind: WorseThanGain, Metric: AbandonShare, Versus: []FactID{CompletionRate}, Text: "completions fall by more than abandonment"},
					inconsistent(AbandonShare, "the abandon share"),
				},
				WarmUp: 5 * minute,
			},
		},
		{
			ID:       ReplicaRestarts,
			Title:    "a replica restarts repeatedly (crash loop or OOM) and loses requests",
			Observed: "process restarts and counter resets on one replica, requests in flight lost",
			Source:   "sections 2, 11, 13 (symptom 4: not completing)",
			Explains: []SymptomID{SymptomReliability},
			Support: []Cond{
				symptom(SymptomReliability),
				// A single planned restart is not a crash loop.
				anyOf(atLeast(RestartsReplicaMax, limCrashLoop), allOf(anyOf(above(OOMKills, limAny), above(FBRiseRestarts, limAny)), above(Restarts, limAny)), atLeast(LostShare, limErrorShare)),
			},
			Counter: []Counter{
				{"no restart in the window", atMost(Restarts, limAny)},
			},
			Checks: []Check{
				auto("Does one replica restart repeatedly (crash loop)?", atLeast(RestartsReplicaMax, limCrashLoop)),
				auto("Was a container OOM-killed (kube-state-metrics)?", above(OOMKills, limAny)),
				auto("Were requests in flight lost with the restarts?", above(RequestsLost, limAny)),
				manual("Read the previous container's logs (kubectl logs --previous) and the pod's events"),
				auto("Did framebuffer use rise above the pod's own steady level before a restart (vLLM preallocates, so near-total is normal)?", above(FBRiseRestarts, limAny)),
				manual("Do liveness probes time out under load?"),
			},
			Mitigations: []string{
				"route away from the restarting replica",
				"roll back the last image or configuration change of that replica",
				"for OOM: raise the container memory limit, or lower gpu_memory_utilization or max_model_len within the approved range",
			},
			RootCause: []string{
				"preserve the previous container's logs and the counters before the next restart",
				"line up restarts with load, prompt lengths and memory on one timeline",
				"replay the trace on one replica with the suspect setting, one change at a time",
			},
			Prevention: []string{
				"alert on restarts per replica per hour and on OOMKilled terminations",
				"keep /metrics dumps or remote-write so that counters survive restarts",
				"size memory limits from a load test with the longest approved contexts",
			},
			Experiment: Plan{
				Change: Change{Name: "last change of the restarting replica (image or configuration)", From: "new", To: "previous"},
				Expect: []Expectation{
					{Metric: Restarts, Direction: Lower, MinEffect: 0.5},
					{Metric: LostShare, Direction: Lower, MinEffect: 0.5},
				},
				Guards: []Guard{
					guard(TTFTP95, 0.1),
					guard(ErrorShare, 0.1),
				},
				Falsification: []Falsifier{
					{Kind: NoImprovement, Metric: Restarts, Text: "restarts continue with the previous version: the cause is the node, the load or a shared dependency"},
					{Kind: Inconsistent, Metric: Restarts, Text: "restarts move in different directions across repeats"},
				},
				WarmUp: 10 * minute,
			},
		},
		{
			ID:       ServerErrors,
			Title:    "the server or its gateway answers errors (5xx) or rate limits (429)",
			Observed: "http_requests_total 5xx or 429 share up, or finished_reason=error",
			Source:   "sections 2, 13 (symptom 4: not completing)",
			Explains: []SymptomID{SymptomReliability},
			Support: []Cond{
				symptom(SymptomReliability),
				anyOf(atLeast(HTTP5xxShare, limErrorShare), atLeast(HTTP429Share, limErrorShare), atLeast(ErrorShare, limErrorShare)),
			},
			Counter: []Counter{
				{"no 5xx, 429 or failed requests", allOf(below(HTTP5xxShare, limErrorShare), below(HTTP429Share, limErrorShare), below(ErrorShare, limErrorShare))},
			},
			Checks: []Check{
				auto("Do the 5xx come from one replica (its share well above the fleet's)?", ratioAtLeast(HTTP5xxShareMax, HTTP5xxShare, limHotspot)),
				{Text: "Are 429s answered (admission limits at work: see queue-sustained)?", When: ptr(atLeast(HTTP429Share, limErrorShare)), Neutral: true},
				auto("Did the replicas restart with the errors (see replica-restarts)?", above(Restarts, limAny)),
				manual("Read the API server logs for engine errors (EngineDeadError, CUDA errors, timeouts)"),
				manual("Does the gateway answer 5xx itself (upstream timeouts 504, no healthy upstream 503)?"),
			},
			Mitigations: []string{
				"route away from the failing replica",
				"restart it only after preserving its counters and logs",
				"roll back a recent server or gateway change",
			},
			RootCause: []string{
				"split the errors by replica, handler and status code",
				"match the first error with deployments, config changes and engine logs",
			},
			Prevention: []string{
				"alert on the 5xx share per replica, not only fleet-wide",
				"health checks that fail a replica whose engine is dead",
			},
			Experiment: Plan{
				Change: Change{Name: "failing replica", From: "in rotation", To: "out of rotation (drained)"},
				Expect: []Expectation{
					{Metric: HTTP5xxShare, Direction: Lower, MinEffect: 0.5},
				},
				Guards: []Guard{
					guard(TTFTP95, 0.1),
					guard(CompletionRate, 0.05),
				},
				Falsification: []Falsifier{
					{Kind: NoImprovement, Metric: HTTP5xxShare, Text: "5xx persist without that replica: the gateway or a shared dependency fails"},
					inconsistent(HTTP5xxShare, "the 5xx share"),
				},
				WarmUp: 5 * minute,
			},
		},
	}
	rs = append(rs, engineRules()...)
	rs = withDecodeRules(rs)
	rs = append(rs, dpRules()...)
	guardGauges(rs)
	for i := range rs {
		p := &rs[i].Experiment
		p.Hypothesis, p.Hold, p.Runs = string(rs[i].ID), held(), MinRuns
	}
	return rs
}

// observations are the counter-cases that must not read as incidents
// (sections 8 and 9).
func observations() []observation {
	all := []SymptomID{SymptomTTFT, SymptomTPOT, SymptomTail, SymptomReliability}
	return append([]observation{
		{
			id:    "kv-high-healthy",
			title: "KV usage high, no preemption, SLOs met",
			text:  "KV usage is high but nothing is preempted and no symptom shows: ~90% KV usage within SLO can be an efficient operating point, not an incident",
			when:  allOf(atLeast(KVUsageMax, limKVHigh), atMost(PreemptionRate, limPreemption), noSymptom(all...)),
		},
		{
			id:    "replica-slower",
			title: "one replica slower under an equal share",
			text:  "one replica's TTFT p95 is well above the fleet's while its share of the load is fair: a local cause on that replica (its preemptions, KV usage, version or configuration), not a hot spot; compare it with the others",
			when:  allOf(atLeast(ReplicaTTFTRatio, limHotspot), below(ReplicaLoadShareMax, limHotspot)),
		},
		{
			id:    "low-traffic",
			title: "GPU lightly used, no queue, SLOs met",
			text:  "GPU utilisation is low with no queue and no symptom: this is low traffic; design a capacity test to find how much more load fits within the SLO",
			when:  allOf(below(GPUUtilMean, limGPULow), below(WaitingMean, limQueueMin), noSymptom(all...)),
		},
	}, dpObservations()...)
}

// IncidentResponse holds the article's general steps (section 13), apart
// from any one hypothesis: incident response is not tuning.
type IncidentResponse struct {
	Mitigations []string
	RootCause   []string
	Prevention  []string
}

// General returns the general incident-response steps of section 13.
func General() IncidentResponse {
	return IncidentResponse{
		Mitigations: []string{
			"tighten admission or rate limits",
			"separate batch traffic for now",
			"apply the approved output and context caps",
			"restore routing to healthy replicas",
			"roll back to the last verified configuration",
		},
		RootCause: []string{
			"preserve the incident window's workload and configuration snapshots",
			"collect counters and logs before restarting pods",
			"replay a representative trace",
			"benchmark one variable at a time",
			"re-estimate the capacity sustainable within SLO",
		},
		Prevention: []string{
			"dashboards and alerts per workload type",
			"change records of configuration and image versions",
			"documented headroom and admission criteria",
			"regression benchmarks before and after upgrades",
			"manifests that can be rolled back",
		},
	}
}

// decodeBuiltQueue holds when a queue is the decode load's own: arrivals,
// prompts and the load spread steady, few preemptions, and each request's
// decode grew more than its first token (decode-pressure's exception to
// "TTFT normal").
func decodeBuiltQueue() Cond {
	return allOf(steady(ArrivalRate), steady(PromptTokensP95), below(ReplicaShareMax, limHotspot),
		below(PreemptionShare, limPreemptionShare), explainsRise(DecodeTimeMean, TTFTMean, limSame))
}

// queueGrew holds when requests wait longer or more of them wait.
func queueGrew() Cond {
	return anyOf(rises(QueueTimeP95), rises(QueueTimeMean), rises(WaitingMean))
}

// restMoved holds when the fleet without its hot replicas carries at
// least Explains of the fleet's rise, by the p95 or by the exact mean (a
// fleet mean is the replicas' means weighted by their requests:
// a hot spot alone moves it through the hot replicas only).
//
// It is judged on the symptom the fleet shows: TTFT, or TPOT where only
// the decode side moved (a decode replica hot in a prefill/decode fleet
// slows its own tokens, not the first ones). A TTFT that did not move
// materially says nothing about where a rise lies.
func restMoved() Cond {
	decodeOnly := allOf(symptom(SymptomTPOT), noSymptom(SymptomTTFT))
	return anyOf(
		allOf(not(decodeOnly), anyOf(explainsRise(TTFTP95WithoutHot, TTFTP95, limExplains), explainsRise(TTFTMeanWithoutHot, TTFTMean, limExplains))),
		allOf(symptom(SymptomTPOT), anyOf(explainsRise(TPOTP95WithoutHot, TPOTP95, limExplains), explainsRise(TPOTMeanWithoutHot, TPOTMean, limExplains))))
}

// fleetWide is replica-hotspot's ExplainedBy: every hypothesis whose cause
// reaches every replica explains the fleet's change when the fleet
// without the hot replicas moved too.
func fleetWide() []Explained {
	var xs []Explained
	for _, id := range []HypothesisID{QueueSustained, QueueBurst, PrefillLongPrompts, PrefixCacheLoss, DecodePressure, KVPreemption, OutsideGPU} {
		xs = append(xs, Explained{By: id, When: restMoved(),
			Why: "the fleet without the hot replicas carries most of the fleet's rise (of TTFT, or of TPOT where only the decode side moved): the hot spot does not explain the fleet's change and is secondary"})
	}
	return xs
}

func auto(text string, c Cond) Check { return Check{Text: text, When: &c} }
func manual(text string) Check       { return Check{Text: text} }
func ptr(c Cond) *Cond               { return &c }

// guard is the guard that metric m gets no worse than tol; which way m
// gets better is its catalog entry's (FactInfo.Better).
func guard(m FactID, tol float64) Guard {
	info, _ := Info(m)
	return Guard{Metric: m, Better: info.Better, Tolerance: tol}
}

// inconsistent is the falsifier that fires when metric m, named what in
// its text, moves in different directions across the repeats.
func inconsistent(m FactID, what string) Falsifier {
	return Falsifier{Kind: Inconsistent, Metric: m, Text: what + " moves in different directions across repeats"}
}
