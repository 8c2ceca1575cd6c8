package snapshot

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/whyslow/whyslow/histogram"
)

// HistogramIncrease is the increase of a classic histogram over a window:
// the observations made between two scrapes, bucket by bucket, corrected for
// counter resets. Its edges, and how they differ from PromQL's increase(),
// are those of CounterIncrease.
//
// The samples between the edges are walked in order and the increases of
// the steps are summed bucket by bucket (between two resets they telescope
// to one histogram.Sub). A step in which the count or any bucket went down
// is a reset, as for histogram.Sub: its increase is the later sample itself,
// and Resets counts it. A change of bucket layout (a replica restarted on a vLLM
// version with other buckets; the Family then holds one HistogramSeries per
// layout with equal Labels) is also a reset, counted in both Resets and
// LayoutChanges. The increases made under each layout are added with
// histogram.Merge, which keeps only the bounds all layouts share (there the
// cumulative counts add exactly) and lists the others in Dropped. When the
// layouts share no finite bound, only the increase under the layout in force
// at To is kept and a warning says what was left out.
//
// As with counters, each reset loses the observations made between the last
// sample before it and the restart: with Resets > 0 the counts are lower
// bounds (LowerBound is set).
type HistogramIncrease struct {
	// Window is the window asked for; the zero Window means each series'
	// first to last sample.
	Window Window
	// From and To are the times of the edge samples actually used (for a
	// merge of several series, the earliest From and the latest To).
	From, To time.Time
	// Histogram holds the observations made between From and To. Its
	// Count and Sum are NaN when the samples lacked _count or _sum.
	Histogram histogram.Histogram
	// N is the number of valid samples used, both edges included, summed
	// over series.
	N int
	// Skipped is the number of samples between the edges ignored because
	// they fail histogram.Histogram.Validate.
	Skipped int
	// Series is the number of series merged (1 for a single series; a
	// series whose layout changed counts once).
	Series int
	// Excluded is the number of series that matched but were not evaluable
	// over the window, left out of the merge.
	Excluded int
	// Resets is the number of counter resets, layout changes included.
	Resets int
	// LayoutChanges is the number of bucket layout changes between the
	// edges.
	LayoutChanges int
	// Dropped lists, ascending, the finite bounds left out because not all
	// the layouts merged have them (see histogram.Merged).
	Dropped []float64
	// LowerBound is set when a reset lost observations, so that the true
	// counts may be larger.
	LowerBound bool
	// Lifetime is set when a series had a single sample and the window's
	// start was open (zero): Histogram is that sample, all observations
	// since the process started.
	Lifetime bool
	// StartClipped is set when no sample stood for the window's start
	// within Lookback: From is the first sample inside the window.
	StartClipped bool
	// Warnings are problems that changed the result without preventing it,
	// such as increases under an earlier layout that could not be merged.
	Warnings []error
}

// Duration returns To - From, the time over which the increase was
// observed.
func (h HistogramIncrease) Duration() time.Duration { return h.To.Sub(h.From) }

// Rate returns the number of observations (the +Inf bucket) per second of
// Duration, or NaN when Duration is not positive (a Lifetime result).
func (h HistogramIncrease) Rate() float64 {
	d := h.Duration()
	if d <= 0 {
		return math.NaN()
	}
	return h.Histogram.Total() / d.Seconds()
}

// String formats the increase with its window, sample count and flags, as
// "histogram increase 1234 observations, sum 56.7 over ... (121 samples from
// ... to ..., 1 reset, lower bound)".
func (h HistogramIncrease) String() string {
	var extra []string
	if h.Resets > 0 {
		extra = append(extra, windowPlural(h.Resets, "reset"))
	}
	if h.LayoutChanges > 0 {
		extra = append(extra, windowPlural(h.LayoutChanges, "layout change"))
	}
	if len(h.Dropped) > 0 {
		bs := make([]string, len(h.Dropped))
		for i, b := range h.Dropped {
			bs[i] = strconv.FormatFloat(b, 'g', -1, 64)
		}
		extra = append(extra, "dropped le=["+strings.Join(bs, " ")+"]")
	}
	extra = appendIncreaseFlags(extra, h.LowerBound, h.Lifetime, h.StartClipped, h.Skipped, h.Excluded)
	if len(h.Warnings) > 0 {
		extra = append(extra, windowPlural(len(h.Warnings), "warning"))
	}
	return fmt.Sprintf("histogram increase %s observations, sum %s", windowValue(h.Histogram.Total()), windowValue(h.Histogram.Sum)) +
		windowDescribe(h.Window, h.From, h.To, h.N, h.Series, extra)
}

// Matches reports whether the labels of s match every entry of match, as
// Series.Matches does; a HistogramSeries has no name, so "__name__" is an
// ordinary (absent) label here.
func (s *HistogramSeries) Matches(match map[string]string) bool {
	for k, v := range match {
		if s.Labels.Get(k) != v {
			return false
		}
	}
	return true
}

// HistogramsMatching returns the histogram series of f whose labels match
// (see HistogramSeries.Matches), in the family's order.
func (f *Family) HistogramsMatching(match map[string]string) []*HistogramSeries {
	return matching(f.Histograms, match)
}

// Increase returns the increase of histogram s over w; see
// HistogramIncrease for the rules and CounterIncrease's Increase for the
// single-sample cases (Lifetime, or ErrNotEvaluable when w has a Start).
// A series has one layout; use Family.HistogramIncrease to follow a layout
// change. Errors name the series.
func (s *HistogramSeries) Increase(w Window) (HistogramIncrease, error) {
	return histogramIncrease("", []*HistogramSeries{s}, w)
}

// HistogramIncrease returns the increase over w of the histogram series of
// f that match (see HistogramSeries.Matches), merged with histogram.Merge:
// for vLLM V1, the engines of one pod, whose layouts are equal so that the
// merge is exact. Series with equal Labels are one timeline whose layout
// changed (see HistogramIncrease). Series not evaluable over w are left out
// and counted in Excluded; when none is evaluable, or none matches, the
// error wraps ErrNotEvaluable.
func (f *Family) HistogramIncrease(w Window, match map[string]string) (HistogramIncrease, error) {
	hs := f.HistogramsMatching(match)
	if len(hs) == 0 {
		return HistogramIncrease{}, f.noMatch(match)
	}
	groups := timelineGroups(hs)
	incs, excluded, err := evaluateEach(groups, func(g []*HistogramSeries) (HistogramIncrease, error) { return histogramIncrease(f.Name, g, w) })
	if err != nil {
		return HistogramIncrease{}, err
	}
	return f.mergeFamily(incs, w, excluded)
}

// timelineGroups groups the layouts of one timeline (series with equal
// Labels); groups keep the family's order.
func timelineGroups(hs []*HistogramSeries) [][]*HistogramSeries {
	var groups [][]*HistogramSeries
next:
	for _, h := range hs {
		for i, g := range groups {
			if labels.Equal(g[0].Labels, h.Labels) {
				groups[i] = append(g, h)
				continue next
			}
		}
		groups = append(groups, []*HistogramSeries{h})
	}
	return groups
}

// mergeFamily is Family.HistogramIncrease's merge of the increases over w
// of the evaluable timelines, excluded others left out.
func (f *Family) mergeFamily(incs []HistogramIncrease, w Window, excluded int) (HistogramIncrease, error) {
	r, err := MergeHistogramIncreases(incs...)
	if err != nil {
		return HistogramIncrease{}, fmt.Errorf("%s: %w", f.Name, err)
	}
	r.Window = w
	r.Excluded += excluded
	return r, nil
}

// MergeHistogramIncreases merges histogram increases of several series (the
// engines of one pod, or the pods of a fleet) with histogram.Merge: counts
// add up bucket by bucket on the bounds all inputs share, bounds dropped by
// the inputs or by this merge are listed in Dropped, sample, series and reset
// counts add up, flags are combined with OR, From is the earliest and To
// the latest edge, and Window is kept when all agree, else zero. It fails
// when there is no input or when histogram.Merge does (no common bounds).
func MergeHistogramIncreases(incs ...HistogramIncrease) (HistogramIncrease, error) {
	if len(incs) == 0 {
		return HistogramIncrease{}, errors.New("merge of no histogram increase")
	}
	r := mergeFields(incs)
	if len(incs) == 1 {
		r.Histogram = incs[0].Histogram.Clone()
		return r, nil
	}
	hs := make([]histogram.Histogram, len(incs))
	for i, h := range incs {
		hs[i] = h.Histogram
	}
	m, err := histogram.Merge(hs...)
	if err != nil {
		return HistogramIncrease{}, err
	}
	r.Histogram = m.Histogram
	r.Dropped = unionBounds(r.Dropped, m.Dropped)
	return r, nil
}

// MergeInto merges inc into *acc: afterwards *acc is what
// MergeHistogramIncreases(*acc, inc) returns, to the bit (the same
// fields, the same sums in the same order). When both histograms have
// the same valid layout, the common case of a fleet folded replica by
// replica, inc's counts are added to acc's in place, without allocating
// a histogram: acc's slices must be its own (a result of
// MergeHistogramIncreases or MergeInto), not a series' or another
// increase's. On an error, *acc is unchanged.
func MergeInto(acc *HistogramIncrease, inc HistogramIncrease) error {
	if !oneMergeableLayout([]HistogramIncrease{*acc, inc}) {
		m, err := MergeHistogramIncreases(*acc, inc)
		if err != nil {
			return err
		}
		*acc = m
		return nil
	}
	a, b := &acc.Histogram, inc.Histogram
	// mergeFields of the two, in place: acc as its first step leaves it
	// (dropped bounds sorted, warnings copied), then inc added.
	acc.Dropped = unionBounds(nil, acc.Dropped)
	acc.Warnings = append([]error(nil), acc.Warnings...)
	addFields(acc, 1, &inc)
	// As histogram.Merge sums: from zero, the inputs in order.
	sum, count := 0.0, 0.0
	sum += a.Sum
	sum += b.Sum
	count += a.Count
	count += b.Count
	for k, v := range b.Counts {
		c := 0.0
		c += a.Counts[k]
		c += v
		a.Counts[k] = c
	}
	a.Sum, a.Count = sum, count
	return nil
}

// mergeFields merges all but the histograms of incs, for
// MergeHistogramIncreases.
func mergeFields(incs []HistogramIncrease) HistogramIncrease {
	var r HistogramIncrease
	for i := range incs {
		addFields(&r, i, &incs[i])
	}
	return r
}

// addFields adds the fields of h, the i-th increase merged, but its
// histogram to r, as mergeFields does for each.
func addFields(r *HistogramIncrease, i int, h *HistogramIncrease) {
	mergeSpan(i, &r.Window, &r.From, &r.To, h.Window, h.From, h.To)
	r.N += h.N
	r.Skipped += h.Skipped
	r.Series += h.Series
	r.Excluded += h.Excluded
	r.Resets += h.Resets
	r.LayoutChanges += h.LayoutChanges
	r.Dropped = unionBounds(r.Dropped, h.Dropped)
	r.LowerBound = r.LowerBound || h.LowerBound
	r.Lifetime = r.Lifetime || h.Lifetime
	r.StartClipped = r.StartClipped || h.StartClipped
	r.Warnings = append(r.Warnings, h.Warnings...)
}

// histogramIncrease computes the increase over w of one timeline: the
// layouts segs of one labelled histogram, each sorted by time. name (the
// family, or "") prefixes errors.
func histogramIncrease(name string, segs []*HistogramSeries, w Window) (HistogramIncrease, error) {
	tl := newHistTimeline(segs)
	x := edgeIndex{t: tl.t, ok: validSample(&tl)}
	return tl.increase(name, &x, w, nil)
}

// validSample returns the validity of the samples of tl, as
// histogram.Histogram.Validate decides it, for an edgeIndex: counts that
// are surely valid (surelyValidCounts) under valid bounds need no
// Validate, and each segment's bounds are checked once.
func validSample(tl *histTimeline) func(j int) bool {
	bounds := make([]bool, len(tl.segs))
	for k, s := range tl.segs {
		bounds[k] = validBounds(s.Bounds)
	}
	return func(j int) bool {
		h := tl.at(j)
		return bounds[tl.seg(j)] && surelyValidCounts(h) || h.Validate() == nil
	}
}

// histAcc accumulates the increase under one layout, that of segment seg.
type histAcc struct {
	seg int
	h   histogram.Histogram
}

// histScratch holds the accumulators of a timeline's increase, reused from
// one window of a grid to the next. Unless fresh is set, the histograms are
// reused too, which is right when the increase is merged (and so copied)
// before the next window is evaluated.
type histScratch struct {
	fresh  bool
	accs   []histAcc
	counts [][]float64
}

// newAcc returns accumulator k of an increase, for the layout of segment
// seg, whose bounds are given: a copy of the bounds and zero counts, or
// with s not fresh, the segment's bounds themselves and zeroed counts
// reused.
func (s *histScratch) newAcc(k, seg int, bounds []float64) histAcc {
	if s == nil || s.fresh {
		b := slices.Clone(bounds)
		return histAcc{seg: seg, h: histogram.Histogram{Bounds: b, Counts: make([]float64, len(b))}}
	}
	for len(s.counts) <= k {
		s.counts = append(s.counts, nil)
	}
	c := s.counts[k]
	if cap(c) < len(bounds) {
		c = make([]float64, len(bounds))
		s.counts[k] = c
	}
	c = c[:len(bounds)]
	clear(c)
	return histAcc{seg: seg, h: histogram.Histogram{Bounds: bounds, Counts: c}}
}

// increase is histogramIncrease with the edges located in x, an edgeIndex
// of tl.t whose validity is histogram.Histogram.Validate's, and, with
// scratch, the increase in memory that the next call reuses.
func (tl *histTimeline) increase(name string, x *edgeIndex, w Window, scratch *histScratch) (HistogramIncrease, error) {
	segs := tl.segs
	from, to, clipped, err := x.edges(w)
	if err != nil {
		if errors.Is(err, ErrNotEvaluable) && len(tl.t) > 0 && x.firstValid() < 0 {
			err = fmt.Errorf("%w: %w", err, tl.at(len(tl.t)-1).Validate())
		}
		return HistogramIncrease{}, fmt.Errorf("%s: %w", seriesID(name, segs[0].Labels), err)
	}
	r := HistogramIncrease{
		Window:       w,
		From:         time.UnixMilli(tl.t[from]),
		To:           time.UnixMilli(tl.t[to]),
		N:            1,
		Series:       1,
		StartClipped: clipped,
	}
	if from == to {
		if !w.Start.IsZero() {
			return HistogramIncrease{}, onlyOneSample(seriesID(name, segs[0].Labels), tl.t[to], w)
		}
		if scratch != nil && !scratch.fresh {
			r.Histogram = tl.at(to)
		} else {
			r.Histogram = tl.at(to).Clone()
		}
		r.Lifetime = true
		return r, nil
	}
	// One accumulator per layout met, in time order.
	var accs []histAcc
	if scratch != nil {
		accs = scratch.accs[:0]
	}
	// The samples added are valid (their bounds hold no NaN): those of one
	// segment share its layout, and only bounds of two are compared.
	acc := func(seg int) *histogram.Histogram {
		if len(accs) == 0 || (accs[len(accs)-1].seg != seg && !histogram.SameLayout(segs[accs[len(accs)-1].seg].Bounds, segs[seg].Bounds)) {
			accs = append(accs, scratch.newAcc(len(accs), seg, segs[seg].Bounds))
			if scratch != nil {
				scratch.accs = accs
			}
		}
		return &accs[len(accs)-1].h
	}
	add := func(seg int, d histogram.Histogram) {
		a := acc(seg)
		for i, c := range d.Counts {
			a.Counts[i] += c
		}
		a.Count += d.Count
		a.Sum += d.Sum
	}
	// Between resets the steps' increases telescope: a run of samples in
	// which nothing went down adds histogram.Sub(last, first) of the run.
	runStart, prev := from, from
	p := tl.at(prev) // the sample at prev
	first := p       // the sample at runStart
	flush := func() error {
		if runStart == prev {
			return nil
		}
		later, earlier := p, first
		if len(later.Counts) == len(later.Bounds) && len(earlier.Counts) == len(earlier.Bounds) &&
			(tl.seg(prev) == tl.seg(runStart) || histogram.SameLayout(later.Bounds, earlier.Bounds)) && !wentDown(later, earlier) {
			// What histogram.Sub would return, added without making it.
			a := acc(tl.seg(prev))
			for i, c := range later.Counts {
				a.Counts[i] += c - earlier.Counts[i]
			}
			a.Count += later.Count - earlier.Count
			a.Sum += later.Sum - earlier.Sum
			return nil
		}
		d, err := histogram.Sub(later, earlier)
		if err != nil {
			return fmt.Errorf("%s: samples at %s and %s: %w", seriesID(name, segs[0].Labels),
				windowMillis(tl.t[runStart]), windowMillis(tl.t[prev]), err)
		}
		add(tl.seg(prev), d)
		return nil
	}
	for j := from + 1; j <= to; j++ {
		if !x.valid(j) {
			r.Skipped++
			continue
		}
		cur := tl.at(j)
		changed := tl.seg(j) != tl.seg(prev) && !histogram.SameLayout(p.Bounds, cur.Bounds)
		if changed || wentDown(cur, p) {
			// A reset: the run before it ends at prev, and the step's
			// increase is cur itself.
			if err := flush(); err != nil {
				return HistogramIncrease{}, err
			}
			add(tl.seg(j), cur)
			r.Resets++
			if changed {
				r.LayoutChanges++
			}
			runStart, first = j, cur
		}
		r.N++
		prev, p = j, cur
	}
	if err := flush(); err != nil {
		return HistogramIncrease{}, err
	}
	r.LowerBound = r.Resets > 0
	if len(accs) == 1 {
		r.Histogram = accs[0].h
		return r, nil
	}
	hs := make([]histogram.Histogram, len(accs))
	for i, a := range accs {
		hs[i] = a.h
	}
	m, err := histogram.Merge(hs...)
	if err != nil {
		last := accs[len(accs)-1]
		r.Histogram = last.h
		r.Warnings = append(r.Warnings, fmt.Errorf("%s: increase before the layout change at %s left out: %w",
			seriesID(name, segs[0].Labels), windowMillis(segs[last.seg].T[0]), err))
		return r, nil
	}
	r.Histogram = m.Histogram
	r.Dropped = m.Dropped
	return r, nil
}

// wentDown reports whether the count or a bucket of later is lower than in
// earlier, histogram.Sub's sign of a counter reset. Both share one layout.
func wentDown(later, earlier histogram.Histogram) bool {
	if later.Count < earlier.Count {
		return true
	}
	for i, c := range later.Counts {
		if c < earlier.Counts[i] {
			return true
		}
	}
	return false
}

// histTimeline is the samples of the layouts of one labelled histogram in
// time order.
type histTimeline struct {
	segs []*HistogramSeries
	t    []int64
	// ref[j] locates sample j as (segment, index); nil for a single
	// segment, where sample j is segs[0]'s sample j.
	ref [][2]int
}

func newHistTimeline(segs []*HistogramSeries) histTimeline {
	tl := histTimeline{segs: segs}
	if len(segs) == 1 {
		tl.t = segs[0].T
		return tl
	}
	for k, s := range segs {
		for i := range s.T {
			tl.ref = append(tl.ref, [2]int{k, i})
		}
	}
	slices.SortStableFunc(tl.ref, func(a, b [2]int) int {
		return cmp.Compare(segs[a[0]].T[a[1]], segs[b[0]].T[b[1]])
	})
	tl.t = make([]int64, len(tl.ref))
	for j, r := range tl.ref {
		tl.t[j] = segs[r[0]].T[r[1]]
	}
	return tl
}

func (tl *histTimeline) seg(j int) int {
	if tl.ref == nil {
		return 0
	}
	return tl.ref[j][0]
}

func (tl *histTimeline) at(j int) histogram.Histogram {
	if tl.ref == nil {
		return tl.segs[0].At(j)
	}
	r := tl.ref[j]
	return tl.segs[r[0]].At(r[1])
}

// unionBounds returns the union of two ascending slices, ascending.
func unionBounds(a, b []float64) []float64 {
	if len(b) == 0 {
		return a
	}
	out := slices.Concat(a, b)
	slices.Sort(out)
	return slices.Compact(out)
}
