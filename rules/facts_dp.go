package rules

import "sort"

// Data-parallel engines inside one pod (vLLM's engine label, values
// "0".."N-1"): sub-replicas for load balance only. Restarts and lost
// requests stay per pod.
const (
	// EngineLoadShareMax is, over the pods running several data-parallel
	// engines, the largest engine's share of its pod's arrivals (its
	// completions plus the growth of its waiting and running requests)
	// divided by its fair share 1/E (E engines in the pod): 1 = balanced,
	// 2 = twice its share. The engine-level replica_load_share_max. Source
	// names the pod and engine.
	EngineLoadShareMax FactID = "engine_load_share_max"
	// EngineInflightShareMax is, over the pods running several engines
	// with at least one request in flight per engine on average, the
	// largest engine's mean share of its pod's requests in flight
	// (running + waiting, averaged over the window's scrapes) divided by
	// 1/E. It sees a hot or idle engine from the gauges alone, so it
	// needs no interval: from one scrape it is that scrape's split.
	EngineInflightShareMax FactID = "engine_inflight_share_max"
	// EngineInflightShareLast is EngineInflightShareMax at the window's
	// last scrape alone: the split an operator sees on the pod now.
	EngineInflightShareLast FactID = "engine_inflight_share_last"
)

var dpCatalog = []FactInfo{
	{EngineLoadShareMax, KindDerived, "x", Lower, "largest data-parallel engine's arrivals share of its pod / fair share"},
	{EngineInflightShareMax, KindGauge, "x", Lower, "largest data-parallel engine's mean share of its pod's requests in flight / fair share"},
	{EngineInflightShareLast, KindGauge, "x", Lower, "largest data-parallel engine's share of its pod's requests in flight at the last scrape / fair share"},
}

func init() {
	catalog = append(catalog, dpCatalog...)
	sort.Slice(catalog, func(i, j int) bool { return catalog[i].ID < catalog[j].ID })
}
