package snapshot

import "github.com/whyslow/whyslow/histogram"

// An Engine computes histogram increases where the evidence is kept (a
// Prometheus-compatible server), so that a survey of a long history
// (diagnose.Surveyor.PushDown) reads sums instead of every replica's
// buckets. Its answers must be those of the samples: the increase of a
// series over a window is its value at the window's end minus its value
// at the start, each the last sample at or before the edge within
// Lookback (what "x - x offset d" gives); a series without both edges is
// left out. Over a window in which a counter was reset, the answer is
// unspecified (the raw difference, or the increase counting the reset):
// callers learn of resets from Resets and do not use it there. An Engine
// must be safe for concurrent use.
type Engine interface {
	// HistogramIncreases returns, per window of q.Grid, the increase of
	// the histogram family q.Metric over the series of q.Targets that
	// carry q.Match's labels: summed over the targets (one row), or per
	// target in q.Targets' order when q.Each is set. An entry is nil
	// where no series has both edges. Bounds are the series' le values,
	// unscaled; Count and Sum are NaN where _count or _sum is missing,
	// and Sum may be NaN everywhere when q.SkipSum is set.
	HistogramIncreases(q HistogramQuery) ([][]*histogram.Histogram, error)
	// Resets returns the names of the targets of q.Targets on which a
	// series of q.Metric's _count matching q.Match went down (a counter
	// reset) between the start of q.Grid's first window, less
	// Lookback, and the end of its last.
	Resets(q HistogramQuery) ([]string, error)
	// Presence returns, per target of q.Targets and edge of q.Grid (the
	// windows' starts, then the last end), how many series of q.Metric's
	// _count matching q.Match have a sample standing for the edge, as the
	// engine sees it: within its lookback, and not after a staleness
	// marker.
	Presence(q HistogramQuery) ([][]int, error)
}

// HistogramQuery is one question to an Engine.
type HistogramQuery struct {
	// Metric is the histogram's family name (without _bucket).
	Metric string
	// Match are labels every series must carry (the scope's model).
	Match map[string]string
	// Targets are the targets whose series are read (labels only is
	// enough: the engine uses Name and NameFrom).
	Targets []*Target
	// Each asks for one row per target instead of their sum.
	Each bool
	// Grid are adjacent windows of one length.
	Grid []Window
	// SkipSum says the asker uses the buckets and counts only (a
	// quantile): the engine may spare the question of _sum and leave
	// Sum NaN.
	SkipSum bool
}
