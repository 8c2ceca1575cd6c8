package histogram

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/prometheus/prometheus/util/almost"
)

// Histogram is a classic Prometheus histogram: cumulative counts at
// ascending upper bounds ("le"), plus the sum and count of all
// observations.
//
// The layout is struct-of-arrays so that a series of histograms sharing one
// set of bounds can be stored as one Bounds slice and one flat Counts slice,
// and each sample viewed as a Histogram without copying.
//
// A Histogram read from real evidence may be invalid (no +Inf bucket, bounds
// out of order, counts that go down); Validate says what is wrong.
// Functions in this package never modify the Histograms they are given.
type Histogram struct {
	// Bounds are the upper bounds of the buckets, ascending; the last one
	// must be +Inf for a valid histogram.
	Bounds []float64
	// Counts are cumulative: Counts[i] is the number of observations
	// less than or equal to Bounds[i]. len(Counts) == len(Bounds).
	Counts []float64
	// Count is the total number of observations (the _count sample);
	// NaN when unknown.
	Count float64
	// Sum is the sum of all observed values (the _sum sample); NaN when
	// unknown.
	Sum float64
}

// Errors reported by Validate, Sub, Merge, FromNHCB and in
// Estimate.Warnings. They are wrapped with details (which bucket, which
// input); test for them with errors.Is.
var (
	// ErrLengthMismatch: len(Counts) != len(Bounds).
	ErrLengthMismatch = errors.New("histogram: counts and bounds differ in length")
	// ErrUnsortedBounds: bounds are not strictly ascending (a bound is
	// repeated, out of order, or NaN).
	ErrUnsortedBounds = errors.New("histogram: bounds not strictly ascending")
	// ErrNoInfBucket: the last bound is not +Inf (or there are no buckets).
	ErrNoInfBucket = errors.New("histogram: no +Inf bucket")
	// ErrCountMismatch: Count is known and differs from the +Inf bucket.
	ErrCountMismatch = errors.New("histogram: count differs from +Inf bucket")
	// ErrNegativeCount: a bucket count or Count is negative.
	ErrNegativeCount = errors.New("histogram: negative count")
	// ErrNaNCount: a bucket count is NaN.
	ErrNaNCount = errors.New("histogram: NaN count")
	// ErrNonMonotonic: a cumulative count is lower than the one below it
	// (by more than the relative SmallDeltaTolerance).
	ErrNonMonotonic = errors.New("histogram: cumulative counts decrease")
	// ErrCounterReset: Sub found a count that went down between the two
	// samples, the sign of a restarted process.
	ErrCounterReset = errors.New("histogram: counter reset")
	// ErrLayoutMismatch: two histograms that must share bounds do not.
	ErrLayoutMismatch = errors.New("histogram: bucket layouts differ")
	// ErrNoCommonBounds: Merge inputs share no finite bound.
	ErrNoCommonBounds = errors.New("histogram: no common finite bound")
	// ErrNotCustomBuckets: a native histogram with an exponential schema
	// was given where custom buckets (NHCB) are required.
	ErrNotCustomBuckets = errors.New("histogram: native histogram with exponential buckets not supported")
	// ErrInvalidQuantile: q is NaN or outside [0, 1]. Quantile still
	// returns PromQL's value for it (NaN, -Inf or +Inf).
	ErrInvalidQuantile = errors.New("histogram: quantile outside [0, 1]")
)

// SmallDeltaTolerance is the relative difference between neighbouring
// cumulative counts that Quantile ignores as floating point noise, in either
// direction. It is Prometheus's smallDeltaTolerance (promql/quantile.go):
// such noise appears when rates of buckets are summed in different orders,
// and a real difference of one observation only falls below it when a bucket
// holds 1e12 observations. Validate applies the same tolerance when it
// checks monotonicity and Count.
const SmallDeltaTolerance = 1e-12

// Validate reports what is wrong with h, or nil when h is a valid classic
// histogram: equal lengths, strictly ascending bounds ending in +Inf, counts
// that are neither NaN nor negative, cumulative counts that never decrease
// (beyond SmallDeltaTolerance), and a known Count equal to the +Inf bucket.
// A NaN Count or Sum means unknown and is accepted.
//
// The error joins one error per kind of problem (the first bucket found),
// each wrapping one of the Err* sentinels.
func (h Histogram) Validate() error {
	if h.valid() {
		return nil
	}
	return h.validate()
}

// validate is Validate the long way, naming each kind of problem.
func (h Histogram) validate() error {
	if len(h.Counts) != len(h.Bounds) {
		return fmt.Errorf("%w: %d bounds, %d counts", ErrLengthMismatch, len(h.Bounds), len(h.Counts))
	}
	n := len(h.Bounds)
	if n == 0 {
		return fmt.Errorf("%w: no buckets at all", ErrNoInfBucket)
	}
	var errs []error
	var unsorted, nanCount, negative, nonMono bool
	for i, b := range h.Bounds {
		if !unsorted && math.IsNaN(b) {
			unsorted = true
			errs = append(errs, fmt.Errorf("%w: bucket %d has bound NaN", ErrUnsortedBounds, i))
		}
		if !unsorted && i > 0 && !(b > h.Bounds[i-1]) {
			unsorted = true
			errs = append(errs, fmt.Errorf("%w: bucket %d le=%s is not above bucket %d le=%s",
				ErrUnsortedBounds, i, formatBound(b), i-1, formatBound(h.Bounds[i-1])))
		}
	}
	if last := h.Bounds[n-1]; !math.IsInf(last, +1) {
		errs = append(errs, fmt.Errorf("%w: last bound is le=%s", ErrNoInfBucket, formatBound(last)))
	}
	for i, c := range h.Counts {
		switch {
		case math.IsNaN(c):
			if !nanCount {
				nanCount = true
				errs = append(errs, fmt.Errorf("%w: bucket le=%s", ErrNaNCount, formatBound(h.Bounds[i])))
			}
			continue
		case c < 0:
			if !negative {
				negative = true
				errs = append(errs, fmt.Errorf("%w: bucket le=%s has %g", ErrNegativeCount, formatBound(h.Bounds[i]), c))
			}
		}
		if !nonMono && i > 0 && c < h.Counts[i-1] && !almost.Equal(c, h.Counts[i-1], SmallDeltaTolerance) {
			nonMono = true
			errs = append(errs, fmt.Errorf("%w: bucket le=%s has %g, below %g at le=%s",
				ErrNonMonotonic, formatBound(h.Bounds[i]), c, h.Counts[i-1], formatBound(h.Bounds[i-1])))
		}
	}
	if h.Count < 0 {
		errs = append(errs, fmt.Errorf("%w: count is %g", ErrNegativeCount, h.Count))
	}
	if !math.IsNaN(h.Count) && !unsorted && math.IsInf(h.Bounds[n-1], +1) {
		if inf := h.Counts[n-1]; !math.IsNaN(inf) && !almost.Equal(h.Count, inf, SmallDeltaTolerance) {
			errs = append(errs, fmt.Errorf("%w: count is %g, +Inf bucket has %g", ErrCountMismatch, h.Count, inf))
		}
	}
	return errors.Join(errs...)
}

// valid is Validate's fast path: one pass over the buckets, true only
// when Validate finds nothing wrong (false sends it the long way, which
// names what is wrong).
func (h Histogram) valid() bool {
	n := len(h.Bounds)
	if n == 0 || len(h.Counts) != n || !math.IsInf(h.Bounds[n-1], +1) || h.Count < 0 {
		return false
	}
	prevB, prevC := math.Inf(-1), 0.0
	for i, b := range h.Bounds {
		c := h.Counts[i]
		// NaN fails every comparison: !(b > prevB) catches a NaN bound,
		// !(c >= 0) a NaN count.
		if !(b > prevB) || !(c >= 0) || (i > 0 && c < prevC && !almost.Equal(c, prevC, SmallDeltaTolerance)) {
			return false
		}
		prevB, prevC = b, c
	}
	return math.IsNaN(h.Count) || almost.Equal(h.Count, h.Counts[n-1], SmallDeltaTolerance)
}

// Mean returns Sum/Count, the mean observed value; NaN when Count is zero
// or either is unknown.
func (h Histogram) Mean() float64 {
	if h.Count == 0 {
		return math.NaN()
	}
	return h.Sum / h.Count
}

// Total returns the number of observations as PromQL sees them: the count
// of the +Inf bucket (NaN when there is no bucket). Count, the _count
// sample, normally equals it.
func (h Histogram) Total() float64 {
	if len(h.Counts) == 0 {
		return math.NaN()
	}
	return h.Counts[len(h.Counts)-1]
}

// Clone returns a deep copy of h.
func (h Histogram) Clone() Histogram {
	return Histogram{
		Bounds: cloneFloats(h.Bounds),
		Counts: cloneFloats(h.Counts),
		Count:  h.Count,
		Sum:    h.Sum,
	}
}

// Scale returns h with every count and the sum multiplied by f, for example
// 1/seconds to turn an increase into a rate. The result shares Bounds
// with h.
func (h Histogram) Scale(f float64) Histogram {
	out := Histogram{Bounds: h.Bounds, Counts: make([]float64, len(h.Counts)), Count: h.Count * f, Sum: h.Sum * f}
	for i, c := range h.Counts {
		out.Counts[i] = c * f
	}
	return out
}

// String formats h on one line: count, sum, mean and the cumulative
// buckets, e.g. "n=9 sum=12 mean=1.333 {0.1:2 0.5:2 1:7 +Inf:9}".
func (h Histogram) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "n=%s sum=%s mean=%s {", formatNum(h.Count), formatNum(h.Sum), formatNum(h.Mean()))
	for i, b := range h.Bounds {
		if i > 0 {
			sb.WriteByte(' ')
		}
		c := math.NaN()
		if i < len(h.Counts) {
			c = h.Counts[i]
		}
		fmt.Fprintf(&sb, "%s:%s", formatBound(b), formatNum(c))
	}
	sb.WriteByte('}')
	return sb.String()
}

// SameLayout reports whether a and b are the same bounds, compared as
// numbers (so le="1", "1.0" and "1e0" match once parsed). NaN bounds never
// match.
func SameLayout(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func cloneFloats(s []float64) []float64 {
	if s == nil {
		return nil
	}
	return append(make([]float64, 0, len(s)), s...)
}

// formatBound prints a bucket bound the way Prometheus 3 prints le.
func formatBound(b float64) string {
	switch {
	case math.IsInf(b, +1):
		return "+Inf"
	case math.IsInf(b, -1):
		return "-Inf"
	}
	return fmt.Sprint(b)
}

// percent spells v*100 with up to prec significant digits: "95",
// "99.9", "NaN".
func percent(v float64, prec int) string {
	if math.IsNaN(v) {
		return "NaN"
	}
	return strings.TrimSuffix(fmt.Sprintf("%.*g", prec, v*100), ".0")
}

// writeWarnings appends the warnings of an estimate to its String.
func writeWarnings(sb *strings.Builder, warnings []error) {
	for _, w := range warnings {
		fmt.Fprintf(sb, "; %v", w)
	}
}

// formatNum prints a number with 4 significant digits, integers in full.
func formatNum(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.4g", v)
}
