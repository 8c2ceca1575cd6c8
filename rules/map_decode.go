package rules

import "slices"

// Rows of the decision map for incidents the article's table does not
// name but today's vLLM tells apart: the same requests
// preempted again and again, speculative decoding that stops paying off,
// and the KV transfer of prefill/decode disaggregation.
const (
	// PreemptionThrash: a minority of requests preempted again and again
	// (long chunked prefills admitted, preempted and readmitted on a small
	// KV pool; vLLM #18115, #21809, #37307).
	PreemptionThrash HypothesisID = "preemption-thrash"
	// SpecDecodeAcceptance: TPOT/ITL up because fewer draft tokens are
	// accepted, not because of decode load.
	SpecDecodeAcceptance HypothesisID = "spec-decode-acceptance"
	// PDKVTransfer: in prefill/decode disaggregation, the KV transfer from
	// the prefill to the decode instance slows the first token.
	PDKVTransfer HypothesisID = "pd-kv-transfer"
)

// transfersFail holds when a material share of the KV transfers failed,
// more than in the baseline, while the first tokens grew later (the
// decode instances', or the fleet's where they are not told apart).
func transfersFail() Cond {
	return allOf(atLeast(KVTransferFailureShare, limErrorShare), rises(KVTransferFailureShare), anyOf(rises(TTFTMeanDecodeRole), rises(TTFTMean)))
}

// withDecodeRules returns rs with the rows of this file appended, and
// failing KV transfers as what explains the consequences of their
// recompute (recomputeReaders).
func withDecodeRules(rs []Rule) []Rule {
	for i := range rs {
		if slices.Contains(recomputeReaders, rs[i].ID) {
			rs[i].ExplainedBy = append(rs[i].ExplainedBy, Explained{By: PDKVTransfer, When: transfersFail(),
				Why: "KV transfers failed and the decode instances computed those prompts themselves: their prefills miss the prefix cache, share the batch with decoding and fill it"})
		}
	}
	return append(rs, decodeRules()...)
}

// recomputeReaders are the hypotheses whose evidence a decode instance
// that recomputes the prompts of failed KV transfers produces: prefix
// reuse lost (its prefills query its own cache and miss), decode steps
// that carry prefills, a fuller batch and KV pool, a queue behind them.
var recomputeReaders = []HypothesisID{PrefixCacheLoss, DecodePressure, KVPreemption, QueueSustained, PrefillLongPrompts}

// decodeRules returns the rows of this file.
func decodeRules() []Rule {
	return []Rule{
		{
			ID:       PreemptionThrash,
			Title:    "the same requests preempted again and again (preemption thrash)",
			Observed: "preemptions material + most of them on the few requests preempted twice or more",
			Source:   "section 8 (case D, a few long requests); vLLM #18115, #21809, #37307",
			Explains: []SymptomID{SymptomTail, SymptomTTFT, SymptomTPOT, SymptomReliability},
			Support: []Cond{
				symptom(SymptomTail, SymptomTTFT, SymptomTPOT),
				above(PreemptionRate, limPreemption),
				atLeast(PreemptionShare, limPreemptionShare),
				// vllm:request_num_preemptions: at least half of the
				// preemptions (a lower bound) fell on requests preempted
				// twice or more.
				atLeast(RepeatPreemptionShare, limExplains),
				// A minority: the requests certainly preempted are fewer
				// than a preemption storm would preempt (else the pool is
				// short for everyone, and the repeats are its side
				// effect). The histogram cannot say how many of the
				// preemptions beside the repeats' certain half fell once
				// each on other requests: read as possibly many, that
				// share's upper bound would let the collateral of a thrash
				// decide against it; the lower bound decides only what
				// the buckets show.
				below(PreemptedShareLower, limPreemptionStorm),
			},
			Counter: []Counter{
				{"requests preempted twice or more carry less than half of the preemptions: they are spread over many requests, about once each (see kv-preemption)",
					below(RepeatPreemptionShare, limExplains)},
				{"many requests certainly preempted (the pool is short for everyone: see kv-preemption)",
					atLeast(PreemptedShareLower, limPreemptionStorm)},
			},
			Checks: []Check{
				auto("Is it a minority of the finished requests that is preempted twice or more?", below(RepeatPreemptedShare, limExplains)),
				auto("Were few requests preempted at all, even counting every preemption the repeats may not carry as one request preempted once (upper bound)?", below(PreemptedShare, limPreemptionStorm)),
				auto("Is KV usage high (a pool too small for the long requests admitted together)?", atLeast(KVUsageMax, limKVHigh)),
				{Text: "Did long prompts grow (long chunked prefills admitted, preempted and readmitted)?", When: ptr(anyOf(rises(PromptTokensP95), rises(PromptTokensP99))), Neutral: true},
				manual("Find the repeatedly preempted requests in the logs or traces: are they the longest prompts or the longest answers?"),
				manual("Is the token budget (max_num_batched_tokens) large enough that one long prompt's chunks and the running batch outgrow the KV pool together?"),
				manual("A preempted request is readmitted first and recomputes its prefill: compare prompt_tokens_by_source / request_prefill_kv_computed_tokens with the prompts to size the recompute"),
			},
			Mitigations: []string{
				"cap the admission of long prompts: fewer concurrent long prefills (max_num_partial_prefills / long_prefill_token_threshold where available) or a lower max_num_batched_tokens",
				"route very long prompts to a pool with more KV memory",
				"lower max_num_seqs so that admitted requests keep their blocks",
			},
			RootCause: []string{
				"split the finished requests by preemption count and prompt and output length: which requests thrash?",
				"replay the trace with the long-prefill cap, then with more KV memory, one change at a time: thrash that stops only with more memory is plain kv-preemption",
			},
			Prevention: []string{
				"alert on requests preempted twice or more (_count - bucket{le=\"1\"} of vllm:request_num_preemptions), not only on the preemption rate",
				"load-test the longest approved prompts at production concurrency on the production KV size",
			},
			Experiment: Plan{
				Change: Change{Name: "concurrent long prefills", From: "unbounded", To: "one per replica"},
				Expect: []Expectation{
					{Metric: RepeatPreemptionShare, Direction: Lower, MinEffect: 0.3},
					{Metric: E2EP99, Direction: Lower, MinEffect: 0.1},
				},
				Guards: []Guard{
					guard(TTFTP95, 0.2),
					guard(GenerationTokenRate, 0.05),
				},
				Falsification: []Falsifier{
					{Kind: NoImprovement, Metric: RepeatPreemptionShare, Text: "requests are still preempted repeatedly with long prefills capped: the pool is too small for ordinary concurrency (kv-preemption)"},
					{Kind: NoImprovement, Metric: E2EP99, Text: "repeated preemption falls but E2E p99 does not improve: recompute was not the cost"},
					inconsistent(E2EP99, "E2E p99"),
				},
				WarmUp: 5 * minute,
			},
			// Thrash is kv-preemption's few-long-requests case: its
			// mitigation (cap long-prefill admission) differs from more KV.
			Refines: []HypothesisID{KVPreemption, DecodePressure, QueueSustained, PrefillLongPrompts},
		},
		{
			ID:       SpecDecodeAcceptance,
			Title:    "speculative decoding accepts fewer draft tokens",
			Observed: "TPOT/ITL up + draft acceptance down, not more decode load",
			Source:   "section 7 (case C: what else slows every step)",
			Explains: []SymptomID{SymptomTPOT, SymptomTail},
			Support: []Cond{
				symptom(SymptomTPOT),
				// Fewer accepted tokens per step: more steps per output
				// token at the same step time.
				anyOf(falls(SpecAcceptanceRate), falls(SpecAcceptanceLength)),
			},
			Counter: []Counter{
				{"draft acceptance steady", allOf(steady(SpecAcceptanceRate), not(falls(SpecAcceptanceLength)))},
			},
			Checks: []Check{
				auto("Did the arrivals stay steady (no more decode load from demand)?", steady(ArrivalRate)),
				auto("Did the output lengths stay steady?", steady(GenerationTokensP95)),
				auto("Did the first draft position's acceptance fall (the drafter misses from the first token)?", falls(SpecPos0Acceptance)),
				{Text: "Did running sequences grow (slower decode keeps requests longer at the same arrivals)?", When: ptr(rises(RunningMean)), Neutral: true},
				manual("Did the traffic mix change (language, task, sampling temperature)? A drafter tuned on one mix misses on another"),
				manual("Did the draft model, its version or num_speculative_tokens change?"),
			},
			Mitigations: []string{
				"lower num_speculative_tokens, or turn speculative decoding off for the affected traffic",
				"route the traffic whose acceptance fell to a pool without speculative decoding",
			},
			RootCause: []string{
				"split the acceptance rate by model, task and sampling settings: which traffic stopped matching the drafter?",
				"compare the draft model and speculative configuration before and after the change",
			},
			Prevention: []string{
				"alert on the acceptance rate (rate of accepted / draft tokens) per model next to TPOT",
				"benchmark acceptance on a new traffic mix before it reaches a pool with speculative decoding",
			},
			Experiment: Plan{
				Change: Change{Name: "num_speculative_tokens", From: "current", To: "0 (speculative decoding off)"},
				Expect: []Expectation{
					{Metric: TPOTP95, Direction: Lower, MinEffect: 0.1},
				},
				Guards: []Guard{
					guard(TTFTP95, 0.1),
					guard(CompletionRate, 0.05),
				},
				Falsification: []Falsifier{
					{Kind: NoImprovement, Metric: TPOTP95, Text: "TPOT p95 does not improve without speculative decoding: the drafts were not the cost"},
					inconsistent(TPOTP95, "TPOT p95"),
				},
				WarmUp: 5 * minute,
			},
			// Slower steps keep requests running longer at the same
			// arrivals: the batch grows as a consequence.
			Refines: []HypothesisID{DecodePressure},
			// More demand (arrivals, longer answers) that grew the batch
			// is decode load, whatever the drafts did.
			ExplainedBy: []Explained{{By: DecodePressure,
				When: allOf(rises(RunningMean), anyOf(rises(ArrivalRate), rises(GenerationTokensP95))),
				Why:  "the batch grew with more demand (arrivals or longer answers): decode load, the lower acceptance a side effect"}},
		},
		{
			ID:       PDKVTransfer,
			Title:    "KV transfer between prefill and decode instances slows the first token",
			Observed: "P/D disaggregation + TTFT up + NIXL transfer time up, or transfers failing",
			Source:   "sections 3, 6 (TTFT phases); vLLM #29474",
			Explains: []SymptomID{SymptomTTFT, SymptomTail, SymptomReliability},
			Support: []Cond{
				symptom(SymptomTTFT, SymptomTail),
				above(PDDecodeReplicas, limAny),
				anyOf(
					// The transfer is a phase of the decode instances'
					// TTFT: its rise carries much of theirs (or the
					// fleet's).
					allOf(rises(KVTransferTimeMean),
						anyOf(explainsRise(KVTransferTimeMean, TTFTMeanDecodeRole, limExplains), explainsRise(KVTransferTimeMean, TTFTMean, limExplains))),
					// Or transfers fail: the decode instance finds the
					// blocks invalid when the read ends and computes the
					// prompt itself (vLLM's KV load failure recovery), so
					// its first tokens wait for a second prefill.
					transfersFail()),
			},
			Counter: []Counter{
				{"KV transfer time steady and transfers do not fail", allOf(steady(KVTransferTimeMean), below(KVTransferFailureShare, limErrorShare))},
			},
			Checks: []Check{
				auto("Do KV transfers fail (the decode instance recomputes or fails the request)?", atLeast(KVTransferFailureShare, limErrorShare)),
				auto("Are the prefill instances told apart (else prefill and decode TTFT are mixed in the fleet's)?", above(PDPrefillReplicas, limAny)),
				{Text: "Did prompts grow (more KV to move per request)?", When: ptr(anyOf(rises(PromptTokensP95), rises(PromptTokensP99))), Neutral: true},
				manual("TTFT measured on a decode instance starts after the prefill instance finished: it under-reports the user's TTFT (vLLM #29474); read the router's or gateway's TTFT for the whole"),
				manual("Check the transport: NIXL backend (UCX, RDMA vs TCP fallback), NIC errors, cross-node vs same-node pairs"),
			},
			Mitigations: []string{
				"pair prefill and decode instances within one node or rack, or move traffic to pairs whose transfers are fast",
				"fall back to aggregated serving for short prompts, where the transfer costs more than it saves",
			},
			RootCause: []string{
				"compare the transfer time per byte (vllm:nixl_bytes_transferred) before and after: slower links or more bytes?",
				"where transfers fail, find which prefill/decode pairs fail (vllm:nixl_num_failed_transfers per decode instance) and the error in their logs",
				"check the NIXL/UCX transport in the decode instances' logs (RDMA disabled, TCP fallback)",
			},
			Prevention: []string{
				"alert on vllm:nixl_xfer_time_seconds and the NIXL failure counters per decode instance",
				"keep prefill and decode instances in separate panels: one fleet histogram mixes their TTFT",
			},
			Experiment: Plan{
				Change: Change{Name: "prefill/decode placement", From: "current", To: "pairs on the same node (or a fast transport)"},
				Expect: []Expectation{
					{Metric: KVTransferTimeMean, Direction: Lower, MinEffect: 0.3},
					{Metric: TTFTMeanDecodeRole, Direction: Lower, MinEffect: 0.1},
				},
				Guards: []Guard{
					guard(TPOTP95, 0.1),
					guard(ErrorShare, 0.1),
				},
				Falsification: []Falsifier{
					{Kind: NoImprovement, Metric: KVTransferTimeMean, Text: "the transfer time does not fall with closer pairs: the bytes per request grew, not the link"},
					{Kind: NoImprovement, Metric: TTFTMeanDecodeRole, Text: "transfers got faster but the decode instances' TTFT did not improve"},
					inconsistent(KVTransferTimeMean, "the KV transfer time"),
				},
				WarmUp: 5 * minute,
			},
			// Requests waiting for their KV wait in the decode instance's
			// queue.
			Refines: []HypothesisID{QueueSustained},
			// Longer prompts move more KV: the transfer is slower because
			// the prompts are longer.
			ExplainedBy: []Explained{{By: PrefillLongPrompts,
				When: anyOf(rises(PromptTokensP95), rises(PromptTokensP99)),
				Why:  "prompts got longer: more KV to move per request, the slower transfer a consequence"}},
		},
	}
}
