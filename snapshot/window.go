package snapshot

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

// Lookback is how far before a window edge a sample may lie and still stand
// for the value at that edge: PromQL's default lookback delta. As in
// Prometheus 3, it is left-open: a sample exactly Lookback before an edge is
// too old.
//
// # Window edges
//
// The window helpers (Series.Increase, Series.Gauge, HistogramSeries.Increase
// and the Family and Target conveniences built on them, and their grid
// versions such as Series.IncreaseSteps) find, in each series,
// the two samples that stand for a Window's edges the way the PromQL
// expression "x - x offset d" does, with Lookback as lookback delta:
//
//   - The end edge is the last valid sample at or before End, which must lie
//     in (End-Lookback, End]; otherwise the series is not evaluable
//     (ErrNotEvaluable).
//   - The start edge is the last valid sample at or before Start, if it lies
//     in (Start-Lookback, Start]. Otherwise (the series began, or had a gap,
//     after Start-Lookback) the first valid sample after Start is used, and
//     the result is flagged StartClipped: the part of the window before it
//     is not covered.
//   - A zero Start means "from the series' first valid sample" and a zero End
//     "to its last valid sample"; the zero Window is both. Neither is flagged
//     StartClipped.
//   - End before Start is an error.
//
// Because each series takes its own last sample before each edge, dumps of
// different pods scraped seconds apart line up on the same Window, as they do
// in a PromQL query evaluated at End.
//
// What a valid sample is depends on the helper: counters ignore NaN, ±Inf
// and negative values (a counter has none), gauges ignore NaN, histograms
// ignore samples that fail histogram.Histogram.Validate. Ignored samples are
// counted in the results' Skipped field over the samples between the edges.
const Lookback = 5 * time.Minute

// ErrNotEvaluable is wrapped by the errors of the window helpers when the
// evidence does not cover the window well enough to compute a value: no
// sample at or before the end within Lookback, a single sample standing for
// both edges, no series matching a selector. A missing value is reported this
// way, never as zero.
var ErrNotEvaluable = errors.New("not evaluable")

// edgeIndex answers the questions windowEdges asks about the samples t of
// one series. For one window, ok decides validity on demand, asked only
// about the samples near the edges; for the windows of a grid (ok nil),
// validity is decided once for all samples (see newGridIndex).
type edgeIndex struct {
	t  []int64
	ok func(int) bool

	// The grid index: prev[i] is the last valid sample <= i (-1 if none),
	// next[i] the first >= i (len(t) if none); both nil when every sample
	// is valid. first and last are the first and last valid samples (-1
	// if none).
	prev, next  []int
	first, last int
	// ascending is set when t never decreases, so that the searches can
	// start at the previous window's edges, hintEnd and hintStart.
	ascending          bool
	hintEnd, hintStart int
}

// edges is windowEdges over x.
func (x *edgeIndex) edges(w Window) (from, to int, clipped bool, err error) {
	t := x.t
	if !w.Start.IsZero() && !w.End.IsZero() && w.End.Before(w.Start) {
		return 0, 0, false, fmt.Errorf("window %s ends before it starts", w)
	}
	first := x.firstValid()
	if first < 0 {
		if len(t) == 0 {
			return 0, 0, false, fmt.Errorf("%w: no samples", ErrNotEvaluable)
		}
		return 0, 0, false, fmt.Errorf("%w: none of %d samples is valid", ErrNotEvaluable, len(t))
	}
	last := x.lastValid()

	to = last
	if !w.End.IsZero() {
		end := w.End.UnixMilli()
		to = x.prevValid(x.after(end, &x.hintEnd) - 1)
		if to < 0 {
			return 0, 0, false, fmt.Errorf("%w: window %s ends before the first sample (%s)",
				ErrNotEvaluable, w, windowMillis(t[first]))
		}
		if t[to] <= end-Lookback.Milliseconds() {
			return 0, 0, false, fmt.Errorf("%w: no sample in the %s before the end of window %s (last sample at %s)",
				ErrNotEvaluable, Lookback, w, windowMillis(t[to]))
		}
	}

	from = first
	if !w.Start.IsZero() {
		start := w.Start.UnixMilli()
		from = x.prevValid(x.after(start, &x.hintStart) - 1)
		if from < 0 || t[from] <= start-Lookback.Milliseconds() {
			// No fresh sample stands for Start: take the first valid one
			// inside the window. With an End it exists and is <= to,
			// because the end edge is itself fresh; with an open End
			// there may be none after Start.
			from = x.nextValid(from+1, to+1)
			if from < 0 {
				return 0, 0, false, fmt.Errorf("%w: no sample after the start of window %s (last sample at %s)",
					ErrNotEvaluable, w, windowMillis(t[last]))
			}
			clipped = true
		}
	}
	return from, to, clipped, nil
}

// valid reports whether sample i is valid.
func (x *edgeIndex) valid(i int) bool {
	if x.ok != nil {
		return x.ok(i)
	}
	return x.prev == nil || x.prev[i] == i
}

// firstValid returns the first valid sample, or -1.
func (x *edgeIndex) firstValid() int {
	if x.ok != nil {
		return nextValid(x.ok, 0, len(x.t))
	}
	return x.first
}

// lastValid returns the last valid sample, or -1.
func (x *edgeIndex) lastValid() int {
	if x.ok != nil {
		return prevValid(x.ok, len(x.t)-1)
	}
	return x.last
}

// nextValid returns the first valid i' in [i, end), or -1.
func (x *edgeIndex) nextValid(i, end int) int {
	if x.ok != nil {
		return nextValid(x.ok, i, end)
	}
	if i >= end {
		return -1
	}
	if x.next != nil {
		i = x.next[i]
	}
	if i >= end {
		return -1
	}
	return i
}

// prevValid returns the last valid i' <= i, or -1.
func (x *edgeIndex) prevValid(i int) int {
	if x.ok != nil {
		return prevValid(x.ok, i)
	}
	if i < 0 || x.prev == nil {
		return i
	}
	return x.prev[i]
}

// after returns the number of samples at or before ms, the index of the
// first sample after it, as sort.Search finds it. A grid index of ascending
// samples starts from *hint, the answer for the same edge of the previous
// window, and moves it.
func (x *edgeIndex) after(ms int64, hint *int) int {
	t := x.t
	if x.ok != nil || !x.ascending {
		return sort.Search(len(t), func(i int) bool { return t[i] > ms })
	}
	i := gallop(t, ms, *hint)
	*hint = i
	return i
}

// nextValid returns the first i in [i, end) with ok(i), or -1.
func nextValid(ok func(int) bool, i, end int) int {
	for ; i < end; i++ {
		if ok(i) {
			return i
		}
	}
	return -1
}

// prevValid returns the last i' <= i with ok(i'), or -1.
func prevValid(ok func(int) bool, i int) int {
	for ; i >= 0; i-- {
		if ok(i) {
			return i
		}
	}
	return -1
}

// Grid splits w into consecutive windows of length step, starting at
// w.Start: [Start, Start+step], [Start+step, Start+2*step], ... The last
// window ends at w.End and may be shorter. Grid returns nil when w has a
// zero edge, ends before it starts, or step <= 0.
//
// Adjacent windows share their edge instant, so that the increases of a
// counter over the windows of a Grid add up to its increase over w (when no
// window is clipped). Evaluating every target on the same Grid aligns them
// in time: each takes its own last sample before each grid instant.
func Grid(w Window, step time.Duration) []Window {
	if w.Start.IsZero() || w.End.IsZero() || !w.End.After(w.Start) || step <= 0 {
		return nil
	}
	n := int((w.Duration() + step - 1) / step)
	ws := make([]Window, 0, n)
	for s := w.Start; s.Before(w.End); s = s.Add(step) {
		e := s.Add(step)
		if e.After(w.End) {
			e = w.End
		}
		ws = append(ws, Window{Start: s, End: e})
	}
	return ws
}

// Step is the result of evaluating one window of a Grid.
type Step[R any] struct {
	// Window is the grid window evaluated.
	Window Window
	// Result is the value over Window; meaningful only when Err is nil.
	Result R
	// Err is non-nil when the window could not be evaluated (typically
	// wrapping ErrNotEvaluable: the pod was not running).
	Err error
}

// Steps evaluates eval over every window of Grid(w, step) and returns the
// results in time order: a timeline of per-interval increases or gauge
// statistics for change-point search and correlation across targets. A
// method value fits eval directly:
//
//	steps := snapshot.Steps(w, time.Minute, series.Increase)
//
// The grid versions of the window helpers (Series.IncreaseSteps and
// GaugeSteps, HistogramSeries.IncreaseSteps, Family.IncreaseSteps,
// GaugeSteps and HistogramIncreaseSteps) return the same steps over
// Grid(w, step) in one pass over the samples.
func Steps[R any](w Window, step time.Duration, eval func(Window) (R, error)) []Step[R] {
	grid := Grid(w, step)
	steps := make([]Step[R], len(grid))
	for i, g := range grid {
		r, err := eval(g)
		steps[i] = Step[R]{Window: g, Result: r, Err: err}
	}
	return steps
}

// Matches reports whether the labels of s match every entry of match: the
// value of label name must equal the given value, an empty value matching
// an absent label (as in PromQL). The special name "__name__" matches
// s.Name. A nil match matches every series.
func (s *Series) Matches(match map[string]string) bool {
	for k, v := range match {
		if k == "__name__" {
			if s.Name != v {
				return false
			}
			continue
		}
		if s.Labels.Get(k) != v {
			return false
		}
	}
	return true
}

// SeriesMatching returns the float series of f whose labels match, in the
// family's order; see Series.Matches.
func (f *Family) SeriesMatching(match map[string]string) []*Series {
	return matching(f.Series, match)
}

// matching returns the members of ss that match, in order.
func matching[S interface{ Matches(map[string]string) bool }](ss []S, match map[string]string) []S {
	var out []S
	for _, s := range ss {
		if s.Matches(match) {
			out = append(out, s)
		}
	}
	return out
}

// seriesID names a series in errors: name{labels}.
func seriesID(name string, ls labels.Labels) string {
	if ls.IsEmpty() && name != "" {
		return name
	}
	return name + ls.String()
}

// windowMillis formats a time in ms since the epoch as RFC 3339 UTC,
// with milliseconds when not zero.
func windowMillis(ms int64) string { return windowTime(time.UnixMilli(ms)) }

// windowTime formats t as RFC 3339 UTC, with milliseconds when not zero.
func windowTime(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.999Z07:00")
}

// windowValue prints whole numbers without exponent and others with six
// significant digits.
func windowValue(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}

// windowDescribe formats the common tail of the results' String methods: the
// window, the edge samples, the count and the flags.
func windowDescribe(w Window, from, to time.Time, n, series int, extra []string) string {
	var b strings.Builder
	b.WriteString(" over ")
	b.WriteString(w.String())
	fmt.Fprintf(&b, " (%d sample", n)
	if n != 1 {
		b.WriteString("s")
	}
	if series > 1 {
		fmt.Fprintf(&b, " of %d series", series)
	}
	if from.Equal(to) {
		fmt.Fprintf(&b, " at %s", windowTime(to))
	} else {
		fmt.Fprintf(&b, " from %s to %s", windowTime(from), windowTime(to))
	}
	for _, e := range extra {
		b.WriteString(", ")
		b.WriteString(e)
	}
	b.WriteString(")")
	return b.String()
}

// windowPlural formats n and a noun, adding "s" unless n == 1.
func windowPlural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// windowMatch formats a selector as {a="x", b="y"}, sorted by name.
func windowMatch(match map[string]string) string {
	keys := make([]string, 0, len(match))
	for k := range match {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s=%q", k, match[k])
	}
	b.WriteByte('}')
	return b.String()
}
