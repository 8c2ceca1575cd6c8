package diagnose

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/whyslow/whyslow/internal/textfmt"
	"github.com/whyslow/whyslow/report"
	"github.com/whyslow/whyslow/snapshot"
)

// evalWindow is a window as the snapshot helpers take it, with how it is
// reported.
type evalWindow struct {
	w    snapshot.Window
	info report.WindowInfo
	// ok is false for a missing window (no baseline).
	ok bool
	// lifetime is set when values are since process start.
	lifetime bool
}

// text describes the window for facts (textfmt.Window).
func (e evalWindow) text() string {
	if !e.ok {
		return ""
	}
	return textfmt.Window(e.info.Start, e.info.End, e.lifetime)
}

// scrapeStats describes the scrapes of a scope.
type scrapeStats struct {
	first, last  time.Time // earliest and latest scrape
	maxPerTarget int       // most scrapes of one replica
	// firstEach and lastEach are the latest first scrape and the latest
	// last scrape over replicas: a window from firstEach to lastEach has
	// an edge sample on every replica scraped twice.
	firstEach, lastEach time.Time
	interval            time.Duration // median scrape interval; 0 when unknown
	times               *instants     // every scrape instant; nil when none
}

func (sc *scope) scrapeStats() scrapeStats {
	// The scrapes are those of vLLM targets (report.WindowInfo.Scrapes):
	// a companion exporter's (DCGM, node) are not the fleet's, unless
	// the scope holds nothing else.
	var vllm, companions scrapeAcc
	for _, r := range sc.replicas {
		if isCompanion(r.res) {
			companions.add(r.t.Scrapes)
		} else {
			vllm.add(r.t.Scrapes)
		}
	}
	return pickScrapes(&vllm, &companions)
}

// pickScrapes returns the statistics of the vLLM targets' scrapes, or of
// the companions' when no vLLM target was scraped.
func pickScrapes(vllm, companions *scrapeAcc) scrapeStats {
	if vllm.st.times.len() > 0 {
		return vllm.stats()
	}
	return companions.stats()
}

// scrapeAcc accumulates scrapeStats target by target (a Surveyor sees
// one target at a time), keeping the scrape instants and a count of each
// gap between consecutive scrapes of a target, from which the median
// interval is exact.
type scrapeAcc struct {
	st   scrapeStats
	gaps map[time.Duration]int
	n    int // gaps counted
}

// add adds the scrapes of one target.
func (a *scrapeAcc) add(scrapes []snapshot.Scrape) {
	if len(scrapes) == 0 {
		return
	}
	st := &a.st
	st.maxPerTarget = max(st.maxPerTarget, len(scrapes))
	f, l := scrapes[0].Time, scrapes[len(scrapes)-1].Time
	if st.first.IsZero() || f.Before(st.first) {
		st.first = f
	}
	if l.After(st.last) {
		st.last = l
	}
	if f.After(st.firstEach) {
		st.firstEach = f
	}
	if l.After(st.lastEach) {
		st.lastEach = l
	}
	if a.gaps == nil {
		a.gaps = map[time.Duration]int{}
	}
	if st.times == nil {
		st.times = &instants{}
	}
	st.times.add(scrapes)
	for i := 1; i < len(scrapes); i++ {
		a.gaps[scrapes[i].Time.Sub(scrapes[i-1].Time)]++
		a.n++
	}
}

// stats returns the statistics of the scrapes added. Their instants are
// shared, not copied (a survey of a long history holds every target's):
// add no scrapes after stats.
func (a *scrapeAcc) stats() scrapeStats {
	st := a.st
	if a.n > 0 {
		// The median gap: the one at index n/2 of all gaps sorted.
		gs := slices.Sorted(maps.Keys(a.gaps))
		k := a.n / 2
		for _, g := range gs {
			if k < a.gaps[g] {
				st.interval = g
				break
			}
			k -= a.gaps[g]
		}
	}
	return st
}

// count returns the number of scrape instants (over all replicas) in
// [start, end]; a zero start means from the first.
func (st scrapeStats) count(start, end time.Time) int {
	if end.IsZero() {
		return 0
	}
	lo := int64(math.MinInt64)
	if !start.IsZero() {
		lo = start.UnixNano()
	}
	return st.times.count(lo, end.UnixNano())
}

// instants are the scrape instants of targets, each target's ascending
// instants (Unix ns) as zigzag varints of the first, of the first gap and
// then of each gap's change: a byte an instant for a target scraped
// regularly, instead of eight.
type instants struct {
	buf  []byte
	runs []int // per target, its number of instants
	n    int
}

// add adds the instants of one target's scrapes, ascending.
func (in *instants) add(scrapes []snapshot.Scrape) {
	var prev, gap int64
	for i, s := range scrapes {
		t := s.Time.UnixNano()
		switch i {
		case 0:
			in.buf = binary.AppendVarint(in.buf, t)
		case 1:
			gap = t - prev
			in.buf = binary.AppendVarint(in.buf, gap)
		default:
			in.buf = binary.AppendVarint(in.buf, t-prev-gap)
			gap = t - prev
		}
		prev = t
	}
	in.runs = append(in.runs, len(scrapes))
	in.n += len(scrapes)
}

// len returns the number of instants; 0 for nil.
func (in *instants) len() int {
	if in == nil {
		return 0
	}
	return in.n
}

// count returns the number of instants in [lo, hi].
func (in *instants) count(lo, hi int64) int {
	if in == nil {
		return 0
	}
	n, off := 0, 0
	for _, k := range in.runs {
		var t, gap int64
		for i := range k {
			v, w := binary.Varint(in.buf[off:])
			off += w
			switch i {
			case 0:
				t = v
			case 1:
				gap = v
				t += gap
			default:
				gap += v
				t += gap
			}
			if t >= lo && t <= hi {
				n++
			}
		}
	}
	return n
}

func (st scrapeStats) window(w snapshot.Window, from string) evalWindow {
	return evalWindow{w: w, ok: true, info: report.WindowInfo{Start: w.Start, End: w.End, From: from, Scrapes: st.count(w.Start, w.End)}}
}

// clip clips a given window to the evidence, at both ends: a start
// before the first scrape moves to it, an end after the last scrape moves
// to it, each with a warning naming the scrape. A window wholly outside
// the evidence is left as given (nothing in it can be evaluated, and the
// signals say so). Scrapes at the Unix epoch (no time known) clip nothing.
func (st scrapeStats) clip(name string, w snapshot.Window) (snapshot.Window, []report.Warning) {
	first, last := knownTime(st.first), knownTime(st.last)
	if first.IsZero() || last.IsZero() || !w.End.After(first) || !w.Start.Before(last) {
		return w, nil
	}
	var warns []report.Warning
	const layout = "2006-01-02 15:04:05Z"
	if !w.Start.IsZero() && w.Start.Before(first) {
		warns = append(warns, warnf(report.WarnWindow, ErrWindowClipped, "%s window starts at %s, before the first scrape (%s): clipped to start there",
			name, w.Start.UTC().Format(layout), first.UTC().Format(layout)))
		w.Start = first
	}
	if w.End.After(last) {
		warns = append(warns, warnf(report.WarnWindow, ErrWindowClipped, "%s window ends at %s, after the last scrape (%s): clipped to end there",
			name, w.End.UTC().Format(layout), last.UTC().Format(layout)))
		w.End = last
	}
	return w, warns
}

// chooseWindows picks the baseline and incident windows of a scope.
//
//   - Given windows are used as given, clipped to the evidence at both
//     ends (see clip). A given Incident without a
//     Baseline compares with the Options.MaxWindow before it
//     ("preceding"), when at least one scrape interval precedes it.
//   - A single scrape per replica: the incident is the counters' lifetime
//     ("lifetime, not windowed") and there is no baseline.
//   - Two scrapes per replica (dumps taken before and after): only one
//     interval exists, so it is the incident ("whole"), and the baseline is
//     the lifetime before the first dump: the counters' values at the first
//     dump, since each process started ("lifetime"). That baseline may hold
//     older incidents and warm-up; a warning says so.
//   - Three or more: the change-point search on the timelines; when it
//     proposes a point, baseline and incident are the two sides
//     ("change-point"); otherwise the first and second half ("halves").
//     Either way each window is at most Options.MaxWindow long, next to
//     the change point (or the middle). An incident that ended before
//     the evidence did is a segment instead (findSegment): when the
//     search proposes no point, or one where the symptoms fell back, a
//     segment whose intervals differ from the others is the incident and
//     the window before it the baseline.
func (sc *scope) chooseWindows(st scrapeStats, tl *timelines) (base, inc evalWindow, cp *report.ChangePoint, warns []report.Warning) {
	o := sc.set.Options
	switch {
	case !o.Incident.IsZero():
		incW, w1 := st.clip("incident", o.Incident)
		warns = append(warns, w1...)
		inc = st.window(incW, "given")
		switch {
		case !o.Baseline.IsZero():
			baseW, w2 := st.clip("baseline", o.Baseline)
			warns = append(warns, w2...)
			base = st.window(baseW, "given")
		case st.interval > 0 && o.Incident.Start.Sub(st.first) >= st.interval:
			from := st.first
			if p := o.preceding(); !p.IsZero() && p.Start.After(from) {
				from = p.Start
			}
			base = st.window(snapshot.Window{Start: from, End: o.Incident.Start}, "preceding")
		default:
			warns = append(warns, warnf(report.WarnWindow, ErrNoBaseline, "no baseline: the incident window starts at the first scrape; symptoms are judged against SLO targets only"))
		}
		if tl != nil {
			cp = sc.searchChangePoint(st, tl)
		}
		return base, inc, cp, warns

	case st.maxPerTarget <= 1:
		inc = evalWindow{ok: true, lifetime: true, info: report.WindowInfo{End: knownTime(st.last), From: "lifetime", Scrapes: st.times.len()}}
		warns = append(warns, warnf(report.WarnWindow, ErrLifetimeWindow, "lifetime, not windowed: one scrape per replica, so every value is since the process started; there is no baseline, and symptoms are judged against SLO targets only"))
		return base, inc, nil, warns

	case st.maxPerTarget == 2:
		inc = st.window(snapshot.Window{Start: st.firstEach, End: st.lastEach}, "whole")
		base = evalWindow{w: snapshot.Window{End: st.firstEach}, ok: true, lifetime: true,
			info: report.WindowInfo{End: st.firstEach, From: "lifetime", Scrapes: st.count(time.Time{}, st.firstEach)}}
		warns = append(warns, warnf(report.WarnWindow, ErrLifetimeWindow, "two scrapes per replica: the incident is the interval between them and the baseline is the lifetime before the first (since each process started), which may include warm-up and older incidents"))
		return base, inc, nil, warns
	}

	cp = sc.searchChangePoint(st, tl)
	if onset, end := sc.searchSegment(st, tl, cp); onset != nil {
		b, _ := sc.around(st, onset.Time)
		i := snapshot.Window{Start: onset.Time, End: end}
		if mw := sc.set.MaxWindow; mw > 0 && i.Duration() > mw {
			i.End = i.Start.Add(mw)
		}
		base = st.window(b, "change-point")
		inc = st.window(i, "change-point")
		warns = append(warns, warnf(report.WarnWindow, ErrIncidentEnded, "the symptoms rose at %s and fell back at %s: the incident is the window between, and the baseline precedes it",
			onset.Time.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339)))
		return base, inc, onset, warns
	}
	if cp != nil && cp.Used {
		b, i := sc.around(st, cp.Time)
		base = st.window(b, "change-point")
		inc = st.window(i, "change-point")
		return base, inc, cp, warns
	}
	b, i := sc.around(st, st.first.Add(st.last.Sub(st.first)/2))
	base = st.window(b, "halves")
	inc = st.window(i, "halves")
	halves := "the first and second half of the evidence"
	if b.Start.After(st.first) || i.End.Before(st.last) {
		halves = fmt.Sprintf("the %v either side of the middle of the evidence (Options.MaxWindow)", i.Duration())
	}
	warns = append(warns, warnf(report.WarnWindow, ErrNoChangePoint, "no change point found: the windows are %s; give Options.Incident and Options.Baseline to compare chosen windows", halves))
	return base, inc, cp, warns
}

// around returns the windows either side of t: from the first scrape to
// t and from t to the last, each cut to Options.MaxWindow next to t.
func (sc *scope) around(st scrapeStats, t time.Time) (base, inc snapshot.Window) {
	base = snapshot.Window{Start: st.first, End: t}
	inc = snapshot.Window{Start: t, End: st.last}
	if mw := sc.set.MaxWindow; mw > 0 {
		if base.Duration() > mw {
			base.Start = t.Add(-mw)
		}
		if inc.Duration() > mw {
			inc.End = t.Add(mw)
		}
	}
	return base, inc
}

// searchChangePoint runs the change-point search on the fleet timelines.
// It returns nil when the timelines cannot hold two windows of MinWindow;
// otherwise the best split, with Used set when its score reaches
// ChangePointThreshold and the caller gave no windows.
func (sc *scope) searchChangePoint(st scrapeStats, tl *timelines) *report.ChangePoint {
	if tl == nil || len(tl.grid) < 2 {
		return nil
	}
	minEach := int((sc.set.MinWindow + tl.step - 1) / tl.step)
	series := sc.changePointSeries(tl)
	k, score, ok := findChangePoint(series, minEach)
	if k <= 0 || k > len(tl.grid)-1 {
		return nil
	}
	cp := &report.ChangePoint{
		Time:    tl.grid[k-1].End,
		Score:   score,
		Method:  changePointMethod(tl.step, sc.set.MinWindow, series, sc.set.Thresholds.Rise, sc.set.Thresholds.MinSamplesTail),
		Signals: movedSeries(series, k, minEach),
	}
	if !ok {
		return nil
	}
	cp.Used = sc.set.Incident.IsZero()
	return cp
}

// changePointSeries returns the input series of the change-point search:
// the fleet's symptom timelines the evidence has, in cpSpecs' order.
func (sc *scope) changePointSeries(tl *timelines) []cpSeries {
	var series []cpSeries
	for _, c := range cpSpecs {
		if c.mean {
			if m := tl.means[c.id]; m != nil {
				// The mean's observations are its quantile timeline's.
				_, counts := timelinePoints(tl.fleet(c.id))
				series = append(series, c.series(m, true, counts, sc.set.Thresholds))
			}
		} else if t := tl.fleet(c.id); t != nil {
			values, counts := timelinePoints(t)
			p95 := t.Stat == "p95"
			if !p95 {
				counts = nil
			}
			series = append(series, c.series(values, p95, counts, sc.set.Thresholds))
		}
	}
	return series
}

// searchSegment looks for an incident that ended before the evidence did
// (findSegment) when the best single split cp proposes nothing, or
// proposes the point where every series that moved fell (the symptoms
// went back down: the incident ended there). It returns the change point
// of the segment's onset (Used, with the series that rose there) and its
// end; nil otherwise, whenever the symptoms rose at cp, when nothing
// rose at the segment's start (segmentChange), and when the fleet's
// membership changed around the segment (membershipChanged).
func (sc *scope) searchSegment(st scrapeStats, tl *timelines, cp *report.ChangePoint) (*report.ChangePoint, time.Time) {
	if tl == nil || len(tl.grid) < 3 || !sc.set.Incident.IsZero() {
		return nil, time.Time{}
	}
	minEach := int((sc.set.MinWindow + tl.step - 1) / tl.step)
	series := sc.changePointSeries(tl)
	if cp != nil && cp.Used && slices.ContainsFunc(cp.Signals, func(s report.ChangeSignal) bool { return !(s.After < s.Before) }) {
		return nil, time.Time{} // the symptoms rose at cp: the incident began there
	}
	a, b, score, moved, ok := segmentChange(series, minEach)
	if !ok {
		return nil, time.Time{}
	}
	if membershipChanged(tl.members, st, tl.grid[a].Start.Add(-tl.step), tl.grid[b-1].End.Add(tl.step)) {
		// Replicas restarted, joined or left in the segment: the fleet's
		// capacity changed there whatever the workload did, so a rise
		// confined to it is no incident window (a planned rolling restart
		// is one); the single split judges the evidence.
		return nil, time.Time{}
	}
	return &report.ChangePoint{
		Time:    tl.grid[a-1].End,
		Score:   score,
		Method:  changePointMethod(tl.step, sc.set.MinWindow, series, sc.set.Thresholds.Rise, sc.set.Thresholds.MinSamplesTail) + segmentMethod,
		Signals: moved,
		Used:    true,
	}, tl.grid[b-1].End
}

// knownTime returns t, or the zero time (null in JSON, "unknown" in text)
// for the Unix epoch, where snapshot places a scrape whose time no source
// gives (snapshot.TimeUnknown: a dump read from standard input).
func knownTime(t time.Time) time.Time {
	if t.Equal(time.Unix(0, 0)) {
		return time.Time{}
	}
	return t
}
