package histogram

import (
	"fmt"
	"math"
	"strings"
)

// FractionEstimate is the share of observations at or below a threshold:
// SLO attainment such as "92.3% of requests had TTFT <= 2 s".
type FractionEstimate struct {
	// Threshold is the value asked about.
	Threshold float64
	// Value is the share of observations <= Threshold, in [0, 1], identical
	// to PromQL's histogram_fraction(-Inf, Threshold, ...) over the same
	// buckets: linear interpolation inside the bucket holding Threshold.
	Value float64
	// LowerBound and UpperBound are the bucket bounds around Threshold
	// (equal when Threshold is a bound), and AtLower and AtUpper the exact
	// shares of observations at or below them: the true share at
	// Threshold lies in [AtLower, AtUpper] without any interpolation.
	// Below the first bound LowerBound is -Inf with AtLower 0; above the
	// last finite bound UpperBound is +Inf with AtUpper 1.
	LowerBound, AtLower float64
	UpperBound, AtUpper float64
	// Count is the number of observations: the +Inf bucket.
	Count float64
	// Warnings lists structural problems, as in Estimate.Warnings.
	Warnings []error
}

// Fraction returns the share of observations at or below x, with the exact
// shares at the neighbouring bounds. Value equals PromQL's
// histogram_fraction(-Inf, x, ...) for classic buckets
// (promql.BucketFraction): NaN without a +Inf bucket, with a total of
// zero, or for x NaN; no interpolation into the +Inf bucket, nor into a
// first bucket whose bound is <= 0 (it counts whole); counts are not
// repaired for monotonicity (PromQL does not repair them here either).
func (h Histogram) Fraction(x float64) FractionEstimate {
	fe := FractionEstimate{Threshold: x, Value: math.NaN(), Count: math.NaN(),
		LowerBound: math.NaN(), AtLower: math.NaN(), UpperBound: math.NaN(), AtUpper: math.NaN()}
	bounds, counts, warn := h.sorted()
	fe.Warnings = warn
	n := len(bounds)
	if n == 0 || !math.IsInf(bounds[n-1], +1) {
		fe.Warnings = append(fe.Warnings, ErrNoInfBucket)
		return fe
	}
	total := counts[n-1]
	fe.Count = total
	fe.Value = bucketFraction(math.Inf(-1), x, bounds, counts)
	if math.IsNaN(x) || total == 0 {
		return fe
	}
	i := 0
	for bounds[i] < x { // terminates: bounds[n-1] is +Inf and x is not NaN
		i++
	}
	fe.UpperBound, fe.AtUpper = bounds[i], counts[i]/total
	switch {
	case bounds[i] == x:
		fe.LowerBound, fe.AtLower = fe.UpperBound, fe.AtUpper
	case i == 0:
		fe.LowerBound, fe.AtLower = math.Inf(-1), 0
	default:
		fe.LowerBound, fe.AtLower = bounds[i-1], counts[i-1]/total
	}
	return fe
}

// FractionBetween returns the share of observations in (lower, upper],
// identical to PromQL's histogram_fraction(lower, upper, ...) for classic
// buckets: 0 when lower >= upper, NaN when either is NaN, when there is no
// +Inf bucket or when the total is zero.
func (h Histogram) FractionBetween(lower, upper float64) float64 {
	bounds, counts, _ := h.sorted()
	return bucketFraction(lower, upper, bounds, counts)
}

// sorted returns h's buckets strictly ascending, copying only when they are
// not, and the warnings that explain a copy.
func (h Histogram) sorted() (bounds, counts []float64, warnings []error) {
	if len(h.Counts) != len(h.Bounds) {
		return nil, nil, []error{fmt.Errorf("%w: %d bounds, %d counts", ErrLengthMismatch, len(h.Bounds), len(h.Counts))}
	}
	if strictlyAscending(h.Bounds) {
		return h.Bounds, h.Counts, nil
	}
	b, c, ok := normalize(h.Bounds, h.Counts)
	if !ok {
		return nil, nil, []error{fmt.Errorf("%w: a bound is NaN", ErrUnsortedBounds)}
	}
	return b, c, []error{fmt.Errorf("%w: sorted and summed equal bounds as PromQL does", ErrUnsortedBounds)}
}

// bucketFraction is promql.BucketFraction over strictly ascending bounds.
func bucketFraction(lower, upper float64, bounds, counts []float64) float64 {
	n := len(bounds)
	if n == 0 || !math.IsInf(bounds[n-1], +1) {
		return math.NaN()
	}
	count := counts[n-1]
	if count == 0 || math.IsNaN(lower) || math.IsNaN(upper) {
		return math.NaN()
	}
	if lower >= upper {
		return 0
	}
	var (
		rank, lowerRank, upperRank float64
		lowerSet, upperSet         bool
	)
	// A first bucket with a positive bound is taken to start at 0,
	// otherwise at -Inf.
	lowerBound := 0.0
	if bounds[0] <= 0 {
		lowerBound = math.Inf(-1)
	}
	for i, upperBound := range bounds {
		if i > 0 {
			lowerBound = bounds[i-1]
		}
		c := counts[i]
		// interpolate is the cumulative count at v inside this bucket; a
		// bucket of infinite width contributes nothing (+Inf) or all
		// (-Inf lower edge) of its count.
		interpolate := func(v float64) float64 {
			if math.IsInf(lowerBound, -1) {
				return c
			}
			return rank + (c-rank)*(v-lowerBound)/(upperBound-lowerBound)
		}
		if !lowerSet && lowerBound >= lower {
			lowerRank, lowerSet = rank, true
		}
		if !upperSet && lowerBound >= upper {
			upperRank, upperSet = rank, true
		}
		if lowerSet && upperSet {
			break
		}
		if !lowerSet && lowerBound < lower && upperBound > lower {
			lowerRank, lowerSet = interpolate(lower), true
		}
		if !upperSet && lowerBound < upper && upperBound > upper {
			upperRank, upperSet = interpolate(upper), true
		}
		if lowerSet && upperSet {
			break
		}
		rank = c
	}
	if !lowerSet || lowerRank > count {
		lowerRank = count
	}
	if !upperSet || upperRank > count {
		upperRank = count
	}
	return (upperRank - lowerRank) / count
}

// String formats fe like "<=2: 92.3% [90.1% at <=1, 95% at <=2.5] n=1234".
func (fe FractionEstimate) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "<=%s: %s", formatBound(fe.Threshold), formatPercent(fe.Value))
	switch {
	case math.IsNaN(fe.LowerBound):
	case fe.LowerBound == fe.UpperBound:
		sb.WriteString(" (exact, a bucket bound)")
	default:
		fmt.Fprintf(&sb, " [%s at <=%s, %s at <=%s]", formatPercent(fe.AtLower), formatBound(fe.LowerBound),
			formatPercent(fe.AtUpper), formatBound(fe.UpperBound))
	}
	fmt.Fprintf(&sb, " n=%s", formatNum(fe.Count))
	writeWarnings(&sb, fe.Warnings)
	return sb.String()
}

// formatPercent spells a fraction as a percentage: "12.5%", "NaN".
func formatPercent(v float64) string {
	if math.IsNaN(v) {
		return "NaN"
	}
	return percent(v, 4) + "%"
}
