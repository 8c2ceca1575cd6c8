package snapshot

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/whyslow/whyslow/snapshot/internal/outlier"
)

// Checks of time over a whole Evidence, run by Builder.Evidence once
// everything is read: times far outside the bulk of the evidence, and
// counters that go backwards without a restart. Both are what a reader of
// single files cannot see, and both cost a run dearly when missed: a
// year-long span allocates a year of timeline downstream, and a decrease
// read as a reset adds a counter's whole value to its increase.

// outlierListed bounds the problems naming outlier files (the rule is
// package outlier's); the rest are counted in one more problem.
const outlierListed = 10

// checkTimes runs the checks on e, editing its targets in place (their
// slices belong to the Builder) and appending problems to b.
func (b *Builder) checkTimes(e *Evidence) {
	b.checksAt = len(b.problems)
	if b.perTarget {
		// ReadEach: the outliers were found over the whole evidence
		// before (timeOutliers); only this target's are left out.
		for _, t := range e.Targets {
			if len(b.dropAt) > 0 {
				dropScrapesAt(t, b.dropAt)
			}
		}
	} else {
		b.dropTimeOutliers(e)
	}
	for _, t := range e.Targets {
		b.checkCounters(t)
	}
}

// timeAt is one scrape of one target.
type timeAt struct {
	t   int64
	tg  *Target
	idx int
}

// dropTimeOutliers names the scrapes far outside the bulk of e's scrape
// times and, unless Options.KeepTimeOutliers, removes them and their
// samples.
func (b *Builder) dropTimeOutliers(e *Evidence) {
	out := b.timeOutliers(e)
	if b.opts.KeepTimeOutliers {
		return
	}
	for tg, idx := range out {
		drop := map[int64]bool{}
		for i := range idx {
			drop[tg.Scrapes[i].Time.UnixMilli()] = true
		}
		dropScrapesAt(tg, drop)
	}
}

// timeOutliers names the scrapes far outside the bulk of e's scrape
// times in problems and returns them (by target, the indexes in
// Scrapes); e is not changed.
func (b *Builder) timeOutliers(e *Evidence) map[*Target]map[int]bool {
	n := 0
	for _, tg := range e.Targets {
		n += len(tg.Scrapes)
	}
	if n < outlier.MinTimes {
		return nil
	}
	all := make([]timeAt, 0, n)
	first, last := int64(math.MaxInt64), int64(math.MinInt64)
	for _, tg := range e.Targets {
		for i, sc := range tg.Scrapes {
			if sc.TimeFrom == TimeUnknown {
				continue // placed at the epoch on purpose; said already
			}
			t := sc.Time.UnixMilli()
			first, last = min(first, t), max(last, t)
			all = append(all, timeAt{t: t, tg: tg, idx: i})
		}
	}
	if len(all) < outlier.MinTimes || last-first <= outlier.MinMargin.Milliseconds() {
		// An outlier lies farther than outlier.MinMargin from the bulk,
		// which lies between the first and the last time: none here.
		return nil
	}
	slices.SortFunc(all, func(x, y timeAt) int { return cmp.Compare(x.t, y.t) })
	lo, hi, low, high, ok := outlier.Bounds(len(all), func(i int) int64 { return all[i].t })
	if !ok {
		return nil
	}
	out := map[*Target]map[int]bool{}
	type group struct {
		first timeAt
		n     int
	}
	var keys []string
	groups := map[string]*group{}
	for _, a := range all {
		if a.t >= low && a.t <= high {
			continue
		}
		if out[a.tg] == nil {
			out[a.tg] = map[int]bool{}
		}
		out[a.tg][a.idx] = true
		// One problem per file (a file of many scrapes is one mistake).
		key := a.tg.Name + "\x00" + strings.Join(a.tg.Scrapes[a.idx].Files, ", ")
		if g := groups[key]; g != nil {
			g.n++
			continue
		}
		groups[key] = &group{first: a, n: 1}
		keys = append(keys, key)
	}
	for i, key := range keys {
		g := groups[key]
		if i == outlierListed {
			b.problems = append(b.problems, Problem{Severity: SeverityWarning, Offset: -1,
				Err: fmt.Errorf("%w: %d more files with scrapes far outside %s to %s", ErrTimeOutlier, len(keys)-i, fmtMS(lo), fmtMS(hi))})
			break
		}
		sc := g.first.tg.Scrapes[g.first.idx]
		b.problems = append(b.problems, Problem{Severity: SeverityWarning, File: strings.Join(sc.Files, ", "), Offset: -1,
			Err: fmt.Errorf("%w: %s", ErrTimeOutlier, b.outlierWhat(g.first, sc, g.n, lo, hi, low, high))})
	}
	return out
}

// anyTimeOutlier reports whether timeOutliers would name a scrape of
// evidence whose scrapes number n and whose known scrape times (those
// not TimeUnknown) are times, given in any order and sorted in place.
func anyTimeOutlier(n int, times []int64) bool {
	if n < outlier.MinTimes || len(times) < outlier.MinTimes {
		return false
	}
	slices.Sort(times)
	_, _, low, high, ok := outlier.Bounds(len(times), func(i int) int64 { return times[i] })
	return ok && (times[0] < low || times[len(times)-1] > high)
}

// dropScrapesAt removes the scrapes of tg at the times in drop (ms), and
// their samples.
func dropScrapesAt(tg *Target, drop map[int64]bool) {
	tg.Scrapes = slices.DeleteFunc(tg.Scrapes, func(sc Scrape) bool { return drop[sc.Time.UnixMilli()] })
	for _, f := range tg.Families {
		for _, s := range f.Series {
			dropSeriesAt(s, func(i int) bool { return drop[s.T[i]] })
		}
		for _, h := range f.Histograms {
			dropHistAt(h, func(i int) bool { return drop[h.T[i]] })
		}
		f.Series = slices.DeleteFunc(f.Series, func(s *Series) bool { return len(s.T) == 0 })
		f.Histograms = slices.DeleteFunc(f.Histograms, func(h *HistogramSeries) bool { return len(h.T) == 0 })
	}
}

func (b *Builder) outlierWhat(a timeAt, sc Scrape, n int, lo, hi, low, high int64) string {
	dist, side := a.t-hi, "after"
	if a.t < low {
		dist, side = lo-a.t, "before"
	}
	what := "scrape"
	if n > 1 {
		what = fmt.Sprintf("first of %d scrapes", n)
	}
	msg := fmt.Sprintf("%s of %s at %s (from the %s) lies %s %s the rest of the evidence (%s to %s)",
		what, escapeName(a.tg.Name), sc.Time.UTC().Format(time.RFC3339), sc.TimeFrom, outlier.FormatSpan(dist), side, fmtMS(lo), fmtMS(hi))
	if sc.TimeFrom == TimeFromSamples && a.t < low && a.t*1000 >= low && a.t*1000 <= high {
		msg += "; its sample timestamps look like seconds, not milliseconds"
	}
	if b.opts.KeepTimeOutliers {
		return msg + "; kept (Options.KeepTimeOutliers)"
	}
	return msg + "; left out (Options.KeepTimeOutliers keeps it)"
}

// fmtMS formats a time in ms since the epoch as RFC 3339.
func fmtMS(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339) }

// dropSeriesAt removes the samples i of s for which drop(i) holds.
func dropSeriesAt(s *Series, drop func(i int) bool) int {
	k := 0
	for i := range s.T {
		if drop(i) {
			continue
		}
		s.T[k], s.V[k] = s.T[i], s.V[i]
		if s.StartT != nil {
			s.StartT[k] = s.StartT[i]
		}
		k++
	}
	n := len(s.T) - k
	s.T, s.V = s.T[:k], s.V[:k]
	if s.StartT != nil {
		s.StartT = s.StartT[:k]
	}
	return n
}

// dropHistAt removes the samples i of h for which drop(i) holds.
func dropHistAt(h *HistogramSeries, drop func(i int) bool) int {
	nb, k := len(h.Bounds), 0
	for i := range h.T {
		if drop(i) {
			continue
		}
		h.T[k], h.Sum[k], h.Count[k] = h.T[i], h.Sum[i], h.Count[i]
		copy(h.Counts[k*nb:(k+1)*nb], h.Counts[i*nb:(i+1)*nb])
		k++
	}
	n := len(h.T) - k
	h.T, h.Sum, h.Count, h.Counts = h.T[:k], h.Sum[:k], h.Count[:k], h.Counts[:k*nb]
	return n
}

// processStart is the family whose change marks a process restart. It is
// the Prometheus client libraries' own, not vLLM's.
const processStart = "process_start_time_seconds"

// checkCounters leaves out the counter samples of t that decrease
// without a restart. A restart is a change of process_start_time_seconds
// between the two scrapes, or of a sample's OpenMetrics start time; for
// a target without process_start_time_seconds (vLLM V0 exposes none),
// every counter of the target dropping at one scrape, which resets too a
// series whose two samples straddle that scrape (a labelled counter is
// created again at its first increment after the restart). Any other decrease
// is inconsistent evidence (scrapes out of order, two processes under one
// name), and is reported as such instead of being read as a reset.
func (b *Builder) checkCounters(t *Target) {
	if !anyDecrease(t) {
		return // the common case, checked without allocating
	}
	var pst []*Series
	if f := t.Families[processStart]; f != nil {
		pst = f.Series
	}
	// restarted reports whether process_start_time_seconds says the
	// process restarted between t1 and t2; known is false when no series
	// has both samples.
	restarted := func(t1, t2 int64) (restart, known bool) {
		for _, s := range pst {
			i, ok1 := slices.BinarySearch(s.T, t1)
			j, ok2 := slices.BinarySearch(s.T, t2)
			if ok1 && ok2 {
				known = true
				if s.V[i] != s.V[j] {
					return true, true
				}
			}
		}
		return false, known
	}
	// V0: at each time, how many counters were positive at their
	// previous sample, and how many of those dropped.
	type tally struct{ with, drops int }
	var together map[int64]*tally
	forEachCounter(t, func(ts []int64, v func(int) float64, _ []int64) {
		for i := 1; i < len(ts); i++ {
			if _, known := restarted(ts[i-1], ts[i]); known || !(v(i-1) > 0) {
				continue
			}
			if together == nil {
				together = map[int64]*tally{}
			}
			c := together[ts[i]]
			if c == nil {
				c = &tally{}
				together[ts[i]] = c
			}
			c.with++
			if v(i) < v(i-1) {
				c.drops++
			}
		}
	})
	// The times at which every counter positive at its previous sample
	// dropped: the target's restarts, as V0 shows them. A series whose
	// samples straddle one (a labelled counter that appears again only
	// when it is next incremented, some scrapes after the restart) was
	// reset there too.
	var restarts []int64
	for ts, c := range together {
		if c.with > 0 && c.drops == c.with {
			restarts = append(restarts, ts)
		}
	}
	slices.Sort(restarts)
	isRestart := func(t1, t2 int64) bool {
		if r, known := restarted(t1, t2); known {
			return r
		}
		// A restart in (t1, t2].
		i, _ := slices.BinarySearch(restarts, t1+1)
		return i < len(restarts) && restarts[i] <= t2
	}

	var (
		dropped     int
		first       string
		firstT      int64
		prevT       int64
		firstV      float64
		prevV       float64
		firstFamily string
	)
	check := func(family, name string, ts []int64, v func(int) float64, st []int64) func(int) bool {
		last := 0
		return func(i int) bool {
			if i == 0 {
				return false
			}
			if v(i) >= v(last) || (st != nil && st[i] != st[last]) || isRestart(ts[last], ts[i]) {
				last = i
				return false
			}
			if dropped++; dropped == 1 {
				first, firstFamily, firstT, prevT, firstV, prevV = name, family, ts[i], ts[last], v(i), v(last)
			}
			return true
		}
	}
	for _, name := range t.FamilyNames() {
		f := t.Families[name]
		if f.Type == model.MetricTypeCounter {
			for _, s := range f.Series {
				dropSeriesAt(s, check(name, seriesString(s.Name, s.Labels), s.T, func(i int) float64 { return s.V[i] }, s.StartT))
			}
			f.Series = slices.DeleteFunc(f.Series, func(s *Series) bool { return len(s.T) == 0 })
		}
		if isHistogramType(f) {
			for _, h := range f.Histograms {
				dropHistAt(h, check(name, seriesString(name, h.Labels), h.T, histTotal(h), nil))
			}
			f.Histograms = slices.DeleteFunc(f.Histograms, func(h *HistogramSeries) bool { return len(h.T) == 0 })
		}
	}
	if dropped == 0 {
		return
	}
	why := "only some of its counters drop there (no process_start_time_seconds to tell a restart)"
	if len(pst) > 0 {
		why = "process_start_time_seconds does not change"
	}
	b.problems = append(b.problems, Problem{Severity: SeverityError, File: t.fileAt(firstT), Offset: -1, Family: firstFamily,
		Err: fmt.Errorf("%w: %d counter samples of target %s decrease without a restart; first %s from %g at %s (%s) to %g at %s (%s), and %s: scrapes out of order or two processes under one name; the decreasing samples are left out, not read as resets",
			ErrInconsistent, dropped, escapeName(t.Name), excerpt(first), prevV, fmtMS(prevT), t.fileAt(prevT), firstV, fmtMS(firstT), t.fileAt(firstT), why)})
}

// anyDecrease reports whether a counter or cumulative histogram of t
// ever decreases from one sample to the next.
func anyDecrease(t *Target) bool {
	for _, f := range t.Families {
		if f.Type == model.MetricTypeCounter {
			for _, s := range f.Series {
				for i := 1; i < len(s.V); i++ {
					if s.V[i] < s.V[i-1] {
						return true
					}
				}
			}
		}
		if isHistogramType(f) {
			for _, h := range f.Histograms {
				tot := histTotal(h)
				for i := 1; i < len(h.T); i++ {
					if tot(i) < tot(i-1) {
						return true
					}
				}
			}
		}
	}
	return false
}

// isHistogramType reports whether f's histograms are cumulative
// (a gauge histogram's counts may go down).
func isHistogramType(f *Family) bool {
	return f.Type != model.MetricTypeGaugeHistogram && len(f.Histograms) > 0
}

// histTotal returns the total count of sample i of h: _count, or the
// last bucket when _count is missing.
func histTotal(h *HistogramSeries) func(int) float64 {
	nb := len(h.Bounds)
	return func(i int) float64 {
		if c := h.Count[i]; !math.IsNaN(c) {
			return c
		}
		if nb == 0 {
			return math.NaN()
		}
		return h.Counts[(i+1)*nb-1]
	}
}

// forEachCounter calls fn for every counter series and cumulative
// histogram of t.
func forEachCounter(t *Target, fn func(ts []int64, v func(int) float64, st []int64)) {
	for _, f := range t.Families {
		if f.Type == model.MetricTypeCounter {
			for _, s := range f.Series {
				fn(s.T, func(i int) float64 { return s.V[i] }, s.StartT)
			}
		}
		if isHistogramType(f) {
			for _, h := range f.Histograms {
				fn(h.T, histTotal(h), nil)
			}
		}
	}
}

// fileAt returns the files of t's scrape at ms, or "".
func (t *Target) fileAt(ms int64) string {
	i, ok := slices.BinarySearchFunc(t.Scrapes, ms, func(sc Scrape, ms int64) int { return cmp.Compare(sc.Time.UnixMilli(), ms) })
	if !ok {
		return ""
	}
	return strings.Join(t.Scrapes[i].Files, ", ")
}
