package histogram

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/prometheus/prometheus/util/almost"
)

// MinTail is the number of observations the stability rule wants on each
// side of a quantile's rank; see MinCount.
const MinTail = 10

// MinCount returns the number of observations a histogram needs before its
// q-quantile is called stable: MinTail / min(q, 1-q). A p50 needs 20, a p95
// needs 200, a p99 needs 1,000 and a p99.9 needs 10,000; q = 0 and q = 1
// (the extremes, which a histogram only brackets) are never stable, nor is a
// q outside [0, 1] (MinCount is +Inf).
//
// The rule: at least MinTail observations are expected above the rank
// q x count, and at least MinTail below it. The number of observations
// above the true q-quantile in a sample of n is binomial with mean
// n(1-q); below ten its relative standard deviation exceeds about 30%, so the
// bucket that holds the rank, and the interpolated value with it, move a lot
// from one window to the next. It is the rule of thumb "a p99 needs
// thousands of requests" made explicit.
//
// The rule presumes counts of observations (an increase over a window, see
// Sub), not per-second rates: scale a rate by its window before judging it.
func MinCount(q float64) float64 {
	if !(q >= 0 && q <= 1) {
		return math.Inf(+1)
	}
	tail := min(q, 1-q)
	if tail == 0 {
		return math.Inf(+1)
	}
	return MinTail / tail
}

// Estimate is a quantile read from a classic histogram: PromQL's value and
// the bucket it came from.
type Estimate struct {
	// Q is the requested quantile.
	Q float64
	// Value is identical to PromQL's histogram_quantile(Q, ...) over the
	// same buckets, including NaN and ±Inf in its edge cases.
	Value float64
	// Lower and Upper are the edges of the bucket that holds the rank
	// Q x Count after the monotonicity repair: the true quantile lies in
	// [Lower, Upper] while Value only interpolates linearly inside it.
	// Upper is +Inf when the rank falls in the +Inf (overflow) bucket, where
	// Value = Lower is only a lower bound. Lower of the first bucket is 0
	// when its upper bound is positive (PromQL's assumption of no negative
	// observations) and -Inf otherwise. Both are NaN when there is no
	// bucket to speak of (Value NaN or Q invalid).
	Lower, Upper float64
	// Count is the number of observations behind the estimate: the +Inf
	// bucket after the repair, as PromQL uses it.
	Count float64
	// Stable is false when Count < MinCount(Q): too few observations for
	// this quantile (see MinCount for the rule).
	Stable bool
	// Repair says how the cumulative counts had to be fixed, as PromQL
	// fixes them; its zero value means they were fine.
	Repair Repair
	// Warnings lists structural problems that made the estimate NaN or
	// needed more than the monotonicity repair: an invalid Q
	// (ErrInvalidQuantile), bounds that had to be sorted or coalesced
	// (ErrUnsortedBounds), no +Inf bucket (ErrNoInfBucket), mismatched
	// lengths (ErrLengthMismatch). Nil for a valid histogram.
	Warnings []error
}

// Repair records what the monotonicity repair changed (PromQL's
// ensureMonotonicAndIgnoreSmallDeltas): relative differences below
// SmallDeltaTolerance between neighbouring cumulative counts are ignored in
// either direction, and any larger decrease is raised to the count below.
type Repair struct {
	// Forced is true when some cumulative count went down and was raised
	// (PromQL adds the info annotation "input to histogram_quantile needed
	// to be fixed for monotonicity").
	Forced bool
	// Precision is true when differences below SmallDeltaTolerance were
	// ignored.
	Precision bool
	// MinBound and MaxBound are the lowest and highest bounds whose counts
	// were raised, and MaxDrop the largest decrease; meaningful when
	// Forced.
	MinBound, MaxBound, MaxDrop float64
}

// Quantile estimates the q-quantile of the observations exactly as PromQL's
// histogram_quantile does for classic buckets (promql.BucketQuantile), and
// reports the bucket that holds it and whether the count supports it.
//
// The rules, in PromQL's order: q NaN gives NaN, q < 0 gives -Inf, q > 1
// gives +Inf; no +Inf bucket gives NaN; buckets with equal bounds are summed
// (only happens when bounds are not strictly ascending, which also makes
// Quantile sort a copy); counts are repaired to be monotonic (see Repair);
// fewer than two buckets or a total of zero gives NaN. Then the rank
// q x total is looked for in the finite buckets: in the +Inf bucket the
// result is the highest finite bound; in a first bucket with a bound <= 0 it
// is that bound; otherwise it is interpolated linearly inside the bucket,
// from 0 for a first bucket with a positive bound.
//
// For a valid histogram Quantile allocates nothing. h.Count and h.Sum are
// not used: like PromQL, the +Inf bucket is the total. NaN bounds (which
// PromQL sorts in no defined order) give a NaN Value.
func (h Histogram) Quantile(q float64) Estimate {
	e := Estimate{Q: q, Value: math.NaN(), Lower: math.NaN(), Upper: math.NaN(), Count: math.NaN()}
	if math.IsNaN(q) || q < 0 || q > 1 {
		e.Warnings = append(e.Warnings, fmt.Errorf("%w: q=%g", ErrInvalidQuantile, q))
		// PromQL answers these before looking at the buckets.
		switch {
		case q < 0:
			e.Value = math.Inf(-1)
		case q > 1:
			e.Value = math.Inf(+1)
		}
	}
	if len(h.Counts) != len(h.Bounds) {
		e.Warnings = append(e.Warnings, fmt.Errorf("%w: %d bounds, %d counts", ErrLengthMismatch, len(h.Bounds), len(h.Counts)))
		return e
	}
	bounds, counts := h.Bounds, h.Counts
	if !strictlyAscending(bounds) {
		var ok bool
		bounds, counts, ok = normalize(bounds, counts)
		if !ok {
			e.Warnings = append(e.Warnings, fmt.Errorf("%w: a bound is NaN", ErrUnsortedBounds))
			return e
		}
		e.Warnings = append(e.Warnings, fmt.Errorf("%w: sorted and summed equal bounds as PromQL does", ErrUnsortedBounds))
	}
	e.estimate(q, bounds, counts)
	return e
}

// estimate fills e for strictly ascending bounds.
func (e *Estimate) estimate(q float64, bounds, counts []float64) {
	n := len(bounds)
	if n == 0 || !math.IsInf(bounds[n-1], +1) {
		e.Warnings = append(e.Warnings, ErrNoInfBucket)
		return
	}
	// First pass: the repaired total and what the repair did.
	rep := Repair{MinBound: math.Inf(+1), MaxBound: math.Inf(-1)}
	prev := counts[0]
	hasNaN := math.IsNaN(prev)
	for i := 1; i < n; i++ {
		curr := counts[i]
		hasNaN = hasNaN || math.IsNaN(curr)
		switch {
		case curr == prev:
		case noise(prev, curr):
			rep.Precision = true
		case curr < prev:
			rep.Forced = true
			rep.MinBound = min(rep.MinBound, bounds[i])
			rep.MaxBound = max(rep.MaxBound, bounds[i])
			rep.MaxDrop = max(rep.MaxDrop, prev-curr)
		default:
			prev = curr
		}
	}
	if !rep.Forced {
		rep.MinBound, rep.MaxBound = 0, 0
	}
	e.Repair = rep
	total := prev // the repaired +Inf bucket
	e.Count = total
	if math.IsNaN(e.Q) || e.Q < 0 || e.Q > 1 {
		return
	}
	e.Stable = total >= MinCount(e.Q)
	if n < 2 || total == 0 {
		return
	}
	rank := e.Q * total
	var b int
	var below, at float64 // repaired counts at b-1 and b
	if !hasNaN {
		// The repaired counts are non-decreasing: the first bucket that
		// reaches the rank is what PromQL's binary search finds.
		b = n - 1
		prev, below = counts[0], 0
		for i := 0; i < n-1; i++ {
			curr := counts[i]
			if i > 0 && curr != prev && (curr < prev || noise(prev, curr)) {
				curr = prev
			}
			prev = curr
			if curr >= rank {
				b, at = i, curr
				break
			}
			below = curr
		}
	} else {
		// NaN counts break monotonicity: replay sort.Search exactly.
		lo, hi := 0, n-1
		for lo < hi {
			mid := int(uint(lo+hi) >> 1)
			if !(repairedAt(counts, mid) >= rank) {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		b = lo
		at = repairedAt(counts, b)
		if b > 0 {
			below = repairedAt(counts, b-1)
		}
	}
	switch {
	case b == n-1:
		e.Value, e.Lower, e.Upper = bounds[n-2], bounds[n-2], math.Inf(+1)
	case b == 0 && bounds[0] <= 0:
		e.Value, e.Lower, e.Upper = bounds[0], math.Inf(-1), bounds[0]
	default:
		start, end, count := 0.0, bounds[b], at
		if b > 0 {
			start = bounds[b-1]
			count -= below
			rank -= below
		}
		e.Value = start + (end-start)*(rank/count)
		e.Lower, e.Upper = start, end
	}
}

// repairedAt returns the count of bucket i after PromQL's monotonicity
// repair, replaying it from the first bucket.
func repairedAt(counts []float64, i int) float64 {
	prev := counts[0]
	for j := 1; j <= i; j++ {
		curr := counts[j]
		if curr == prev || noise(prev, curr) || curr < prev {
			continue
		}
		prev = curr
	}
	return prev
}

// noise reports almost.Equal(a, b, SmallDeltaTolerance), PromQL's test for
// a difference of float noise, skipping the call for counts that clearly
// differ (twice the tolerance, so rounding cannot change the answer).
func noise(a, b float64) bool {
	if a != 0 && b != 0 {
		s := math.Abs(a) + math.Abs(b)
		if s >= 0x1p-1022 && math.Abs(a-b) > 2*SmallDeltaTolerance*s {
			return false
		}
	}
	return almost.Equal(a, b, SmallDeltaTolerance)
}

func strictlyAscending(bounds []float64) bool {
	for i := 1; i < len(bounds); i++ {
		if !(bounds[i] > bounds[i-1]) {
			return false
		}
	}
	return len(bounds) == 0 || !math.IsNaN(bounds[0])
}

// normalize returns sorted copies of bounds and counts with the counts of
// equal bounds summed, as PromQL's BucketQuantile and BucketFraction do
// before anything else. ok is false when a bound is NaN.
func normalize(bounds, counts []float64) (nb, nc []float64, ok bool) {
	type bucket struct{ le, c float64 }
	bs := make([]bucket, len(bounds))
	for i := range bounds {
		if math.IsNaN(bounds[i]) {
			return nil, nil, false
		}
		bs[i] = bucket{bounds[i], counts[i]}
	}
	slices.SortStableFunc(bs, func(a, b bucket) int { return cmp.Compare(a.le, b.le) })
	for _, b := range bs {
		if k := len(nb); k > 0 && nb[k-1] == b.le {
			nc[k-1] += b.c
			continue
		}
		nb = append(nb, b.le)
		nc = append(nc, b.c)
	}
	return nb, nc, true
}

// String formats e like "p95 1.87 [1, 2.5] n=1234", marking an estimate in
// the +Inf bucket as "(>= bound)" and an unstable one with the count it
// would need.
func (e Estimate) String() string {
	var sb strings.Builder
	sb.WriteString(quantileName(e.Q))
	sb.WriteByte(' ')
	sb.WriteString(formatNum(e.Value))
	if !math.IsNaN(e.Lower) || !math.IsNaN(e.Upper) {
		fmt.Fprintf(&sb, " [%s, %s]", formatBound(e.Lower), formatBound(e.Upper))
	}
	fmt.Fprintf(&sb, " n=%s", formatNum(e.Count))
	if !e.Stable && !math.IsNaN(e.Value) && e.Q >= 0 && e.Q <= 1 {
		fmt.Fprintf(&sb, " unstable (need n>=%s)", formatNum(math.Ceil(MinCount(e.Q))))
	}
	if e.Repair.Forced {
		fmt.Fprintf(&sb, " repaired (counts went down by up to %s at le=%s..%s)",
			formatNum(e.Repair.MaxDrop), formatBound(e.Repair.MinBound), formatBound(e.Repair.MaxBound))
	}
	writeWarnings(&sb, e.Warnings)
	return sb.String()
}

// quantileName spells q as a percentile: p50, p95, p99.9, p0.
func quantileName(q float64) string { return "p" + percent(q, 6) }
