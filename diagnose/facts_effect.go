package diagnose

import (
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"time"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/histogram"
	"github.com/whyslow/whyslow/rules"
	"github.com/whyslow/whyslow/snapshot"
)

// This file computes how far a fact's change is beyond noise (the noise
// bounds of rules.Fact), and the facts of evidence strength: lifecycle
// means, the waiting gauge's shape, the dispersion of arrivals, the GPU's
// state where work waits, and the load share of the busiest replica.

// Noise estimate parameters. The comparison step is independent of the
// timeline step: each window is cut into about noiseIntervals intervals
// of at least one minute; a window needs minNoiseIntervals of them.
const (
	noiseIntervals    = 30
	minNoiseIntervals = 6
	noiseResamples    = 400
)

// clip narrows w to the scope's evidence (one scrape interval before the
// first scrape to the last), so that a window given far wider than the
// evidence allocates no grid beyond it.
func (c *factCtx) clip(w snapshot.Window) snapshot.Window {
	first, last := c.st.first.Add(-c.st.interval), c.st.last
	if c.st.first.IsZero() {
		return w
	}
	if w.Start.Before(first) {
		w.Start = first
	}
	if w.End.After(last) {
		w.End = last
	}
	if w.End.Before(w.Start) {
		w.End = w.Start
	}
	return w
}

// compareStep is the interval length of the noise estimate for window w:
// max(1m, w / 30).
func compareStep(w snapshot.Window) time.Duration {
	return max(time.Minute, (w.Duration() / noiseIntervals).Round(time.Second))
}

// pieceFn returns one interval's additive contribution to a window
// statistic (bucket counts, sums and counts), or false when the interval
// has none.
type pieceFn func(w snapshot.Window) ([]float64, bool)

// aggFn turns the sum of pieces into the statistic.
type aggFn func(sum []float64) float64

// pieceGrid is the comparison grid of w: its intervals of compareStep,
// but a last one shorter than half a step; nil for a window that is not
// evaluable or a lifetime.
func pieceGrid(w evalWindow) []snapshot.Window {
	if !w.ok || w.lifetime {
		return nil
	}
	step := compareStep(w.w)
	var out []snapshot.Window
	for _, g := range snapshot.Grid(w.w, step) {
		if g.Duration() >= step/2 {
			out = append(out, g)
		}
	}
	return out
}

// pieces evaluates fn over the comparison grid of w.
func pieces(w evalWindow, fn pieceFn) [][]float64 {
	var out [][]float64
	for _, g := range pieceGrid(w) {
		if p, ok := fn(g); ok {
			if len(out) > 0 && len(p) != len(out[0]) {
				continue // another bucket layout: not additive
			}
			out = append(out, p)
		}
	}
	return out
}

// bootstrapRatio resamples the intervals of each window with replacement
// and returns the 0.5th and 99.5th percentiles of agg(incident) /
// agg(baseline): a 99% interval, because a report compares some forty
// facts at once and a 95% interval would let two of them through by
// chance. The seed makes the estimate reproducible.
func bootstrapRatio(inc, base [][]float64, agg aggFn, seed uint64) (lo, hi float64, ok bool) {
	if len(inc) < minNoiseIntervals || len(base) < minNoiseIntervals {
		return math.NaN(), math.NaN(), false
	}
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	sum := func(ps [][]float64, buf []float64) []float64 {
		clear(buf)
		for range ps {
			p := ps[rng.IntN(len(ps))]
			for i, v := range p {
				buf[i] += v
			}
		}
		return buf
	}
	bi, bb := make([]float64, len(inc[0])), make([]float64, len(base[0]))
	rs := make([]float64, 0, noiseResamples)
	for range noiseResamples {
		a, b := agg(sum(inc, bi)), agg(sum(base, bb))
		if r := a / b; !math.IsNaN(r) {
			rs = append(rs, r)
		}
	}
	if len(rs) < noiseResamples*9/10 {
		return math.NaN(), math.NaN(), false
	}
	sort.Float64s(rs)
	return rs[int(0.005*float64(len(rs)))], rs[int(0.995*float64(len(rs)-1))], true
}

func seedOf(id rules.FactID) uint64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	return h.Sum64()
}

// withNoise sets the noise bounds of f from the pieces of both windows.
func (c *factCtx) withNoise(id rules.FactID, f rules.Fact, fn pieceFn, agg aggFn) rules.Fact {
	if !f.Known() || !f.HasBaseline() || !c.base.ok {
		return f
	}
	inc, base := pieces(c.inc, fn), pieces(c.base, fn)
	lo, hi, ok := bootstrapRatio(inc, base, agg, seedOf(id))
	if !ok {
		return f
	}
	return f.WithNoise(lo, hi, len(inc), len(base))
}

// histPiece is the fleet histogram of signal id over one interval: its
// cumulative counts, then its sum and count.
func (c *factCtx) histPiece(id catalog.SignalID) pieceFn {
	if c.base.ok {
		// The fleet's increases over both windows' grids, each replica
		// read in one pass, before the intervals ask for them one by one.
		c.sc.fleetHistGrid(id, append(pieceGrid(c.inc), pieceGrid(c.base)...))
	}
	return func(w snapshot.Window) ([]float64, bool) {
		inc, _, err := c.sc.fleetHist(id, w)
		if err != nil || !(inc.Histogram.Total() > 0) {
			return nil, false
		}
		h := inc.Histogram
		p := make([]float64, 0, len(h.Counts)+2)
		p = append(p, h.Counts...)
		return append(p, h.Sum, h.Total()), true
	}
}

// histQuantileAgg reads quantile q from a sum of histPieces with the given
// bounds.
func histQuantileAgg(bounds []float64, q float64) aggFn {
	return func(s []float64) float64 {
		n := len(bounds)
		if len(s) != n+2 {
			return math.NaN()
		}
		h := histogram.Histogram{Bounds: bounds, Counts: s[:n], Count: math.NaN(), Sum: math.NaN()}
		return h.Quantile(q).Value
	}
}

// histMeanAgg reads the mean (sum / count) from a sum of histPieces.
func histMeanAgg(s []float64) float64 {
	if len(s) < 2 || !(s[len(s)-1] > 0) {
		return math.NaN()
	}
	return s[len(s)-2] / s[len(s)-1]
}

// ratioAgg is s[0] / s[1].
func ratioAgg(s []float64) float64 {
	if !(s[1] > 0) {
		return math.NaN()
	}
	return s[0] / s[1]
}

// quantileNoise adds the noise bounds to a fleet quantile fact.
func (c *factCtx) quantileNoise(fid rules.FactID, id catalog.SignalID, q float64, f rules.Fact) rules.Fact {
	if !f.Known() || !f.HasBaseline() {
		return f
	}
	ref, _, err := c.sc.fleetHist(id, c.inc.w)
	if err != nil {
		return f
	}
	bounds := ref.Histogram.Bounds
	fn := c.histPiece(id)
	same := func(w snapshot.Window) ([]float64, bool) {
		inc, _, err := c.sc.fleetHist(id, w)
		if err != nil || !histogram.SameLayout(inc.Histogram.Bounds, bounds) {
			return nil, false
		}
		return fn(w)
	}
	return c.withNoise(fid, f, same, histQuantileAgg(bounds, q))
}

// histMean is the mean of histogram signal id over w, from _sum / _count.
func (c *factCtx) histMean(id catalog.SignalID) func(evalWindow) rules.Fact {
	return func(w evalWindow) rules.Fact {
		if !c.sc.has(id) {
			return rules.MissingFact(c.missingSignal(id))
		}
		inc, _, err := c.sc.fleetHist(id, w.w)
		if err != nil {
			return rules.MissingFact(err)
		}
		n := inc.Histogram.Total()
		if !(n > 0) {
			return rules.MissingFact(rules.TooLittle("no observation in the window"))
		}
		if math.IsNaN(inc.Histogram.Sum) {
			return rules.MissingFact(rules.NoSource("%s has no _sum", id))
		}
		f := rules.Measured(inc.Histogram.Sum / n).WithSource(c.sc.source(id) + " _sum / _count")
		f.Incident.Count = n
		return f
	}
}

// gaugePiece is the sum and number of samples of the fleet gauge over one
// interval.
func (c *factCtx) gaugePiece(id catalog.SignalID) pieceFn {
	s := c.sc.fleetGauge(id)
	return func(w snapshot.Window) ([]float64, bool) {
		if s == nil {
			return nil, false
		}
		g, err := s.Gauge(w)
		if err != nil || g.N == 0 || math.IsNaN(g.Mean) {
			return nil, false
		}
		return []float64{g.Mean * float64(g.N), float64(g.N)}, true
	}
}

// counterPiece is the fleet counter's increase and the seconds it covers
// over one interval.
func (c *factCtx) counterPiece(id catalog.SignalID) pieceFn {
	return func(w snapshot.Window) ([]float64, bool) {
		inc, err := c.sc.fleetCounter(id, w, nil)
		if err != nil {
			return nil, false
		}
		secs := inc.Duration().Seconds()
		if !(secs > 0) {
			return nil, false
		}
		return []float64{inc.Value, secs}, true
	}
}

// counterPairPiece is the increases of two fleet counters over one
// interval (numerator, denominator).
func (c *factCtx) counterPairPiece(num, den catalog.SignalID) pieceFn {
	return func(w snapshot.Window) ([]float64, bool) {
		a, err := c.sc.fleetCounter(num, w, nil)
		if err != nil {
			return nil, false
		}
		b, err := c.sc.fleetCounter(den, w, nil)
		if err != nil {
			return nil, false
		}
		return []float64{a.Value, b.Value}, true
	}
}

// arrivalPiece is the fleet's arrivals (completions + growth of waiting
// and running) and the seconds over one interval.
func (c *factCtx) arrivalPiece(w snapshot.Window) ([]float64, bool) {
	a, secs, ok := c.arrivalsIn(w)
	if !ok {
		return nil, false
	}
	return []float64{a, secs}, true
}

// arrivalsIn estimates the fleet's arrivals in w: on each replica, its
// completions plus the growth of its waiting + running (the same
// replica's scrapes at both edges) plus the requests it refused at
// admission (vllm:admission_rejections_total, where exported), summed
// over replicas; a replica that is not running takes no arrivals. False
// when a running replica cannot be evaluated over w. The burst, the dispersion and their noise ask for
// the same scrape intervals (on 100 pods, 780 calls for 300 intervals):
// each is measured once (factCtx.arrivals).
func (c *factCtx) arrivalsIn(w snapshot.Window) (arrivals, secs float64, ok bool) {
	a := c.arrivals.get([2]int64{w.Start.UnixNano(), w.End.UnixNano()}, func() arrivalsMeasure {
		arrivals, secs, ok := c.measureArrivals(w)
		return arrivalsMeasure{arrivals, secs, ok}
	})
	return a.arrivals, a.secs, a.ok
}

// arrivalsMeasure is what arrivalsIn returns for one interval.
type arrivalsMeasure struct {
	arrivals, secs float64
	ok             bool
}

// measureArrivals is arrivalsIn, measured.
func (c *factCtx) measureArrivals(w snapshot.Window) (arrivals, secs float64, ok bool) {
	if !c.sc.has(catalog.SignalRequestSuccess) {
		return 0, 0, false
	}
	n := 0
	for r := range c.sc.replicas {
		if !c.sc.match(r, catalog.SignalRequestSuccess).Found() {
			continue
		}
		inc, err := c.sc.replicaCounter(catalog.SignalRequestSuccess, r, w, nil)
		if err != nil {
			if isNotEvaluable(err) && c.replicaDown(r, w) {
				continue
			}
			return 0, 0, false
		}
		bl := c.sc.backlog(r)
		if bl == nil {
			return 0, 0, false
		}
		gs, err := bl.Gauge(w)
		if err != nil {
			return 0, 0, false
		}
		arrivals += inc.Value + gs.Last - gs.First
		if c.sc.match(r, catalog.SignalAdmissionRejections).Found() {
			rej, err := c.sc.replicaCounter(catalog.SignalAdmissionRejections, r, w, nil)
			if err != nil {
				return 0, 0, false
			}
			arrivals += rej.Value
		}
		n++
	}
	return arrivals, w.Duration().Seconds(), n > 0
}

// addNoise sets the noise bounds of every fact that compares windows and
// can be cut into intervals.
func (c *factCtx) addNoise(fs rules.Facts) {
	if !c.base.ok || c.base.lifetime || c.inc.lifetime {
		return
	}
	// Each fact's bounds are its own (their ids are distinct): they are
	// measured on several goroutines from the facts as they stand, and
	// the facts replaced when all are done.
	var js factJobs
	noise := func(id rules.FactID, piece pieceFn, agg func([]float64) float64) {
		js.add(id, func() rules.Fact { return c.withNoise(id, fs[id], piece, agg) })
	}
	for _, qf := range quantileFacts {
		js.add(qf.id, func() rules.Fact { return c.quantileNoise(qf.id, qf.sig, qf.q, fs[qf.id]) })
	}
	for _, m := range meanFacts {
		noise(m.id, c.histPiece(m.sig), histMeanAgg)
	}
	for _, r := range []struct {
		id    rules.FactID
		sig   catalog.SignalID
		piece func(catalog.SignalID) pieceFn
	}{
		{rules.WaitingMean, catalog.SignalWaiting, c.gaugePiece}, {rules.RunningMean, catalog.SignalRunning, c.gaugePiece},
		{rules.KVUsageMean, catalog.SignalKVUsage, c.gaugePiece}, {rules.GPUUtilMean, catalog.SignalGPUUtil, c.gpuPieceFor},
		{rules.CompletionRate, catalog.SignalRequestSuccess, c.counterPiece}, {rules.PromptTokenRate, catalog.SignalPromptTokensTotal, c.counterPiece},
		{rules.GenerationTokenRate, catalog.SignalGenerationTokensTotal, c.counterPiece}, {rules.PreemptionRate, catalog.SignalPreemptions, c.counterPiece},
	} {
		noise(r.id, r.piece(r.sig), ratioAgg)
	}
	noise(rules.ArrivalRate, c.arrivalPiece, ratioAgg)
	if c.sc.has(catalog.SignalPrefixCacheQueries) && c.sc.has(catalog.SignalPrefixCacheHits) {
		noise(rules.PrefixHitRatio, c.counterPairPiece(catalog.SignalPrefixCacheHits, catalog.SignalPrefixCacheQueries), ratioAgg)
	}
	noise(rules.ArrivalDispersion, c.dispersionPiece, dispersionAgg)
	noise(rules.ArrivalDispersionDetrended, c.detrendedPiece, ratioAgg)
	noise(rules.OccupancySeen, c.occupancyPiece, occupancyAgg)
	noise(rules.TPOTMean, c.tpotPiece, func(s []float64) float64 {
		return catalog.MeanTPOTFromSums(s[0], s[1], s[2])
	})
	noise(rules.GPUUtilWaiting, func(w snapshot.Window) ([]float64, bool) {
		sum, n := c.utilWhereWaiting(w)
		return []float64{sum, float64(n)}, n > 0
	}, ratioAgg)
	maps.Copy(fs, js.run())
}

// tpotPiece is the decode-time sum, generation-token sum and request
// count of one interval.
func (c *factCtx) tpotPiece(w snapshot.Window) ([]float64, bool) {
	dec, _, err := c.sc.fleetHist(catalog.SignalDecodeTime, w)
	if err != nil {
		return nil, false
	}
	gen, _, err := c.sc.fleetHist(catalog.SignalGenerationTokens, w)
	if err != nil {
		return nil, false
	}
	return []float64{dec.Histogram.Sum, gen.Histogram.Sum, gen.Histogram.Total()}, true
}

// quantileFacts are the fleet quantile facts: id, signal, quantile.
var quantileFacts = []struct {
	id  rules.FactID
	sig catalog.SignalID
	q   float64
}{
	{rules.TTFTP50, catalog.SignalTTFT, 0.5}, {rules.TTFTP95, catalog.SignalTTFT, 0.95}, {rules.TTFTP99, catalog.SignalTTFT, 0.99},
	{rules.QueueTimeP50, catalog.SignalQueueTime, 0.5}, {rules.QueueTimeP95, catalog.SignalQueueTime, 0.95},
	{rules.PrefillTimeP50, catalog.SignalPrefillTime, 0.5}, {rules.PrefillTimeP95, catalog.SignalPrefillTime, 0.95},
	{rules.DecodeTimeP95, catalog.SignalDecodeTime, 0.95},
	{rules.TPOTP50, catalog.SignalTPOT, 0.5}, {rules.TPOTP95, catalog.SignalTPOT, 0.95},
	{rules.ITLP95, catalog.SignalITL, 0.95},
	{rules.E2EP50, catalog.SignalE2E, 0.5}, {rules.E2EP95, catalog.SignalE2E, 0.95}, {rules.E2EP99, catalog.SignalE2E, 0.99},
	{rules.InferenceTimeP95, catalog.SignalInferenceTime, 0.95},
	{rules.ClientTTFTP95, catalog.SignalClientTTFT, 0.95},
	{rules.PromptTokensP50, catalog.SignalPromptTokens, 0.5}, {rules.PromptTokensP95, catalog.SignalPromptTokens, 0.95},
	{rules.PromptTokensP99, catalog.SignalPromptTokens, 0.99},
	{rules.GenerationTokensP50, catalog.SignalGenerationTokens, 0.5}, {rules.GenerationTokensP95, catalog.SignalGenerationTokens, 0.95},
}

// meanFacts are the lifecycle means: id, signal.
var meanFacts = []struct {
	id  rules.FactID
	sig catalog.SignalID
}{
	{rules.QueueTimeMean, catalog.SignalQueueTime}, {rules.PrefillTimeMean, catalog.SignalPrefillTime},
	{rules.DecodeTimeMean, catalog.SignalDecodeTime}, {rules.TTFTMean, catalog.SignalTTFT}, {rules.E2EMean, catalog.SignalE2E},
}

// waitingShape is the median of the fleet's waiting requests over the
// window's scrapes ("median"), or the share of scrapes with at least one
// request waiting ("busy").
func (c *factCtx) waitingShape(what string) func(evalWindow) rules.Fact {
	return func(w evalWindow) rules.Fact {
		s := c.sc.fleetGauge(catalog.SignalWaiting)
		if s == nil {
			return rules.MissingFact(c.missingSignal(catalog.SignalWaiting))
		}
		lo, hi := w.w.Start.UnixMilli(), w.w.End.UnixMilli()
		var vs []float64
		for i, t := range s.T {
			if t > lo && t <= hi && !math.IsNaN(s.V[i]) {
				vs = append(vs, s.V[i])
			}
		}
		if len(vs) < 2 {
			return rules.MissingFact(rules.TooLittle("fewer than two scrapes of waiting requests in the window"))
		}
		var v float64
		switch what {
		case "median":
			sort.Float64s(vs)
			v = vs[len(vs)/2]
			if len(vs)%2 == 0 {
				v = (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
			}
		case "busy":
			n := 0
			for _, x := range vs {
				if x >= 1 {
					n++
				}
			}
			v = float64(n) / float64(len(vs))
		}
		f := rules.Measured(v).WithSource(c.sc.source(catalog.SignalWaiting) + " (fleet sum per scrape)")
		f.Incident.Count = float64(len(vs))
		return f
	}
}

// arrivalDispersion is the variance / mean of the fleet's arrivals per
// scrape interval over w.
func (c *factCtx) arrivalDispersion(w evalWindow) rules.Fact {
	if w.lifetime {
		return rules.MissingFact(rules.TooLittle("lifetime counters: no intervals"))
	}
	step := c.st.interval
	if step <= 0 {
		return rules.MissingFact(rules.TooLittle("unknown scrape interval"))
	}
	p, ok := c.dispersionPiece(w.w)
	if !ok || p[2] < 8 {
		return rules.MissingFact(rules.TooLittle("fewer than 8 scrape intervals with arrivals (%v each)", step))
	}
	d := dispersionAgg(p)
	if math.IsNaN(d) {
		return rules.MissingFact(rules.TooLittle("no arrivals in the window"))
	}
	f := rules.Measured(d).WithSource(fmt.Sprintf("variance / mean of arrivals per %v (completions + growth of waiting + running)", step))
	f.Incident.Count = p[2]
	return f
}

// dispersionPiece sums the arrivals per scrape interval within w, their
// squares and their number: additive, so that the dispersion of any set
// of windows follows (dispersionAgg).
func (c *factCtx) dispersionPiece(w snapshot.Window) ([]float64, bool) {
	step := c.st.interval
	if step <= 0 {
		return nil, false
	}
	var s, s2, n float64
	for _, g := range c.scrapeIntervals(w) {
		if a, _, ok := c.arrivalsIn(g); ok {
			s, s2, n = s+a, s2+a*a, n+1
		}
	}
	return []float64{s, s2, n}, n >= 2
}

// dispersionAgg is variance / mean from (sum, sum of squares, n).
func dispersionAgg(p []float64) float64 {
	s, s2, n := p[0], p[1], p[2]
	if n < 2 || !(s > 0) {
		return math.NaN()
	}
	mean := s / n
	return (s2 - n*mean*mean) / (n - 1) / mean
}

// arrivalTrend is the fleet's arrivals per scrape interval over w (clipped
// to the evidence) measured against their local level; t is each
// interval's end in Unix seconds.
func (c *factCtx) arrivalTrend(w snapshot.Window) trendResiduals {
	return c.trends.get([2]int64{w.Start.UnixNano(), w.End.UnixNano()}, func() trendResiduals {
		step := c.st.interval
		var t, v []float64
		for _, g := range c.scrapeIntervals(w) {
			if a, _, ok := c.arrivalsIn(g); ok {
				t, v = append(t, float64(g.End.UnixMilli())/1e3), append(v, a)
			}
		}
		return detrend(t, v, trendSide(step))
	})
}

// arrivalDispersionDetrended is the index of dispersion of the fleet's
// arrivals per scrape interval around their local level over w.
func (c *factCtx) arrivalDispersionDetrended(w evalWindow) rules.Fact {
	if w.lifetime {
		return rules.MissingFact(rules.TooLittle("lifetime counters: no intervals"))
	}
	step := c.st.interval
	if step <= 0 {
		return rules.MissingFact(rules.TooLittle("unknown scrape interval"))
	}
	d := c.arrivalTrend(w.w)
	res, fit, n := d.dispersion(math.Inf(-1), math.Inf(1))
	if n < 8 {
		return rules.MissingFact(rules.TooLittle("fewer than 8 scrape intervals with arrivals and a local level (%v each)", step))
	}
	if !(fit > 0) {
		return rules.MissingFact(rules.TooLittle("no arrivals in the window"))
	}
	f := rules.Measured(res / fit).WithSource(fmt.Sprintf("variance around the local level (running median of the intervals within %v on either side) / mean of arrivals per %v (completions + growth of waiting + running)", time.Duration(trendSide(step))*step, step))
	f.Incident.Count = float64(n)
	return f
}

// detrendedPiece is one comparison interval's share of
// arrivalDispersionDetrended: its intervals' squared residuals and
// levels, each measured against the level of the evaluation window that
// holds it.
func (c *factCtx) detrendedPiece(g snapshot.Window) ([]float64, bool) {
	for _, w := range []evalWindow{c.inc, c.base} {
		if w.ok && !g.Start.Before(w.w.Start) && !g.End.After(w.w.End) {
			res, fit, n := c.arrivalTrend(w.w).dispersion(float64(g.Start.UnixMilli())/1e3, float64(g.End.UnixMilli())/1e3)
			return []float64{res, fit}, n > 0 && fit > 0
		}
	}
	return nil, false
}

// waitingDrainedShare is the share of the fleet's queue mass (waiting
// requests, mean per scrape interval, summed) over w that lies in
// episodes which drained before w ended.
func (c *factCtx) waitingDrainedShare(w evalWindow) rules.Fact {
	s := c.sc.fleetGauge(catalog.SignalWaiting)
	if s == nil {
		return rules.MissingFact(c.missingSignal(catalog.SignalWaiting))
	}
	step := c.st.interval
	if step <= 0 {
		return rules.MissingFact(rules.TooLittle("unknown scrape interval"))
	}
	v := c.intervalMeans(s, w.w)
	if len(v) < 8 {
		return rules.MissingFact(rules.TooLittle("fewer than 8 scrape intervals of waiting requests (%v each)", step))
	}
	share, episodes := drainedShare(v)
	if episodes == 0 {
		return rules.MissingFact(rules.TooLittle("no request waited in the window"))
	}
	f := rules.Measured(share).WithSource(fmt.Sprintf("%s (fleet mean per %v): share of its sum in the %d episode(s) of >= 1 waiting that fell back below 1 within the window", c.sc.source(catalog.SignalWaiting), step, episodes))
	f.Incident.Count = float64(len(v))
	return f
}

// backlogSpike is the largest ratio of the fleet's waiting + running
// (mean per scrape interval) to its local level over w.
func (c *factCtx) backlogSpike(w evalWindow) rules.Fact {
	bl := c.sc.backlog(-1)
	if bl == nil {
		return rules.MissingFact(rules.NoSource("no waiting and running gauges"))
	}
	step := c.st.interval
	if step <= 0 {
		return rules.MissingFact(rules.TooLittle("unknown scrape interval"))
	}
	v := c.intervalMeans(bl, w.w)
	level := localLevel(v, trendSide(step))
	peak, n := math.NaN(), 0
	for i, l := range level {
		if math.IsNaN(l) {
			continue
		}
		n++
		if r := v[i] / math.Max(l, 1); !(r <= peak) {
			peak = r
		}
	}
	if n < 8 {
		return rules.MissingFact(rules.TooLittle("fewer than 8 scrape intervals of waiting + running with a local level (%v each)", step))
	}
	f := rules.Measured(peak).WithSource(fmt.Sprintf("peak of waiting + running (fleet mean per %v) over its local level (running median within %v on either side, at least 1)", step, time.Duration(trendSide(step))*step))
	f.Incident.Count = float64(n)
	return f
}

// utilWhereWaiting sums the GPU utilisation of every replica at the
// scrapes at which requests waited on it for capacity, over w: the
// utilisation sample nearest in time (within one scrape interval) to each
// waiting sample, less the requests deferred at admission (vLLM >= 0.13),
// >= 1.
func (c *factCtx) utilWhereWaiting(w snapshot.Window) (sum float64, n int) {
	lo, hi := w.Start.UnixMilli(), w.End.UnixMilli()
	tol := c.st.interval.Milliseconds()
	if tol <= 0 {
		tol = 15000
	}
	for r := range c.sc.replicas {
		ws, us := c.sc.replicaGauge(catalog.SignalWaiting, r), c.sc.replicaGauge(catalog.SignalGPUUtil, r)
		if ws == nil || us == nil || len(us.T) == 0 {
			continue
		}
		deferred, _ := c.deferredGauge(r)
		j := 0
		for i, t := range ws.T {
			if t <= lo || t > hi {
				continue
			}
			// Deferred requests are not ready for the GPU: only those
			// that wait for capacity say it should be busy.
			ready := ws.V[i]
			if d := at(deferred, t); d > 0 {
				ready -= d
			}
			if !(ready >= 1) {
				continue
			}
			for j+1 < len(us.T) && abs64(us.T[j+1]-t) <= abs64(us.T[j]-t) {
				j++
			}
			if abs64(us.T[j]-t) <= tol && !math.IsNaN(us.V[j]) {
				sum += us.V[j]
				n++
			}
		}
	}
	return sum, n
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// gpuUtilWaiting is the mean GPU utilisation where requests wait.
func (c *factCtx) gpuUtilWaiting(w evalWindow) rules.Fact {
	if !c.sc.has(catalog.SignalGPUUtil) {
		return rules.MissingFact(c.missingSignal(catalog.SignalGPUUtil))
	}
	sum, n := c.utilWhereWaiting(w.w)
	if n < 4 {
		return rules.MissingFact(rules.TooLittle("requests waited at only %d replica scrapes with a GPU sample (need 4): no queue to judge the GPU by", n))
	}
	f := rules.Measured(sum / float64(n)).WithSource(c.sc.source(catalog.SignalGPUUtil) + " at the scrapes where " + c.sc.source(catalog.SignalWaiting) + " >= 1" + c.deferredNote())
	f.Incident.Count = float64(n)
	return f
}

// replicaLoadShareMax is the largest replica's share of the arrivals
// (completions + growth of its waiting and running) over its fair share
// by engine count.
func (c *factCtx) replicaLoadShareMax(w evalWindow) rules.Fact {
	loads, err := c.replicaLoads(w)
	if err != nil {
		return rules.MissingFact(err)
	}
	top, who, total := 0.0, "", 0.0
	for _, l := range loads {
		total += l.load
		if l.share > top {
			top, who = l.share, c.sc.replicas[l.r].t.Name
		}
	}
	src := fmt.Sprintf("%s: arrivals (completions + growth of waiting and running) per replica, fair share by engine count", who)
	if _, pd := c.roleGroups(w); pd {
		src += roleNote
	}
	f := rules.Measured(top).WithSource(src)
	f.Incident.Count, f.Replica = total, who
	return f
}

// replicaLoad is one replica's arrivals over a window and their share of
// the fleet's over the replica's fair share by engine count.
type replicaLoad struct {
	r           int
	load, share float64
}

// replicaLoads measures the load of every replica with completions over
// w, or says why it cannot.
func (c *factCtx) replicaLoads(w evalWindow) ([]replicaLoad, error) {
	if !c.sc.has(catalog.SignalRequestSuccess) {
		return nil, c.missingSignal(catalog.SignalRequestSuccess)
	}
	var vals []replicaLoad
	var engs []float64
	total, engines := 0.0, 0.0
	var roleTotal, roleEngines [3]float64
	roles, _ := c.roleGroups(w)
	for r := range c.sc.replicas {
		inc, err := c.sc.replicaCounter(catalog.SignalRequestSuccess, r, w.w, nil)
		if err != nil {
			continue
		}
		load := inc.Value
		if bl := c.sc.backlog(r); bl != nil && !w.lifetime {
			if g, err := bl.Gauge(w.w); err == nil {
				load += g.Last - g.First
			}
		}
		e := float64(max(1, len(c.sc.engineValues(r))))
		if !w.lifetime {
			// The fair share is the replica's engines over the time it
			// was in rotation: a replica that drained and left (idle,
			// asleep) or joined late has no share of the rest.
			span := c.rotationSpan(r, w.w)
			if span <= 0 {
				continue
			}
			e *= span
		}
		vals = append(vals, replicaLoad{r: r, load: math.Max(load, 0)})
		engs = append(engs, e)
		total += math.Max(load, 0)
		engines += e
		roleTotal[roles[r]] += math.Max(load, 0)
		roleEngines[roles[r]] += e
	}
	if len(vals) < 2 {
		return nil, rules.TooLittle("fewer than two replicas in rotation (serving or holding requests) in the window")
	}
	if !(total > 0) {
		return nil, rules.TooLittle("no request arrived in the window")
	}
	// A replica's fair share is among the replicas of its prefill/decode
	// role (roleGroups); without roles, among all.
	for i := range vals {
		k := roles[vals[i].r]
		if roleTotal[k] > 0 {
			vals[i].share = (vals[i].load / roleTotal[k]) / (engs[i] / roleEngines[k])
		}
	}
	return vals, nil
}

// rotationSpan is the seconds of w between the start of replica r's
// first scrape interval in which it was in rotation (inRotation) and the
// end of its last: the time it was in rotation. 0 when it never was.
func (c *factCtx) rotationSpan(r int, w snapshot.Window) float64 {
	var times []time.Time
	for _, s := range c.sc.replicas[r].t.Scrapes {
		if !s.Time.Before(w.Start) && !s.Time.After(w.End) {
			times = append(times, s.Time)
		}
	}
	var first, last time.Time
	for i := 1; i < len(times); i++ {
		if c.inRotation(r, snapshot.Window{Start: times[i-1], End: times[i]}) {
			if first.IsZero() {
				first = times[i-1]
			}
			last = times[i]
		}
	}
	return last.Sub(first).Seconds()
}

// preemptionShare is preemptions per finished request.
func (c *factCtx) preemptionShare(w evalWindow) rules.Fact {
	return c.counterRatio(catalog.SignalPreemptions, catalog.SignalRequestSuccess, w, "no request finished in the window")
}

// strengthJobs adds the facts of this file to js; addNoise then bounds
// them.
func (c *factCtx) strengthJobs(js *factJobs) {
	both := func(id rules.FactID, f func(evalWindow) rules.Fact) {
		js.add(id, func() rules.Fact { return c.both(id, f) })
	}
	for _, m := range meanFacts {
		both(m.id, c.histMean(m.sig))
	}
	both(rules.WaitingMedian, c.waitingShape("median"))
	both(rules.WaitingBusyShare, c.waitingShape("busy"))
	both(rules.ArrivalDispersion, c.arrivalDispersion)
	both(rules.ArrivalDispersionDetrended, c.arrivalDispersionDetrended)
	both(rules.WaitingDrainedShare, c.waitingDrainedShare)
	both(rules.BacklogSpike, c.backlogSpike)
	both(rules.GPUUtilWaiting, c.gpuUtilWaiting)
	both(rules.ReplicaLoadShareMax, c.replicaLoadShareMax)
	both(rules.PreemptionShare, c.preemptionShare)
	both(rules.OccupancySeen, c.occupancySeen)
}

// occupancySeen is the fleet's requests in the engines at the scrapes
// (waiting + running, their mean over w) divided by the requests in flight
// that the counters imply over w by Little's law: the time the requests
// that finished in w spent in the engines (the e2e latency _sum's
// increase) over w's seconds. Near 1 when the scrapes see the load as it
// is; well under 1 when it arrives and drains between scrapes.
func (c *factCtx) occupancySeen(w evalWindow) rules.Fact {
	if c.sc.backlog(-1) == nil {
		return rules.MissingFact(rules.NoSource("no waiting and running gauges"))
	}
	if !c.sc.has(catalog.SignalE2E) {
		return rules.MissingFact(c.missingSignal(catalog.SignalE2E))
	}
	p, ok := c.occupancyPiece(c.clip(w.w))
	if !ok {
		return rules.MissingFact(rules.TooLittle("no scrape of waiting + running, or no finished request with an e2e latency, in the window"))
	}
	f := rules.Measured(occupancyAgg(p)).WithSource(c.sc.source(catalog.SignalRunning) + " + " + c.sc.source(catalog.SignalWaiting) + " (mean at the scrapes) over " + c.sc.source(catalog.SignalE2E) + " _sum increase / window seconds")
	f.Incident.Count = p[1]
	return f
}

// occupancyPiece is, over w, the fleet's waiting + running summed over
// its scrapes and their number, then the e2e latency _sum's increase and
// w's seconds.
func (c *factCtx) occupancyPiece(w snapshot.Window) ([]float64, bool) {
	bl := c.sc.backlog(-1)
	if bl == nil {
		return nil, false
	}
	gs, err := bl.Gauge(w)
	if err != nil || gs.N == 0 || math.IsNaN(gs.Mean) {
		return nil, false
	}
	e2e, _, err := c.sc.fleetHist(catalog.SignalE2E, w)
	if err != nil || !(e2e.Histogram.Sum > 0) {
		return nil, false
	}
	return []float64{gs.Mean * float64(gs.N), float64(gs.N), e2e.Histogram.Sum, w.Duration().Seconds()}, true
}

// occupancyAgg is the ratio of a sum of occupancyPieces.
func occupancyAgg(s []float64) float64 {
	if !(s[1] > 0) || !(s[2] > 0) || !(s[3] > 0) {
		return math.NaN()
	}
	return (s[0] / s[1]) / (s[2] / s[3])
}

// deferredNote is what gpu_util_waiting's source adds when the evidence
// tells deferred requests from those waiting for capacity.
func (c *factCtx) deferredNote() string {
	if !c.sc.has(catalog.SignalWaitingByReason) {
		return ""
	}
	return ` (less ` + c.sc.source(catalog.SignalWaitingByReason) + `{reason="deferred"})`
}

// gpuUtilMean is the mean GPU utilisation of the replicas in rotation:
// over each interval of w (the noise grid), the GPUs of the replicas that
// served or held requests in it (inRotation), summed over their scrapes.
// A replica out of rotation (cordoned, asleep, drained) idles its GPU
// without any bottleneck: it is left out. Without a per-replica GPU
// series (exporters that name no pod) it is the fleet's mean over w.
func (c *factCtx) gpuUtilMean(w evalWindow) rules.Fact {
	perReplica := false
	for r := range c.sc.replicas {
		perReplica = perReplica || c.sc.replicaGauge(catalog.SignalGPUUtil, r) != nil
	}
	grid := pieceGrid(w)
	if !perReplica || len(grid) == 0 {
		return c.gaugeStat(catalog.SignalGPUUtil, w, "mean")
	}
	var sum, n float64
	for _, g := range grid {
		if p, ok := c.gpuPiece(g); ok {
			sum, n = sum+p[0], n+p[1]
		}
	}
	if !(n > 0) {
		return rules.MissingFact(rules.TooLittle("no GPU sample of a replica in rotation in the window"))
	}
	f := rules.Measured(sum / n).WithSource(c.sc.source(catalog.SignalGPUUtil) + " of the replicas in rotation (serving or holding requests)")
	f.Incident.Count = n
	return f
}

// gpuPieceFor is gpuPiece, for the noise table (one piece function per
// signal).
func (c *factCtx) gpuPieceFor(catalog.SignalID) pieceFn { return c.gpuPiece }

// gpuPiece is, over one interval, the GPU utilisation of the replicas in
// rotation summed over their scrapes, and the number of those scrapes.
func (c *factCtx) gpuPiece(w snapshot.Window) ([]float64, bool) {
	var sum, n float64
	for r := range c.sc.replicas {
		s := c.sc.replicaGauge(catalog.SignalGPUUtil, r)
		if s == nil || !c.inRotation(r, w) {
			continue
		}
		g, err := s.Gauge(w)
		if err != nil || g.N == 0 || math.IsNaN(g.Mean) {
			continue
		}
		sum += g.Mean * float64(g.N)
		n += float64(g.N)
	}
	return []float64{sum, n}, n > 0
}

// inRotation reports whether replica r served or held requests over w:
// its completions advanced, or requests waited or ran at a scrape.
func (c *factCtx) inRotation(r int, w snapshot.Window) bool {
	if bl := c.sc.backlog(r); bl != nil {
		if g, err := bl.Gauge(w); err == nil && g.Max > 0 {
			return true
		}
	}
	inc, err := c.sc.replicaCounter(catalog.SignalRequestSuccess, r, w, nil)
	return err == nil && inc.Value > 0
}

// scrapeIntervals are the whole scrape intervals of w clipped to the
// evidence (a shorter last one left out); none when the scrape interval
// is unknown.
func (c *factCtx) scrapeIntervals(w snapshot.Window) []snapshot.Window {
	step := c.st.interval
	if step <= 0 {
		return nil
	}
	return slices.DeleteFunc(snapshot.Grid(c.clip(w), step), func(g snapshot.Window) bool { return g.Duration() < step })
}

// intervalMeans are the means of s over the scrape intervals of w
// (scrapeIntervals) that hold a sample.
func (c *factCtx) intervalMeans(s *snapshot.Series, w snapshot.Window) []float64 {
	var v []float64
	for _, g := range c.scrapeIntervals(w) {
		if gs, err := s.Gauge(g); err == nil && gs.N > 0 && !math.IsNaN(gs.Mean) {
			v = append(v, gs.Mean)
		}
	}
	return v
}
