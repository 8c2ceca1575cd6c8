package snapshot

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"gonum.org/v1/gonum/stat"
)

// GaugeStats summarizes a gauge over a window.
//
// The samples summarized are the valid (non-NaN) samples from the start edge
// to the end edge, chosen as described under Lookback: the start edge is the
// last sample at or before the window's start (within Lookback), the value in
// force when the window began, so a window shorter than the scrape interval
// still has a value. NaN samples are skipped and counted in Skipped; ±Inf
// samples are kept and make Mean and Slope infinite or NaN.
type GaugeStats struct {
	// Window is the window asked for.
	Window Window
	// From and To are the times of the first and last samples summarized.
	From, To time.Time
	// N is the number of samples summarized.
	N int
	// Skipped is the number of NaN samples between From and To (summed over
	// series for an aggregate).
	Skipped int
	// Series is the number of series aggregated (1 for a single series).
	Series int
	// Mean is the arithmetic mean of the samples. It is not weighted by
	// time: with regular scrapes the two agree, with irregular ones a
	// burst of close samples weighs more.
	Mean float64
	// Min and Max are the smallest and largest samples.
	Min, Max float64
	// First and Last are the samples at From and To.
	First, Last float64
	// Slope is the least-squares slope of value against time, in units per
	// second (gonum's stat.LinearRegression); NaN when N < 2.
	Slope float64
	// StartClipped is set when no sample stood for the window's start
	// within Lookback: From is the first sample inside the window.
	StartClipped bool
}

// Duration returns To - From, the time spanned by the samples.
func (g GaugeStats) Duration() time.Duration { return g.To.Sub(g.From) }

// String formats the statistics with their window, sample count and flags,
// as "gauge mean 3.5 min 0 max 12 first 1 last 4 slope 0.01/s over ...".
func (g GaugeStats) String() string {
	var extra []string
	if g.StartClipped {
		extra = append(extra, "start not covered")
	}
	if g.Skipped > 0 {
		extra = append(extra, fmt.Sprintf("%d NaN skipped", g.Skipped))
	}
	return fmt.Sprintf("gauge mean %s min %s max %s first %s last %s slope %s/s",
		windowValue(g.Mean), windowValue(g.Min), windowValue(g.Max),
		windowValue(g.First), windowValue(g.Last), windowValue(g.Slope)) +
		windowDescribe(g.Window, g.From, g.To, g.N, g.Series, extra)
}

// Gauge summarizes gauge s over w: see GaugeStats for which samples count.
// A single sample is a valid summary (its Slope is NaN). When no sample
// stands for the window's end, the error wraps ErrNotEvaluable. Errors name
// the series.
func (s *Series) Gauge(w Window) (GaugeStats, error) {
	x := edgeIndex{t: s.T, ok: func(i int) bool { return !math.IsNaN(s.V[i]) }}
	return s.gauge(&x, w, nil)
}

// gaugeBuf holds the abscissas and ordinates of a gauge's regression,
// reused from one window of a grid to the next.
type gaugeBuf struct{ x, y []float64 }

// gauge is Gauge with the edges located in x, an edgeIndex of s.T whose
// validity is "not NaN", and the regression's samples in buf (new slices
// when nil).
func (s *Series) gauge(ix *edgeIndex, w Window, buf *gaugeBuf) (GaugeStats, error) {
	from, to, clipped, err := ix.edges(w)
	if err != nil {
		return GaugeStats{}, fmt.Errorf("%s: %w", seriesID(s.Name, s.Labels), err)
	}
	g := GaugeStats{
		Window:       w,
		From:         time.UnixMilli(s.T[from]),
		To:           time.UnixMilli(s.T[to]),
		Series:       1,
		Min:          math.Inf(1),
		Max:          math.Inf(-1),
		First:        s.V[from],
		Last:         s.V[to],
		StartClipped: clipped,
	}
	var x, y []float64
	if buf == nil {
		x = make([]float64, 0, to-from+1)
		y = make([]float64, 0, to-from+1)
	} else {
		x, y = buf.x[:0], buf.y[:0]
	}
	for i := from; i <= to; i++ {
		v := s.V[i]
		if math.IsNaN(v) {
			g.Skipped++
			continue
		}
		x = append(x, float64(s.T[i]-s.T[from])/1e3)
		y = append(y, v)
		g.Min = math.Min(g.Min, v)
		g.Max = math.Max(g.Max, v)
	}
	if buf != nil {
		buf.x, buf.y = x, y
	}
	g.N = len(y)
	g.Mean = stat.Mean(y, nil)
	g.Slope = math.NaN()
	if g.N >= 2 {
		_, g.Slope = stat.LinearRegression(x, y, nil, false)
	}
	return g, nil
}

// Aggregation says how the series of a family are combined into one: summed
// (vLLM's waiting and running requests across the engines of a pod),
// averaged (KV cache usage across engines) or kept apart (info metrics and
// process start times, compared rather than combined). Package catalog
// gives each signal one. The zero value is no aggregation chosen.
type Aggregation int

const (
	// AggregateSum adds the series.
	AggregateSum Aggregation = iota + 1
	// AggregateMean averages the series present.
	AggregateMean
	// AggregateNone keeps the series apart; Aggregate returns nil for it.
	AggregateNone
)

// aggregationNames are the names of the aggregations, by value.
var aggregationNames = [...]string{AggregateSum: "sum", AggregateMean: "mean", AggregateNone: "none"}

// String returns "sum", "mean" or "none".
func (a Aggregation) String() string {
	if a > 0 && int(a) < len(aggregationNames) {
		return aggregationNames[a]
	}
	return "Aggregation(" + strconv.Itoa(int(a)) + ")"
}

// Aggregate combines the float series of f that match (see Series.Matches)
// into one series, as PromQL's sum() or avg() evaluated at every instant at
// which some matching series has a non-NaN sample: at each such instant,
// each series contributes its last non-NaN sample at or before it within
// Lookback, and series without one are left out (so a sum can drop when a
// series goes stale; a mean averages the series present).
//
// The result's Name is the members' common name (else f.Name), its Labels
// those shared by all members with equal values, and it has no StartT. It
// returns nil when no series matches or agg is neither AggregateSum nor
// AggregateMean. It may share its samples with f's series (a single
// member without NaN or -0 is its own aggregate): callers must not
// modify them.
func (f *Family) Aggregate(match map[string]string, agg Aggregation) *Series {
	ss := f.SeriesMatching(match)
	if len(ss) == 0 || (agg != AggregateSum && agg != AggregateMean) {
		return nil
	}
	if len(ss) == 1 && !slices.ContainsFunc(ss[0].V, func(v float64) bool { return math.IsNaN(v) || (v == 0 && math.Signbit(v)) }) {
		s := ss[0]
		return &Series{Name: s.Name, Labels: s.Labels, T: s.T, V: s.V}
	}
	var times []int64
	for _, s := range ss {
		for i, t := range s.T {
			if !math.IsNaN(s.V[i]) {
				times = append(times, t)
			}
		}
	}
	slices.Sort(times)
	times = slices.Compact(times)

	out := &Series{Name: ss[0].Name, Labels: sharedLabels(ss), T: times, V: make([]float64, len(times))}
	for _, s := range ss[1:] {
		if s.Name != out.Name {
			out.Name = f.Name
		}
	}
	next := make([]int, len(ss))
	last := make([]int, len(ss))
	for k := range last {
		last[k] = -1
	}
	lb := Lookback.Milliseconds()
	for j, t := range times {
		sum, n := 0.0, 0
		for k, s := range ss {
			for ; next[k] < len(s.T) && s.T[next[k]] <= t; next[k]++ {
				if !math.IsNaN(s.V[next[k]]) {
					last[k] = next[k]
				}
			}
			if l := last[k]; l >= 0 && s.T[l] > t-lb {
				sum += s.V[l]
				n++
			}
		}
		// n >= 1: t is the time of some member's non-NaN sample.
		if agg == AggregateMean {
			sum /= float64(n)
		}
		out.V[j] = sum
	}
	return out
}

// Gauge summarizes the float series of f that match over w, combined with
// agg (see Aggregate) when there are several. Skipped counts the NaN
// samples of all members between From and To. When no series matches or the
// combination has no sample for the window's end, the error wraps
// ErrNotEvaluable.
func (f *Family) Gauge(w Window, match map[string]string, agg Aggregation) (GaugeStats, error) {
	ss := f.SeriesMatching(match)
	switch len(ss) {
	case 0:
		return GaugeStats{}, f.noMatch(match)
	case 1:
		return ss[0].Gauge(w)
	}
	a := f.Aggregate(match, agg)
	if a == nil {
		return GaugeStats{}, f.unknownAggregation(agg)
	}
	g, err := a.Gauge(w)
	if err != nil {
		return GaugeStats{}, aggregateError(agg, len(ss), err)
	}
	g.Series = len(ss)
	g.Skipped += skippedNaN(ss, g.From, g.To)
	return g, nil
}

// unknownAggregation is Family.Gauge's error for an agg that Aggregate
// does not know.
func (f *Family) unknownAggregation(agg Aggregation) error {
	return fmt.Errorf("%s: unknown aggregation %s", f.Name, agg)
}

// aggregateError wraps err, the error of the combination with agg of n
// series.
func aggregateError(agg Aggregation, n int, err error) error {
	return fmt.Errorf("%s of %d series: %w", agg, n, err)
}

// skippedNaN counts the NaN samples of ss from from to to.
func skippedNaN(ss []*Series, from, to time.Time) int {
	n := 0
	lo, hi := from.UnixMilli(), to.UnixMilli()
	for _, s := range ss {
		i := sort.Search(len(s.T), func(i int) bool { return s.T[i] >= lo })
		for ; i < len(s.T) && s.T[i] <= hi; i++ {
			if math.IsNaN(s.V[i]) {
				n++
			}
		}
	}
	return n
}

// sharedLabels returns the labels that all of ss carry with equal values.
func sharedLabels(ss []*Series) labels.Labels {
	var common []labels.Label
	ss[0].Labels.Range(func(l labels.Label) {
		for _, s := range ss[1:] {
			if s.Labels.Get(l.Name) != l.Value {
				return
			}
		}
		common = append(common, l)
	})
	return labels.New(common...)
}
