// Package outlier sets times apart from the bulk of the evidence's
// scrape times: the rule that package snapshot's time check applies to
// scrapes (snapshot.ErrTimeOutlier) and its TSDB reader to whole blocks
// and heads.
//
// A time is an outlier when it lies farther than a margin from the bulk
// of the times, the range from their 10th to their 90th percentile (by
// rank; a few stray times cannot move it); the margin is Spans times the
// bulk's width, and at least MinMargin. A one-hour capture thus tolerates
// six hours around it and drops a file named a day, a month or a year
// ahead; a week of dumps tolerates four weeks. Fewer than MinTimes times
// say nothing about a bulk.
package outlier

import (
	"fmt"
	"math"
	"time"
)

// The rule's constants (see the package doc).
const (
	Spans     = 4
	MinMargin = 6 * time.Hour
	MinTimes  = 3
)

// Bounds returns, for n times sorted ascending (at(i) the i-th), the bulk
// [lo, hi] and the range [low, high] outside which a time is an outlier.
// ok is false for fewer than MinTimes times, or times so near the ends of
// int64 that nothing sensible can be said.
func Bounds(n int, at func(int) int64) (lo, hi, low, high int64, ok bool) {
	if n < MinTimes {
		return 0, 0, 0, 0, false
	}
	lo = at(int(math.Ceil(0.1 * float64(n-1))))
	hi = at(int(math.Floor(0.9 * float64(n-1))))
	margin := max(Spans*(hi-lo), MinMargin.Milliseconds())
	if lo < math.MinInt64/2+margin || hi > math.MaxInt64/2-margin {
		return 0, 0, 0, 0, false
	}
	return lo, hi, lo - margin, hi + margin, true
}

// FormatSpan formats a distance in ms as the outlier problems give it: in
// days from two days on (or when negative), in hours from two hours on,
// else as a duration rounded to the second.
func FormatSpan(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case ms >= 2*24*3600*1000 || ms < 0:
		return fmt.Sprintf("%.0f days", float64(ms)/(24*3600*1000))
	case d >= 2*time.Hour:
		return fmt.Sprintf("%.0f hours", d.Hours())
	}
	return d.Round(time.Second).String()
}
