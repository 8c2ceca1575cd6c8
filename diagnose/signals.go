package diagnose

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/histogram"
	"github.com/whyslow/whyslow/snapshot"
)

// This file reads signals out of the evidence of one scope (a group of the
// fleet): per replica, where each signal comes from the catalog's
// resolution, and fleet-wide, where histograms are merged bucket by bucket
// and gauges summed (or averaged) at each instant.

// replica is one target of a scope with its catalog resolution.
type replica struct {
	t   *snapshot.Target
	res *catalog.TargetResolution
}

// scope is the slice of the evidence one report covers: the replicas that
// serve it and the label values that select its series.
type scope struct {
	set      settings
	group    map[string]string // label values selecting the scope's series; nil for all
	replicas []replica

	// caches, safe for the goroutines that measure the facts (memo)
	gaugeSeries memo[gaugeKey, *snapshot.Series]
	fleetGauges memo[catalog.SignalID, *snapshot.Series]
	histCache   memo[histKey, histResult]
	backlogs    memo[int, *snapshot.Series]    // by replica, -1 for the fleet
	sources     memo[catalog.SignalID, string] // source's, by signal
	signalAt    map[catalog.SignalID]int       // the position of a signal's match (see match); read only
	// reduced marks the replicas whose histogram samples Survey.Reduce
	// dropped, measured instead (seedReduced), and seeds holds those
	// measures by replica name (seeded); read only.
	reduced []bool
	seeds   map[string][]histSeed
}

// isReduced reports whether replica r's histogram samples were dropped
// by Survey.Reduce.
func (sc *scope) isReduced(r int) bool { return r < len(sc.reduced) && sc.reduced[r] }

type gaugeKey struct {
	id catalog.SignalID
	r  int
}

type histKey struct {
	id  catalog.SignalID
	r   int // replica index, -1 for the fleet
	win snapshot.Window
}

type histResult struct {
	inc    snapshot.HistogramIncrease
	err    error
	metric string
	// skipped lists, for the fleet's increase, the replicas that carry
	// the signal and were left out (their own increase failed).
	skipped []string
}

func newScope(set settings, group map[string]string, reps []replica) *scope {
	sc := &scope{
		set: set, group: group, replicas: reps,
		signalAt: map[catalog.SignalID]int{},
	}
	if len(reps) > 0 {
		for i, m := range reps[0].res.Matches {
			if _, ok := sc.signalAt[m.Signal]; !ok {
				sc.signalAt[m.Signal] = i
			}
		}
	}
	return sc
}

// selector returns the label matcher that selects the scope's series in
// fam: the group's labels that fam's series carry. A family without the
// group's label (the GPU exporter's, the HTTP server's) belongs to the
// whole target and is shared by every group the target serves.
func (sc *scope) selector(fam *snapshot.Family) map[string]string {
	if len(sc.group) == 0 || fam == nil {
		return nil
	}
	var sel map[string]string
	for name, value := range sc.group {
		if familyHasLabel(fam, name) {
			if sel == nil {
				sel = map[string]string{}
			}
			sel[name] = value
		}
	}
	return sel
}

func familyHasLabel(fam *snapshot.Family, name string) bool {
	for _, s := range fam.Series {
		if s.Labels.Has(name) {
			return true
		}
	}
	for _, h := range fam.Histograms {
		if h.Labels.Has(name) {
			return true
		}
	}
	return false
}

// match returns where signal id comes from on replica r, or a zero catalog.Match.
func (sc *scope) match(r int, id catalog.SignalID) catalog.Match {
	// Resolutions by one catalog hold one match per signal in catalog
	// order: the positions in the first replica's are every replica's,
	// checked before use (TargetResolution.Match searches them all).
	ms := sc.replicas[r].res.Matches
	if i, ok := sc.signalAt[id]; ok && i < len(ms) && ms[i].Signal == id {
		return ms[i]
	}
	m, _ := sc.replicas[r].res.Match(id)
	return m
}

// has reports whether some replica carries signal id.
func (sc *scope) has(id catalog.SignalID) bool {
	for r := range sc.replicas {
		if sc.match(r, id).Found() {
			return true
		}
	}
	return false
}

// metrics returns the distinct metric names signal id comes from, and the
// version ranges of those names.
func (sc *scope) metrics(id catalog.SignalID) (names []string, versions []string) {
	for r := range sc.replicas {
		m := sc.match(r, id)
		if !m.Found() || slices.Contains(names, m.Metric) {
			continue
		}
		names = append(names, m.Metric)
		for _, vr := range m.Candidate.Versions {
			if s := vr.String(); !slices.Contains(versions, s) {
				versions = append(versions, s)
			}
		}
	}
	return names, versions
}

// source describes where signal id comes from, for facts and reports.
func (sc *scope) source(id catalog.SignalID) string {
	return sc.sources.get(id, func() string { return sc.sourceOnce(id) })
}

// sourceOnce is source, uncached.
func (sc *scope) sourceOnce(id catalog.SignalID) string {
	names, versions := sc.metrics(id)
	if len(names) == 0 {
		return ""
	}
	s := strings.Join(names, ", ")
	if len(versions) > 0 {
		s += " (" + strings.Join(versions, "; ") + ")"
	}
	return s
}

// replicaHist returns the increase of histogram signal id on replica r over
// w, bounds scaled into the signal's unit, cached for the windows the
// facts and signals read again.
func (sc *scope) replicaHist(id catalog.SignalID, r int, w snapshot.Window) histResult {
	if res, ok := sc.seeded(id, r, w); ok {
		return res
	}
	return sc.histCache.get(histKey{id, r, w}, func() histResult { return sc.replicaHistOnce(id, r, w) })
}

// measured returns replica r's increase of signal id over w where it is
// known without a measure: Survey.Reduce's (seeded), or one cached.
func (sc *scope) measured(id catalog.SignalID, r int, w snapshot.Window) (histResult, bool) {
	if res, ok := sc.seeded(id, r, w); ok {
		return res, true
	}
	return sc.histCache.peek(histKey{id, r, w})
}

// seeded returns Survey.Reduce's measure of signal id on replica r over
// w, where it took one (seedReduced).
func (sc *scope) seeded(id catalog.SignalID, r int, w snapshot.Window) (histResult, bool) {
	if !sc.isReduced(r) {
		return histResult{}, false
	}
	for _, s := range sc.seeds[sc.replicas[r].t.Name] {
		if s.id == id && s.w == w {
			return s.res, true
		}
	}
	return histResult{}, false
}

// replicaHistOnce is replicaHist, uncached.
func (sc *scope) replicaHistOnce(id catalog.SignalID, r int, w snapshot.Window) histResult {
	var res histResult
	m := sc.match(r, id)
	switch {
	case !m.Found():
		res.err = fmt.Errorf("%s: %w: no %s metric", sc.replicas[r].t.Name, snapshot.ErrNotEvaluable, id)
	case sc.isReduced(r):
		res.metric = m.Metric
		res.err = fmt.Errorf("%s: %s over %v: %w", sc.replicas[r].t.Name, id, w, errReduced)
	default:
		res.metric = m.Metric
		res.inc, res.err = replicaHistogram(m.Family, m.Candidate.ScaleFor(math.NaN()), w, sc.selector(m.Family))
	}
	return res
}

// replicaHistSteps is replicaHist over every window of grid, uncached (the
// timelines read each interval once: caching them would hold every
// replica's buckets for every interval); nil when r lacks signal id.
func (sc *scope) replicaHistSteps(id catalog.SignalID, r int, grid []snapshot.Window) []snapshot.Step[snapshot.HistogramIncrease] {
	m := sc.match(r, id)
	if !m.Found() {
		return nil
	}
	if sc.isReduced(r) {
		steps := make([]snapshot.Step[snapshot.HistogramIncrease], len(grid))
		for k, w := range grid {
			steps[k] = snapshot.Step[snapshot.HistogramIncrease]{Window: w, Err: fmt.Errorf("%s: %s over %v: %w", sc.replicas[r].t.Name, id, w, errReduced)}
		}
		return steps
	}
	return replicaHistogramSteps(m.Family, m.Candidate.ScaleFor(math.NaN()), grid, sc.selector(m.Family))
}

// replicaHistEach is replicaHistSteps handed to fn window by window
// (replicaHistogramEach: inc is valid only until fn returns); fn is not
// called when r lacks signal id.
func (sc *scope) replicaHistEach(id catalog.SignalID, r int, grid []snapshot.Window, fn func(k int, inc snapshot.HistogramIncrease, err error)) {
	m := sc.match(r, id)
	if !m.Found() {
		return
	}
	if sc.isReduced(r) {
		for k, w := range grid {
			fn(k, snapshot.HistogramIncrease{}, fmt.Errorf("%s: %s over %v: %w", sc.replicas[r].t.Name, id, w, errReduced))
		}
		return
	}
	replicaHistogramEach(m.Family, m.Candidate.ScaleFor(math.NaN()), grid, sc.selector(m.Family), fn)
}

// fleetHistGrid computes fleetHist for every window of grid not yet
// computed, as fleetHist computes it (a replica's cached increase first,
// the same merge and error), with each replica's samples read once for
// all of them (replicaHistSteps, the same increases to the bit) instead
// of once a window: the comparison grids of the noise estimates.
func (sc *scope) fleetHistGrid(id catalog.SignalID, grid []snapshot.Window) {
	var todo []snapshot.Window
	for _, w := range grid {
		if _, ok := sc.histCache.peek(histKey{id, -1, w}); !ok && !slices.Contains(todo, w) {
			todo = append(todo, w)
		}
	}
	if len(todo) < 2 {
		return // fleetHist alone costs no more
	}
	incs := make([][]snapshot.HistogramIncrease, len(todo))
	skipped := make([][]string, len(todo))
	steps := sc.replicasHistSteps(id, todo)
	for r := range sc.replicas {
		if steps[r] == nil {
			continue
		}
		for k, w := range todo {
			res, ok := sc.measured(id, r, w)
			if !ok {
				res = histResult{inc: steps[r][k].Result, err: steps[r][k].Err}
			}
			if res.err == nil {
				incs[k] = append(incs[k], res.inc)
			} else {
				skipped[k] = append(skipped[k], sc.replicas[r].t.Name)
			}
		}
	}
	for k, w := range todo {
		res := fleetResult(id, w, incs[k])
		res.skipped = skipped[k]
		sc.histCache.add(histKey{id, -1, w}, res)
	}
}

// replicasHistSteps is replicaHistSteps of every replica (nil for one
// that lacks signal id), computed on up to GOMAXPROCS goroutines: each
// replica's increases are its own, read from the evidence alone, so the
// result is the same as one replica after another.
func (sc *scope) replicasHistSteps(id catalog.SignalID, grid []snapshot.Window) [][]snapshot.Step[snapshot.HistogramIncrease] {
	steps := make([][]snapshot.Step[snapshot.HistogramIncrease], len(sc.replicas))
	tasks := make([]func(), len(sc.replicas))
	for r := range sc.replicas {
		tasks[r] = func() { steps[r] = sc.replicaHistSteps(id, r, grid) }
	}
	runParallel(tasks)
	return steps
}

// fleetResult is the fleet's increase of signal id over w from the
// replicas' incs (mergeFleet), or why there is none.
func fleetResult(id catalog.SignalID, w snapshot.Window, incs []snapshot.HistogramIncrease) histResult {
	if len(incs) == 0 {
		return histResult{err: fmt.Errorf("%w: no replica has %s over %v", snapshot.ErrNotEvaluable, id, w)}
	}
	var res histResult
	res.inc, res.err = mergeFleet(incs)
	return res
}

// fleetHist merges the increases of every replica that carries signal id
// (histogram.Merge: exact on shared bounds, others dropped and listed).
// skipped lists the replicas left out, with the reason.
func (sc *scope) fleetHist(id catalog.SignalID, w snapshot.Window) (inc snapshot.HistogramIncrease, skipped []string, err error) {
	res := sc.histCache.get(histKey{id, -1, w}, func() histResult {
		// The fleet's increase is cached, the replicas' only where a
		// replica's own was asked for: the noise intervals of every fact
		// would otherwise hold each replica's buckets for each of them.
		// Those not cached are measured on several goroutines, each
		// replica's from its own evidence, and merged in replica order.
		reps := make([]histResult, len(sc.replicas))
		found := make([]bool, len(sc.replicas))
		var tasks []func()
		for r := range sc.replicas {
			if !sc.match(r, id).Found() {
				continue
			}
			found[r] = true
			if res, ok := sc.measured(id, r, w); ok {
				reps[r] = res
				continue
			}
			tasks = append(tasks, func() { reps[r] = sc.replicaHistOnce(id, r, w) })
		}
		runParallel(tasks)
		var incs []snapshot.HistogramIncrease
		var skipped []string
		for r, res := range reps {
			if !found[r] {
				continue
			}
			if res.err != nil {
				skipped = append(skipped, sc.replicas[r].t.Name)
				continue
			}
			incs = append(incs, res.inc)
		}
		res := fleetResult(id, w, incs)
		res.skipped = skipped
		return res
	})
	return res.inc, res.skipped, res.err
}

func scaleBounds(h histogram.Histogram, scale float64) histogram.Histogram {
	out := h
	out.Bounds = make([]float64, len(h.Bounds))
	for i, b := range h.Bounds {
		out.Bounds[i] = b * scale
	}
	out.Sum = h.Sum * scale
	return out
}

// replicaCounter returns the increase of counter signal id on replica r
// over w, with extra label values (e.g. finished_reason) narrowing the
// series.
func (sc *scope) replicaCounter(id catalog.SignalID, r int, w snapshot.Window, extra map[string]string) (snapshot.CounterIncrease, error) {
	m := sc.match(r, id)
	if !m.Found() {
		return snapshot.CounterIncrease{}, fmt.Errorf("%s: %w: no %s metric", sc.replicas[r].t.Name, snapshot.ErrNotEvaluable, id)
	}
	sel := sc.selector(m.Family)
	if len(extra) > 0 {
		merged := map[string]string{}
		for k, v := range sel {
			merged[k] = v
		}
		for k, v := range extra {
			merged[k] = v
		}
		sel = merged
	}
	return m.Family.Increase(w, sel)
}

// fleetCounter sums the increases of counter id over the replicas. The
// error wraps ErrNotEvaluable when no replica could be evaluated.
func (sc *scope) fleetCounter(id catalog.SignalID, w snapshot.Window, extra map[string]string) (snapshot.CounterIncrease, error) {
	var incs []snapshot.CounterIncrease
	for r := range sc.replicas {
		if !sc.match(r, id).Found() {
			continue
		}
		inc, err := sc.replicaCounter(id, r, w, extra)
		if err != nil {
			continue
		}
		incs = append(incs, inc)
	}
	if len(incs) == 0 {
		return snapshot.CounterIncrease{}, fmt.Errorf("%w: no replica has %s over %v", snapshot.ErrNotEvaluable, id, w)
	}
	return snapshot.SumIncreases(incs...), nil
}

// splitValues returns the values of signal id's split label (its SplitBy,
// e.g. finished_reason) seen on any replica, sorted.
func (sc *scope) splitValues(id catalog.SignalID, label string) []string {
	var vals []string
	for r := range sc.replicas {
		m := sc.match(r, id)
		if !m.Found() {
			continue
		}
		for _, s := range m.Family.SeriesMatching(sc.selector(m.Family)) {
			if v := s.Labels.Get(label); v != "" && !slices.Contains(vals, v) {
				vals = append(vals, v)
			}
		}
	}
	sort.Strings(vals)
	return vals
}

// replicaGauge returns the gauge series of signal id on replica r: its
// engines (or GPUs) combined with the signal's aggregation and the values
// scaled into the signal's unit. Nil when the replica lacks the signal.
func (sc *scope) replicaGauge(id catalog.SignalID, r int) *snapshot.Series {
	return sc.gaugeSeries.get(gaugeKey{id, r}, func() *snapshot.Series { return sc.replicaGaugeOnce(id, r) })
}

// replicaGaugeOnce is replicaGauge, uncached.
func (sc *scope) replicaGaugeOnce(id catalog.SignalID, r int) *snapshot.Series {
	var out *snapshot.Series
	m := sc.match(r, id)
	if m.Found() {
		spec, _ := sc.set.catalog.Signal(id)
		agg := snapshot.AggregateSum
		if spec.Aggregation == snapshot.AggregateMean {
			agg = snapshot.AggregateMean
		}
		if s := m.Family.Aggregate(sc.selector(m.Family), agg); s != nil && len(s.V) > 0 {
			maxRaw := math.NaN()
			for _, v := range s.V {
				if !math.IsNaN(v) && !(v <= maxRaw) {
					maxRaw = v
				}
			}
			scale := m.Candidate.ScaleFor(maxRaw)
			c := &snapshot.Series{Name: string(id), Labels: labels.FromStrings("replica", sc.replicas[r].t.Name), T: s.T, V: s.V}
			if scale != 1 {
				c.V = make([]float64, len(s.V))
				for i, v := range s.V {
					c.V[i] = v * scale
				}
			}
			out = c
		}
	}
	return out
}

// fleetGauge returns signal id combined over the replicas at every instant
// one of them was scraped, as PromQL's sum() (or avg() for a signal
// averaged over engines, such as KV usage) evaluated at those instants.
func (sc *scope) fleetGauge(id catalog.SignalID) *snapshot.Series {
	return sc.fleetGauges.get(id, func() *snapshot.Series { return sc.fleetGaugeOnce(id) })
}

// fleetGaugeOnce is fleetGauge, uncached.
func (sc *scope) fleetGaugeOnce(id catalog.SignalID) *snapshot.Series {
	var members []*snapshot.Series
	for r := range sc.replicas {
		if s := sc.replicaGauge(id, r); s != nil {
			members = append(members, s)
		}
	}
	var out *snapshot.Series
	if len(members) > 0 {
		spec, _ := sc.set.catalog.Signal(id)
		agg := snapshot.AggregateSum
		if spec.Aggregation == snapshot.AggregateMean {
			agg = snapshot.AggregateMean
		}
		fam := &snapshot.Family{Name: string(id), Series: members}
		out = fam.Aggregate(nil, agg)
	}
	return out
}

// backlog returns waiting + running summed over the fleet (or over one
// replica when r >= 0) at every instant; nil when either is missing.
func (sc *scope) backlog(r int) *snapshot.Series {
	return sc.backlogs.get(r, func() *snapshot.Series { return sc.buildBacklog(r) })
}

// buildBacklog computes backlog(r).
func (sc *scope) buildBacklog(r int) *snapshot.Series {
	var w, run *snapshot.Series
	if r < 0 {
		w, run = sc.fleetGauge(catalog.SignalWaiting), sc.fleetGauge(catalog.SignalRunning)
	} else {
		w, run = sc.replicaGauge(catalog.SignalWaiting, r), sc.replicaGauge(catalog.SignalRunning, r)
	}
	if w == nil || run == nil {
		return nil
	}
	a := *w
	a.Labels = labels.FromStrings("part", "waiting")
	b := *run
	b.Labels = labels.FromStrings("part", "running")
	fam := &snapshot.Family{Name: "backlog", Series: []*snapshot.Series{&a, &b}}
	return fam.Aggregate(nil, snapshot.AggregateSum)
}

// isNotEvaluable reports whether err only says the window is not covered.
func isNotEvaluable(err error) bool { return errors.Is(err, snapshot.ErrNotEvaluable) }
