package diagnose

import (
	"time"

	"github.com/whyslow/whyslow/snapshot"
)

// MaxIntervals caps the intervals of the timelines and the change-point
// search (see timelineGrid), so that memory and time grow with replicas x
// MaxIntervals, not with the span: two years of evidence cost what 12
// hours do. Reports show the step of each timeline.
const MaxIntervals = 720

// niceSteps are the steps a timeline grid takes when the scrape interval
// or the span sets it: whole minutes and hours that a reader takes in at
// a glance, and that do not move when one replica's first scrape is a
// few seconds earlier than another's (see timelineGrid).
var niceSteps = []time.Duration{
	time.Minute, 2 * time.Minute, 3 * time.Minute, 5 * time.Minute, 10 * time.Minute,
	15 * time.Minute, 20 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour,
}

// niceStep returns the smallest nice step at least d (whole days past
// one day).
func niceStep(d time.Duration) time.Duration {
	for _, s := range niceSteps {
		if s >= d {
			return s
		}
	}
	day := 24 * time.Hour
	return (d + day - 1) / day * day
}

// timelineGrid returns the grid of the timelines and the change-point
// search over scrapes from first to last, and its step.
//
// The step is Options.TimelineStep when given, else the scrape interval
// or one minute, whichever is longer, rounded up to a nice step
// (niceSteps); when that would make more than MaxIntervals intervals, it
// is the nice step that makes at most MaxIntervals. The grid starts at
// first truncated to the step and ends at last rounded up to it, so that
// its instants are whole minutes (or hours) and the grid is the same for
// every replica scraped in the same minutes: the survey of a TSDB, which
// reads one replica at a time, can fix it from the first replica read
// and check it at the end (see Surveyor).
func timelineGrid(first, last time.Time, interval, given time.Duration) (grid []snapshot.Window, step time.Duration) {
	if first.IsZero() || !last.After(first) {
		return nil, 0
	}
	if given > 0 {
		step = given
	} else {
		step = niceStep(max(time.Minute, interval))
	}
	for {
		start := first.Truncate(step)
		end := last.Truncate(step)
		if end.Before(last) {
			end = end.Add(step)
		}
		if n := end.Sub(start) / step; n <= MaxIntervals {
			return snapshot.Grid(snapshot.Window{Start: start, End: end}, step), step
		}
		step = niceStep(max(step+1, (last.Sub(first)+MaxIntervals-1)/MaxIntervals))
	}
}
