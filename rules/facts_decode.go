package rules

import "sort"

// Facts of the decode-side hypotheses: repeated preemption of the same
// requests (vllm:request_num_preemptions, vLLM 0.29 or 0.30 on; see docs/inputs.md), speculative
// decoding acceptance (vllm:spec_decode_*) and prefill/decode
// disaggregation (NIXL KV transfer, instance roles).
const (
	// RepeatPreemptedShare is the share (0..1) of finished requests
	// preempted twice or more: (_count - bucket{le="1"}) / _count of
	// vllm:request_num_preemptions over the window (its first bucket holds
	// 0 and 1 alike). Count is the finished requests.
	RepeatPreemptedShare FactID = "repeat_preempted_share"
	// RepeatPreemptionShare is the share (0..1) of the window's
	// preemptions that fell on requests preempted twice or more: their
	// preemptions by the histogram's buckets (2, 3, 4 and 5 exact, the
	// wider buckets at their lower ends) over _sum. Value is that lower
	// bound; Upper counts the wider buckets at their upper ends. Near 1, a
	// few requests are preempted again and again (thrash); low, the
	// preemptions are spread over many requests once each. Count is the
	// preemptions (_sum).
	RepeatPreemptionShare FactID = "repeat_preemption_share"
	// PreemptedShare is the share (0..1) of finished requests preempted
	// at least once: those preempted twice or more, plus the preemptions
	// the repeated ones do not carry (one each). Value is the upper bound
	// (the repeated requests' preemptions at their buckets' lower ends),
	// Lower the lower bound. Few requests touched, most preemptions on
	// the repeated ones: thrash; many touched: a KV shortage for everyone.
	// Count is the finished requests.
	PreemptedShare FactID = "preempted_share"
	// PreemptedShareLower is PreemptedShare's lower bound alone (0..1):
	// the share of finished requests certainly preempted, the repeated
	// requests' preemptions taken at their buckets' upper ends (at least
	// the share preempted twice or more, which is exact). It says whether
	// many requests were preempted for certain, which the upper bound
	// cannot.
	PreemptedShareLower FactID = "preempted_share_lower"
	// PreemptionsPerRequestMean is the mean number of preemptions per
	// finished request (_sum / _count of vllm:request_num_preemptions).
	PreemptionsPerRequestMean FactID = "preemptions_per_request_mean"
	// SpecAcceptanceRate is the speculative-decoding acceptance rate
	// (0..1): increase of vllm:spec_decode_num_accepted_tokens_total over
	// that of vllm:spec_decode_num_draft_tokens_total. Count is the draft
	// tokens.
	SpecAcceptanceRate FactID = "spec_acceptance_rate"
	// SpecAcceptanceLength is the mean tokens a speculative step emits per
	// sequence: 1 + accepted tokens / drafts (vLLM's "mean acceptance
	// length"). Decode time per output token scales with its inverse at a
	// given step time.
	SpecAcceptanceLength FactID = "spec_acceptance_length"
	// SpecPos0Acceptance is the acceptance rate (0..1) of the first draft
	// position: vllm:spec_decode_num_accepted_tokens_per_pos_total
	// {position="0"} over drafts. A drafter that misses from the first
	// token wastes the whole draft.
	SpecPos0Acceptance FactID = "spec_pos0_acceptance"
	// KVTransferTimeMean is the mean duration (s) of a NIXL KV transfer
	// (_sum / _count of vllm:nixl_xfer_time_seconds): on the decode
	// instances of a prefill/decode pair, a phase of their TTFT. Count is
	// the transfers.
	KVTransferTimeMean FactID = "kv_transfer_time_mean"
	// KVTransferFailureShare is failed NIXL transfers over all transfers
	// (0..1): vllm:nixl_num_failed_transfers_total over itself plus the
	// transfers observed by vllm:nixl_xfer_time_seconds.
	KVTransferFailureShare FactID = "kv_transfer_failure_share"
	// PDDecodeReplicas is the number of the scope's replicas that act as
	// decode instances of prefill/decode disaggregation; Source says how
	// each role was told (a role label, or the shape of the metrics:
	// NIXL transfers observed, prompt tokens received by KV transfer).
	PDDecodeReplicas FactID = "pd_decode_replicas"
	// PDPrefillReplicas is the number of the scope's replicas that act as
	// prefill instances (a role label, or finished requests of one output
	// token each).
	PDPrefillReplicas FactID = "pd_prefill_replicas"
	// TTFTMeanDecodeRole is the mean TTFT (s, _sum / _count) of the
	// decode instances alone. It starts when the decode instance receives
	// the request, after the prefill instance has prefilled it: it
	// under-reports the user's TTFT (vLLM #29474) and holds the KV
	// transfer as a phase.
	TTFTMeanDecodeRole FactID = "ttft_mean_decode_role"
)

// decodeCatalog documents the facts above.
var decodeCatalog = []FactInfo{
	{RepeatPreemptedShare, KindRate, "ratio", Lower, "share of finished requests preempted twice or more"},
	{RepeatPreemptionShare, KindDerived, "ratio", Lower, "share of preemptions on requests preempted twice or more (lower bound)"},
	{PreemptedShare, KindDerived, "ratio", Lower, "share of finished requests preempted at least once (upper bound)"},
	{PreemptedShareLower, KindDerived, "ratio", Lower, "share of finished requests certainly preempted at least once (lower bound)"},
	{PreemptionsPerRequestMean, KindMean, "count", Lower, "mean preemptions per finished request"},
	{SpecAcceptanceRate, KindRate, "ratio", Higher, "accepted / draft tokens of speculative decoding"},
	{SpecAcceptanceLength, KindRate, "x", Higher, "1 + accepted tokens / drafts: tokens per speculative step"},
	{SpecPos0Acceptance, KindRate, "ratio", Higher, "acceptance rate of the first draft position"},
	{KVTransferTimeMean, KindMean, "s", Lower, "mean NIXL KV transfer time"},
	{KVTransferFailureShare, KindRate, "ratio", Lower, "failed NIXL KV transfers / transfers"},
	{PDDecodeReplicas, KindDerived, "count", "", "replicas acting as decode instances (P/D disaggregation)"},
	{PDPrefillReplicas, KindDerived, "count", "", "replicas acting as prefill instances (P/D disaggregation)"},
	{TTFTMeanDecodeRole, KindMean, "s", Lower, "mean TTFT of the decode instances (under-reports: prefill excluded)"},
}

func init() {
	catalog = append(catalog, decodeCatalog...)
	sort.Slice(catalog, func(i, j int) bool { return catalog[i].ID < catalog[j].ID })
}
