package snapshot

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/floats"

	"github.com/whyslow/whyslow/histogram"
)

// The grid helpers (IncreaseSteps, GaugeSteps, HistogramIncreaseSteps)
// evaluate a whole grid of windows in one pass over the samples: each
// sample's validity is decided once (for histograms, one
// histogram.Histogram.Validate per sample instead of one per window that
// touches it), the edges of each window are found from those of the
// previous one, and each window walks only its own samples. Their results
// are those of the per-window helpers, field by field and bit by bit,
// errors included: they run the same code over a precomputed edgeIndex
// (a panic included, as for a window with a Start but no End that starts
// more than Lookback after the last sample). Two shortcuts are theirs
// only, both equal by construction and checked by the tests against the
// per-window helpers: samples whose counts are surely valid skip Validate
// (surelyValidCounts), and the engines of one layout are merged without
// histogram.Merge's bookkeeping (mergeSteps).

// newGridIndex returns the edgeIndex of the samples t for the windows of a
// grid, ok(i) deciding once whether sample i is valid.
func newGridIndex(t []int64, ok func(int) bool) edgeIndex {
	x := edgeIndex{t: t, first: -1, last: -1, ascending: true}
	for i := range t {
		if i > 0 && t[i] < t[i-1] {
			x.ascending = false
		}
		if ok(i) {
			if x.first < 0 {
				x.first = i
			}
			x.last = i
			if x.prev != nil {
				x.prev[i] = i
			}
			continue
		}
		if x.prev == nil {
			// The first invalid sample: those before it are valid.
			x.prev = make([]int, len(t))
			for j := range i {
				x.prev[j] = j
			}
		}
		x.prev[i] = x.last
	}
	if x.prev != nil {
		x.next = make([]int, len(t))
		n := len(t)
		for i := len(t) - 1; i >= 0; i-- {
			if x.prev[i] == i {
				n = i
			}
			x.next[i] = n
		}
	}
	return x
}

// gallop returns sort.Search(len(t), func(i int) bool { return t[i] > ms })
// for ascending t, searching outwards from h: O(1) when consecutive calls
// ask about nearby instants, O(log len(t)) at worst.
func gallop(t []int64, ms int64, h int) int {
	n := len(t)
	h = min(max(h, 0), n)
	// The answer is in [lo, hi]: t[lo-1] <= ms (or lo == 0) and t[hi] > ms
	// (or hi == n).
	lo, hi := 0, n
	if h < n && t[h] <= ms {
		lo = h + 1
		for step := 1; h+step < n; step *= 2 {
			if p := h + step; t[p] > ms {
				hi = p
				break
			} else {
				lo = p + 1
			}
		}
	} else {
		hi = h
		for step := 1; h-step >= 0; step *= 2 {
			if p := h - step; t[p] <= ms {
				lo = p + 1
				break
			} else {
				hi = p
			}
		}
	}
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if t[m] > ms {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

// evalGrid evaluates eval on every window of grid, in order.
func evalGrid[R any](grid []Window, eval func(Window) (R, error)) []Step[R] {
	steps := make([]Step[R], len(grid))
	for k, w := range grid {
		r, err := eval(w)
		steps[k] = Step[R]{Window: w, Result: r, Err: err}
	}
	return steps
}

// failGrid returns the steps of grid all failing with err.
func failGrid[R any](grid []Window, err error) []Step[R] {
	steps := make([]Step[R], len(grid))
	for k, w := range grid {
		steps[k] = Step[R]{Window: w, Err: err}
	}
	return steps
}

// IncreaseSteps returns, for each window of grid in order, what Increase
// returns for it: steps[k] is {grid[k], r, err} with r, err :=
// s.Increase(grid[k]), equal field by field, errors included. It computes
// them in one pass: each sample is checked once, and when grid is sorted by
// Start and End (as Grid returns it) each window's edges are found from the
// previous window's, so that the cost is that of walking the samples once
// plus a constant per window. Any grid is accepted (gaps, overlaps, zero or
// inverted windows), only more slowly when unsorted.
//
//	steps := s.IncreaseSteps(snapshot.Grid(w, time.Minute))
func (s *Series) IncreaseSteps(grid []Window) []Step[CounterIncrease] {
	x := newGridIndex(s.T, func(i int) bool { return validCounter(s.V[i]) })
	return evalGrid(grid, func(w Window) (CounterIncrease, error) { return s.increase(&x, w) })
}

// GaugeSteps returns, for each window of grid in order, what Gauge returns
// for it, computed in one pass as IncreaseSteps does.
func (s *Series) GaugeSteps(grid []Window) []Step[GaugeStats] {
	x := newGridIndex(s.T, func(i int) bool { return !math.IsNaN(s.V[i]) })
	var buf gaugeBuf
	return evalGrid(grid, func(w Window) (GaugeStats, error) { return s.gauge(&x, w, &buf) })
}

// IncreaseSteps returns, for each window of grid in order, what Increase
// returns for it with the same match, computed in one pass over each
// matching series as Series.IncreaseSteps does. The increases of the series
// are summed window by window in the family's order, as Increase sums them,
// so that the sums are the same to the bit.
func (f *Family) IncreaseSteps(grid []Window, match map[string]string) []Step[CounterIncrease] {
	ss := f.SeriesMatching(match)
	if len(ss) == 0 {
		return failGrid[CounterIncrease](grid, f.noMatch(match))
	}
	xs := make([]edgeIndex, len(ss))
	for k, s := range ss {
		xs[k] = newGridIndex(s.T, func(i int) bool { return validCounter(s.V[i]) })
	}
	var each evalBuf[CounterIncrease]
	return evalGrid(grid, func(w Window) (CounterIncrease, error) {
		incs, excluded, err := each.eval(len(ss), func(k int) (CounterIncrease, error) { return ss[k].increase(&xs[k], w) })
		if err != nil {
			return CounterIncrease{}, err
		}
		return sumFamily(incs, w, excluded), nil
	})
}

// GaugeSteps returns, for each window of grid in order, what Gauge returns
// for it with the same match and agg. Several matching series are combined
// once (see Aggregate), not once per window, and the combination is
// summarized as Series.GaugeSteps does.
func (f *Family) GaugeSteps(grid []Window, match map[string]string, agg Aggregation) []Step[GaugeStats] {
	ss := f.SeriesMatching(match)
	switch len(ss) {
	case 0:
		return failGrid[GaugeStats](grid, f.noMatch(match))
	case 1:
		return ss[0].GaugeSteps(grid)
	}
	a := f.Aggregate(match, agg)
	if a == nil {
		return failGrid[GaugeStats](grid, f.unknownAggregation(agg))
	}
	steps := a.GaugeSteps(grid)
	for k := range steps {
		st := &steps[k]
		if st.Err != nil {
			st.Err = aggregateError(agg, len(ss), st.Err)
			continue
		}
		st.Result.Series = len(ss)
		st.Result.Skipped += skippedNaN(ss, st.Result.From, st.Result.To)
	}
	return steps
}

// gridTimeline is a timeline of a histogram and its edgeIndex for the
// windows of a grid: each sample is validated once.
func gridTimeline(segs []*HistogramSeries) (*histTimeline, edgeIndex) {
	tl := newHistTimeline(segs)
	return &tl, newGridIndex(tl.t, validSample(&tl))
}

// validBounds reports whether histogram.Histogram.Validate accepts bounds:
// strictly ascending, ending in +Inf.
func validBounds(b []float64) bool {
	if len(b) == 0 || math.IsNaN(b[0]) || !math.IsInf(b[len(b)-1], 1) {
		return false
	}
	for i := 1; i < len(b); i++ {
		if !(b[i] > b[i-1]) {
			return false
		}
	}
	return true
}

// surelyValidCounts reports whether the counts of h are, with valid bounds,
// accepted by histogram.Histogram.Validate for sure: ascending from zero
// (so neither NaN nor negative), and a count that is unknown or exactly
// that of the +Inf bucket. When it returns false, only Validate can tell
// (it allows small deviations).
func surelyValidCounts(h histogram.Histogram) bool {
	prev := 0.0
	for _, c := range h.Counts {
		if !(c >= prev) {
			return false
		}
		prev = c
	}
	return len(h.Counts) == len(h.Bounds) && len(h.Counts) > 0 &&
		(math.IsNaN(h.Count) || h.Count == h.Counts[len(h.Counts)-1])
}

// IncreaseSteps returns, for each window of grid in order, what Increase
// returns for it, computed in one pass as Series.IncreaseSteps does: each
// sample is validated (histogram.Histogram.Validate) once, not once per
// window.
func (s *HistogramSeries) IncreaseSteps(grid []Window) []Step[HistogramIncrease] {
	tl, x := gridTimeline([]*HistogramSeries{s})
	scratch := histScratch{fresh: true}
	return evalGrid(grid, func(w Window) (HistogramIncrease, error) { return tl.increase("", &x, w, &scratch) })
}

// HistogramIncreaseSteps returns, for each window of grid in order, what
// HistogramIncrease returns for it with the same match, computed in one
// pass over each matching timeline as Series.IncreaseSteps does. The
// increases of the timelines are merged window by window in the family's
// order, as HistogramIncrease merges them, so that the counts and sums are
// the same to the bit; the timelines' own increases are made in memory
// reused from one window to the next, since the merge copies them.
func (f *Family) HistogramIncreaseSteps(grid []Window, match map[string]string) []Step[HistogramIncrease] {
	steps := make([]Step[HistogramIncrease], len(grid))
	f.histogramIncreaseEach(grid, match, func(k int, inc HistogramIncrease, shared bool, err error) {
		if shared {
			inc.Histogram = inc.Histogram.Clone()
		}
		steps[k] = Step[HistogramIncrease]{Window: grid[k], Result: inc, Err: err}
	})
	return steps
}

// HistogramIncreaseEach calls fn for each window of grid in order with
// what HistogramIncreaseSteps returns for it (the same fields, to the
// bit), without keeping them: inc.Histogram may share memory with the
// family's samples or with the next window's increase, so fn must not
// modify it and must copy what it keeps past its return. A caller that
// folds the windows' increases into its own (a fleet's merged
// replica by replica, MergeInto) allocates nothing per window.
func (f *Family) HistogramIncreaseEach(grid []Window, match map[string]string, fn func(k int, inc HistogramIncrease, err error)) {
	f.histogramIncreaseEach(grid, match, func(k int, inc HistogramIncrease, _ bool, err error) { fn(k, inc, err) })
}

// histogramIncreaseEach is HistogramIncreaseEach, telling fn whether
// inc.Histogram is shared (else it is inc's own).
func (f *Family) histogramIncreaseEach(grid []Window, match map[string]string, fn func(k int, inc HistogramIncrease, shared bool, err error)) {
	hs := f.HistogramsMatching(match)
	if len(hs) == 0 {
		err := f.noMatch(match)
		for k := range grid {
			fn(k, HistogramIncrease{}, false, err)
		}
		return
	}
	groups := timelineGroups(hs)
	tls := make([]*histTimeline, len(groups))
	xs := make([]edgeIndex, len(groups))
	for k, g := range groups {
		tls[k], xs[k] = gridTimeline(g)
	}
	scratch := make([]histScratch, len(groups))
	var each evalBuf[HistogramIncrease]
	for k, w := range grid {
		incs, excluded, err := each.eval(len(groups), func(g int) (HistogramIncrease, error) {
			return tls[g].increase(f.Name, &xs[g], w, &scratch[g])
		})
		if err != nil {
			fn(k, HistogramIncrease{}, false, err)
			continue
		}
		if len(incs) == 1 {
			// mergeFamily of one increase, but for the copy of its
			// histogram that MergeHistogramIncreases makes.
			r := mergeFields(incs)
			r.Histogram = incs[0].Histogram
			r.Window = w
			r.Excluded += excluded
			fn(k, r, true, nil)
			continue
		}
		r, err := f.mergeSteps(incs, w, excluded)
		fn(k, r, false, err)
	}
}

// mergeSteps is mergeFamily for HistogramIncreaseSteps. When the increases
// share one layout (the engines of one pod), it sums them as
// histogram.Merge does, in the same order and with the same operations, so
// that the result is the same to the bit, without Merge's bookkeeping of
// layouts; otherwise it calls mergeFamily.
func (f *Family) mergeSteps(incs []HistogramIncrease, w Window, excluded int) (HistogramIncrease, error) {
	if len(incs) < 2 || !oneMergeableLayout(incs) {
		return f.mergeFamily(incs, w, excluded)
	}
	r := mergeFields(incs)
	b := incs[0].Histogram.Bounds
	m := histogram.Histogram{Bounds: slices.Clone(b), Counts: make([]float64, len(b))}
	for _, h := range incs {
		m.Count += h.Histogram.Count
		m.Sum += h.Histogram.Sum
		floats.Add(m.Counts, h.Histogram.Counts)
	}
	r.Histogram = m
	r.Window = w
	r.Excluded += excluded
	return r, nil
}

// oneMergeableLayout reports whether the histograms of incs have one
// layout that histogram.Merge accepts and that leaves at least one finite
// bound (else Merge fails with ErrNoCommonBounds): strictly ascending
// bounds ending in +Inf, as many counts as bounds.
func oneMergeableLayout(incs []HistogramIncrease) bool {
	b := incs[0].Histogram.Bounds
	if len(b) < 2 || !validBounds(b) {
		return false
	}
	for _, h := range incs {
		if len(h.Histogram.Counts) != len(b) || !histogram.SameLayout(h.Histogram.Bounds, b) {
			return false
		}
	}
	return true
}
