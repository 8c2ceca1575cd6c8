package snapshot

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// CounterIncrease is the increase of a counter over a window: the exact
// delta observed between two scrapes, corrected for counter resets.
//
// It differs from PromQL's increase() in three ways. increase(x[d])
// extrapolates the delta between the first and last samples inside the
// range towards the range's edges (up to half a scrape interval beyond them,
// and down to zero for a counter that started inside the range), so it
// returns non-integer values for integer counters; CounterIncrease does not
// extrapolate: Value is what the counter gained between the edge samples
// From and To, which are chosen as described under Lookback. increase() uses
// the samples inside (t-d, t]; CounterIncrease starts at the last sample at
// or before the window's start, as "x - x offset d" does, so consecutive
// windows share an edge sample and their increases add up. Finally it is not
// a rate: Rate divides by the observed duration To-From, not by the window's
// nominal length.
//
// Resets follow Prometheus's rule: when a sample is lower than the one before
// it, the counter restarted in between and the increase of that step is the
// new value. A change of the OpenMetrics start timestamp (_created) also
// counts as a reset, even when the value did not go down. The counts made
// between the last sample before a reset and the restart are never observed,
// so with Resets > 0 Value is a lower bound (LowerBound is set); the gap is
// one scrape interval with regular scrapes, but the whole window when only
// the two edge samples exist.
type CounterIncrease struct {
	// Window is the window asked for; the zero Window means each series'
	// first to last sample.
	Window Window
	// From and To are the times of the edge samples actually used (for a sum
	// over several series, the earliest From and the latest To). For a
	// Lifetime result From is the process start time when the source carries
	// one (OpenMetrics _created), else equal to To.
	From, To time.Time
	// Value is the increase.
	Value float64
	// N is the number of valid samples used, both edges included, summed
	// over series.
	N int
	// Skipped is the number of samples between the edges ignored as invalid
	// for a counter: NaN, ±Inf or negative.
	Skipped int
	// Series is the number of series summed (1 for a single series).
	Series int
	// Excluded is the number of series that matched but were not evaluable
	// over the window (see ErrNotEvaluable), left out of the sum.
	Excluded int
	// Resets is the number of counter resets detected between the edges.
	Resets int
	// LowerBound is set when a reset lost counts, so that the true increase
	// may be larger than Value.
	LowerBound bool
	// Lifetime is set when a series had a single sample and the window's
	// start was open (zero): Value is the counter itself, the total since
	// the process started.
	Lifetime bool
	// StartClipped is set when no sample stood for the window's start
	// within Lookback: From is the first sample inside the window and what
	// was counted before it is missing.
	StartClipped bool
}

// Duration returns To - From, the time over which Value was observed.
func (c CounterIncrease) Duration() time.Duration { return c.To.Sub(c.From) }

// Rate returns Value per second of Duration, or NaN when Duration is not
// positive (a Lifetime result without a known start).
func (c CounterIncrease) Rate() float64 {
	d := c.Duration()
	if d <= 0 {
		return math.NaN()
	}
	return c.Value / d.Seconds()
}

// String formats the increase with its window, sample count and flags, as
// "increase 1234 over 2026-09-22T10:00:00Z/2026-09-22T10:30:00Z (121 samples
// from 2026-09-22T09:59:45Z to 2026-09-22T10:29:45Z, 1 reset, lower bound)".
func (c CounterIncrease) String() string {
	var extra []string
	if c.Resets > 0 {
		extra = append(extra, windowPlural(c.Resets, "reset"))
	}
	extra = appendIncreaseFlags(extra, c.LowerBound, c.Lifetime, c.StartClipped, c.Skipped, c.Excluded)
	return "increase " + windowValue(c.Value) + windowDescribe(c.Window, c.From, c.To, c.N, c.Series, extra)
}

// appendIncreaseFlags appends to extra, for String, the flags and counts
// that counter and histogram increases share.
func appendIncreaseFlags(extra []string, lowerBound, lifetime, startClipped bool, skipped, excluded int) []string {
	if lowerBound {
		extra = append(extra, "lower bound")
	}
	if lifetime {
		extra = append(extra, "lifetime total since process start")
	}
	if startClipped {
		extra = append(extra, "start not covered")
	}
	if skipped > 0 {
		extra = append(extra, fmt.Sprintf("%d invalid skipped", skipped))
	}
	if excluded > 0 {
		extra = append(extra, fmt.Sprintf("%s not evaluable", windowPlural(excluded, "series")))
	}
	return extra
}

// validCounter reports whether v can be a counter's value.
func validCounter(v float64) bool { return v >= 0 && !math.IsInf(v, 1) }

// Increase returns the increase of counter s over w. The edges are chosen as
// described under Lookback; the samples between them are walked in order,
// summing the increase of every step and applying Prometheus's reset rule
// (see CounterIncrease).
//
// When a single sample is left and w.Start is zero, the result is that
// sample's value, flagged Lifetime. When a single sample stands for both
// edges of a window with a Start (the window is shorter than the scrape
// interval, or the series has one sample), the increase is not observed and
// the error wraps ErrNotEvaluable. Errors name the series.
func (s *Series) Increase(w Window) (CounterIncrease, error) {
	x := edgeIndex{t: s.T, ok: func(i int) bool { return validCounter(s.V[i]) }}
	return s.increase(&x, w)
}

// increase is Increase with the edges located in x, an edgeIndex of s.T
// whose validity is validCounter's.
func (s *Series) increase(x *edgeIndex, w Window) (CounterIncrease, error) {
	from, to, clipped, err := x.edges(w)
	if err != nil {
		return CounterIncrease{}, fmt.Errorf("%s: %w", seriesID(s.Name, s.Labels), err)
	}
	r := CounterIncrease{
		Window:       w,
		From:         time.UnixMilli(s.T[from]),
		To:           time.UnixMilli(s.T[to]),
		N:            1,
		Series:       1,
		StartClipped: clipped,
	}
	if from == to {
		if !w.Start.IsZero() {
			return CounterIncrease{}, onlyOneSample(seriesID(s.Name, s.Labels), s.T[to], w)
		}
		r.Value = s.V[to]
		r.Lifetime = true
		if st := s.startT(to); st > 0 && st <= s.T[to] {
			r.From = time.UnixMilli(st)
		}
		return r, nil
	}
	prev := from
	for i := from + 1; i <= to; i++ {
		cur := s.V[i]
		if !validCounter(cur) {
			r.Skipped++
			continue
		}
		if p := s.V[prev]; cur < p || s.restarted(prev, i) {
			r.Value += cur
			r.Resets++
		} else {
			r.Value += cur - p
		}
		r.N++
		prev = i
	}
	r.LowerBound = r.Resets > 0
	return r, nil
}

// onlyOneSample is the error for a window with a Start whose both edges
// are one sample, at t (ms), of the series named id: no increase is
// observed.
func onlyOneSample(id string, t int64, w Window) error {
	return fmt.Errorf("%s: %w: only one sample (at %s) covers window %s", id, ErrNotEvaluable, windowMillis(t), w)
}

// startT returns the start timestamp of sample i, or 0 when unknown.
func (s *Series) startT(i int) int64 {
	if i >= len(s.StartT) {
		return 0
	}
	return s.StartT[i]
}

// restarted reports whether the start timestamp moved forward between
// samples i and j, both known.
func (s *Series) restarted(i, j int) bool {
	a, b := s.startT(i), s.startT(j)
	return a > 0 && b > a
}

// SumIncreases adds counter increases of several series (the engines of one
// pod, or the pods of a fleet) into one: values, sample counts, series
// counts and resets add up, flags are combined with OR, From is the
// earliest and To the latest edge. Window is kept when all agree, else it is
// the zero Window. The sum of no increase is the zero CounterIncrease.
func SumIncreases(incs ...CounterIncrease) CounterIncrease {
	var r CounterIncrease
	for i, c := range incs {
		mergeSpan(i, &r.Window, &r.From, &r.To, c.Window, c.From, c.To)
		r.Value += c.Value
		r.N += c.N
		r.Skipped += c.Skipped
		r.Series += c.Series
		r.Excluded += c.Excluded
		r.Resets += c.Resets
		r.LowerBound = r.LowerBound || c.LowerBound
		r.Lifetime = r.Lifetime || c.Lifetime
		r.StartClipped = r.StartClipped || c.StartClipped
	}
	return r
}

// mergeSpan merges the window and edges of the i-th of several results
// into a sum's: the window is kept while all agree, else it is the zero
// Window; From is the earliest edge and To the latest.
func mergeSpan(i int, w *Window, from, to *time.Time, iw Window, ifrom, ito time.Time) {
	if i == 0 {
		*w, *from, *to = iw, ifrom, ito
		return
	}
	if iw != *w {
		*w = Window{}
	}
	if ifrom.Before(*from) {
		*from = ifrom
	}
	if ito.After(*to) {
		*to = ito
	}
}

// Increase returns the sum of the increases over w of the float series of
// f that match (see Series.Matches), treated as counters: for vLLM V1, the
// engines of one pod. Series that are not evaluable over w are left out and
// counted in Excluded; when none is evaluable, or none matches, the error
// wraps ErrNotEvaluable.
func (f *Family) Increase(w Window, match map[string]string) (CounterIncrease, error) {
	ss := f.SeriesMatching(match)
	if len(ss) == 0 {
		return CounterIncrease{}, f.noMatch(match)
	}
	incs, excluded, err := evaluateEach(ss, func(s *Series) (CounterIncrease, error) { return s.Increase(w) })
	if err != nil {
		return CounterIncrease{}, err
	}
	return sumFamily(incs, w, excluded), nil
}

// sumFamily is Family.Increase's sum of the increases over w of the
// evaluable series, excluded others left out.
func sumFamily(incs []CounterIncrease, w Window, excluded int) CounterIncrease {
	r := SumIncreases(incs...)
	r.Window = w
	r.Excluded = excluded
	return r
}

// evaluateEach evaluates every item (the series, or the timelines, of a
// family over one window). Items not evaluable (an error wrapping
// ErrNotEvaluable) are left out and counted in excluded; any other error
// stops the walk. When no item is evaluable the error says why, naming
// the first (see noneEvaluable).
func evaluateEach[T, R any](items []T, eval func(T) (R, error)) (rs []R, excluded int, err error) {
	each := evalBuf[R]{rs: make([]R, 0, len(items))}
	return each.eval(len(items), func(i int) (R, error) { return eval(items[i]) })
}

// evalBuf holds evaluateEach's results and errors, reused from one window
// of a grid to the next.
type evalBuf[R any] struct {
	rs   []R
	errs []error
}

// eval is evaluateEach over items 0..n-1. The results are valid until the
// next call.
func (b *evalBuf[R]) eval(n int, eval func(int) (R, error)) (rs []R, excluded int, err error) {
	b.rs, b.errs = b.rs[:0], b.errs[:0]
	for i := range n {
		r, err := eval(i)
		switch {
		case err == nil:
			b.rs = append(b.rs, r)
		case errors.Is(err, ErrNotEvaluable):
			b.errs = append(b.errs, err)
		default:
			return nil, 0, err
		}
	}
	if len(b.rs) == 0 {
		return nil, 0, noneEvaluable(b.errs)
	}
	return b.rs, len(b.errs), nil
}

// noMatch is the error for a selector that matches no series of f.
func (f *Family) noMatch(match map[string]string) error {
	if len(match) == 0 {
		return fmt.Errorf("%s: %w: no series", f.Name, ErrNotEvaluable)
	}
	return fmt.Errorf("%s: %w: no series matches %s", f.Name, ErrNotEvaluable, windowMatch(match))
}

// noneEvaluable reports the first of errs and how many more there are.
func noneEvaluable(errs []error) error {
	if len(errs) == 1 {
		return errs[0]
	}
	return fmt.Errorf("%w (and %d more series not evaluable)", errs[0], len(errs)-1)
}
