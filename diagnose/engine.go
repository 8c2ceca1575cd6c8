package diagnose

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/histogram"
	"github.com/whyslow/whyslow/snapshot"
)

// pushdown is the state of a Surveyor whose histogram timelines an Engine
// computes (Surveyor.PushDown).
//
// A replica's increase over an interval comes from the engine where the
// engine sees all of its series at both edges (Engine.Presence) and the
// replica did not restart: then the engine's difference of edge values is
// the replica's exact increase (snapshot's edge rule). The other
// intervals at whose end it was scraped (its first, those after a gap or
// a staleness marker) are read from its samples (SampleReads), and so is
// the whole history of a replica that restarted (process_start_time_seconds
// took several values, or the engine saw a counter reset), whose bucket
// layout changed, or that the engine sees where whyslow does not: the
// engine cannot correct those. Every replica is read from its samples over
// the grid's intervals at the ends of the range read (edge), where the
// engine may hold samples the read did not.
type pushdown struct {
	engine snapshot.Engine
	// planned is set once the sample reads are chosen; fetched once the
	// engine's sums are merged.
	planned, fetched bool
	// own maps a replica to the intervals read from its samples; whole
	// lists the replicas read so over their whole history; both maps a
	// replica to the intervals the engine sums it over (all its series
	// standing at both edges, as the engine sees them).
	own, both map[string][]bool
	whole     map[string]bool
	// edge marks the intervals every replica is read over from its
	// samples: where the engine may hold samples the read did not.
	edge []bool
	// pending are the targets of the sample reads not yet added.
	pending map[pendingKey]bool
	reads   []SampleRead
}

// A SampleRead is a read a pushdown survey needs of the samples
// themselves: Metrics of Targets over Window, its start widened by
// snapshot.Lookback for the edge samples, both ends kept within the range
// of the read that fed the Surveyor (the samples it could have held).
type SampleRead struct {
	Targets []*snapshot.Target
	Metrics []string
	Window  snapshot.Window
}

// PushDown makes the survey take the fleet's histogram timelines (TTFT,
// TPOT, ITL, E2E and the phases) from e instead of merging every
// replica's buckets; it must be called before the first Add. The read
// that feeds the Surveyor then lists the histograms by their labels
// (LabelsOnly says so), and Survey asks, through again and SampleReads,
// for the few samples the engine cannot stand for. The survey is the one
// of a whole read, but for the order in which floating-point sums of
// _sum are added. Diagnose with the survey asks e for the per-replica
// timelines the report shows. PushDown after Add is an error.
func (s *Surveyor) PushDown(e snapshot.Engine) error {
	if len(s.targets) > 0 {
		return errors.New("diagnose: Surveyor.PushDown after Add")
	}
	s.push = &pushdown{engine: e}
	return nil
}

// SampleReads returns the reads a pushdown survey asks for when Survey
// says again after the targets were added: read them, add each of their
// targets with AddSamples, in any order, then call Survey again. Nil
// otherwise.
func (s *Surveyor) SampleReads() []SampleRead {
	if s.push == nil || !s.push.planned || s.push.fetched || len(s.push.pending) == 0 {
		return nil
	}
	return s.push.reads
}

// rawPass reports whether the survey awaits the targets of its
// SampleReads.
func (p *pushdown) rawPass() bool { return p != nil && p.planned && len(p.pending) > 0 }

// planPush chooses what the engine sums and what is read from the
// samples (see pushdown), asking the engine for resets and presence, and
// lists the sample reads, one per run of a replica's intervals read so.
// It reports whether there is any.
func (s *Surveyor) planPush(sc *scope, last time.Time) (bool, error) {
	p := s.push
	p.planned = true
	p.own, p.whole, p.pending = map[string][]bool{}, map[string]bool{}, map[pendingKey]bool{}
	var metrics []string
	// Restarts the process start times show, bucket layouts that
	// changed or differ between a replica's series (the server would add
	// counts of different buckets), and series of one replica reached at
	// two addresses (the server keeps apart what its samples join); then
	// the engine's resets.
	for r, rp := range sc.replicas {
		if s.starts[rp.t.Name] > 1 {
			p.whole[rp.t.Name] = true
		}
		for _, spec := range timelineSpecs {
			if m := sc.match(r, spec.id); spec.stat == "p95" && m.Found() {
				if _, ok := layoutOf(m.Family, sc.selector(m.Family)); !ok || readdressed(m.Family, sc.selector(m.Family)) {
					p.whole[rp.t.Name] = true
				}
			}
		}
		for _, spec := range timelineSpecs {
			if m := sc.match(r, spec.id); spec.stat == "p95" && m.Found() && !slices.Contains(metrics, m.Family.Name) {
				metrics = append(metrics, m.Family.Name)
			}
		}
	}
	// The questions of every family go to the engine at once (its
	// queries are small), their answers are taken in order.
	qs := s.pushQueries(sc, false)
	resets, presence := make([][]string, len(qs)), make([][][]int, len(qs))
	errs := make([]error, 2*len(qs))
	tasks := make([]func(), 0, 2*len(qs))
	for k, q := range qs {
		tasks = append(tasks,
			func() { resets[k], errs[2*k] = p.engine.Resets(q) },
			func() { presence[k], errs[2*k+1] = p.engine.Presence(q) })
	}
	runParallel(tasks)
	for k, q := range qs {
		if err := errs[2*k]; err != nil {
			return false, fmt.Errorf("diagnose: engine: resets of %s: %w", q.Metric, err)
		}
		if err := errs[2*k+1]; err != nil {
			return false, fmt.Errorf("diagnose: engine: presence of %s: %w", q.Metric, err)
		}
		for _, n := range resets[k] {
			p.whole[n] = true
		}
	}
	// The engine's view of each replica's series at the edges: it sums a
	// replica over an interval where all of its series stand at both
	// edges. A replica it sees only in part at an edge, or at both edges
	// of an interval whyslow does not evaluate (no scrape within
	// snapshot.Lookback of its end), is read whole: the sums would count
	// it where whyslow does not.
	at := map[string][]bool{}
	for k, q := range qs {
		pres := presence[k]
		if len(pres) != len(q.Targets) {
			return false, fmt.Errorf("diagnose: engine: presence of %s: %d rows for %d targets", q.Metric, len(pres), len(q.Targets))
		}
		for k, t := range q.Targets {
			counts := pres[k]
			if len(counts) != len(s.grid)+1 {
				return false, fmt.Errorf("diagnose: engine: presence of %s: %d edges, want %d", q.Metric, len(counts), len(s.grid)+1)
			}
			most := slices.Max(counts)
			a := at[t.Name]
			if a == nil {
				a = make([]bool, len(counts))
				for e := range a {
					a[e] = true
				}
				at[t.Name] = a
			}
			for e, c := range counts {
				if c > 0 && c < most {
					p.whole[t.Name] = true
				}
				a[e] = a[e] && c > 0 && c == most
			}
		}
	}
	// The intervals the engine may see samples in that the read did not
	// hold (before the start of the range read, or after its end): a
	// replica the engine sees at an interval's start where whyslow has
	// no scrape within snapshot.Lookback, and the intervals past the
	// fleet's last scrape. The engine would count those samples in its
	// sums; every replica is read from its samples there instead, as a
	// read of the range holds them.
	p.edge = make([]bool, len(s.grid))
	for i, w := range s.grid {
		p.edge[i] = w.End.After(last)
	}
	for name, a := range at {
		edges := s.lines.edges[name]
		for i := range s.grid {
			if a[i] && a[i+1] && edges != nil && !edges[i] {
				p.edge[i] = true
			}
		}
	}
	p.both = map[string][]bool{}
	for name, a := range at {
		edges := s.lines.edges[name]
		both := make([]bool, len(s.grid))
		for i := range both {
			both[i] = a[i] && a[i+1] && !p.edge[i]
			if both[i] && (edges == nil || !edges[i+1]) {
				p.whole[name] = true
			}
		}
		p.both[name] = both
	}
	byWindow := map[snapshot.Window][]*snapshot.Target{}
	var order []snapshot.Window
	for r, rp := range sc.replicas {
		name := rp.t.Name
		edges := s.lines.edges[name]
		if edges == nil || !s.hasHist(sc, r) {
			continue
		}
		own := make([]bool, len(s.grid))
		var runs [][2]int // runs of own intervals, those less than maxGap apart joined
		for i := range s.grid {
			if !edges[i+1] || !(p.whole[name] || p.both[name] == nil || !p.both[name][i]) {
				continue
			}
			own[i] = true
			if n := len(runs); n > 0 && i-runs[n-1][1] <= maxGap {
				runs[n-1][1] = i
			} else {
				runs = append(runs, [2]int{i, i})
			}
		}
		if len(runs) == 0 {
			continue
		}
		p.own[name] = own
		for _, run := range runs {
			w := snapshot.Window{Start: s.grid[run[0]].Start, End: s.grid[run[1]].End}
			if byWindow[w] == nil {
				order = append(order, w)
			}
			byWindow[w] = append(byWindow[w], rp.t)
			p.pending[pendingKey{name, w}] = true
		}
	}
	slices.SortFunc(order, func(a, b snapshot.Window) int { return a.Start.Compare(b.Start) })
	for _, w := range order {
		p.reads = append(p.reads, SampleRead{Targets: byWindow[w], Metrics: metrics, Window: w})
	}
	return len(p.pending) > 0, nil
}

// maxGap is how many intervals apart a replica's intervals read from its
// samples may lie and still be read at once (one read, not two).
const maxGap = 3

// pendingKey names a target of a SampleRead.
type pendingKey struct {
	name string
	w    snapshot.Window
}

// AddSamples adds a target read for r, one of SampleReads: its
// histograms on the intervals of r.Window the survey reads from its
// samples.
func (s *Surveyor) AddSamples(r SampleRead, t *snapshot.Target) error {
	t = t.JoinAddresses()
	k := pendingKey{t.Name, r.Window}
	if !s.push.rawPass() || !s.push.pending[k] {
		return fmt.Errorf("diagnose: survey: target %q is not one of the sample read over %v still to add", t.Name, r.Window)
	}
	delete(s.push.pending, k)
	tr := s.set.catalog.ResolveTarget(t)
	sc := newScope(s.set, s.base, []replica{{t: t, res: &tr}})
	if len(servingReplicas(sc.replicas, s.base)) == 0 {
		return nil
	}
	only := slices.Clone(s.push.own[t.Name])
	for i, w := range s.grid {
		if w.Start.Before(r.Window.Start) || w.End.After(r.Window.End) {
			only[i] = false
		}
	}
	yes, no := true, false
	s.lines.hist = &yes
	s.lines.addOnly(sc, 0, only)
	s.lines.hist = &no
	return nil
}

// hasHist reports whether replica r of sc carries a p95 timeline signal.
func (s *Surveyor) hasHist(sc *scope, r int) bool {
	for _, spec := range timelineSpecs {
		if spec.stat == "p95" && sc.match(r, spec.id).Found() {
			return true
		}
	}
	return false
}

// pushQueries returns the engine's questions for the fleet's histogram
// timelines (pushPlan's), less those read whole when fleet is set.
func (s *Surveyor) pushQueries(sc *scope, fleet bool) []snapshot.HistogramQuery {
	var out []snapshot.HistogramQuery
	for _, q := range s.pushPlan(sc, fleet) {
		out = append(out, q.q)
	}
	return out
}

// pushQuery is one engine question and what its answer stands for.
type pushQuery struct {
	q     snapshot.HistogramQuery
	spec  int     // the timelineSpecs index
	scale float64 // candidate's bound scale
}

// pushPlan lists the engine's questions for the fleet's histogram
// timelines (see pushQueries), per p95 signal, family name and bucket
// layout in replica order: replicas whose buckets differ are summed
// apart and merged as whyslow merges them (on the bounds they share).
func (s *Surveyor) pushPlan(sc *scope, fleet bool) []pushQuery {
	var out []pushQuery
	for si, spec := range timelineSpecs {
		if spec.stat != "p95" {
			continue
		}
		byName := map[string]int{} // by family name and bucket layout
		for r, rp := range sc.replicas {
			if isCompanion(rp.res) || (fleet && s.push.whole[rp.t.Name]) {
				continue
			}
			m := sc.match(r, spec.id)
			if !m.Found() {
				continue
			}
			layout, _ := layoutOf(m.Family, sc.selector(m.Family))
			key := m.Family.Name + "\xff" + layout
			k, ok := byName[key]
			if !ok {
				k = len(out)
				byName[key] = k
				out = append(out, pushQuery{spec: si, scale: m.Candidate.ScaleFor(math.NaN()),
					q: snapshot.HistogramQuery{Metric: m.Family.Name, Match: sc.selector(m.Family), Grid: s.grid, SkipSum: !meanSearched(spec.id)}})
			}
			out[k].q.Targets = append(out[k].q.Targets, rp.t)
		}
	}
	return out
}

// fetchPush merges the engine's sums into the fleet's histogram lines.
func (s *Surveyor) fetchPush(sc *scope) error {
	plan := s.pushPlan(sc, true)
	answers := make([][][]*histogram.Histogram, len(plan))
	errs := make([]error, len(plan))
	tasks := make([]func(), len(plan))
	for k, pq := range plan {
		tasks[k] = func() { answers[k], errs[k] = s.push.engine.HistogramIncreases(pq.q) }
	}
	runParallel(tasks)
	for k, pq := range plan {
		rows, err := answers[k], errs[k]
		if err != nil {
			return fmt.Errorf("diagnose: engine: increases of %s: %w", pq.q.Metric, err)
		}
		if len(rows) != 1 || len(rows[0]) != len(s.grid) {
			return fmt.Errorf("diagnose: engine: increases of %s: %d rows, want 1 of %d windows", pq.q.Metric, len(rows), len(s.grid))
		}
		f := &s.lines.fleet[pq.spec]
		f.has = true
		for i, h := range rows[0] {
			if h == nil || s.push.edge[i] {
				continue // read from the samples (planPush)
			}
			f.hist[i].add(engineIncrease(s.grid[i], *h, pq.scale))
		}
	}
	s.push.fetched = true
	return nil
}

// engineIncrease is an engine's histogram over w as a window's increase,
// its bounds scaled.
func engineIncrease(w snapshot.Window, h histogram.Histogram, scale float64) snapshot.HistogramIncrease {
	if scale != 1 {
		h = scaleBounds(h, scale)
	}
	return snapshot.HistogramIncrease{Window: w, From: w.Start, To: w.End, Histogram: h, Series: 1}
}

// edgesFresh reports, for each edge of grid (the windows' starts, then
// the last end), whether replica r was scraped within snapshot.Lookback
// at or before it.
func (sc *scope) edgesFresh(r int, grid []snapshot.Window) []bool {
	ends := make([]snapshot.Window, 0, len(grid)+1)
	ends = append(ends, snapshot.Window{End: grid[0].Start})
	ends = append(ends, grid...)
	return sc.freshIntervals(r, ends)
}

// fillReplicas asks the survey's engine for the histogram timelines of
// the replicas shown (idx into sc.replicas) whose values the survey left
// to it: the intervals it sums them over; the others keep the values
// read from the samples. A failed question leaves the replica's
// timeline as it was.
func (sc *scope) fillReplicas(tl *timelines, idx []int) {
	sv := sc.set.Survey
	if sv == nil || sv.push == nil || tl == nil {
		return
	}
	// The questions of every signal and family go to the engine at once;
	// their answers are written in order.
	type ask struct {
		si    int
		q     snapshot.HistogramQuery
		scale float64
		names []string
		rows  [][]*histogram.Histogram
		err   error
	}
	var asks []*ask
	for si, spec := range timelineSpecs {
		if spec.stat != "p95" {
			continue
		}
		byFamily := map[string]*ask{}
		for _, r := range idx {
			name := sc.replicas[r].t.Name
			m := sc.match(r, spec.id)
			if !m.Found() || sv.push.whole[name] || sv.push.both[name] == nil {
				continue
			}
			a := byFamily[m.Family.Name]
			if a == nil {
				a = &ask{si: si, scale: m.Candidate.ScaleFor(math.NaN()), q: snapshot.HistogramQuery{Metric: m.Family.Name, Match: sc.selector(m.Family), Grid: tl.grid, Each: true, SkipSum: true}}
				byFamily[m.Family.Name] = a
				asks = append(asks, a)
			}
			a.q.Targets = append(a.q.Targets, sc.replicas[r].t)
			a.names = append(a.names, name)
		}
	}
	tasks := make([]func(), len(asks))
	for k, a := range asks {
		tasks[k] = func() { a.rows, a.err = sv.push.engine.HistogramIncreases(a.q) }
	}
	runParallel(tasks)
	for _, a := range asks {
		if a.err != nil || len(a.rows) != len(a.names) {
			continue
		}
		for k, name := range a.names {
			tl.setReplica(name, a.si, timelineSpecs[a.si], a.rows[k], sv.push.both[name], a.scale)
		}
	}
}

// setReplica writes the p95 points of replica name's signal si from an
// engine's row into tl.replicas (a copy: the survey's own stay as they
// are), on the intervals the engine sums the replica over (both).
func (tl *timelines) setReplica(name string, si int, spec timelineSpec, row []*histogram.Histogram, both []bool, scale float64) {
	if len(row) != len(tl.grid) {
		return
	}
	vals := slices.Clone(tl.replicaValues(name))
	if vals == nil {
		vals = make([][]float64, len(timelineSpecs))
	}
	stride := spec.stride()
	v := slices.Clone(vals[si])
	if v == nil {
		v = newLine(stride, len(tl.grid))
	}
	for i, h := range row {
		if h == nil || !both[i] {
			continue
		}
		p := histP95(time.Time{}, engineIncrease(tl.grid[i], *h, scale))
		v[stride*i], v[stride*i+1], v[stride*i+2] = float64(p.Value), float64(p.Count), float64(p.Edge)
	}
	vals[si] = v
	if tl.replicas == nil {
		tl.replicas = map[string][][]float64{}
	}
	tl.replicas[name] = vals
	delete(tl.sparse, name) // made dense in vals
}

// meanSearched reports whether the change-point search reads the fleet
// mean of signal id (cpSpecs), which needs the observations' sum.
func meanSearched(id catalog.SignalID) bool {
	return slices.ContainsFunc(cpSpecs, func(c cpSpec) bool { return c.id == id && c.mean })
}

// pushedSignal reports whether a pushdown survey takes signal id's
// timeline from its engine: the p95 timelines.
func pushedSignal(id catalog.SignalID) bool {
	for _, spec := range timelineSpecs {
		if spec.id == id {
			return spec.stat == "p95"
		}
	}
	return false
}

// readdressed reports whether two histogram series of fam that carry
// sel's labels differ only in their address labels (snapshot.
// AddressLabels): a pod reached at a new address, as after a restart
// under a new IP where no process start time says so (vLLM V0). Read
// from their samples, the two make one timeline with a counter reset
// (snapshot.Target.JoinAddresses); an engine keeps them apart, and its
// sum over the restart's interval counts neither. Any instance value
// counts, a name too, which JoinAddresses would not join: such a
// replica is only read from its samples without need.
func readdressed(fam *snapshot.Family, sel map[string]string) bool {
	seen := map[string]labels.Labels{}
	for _, h := range fam.Histograms {
		if !matchesSel(h.Labels.Get, sel) {
			continue
		}
		id := labels.NewBuilder(h.Labels).Del(snapshot.AddressLabels...).Labels().String()
		if first, ok := seen[id]; ok && !labels.Equal(first, h.Labels) {
			return true
		} else if !ok {
			seen[id] = h.Labels
		}
	}
	return false
}

// layoutOf returns the bucket layout of the series of fam that carry
// sel's labels, as a key, and whether there is one: false when they have
// several (a layout changed, or series differ).
func layoutOf(fam *snapshot.Family, sel map[string]string) (string, bool) {
	var key string
	n := 0
	for _, h := range fam.Histograms {
		if !matchesSel(h.Labels.Get, sel) {
			continue
		}
		k := fmt.Sprint(h.Bounds)
		if n > 0 && k != key {
			return "", false
		}
		key, n = k, n+1
	}
	return key, true
}
