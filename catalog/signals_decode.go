package catalog

import "github.com/whyslow/whyslow/snapshot"

// SignalKVExpired counts requests whose KV blocks expired on the prefill
// instance before a decode instance fetched them (NIXL connector,
// vllm/distributed/kv_transfer/kv_connector/v1/nixl: NixlPromMetrics'
// counter vllm:nixl_num_kv_expired_reqs). The other NIXL, speculative
// decoding and preemption signals are in Default's list.
const SignalKVExpired SignalID = "kv_transfer_expired"

// decodeSignals returns the spec of SignalKVExpired; its first release
// is unverified.
func decodeSignals() []SignalSpec {
	return []SignalSpec{{
		ID: SignalKVExpired, Kind: KindCounter, Unit: UnitRequests, Aggregation: snapshot.AggregateSum,
		Description: "Requests whose KV blocks expired on the prefill instance before a decode instance pulled them (counted on the prefill instance).",
		Candidates: []Candidate{{Metric: "vllm:nixl_num_kv_expired_reqs_total", Versions: []VersionRange{{Engine: EngineV1}}, Scale: 1,
			Confidence: Unverified, Note: "NIXL connector only, prefill instance"}},
	}}
}
