package catalog

// Signals of speculative decoding, per-request preemptions and
// prefill/decode disaggregation (NIXL KV transfer). Names, types, labels
// and buckets are vLLM's own: vllm/v1/spec_decode/metrics.py
// (SpecDecodingProm: counters vllm:spec_decode_num_drafts,
// _num_draft_tokens, _num_accepted_tokens, and
// _num_accepted_tokens_per_pos with label position 0..k-1),
// vllm/v1/metrics/loggers.py (histogram vllm:request_num_preemptions,
// buckets 1, 2, 3, 4, 5, 10, 20, as a vLLM 0.30 capture shows),
// vllm/distributed/kv_transfer/kv_connector/v1/nixl (NixlPromMetrics:
// histogram vllm:nixl_xfer_time_seconds, buckets 0.005 … 5.0, and the
// counters vllm:nixl_num_failed_transfers, _num_failed_notifications,
// _num_kv_expired_reqs; every family per engine).
const (
	// SignalRequestPreemptions is the per-finished-request preemption
	// count (histogram; its first bucket le="1" holds 0 and 1 alike).
	SignalRequestPreemptions SignalID = "request_preemptions"
	// SignalSpecDrafts counts speculative draft rounds.
	SignalSpecDrafts SignalID = "spec_drafts"
	// SignalSpecDraftTokens counts proposed draft tokens.
	SignalSpecDraftTokens SignalID = "spec_draft_tokens"
	// SignalSpecAcceptedTokens counts accepted draft tokens.
	SignalSpecAcceptedTokens SignalID = "spec_accepted_tokens"
	// SignalSpecAcceptedPerPos counts accepted draft tokens by draft
	// position (label position).
	SignalSpecAcceptedPerPos SignalID = "spec_accepted_per_pos"
	// SignalKVTransferTime is the duration of each NIXL KV transfer
	// (histogram, seconds), observed by the instance that pulls the KV:
	// the decode instance of a P/D pair.
	SignalKVTransferTime SignalID = "kv_transfer_time"
	// SignalKVTransferFailures counts failed NIXL KV transfers.
	SignalKVTransferFailures SignalID = "kv_transfer_failures"
	// SignalKVExpired counts requests whose KV blocks expired on the
	// prefill instance before a decode instance fetched them.
	SignalKVExpired SignalID = "kv_transfer_expired"
	// SignalPromptTokensBySource splits prompt tokens by where their KV
	// came from (label source: local_compute, local_cache_hit,
	// external_kv_transfer).
	SignalPromptTokensBySource SignalID = "prompt_tokens_by_source"
)

// decodeSignals returns the specs of the signals above; src builds a
// candidate with its name history, nixl one whose history is unverified.
func decodeSignals(src func(metric, note string) Candidate) []SignalSpec {
	nixl := func(metric, note string) Candidate {
		return Candidate{Metric: metric, Versions: []VersionRange{{Engine: EngineV1}}, Scale: 1, Confidence: Unverified, Note: note}
	}
	counter := func(id SignalID, unit, split, desc string, c Candidate) SignalSpec {
		return SignalSpec{ID: id, Kind: KindCounter, Unit: unit, Aggregation: AggregateSum, SplitBy: split, Candidates: []Candidate{c}, Description: desc}
	}
	hist := func(id SignalID, unit, desc string, c Candidate) SignalSpec {
		return SignalSpec{ID: id, Kind: KindHistogram, Unit: unit, Aggregation: AggregateSum, Candidates: []Candidate{c}, Description: desc}
	}
	return []SignalSpec{
		hist(SignalRequestPreemptions, UnitCount,
			"Preemptions of each finished request (vLLM >= 0.30). Its first bucket le=\"1\" holds requests preempted "+
				"0 or 1 times: _count - bucket{le=\"1\"} is the requests preempted twice or more, _sum / _count the mean.",
			src("vllm:request_num_preemptions", "buckets 1, 2, 3, 4, 5, 10, 20")),
		counter(SignalSpecDrafts, UnitCount, "",
			"Speculative decoding draft rounds; 1 + accepted / drafts is the mean acceptance length.",
			src("vllm:spec_decode_num_drafts_total", "speculative decoding only")),
		counter(SignalSpecDraftTokens, UnitTokens, "",
			"Draft tokens proposed by speculative decoding; accepted / draft is the acceptance rate.",
			src("vllm:spec_decode_num_draft_tokens_total", "speculative decoding only")),
		counter(SignalSpecAcceptedTokens, UnitTokens, "",
			"Draft tokens accepted by the target model: fewer accepted per step means more steps per output token.",
			src("vllm:spec_decode_num_accepted_tokens_total", "speculative decoding only")),
		counter(SignalSpecAcceptedPerPos, UnitTokens, "position",
			"Accepted draft tokens by draft position (0 first); over drafts, the acceptance rate of each position.",
			src("vllm:spec_decode_num_accepted_tokens_per_pos_total", "speculative decoding only")),
		hist(SignalKVTransferTime, UnitSeconds,
			"Duration of each NIXL KV-cache transfer, observed where the KV is pulled (the decode instance): "+
				"a phase of the decode instance's TTFT in prefill/decode disaggregation.",
			nixl("vllm:nixl_xfer_time_seconds", "NIXL connector only; buckets 0.005 … 5.0")),
		counter(SignalKVTransferFailures, UnitCount, "",
			"Failed NIXL KV-cache transfers: the decode instance recomputes or fails the request.",
			nixl("vllm:nixl_num_failed_transfers_total", "NIXL connector only")),
		counter(SignalKVExpired, UnitRequests, "",
			"Requests whose KV blocks expired on the prefill instance before a decode instance pulled them (counted on the prefill instance).",
			nixl("vllm:nixl_num_kv_expired_reqs_total", "NIXL connector only, prefill instance")),
		counter(SignalPromptTokensBySource, UnitTokens, "source",
			"Prompt tokens by the origin of their KV: local_compute, local_cache_hit, external_kv_transfer "+
				"(a decode instance of a P/D pair receives most of its prompt by transfer).",
			src("vllm:prompt_tokens_by_source_total", "")),
	}
}
