package diagnose

import (
	"math"
	"slices"
	"sort"
	"time"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/report"
	"github.com/whyslow/whyslow/rules"
	"github.com/whyslow/whyslow/snapshot"
)

// timelineSpec is one timeline Diagnose builds.
type timelineSpec struct {
	id   catalog.SignalID
	stat string // "p95", "mean", "rate"
}

// timelineSpecs are the timelines of a report, fleet and per replica.
var timelineSpecs = []timelineSpec{
	{catalog.SignalTTFT, "p95"},
	{catalog.SignalQueueTime, "p95"},
	{catalog.SignalPrefillTime, "p95"},
	{catalog.SignalTPOT, "p95"},
	{catalog.SignalITL, "p95"},
	{catalog.SignalE2E, "p95"},
	{catalog.SignalWaiting, "mean"},
	{catalog.SignalRunning, "mean"},
	{catalog.SignalKVUsage, "mean"},
	{catalog.SignalPreemptions, "rate"},
	{catalog.SignalGPUUtil, "mean"},
}

// stride is the number of values lines keeps per interval of a replica's
// timeline: value and count, and the report.Point.Edge of a quantile.
func (s timelineSpec) stride() int {
	if s.stat == "p95" {
		return 3
	}
	return 2
}

// timelines holds the per-interval series of one scope on one grid: the
// fleet's, and the values of every replica (see lines.replicas) from
// which addReplicas adds the timelines of the replicas a report shows.
type timelines struct {
	step     time.Duration
	grid     []snapshot.Window
	list     []report.Timeline
	replicas map[string][][]float64
	// sparse are the values of replicas not yet in replicas (see
	// replicaValues).
	sparse map[string]*sparseLine
	// members is when the serving replicas joined, left or were away.
	members []membership
	// means holds, per histogram signal of the fleet's timelines, the
	// exact mean (_sum/_count) of each interval's merged increase (NaN
	// where unknown): what a quantile inside one wide bucket hides.
	means map[catalog.SignalID][]float64
}

// fleet returns the fleet timeline of signal id, or nil.
func (tl *timelines) fleet(id catalog.SignalID) *report.Timeline {
	if tl == nil {
		return nil
	}
	for i := range tl.list {
		if tl.list[i].Signal == string(id) && tl.list[i].Replica == "" {
			return &tl.list[i]
		}
	}
	return nil
}

// timelinePoints returns the point values and counts of t (nil for a
// nil t).
func timelinePoints(t *report.Timeline) (values, counts []float64) {
	if t == nil {
		return nil, nil
	}
	values, counts = make([]float64, len(t.Points)), make([]float64, len(t.Points))
	for i, p := range t.Points {
		values[i], counts[i] = float64(p.Value), float64(p.Count)
	}
	return values, counts
}

// MaxReplicaTimelines bounds the per-replica timelines of a report: a
// fleet of at most this many replicas gets every replica's timelines; a
// larger one gets those of the replicas that stand out (see
// standoutReplicas), so that a report on 1,000 pods stays a report (each
// per-replica timeline costs every interval's increase and about 25 KB of
// JSON) and its plots stay readable. The fleet timelines, on which the
// change-point search and the facts are computed, are never bounded.
const MaxReplicaTimelines = 16

// buildTimelines evaluates the timelines of every replica of the scope
// over grid, and the fleet's from them (see lines). Histogram quantiles
// of an interval are those of the observations made in it, merged across
// replicas before the quantile is taken; gauges are interval means;
// counters per-second rates. The report shows the per-replica timelines
// of the replicas addReplicas picks.
func (sc *scope) buildTimelines(grid []snapshot.Window, step time.Duration) *timelines {
	if len(grid) < 2 {
		return nil
	}
	l := newLines(grid, step)
	for r := range sc.replicas {
		l.add(sc, r)
	}
	return l.timelines(sc)
}

// addReplicas adds the per-replica timelines of the replicas at the
// given indexes (into sc.replicas), each signal's after its fleet
// timeline, replicas in sc.replicas order.
func (sc *scope) addReplicas(tl *timelines, replicas []int) {
	if tl == nil || len(replicas) == 0 {
		return
	}
	sc.fillReplicas(tl, replicas)
	sel := map[int]bool{}
	for _, r := range replicas {
		sel[r] = true
	}
	var list []report.Timeline
	for si, spec := range timelineSpecs {
		f := tl.fleet(spec.id)
		if f == nil {
			continue
		}
		list = append(list, *f)
		for r, rp := range sc.replicas {
			if !sel[r] {
				continue
			}
			vals := tl.replicaValues(rp.t.Name)
			if vals == nil || vals[si] == nil {
				continue
			}
			v, k := vals[si], spec.stride()
			t := report.Timeline{Signal: string(spec.id), Stat: spec.stat, Replica: rp.t.Name, Step: tl.step, Points: make([]report.Point, len(tl.grid))}
			for i, w := range tl.grid {
				t.Points[i] = report.Point{T: w.End, Value: rules.Number(v[k*i]), Count: rules.Number(v[k*i+1])}
				if k > 2 {
					t.Points[i].Edge = rules.Number(v[k*i+2])
				}
			}
			list = append(list, t)
		}
	}
	tl.list = list
}

// freshIntervals reports, for each window of grid, whether replica r was
// scraped in the snapshot.Lookback before the window's end. Where it was
// not, no sample of its series stands for the end and every increase and
// gauge over the window is not evaluable (the edge rule of snapshot's
// windows), so the point is NaN without computing it: the grid of
// windows given apart (--baseline, --incident) spans hours that were
// never read. The fleet is fresh where any replica is (lines.add).
func (sc *scope) freshIntervals(r int, grid []snapshot.Window) []bool {
	scrapes := sc.replicas[r].t.Scrapes // ascending
	lookback := snapshot.Lookback.Milliseconds()
	out := make([]bool, len(grid))
	for i, w := range grid {
		end := w.End.UnixMilli()
		// The last scrape at or before end, if any, within the lookback.
		k := sort.Search(len(scrapes), func(j int) bool { return scrapes[j].Time.UnixMilli() > end }) - 1
		out[i] = k >= 0 && scrapes[k].Time.UnixMilli() > end-lookback
	}
	return out
}

// standoutReplicas returns the indexes of the replicas whose timelines a
// report shows: every replica when there are at most
// MaxReplicaTimelines, else the culprit the report names (when it is a
// replica) and then the replicas whose incident-window p95 of a latency
// signal (TTFT, TPOT, ITL, E2E) is highest relative to the fleet's, up to
// MaxReplicaTimelines.
func (sc *scope) standoutReplicas(rep *report.Report) []int {
	n := len(sc.replicas)
	if n <= MaxReplicaTimelines {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	fleetP95 := map[string]float64{}
	for _, s := range rep.Signals.Fleet {
		fleetP95[s.ID] = incidentP95(s)
	}
	type cand struct {
		r     int
		score float64
	}
	culprit := ""
	if c := rep.NamedCulprit(); c != nil && c.Kind == "replica" {
		culprit = c.Name
	}
	var cands []cand
	for r, rp := range sc.replicas {
		score := 0.0
		for _, s := range rep.Signals.Replicas[rp.t.Name] {
			switch catalog.SignalID(s.ID) {
			case catalog.SignalTTFT, catalog.SignalTPOT, catalog.SignalITL, catalog.SignalE2E:
				if f := fleetP95[s.ID]; f > 0 {
					if v := incidentP95(s) / f; v > score {
						score = v
					}
				}
			}
		}
		if rp.t.Name == culprit {
			score = math.Inf(1)
		}
		cands = append(cands, cand{r, score})
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].score > cands[j].score })
	out := make([]int, 0, MaxReplicaTimelines)
	for _, c := range cands[:MaxReplicaTimelines] {
		out = append(out, c.r)
	}
	sort.Ints(out)
	return out
}

// incidentP95 is a signal's incident-window p95, or NaN.
func incidentP95(s report.Signal) float64 {
	if s.Incident == nil {
		return math.NaN()
	}
	for _, q := range s.Incident.Quantiles {
		if q.Q == 0.95 {
			return float64(q.Value)
		}
	}
	return math.NaN()
}

// A sparseLine holds the p95 values a pushdown survey read from a
// replica's samples: its own intervals (its first, those after a gap),
// where the engine does not sum it. Held as dense lines they would be
// mostly NaN, on every replica; only the replicas a report shows are
// made dense (replicaValues).
type sparseLine struct {
	has    uint32 // bit si: the replica carries timelineSpecs[si]
	points []sparsePoint
}

// sparsePoint is the value, count and edge of interval i of
// timelineSpecs[si].
type sparsePoint struct {
	si uint8
	i  int32
	v  [3]float64
}

// newLine returns a replica's line of stride values per interval over n
// intervals: values NaN, counts and edges 0 (not evaluated).
func newLine(stride, n int) []float64 {
	v := make([]float64, stride*n)
	for i := range n {
		v[stride*i] = math.NaN()
	}
	return v
}

// replicaValues returns the values of replica name (see lines.replicas),
// its sparse p95 values made dense (sparseLine.dense); the values held
// where it has none.
func (tl *timelines) replicaValues(name string) [][]float64 {
	if sl := tl.sparse[name]; sl != nil {
		return sl.dense(tl.replicas[name], len(tl.grid))
	}
	return tl.replicas[name]
}

// dense returns vals, a replica's dense lines over n intervals, with
// sl's signals added as dense lines: a new slice, whose other lines are
// vals'. A signal's values are either sparse or dense, never both, so
// vals' lines are never written.
func (sl *sparseLine) dense(vals [][]float64, n int) [][]float64 {
	out := slices.Clone(vals)
	if out == nil {
		out = make([][]float64, len(timelineSpecs))
	}
	for si, spec := range timelineSpecs {
		if sl.has&(1<<si) != 0 {
			out[si] = newLine(spec.stride(), n)
		}
	}
	for _, p := range sl.points {
		k := timelineSpecs[p.si].stride() * int(p.i)
		copy(out[p.si][k:k+3], p.v[:])
	}
	return out
}
