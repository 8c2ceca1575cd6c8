package diagnose

import (
	"fmt"
	"math"
	"strings"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/histogram"
	"github.com/whyslow/whyslow/report"
	"github.com/whyslow/whyslow/rules"
	"github.com/whyslow/whyslow/snapshot"
)

// This file turns the signals of a scope into the report's Signal values:
// one per catalog signal (and per value of a split label such as
// finished_reason), fleet-wide and per replica, each measured over the
// baseline and the incident window.

// reportUnit maps catalog units to the report's.
func reportUnit(u string) string {
	switch u {
	case catalog.UnitSeconds:
		return "s"
	case catalog.UnitUnixSeconds:
		return "s"
	}
	return u
}

func nanMeasure(info report.WindowInfo) *report.Measure {
	n := rules.Number(math.NaN())
	return &report.Measure{Window: info, Mean: n, Count: n, Rate: n, Min: n, Max: n, Last: n, Slope: n}
}

// increaseMeasure is the measure of an increase over w (a counter's or a
// histogram's): its count and rate, its resets, whether it is only a lower
// bound and whether it rests on lifetime counters.
func increaseMeasure(w evalWindow, count, rate float64, resets int, lowerBound, lifetime bool) *report.Measure {
	m := nanMeasure(w.info)
	m.Count = rules.Number(count)
	m.Rate = rules.Number(rate)
	m.Resets = resets
	m.LowerBound = lowerBound
	m.Lifetime = lifetime || w.lifetime
	return m
}

func histMeasure(inc snapshot.HistogramIncrease, w evalWindow, qs []float64) *report.Measure {
	h := inc.Histogram
	m := increaseMeasure(w, h.Total(), inc.Rate(), inc.Resets, inc.LowerBound, inc.Lifetime)
	for _, q := range qs {
		m.Quantiles = append(m.Quantiles, report.QuantileOf(h.Quantile(q)))
	}
	m.Mean = rules.Number(h.Mean())
	return m
}

func counterMeasure(inc snapshot.CounterIncrease, w evalWindow) *report.Measure {
	return increaseMeasure(w, inc.Value, inc.Rate(), inc.Resets, inc.LowerBound, inc.Lifetime)
}

func gaugeMeasure(g snapshot.GaugeStats, w evalWindow) *report.Measure {
	m := nanMeasure(w.info)
	m.Mean, m.Count, m.Min, m.Max, m.Last, m.Slope = rules.Number(g.Mean), rules.Number(g.N), rules.Number(g.Min), rules.Number(g.Max), rules.Number(g.Last), rules.Number(g.Slope)
	m.Lifetime = w.lifetime
	return m
}

// signals measures every signal of the scope, fleet-wide and per replica.
func (sc *scope) signals(base, inc evalWindow) report.Signals {
	// Each signal of the fleet and of each replica is measured on its own
	// (runParallel), then listed in the catalog's and the replicas' order.
	type cell struct {
		spec catalog.SignalSpec
		r    int // -1 for the fleet
		out  []report.Signal
	}
	var cells []*cell
	for _, spec := range sc.set.catalog.Signals() {
		if spec.Kind == catalog.KindInfo || spec.ID == catalog.SignalProcessStart {
			continue
		}
		cells = append(cells, &cell{spec: spec, r: -1})
		for r := range sc.replicas {
			if sc.match(r, spec.ID).Found() {
				cells = append(cells, &cell{spec: spec, r: r})
			}
		}
	}
	tasks := make([]func(), len(cells))
	for i, c := range cells {
		tasks[i] = func() { c.out = sc.signalOf(c.spec, c.r, base, inc) }
	}
	runParallel(tasks)
	out := report.Signals{Fleet: []report.Signal{}, Replicas: map[string][]report.Signal{}}
	for _, c := range cells {
		if c.r < 0 {
			out.Fleet = append(out.Fleet, c.out...)
			continue
		}
		name := sc.replicas[c.r].t.Name
		out.Replicas[name] = append(out.Replicas[name], c.out...)
	}
	out.Fleet = append(out.Fleet, sc.derivedSignals(base, inc)...)
	return out
}

// signalOf measures one catalog signal over both windows for the fleet
// (r < 0) or one replica. Counters split by a label (finished_reason,
// status) give one extra signal per value, named id_value.
func (sc *scope) signalOf(spec catalog.SignalSpec, r int, base, inc evalWindow) []report.Signal {
	sig := report.Signal{ID: string(spec.ID), Kind: spec.Kind.String(), Unit: reportUnit(spec.Unit)}
	names, versions := sc.metrics(spec.ID)
	if r >= 0 {
		m := sc.match(r, spec.ID)
		names, versions = nil, nil
		if m.Found() {
			names = []string{m.Metric}
			for _, vr := range m.Candidate.Versions {
				versions = append(versions, vr.String())
			}
		}
	}
	sig.Metric = strings.Join(names, ", ")
	sig.Versions = strings.Join(versions, "; ")
	if len(names) == 0 {
		sig.Missing = (&factCtx{sc: sc}).missingSignal(spec.ID).Error()
		if spec.ID == catalog.SignalTPOT && spec.Fallback != "" {
			sig.Missing += "; see tpot_mean (" + spec.Fallback + ")"
		}
		return []report.Signal{sig}
	}
	windows := []evalWindow{base, inc}
	var measures [2]*report.Measure
	var warns []string
	switch spec.Kind {
	case catalog.KindHistogram:
		for i, w := range windows {
			if !w.ok {
				continue
			}
			var hi snapshot.HistogramIncrease
			var err error
			var skipped []string
			if r < 0 {
				hi, skipped, err = sc.fleetHist(spec.ID, w.w)
			} else {
				res := sc.replicaHist(spec.ID, r, w.w)
				hi, err = res.inc, res.err
			}
			if err != nil {
				warns = append(warns, fmt.Sprintf("%s window: %v", w.info.From, err))
				continue
			}
			measures[i] = histMeasure(hi, w, sc.set.quantiles)
			warns = append(warns, histWarnings(hi, w, i == 1, skipped, sc.set.Thresholds)...)
		}
	case catalog.KindCounter:
		for i, w := range windows {
			if !w.ok {
				continue
			}
			ci, err := sc.counterOf(spec.ID, r, w, nil)
			if err != nil {
				warns = append(warns, fmt.Sprintf("%s window: %v", w.info.From, err))
				continue
			}
			measures[i] = counterMeasure(ci, w)
			if ci.Resets > 0 {
				warns = append(warns, fmt.Sprintf("%d counter reset(s) in the %s window (a restart): the increase is a lower bound", ci.Resets, windowRole(i)))
			}
		}
	case catalog.KindGauge:
		var s *snapshot.Series
		if r < 0 {
			s = sc.fleetGauge(spec.ID)
		} else {
			s = sc.replicaGauge(spec.ID, r)
		}
		for i, w := range windows {
			if !w.ok || s == nil {
				continue
			}
			g, err := s.Gauge(w.w)
			if err != nil {
				warns = append(warns, fmt.Sprintf("%s window: %v", w.info.From, err))
				continue
			}
			measures[i] = gaugeMeasure(g, w)
		}
	}
	sig.Baseline, sig.Incident = measures[0], measures[1]
	sig.Warnings = warns
	out := []report.Signal{sig}
	if spec.Kind == catalog.KindCounter && spec.SplitBy != "" {
		for _, v := range sc.splitValues(spec.ID, spec.SplitBy) {
			part := report.Signal{ID: string(spec.ID) + "_" + snakeValue(v), Kind: sig.Kind, Unit: sig.Unit,
				Metric: fmt.Sprintf("%s{%s=%q}", sig.Metric, spec.SplitBy, v), Versions: sig.Versions}
			var pm [2]*report.Measure
			for i, w := range windows {
				if !w.ok {
					continue
				}
				ci, err := sc.counterOf(spec.ID, r, w, map[string]string{spec.SplitBy: v})
				if err != nil {
					continue
				}
				pm[i] = counterMeasure(ci, w)
			}
			part.Baseline, part.Incident = pm[0], pm[1]
			if part.Baseline == nil && part.Incident == nil {
				part.Missing = fmt.Sprintf("no %s=%q series evaluable over the windows", spec.SplitBy, v)
			}
			out = append(out, part)
		}
	}
	return out
}

func windowRole(i int) string {
	if i == 0 {
		return "baseline"
	}
	return "incident"
}

// snakeValue turns a label value into an id part: "5xx" stays, "2xx"
// stays, "Stop" becomes "stop", other characters become "_".
func snakeValue(v string) string {
	b := []byte(strings.ToLower(v))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			b[i] = '_'
		}
	}
	return string(b)
}

func (sc *scope) counterOf(id catalog.SignalID, r int, w evalWindow, extra map[string]string) (snapshot.CounterIncrease, error) {
	if r < 0 {
		return sc.fleetCounter(id, w.w, extra)
	}
	return sc.replicaCounter(id, r, w.w, extra)
}

// histWarnings lists what makes a histogram measure less certain.
func histWarnings(inc snapshot.HistogramIncrease, w evalWindow, incident bool, skipped []string, th rules.Thresholds) []string {
	var out []string
	role := windowRole(0)
	if incident {
		role = windowRole(1)
	}
	n := inc.Histogram.Total()
	for _, q := range []float64{0.5, 0.95, 0.99} {
		if e := inc.Histogram.Quantile(q); math.IsInf(e.Upper, 1) && n > 0 {
			out = append(out, fmt.Sprintf("p%g in the %s window lies beyond the largest bucket bound %g: the value is a lower bound", q*100, role, e.Lower))
			break
		}
	}
	if need := histogram.MinCount(0.99); n < need {
		out = append(out, fmt.Sprintf("low count in the %s window: %g observations (p99 needs >= %g, p95 >= %g)", role, n, need, histogram.MinCount(0.95)))
	}
	if n < th.MinSamples {
		out = append(out, fmt.Sprintf("too few observations in the %s window for the decision map (%g < %g)", role, n, th.MinSamples))
	}
	if inc.Resets > 0 {
		out = append(out, fmt.Sprintf("%d counter reset(s) in the %s window (a restart): counts are lower bounds", inc.Resets, role))
	}
	if len(inc.Dropped) > 0 {
		out = append(out, fmt.Sprintf("bucket layouts differ in the %s window: bounds %v left out of the merge", role, inc.Dropped))
	}
	if len(skipped) > 0 {
		out = append(out, fmt.Sprintf("replicas not evaluable over the %s window, left out: %s", role, strings.Join(skipped, ", ")))
	}
	if inc.StartClipped {
		out = append(out, fmt.Sprintf("the %s window starts before the first sample of some series", role))
	}
	for _, e := range inc.Warnings {
		out = append(out, e.Error())
	}
	return out
}

// derivedSignals are fleet signals computed from others: the TPOT estimate
// from sums, the prefix-cache hit ratio and the arrival rate estimate.
func (sc *scope) derivedSignals(base, inc evalWindow) []report.Signal {
	c := &factCtx{sc: sc, base: base, inc: inc}
	one := func(id, kind, unit, source string, f func(evalWindow) rules.Fact, field string) report.Signal {
		sig := report.Signal{ID: id, Kind: kind, Unit: unit, Metric: source}
		var ms [2]*report.Measure
		var missing string
		for i, w := range []evalWindow{base, inc} {
			if !w.ok {
				continue
			}
			fact := f(w)
			if !fact.Known() {
				if i == 1 {
					missing = reasonText(fact)
				}
				continue
			}
			m := nanMeasure(w.info)
			m.Count = rules.Number(fact.Incident.Count)
			m.Lifetime = w.lifetime
			switch field {
			case "rate":
				m.Rate = rules.Number(fact.Incident.Value)
			default:
				m.Mean = rules.Number(fact.Incident.Value)
			}
			ms[i] = m
			if sig.Metric == "" {
				sig.Metric = fact.Source
			}
		}
		sig.Baseline, sig.Incident = ms[0], ms[1]
		if ms[1] == nil {
			sig.Missing = missing
		}
		return sig
	}
	return []report.Signal{
		one("tpot_mean", "ratio", "s", catalog.TPOTFallback, c.tpotMean, "mean"),
		one("prefix_hit_ratio", "ratio", "ratio", "", c.prefixHitRatio, "mean"),
		one("arrival_rate", "counter", "requests", "", c.arrivalRate, "rate"),
	}
}

// processStarts is the number of distinct process start times of replica
// r in the evidence (one per start of the process, 0 without the metric).
func (sc *scope) processStarts(r int) int {
	s := sc.replicaGauge(catalog.SignalProcessStart, r)
	if s == nil {
		return 0
	}
	starts := map[float64]bool{}
	for _, v := range s.V {
		if !math.IsNaN(v) {
			starts[v] = true
		}
	}
	return len(starts)
}

// scopeWarnings are the warnings of one scope: restarts, low counts of the
// main signal, missing baseline.
func (sc *scope) scopeWarnings(base, inc evalWindow, rep *report.Report) []report.Warning {
	var out []report.Warning
	for r, rp := range sc.replicas {
		for i, w := range []evalWindow{base, inc} {
			if !w.ok || w.lifetime {
				continue
			}
			resets := 0
			if sc.match(r, catalog.SignalRequestSuccess).Found() {
				if ci, err := sc.replicaCounter(catalog.SignalRequestSuccess, r, w.w, nil); err == nil {
					resets = ci.Resets
				}
			} else if res := sc.replicaHist(catalog.SignalTTFT, r, w.w); res.err == nil {
				resets = res.inc.Resets
			}
			if resets > 0 {
				out = append(out, warnf(report.WarnSignal, ErrRestart, "counter reset: %s restarted inside the %s window; its counts there are lower bounds", rp.t.Name, windowRole(i)))
			}
		}
		starts := sc.processStarts(r)
		if sv := sc.set.Survey; sv != nil {
			starts = sv.starts[rp.t.Name] // over the whole history, not the windows
		}
		if starts > 1 {
			out = append(out, warnf(report.WarnSignal, ErrRestart, "%s: process_start_time_seconds takes %d values: the process restarted", rp.t.Name, starts))
		}
	}
	if f, ok := rep.Facts[rules.TTFTP95]; ok && f.Missing == nil && float64(f.Incident.Count) < sc.set.Thresholds.MinSamples {
		out = append(out, warnf(report.WarnSignal, ErrLowCount, "low sample count: %g requests in the incident window (the decision map needs >= %g)", float64(f.Incident.Count), sc.set.Thresholds.MinSamples))
	}
	return out
}
