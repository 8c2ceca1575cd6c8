package catalog

// Signals of the engine's progress and admission (issue 32), kept apart
// from the main list in Default: the queue split by reason, admission
// rejections and the engine's sleep state.
const (
	// SignalWaitingByReason splits the waiting gauge by why requests
	// wait (reason="capacity" or "deferred"); the reasons sum to
	// SignalWaiting.
	SignalWaitingByReason SignalID = "waiting_by_reason"
	// SignalAdmissionRejections counts requests refused at admission, by
	// reason (the queued-request and queued-token limits).
	SignalAdmissionRejections SignalID = "admission_rejections"
	// SignalSleepState is the engine's sleep state (label sleep_state;
	// awake = 0 means asleep).
	SignalSleepState SignalID = "sleep_state"
)

// engineSignals returns the specs of this file's signals, built with
// Default's candidate constructor src.
func engineSignals(src func(metric, note string) Candidate) []SignalSpec {
	// admission_rejections_total has no era in history: issue 32 lists it
	// among the names of vLLM 0.30-0.32, which this package has not
	// checked against vLLM's source.
	rejections := src("vllm:admission_rejections_total", "listed by issue 32 for vLLM 0.30-0.32; not checked against vLLM's source")
	rejections.Versions = []VersionRange{Since(EngineV1, mustVersion("0.30"))}
	rejections.Confidence = Unverified
	return []SignalSpec{
		{
			ID: SignalWaitingByReason, Kind: KindGauge, Unit: UnitRequests, Aggregation: AggregateSum, SplitBy: "reason",
			Description: "Waiting requests by reason: capacity = waiting for scheduling capacity; deferred = held by a transient " +
				"constraint (LoRA budget, KV transfer, blocked status). The reasons sum to num_requests_waiting, which " +
				"therefore counts deferred requests too.",
			Candidates: []Candidate{src("vllm:num_requests_waiting_by_reason", "")},
		},
		{
			ID: SignalAdmissionRejections, Kind: KindCounter, Unit: UnitRequests, Aggregation: AggregateSum, SplitBy: "reason",
			Description: "Requests rejected at admission (HTTP 503) by reason: the --max-num-queued-reqs limit and its token limit.",
			Candidates:  []Candidate{rejections},
		},
		{
			ID: SignalSleepState, Kind: KindGauge, Unit: UnitNone, Aggregation: AggregateNone,
			Description: "Engine sleep state as 0/1 flags by sleep_state (awake, weights_offloaded, discard_all): awake = 0 " +
				"means the engine sleeps on purpose, which is not an incident.",
			Candidates: []Candidate{src("vllm:engine_sleep_state", "")},
		},
	}
}
