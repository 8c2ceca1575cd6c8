package rules

import "math"

// RelChange returns to/from - 1, the relative change the decision map and
// the experiment judge read, and that reports print: 0 for 0 -> 0 (and for
// any from == to), ±Inf from 0, NaN when either value is NaN. Reports call
// it rather than keeping their own, so a table never disagrees with a
// finding about whether something changed.
func RelChange(from, to float64) float64 {
	switch {
	case math.IsNaN(from) || math.IsNaN(to):
		return math.NaN()
	case from == to:
		return 0
	case from == 0:
		return math.Copysign(math.Inf(1), to)
	}
	return to/from - 1
}

// OutsideSteady reports whether a relative change (RelChange) leaves the
// steady band [1/steady, steady] x baseline of Thresholds.Steady, the band
// within which the decision map's steady condition counts a fact as
// unchanged. An unknown (NaN) change is not outside.
func OutsideSteady(change, steady float64) bool {
	if math.IsNaN(change) {
		return false
	}
	ratio := 1 + change
	return ratio > steady || ratio < 1/steady
}
