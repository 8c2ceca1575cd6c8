package diagnose

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/internal/textfmt"
	"github.com/whyslow/whyslow/report"
	"github.com/whyslow/whyslow/rules"
	"github.com/whyslow/whyslow/snapshot"
)

// This file computes the timelines: per interval of a grid, each replica's
// value of every timeline signal, and the fleet's from the replicas'. It
// walks the replicas one at a time and keeps, per replica and interval,
// two numbers (the value and the count behind it) and, per fleet signal
// and interval, one running aggregate; so a Surveyor can build the same
// timelines from a TSDB read one replica at a time, holding one
// replica's samples at once (see Surveyor).

// lines accumulates the timelines of one scope on one grid, replica by
// replica (add), in the scope's replica order.
type lines struct {
	grid []snapshot.Window
	step time.Duration
	// fleet holds, per timelineSpecs entry, the running fleet aggregate.
	fleet []fleetLine
	// fresh is, per interval, whether any replica added was scraped in
	// the snapshot.Lookback before its end (freshIntervals of the fleet).
	fresh []bool
	// replicas maps a replica's name to its values: per timelineSpecs
	// entry, nil when the replica lacks the signal, else per interval the
	// value and count, and for a quantile the report.Point.Edge (stride values
	// per interval).
	replicas map[string][][]float64
	// sparse holds, for a pushdown survey, the p95 values of a replica's
	// sample reads (see sparseLine).
	sparse map[string]*sparseLine
	// members holds the membership of every serving replica added.
	members []membership
	// resets holds, per replica, the intervals in which one of its
	// request histograms was reset (a restart, where no process start
	// time says so: see membership.resetsBreak).
	resets map[string][]int
	// hist says which timelines add measures: all (nil), or those whose
	// stat is p95 (true) or not (false), for a pushdown survey.
	hist *bool
	// edges holds, for a pushdown survey, each replica's fresh edges
	// (scope.edgesFresh).
	edges map[string][]bool
}

// fleetLine is the fleet aggregate of one timeline signal per interval.
type fleetLine struct {
	has bool // some replica carries the signal
	// p95: the replicas' histogram increases merged so far, in replica
	// order (histFold: as a merge of all at once would, to the bit).
	hist []histFold
	// mean: the sum of the replicas' interval means, their sample count
	// and the number of replicas evaluated.
	sum, n []float64
	k      []int
	// rate: the replicas' counter increases summed (snapshot.SumIncreases).
	inc []*snapshot.CounterIncrease
}

func newLines(grid []snapshot.Window, step time.Duration) *lines {
	l := &lines{grid: grid, step: step, fleet: make([]fleetLine, len(timelineSpecs)),
		fresh: make([]bool, len(grid)), replicas: map[string][][]float64{}, sparse: map[string]*sparseLine{}, resets: map[string][]int{}}
	for i, spec := range timelineSpecs {
		f := &l.fleet[i]
		switch spec.stat {
		case "p95":
			f.hist = make([]histFold, len(grid))
		case "mean":
			f.sum, f.n, f.k = make([]float64, len(grid)), make([]float64, len(grid)), make([]int, len(grid))
		case "rate":
			f.inc = make([]*snapshot.CounterIncrease, len(grid))
		}
	}
	return l
}

// add evaluates replica r of sc on every interval of the grid at which it
// was scraped in the lookback (freshIntervals; elsewhere none of its
// series can stand for the interval's end), records its values and adds
// them to the fleet's.
func (l *lines) add(sc *scope, r int) { l.addOnly(sc, r, nil) }

// addOnly is add on the intervals only marks (nil: all), of the
// timelines l.hist chooses. A replica added twice, its histograms apart
// (a pushdown survey's sample reads), keeps the values of both.
func (l *lines) addOnly(sc *scope, r int, only []bool) {
	fresh := sc.freshIntervals(r, l.grid)
	if only != nil {
		for i := range fresh {
			fresh[i] = fresh[i] && only[i]
		}
	}
	name := sc.replicas[r].t.Name
	if l.edges != nil && only == nil {
		l.edges[name] = sc.edgesFresh(r, l.grid)
	}
	// Only the intervals the replica was scraped for are evaluated (the
	// others cannot be, and the grid of windows given apart spans hours
	// never read): idx maps the sub-grid back.
	var idx []int
	var sub []snapshot.Window
	for i, ok := range fresh {
		l.fresh[i] = l.fresh[i] || ok
		if ok {
			idx = append(idx, i)
			sub = append(sub, l.grid[i])
		}
	}
	vals := l.replicas[name]
	if vals == nil {
		vals = make([][]float64, len(timelineSpecs))
	}
	for si, spec := range timelineSpecs {
		if !sc.match(r, spec.id).Found() || (l.hist != nil && *l.hist != (spec.stat == "p95")) {
			continue
		}
		f := &l.fleet[si]
		f.has = true
		stride := spec.stride()
		if only != nil && spec.stat == "p95" && vals[si] == nil {
			// A pushdown survey's sample reads: a few intervals of a
			// line whose others the engine sums (sparseLine).
			sl := l.sparse[name]
			if sl == nil {
				sl = &sparseLine{}
				l.sparse[name] = sl
			}
			sl.has |= 1 << si
			sc.replicaHistEach(spec.id, r, sub, func(k int, inc snapshot.HistogramIncrease, err error) {
				if err != nil {
					return
				}
				p := histP95(time.Time{}, inc)
				sl.points = append(sl.points, sparsePoint{si: uint8(si), i: int32(idx[k]), v: [3]float64{float64(p.Value), float64(p.Count), float64(p.Edge)}})
				f.hist[idx[k]].add(inc)
				l.noteReset(name, idx[k], inc)
			})
			continue
		}
		v := vals[si] // a replica's earlier sample read keeps its intervals
		if v == nil {
			v = newLine(stride, len(l.grid))
			vals[si] = v
		}
		switch spec.stat {
		case "p95":
			// Each interval's increase is folded into the fleet's as it
			// is made (histFold.add copies it), in memory reused for the next.
			sc.replicaHistEach(spec.id, r, sub, func(k int, inc snapshot.HistogramIncrease, err error) {
				if err != nil {
					return
				}
				p := histP95(time.Time{}, inc)
				i := stride * idx[k]
				v[i], v[i+1], v[i+2] = float64(p.Value), float64(p.Count), float64(p.Edge)
				f.hist[idx[k]].add(inc)
				l.noteReset(name, idx[k], inc)
			})
		case "mean":
			s := sc.replicaGauge(spec.id, r)
			if s == nil {
				continue
			}
			for k, st := range s.GaugeSteps(sub) {
				i := idx[k]
				if st.Err != nil {
					continue
				}
				g := st.Result
				v[stride*i], v[stride*i+1] = g.Mean, float64(g.N)
				f.sum[i] += g.Mean
				f.n[i] += float64(g.N)
				f.k[i]++
			}
		case "rate":
			m := sc.match(r, spec.id)
			for k, st := range m.Family.IncreaseSteps(sub, sc.selector(m.Family)) {
				i := idx[k]
				if st.Err != nil {
					continue
				}
				inc := st.Result
				v[stride*i], v[stride*i+1] = inc.Rate(), inc.Value
				if f.inc[i] == nil {
					c := snapshot.SumIncreases(inc)
					f.inc[i] = &c
				} else {
					c := snapshot.SumIncreases(*f.inc[i], inc)
					f.inc[i] = &c
				}
			}
		}
	}
	if sl := l.sparse[name]; sl != nil && len(sl.points) > len(l.grid) {
		// Most of the replica's intervals (a replica read whole):
		// dense lines cost less.
		vals = sl.dense(vals, len(l.grid))
		delete(l.sparse, name)
	}
	l.replicas[name] = vals
	if only == nil && !isCompanion(sc.replicas[r].res) {
		l.members = append(l.members, sc.membership(r))
	}
}

// noteReset records that replica name's histogram increase inc over
// interval i counted a reset.
func (l *lines) noteReset(name string, i int, inc snapshot.HistogramIncrease) {
	if inc.Resets > 0 && !slices.Contains(l.resets[name], i) {
		l.resets[name] = append(l.resets[name], i)
	}
}

// histP95 is the point at t of the p95 of an interval's increase: its
// value, observations and edge (report.QuantilePoint), or NaN and 0 when
// it holds none.
func histP95(t time.Time, inc snapshot.HistogramIncrease) report.Point {
	n := inc.Histogram.Total()
	if !(n > 0) {
		return report.Point{T: t, Value: rules.Number(math.NaN())}
	}
	q := report.QuantileOf(inc.Histogram.Quantile(0.95))
	q.Count = rules.Number(n)
	return report.QuantilePoint(t, q)
}

// gaugeAggregation is how signal id combines across engines and replicas:
// averaged (KV usage, GPU utilisation) or summed.
func (sc *scope) gaugeAggregation(id catalog.SignalID) snapshot.Aggregation {
	spec, _ := sc.set.catalog.Signal(id)
	if spec.Aggregation == snapshot.AggregateMean {
		return snapshot.AggregateMean
	}
	return snapshot.AggregateSum
}

// timelines returns the fleet timelines of the signals some replica
// carries. A fleet point is NaN where no replica was scraped in the
// lookback before its end. Histogram points are the p95 of the replicas'
// increases merged; gauge points the sum of the replicas' interval means
// (their mean, for a signal averaged across engines such as KV usage),
// which is the mean of the fleet's sum when the replicas are scraped
// together and, unlike it, does not depend on how their scrapes are
// staggered; counter points the summed increase per second.
func (l *lines) timelines(sc *scope) *timelines {
	members := make([]membership, len(l.members))
	for i, m := range l.members {
		members[i] = m.withResets(l.resets[m.name], l.grid)
	}
	tl := &timelines{step: l.step, grid: l.grid, replicas: l.replicas, sparse: l.sparse, members: members, means: map[catalog.SignalID][]float64{}}
	for si, spec := range timelineSpecs {
		f := &l.fleet[si]
		if !f.has {
			continue
		}
		agg := sc.gaugeAggregation(spec.id)
		t := report.Timeline{Signal: string(spec.id), Stat: spec.stat, Step: l.step, Points: make([]report.Point, len(l.grid))}
		var means []float64
		if spec.stat == "p95" {
			means = make([]float64, len(l.grid))
		}
		for i, w := range l.grid {
			v, n := math.NaN(), 0.0
			if means != nil {
				means[i] = math.NaN()
			}
			if l.fresh[i] {
				switch spec.stat {
				case "p95":
					if h := f.hist[i].inc; h != nil {
						t.Points[i] = histP95(w.End, *h)
						if h.Histogram.Count > 0 {
							means[i] = h.Histogram.Mean()
						}
						continue
					}
				case "mean":
					if f.k[i] > 0 {
						v, n = f.sum[i], f.n[i]
						if agg == snapshot.AggregateMean {
							v /= float64(f.k[i])
						}
					}
				case "rate":
					if c := f.inc[i]; c != nil {
						v, n = c.Rate(), c.Value
					}
				}
			}
			t.Points[i] = report.Point{T: w.End, Value: rules.Number(v), Count: rules.Number(n)}
		}
		tl.list = append(tl.list, t)
		if means != nil {
			tl.means[spec.id] = means
		}
	}
	return tl
}

// A Surveyor builds the Survey of evidence read one target at a time
// (snapshot.ReadEach), so that a diagnosis of a long history holds one
// target's samples at once instead of the fleet's: memory grows with
// replicas x intervals (and 8 bytes a scrape), not with samples.
//
// Add the targets in the evidence's order (by name), then call Survey.
// The timeline grid depends on the fleet's first and last scrape, known
// only at the end: the Surveyor fixes it from the first target and checks
// it when the last is in. When a replica started or stopped in another
// minute than the first one read, Survey says so (again) and the targets
// must be added once more, on the grid now known; the second Survey is
// final. Either way the result is the one Diagnose computes from the
// whole evidence. A read whose snapshot.Options.Revisit starts a new
// Surveyor reads a history over 6 h once, not twice (see Revisit).
type Surveyor struct {
	set     settings
	base    map[string]string // the scope's selector: model_name when Options.Model is set
	planned bool
	grid    []snapshot.Window
	step    time.Duration
	lines   *lines
	missed  bool // a serving target was added before the grid was fixed
	pass    int
	next    int                        // index of the next target of a later pass
	targets []*snapshot.Target         // the targets of the first pass, labels only
	res     []catalog.TargetResolution // their resolutions
	starts  map[string]int             // distinct process start times per target
	// vllm and companions accumulate the scrape statistics of the
	// serving targets (scope.scrapeStats), target by target.
	vllm, companions scrapeAcc
	// relist is set when a target came with a family the survey measures
	// listed by its labels alone (LabelsOnlyFor foretold another match):
	// every target is added once more, read with LabelsOnlyFor listing
	// nothing (relisting).
	relist, relisting bool
	// skip holds, by target, the families a read of the windows may leave
	// out (see skippable).
	skip map[string][]string
	// candidates are the metrics of the surveyed signals' candidates
	// (catalog.Catalog.SignalMetrics), for LabelsOnlyFor; histCandidates
	// those of the p95 timelines, which a pushdown survey lists.
	candidates, histCandidates []string
	// push is set by PushDown.
	push *pushdown
}

// surveyed are the signals whose samples a survey measures: the
// timelines' and the process start times.
var surveyed = func() []catalog.SignalID {
	ids := []catalog.SignalID{catalog.SignalProcessStart}
	for _, spec := range timelineSpecs {
		ids = append(ids, spec.id)
	}
	return ids
}()

// NewSurveyor returns a Surveyor for a diagnosis under opts. Where opts
// gives the windows (Baseline, Incident), the Survey keeps them, as
// Diagnose does, instead of choosing its own.
func NewSurveyor(opts Options) (*Surveyor, error) {
	set, err := opts.settings()
	if err != nil {
		return nil, err
	}
	var hist []catalog.SignalID
	for _, spec := range timelineSpecs {
		if spec.stat == "p95" {
			hist = append(hist, spec.id)
		}
	}
	s := &Surveyor{set: set, candidates: set.catalog.SignalMetrics(surveyed...), histCandidates: set.catalog.SignalMetrics(hist...)}
	if set.Model != "" {
		s.base = map[string]string{"model_name": set.Model}
	}
	return s, nil
}

// Add adds the next target. The Surveyor keeps its labels and scrape
// times (8 bytes a scrape), not its samples.
func (s *Surveyor) Add(t *snapshot.Target) error {
	t = t.JoinAddresses()
	if s.push.rawPass() {
		return fmt.Errorf("diagnose: survey: target %q: the survey awaits its SampleReads (AddSamples)", t.Name)
	}
	if s.pass > 0 {
		if s.next >= len(s.targets) || s.targets[s.next].Name != t.Name {
			return fmt.Errorf("diagnose: survey pass %d: target %q is not the one of the first pass at that place", s.pass+1, t.Name)
		}
		s.next++
	} else {
		st := stripSamples(t)
		s.targets = append(s.targets, st)
		s.res = append(s.res, s.set.catalog.ResolveTarget(st))
	}
	tr := s.set.catalog.ResolveTarget(t)
	if (s.relisting || !s.relist) && listedMatch(&tr, s.push != nil) {
		if s.relisting {
			return fmt.Errorf("diagnose: survey pass %d: target %q has a family the survey measures without samples: read the targets again, with LabelsOnlyFor", s.pass+1, t.Name)
		}
		s.relist = true
	}
	if s.pass == 0 || s.relisting {
		if s.skip == nil {
			s.skip = map[string][]string{}
		}
		s.skip[t.Name] = skippable(t, &tr)
	}
	sc := newScope(s.set, s.base, []replica{{t: t, res: &tr}})
	if len(servingReplicas(sc.replicas, s.base)) == 0 {
		return nil
	}
	if s.pass == 0 || s.relisting {
		s.record(sc)
	}
	if s.pass == 0 {
		if isCompanion(&tr) {
			s.companions.add(t.Scrapes)
		} else {
			s.vllm.add(t.Scrapes)
		}
	}
	if s.relist && !s.relisting {
		return nil // its timelines are those of the next pass
	}
	if !s.planned {
		st := sc.scrapeStats()
		if st.maxPerTarget < 3 {
			s.missed = true
			return nil
		}
		s.grid, s.step = timelineGrid(st.first, st.last, st.interval, s.set.TimelineStep)
		s.lines, s.planned = s.newLines(s.grid, s.step), true
	}
	s.lines.add(sc, 0)
	return nil
}

// newLines returns the lines of a survey on grid: for a pushdown survey,
// without the histograms, recording the replicas' fresh edges.
func (s *Surveyor) newLines(grid []snapshot.Window, step time.Duration) *lines {
	l := newLines(grid, step)
	if s.push != nil {
		no := false
		l.hist, l.edges = &no, map[string][]bool{}
		s.push = &pushdown{engine: s.push.engine}
	}
	return l
}

// LabelsOnly returns the metrics of Options.Selection whose samples a
// survey does not measure, for snapshot.Options.LabelsOnly of the read
// that feeds it: all but those of the timeline signals and of the
// process start times. Their families' labels, which resolve the catalog
// (names, the "_created" families and the engine label present, bucket
// layouts) and complete the windows' evidence, are what the survey keeps
// of them.
func (s *Surveyor) LabelsOnly() []string {
	measured := s.candidates
	if s.push != nil {
		measured = slices.DeleteFunc(slices.Clone(measured), func(m string) bool { return slices.Contains(s.histCandidates, m) })
	}
	var out []string
	for _, m := range s.set.catalog.EvidenceMetrics() {
		if !slices.Contains(measured, m) {
			out = append(out, m)
		}
	}
	return out
}

// LabelsOnlyFor is for snapshot.TargetSelection.LabelsOnly of the read
// that feeds the Surveyor (snapshot.Options.ForTarget), beside
// LabelsOnly: of the candidate metrics of the
// signals a survey measures, those the catalog does not match on the
// target sketched (a signal's later candidates where an earlier one is
// present, an older vLLM's names beside a newer's), which the survey then
// lists by their labels instead of decoding. On a vLLM 0.11 fleet that is
// about a third of the series a survey would decode. It is safe for
// concurrent use.
//
// The match on the sketch is the match on the target read (the catalog
// matches by family names and types, which the sketch has). Should a
// target read prove otherwise, a family the survey measures listed with
// none of its samples, the Surveyor notices, and Survey asks for every
// target once more (again), which LabelsOnlyFor then lists nothing of: the
// survey is the one of a read that decodes them all.
func (s *Surveyor) LabelsOnlyFor(sketch *snapshot.Target) []string {
	if s.relisting {
		return nil
	}
	tr := s.set.catalog.ResolveTarget(sketch)
	measured := map[string]bool{}
	for _, id := range surveyed {
		if m, ok := tr.Match(id); ok && m.Found() {
			measured[m.Family.Name] = true
		}
	}
	var out []string
	for _, m := range s.candidates {
		if s.push != nil && slices.Contains(s.histCandidates, m) {
			continue // in LabelsOnly
		}
		if !measured[m] && !measured[snapshot.FamilyBaseName(m)] {
			out = append(out, m)
		}
	}
	return out
}

// listedMatch reports whether a signal a survey measures matches, in tr,
// a family without any sample: one listed by its labels alone (a family
// read with samples has some, or it is not in the evidence). A pushdown
// survey lists its histograms so (pushed).
func listedMatch(tr *catalog.TargetResolution, pushed bool) bool {
	for _, id := range surveyed {
		if pushed && pushedSignal(id) {
			continue
		}
		m, ok := tr.Match(id)
		if !ok || !m.Found() {
			continue
		}
		if !familySampled(m.Family) {
			return true
		}
	}
	return false
}

// skippable returns the families of target t, as read for a survey and
// matched by tr, that a read of the windows of its diagnosis may leave
// out (Survey.SkipFor), sorted: those read by their labels alone (no
// sample: every sample of theirs lies at a time of the target's decoded
// samples, see snapshot.Options.LabelsOnly), matched by no signal (a
// diagnosis measures none of their samples: Options.Trimmer keeps none),
// and sharing no sample name with a family that is read. The windows' read
// decodes every family the survey decoded, so the times of the skipped
// families are among those it reads, and the target's scrapes are the
// same; their labels come from the survey (Survey.complete).
func skippable(t *snapshot.Target, tr *catalog.TargetResolution) []string {
	measured := map[string]bool{}
	for _, m := range tr.Matches {
		if m.Found() {
			measured[m.Family.Name] = true
		}
	}
	read := map[string]bool{} // the sample names of the families read
	var out []string
	for name, f := range t.Families {
		if !measured[name] && !familySampled(f) {
			out = append(out, name)
			continue
		}
		for _, s := range f.Series {
			read[s.Name] = true
		}
		if len(f.Histograms) > 0 {
			read[name+"_bucket"], read[name+"_sum"], read[name+"_count"] = true, true, true
		}
	}
	out = slices.DeleteFunc(out, func(name string) bool {
		return slices.ContainsFunc((snapshot.Options{Metrics: []string{name}}).MetricSampleNames(), func(n string) bool { return read[n] })
	})
	slices.Sort(out)
	return out
}

// familySampled reports whether a series of f holds a sample.
func familySampled(f *snapshot.Family) bool {
	for _, s := range f.Series {
		if len(s.T) > 0 {
			return true
		}
	}
	for _, h := range f.Histograms {
		if len(h.T) > 0 {
			return true
		}
	}
	return false
}

// record keeps what the report says of the whole history of target t
// (sc's one replica) beyond the timelines: its process start times.
func (s *Surveyor) record(sc *scope) {
	if s.starts == nil {
		s.starts = map[string]int{}
	}
	s.starts[sc.replicas[0].t.Name] = sc.processStarts(0)
}

// ErrSurveyGroups is returned by Surveyor.Survey for evidence that
// Diagnose splits into groups (several models, or Options.By): a survey
// covers one scope. Diagnose such evidence read whole.
var ErrSurveyGroups = errors.New("diagnose: the evidence splits into groups; a survey covers one scope")

// Survey returns the survey of the targets added. When again is true the
// grid fixed from the first target was not the fleet's, or a target came
// with a family the survey measures listed by its labels (see
// LabelsOnlyFor): add every target once more, in the same order, read
// again where LabelsOnlyFor chose what was read, and call Survey again.
func (s *Surveyor) Survey() (sv *Survey, again bool, err error) {
	if len(s.targets) == 0 {
		return nil, false, errors.New("diagnose: the evidence holds no target")
	}
	if s.pass > 0 && s.next != len(s.targets) {
		return nil, false, fmt.Errorf("diagnose: survey pass %d: %d of %d targets added", s.pass+1, s.next, len(s.targets))
	}
	all := make([]replica, len(s.targets))
	for i, t := range s.targets {
		all[i] = replica{t: t, res: &s.res[i]}
	}
	groups, by, err := splitGroups(s.set, all)
	if err != nil {
		return nil, false, err
	}
	if len(groups) != 1 {
		return nil, false, fmt.Errorf("%w: %d groups by %s", ErrSurveyGroups, len(groups), by)
	}
	sc := newScope(s.set, groups[0].sel, groups[0].reps)
	st := pickScrapes(&s.vllm, &s.companions)
	if st.times.len() == 0 {
		return nil, false, fmt.Errorf("diagnose: %s: no scrape", groupName(sc.group))
	}
	var tl *timelines
	relist := s.relist && !s.relisting
	if st.maxPerTarget >= 3 {
		grid, step := timelineGrid(st.first, st.last, st.interval, s.set.TimelineStep)
		if relist || !s.planned || s.missed || step != s.step || !slices.Equal(grid, s.grid) {
			if s.pass > 0 {
				return nil, false, fmt.Errorf("diagnose: survey pass %d: the grid moved again", s.pass+1)
			}
			s.grid, s.step, s.planned, s.missed = grid, step, true, false
			s.lines = s.newLines(grid, step)
			s.pass, s.next, s.relisting = s.pass+1, 0, s.relist
			return nil, true, nil
		}
		if s.push != nil && !s.push.fetched {
			if !s.push.planned {
				more, err := s.planPush(sc, st.last)
				if err != nil {
					return nil, false, err
				}
				if more {
					return nil, true, nil // SampleReads
				}
			} else if n := len(s.push.pending); n > 0 {
				return nil, false, fmt.Errorf("diagnose: survey: %d targets of SampleReads not added", n)
			}
			if err := s.fetchPush(sc); err != nil {
				return nil, false, err
			}
		}
		tl = s.lines.timelines(sc)
	} else if relist {
		// No timelines; the process start times are read again.
		s.pass, s.next, s.relisting = s.pass+1, 0, true
		return nil, true, nil
	}
	sv = &Survey{set: s.set, group: groups[0].sel, st: st, tl: tl, targets: s.targets, starts: s.starts, skip: s.skip, passes: s.pass + 1}
	if s.push != nil && s.lines != nil {
		sv.push = s.push
	}
	return sv, false, nil
}

// stripSamples returns a copy of t with its labels and none of its
// samples or scrapes (the Surveyor keeps the scrape times apart, 8 bytes
// each).
func stripSamples(t *snapshot.Target) *snapshot.Target {
	out := &snapshot.Target{Name: t.Name, NameFrom: t.NameFrom, Families: make(map[string]*snapshot.Family, len(t.Families))}
	for name, f := range t.Families {
		out.Families[name] = f.WithoutSamples()
	}
	return out
}

// A Survey is what a diagnosis takes from the whole history before it
// chooses its windows: the scrape statistics, the fleet's timelines and
// every replica's (on a grid of at most MaxIntervals), and the targets'
// labels. Built by a Surveyor from evidence read one target at a time,
// it lets a diagnosis read only its windows afterwards: Diagnose with
// Options.Survey set takes the timelines, the change point and the
// windows from the survey, and the window measures from the evidence
// given, and returns the report Diagnose gives for the whole evidence.
type Survey struct {
	set     settings
	group   map[string]string
	st      scrapeStats
	tl      *timelines
	targets []*snapshot.Target // labels only
	starts  map[string]int     // distinct process start times per target (see scopeWarnings)
	skip    map[string][]string
	passes  int
	// push is a pushdown survey's engine state (Surveyor.PushDown), for
	// the replicas' timelines.
	push *pushdown
	// red is what Reduce measured of the windows' targets.
	red *reduction
}

// SkipFor is for snapshot.TargetSelection.Skip of the read of the windows
// (snapshot.Options.ForTarget, the same metrics as the survey's read):
// the families of the target sketched that the survey read by their
// labels and that no signal matches, which the diagnosis does not measure
// (see Options.Trimmer) and whose times are among those of the families
// read. Their labels come from the survey: Diagnose with the survey
// completes the windows' evidence with them, and the report is the one of
// a read of the windows that kept them. It is safe for concurrent use.
func (sv *Survey) SkipFor(sketch *snapshot.Target) []string {
	return sv.skip[sketch.Name]
}

// Windows returns the baseline and incident windows the diagnosis will
// compare (zero when there are none: a single scrape per replica).
func (sv *Survey) Windows() (baseline, incident snapshot.Window) {
	sc := newScope(sv.set, sv.group, nil)
	base, inc, _, _ := sc.chooseWindows(sv.st, sv.tl)
	if base.ok && !base.lifetime {
		baseline = base.w
	}
	if inc.ok && !inc.lifetime {
		incident = inc.w
	}
	return baseline, incident
}

// ReadRanges returns the time ranges a diagnosis with this survey reads:
// the windows, each widened as Options.Selection widens given windows,
// merged when they overlap; nil when a window is open (lifetime values),
// and then the evidence is read whole.
func (sv *Survey) ReadRanges() []snapshot.Window {
	b, i := sv.Windows()
	if b.IsZero() || i.IsZero() {
		return nil
	}
	return Options{Baseline: b, Incident: i}.ReadRanges()
}

// String describes the survey: targets, scrapes, grid and passes.
func (sv *Survey) String() string {
	s := fmt.Sprintf("survey of %s, %s from %s to %s",
		textfmt.Plural(len(sv.targets), "target", "targets"), textfmt.Plural(sv.st.times.len(), "scrape", "scrapes"),
		sv.st.first.UTC().Format(time.RFC3339), sv.st.last.UTC().Format(time.RFC3339))
	if sv.tl != nil {
		s += fmt.Sprintf(", %s of %v", textfmt.Plural(len(sv.tl.grid), "interval", "intervals"), sv.tl.step)
	}
	return s + fmt.Sprintf(", %s over the targets", textfmt.Plural(sv.passes, "pass", "passes"))
}

// complete returns ev with what the survey saw and the windows' evidence
// lacks: the targets not scraped in the windows, and the families of a
// target seen only outside them (a metric renamed by an upgrade), with
// their labels and no samples. A diagnosis of the result resolves and
// lists the replicas as one of the whole evidence does; ev is not
// modified.
func (sv *Survey) complete(ev *snapshot.Evidence) *snapshot.Evidence {
	byName := make(map[string]*snapshot.Target, len(ev.Targets))
	for _, t := range ev.Targets {
		byName[t.Name] = t
	}
	out := *ev
	out.Targets = make([]*snapshot.Target, 0, max(len(ev.Targets), len(sv.targets)))
	changed := false
	for _, st := range sv.targets {
		t := byName[st.Name]
		if t == nil {
			out.Targets = append(out.Targets, st)
			changed = true
			continue
		}
		delete(byName, st.Name)
		cloned := false
		for name, f := range st.Families {
			g := completeFamily(t.Families[name], f)
			if g == t.Families[name] {
				continue
			}
			if !cloned {
				c := *t
				c.Families = maps.Clone(t.Families)
				t, cloned = &c, true
			}
			t.Families[name] = g
			changed = true
		}
		out.Targets = append(out.Targets, t)
	}
	if !changed && len(byName) == 0 {
		return ev
	}
	for _, t := range ev.Targets {
		if byName[t.Name] != nil {
			out.Targets = append(out.Targets, t)
		}
	}
	slices.SortStableFunc(out.Targets, func(a, b *snapshot.Target) int { return strings.Compare(a.Name, b.Name) })
	return &out
}

// completeFamily returns fam with the series the survey's copy of it
// (whole, labels only) holds and fam lacks, in the survey's order, which
// is the order of a whole read; fam itself when it lacks none, the
// survey's copy when fam is nil.
func completeFamily(fam, whole *snapshot.Family) *snapshot.Family {
	if fam == nil {
		return whole
	}
	if len(fam.Series) >= len(whole.Series) && len(fam.Histograms) >= len(whole.Histograms) {
		return fam
	}
	out := *fam
	out.Series = completeSeries(fam.Series, whole.Series, func(s *snapshot.Series) string {
		return s.Name + "\xff" + s.Labels.String()
	})
	out.Histograms = completeSeries(fam.Histograms, whole.Histograms, func(h *snapshot.HistogramSeries) string {
		return h.Labels.String() + "\xff" + fmt.Sprint(h.Bounds)
	})
	return &out
}

// completeSeries returns the members of whole in order, each replaced by
// the member of have with the same key where there is one (several with
// one key, a histogram's layout segments, in their order), then any
// member of have that whole lacks.
func completeSeries[S any](have, whole []S, key func(S) string) []S {
	byKey := make(map[string][]S, len(have))
	for _, s := range have {
		byKey[key(s)] = append(byKey[key(s)], s)
	}
	out := make([]S, 0, len(whole))
	for _, w := range whole {
		k := key(w)
		if q := byKey[k]; len(q) > 0 {
			out = append(out, q[0])
			byKey[k] = q[1:]
			continue
		}
		out = append(out, w)
	}
	for _, s := range have {
		k := key(s)
		if q := byKey[k]; len(q) > 0 && any(q[0]) == any(s) {
			out = append(out, s)
			byKey[k] = q[1:]
		}
	}
	return out
}

// clone returns a copy of tl whose list and replicas can be rewritten.
func (tl *timelines) clone() *timelines {
	c := *tl
	c.list = slices.Clone(tl.list)
	c.replicas = maps.Clone(tl.replicas)
	c.sparse = maps.Clone(tl.sparse)
	return &c
}
