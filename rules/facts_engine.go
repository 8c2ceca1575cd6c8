package rules

import "sort"

// Engine progress and admission facts: a stalled engine,
// gauges that stopped being measurements, a queue of deferred requests,
// and admission rejections. Package diagnose measures them per replica
// over the incident window. A "no-progress run" is a run of consecutive
// scrapes of one replica at which requests are in flight (waiting +
// running > 0) and none of its progress counters (vllm:request_success_total,
// vllm:generation_tokens_total, vllm:prompt_tokens_total) advanced between
// any two of them; a replica whose vllm:engine_sleep_state says it sleeps
// is never counted (a sleeping engine is not an incident).
const (
	// StalledReplicas is the number of replicas with a no-progress run of
	// several scrapes during which the gauges stayed measurements: waiting
	// or running moved, or an arrival signal advanced (waiting grew, or a
	// frontend request counter such as http_requests_total or an aliased
	// gateway counter moved): clients keep arriving at an engine that does
	// not serve them. Count is the longest run in scrapes; Source names the
	// replicas. Missing when no replica has several scrapes in the window.
	StalledReplicas FactID = "stalled_replicas"
	// FrozenGaugeReplicas is the number of replicas with a no-progress run
	// of several scrapes during which waiting, running and KV usage did not
	// move at all and no arrival signal advanced: either the gauges are no
	// longer measurements (stale-gauges) or an engine stalled while no
	// client arrived. Count is the longest run in scrapes.
	FrozenGaugeReplicas FactID = "frozen_gauge_replicas"
	// FrozenQuietReplicas is the number of frozen-gauge replicas whose
	// frontend request counter (http_requests_total or an aliased gateway
	// counter) exists and stayed flat: no client arrived, so the requests
	// the gauges show are not waiting for anyone (stale gauges, not a
	// stall). 0 when no such counter exists: then nothing tells the two
	// apart.
	FrozenQuietReplicas FactID = "frozen_quiet_replicas"
	// FrozenGaugeShare is the frozen-gauge replicas' share (0..1) of the
	// fleet's waiting + running, averaged over the window's scrapes: the
	// part of the queue and batch gauges that is not a measurement.
	FrozenGaugeShare FactID = "frozen_gauge_share"
	// StallSuspected is the number of replicas at whose last scrape in
	// the window requests wait while none runs (waiting > 0, running == 0)
	// and no progress counter advanced over the scrapes the window holds:
	// the operators' alert (waiting > 0 and running == 0 for 10 minutes)
	// read at one instant. From a single scrape it is a suspicion only: one
	// scrape cannot show flat counters (Source says so).
	StallSuspected FactID = "stall_suspected"
	// DeferredShare is the share (0..1) of the fleet's waiting requests
	// that vLLM defers (vllm:num_requests_waiting_by_reason{reason="deferred"}
	// over vllm:num_requests_waiting, whose reasons sum to it), over the
	// window's scrapes at which requests waited: deferred requests wait for
	// a transient constraint (LoRA budget, KV transfer, a blocked status),
	// not for scheduling capacity.
	DeferredShare FactID = "deferred_share"
	// DeferralQueueShare is the share (0..1) of the fleet's waiting
	// requests, over the window's scrapes, found on a replica that deferred
	// requests at that scrape or at its previous one: the deferred requests
	// and the backlog a release hands to the scheduler at once, which then
	// waits for capacity it would not have needed. Near deferred_share when
	// deferral and an ordinary queue are unrelated; near 1 when the queue
	// comes and goes with the deferral episodes.
	DeferralQueueShare FactID = "deferral_queue_share"
	// AdmissionRejectionShare is the share (0..1) of requests the engine
	// refused at admission (vllm:admission_rejections_total, any reason:
	// --max-num-queued-reqs and its token limit) over those refused plus
	// those finished in the window: the cause behind HTTP 503s.
	AdmissionRejectionShare FactID = "admission_rejection_share"
)

// engineFacts documents the facts of this file.
var engineFacts = []FactInfo{
	{StalledReplicas, KindDerived, "count", Lower, "replicas where requests wait and nothing progresses over several scrapes, gauges live"},
	{FrozenGaugeReplicas, KindDerived, "count", Lower, "replicas whose gauges and counters did not move over several scrapes with requests shown in flight"},
	{FrozenQuietReplicas, KindDerived, "count", Lower, "frozen-gauge replicas whose frontend request counter stayed flat (no client arrived)"},
	{FrozenGaugeShare, KindGauge, "ratio", Lower, "frozen-gauge replicas' share of the fleet's waiting + running"},
	{StallSuspected, KindGauge, "count", Lower, "replicas with waiting > 0 and running == 0 at the last scrape, counters flat"},
	{DeferredShare, KindGauge, "ratio", Lower, "share of waiting requests deferred (num_requests_waiting_by_reason)"},
	{DeferralQueueShare, KindGauge, "ratio", Lower, "share of waiting requests on replicas deferring at that scrape or the one before"},
	{AdmissionRejectionShare, KindRate, "ratio", Lower, "requests rejected at admission / (rejected + finished)"},
}

func init() {
	catalog = append(catalog, engineFacts...)
	sort.Slice(catalog, func(i, j int) bool { return catalog[i].ID < catalog[j].ID })
}

// limMajority is "more than half": the share at which deferred requests
// carry the queue, or frozen replicas carry the gauges the queue and KV
// rows read. Half is where a reading is mostly one thing, not a tuned
// limit.
var limMajority = limit{"majority", func(Thresholds) float64 { return 0.5 }}
