package diagnose

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"gonum.org/v1/gonum/stat"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/internal/textfmt"
	"github.com/whyslow/whyslow/report"
	"github.com/whyslow/whyslow/rules"
	"github.com/whyslow/whyslow/snapshot"
)

// Change-point search.
//
// The search proposes when the incident started, from per-interval fleet
// series on the timeline grid: every symptom signal the evidence has —
// the TTFT, TPOT, ITL and E2E p95 of each interval (the observations made
// in it, buckets merged across replicas), the exact TTFT and ITL means of
// the same merged increases (_sum/_count: a p95 inside one wide bucket
// moves less than the latencies did) — and the mean number of waiting
// requests (fleet sum). A step in any one of them is enough (a fleet
// whose TPOT alone stepped up is found), and the report says which
// series moved (report.ChangePoint.Signals). For every split of the grid that
// leaves at least MinWindow on each side it computes, per series, the
// standardised shift
//
//	d = |mean(after) - mean(before)| / pooled standard deviation
//
// (Cohen's d; the pooled deviation is that of the two sides around their
// own means, so a step is not diluted by its own size), and sums d over the
// series. A series counts only when its shift is material: the higher
// side's mean at least Thresholds.Rise times the lower side's for an exact
// mean, the line the symptoms are judged with, and cpQuantileRatio for a
// quantile (noise around a flat level, however small its deviation,
// proposes nothing), and at least the series' absolute
// floor (cpMinShiftTTFT, ...) unless its own d reaches
// ChangePointThreshold: a small shift adds nothing to the noise of the
// other series, but a fast model's TTFT that steps by 1.25x and stands
// out from its own noise is found. The waiting series' floor,
// cpMinShiftWaiting, is physical and never waived: a queue under one
// request is none. Each d is capped at
// cpMaxD, which a noiseless step would otherwise make infinite. The split
// with the largest sum is proposed when the sum reaches
// ChangePointThreshold; among splits whose sums tie (near a large step,
// where several are capped), the one whose shifts are largest before the
// cap, then the earliest. Because the largest
// shift of a ramp (a queue that accumulates) lies in its middle, the
// proposed split is then moved back to the onset of the change (see
// onset): the earliest split after which a shifting series leaves its own
// past by more than three standard deviations; the score is that of the
// split finally proposed. Intervals where a
// series is unknown (no request finished) are left out of that series.
const (
	// ChangePointThreshold is the least score (sum of standardised shifts)
	// at which the search proposes a change point.
	ChangePointThreshold = 2.0

	cpMaxD = 10
	// cpQuantileRatio is the material line of a quantile series: the
	// higher side's mean a quarter above the lower's (a fifth of the
	// higher), beyond the rise line, because interpolation inside a
	// coarse bucket moves a quantile by itself. An exact mean's line is
	// the rise line.
	cpQuantileRatio   = 1.25
	cpMinShiftTTFT    = 0.05  // seconds
	cpMinShiftWaiting = 1     // requests
	cpMinShiftTPOT    = 0.005 // seconds per token (TPOT, ITL)
	cpMinShiftE2E     = 0.5   // seconds
)

// movedSeries returns the series that shift materially at split k, with
// their means on each side, largest shift first.
func movedSeries(series []cpSeries, k, minEach int) []report.ChangeSignal {
	var out []report.ChangeSignal
	for _, s := range series {
		d := shiftScore(s, k, minEach)
		if d == 0 {
			continue
		}
		before, after := finiteValues(s.values[:k]), finiteValues(s.values[k:])
		out = append(out, report.ChangeSignal{Series: s.name, Unit: s.unit,
			Before: rules.Number(stat.Mean(before, nil)), After: rules.Number(stat.Mean(after, nil)), Score: d})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Score > out[j].Score })
	return out
}

// cpSpec is how the search treats one fleet series: its name in
// reports, the signal, the unit, the floor of a material shift, and
// whether it is the exact mean of the signal's observations (else its
// p95, or the mean number of waiting requests).
type cpSpec struct {
	name     string
	id       catalog.SignalID
	unit     string
	minShift float64
	mean     bool
}

// cpSpecs are the fleet series the search reads, in the order it reads
// them.
var cpSpecs = []cpSpec{
	{"ttft_p95", catalog.SignalTTFT, "s", cpMinShiftTTFT, false},
	{"tpot_p95", catalog.SignalTPOT, "s", cpMinShiftTPOT, false},
	{"itl_p95", catalog.SignalITL, "s", cpMinShiftTPOT, false},
	{"e2e_p95", catalog.SignalE2E, "s", cpMinShiftE2E, false},
	{"waiting", catalog.SignalWaiting, "requests", cpMinShiftWaiting, false},
	{"ttft_mean", catalog.SignalTTFT, "s", cpMinShiftTTFT, true},
	{"itl_mean", catalog.SignalITL, "s", cpMinShiftTPOT, true},
}

// series is the search's input series of values; counted says that the
// observations behind them count, and counts holds them (nil: none
// known, so that a side never holds enough).
func (c cpSpec) series(values []float64, counted bool, counts []float64, th rules.Thresholds) cpSeries {
	s := cpSeries{name: c.name, unit: c.unit, values: values, minShift: c.minShift, minRatio: cpQuantileRatio,
		hardFloor: c.id == catalog.SignalWaiting}
	if c.mean {
		s.minRatio, s.exact = th.Rise, true
	}
	if counted {
		s.counts, s.minCount = counts, th.MinSamplesTail
	}
	return s
}

// A FleetSeries is a fleet symptom series read from elsewhere than the
// evidence (a server's recording rules), for LocateChange. Name is one of
// the change-point search's series (ttft_p95, tpot_p95, itl_p95,
// e2e_p95, waiting, ttft_mean, itl_mean), optionally followed by labels
// in braces (ttft_p95{model_name="m"}); Values holds one value per
// interval of the grid, NaN where unknown.
type FleetSeries struct {
	Name   string
	Values []float64
}

// LocateChange searches fleet series on grid (intervals of one step, in
// order) for the onset of an incident, as Diagnose searches its own
// timelines, with the Thresholds and MinWindow of opts; no requests are
// counted. It returns the best single split when a series rose there,
// else the onset of the segment that differs most from the intervals
// outside it (an incident that ended) where a series rose at its start,
// each with Used set; nil otherwise, and when neither reaches
// ChangePointThreshold. An unknown series name, or a
// series whose length is not the grid's, is an error.
func LocateChange(grid []snapshot.Window, series []FleetSeries, opts Options) (*report.ChangePoint, error) {
	set, err := opts.settings()
	if err != nil {
		return nil, err
	}
	var cps []cpSeries
	for _, fs := range series {
		base, _, _ := strings.Cut(fs.Name, "{")
		i := slices.IndexFunc(cpSpecs, func(c cpSpec) bool { return c.name == base })
		if i < 0 {
			return nil, fmt.Errorf("diagnose: LocateChange: series %q is none of the change-point search's", fs.Name)
		}
		if len(fs.Values) != len(grid) {
			return nil, fmt.Errorf("diagnose: LocateChange: series %q has %d values for %d intervals", fs.Name, len(fs.Values), len(grid))
		}
		s := cpSpecs[i].series(fs.Values, false, nil, set.Thresholds)
		s.name = fs.Name
		cps = append(cps, s)
	}
	if len(grid) < 3 || len(cps) == 0 {
		return nil, nil
	}
	step := grid[0].Duration()
	minEach := int((set.MinWindow + step - 1) / step)
	method := changePointMethod(step, set.MinWindow, cps, set.Thresholds.Rise, set.Thresholds.MinSamplesTail) + "; requests not counted"
	if k, score, ok := findChangePoint(cps, minEach); ok && k > 0 && k < len(grid) {
		moved := movedSeries(cps, k, minEach)
		if slices.ContainsFunc(moved, func(s report.ChangeSignal) bool { return s.After > s.Before }) {
			return &report.ChangePoint{Time: grid[k-1].End, Score: score, Method: method, Signals: moved, Used: true}, nil
		}
	}
	a, _, score, moved, ok := segmentChange(cps, minEach)
	if !ok {
		return nil, nil
	}
	return &report.ChangePoint{Time: grid[a-1].End, Score: score, Method: method + segmentMethod, Signals: moved, Used: true}, nil
}

// segmentMethod ends the method of a change point that starts a segment.
const segmentMethod = "; the segment that differs most from the intervals outside it"

// segmentChange is the segment [a, b) of findSegment with the series that
// moved at its start (movedSeries over the values up to b). ok is false
// when there is no segment, or when none of them rose at a: the segment
// began before the intervals did, and its start is no onset.
func segmentChange(series []cpSeries, minEach int) (a, b int, score float64, moved []report.ChangeSignal, ok bool) {
	a, b, score, ok = findSegment(series, minEach)
	if !ok {
		return 0, 0, 0, nil, false
	}
	inside := make([]cpSeries, len(series))
	for i, s := range series {
		inside[i] = s
		inside[i].values = s.values[:min(b, len(s.values))]
	}
	moved = movedSeries(inside, a, minEach)
	if !slices.ContainsFunc(moved, func(s report.ChangeSignal) bool { return s.After > s.Before }) {
		return 0, 0, 0, nil, false
	}
	return a, b, score, moved, true
}

// cpSeries is one input series of the change-point search.
type cpSeries struct {
	name     string
	unit     string    // "s" or "requests"
	values   []float64 // per interval; NaN = unknown
	minShift float64   // absolute floor of a material shift
	// hardFloor marks a floor that is physical (a queue under one
	// request is none), never waived for a shift that stands out.
	hardFloor bool
	// counts are the observations behind each value (nil: not counted),
	// and minCount the fewest a side of a shift under the floor must
	// hold (Thresholds.MinSamplesTail: a window the tail can be judged
	// in).
	counts   []float64
	minCount float64
	// exact marks an exact mean, searched for its precision: it counts
	// only where each side holds minCount observations, whatever its
	// shift (the mean of a few requests is one slow request's).
	exact bool
	// minRatio is the least ratio of the higher side's mean to the
	// lower's that is material (Thresholds.Rise).
	minRatio float64
}

// score is the standardised shift d between side means a and b of s
// (pooled: the pooled standard deviation; fewest: the observations of
// the side that holds fewer), capped at cpMaxD, or 0 when the shift is
// not material: zero, the higher mean under s.minRatio times the lower,
// or under the floor s.minShift unless d alone reaches
// ChangePointThreshold and each side holds s.minCount observations (a
// small shift adds nothing to other series' noise, but one that stands
// out from its own noise, measured on enough requests, is found); never
// under a hard floor, and never for an exact mean with fewer than
// s.minCount observations on a side.
func (s cpSeries) score(a, b, pooled, fewest float64) float64 {
	shift := math.Abs(a - b)
	hi, lo := math.Max(math.Abs(a), math.Abs(b)), math.Min(math.Abs(a), math.Abs(b))
	if shift == 0 || hi < s.minRatio*lo {
		return 0
	}
	d := float64(cpMaxD)
	if pooled > 0 {
		d = math.Min(shift/pooled, cpMaxD)
	}
	few := s.minCount > 0 && !(fewest >= s.minCount)
	if s.exact && few || shift < s.minShift && (s.hardFloor || d < ChangePointThreshold || few) {
		return 0
	}
	return d
}

// findChangePoint returns the proposed split: the index k of the first
// interval after the change (times[k-1] is the last interval end before
// it, and the change point time), its score, and whether the score
// reaches ChangePointThreshold. minEach is the least number of intervals
// on each side. It returns ok false when no split is possible.
func findChangePoint(series []cpSeries, minEach int) (k int, score float64, ok bool) {
	n := 0
	for _, s := range series {
		n = max(n, len(s.values))
	}
	if minEach < 1 {
		minEach = 1
	}
	best, bestRaw, bestK := 0.0, 0.0, -1
	for split := minEach; split <= n-minEach; split++ {
		sum, raw := 0.0, 0.0
		for _, s := range series {
			d := shiftScore(s, split, minEach)
			sum += d
			if d == cpMaxD {
				// Capped: the shift itself tells the splits near a
				// large step apart (+Inf for a noiseless one).
				a, b, pooled, _ := sideMeans(s, split, minEach)
				d = math.Abs(a-b) / pooled
			}
			raw += d
		}
		if bestK < 0 || sum > best || sum == best && raw > bestRaw {
			best, bestRaw, bestK = sum, raw, split
		}
	}
	if bestK < 0 {
		return 0, 0, false
	}
	if best < ChangePointThreshold {
		return bestK, best, false
	}
	if t := onset(series, bestK, minEach); t < bestK {
		sum := 0.0
		for _, s := range series {
			sum += shiftScore(s, t, minEach)
		}
		return t, sum, true
	}
	return bestK, best, true
}

// onset moves a split found by the largest shift back to where the change
// began. The largest shift of a ramp (a queue that accumulates) lies in
// its middle, which would put the first half of the incident into the
// baseline; onset returns the earliest split t <= k at which some series
// that shifts materially at k leaves its own past: the median of the
// minEach values from t on, and the value at t itself, lie beyond the
// mean of the values before t by more than the larger of 3 standard
// deviations, the series' floor and 1 - 1/minRatio of that mean (a
// fifth for a quantile), in the direction of the shift at k. It
// returns k when no earlier split qualifies.
func onset(series []cpSeries, k, minEach int) int {
	for t := minEach; t < k; t++ {
		for _, s := range series {
			if t+minEach > len(s.values) || shiftScore(s, k, minEach) == 0 {
				continue
			}
			past := finiteValues(s.values[:t])
			next := finiteValues(s.values[t : t+minEach])
			all := finiteValues(s.values[:k])
			after := finiteValues(s.values[k:])
			if len(past) < minEach || len(next) == 0 || len(all) == 0 || len(after) == 0 {
				continue
			}
			up := stat.Mean(after, nil) > stat.Mean(all, nil)
			mu, sd := stat.MeanStdDev(past, nil)
			if len(past) < 2 {
				sd = 0
			}
			margin := math.Max(3*sd, math.Max(s.minShift, (1-1/s.minRatio)*math.Abs(mu)))
			sorted := append([]float64(nil), next...)
			sort.Float64s(sorted)
			med := stat.Quantile(0.5, stat.Empirical, sorted, nil)
			first := s.values[t]
			if (up && med > mu+margin && first > mu+margin) || (!up && med < mu-margin && first < mu-margin) {
				return t
			}
		}
	}
	return k
}

// shiftScore is the capped standardised shift of s at split, or 0 when the
// shift is not material or a side has fewer than minEach known values.
func shiftScore(s cpSeries, split, minEach int) float64 {
	after, before, pooled, ok := sideMeans(s, split, minEach)
	if !ok {
		return 0
	}
	return s.score(after, before, pooled, s.fewest(split))
}

// sideMeans returns the means of s's known values after and before split
// and their pooled standard deviation; ok is false when a side has fewer
// than minEach known values, or both fewer than 3.
func sideMeans(s cpSeries, split, minEach int) (after, before, pooled float64, ok bool) {
	bv := finiteValues(s.values[:min(split, len(s.values))])
	var av []float64
	if split < len(s.values) {
		av = finiteValues(s.values[split:])
	}
	if len(bv) < minEach || len(av) < minEach || len(bv)+len(av) < 3 {
		return 0, 0, 0, false
	}
	mb, vb := stat.MeanVariance(bv, nil)
	ma, va := stat.MeanVariance(av, nil)
	if len(bv) < 2 {
		vb = 0
	}
	if len(av) < 2 {
		va = 0
	}
	nb, na := float64(len(bv)), float64(len(av))
	return ma, mb, math.Sqrt(((nb-1)*vb + (na-1)*va) / (nb + na - 2)), true
}

func finiteValues(xs []float64) []float64 {
	out := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			out = append(out, x)
		}
	}
	return out
}

// changePointMethod describes the search for a report, naming the
// series searched.
func changePointMethod(step, minWindow time.Duration, series []cpSeries, rise, minCount float64) string {
	names := make([]string, len(series))
	for i, s := range series {
		names[i] = s.name
	}
	return fmt.Sprintf("split maximising the sum of standardised shifts |mean after - mean before| / pooled sd "+
		"of the fleet series %s per %v interval, at least %v each side "+
		"(a series counts when one side's mean is >= %sx the other's for a quantile or waiting, >= %sx for a mean, "+
		"and it moves by >= %g waiting, or by >= %gs TTFT, %gs TPOT/ITL or %gs E2E unless its own shift scores >= %g on sides of >= %g requests, "+
		"on which alone a mean counts; each term capped at %d); "+
		"proposed when the score is >= %g",
		strings.Join(names, ", "), textfmt.Duration(step), textfmt.Duration(minWindow), textfmt.Number(cpQuantileRatio), textfmt.Number(rise),
		float64(cpMinShiftWaiting), cpMinShiftTTFT, cpMinShiftTPOT, cpMinShiftE2E, ChangePointThreshold, minCount, cpMaxD, ChangePointThreshold)
}

// findSegment returns the intervals [a, b) of an incident that ended
// before the evidence did: of the ranges at least minEach long with at
// least minEach intervals before and after them, the one whose intervals
// differ most from those outside it (shiftScore of inside against
// outside, summed over the series), every material shift upward (the
// symptoms worse inside), ties broken as findChangePoint breaks them.
// ok is false when no range reaches ChangePointThreshold. A single split (findChangePoint) cannot see such
// an incident: either side of it holds part of the incident and part of
// the healthy time.
func findSegment(series []cpSeries, minEach int) (a, b int, score float64, ok bool) {
	n := 0
	for _, s := range series {
		n = max(n, len(s.values))
	}
	minEach = max(minEach, 1)
	sums := make([]prefixSums, len(series))
	for i, s := range series {
		sums[i] = newPrefixSums(s.values, s.counts)
	}
	a, b = -1, -1
	bestRaw := 0.0
	for lo := minEach; lo+minEach <= n-minEach; lo++ {
		for hi := lo + minEach; hi <= n-minEach; hi++ {
			sum, raw := 0.0, 0.0
			for i, s := range series {
				d, r, up := sums[i].segmentShift(s, lo, hi, minEach)
				if d > 0 && !up {
					sum = math.Inf(-1)
					break
				}
				sum, raw = sum+d, raw+r
			}
			if sum > score || sum == score && a >= 0 && raw > bestRaw {
				a, b, score, bestRaw = lo, hi, sum, raw
			}
		}
	}
	return a, b, score, a >= 0 && score >= ChangePointThreshold
}

// prefixSums holds the running count, sum and sum of squares of a
// series' finite values, and the running sum of their observations
// (obs): index i covers values[:i].
type prefixSums struct{ n, s, s2, obs []float64 }

func newPrefixSums(v, counts []float64) prefixSums {
	p := prefixSums{make([]float64, len(v)+1), make([]float64, len(v)+1), make([]float64, len(v)+1), make([]float64, len(v)+1)}
	for i, x := range v {
		p.n[i+1], p.s[i+1], p.s2[i+1], p.obs[i+1] = p.n[i], p.s[i], p.s2[i], p.obs[i]
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			p.n[i+1]++
			p.s[i+1] += x
			p.s2[i+1] += x * x
			if i < len(counts) && counts[i] > 0 {
				p.obs[i+1] += counts[i]
			}
		}
	}
	return p
}

// fewest returns the observations of the side of split that holds
// fewer (NaN when s is not counted).
func (s cpSeries) fewest(split int) float64 {
	if s.counts == nil {
		return math.NaN()
	}
	var before, after float64
	for i, x := range s.values[:min(len(s.values), len(s.counts))] {
		if c := s.counts[i]; c > 0 && !math.IsNaN(x) && !math.IsInf(x, 0) {
			if i < split {
				before += c
			} else {
				after += c
			}
		}
	}
	return math.Min(before, after)
}

// segmentShift is shiftScore of the values in [lo, hi) against the
// others, the shift before the cap where it is capped (as findChangePoint
// breaks ties), and whether the inside's mean is the higher.
func (p prefixSums) segmentShift(s cpSeries, lo, hi, minEach int) (d, raw float64, up bool) {
	end := len(p.n) - 1
	lo, hi = min(lo, end), min(hi, end)
	ni, si, s2i := p.n[hi]-p.n[lo], p.s[hi]-p.s[lo], p.s2[hi]-p.s2[lo]
	no, so, s2o := p.n[end]-ni, p.s[end]-si, p.s2[end]-s2i
	if ni < float64(minEach) || no < float64(minEach) || ni+no < 3 {
		return 0, 0, false
	}
	mi, mo := si/ni, so/no
	// Sums of squared deviations about each side's own mean.
	ssi, sso := math.Max(0, s2i-ni*mi*mi), math.Max(0, s2o-no*mo*mo)
	fewest := math.NaN()
	if s.counts != nil {
		oi := p.obs[hi] - p.obs[lo]
		fewest = math.Min(oi, p.obs[end]-oi)
	}
	pooled := math.Sqrt((ssi + sso) / (ni + no - 2))
	d = s.score(mi, mo, pooled, fewest)
	raw = d
	if d == cpMaxD {
		raw = math.Abs(mi-mo) / pooled
	}
	return d, raw, mi > mo
}
