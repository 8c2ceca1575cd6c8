package histogram

import (
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/gonum/floats"
)

// Sub returns later - earlier, the observations made between two samples of
// the same cumulative histogram (a window's increase).
//
// If the total count or any bucket went down, the process restarted in
// between (a counter reset): Sub returns later unchanged, the best
// estimate of the increase since the restart, with an error wrapping
// ErrCounterReset that names the bucket; it never returns negative counts.
// Bounds must be the same numbers (SameLayout), else the error wraps
// ErrLayoutMismatch. The result shares Bounds with later. Sums are
// subtracted without checks, as observations may be negative.
func Sub(later, earlier Histogram) (Histogram, error) {
	if len(later.Counts) != len(later.Bounds) || len(earlier.Counts) != len(earlier.Bounds) {
		return Histogram{}, fmt.Errorf("%w: later has %d bounds and %d counts, earlier %d and %d",
			ErrLengthMismatch, len(later.Bounds), len(later.Counts), len(earlier.Bounds), len(earlier.Counts))
	}
	if !SameLayout(later.Bounds, earlier.Bounds) {
		return Histogram{}, fmt.Errorf("%w: %s", ErrLayoutMismatch, layoutDiff(earlier.Bounds, later.Bounds))
	}
	if later.Count < earlier.Count {
		return later, fmt.Errorf("%w: count went down from %g to %g", ErrCounterReset, earlier.Count, later.Count)
	}
	for i, c := range later.Counts {
		if c < earlier.Counts[i] {
			return later, fmt.Errorf("%w: bucket le=%s went down from %g to %g",
				ErrCounterReset, formatBound(later.Bounds[i]), earlier.Counts[i], c)
		}
	}
	out := Histogram{
		Bounds: later.Bounds,
		Counts: make([]float64, len(later.Counts)),
		Count:  later.Count - earlier.Count,
		Sum:    later.Sum - earlier.Sum,
	}
	floats.SubTo(out.Counts, later.Counts, earlier.Counts)
	return out, nil
}

// layoutDiff describes how two layouts differ.
func layoutDiff(a, b []float64) string {
	if len(a) != len(b) {
		return fmt.Sprintf("%d bounds vs %d bounds", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			return fmt.Sprintf("bucket %d is le=%s vs le=%s", i, formatBound(a[i]), formatBound(b[i]))
		}
	}
	return "same bounds"
}

// Merged is the sum of several histograms of the same quantity, such as
// one histogram per replica of a fleet.
type Merged struct {
	// Histogram is the exact sum over the bounds all inputs share.
	Histogram
	// Inputs is the number of histograms merged.
	Inputs int
	// Dropped lists, ascending, the finite bounds that some inputs have and
	// others lack: their buckets could not be summed exactly and were
	// left out. Nil when all inputs share one layout.
	Dropped []float64
}

// Merge adds histograms bucket by bucket, the only correct way to get a
// fleet quantile: merge first, then take the quantile (averaging per-replica
// quantiles is not a quantile of anything).
//
// Bounds compare as numbers, so le="1", "1.0" and "1e0" are one bucket. When
// all inputs share one layout the sum is exact on every bucket. When layouts
// differ (replicas on different versions), the result keeps only the bounds
// every input has, where the cumulative counts still add exactly, and lists
// the others in Dropped; with no common finite bound Merge fails with
// ErrNoCommonBounds. It never does what PromQL's sum by (le) does over mixed
// layouts: add up whatever le values exist, which makes the cumulative
// counts of the union non-monotonic and the quantile wrong.
//
// Every input must have strictly ascending bounds ending in +Inf (counts
// are not checked: a non-monotonic input is summed as it is, and Quantile
// repairs the sum). Count and Sum are summed; NaN (unknown) in any input
// makes them NaN.
func Merge(hs ...Histogram) (Merged, error) {
	if len(hs) == 0 {
		return Merged{}, fmt.Errorf("histogram: merge of no histograms")
	}
	for i, h := range hs {
		if len(h.Counts) != len(h.Bounds) {
			return Merged{}, fmt.Errorf("input %d: %w: %d bounds, %d counts", i, ErrLengthMismatch, len(h.Bounds), len(h.Counts))
		}
		if !strictlyAscending(h.Bounds) {
			return Merged{}, fmt.Errorf("input %d: %w", i, ErrUnsortedBounds)
		}
		if n := len(h.Bounds); n == 0 || !math.IsInf(h.Bounds[n-1], +1) {
			return Merged{}, fmt.Errorf("input %d: %w", i, ErrNoInfBucket)
		}
	}
	// Distinct layouts; most fleets have one or two.
	layouts := [][]float64{hs[0].Bounds}
	which := make([]int, len(hs))
	last := 0
	for i, h := range hs[1:] {
		if !SameLayout(h.Bounds, layouts[last]) {
			last = -1
			for j, l := range layouts {
				if SameLayout(h.Bounds, l) {
					last = j
					break
				}
			}
			if last < 0 {
				layouts = append(layouts, h.Bounds)
				last = len(layouts) - 1
			}
		}
		which[i+1] = last
	}

	m := Merged{Inputs: len(hs)}
	common := layouts[0]
	for _, l := range layouts[1:] {
		common = intersect(common, l)
	}
	if len(common) < 2 {
		return Merged{}, fmt.Errorf("%w: %d inputs in %d layouts (%s)", ErrNoCommonBounds, len(hs), len(layouts), describeLayouts(layouts))
	}
	if len(layouts) > 1 {
		for _, l := range layouts {
			for _, b := range l {
				if !containsSorted(common, b) && !containsSorted(m.Dropped, b) {
					m.Dropped = insertSorted(m.Dropped, b)
				}
			}
		}
	}
	m.Bounds = cloneFloats(common)
	m.Counts = make([]float64, len(common))
	// index[l][k] is the position of common[k] in layout l.
	index := make([][]int, len(layouts))
	for j, l := range layouts {
		idx := make([]int, len(common))
		p := 0
		for k, b := range common {
			for l[p] != b {
				p++
			}
			idx[k] = p
		}
		index[j] = idx
	}
	for i, h := range hs {
		m.Count += h.Count
		m.Sum += h.Sum
		if len(layouts) == 1 {
			floats.Add(m.Counts, h.Counts)
			continue
		}
		for k, p := range index[which[i]] {
			m.Counts[k] += h.Counts[p]
		}
	}
	return m, nil
}

// intersect returns the bounds in both ascending slices.
func intersect(a, b []float64) []float64 {
	var out []float64
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			out = append(out, a[i])
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return out
}

func containsSorted(s []float64, v float64) bool {
	for _, x := range s {
		if x == v {
			return true
		}
		if x > v {
			return false
		}
	}
	return false
}

func insertSorted(s []float64, v float64) []float64 {
	i := 0
	for i < len(s) && s[i] < v {
		i++
	}
	s = append(s, 0)
	copy(s[i+1:], s[i:])
	s[i] = v
	return s
}

func describeLayouts(layouts [][]float64) string {
	parts := make([]string, len(layouts))
	for i, l := range layouts {
		parts[i] = formatBounds(l)
	}
	return strings.Join(parts, " vs ")
}

func formatBounds(bs []float64) string {
	parts := make([]string, len(bs))
	for i, b := range bs {
		parts[i] = formatBound(b)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// String formats m like its Histogram, prefixed with the number of inputs
// and followed by the dropped bounds, if any.
func (m Merged) String() string {
	s := fmt.Sprintf("merged %d: %s", m.Inputs, m.Histogram.String())
	if len(m.Dropped) > 0 {
		s += fmt.Sprintf(" dropped le=%s (not shared by all inputs)", formatBounds(m.Dropped))
	}
	return s
}
