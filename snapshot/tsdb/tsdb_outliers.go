package tsdb

import (
	"fmt"
	"math"
	"path/filepath"
	"time"

	"github.com/whyslow/whyslow/snapshot"
	"github.com/whyslow/whyslow/snapshot/internal/outlier"
)

// Time outliers among the sources of a TSDB: a block (or the head) whose
// samples lie far from the rest, like a dump named a year ahead, is set
// apart whole, with a warning naming it and its time range
// (snapshot.ErrTimeOutlier), unless Options.KeepTimeOutliers. Left in, a
// block dated 2099 beside a day of 2026 stretches the evidence over 73
// years of nothing: the end of the blocks (where the head is read from)
// moves to 2099, and a diagnosis looks for its windows in between.

// writtenMargin is how far after the time of its ULID (when the block was
// written) a block's samples may begin: by Prometheus's own clock they
// never do; a day leaves room for a block written by a tool on another
// machine.
const writtenMargin = 24 * time.Hour

// timeSource is a block or the head as the time check sees it: its
// samples' range [minT, maxT) and how many they are, taken as spread
// evenly over the range.
type timeSource struct {
	minT, maxT int64 // maxT exclusive
	samples    float64
}

// clip restricts s to [mint, maxt] (both included), with its samples in
// proportion; false when nothing of s is left.
func (s timeSource) clip(mint, maxt int64) (timeSource, bool) {
	from, to := max(s.minT, mint), min(s.maxT-1, maxt)
	if from > to || s.maxT <= s.minT {
		return timeSource{}, false
	}
	frac := (float64(to) - float64(from) + 1) / (float64(s.maxT) - float64(s.minT))
	return timeSource{minT: from, maxT: to + 1, samples: s.samples * min(frac, 1)}, true
}

// outside reports how far s lies outside [low, high], and on which side;
// 0 when it meets it. lo and hi are the bulk, from which the distance is
// measured.
func (s timeSource) outside(lo, hi, low, high int64) (dist int64, side string) {
	switch {
	case s.minT > high:
		return s.minT - hi, "after"
	case s.maxT-1 < low:
		return lo - (s.maxT - 1), "before"
	}
	return 0, ""
}

// timeBulk returns the bulk of the samples of srcs and the range outside
// which a source is an outlier, by outlier.Bounds over the
// samples (each source's spread evenly over its range); false when
// nothing can be said (fewer than 3 samples).
func timeBulk(srcs []timeSource) (lo, hi, low, high int64, ok bool) {
	var total float64
	first, last := int64(math.MaxInt64), int64(math.MinInt64)
	for _, s := range srcs {
		total += s.samples
		first, last = min(first, s.minT), max(last, s.maxT-1)
	}
	if total < 3 || first > last {
		return 0, 0, 0, 0, false
	}
	// below is how many samples lie at or before t.
	below := func(t int64) float64 {
		var n float64
		for _, s := range srcs {
			n += s.samples * min(max((float64(t)-float64(s.minT)+1)/(float64(s.maxT)-float64(s.minT)), 0), 1)
		}
		return n
	}
	// The time of the (i+1)-th sample: the first at which below reaches it.
	at := func(i int) int64 {
		want := float64(i+1) - 1e-9*total
		l, h := first, last
		for l < h {
			mid := l + int64((uint64(h)-uint64(l))/2)
			if below(mid) >= want {
				h = mid
			} else {
				l = mid + 1
			}
		}
		return l
	}
	return outlier.Bounds(int(min(total, 1<<50)), at)
}

// blockCand is a block directory whose meta.json was read.
type blockCand struct {
	dir  string
	meta blockMeta
}

func (c blockCand) source() timeSource {
	return timeSource{minT: c.meta.MinTime, maxT: c.meta.MaxTime, samples: float64(max(c.meta.Stats.NumSamples, 1))}
}

// blockOutliers judges the blocks cands that overlap [mint, maxt], each
// by what it holds in that range, and returns the problems of the time
// outliers among them, by index in cands. A block is one when
//
//   - its samples begin more than writtenMargin after the time of its
//     ULID, when it was written, while another block's do not: its times
//     are not those of the clock that wrote it (a copy re-dated, a
//     target's clock years ahead); or
//   - its samples lie wholly outside the bulk of the other blocks'
//     (timeBulk: the rule that sets scrapes apart).
//
// keep says whether outliers are kept (Options.KeepTimeOutliers), for
// the problem's words.
func blockOutliers(cands []blockCand, mint, maxt int64, keep bool) map[int]snapshot.Problem {
	type inRange struct {
		i   int
		src timeSource
	}
	var in, rest []inRange
	future := map[int]bool{}
	for i, c := range cands {
		s, ok := c.source().clip(mint, maxt)
		if !ok {
			continue
		}
		in = append(in, inRange{i, s})
		if w := int64(c.meta.ULID.Time()); w > 0 && w <= math.MaxInt64-writtenMargin.Milliseconds() &&
			c.meta.MinTime > w+writtenMargin.Milliseconds() {
			future[i] = true
		}
	}
	out := map[int]snapshot.Problem{}
	if len(future) < len(in) {
		for _, b := range in {
			if !future[b.i] {
				rest = append(rest, b)
				continue
			}
			c := cands[b.i]
			w := int64(c.meta.ULID.Time())
			out[b.i] = outlierProblem(c.dir, fmt.Sprintf("block %s holds samples from %s to %s, %s after it was written (%s, the time of its ULID %s)",
				filepath.Base(c.dir), fmtMS(b.src.minT), fmtMS(b.src.maxT-1), outlier.FormatSpan(c.meta.MinTime-w), fmtMS(w), c.meta.ULID), keep)
		}
	} else {
		rest = in
	}
	srcs := make([]timeSource, len(rest))
	for k, b := range rest {
		srcs[k] = b.src
	}
	lo, hi, low, high, ok := timeBulk(srcs)
	if !ok {
		return out
	}
	for _, b := range rest {
		if dist, side := b.src.outside(lo, hi, low, high); side != "" {
			out[b.i] = outlierProblem(cands[b.i].dir, fmt.Sprintf("block %s (%s to %s) lies %s %s the rest of the evidence (%s to %s)",
				filepath.Base(cands[b.i].dir), fmtMS(b.src.minT), fmtMS(b.src.maxT-1), outlier.FormatSpan(dist), side, fmtMS(lo), fmtMS(hi)), keep)
		}
	}
	return out
}

// headOutlier judges the head h, read over [mint, maxt], against the
// blocks read (those kept): the head is a time outlier when its samples
// lie wholly outside the bulk of the blocks' and its own (timeBulk), its
// samples estimated from its series by the blocks' samples per series
// and ms. walDir names it in the problem; false when it is no outlier,
// or when nothing can be said (no block read, an empty head).
func headOutlier(h *memHead, blocks []tsdbBlock, mint, maxt int64, walDir string, keep bool) (snapshot.Problem, bool) {
	var srcs []timeSource
	var samples, seriesMS float64
	for _, b := range blocks {
		if !b.inRange {
			continue
		}
		if s, ok := (timeSource{minT: b.minT, maxT: b.maxT, samples: float64(max(b.samples, 1))}).clip(mint, maxt); ok {
			srcs = append(srcs, s)
			samples += float64(b.samples)
			seriesMS += float64(b.series) * (float64(b.maxT) - float64(b.minT))
		}
	}
	hmin, hmax := h.minT, h.maxT
	if len(srcs) == 0 || seriesMS == 0 || h.numSeries == 0 || hmin > hmax || hmax == math.MaxInt64 {
		return snapshot.Problem{}, false
	}
	head, ok := (timeSource{minT: hmin, maxT: hmax + 1}).clip(mint, maxt)
	if !ok {
		return snapshot.Problem{}, false
	}
	head.samples = max(samples/seriesMS*float64(h.numSeries)*(float64(head.maxT)-float64(head.minT)), 1)
	lo, hi, low, high, ok := timeBulk(append(srcs, head))
	if !ok {
		return snapshot.Problem{}, false
	}
	dist, side := head.outside(lo, hi, low, high)
	if side == "" {
		return snapshot.Problem{}, false
	}
	return outlierProblem(walDir, fmt.Sprintf("the head (wal/, %s to %s) lies %s %s the rest of the evidence (%s to %s)",
		fmtMS(head.minT), fmtMS(head.maxT-1), outlier.FormatSpan(dist), side, fmtMS(lo), fmtMS(hi)), keep), true
}

// outlierProblem is the warning of a source at file set apart as a time
// outlier (kept when keep), what it is and where.
func outlierProblem(file, what string, keep bool) snapshot.Problem {
	if keep {
		what += "; kept (Options.KeepTimeOutliers)"
	} else {
		what += "; left out (Options.KeepTimeOutliers keeps it)"
	}
	return snapshot.Problem{Severity: snapshot.SeverityWarning, File: file, Offset: -1, Err: fmt.Errorf("%w: %s", snapshot.ErrTimeOutlier, what)}
}

// fmtMS formats a time in ms since the epoch as RFC 3339.
func fmtMS(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339) }
