package rules

import (
	"fmt"
	"slices"
)

// Hypotheses of the engine's own progress and admission, from
// operators' incidents rather than the article's cases A-E.
const (
	// EngineStall: requests wait while the engine runs or completes
	// nothing, over several scrapes; /health may still answer 200.
	EngineStall HypothesisID = "engine-stall"
	// StaleGauges: the scheduler gauges froze at busy values while every
	// counter stayed flat: they are no longer measurements.
	StaleGauges HypothesisID = "stale-gauges"
	// AdmissionDeferral: the queue is requests vLLM defers (LoRA budget,
	// KV transfer, a blocked status), not requests waiting for capacity.
	AdmissionDeferral HypothesisID = "admission-deferral"
	// AdmissionRejections: the engine refuses requests at admission
	// (--max-num-queued-reqs and its token limit): the cause of HTTP 503s.
	AdmissionRejections HypothesisID = "admission-rejections"
)

// engineRules returns the rows of the engine's progress and admission.
// Their support reads the facts of facts_engine.go; the rows that read
// the queue and KV gauges get counter-evidence for frozen gauges and for a
// queue of deferred requests (guardGauges).
func engineRules() []Rule {
	progress := anyOf(above(StalledReplicas, limAny), above(FrozenGaugeReplicas, limAny))
	return []Rule{
		{
			ID:       EngineStall,
			Title:    "the engine stalled: requests wait and nothing runs or completes",
			Observed: "waiting > 0 with running == 0, or completions and generated tokens flat while requests wait, over several scrapes; KV low",
			Source:   "operators' incidents: vLLM issues #45388, #45414 (/health answers 200 while the engine serves nothing); the alert waiting > 0 and running == 0 for 10 minutes",
			Explains: []SymptomID{SymptomReliability, SymptomTTFT, SymptomTail},
			Support: []Cond{
				symptom(SymptomReliability, SymptomTTFT, SymptomTail),
				// Several scrapes without progress, or one scrape with
				// requests waiting and none running (a suspicion).
				anyOf(progress, above(StallSuspected, limAny)),
			},
			Counter: []Counter{
				{"completions and generated tokens advance on every replica where requests wait",
					allOf(atMost(StalledReplicas, limAny), atMost(FrozenGaugeReplicas, limAny), atMost(StallSuspected, limAny))},
				{"the gauges are frozen and no client arrives (frontend request counters flat): stale gauges, not a stall (see stale-gauges)",
					allOf(above(FrozenQuietReplicas, limAny), atMost(StalledReplicas, limAny))},
			},
			Checks: []Check{
				auto("Did completions and generated tokens stay flat over several scrapes (a single scrape cannot show flat counters)?", progress),
				auto("Do clients keep arriving (waiting grows or a frontend request counter advances)? Without an arrival signal the gauges may be frozen instead (see stale-gauges)", above(StalledReplicas, limAny)),
				{Text: "Is KV usage low (nothing holds the cache: not a KV shortage)?", When: ptr(below(KVUsageMax, limKVHigh)), Neutral: true},
				auto("Are the waiting requests waiting for capacity, not deferred at admission? A deferral holds them without running any as a stall does (see admission-deferral); only num_requests_waiting_by_reason tells the two apart", not(deferralHolds())),
				manual("Does /health still answer 200 (vLLM #45388, #45414)? Alert on waiting > 0 and running == 0 for 10 minutes, not on /health alone"),
				manual("Read the engine core's log for its last scheduled step, and dump its stack (py-spy dump) before restarting"),
				manual("Do the stuck requests use structured output (a grammar compilation that never ends) or a KV-offload connector (loads that never complete)?"),
			},
			Mitigations: []string{
				"restart the stalled engine (after saving its log, a stack dump and its counters)",
				"route away from the stalled replica until it serves again",
			},
			RootCause: []string{
				"find where the scheduler stopped: the last step in the engine log and the stack dump",
				"check structured-output requests (grammar compilation) and KV-offload loads among the stuck requests",
				"reproduce on one replica with the stuck requests' parameters, one setting at a time",
			},
			Prevention: []string{
				"alert on waiting > 0 and running == 0 (or completions flat while requests wait) for 10 minutes",
				"a liveness probe that checks engine progress, not only that the API server answers",
			},
			Experiment: Plan{
				Change: Change{Name: "stalled engine", From: "running", To: "restarted"},
				Expect: []Expectation{
					{Metric: CompletionRate, Direction: Higher, MinEffect: 0.5},
					{Metric: StalledReplicas, Direction: Lower, MinEffect: 0.5},
				},
				Guards: []Guard{
					guard(ErrorShare, 0.1),
				},
				Falsification: []Falsifier{
					{Kind: NoImprovement, Metric: CompletionRate, Text: "completions do not resume after the restart: the engine is blocked by something outside it (a dependency, the GPU, the node)"},
					inconsistent(CompletionRate, "the completion rate"),
				},
				WarmUp: 5 * minute,
			},
			// A stalled engine queues every arrival (a capacity of zero),
			// idles its GPU while work waits, and makes clients give up
			// or the gateway answer errors.
			Refines: []HypothesisID{QueueSustained, QueueBurst, OutsideGPU, ClientAbandonment, ServerErrors},
		},
		{
			ID:       StaleGauges,
			Title:    "the scheduler gauges froze: they are no longer measurements",
			Observed: "waiting, running and KV usage fixed at busy values while every counter is flat",
			Source:   "operators' incidents: vLLM issues #22545, #29928 (running 106, waiting 15, KV 90% after all clients aborted, zero throughput)",
			Explains: []SymptomID{SymptomReliability},
			Support: []Cond{
				symptom(SymptomReliability),
				above(FrozenGaugeReplicas, limAny),
			},
			Counter: []Counter{
				{"the counters advance, or the gauges move (they are measurements)", atMost(FrozenGaugeReplicas, limAny)},
			},
			Checks: []Check{
				auto("Did every counter stay flat over several scrapes while the gauges did not move?", above(FrozenGaugeReplicas, limAny)),
				auto("Did the frontend's request counters stay flat too (no client arrived: nobody waits on this engine)?", above(FrozenQuietReplicas, limAny)),
				manual("Were the clients aborted or disconnected all at once just before (vLLM #22545, #29928)?"),
				manual("Send one request: is it served (stale gauges), or does it wait too (see engine-stall)?"),
			},
			Mitigations: []string{
				"do not scale, shed load or tune KV for these readings: they are not measurements",
				"send one probe request; if it is served, silence the gauge-based alerts of this replica until it restarts",
			},
			RootCause: []string{
				"line up the last client aborts with the moment the gauges stopped moving",
				"compare the gauges with the engine log's own periodic stats line",
				"check the vLLM version against the fixes of #22545 and #29928",
			},
			Prevention: []string{
				"alert on gauges only together with a counter that moves (completions, tokens)",
				"restart or upgrade replicas whose gauges froze after mass aborts",
			},
			Experiment: Plan{
				Change: Change{Name: "replica with frozen gauges", From: "running", To: "restarted"},
				Expect: []Expectation{
					{Metric: FrozenGaugeReplicas, Direction: Lower, MinEffect: 0.5},
				},
				Guards: []Guard{
					guard(ErrorShare, 0.1),
				},
				Falsification: []Falsifier{
					{Kind: NoImprovement, Metric: FrozenGaugeReplicas, Text: "the gauges freeze again at once: the engine is stuck, not its metrics (see engine-stall)"},
					inconsistent(FrozenGaugeReplicas, "the frozen replicas"),
				},
				WarmUp: 5 * minute,
			},
		},
		{
			ID:       AdmissionDeferral,
			Title:    "requests are deferred at admission, not waiting for capacity",
			Observed: "num_requests_waiting_by_reason{reason=\"deferred\"} carries the queue while KV usage is low",
			Source:   "operators' incidents: vLLM issue #53130 (waiting 92 -> 487 deferred, zero completions, KV ~20%)",
			Explains: []SymptomID{SymptomTTFT, SymptomTail, SymptomReliability},
			Support: []Cond{
				symptom(SymptomTTFT, SymptomTail, SymptomReliability),
				// Deferred requests carry the queue, or the queue comes
				// and goes with the deferral episodes (the backlog a
				// release hands to the scheduler waits for capacity).
				deferralHolds(),
				// Deferred with the cache full is KV pressure's story.
				below(KVUsageMax, limKVHigh),
			},
			Counter: []Counter{
				{"the waiting requests wait for scheduling capacity, not deferred", not(deferralHolds())},
			},
			Checks: []Check{
				auto("Did the engine stop completing while requests were deferred?", anyOf(above(StalledReplicas, limAny), above(StallSuspected, limAny))),
				auto("Is KV usage low (the deferral is not KV space)?", below(KVUsageMax, limKVHigh)),
				manual("Which constraint defers them: the LoRA budget (max_loras: lora_requests_info's waiting_lora_adapters), a KV transfer (P/D connector), or a blocked status?"),
				manual("Do the deferred requests share an adapter, a tenant or a connector?"),
			},
			Mitigations: []string{
				"route the deferred requests' adapter or workload to replicas that can serve it",
				"raise the constraint that defers them within the approved range (e.g. max_loras), or restart a connector that stopped transferring",
			},
			RootCause: []string{
				"split the deferred requests by adapter, tenant and connector, and find the constraint that holds them",
				"replay the incident's request mix on one replica with the constraint relaxed, one setting at a time",
			},
			Prevention: []string{
				"alert on num_requests_waiting_by_reason{reason=\"deferred\"} apart from the capacity queue",
				"size the LoRA budget and KV-transfer capacity from the adapter and P/D mix",
			},
			Experiment: Plan{
				Change: Change{Name: "the deferring constraint (e.g. max_loras)", From: "current", To: "one step higher"},
				Expect: []Expectation{
					{Metric: DeferredShare, Direction: Lower, MinEffect: 0.5},
					{Metric: TTFTP95, Direction: Lower, MinEffect: 0.2},
				},
				Guards: []Guard{
					guard(TPOTP95, 0.1),
					guard(ErrorShare, 0.1),
				},
				Falsification: []Falsifier{
					{Kind: NoImprovement, Metric: DeferredShare, Text: "requests stay deferred with the constraint relaxed: another constraint (a transfer, a blocked status) holds them"},
					inconsistent(TTFTP95, "TTFT p95"),
				},
				WarmUp: 5 * minute,
			},
			// Deferred requests fill the waiting gauge (a queue that is not
			// capacity), may hold an engine that completes nothing, idle
			// its GPU and make clients give up.
			Refines: []HypothesisID{QueueSustained, QueueBurst, EngineStall, OutsideGPU, ClientAbandonment},
		},
		{
			ID:       AdmissionRejections,
			Title:    "the engine rejects requests at admission (queue limits): HTTP 503",
			Observed: "admission_rejections_total{reason} up with HTTP 503s",
			Source:   "vLLM's admission limits (--max-num-queued-reqs and its token limit) answer 503",
			Explains: []SymptomID{SymptomReliability},
			Support: []Cond{
				symptom(SymptomReliability),
				atLeast(AdmissionRejectionShare, limErrorShare),
			},
			Counter: []Counter{
				{"no request rejected at admission", below(AdmissionRejectionShare, limErrorShare)},
			},
			Checks: []Check{
				{Text: "Are 5xx answered (the rejections' 503s)?", When: ptr(atLeast(HTTP5xxShare, limErrorShare)), Neutral: true},
				{Text: "Is the queue full because arrivals exceed capacity (see queue-sustained)?", When: ptr(atLeast(WaitingMean, limQueueMin)), Neutral: true},
				manual("Which limit rejects (the reason label: queued requests or queued tokens), and what are --max-num-queued-reqs and its token limit?"),
				manual("Do clients retry the 503s at once (retries amplify the arrivals)?"),
			},
			Mitigations: []string{
				"add replicas or route to replicas with room in their queue",
				"cap client retries of 503 with jittered backoff",
			},
			RootCause: []string{
				"compare the arrival rate with what the fleet completes: a full queue is a capacity question (see queue-sustained)",
				"check whether the queue limits fit the latency budget (a longer queue only moves the wait into TTFT)",
			},
			Prevention: []string{
				"alert on admission_rejections_total apart from other 5xx",
				"size the queue limits from the TTFT budget and the sustainable rate per replica",
			},
			Experiment: Plan{
				Change: Change{Name: "replicas", From: "current", To: "current + 1"},
				Expect: []Expectation{
					{Metric: AdmissionRejectionShare, Direction: Lower, MinEffect: 0.5},
				},
				Guards: []Guard{
					guard(TTFTP95, 0.1),
				},
				Falsification: []Falsifier{
					{Kind: NoImprovement, Metric: AdmissionRejectionShare, Text: "rejections continue with more capacity: the queue limits are set below the normal load"},
					inconsistent(AdmissionRejectionShare, "the rejection share"),
				},
				WarmUp: 5 * minute,
			},
			// The rejections are the 503s the server answers.
			Refines: []HypothesisID{ServerErrors},
		},
	}
}

// gaugeReaders are the rows whose support reads the waiting, running or
// KV gauges: frozen gauges must not support them, and those that read
// the queue must not read deferred requests as capacity.
var (
	gaugeReaders = []HypothesisID{QueueSustained, QueueBurst, DecodePressure, KVPreemption, OutsideGPU, ReplicaHotspot}
	queueReaders = []HypothesisID{QueueSustained, QueueBurst, OutsideGPU}
	// loadReaders read a rise of the load on the engines: a replica away
	// moves its load to the others (1 of 2 away doubles it), so a
	// capacity change must not support them.
	loadReaders = []HypothesisID{QueueSustained, QueueBurst, DecodePressure, KVPreemption, ReplicaHotspot}
)

// deferralHolds holds when deferred requests are most of the waiting
// queue, or most of the queue waits on replicas that deferred requests at
// that scrape or the one before (the deferral and the backlog it
// releases).
func deferralHolds() Cond {
	return anyOf(atLeast(DeferredShare, limMajority), atLeast(DeferralQueueShare, limMajority))
}

// guardGauges adds to the rows of rs that read the scheduler gauges the
// counter-evidence of frozen gauges and of a deferred queue, and lets the
// queue rows explain admission rejections (a full queue rejects) unless
// nothing waits: then the rejections explain queue-sustained.
func guardGauges(rs []Rule) {
	for i := range rs {
		r := &rs[i]
		if slices.Contains(gaugeReaders, r.ID) {
			r.Counter = append(r.Counter, Counter{
				"the scheduler gauges are frozen (see stale-gauges, engine-stall): waiting, running and KV usage are not measurements",
				atLeast(FrozenGaugeShare, limMajority)})
		}
		if slices.Contains(loadReaders, r.ID) {
			r.Counter = append(r.Counter, Counter{
				"replicas were away in the window (restarting, gone or joining) and the others took their load (see replica-restarts): capacity changed, not the demand or the engines",
				atLeast(OutageLoadFactor, limRise)})
		}
		if slices.Contains(queueReaders, r.ID) {
			r.Counter = append(r.Counter, Counter{
				"the queue is mostly deferred requests or the backlog their release hands on (see admission-deferral): not capacity",
				deferralHolds()})
			r.Refines = append(r.Refines, AdmissionRejections)
		}
		if r.ID == QueueSustained {
			// vLLM's --max-num-queued-reqs counts the running requests
			// too (PR 49445): set near max_num_seqs it refuses the
			// excess arrivals before any waits. The engines then run a
			// full batch with no queue, and the overload reaches the
			// clients as 503s: the admission limits are the story, the
			// fuller batch their consequence.
			r.ExplainedBy = append(r.ExplainedBy, Explained{By: AdmissionRejections,
				When: allOf(atLeast(AdmissionRejectionShare, limErrorShare), below(WaitingMean, limQueueMin)),
				Why:  "a material share of requests was refused at admission while almost nothing waited: the admission limits hold the excess arrivals out of the engines, so the overload reaches clients as HTTP 503s, not as a queue, and the admitted requests run in a fuller batch"})
		}
	}
}

// engineReliability judges the signals of this file that make the
// reliability symptom present: an engine that completes nothing while
// requests are in flight (several scrapes: severe; one scrape: a mild
// suspicion), and requests rejected at admission. It returns the results
// and the ids of the signals that are up. A stall fact that does not hold
// leaves the symptom as its other signals judge it.
func (e *env) engineReliability(slo SLO) ([]result, []string) {
	var rs []result
	var up []string
	for _, c := range []struct {
		id       FactID
		strength float64
		what     string
	}{
		{StalledReplicas, 1, "replica(s) where requests wait and nothing progresses over several scrapes"},
		{FrozenGaugeReplicas, 1, "replica(s) showing requests in flight while nothing moves over several scrapes (a stall, or frozen gauges)"},
		{StallSuspected, SeverityMild.strength(), "replica(s) with requests waiting and none running: stall suspected (one scrape cannot show flat counters)"},
	} {
		if _, ok := e.facts[c.id]; !ok {
			continue
		}
		f, err := e.fact(c.id)
		if err != nil {
			rs = append(rs, result{missing: []Missing{{c.id, err}}})
			continue
		}
		ev := evidenceOf(c.id, f)
		out := verdict(f.Incident.Value > 0)
		ev.Text = fmt.Sprintf("%s %s: %s", c.id, fmtNum(f.Incident.Value), upDown(out, c.what, "none"))
		r := result{out: out, ev: []Evidence{ev}}
		if out == holds {
			r.strength = c.strength
			up = append(up, string(c.id))
		} else {
			// No stall says nothing of errors or aborts: it does not make
			// the symptom evaluable by itself.
			r.out = unknown
		}
		rs = append(rs, r)
	}
	if _, ok := e.facts[AdmissionRejectionShare]; ok {
		r := e.shareUp(AdmissionRejectionShare, slo.ErrorShare)
		if r.out == holds {
			up = append(up, string(AdmissionRejectionShare))
		}
		rs = append(rs, r)
	}
	return rs, up
}
