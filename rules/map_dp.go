package rules

// EngineImbalance: inside one pod, one data-parallel engine takes more
// than its share of the pod's load, or one sits idle under it (vLLM
// #48808): the pod's engines are sub-replicas for load balance only.
const EngineImbalance HypothesisID = "engine-imbalance"

// dpRules are the decision map's rows for data-parallel pods, judged like
// replica-hotspot one level down, on the same load-share facts per
// engine.
func dpRules() []Rule {
	return []Rule{
		{
			ID:       EngineImbalance,
			Title:    "one data-parallel engine of a pod takes more than its share",
			Observed: "inside one pod, one engine (label engine) holds well above its share of the pod's requests, or one idles under the pod's load",
			Source:   "sections 5, 9, 11, one level down: the engines of a data-parallel pod",
			Explains: []SymptomID{SymptomTTFT, SymptomTail, SymptomTPOT},
			Support: []Cond{
				symptom(SymptomTTFT, SymptomTail, SymptomTPOT),
				// The pod's load piles onto one engine: its share of the
				// arrivals, or of the requests in flight, well above 1/E.
				anyOf(atLeast(EngineLoadShareMax, limHotspot), atLeast(EngineInflightShareMax, limHotspot)),
			},
			Counter: []Counter{
				{"the pod's engines balanced in load", allOf(below(EngineLoadShareMax, limHotspot), below(EngineInflightShareMax, limHotspot))},
			},
			Checks: []Check{
				auto("Do the engines' requests in flight differ as much as their arrivals?", atLeast(EngineInflightShareMax, limHotspot)),
				auto("Are the pods balanced, so the imbalance is inside the pod (else see replica-hotspot)?", below(ReplicaLoadShareMax, limHotspot)),
				manual("Does the hot engine's waiting queue grow while another engine of the pod runs nothing (per engine label)?"),
				manual("How does the pod assign requests to its engines (vLLM's internal data-parallel load balancing, or an external balancer per rank), and does it see each engine's queue?"),
				manual("Do prefix-cache affinity or sticky sessions pin long requests to one engine?"),
			},
			Mitigations: []string{
				"send the pod less traffic while one engine carries its load (route to other pods)",
				"restart the pod only after saving its /metrics: the per-engine counters are the evidence",
			},
			RootCause: []string{
				"compare running, waiting, completions and KV usage per engine label over time",
				"check how requests are assigned to engines: the balancer's view of each engine's queue, affinity rules, an engine that stops taking work",
			},
			Prevention: []string{
				"keep per-engine panels (by the engine label) for data-parallel pods: the pod's sum hides an idle engine",
				"alert when one engine's requests in flight exceed its share of the pod's for several scrapes",
			},
			Experiment: Plan{
				Change: Change{Name: "engine assignment inside the pod", From: "current", To: "least outstanding requests per engine"},
				Expect: []Expectation{
					{Metric: EngineInflightShareMax, Direction: Lower, MinEffect: 0.2},
					{Metric: TTFTP95, Direction: Lower, MinEffect: 0.1},
				},
				Guards: []Guard{
					guard(PrefixHitRatio, 0.1),
					guard(ErrorShare, 0.1),
				},
				Falsification: []Falsifier{
					{Kind: NoImprovement, Metric: TTFTP95, Text: "the engines even out but TTFT p95 does not improve"},
					inconsistent(TTFTP95, "TTFT p95"),
				},
				WarmUp: 5 * minute,
			},
			// The hot engine's queue is the fleet's queue; its batch is
			// the fleet's slowest decode; and the pod's GPUs, averaged,
			// idle while it queues (its idle engines' GPUs): GPU low +
			// queue up, explained.
			Refines: []HypothesisID{QueueSustained, QueueBurst, DecodePressure, OutsideGPU},
		},
	}
}

// dpObservations name what one look at a data-parallel pod suggests
// without deciding it.
func dpObservations() []observation {
	return []observation{
		{
			id:    "engine-imbalance-suspected",
			title: "one engine of a data-parallel pod holds more than its share now",
			text:  "engine imbalance suspected: at the last scrape one data-parallel engine of a pod holds well above its share of the pod's requests in flight (the others fewer, some perhaps none); one scrape cannot say whether it lasts or slows requests: take a second scrape a few minutes later and see engine-imbalance",
			when:  atLeast(EngineInflightShareLast, limHotspot),
		},
	}
}
