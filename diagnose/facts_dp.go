package diagnose

import (
	"fmt"
	"math"
	"slices"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/rules"
	"github.com/whyslow/whyslow/snapshot"
)

// The engines of a data-parallel pod (vLLM's engine label, "0".."N-1")
// are sub-replicas for load balance only: these facts compare each
// engine with its pod's other engines, as replica_load_share_max compares
// a pod with the fleet. Restarts and lost requests stay per pod.
//
// Each share is the engine's part of its pod's load times the number of
// engines E (1 = its fair share), taken beyond binomial noise: an engine
// holding n of the pod's N requests counts as (n - 2 sd) / N * E, with sd
// = sqrt(N (1/E) (1 - 1/E)), the spread of a fair split of N requests.
// Round-robin spreads requests more evenly than that, so the bound is
// conservative; a pod with fewer than E requests is not judged.

// engineNoiseZ is the number of standard deviations of a fair split a
// share must clear.
const engineNoiseZ = 2

// dpJobs adds the facts of data-parallel pods to js.
func (c *factCtx) dpJobs(js *factJobs) {
	both := func(id rules.FactID, f func(evalWindow) rules.Fact) {
		js.add(id, func() rules.Fact { return c.both(id, f) })
	}
	both(rules.EngineLoadShareMax, c.engineLoadShareMax)
	both(rules.EngineInflightShareMax, func(w evalWindow) rules.Fact { return c.engineInflightShare(w, false) })
	both(rules.EngineInflightShareLast, func(w evalWindow) rules.Fact { return c.engineInflightShare(w, true) })
}

// engineLabels returns the engine label values of replica r's series of
// signal id, sorted; fewer than two for a pod without data parallelism.
func (sc *scope) engineLabels(r int, id catalog.SignalID) []string {
	m := sc.match(r, id)
	if !m.Found() {
		return nil
	}
	var out []string
	for _, s := range m.Family.SeriesMatching(sc.selector(m.Family)) {
		if e := s.Labels.Get("engine"); e != "" && !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	for _, h := range m.Family.Histograms {
		if e := h.Labels.Get("engine"); e != "" && !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	slices.Sort(out)
	return out
}

// engineGauge returns the stats over w of replica r's gauge id summed
// over the series of engine e.
func (sc *scope) engineGauge(r int, id catalog.SignalID, e string, w snapshot.Window) (snapshot.GaugeStats, bool) {
	m := sc.match(r, id)
	if !m.Found() {
		return snapshot.GaugeStats{}, false
	}
	sel := map[string]string{"engine": e}
	for k, v := range sc.selector(m.Family) {
		sel[k] = v
	}
	s := m.Family.Aggregate(sel, snapshot.AggregateSum)
	if s == nil || len(s.V) == 0 {
		return snapshot.GaugeStats{}, false
	}
	g, err := s.Gauge(w)
	return g, err == nil && g.N > 0
}

// engineShare is the largest engine share found, with what it came from.
type engineShare struct {
	top        engineTop
	pods       int // data-parallel pods judged
	small      int // data-parallel pods with too little load to judge
	unmeasured int // data-parallel pods whose engines could not be measured
}

// engineTop is one engine's share of its pod's load.
type engineTop struct {
	value, raw float64 // beyond noise, and as measured
	pod, eng   string
	n, total   float64
	engines    int
}

// add judges one pod's split of load over its engines.
func (s *engineShare) add(pod string, engines []string, loads []float64) {
	total := 0.0
	for _, l := range loads {
		total += l
	}
	e := float64(len(engines))
	if total < e || len(engines) < 2 {
		s.small++
		return
	}
	s.pods++
	p := 1 / e
	sd := math.Sqrt(total * p * (1 - p))
	for i, l := range loads {
		v := math.Max(0, l-engineNoiseZ*sd) / total * e
		if s.top.pod == "" || v > s.top.value {
			s.top = engineTop{value: v, raw: l / total * e, pod: pod, eng: engines[i], n: l, total: total, engines: len(engines)}
		}
	}
}

// fact returns the share as a fact, or why it is missing.
func (s *engineShare) fact(what string) rules.Fact {
	switch {
	case s.pods == 0 && s.unmeasured > 0:
		return rules.MissingFact(rules.TooLittle("%d data-parallel pods whose engines' counters do not cover the window", s.unmeasured))
	case s.pods == 0 && s.small > 0:
		return rules.MissingFact(rules.TooLittle("%d data-parallel pods, each with fewer %s than engines: too little load to judge their balance", s.small, what))
	case s.pods == 0:
		// Every engine is its pod's only one: balanced by construction.
		return rules.Measured(1).WithSource("no pod runs several data-parallel engines (engine label): each engine carries its whole pod's load")
	}
	t := s.top
	f := rules.Measured(t.value).WithBounds(t.value, t.raw).WithSource(fmt.Sprintf(
		"pod %s engine %s: %.4g of the pod's %.4g %s over %d engines, %.2fx its share (%.2fx beyond %d sd of a fair split)",
		t.pod, t.eng, t.n, t.total, what, t.engines, t.raw, t.value, engineNoiseZ))
	f.Incident.Count = t.total
	return f
}

// engineLoadShareMax is the largest engine's share of its pod's arrivals
// (completions + growth of its waiting and running), beyond noise.
func (c *factCtx) engineLoadShareMax(w evalWindow) rules.Fact {
	if !c.sc.has(catalog.SignalRequestSuccess) {
		return rules.MissingFact(c.missingSignal(catalog.SignalRequestSuccess))
	}
	var s engineShare
	for r := range c.sc.replicas {
		engines := c.sc.engineLabels(r, catalog.SignalRequestSuccess)
		if len(engines) < 2 {
			continue
		}
		loads := make([]float64, 0, len(engines))
		ok := true
		for _, e := range engines {
			inc, err := c.sc.replicaCounter(catalog.SignalRequestSuccess, r, w.w, map[string]string{"engine": e})
			if err != nil {
				ok = false
				break
			}
			load := inc.Value
			if !w.lifetime {
				for _, id := range []catalog.SignalID{catalog.SignalWaiting, catalog.SignalRunning} {
					if g, found := c.sc.engineGauge(r, id, e, w.w); found {
						load += g.Last - g.First
					}
				}
			}
			loads = append(loads, math.Max(load, 0))
		}
		if !ok {
			s.unmeasured++
			continue
		}
		s.add(c.sc.replicas[r].t.Name, engines, loads)
	}
	return s.fact("arrivals")
}

// engineInflightShare is the largest engine's share of its pod's
// requests in flight (running + waiting): their means over the window's
// scrapes, or, with last, the values at its last scrape.
func (c *factCtx) engineInflightShare(w evalWindow, last bool) rules.Fact {
	if !c.sc.has(catalog.SignalRunning) {
		return rules.MissingFact(c.missingSignal(catalog.SignalRunning))
	}
	var s engineShare
	for r := range c.sc.replicas {
		engines := c.sc.engineLabels(r, catalog.SignalRunning)
		if len(engines) < 2 {
			continue
		}
		loads := make([]float64, 0, len(engines))
		for _, e := range engines {
			load := 0.0
			for _, id := range []catalog.SignalID{catalog.SignalRunning, catalog.SignalWaiting} {
				if g, found := c.sc.engineGauge(r, id, e, w.w); found {
					if last {
						load += g.Last
					} else {
						load += g.Mean
					}
				}
			}
			loads = append(loads, load)
		}
		s.add(c.sc.replicas[r].t.Name, engines, loads)
	}
	what := "requests in flight (running + waiting, mean over the window's scrapes)"
	if last {
		what = "requests in flight (running + waiting) at the last scrape"
	}
	return s.fact(what)
}
