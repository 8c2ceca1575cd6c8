package diagnose

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/gonum/stat"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/histogram"
	"github.com/whyslow/whyslow/rules"
	"github.com/whyslow/whyslow/snapshot"
)

// This file computes the facts of package rules (the decision map's input
// vocabulary, documented in rules/facts.go) from the signals of a scope.
// Every fact carries its incident and baseline values, bounds, counts,
// windows and source, or the reason it is missing: never a zero in place
// of an unknown.

// factCtx computes the facts of one scope over two windows.
type factCtx struct {
	sc        *scope
	base, inc evalWindow
	tl        *timelines
	st        scrapeStats
	// arrivals holds arrivalsIn's measures by interval (start and end,
	// Unix ns).
	arrivals memo[[2]int64, arrivalsMeasure]
	// trends holds arrivalTrend's measures by window (start and end,
	// Unix ns).
	trends memo[[2]int64, trendResiduals]
	// deferred holds deferredGauge's series by replica.
	deferred memo[int, deferredSeries]
}

// computeFacts returns every fact of rules.FactIDs.
//
// The facts are measured on up to GOMAXPROCS goroutines (runParallel):
// each is a function of the evidence, the windows and the timelines
// alone, and what they share (the scope's caches, the arrivals) is
// computed once whichever asks first (memo), so the facts are the ones
// measured one after another. The noise bounds, which read the facts,
// follow; the reliability facts are measured with the others and, as
// when they were measured last, overwrite any fact of the same id.
func (sc *scope) computeFacts(base, inc evalWindow, tl *timelines, st scrapeStats) rules.Facts {
	c := &factCtx{sc: sc, base: base, inc: inc, tl: tl, st: st}
	var js factJobs
	for _, qf := range quantileFacts {
		js.add(qf.id, func() rules.Fact { return c.quantile(qf.sig, qf.q) })
	}
	both := func(id rules.FactID, f func(evalWindow) rules.Fact) {
		js.add(id, func() rules.Fact { return c.both(id, f) })
	}
	both(rules.TPOTMean, c.tpotMean)
	both(rules.CompletionRate, func(w evalWindow) rules.Fact { return c.counterRate(catalog.SignalRequestSuccess, w) })
	both(rules.PromptTokenRate, func(w evalWindow) rules.Fact { return c.counterRate(catalog.SignalPromptTokensTotal, w) })
	both(rules.GenerationTokenRate, func(w evalWindow) rules.Fact { return c.counterRate(catalog.SignalGenerationTokensTotal, w) })
	both(rules.PreemptionRate, func(w evalWindow) rules.Fact { return c.counterRate(catalog.SignalPreemptions, w) })
	both(rules.ArrivalRate, c.arrivalRate)
	both(rules.ErrorShare, func(w evalWindow) rules.Fact { return c.reasonShare("error", w) })
	both(rules.AbortShare, func(w evalWindow) rules.Fact { return c.reasonShare("abort", w) })
	both(rules.HTTP5xxShare, c.http5xxShare)
	js.add(rules.TimeoutShare, func() rules.Fact {
		return rules.MissingFact(rules.NoSource("no timeout metric in the evidence: vLLM counts a client that gives up as finished_reason=abort (see abort_share); alias a gateway's timeout counter to judge timeouts apart"))
	})
	both(rules.PrefixHitRatio, c.prefixHitRatio)

	both(rules.WaitingMean, func(w evalWindow) rules.Fact { return c.gaugeStat(catalog.SignalWaiting, w, "mean") })
	both(rules.WaitingMax, func(w evalWindow) rules.Fact { return c.gaugeStat(catalog.SignalWaiting, w, "max") })
	both(rules.WaitingSlope, func(w evalWindow) rules.Fact { return c.gaugeStat(catalog.SignalWaiting, w, "slope") })
	both(rules.WaitingBurst, c.burst)
	both(rules.RunningMean, func(w evalWindow) rules.Fact { return c.gaugeStat(catalog.SignalRunning, w, "mean") })
	both(rules.RunningMax, func(w evalWindow) rules.Fact { return c.gaugeStat(catalog.SignalRunning, w, "max") })
	both(rules.MaxNumSeqs, c.maxNumSeqs)
	both(rules.KVUsageMean, func(w evalWindow) rules.Fact { return c.gaugeStat(catalog.SignalKVUsage, w, "mean") })
	both(rules.KVUsageMax, c.kvMax)
	both(rules.GPUUtilMean, c.gpuUtilMean)
	both(rules.BacklogEnd, c.backlogEnd)

	both(rules.ReplicaShareMax, c.replicaShareMax)
	both(rules.ReplicaTTFTRatio, c.replicaTTFTRatio)
	both(rules.ReplicaTTFTMeanMedian, c.replicaTTFTMeanMedian)
	js.add(rules.CorrRunningTPOT, c.corrRunningTPOT)
	c.strengthJobs(&js)
	c.kvJobs(&js)
	c.engineJobs(&js)
	c.decodeJobs(&js)
	c.dpJobs(&js)
	rel := rules.Facts{}
	fs := js.run(func() { c.addReliabilityFacts(rel) })
	c.addNoise(fs)
	maps.Copy(fs, rel)
	return fs
}

// factJobs lists facts to measure, each by its own function.
type factJobs struct {
	ids []rules.FactID
	fns []func() rules.Fact
}

// add appends fact id, measured by f.
func (js *factJobs) add(id rules.FactID, f func() rules.Fact) {
	js.ids = append(js.ids, id)
	js.fns = append(js.fns, f)
}

// run measures the facts, and runs each of more, on up to GOMAXPROCS
// goroutines, and returns the facts by id (a later one of an id in the
// list replacing an earlier, as assignments in order would).
func (js *factJobs) run(more ...func()) rules.Facts {
	out := make([]rules.Fact, len(js.fns))
	tasks := slices.Clone(more) // first: each measures many facts
	for i, f := range js.fns {
		tasks = append(tasks, func() { out[i] = f() })
	}
	runParallel(tasks)
	fs := make(rules.Facts, len(js.ids))
	for i, id := range js.ids {
		fs[id] = out[i]
	}
	return fs
}

// both evaluates f over the incident window and, when there is one, the
// baseline window, and joins them into one fact.
func (c *factCtx) both(id rules.FactID, f func(evalWindow) rules.Fact) rules.Fact {
	out := f(c.inc)
	out.Incident.Window = c.inc.text()
	out.Lifetime = c.inc.lifetime
	if c.base.ok {
		b := f(c.base)
		if b.Missing == nil && !math.IsNaN(b.Incident.Value) {
			out.Baseline = b.Incident
			out.Baseline.Window = c.base.text()
		}
		if out.Source == "" {
			out.Source = b.Source
		}
	}
	return out
}

// missingSignal explains why signal id is missing: a reason of kind
// rules.ErrNoSource.
func (c *factCtx) missingSignal(id catalog.SignalID) error {
	spec, ok := c.sc.set.catalog.Signal(id)
	if !ok {
		return rules.NoSource("the catalog has no %s signal", id)
	}
	switch id {
	case catalog.SignalClientTTFT:
		return rules.NoSource("no client-side TTFT histogram given (name a gateway's with Catalog.Alias client_ttft=METRIC)")
	case catalog.SignalGPUUtil:
		return rules.NoSource("no GPU exporter (DCGM) metric in the evidence")
	case catalog.SignalMaxNumSeqs:
		return rules.NoSource("vLLM exposes no max_num_seqs metric (name one with Catalog.Alias max_num_seqs=METRIC)")
	}
	if len(spec.Metrics()) == 0 {
		return rules.NoSource("no source for %s (name one with Catalog.Alias %s=METRIC)", id, id)
	}
	return rules.NoSource("no %s in the evidence", strings.Join(spec.Metrics(), " or "))
}

// reasonText is the text of f.Missing, "" when f is not missing.
func reasonText(f rules.Fact) string {
	if f.Missing == nil {
		return ""
	}
	return f.Missing.Error()
}

// quantile is a fleet quantile fact of histogram signal id.
func (c *factCtx) quantile(id catalog.SignalID, q float64) rules.Fact {
	if !c.sc.has(id) {
		return rules.MissingFact(c.missingSignal(id))
	}
	one := func(w evalWindow) (rules.Fact, error) {
		inc, _, err := c.sc.fleetHist(id, w.w)
		if err != nil {
			return rules.Fact{}, err
		}
		if !(inc.Histogram.Total() > 0) {
			return rules.Fact{}, rules.TooLittle("no observation")
		}
		e := inc.Histogram.Quantile(q)
		f := rules.Measured(e.Value).WithBounds(e.Lower, e.Upper)
		f.Incident.Count = e.Count
		return f, nil
	}
	out, err := one(c.inc)
	if err != nil {
		out = rules.MissingFact(fmt.Errorf("%s over the incident window: %w", id, err))
	}
	out.Incident.Window = c.inc.text()
	out.Source = c.sc.source(id)
	if c.base.ok {
		if b, err := one(c.base); err == nil {
			out.Baseline = b.Incident
			out.Baseline.Window = c.base.text()
			out.Unprecedented = c.unprecedented(id, q, out)
			if out.Known() {
				out.SamplingZ, out.SamplingKnown = c.samplingZ(id, b.Incident.Value)
			}
		}
	}
	return out
}

// samplingZ is Fact.SamplingZ of a quantile of histogram id whose
// baseline value is x (shareAboveZ of the two windows' fleet
// histograms); false when it cannot be read.
func (c *factCtx) samplingZ(id catalog.SignalID, x float64) (float64, bool) {
	inc, _, err := c.sc.fleetHist(id, c.inc.w)
	if err != nil {
		return 0, false
	}
	base, _, err := c.sc.fleetHist(id, c.base.w)
	if err != nil {
		return 0, false
	}
	return shareAboveZ(inc.Histogram, base.Histogram, x)
}

// shareAboveZ is the two-proportion z statistic of the shares of inc's
// and base's observations above x, each read as PromQL's
// histogram_fraction reads it; positive when inc has the larger share.
// It is distribution-free: with no change, the shares above a fixed
// value differ only by binomial sampling. false when a share cannot be
// read.
func shareAboveZ(inc, base histogram.Histogram, x float64) (float64, bool) {
	fi, fb := inc.Fraction(x), base.Fraction(x)
	ni, nb := fi.Count, fb.Count
	if math.IsNaN(fi.Value) || math.IsNaN(fb.Value) || !(ni > 0) || !(nb > 0) {
		return 0, false
	}
	pi, pb := 1-fi.Value, 1-fb.Value
	pooled := (pi*ni + pb*nb) / (ni + nb)
	se := math.Sqrt(pooled * (1 - pooled) * (1/ni + 1/nb))
	if !(se > 0) {
		return 0, true // both shares 0 or both 1
	}
	return (pi - pb) / se, true
}

// unprecedented is f's Unprecedented: the incident observations of
// histogram id above the upper edge of the highest bucket any baseline
// observation reached, when quantile q of the incident lies above that
// edge and the baseline holds at least 10/(1-q) observations (so that its
// slowest observation is a meaningful reference for q); else 0.
func (c *factCtx) unprecedented(id catalog.SignalID, q float64, f rules.Fact) float64 {
	inc, _, err := c.sc.fleetHist(id, c.inc.w)
	if err != nil {
		return math.NaN()
	}
	base, _, err := c.sc.fleetHist(id, c.base.w)
	if err != nil || !histogram.SameLayout(inc.Histogram.Bounds, base.Histogram.Bounds) {
		return math.NaN()
	}
	hb, hi := base.Histogram, inc.Histogram
	if !(hb.Total() >= 10/(1-q)) {
		return 0
	}
	top := -1 // the highest bucket holding a baseline observation
	for i := range hb.Counts {
		if hb.Counts[i] > 0 && (i == 0 || hb.Counts[i] > hb.Counts[i-1]) {
			top = i
		}
	}
	if top < 0 || math.IsInf(hb.Bounds[top], 1) || !(f.Incident.Lower >= hb.Bounds[top]) {
		return 0
	}
	return hi.Total() - hi.Counts[top]
}

// rateOf returns inc's rate, or the reason it has none (of kind
// rules.ErrTooLittle).
func rateOf(inc snapshot.CounterIncrease) (float64, error) {
	r := inc.Rate()
	if math.IsNaN(r) {
		if inc.Lifetime {
			return r, rules.TooLittle("lifetime counter without a known start time: no rate")
		}
		return r, rules.TooLittle("no time elapsed between the edge samples")
	}
	return r, nil
}

func (c *factCtx) counterRate(id catalog.SignalID, w evalWindow) rules.Fact {
	if !c.sc.has(id) {
		return rules.MissingFact(c.missingSignal(id))
	}
	inc, err := c.sc.fleetCounter(id, w.w, nil)
	if err != nil {
		return rules.MissingFact(err)
	}
	r, err := rateOf(inc)
	if err != nil {
		return rules.MissingFact(fmt.Errorf("%s: %w", id, err))
	}
	f := rules.Measured(r).WithSource(c.sc.source(id))
	f.Incident.Count = inc.Value
	return f
}

// tpotMean is the mean decode time per output token from sums; see
// catalog.MeanTPOTFromSums.
func (c *factCtx) tpotMean(w evalWindow) rules.Fact {
	if f, ok := c.need(catalog.SignalDecodeTime, catalog.SignalGenerationTokens); !ok {
		return f
	}
	dec, _, err := c.sc.fleetHist(catalog.SignalDecodeTime, w.w)
	if err != nil {
		return rules.MissingFact(err)
	}
	gen, _, err := c.sc.fleetHist(catalog.SignalGenerationTokens, w.w)
	if err != nil {
		return rules.MissingFact(err)
	}
	v := catalog.MeanTPOTFromSums(dec.Histogram.Sum, gen.Histogram.Sum, gen.Histogram.Total())
	if math.IsNaN(v) {
		return rules.MissingFact(rules.TooLittle("no output token decoded in the window (or _sum missing)"))
	}
	f := rules.Measured(v).WithSource(catalog.TPOTFallback)
	f.Incident.Count = gen.Histogram.Total()
	return f
}

// arrivalRate estimates arrivals per second: completions plus the growth
// of waiting + running, plus the requests refused at admission (they
// arrived, and vLLM answered them 503 before they reached an engine),
// over the window's length.
func (c *factCtx) arrivalRate(w evalWindow) rules.Fact {
	if !c.sc.has(catalog.SignalRequestSuccess) {
		return rules.MissingFact(c.missingSignal(catalog.SignalRequestSuccess))
	}
	if w.lifetime {
		return rules.MissingFact(rules.TooLittle("lifetime counters: no window to estimate arrivals over"))
	}
	inc, err := c.sc.fleetCounter(catalog.SignalRequestSuccess, w.w, nil)
	if err != nil {
		return rules.MissingFact(err)
	}
	g, f, ok := c.fleetBacklog(w, "no waiting and running gauges: the growth of the backlog is unknown")
	if !ok {
		return f
	}
	secs := inc.Duration().Seconds()
	if !(secs > 0) {
		return rules.MissingFact(rules.TooLittle("no time elapsed between the edge samples"))
	}
	src := c.sc.source(catalog.SignalRequestSuccess) + " + growth of waiting + running"
	refused := 0.0
	if c.sc.has(catalog.SignalAdmissionRejections) {
		rej, err := c.sc.fleetCounter(catalog.SignalAdmissionRejections, w.w, nil)
		if err != nil {
			return rules.MissingFact(err)
		}
		refused = rej.Value
		src += " + " + c.sc.source(catalog.SignalAdmissionRejections)
	}
	f = rules.Measured((inc.Value + g.Last - g.First + refused) / secs).WithSource(src)
	f.Incident.Count = inc.Value + refused
	return f
}

// reasonShare is the share of finished requests with the given
// finished_reason. A reason without a series had no request when other
// reasons exist, except "error", which older versions do not count.
func (c *factCtx) reasonShare(reason string, w evalWindow) rules.Fact {
	total, f, ok := c.fleetTotal(catalog.SignalRequestSuccess, w, "no request finished in the window")
	if !ok {
		return f
	}
	part := 0.0
	reasons := c.sc.splitValues(catalog.SignalRequestSuccess, "finished_reason")
	switch {
	case slices.Contains(reasons, reason):
		inc, err := c.sc.fleetCounter(catalog.SignalRequestSuccess, w.w, map[string]string{"finished_reason": reason})
		if err != nil {
			return rules.MissingFact(err)
		}
		part = inc.Value
	case reason == "error":
		return rules.MissingFact(rules.NoSource(`no finished_reason="error" series: this vLLM version does not count failed requests apart`))
	case len(reasons) == 0:
		return rules.MissingFact(rules.NoSource("request_success has no finished_reason label"))
	}
	f = rules.Measured(part / total).WithSource(c.sc.source(catalog.SignalRequestSuccess) + `{finished_reason="` + reason + `"}`)
	f.Incident.Count = total
	return f
}

// http5xxShare is the share of HTTP responses with a 5xx status. The
// family counts every response, so a status without a series had none.
func (c *factCtx) http5xxShare(w evalWindow) rules.Fact {
	total, f, ok := c.fleetTotal(catalog.SignalHTTPRequests, w, "no HTTP response in the window")
	if !ok {
		return f
	}
	bad := 0.0
	for _, st := range c.sc.splitValues(catalog.SignalHTTPRequests, "status") {
		if !strings.HasPrefix(st, "5") {
			continue
		}
		inc, err := c.sc.fleetCounter(catalog.SignalHTTPRequests, w.w, map[string]string{"status": st})
		if err == nil {
			bad += inc.Value
		}
	}
	f = rules.Measured(bad / total).WithSource(c.sc.source(catalog.SignalHTTPRequests) + `{status="5xx"}`)
	f.Incident.Count = total
	return f
}

// need returns the fact that says which of ids the scope lacks, and
// false, or true when it has them all.
func (c *factCtx) need(ids ...catalog.SignalID) (rules.Fact, bool) {
	for _, id := range ids {
		if !c.sc.has(id) {
			return rules.MissingFact(c.missingSignal(id)), false
		}
	}
	return rules.Fact{}, true
}

// counterRatio is the fleet increase of counter num over that of den
// over w, counted by den's increase; none says why it is missing when den
// did not increase.
func (c *factCtx) counterRatio(num, den catalog.SignalID, w evalWindow, none string) rules.Fact {
	if f, ok := c.need(num, den); !ok {
		return f
	}
	n, err := c.sc.fleetCounter(num, w.w, nil)
	if err != nil {
		return rules.MissingFact(err)
	}
	d, f, ok := c.fleetTotal(den, w, none)
	if !ok {
		return f
	}
	f = rules.Measured(n.Value / d).WithSource(c.sc.source(num) + " / " + c.sc.source(den))
	f.Incident.Count = d
	return f
}

// fleetTotal is the fleet increase of counter id over w, when the counter
// is there, evaluable and increased; else ok is false and f is the missing
// fact, none saying why when the counter did not increase.
func (c *factCtx) fleetTotal(id catalog.SignalID, w evalWindow, none string) (total float64, f rules.Fact, ok bool) {
	if f, ok := c.need(id); !ok {
		return 0, f, false
	}
	inc, err := c.sc.fleetCounter(id, w.w, nil)
	if err != nil {
		return 0, rules.MissingFact(err), false
	}
	if !(inc.Value > 0) {
		return 0, rules.MissingFact(rules.TooLittle("%s", none)), false
	}
	return inc.Value, rules.Fact{}, true
}

// prefixHitRatio is hits / queries of the prefix cache (tokens), or the
// window's rate recovered from the V0 hit-rate gauge (prefixHitRatioV0).
func (c *factCtx) prefixHitRatio(w evalWindow) rules.Fact {
	if c.sc.has(catalog.SignalPrefixCacheQueries) && c.sc.has(catalog.SignalPrefixCacheHits) {
		return c.counterRatio(catalog.SignalPrefixCacheHits, catalog.SignalPrefixCacheQueries, w, "no prefix-cache lookup in the window (prefix caching disabled, or no traffic)")
	}
	if c.sc.has(catalog.SignalPrefixCacheHitRate) {
		return c.prefixHitRatioV0(w)
	}
	return rules.MissingFact(c.missingSignal(catalog.SignalPrefixCacheHits))
}

// prefixHitRatioV0 is the prefix-cache hit ratio over w from vLLM V0's
// gpu_prefix_cache_hit_rate, a rate over every lookup since the process
// started (vLLM's CacheMetricData), not over the last ones: its mean over
// a window hardly moves when the cache stops hitting. The window's hits
// are recovered replica by replica as R(to)·P(to) - R(from)·P(from), the
// gauge R at the window's first and last scrapes weighted by the prompt
// tokens P the process took until then (V0 counts no lookups; a lookup
// per block of prompt), over the prompt tokens of the window. A replica
// whose gauge is -1 (unknown), or whose process restarted in the window,
// is left out.
func (c *factCtx) prefixHitRatioV0(w evalWindow) rules.Fact {
	if f, ok := c.need(catalog.SignalPromptTokensTotal); !ok {
		return f
	}
	var hits, queries float64
	unknown := false
	for r := range c.sc.replicas {
		s := c.sc.replicaGauge(catalog.SignalPrefixCacheHitRate, r)
		if s == nil {
			continue
		}
		g, err := s.Gauge(w.w)
		if err != nil || g.N < 2 {
			continue
		}
		if g.First < 0 || g.Last < 0 {
			unknown = true
			continue
		}
		p1, ok1 := c.counterAt(catalog.SignalPromptTokensTotal, r, g.From.UnixMilli())
		p2, ok2 := c.counterAt(catalog.SignalPromptTokensTotal, r, g.To.UnixMilli())
		if !ok1 || !ok2 || !(p2 > p1) {
			continue
		}
		inc, err := c.sc.replicaCounter(catalog.SignalPromptTokensTotal, r, snapshot.Window{Start: g.From, End: g.To}, nil)
		if err != nil || inc.Resets > 0 {
			continue // the gauge started again with the process
		}
		hits += g.Last*p2 - g.First*p1
		queries += p2 - p1
	}
	if !(queries > 0) {
		if unknown {
			return rules.MissingFact(errors.New("the prefix-cache hit-rate gauge is -1 (unknown)"))
		}
		return rules.MissingFact(rules.TooLittle("no replica with two scrapes of the prefix-cache hit-rate gauge and prompt tokens between them in the window"))
	}
	f := rules.Measured(min(max(hits/queries, 0), 1)).WithSource(c.sc.source(catalog.SignalPrefixCacheHitRate) + " weighted by " + c.sc.source(catalog.SignalPromptTokensTotal))
	f.Incident.Count = queries
	return f
}

// gaugeStat is a statistic of the fleet series of gauge id over w.
func (c *factCtx) gaugeStat(id catalog.SignalID, w evalWindow, what string) rules.Fact {
	g, f, ok := c.fleetGaugeStats(id, w)
	if !ok {
		return f
	}
	var v float64
	switch what {
	case "mean":
		v = g.Mean
	case "max":
		v = g.Max
	case "slope":
		v = g.Slope
		if math.IsNaN(v) {
			return rules.MissingFact(rules.TooLittle("fewer than two scrapes in the window: no trend"))
		}
	}
	f = rules.Measured(v).WithSource(c.sc.source(id))
	f.Incident.Count = float64(g.N)
	return f
}

// fleetGaugeStats is the statistics over w of the fleet series of gauge
// id, when known; else ok is false and f is the missing fact.
func (c *factCtx) fleetGaugeStats(id catalog.SignalID, w evalWindow) (g snapshot.GaugeStats, f rules.Fact, ok bool) {
	s := c.sc.fleetGauge(id)
	if s == nil {
		return g, rules.MissingFact(c.missingSignal(id)), false
	}
	g, err := s.Gauge(w.w)
	if err != nil {
		return g, rules.MissingFact(err), false
	}
	return g, rules.Fact{}, true
}

// kvMax is the largest KV usage of any replica over w.
func (c *factCtx) kvMax(w evalWindow) rules.Fact {
	gs := c.replicaGauges(catalog.SignalKVUsage, w)
	best, n := math.NaN(), 0
	for _, g := range gs {
		n += g.N
		if !(g.Max <= best) {
			best = g.Max
		}
	}
	if len(gs) == 0 {
		if !c.sc.has(catalog.SignalKVUsage) {
			return rules.MissingFact(c.missingSignal(catalog.SignalKVUsage))
		}
		return rules.MissingFact(rules.TooLittle("kv_usage: no replica scraped in the window"))
	}
	f := rules.Measured(best).WithSource(c.sc.source(catalog.SignalKVUsage))
	f.Incident.Count = float64(n)
	return f
}

// maxNumSeqs sums the latest max_num_seqs of every replica.
func (c *factCtx) maxNumSeqs(w evalWindow) rules.Fact {
	if !c.sc.has(catalog.SignalMaxNumSeqs) {
		return rules.MissingFact(c.missingSignal(catalog.SignalMaxNumSeqs))
	}
	gs := c.replicaGauges(catalog.SignalMaxNumSeqs, w)
	if len(gs) == 0 {
		return rules.MissingFact(rules.TooLittle("max_num_seqs: no replica scraped in the window"))
	}
	sum := 0.0
	for _, g := range gs {
		sum += g.Last
	}
	f := rules.Measured(sum).WithSource(c.sc.source(catalog.SignalMaxNumSeqs))
	f.Incident.Count = float64(len(gs))
	return f
}

// replicaGauges are the statistics over w of gauge id on each replica
// that has it and whose series is evaluable over w, in replica order.
func (c *factCtx) replicaGauges(id catalog.SignalID, w evalWindow) []snapshot.GaugeStats {
	var gs []snapshot.GaugeStats
	for r := range c.sc.replicas {
		s := c.sc.replicaGauge(id, r)
		if s == nil {
			continue
		}
		if g, err := s.Gauge(w.w); err == nil {
			gs = append(gs, g)
		}
	}
	return gs
}

// backlogEnd is waiting + running at the window's last scrape.
func (c *factCtx) backlogEnd(w evalWindow) rules.Fact {
	g, f, ok := c.fleetBacklog(w, "no waiting and running gauges")
	if !ok {
		return f
	}
	f = rules.Measured(g.Last).WithSource(c.sc.source(catalog.SignalWaiting) + " + " + c.sc.source(catalog.SignalRunning))
	f.Incident.Count = 1
	return f
}

// fleetBacklog is the statistics over w of the fleet's waiting + running,
// when known; else ok is false and f is the missing fact, none saying why
// when there are no waiting and running gauges.
func (c *factCtx) fleetBacklog(w evalWindow, none string) (g snapshot.GaugeStats, f rules.Fact, ok bool) {
	bl := c.sc.backlog(-1)
	if bl == nil {
		return g, rules.MissingFact(rules.NoSource("%s", none)), false
	}
	g, err := bl.Gauge(w.w)
	if err != nil {
		return g, rules.MissingFact(err), false
	}
	return g, rules.Fact{}, true
}

// replicaShareMax is the largest replica's share of completions divided by
// its fair share. The fair share of a replica is its number of engine
// cores (values of the engine label: vLLM's data parallelism) over the
// fleet's, so that a pod running two engines is expected to finish twice
// as many requests; with one engine per pod it is 1/N.
func (c *factCtx) replicaShareMax(w evalWindow) rules.Fact {
	if !c.sc.has(catalog.SignalRequestSuccess) {
		return rules.MissingFact(c.missingSignal(catalog.SignalRequestSuccess))
	}
	type rv struct {
		done, engines float64
		role          pdRole
	}
	var vals []rv
	total, engines := 0.0, 0.0
	var roleTotal, roleEngines [3]float64
	roles, pd := c.roleGroups(w)
	for r := range c.sc.replicas {
		inc, err := c.sc.replicaCounter(catalog.SignalRequestSuccess, r, w.w, nil)
		if err != nil {
			continue
		}
		e := float64(max(1, len(c.sc.engineValues(r))))
		vals = append(vals, rv{inc.Value, e, roles[r]})
		total += inc.Value
		engines += e
		roleTotal[roles[r]] += inc.Value
		roleEngines[roles[r]] += e
	}
	if len(vals) < 2 {
		return rules.MissingFact(rules.TooLittle("fewer than two replicas with completions in the window"))
	}
	if !(total > 0) {
		return rules.MissingFact(rules.TooLittle("no request finished in the window"))
	}
	top := 0.0
	for _, v := range vals {
		if !(roleTotal[v.role] > 0) {
			continue
		}
		top = math.Max(top, (v.done/roleTotal[v.role])/(v.engines/roleEngines[v.role]))
	}
	src := c.sc.source(catalog.SignalRequestSuccess) + " per replica, fair share by engine count"
	if pd {
		src += roleNote
	}
	f := rules.Measured(top).WithSource(src)
	f.Incident.Count = total
	return f
}

// roleNote ends the source of a fact that compares each replica with the
// replicas of its prefill/decode role.
const roleNote = ", within each prefill/decode role"

// roleGroups returns the prefill/decode role of every replica of the
// scope over w (roleOf; roleNone for all in an aggregated fleet) and
// whether any replica has one. Facts that compare a replica with the
// others (its share of the load, its TTFT) compare it with the replicas
// of its own role: a prefill instance serves the prompt of every request
// it takes with one output token, a decode instance its whole output, so
// their shares of the completions (each request completes on both) and
// their TTFTs (the decode instance's starts after the prefill, vLLM
// #29474) differ by role, not by health.
func (c *factCtx) roleGroups(w evalWindow) ([]pdRole, bool) {
	roles := make([]pdRole, len(c.sc.replicas))
	pd := false
	for r := range c.sc.replicas {
		roles[r], _ = c.roleOf(r, w)
		pd = pd || roles[r] != roleNone
	}
	return roles, pd
}

// engineValues returns the engine label values of replica r's completions.
func (sc *scope) engineValues(r int) []string {
	m := sc.match(r, catalog.SignalRequestSuccess)
	if !m.Found() {
		return nil
	}
	var out []string
	for _, s := range m.Family.SeriesMatching(sc.selector(m.Family)) {
		if e := s.Labels.Get("engine"); e != "" && !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out
}

// replicaTTFTRatio is the worst replica's TTFT p95 (among replicas with at
// least MinSamples requests) over the fleet's. Each replica's histogram is
// first reduced to the bounds of the fleet merge (histogram.Merge with the
// fleet's empty layout), so that a replica with finer or longer buckets
// (another vLLM version) is not compared with a fleet quantile clipped at
// a lower largest bound.
func (c *factCtx) replicaTTFTRatio(w evalWindow) rules.Fact {
	if !c.sc.has(catalog.SignalTTFT) {
		return rules.MissingFact(c.missingSignal(catalog.SignalTTFT))
	}
	if len(c.sc.replicas) < 2 {
		return rules.MissingFact(rules.TooLittle("fewer than two replicas"))
	}
	fleet, _, err := c.sc.fleetHist(catalog.SignalTTFT, w.w)
	if err != nil {
		return rules.MissingFact(err)
	}
	fq := fleet.Histogram.Quantile(0.95)
	if !(fq.Value > 0) {
		return rules.MissingFact(errors.New("fleet TTFT p95 is not positive"))
	}
	empty := fleet.Histogram.Scale(0)
	roles, pd := c.roleGroups(w)
	hs := make([]*histogram.Histogram, len(c.sc.replicas))
	var byRole [3][]histogram.Histogram
	for r := range c.sc.replicas {
		res := c.sc.replicaHist(catalog.SignalTTFT, r, w.w)
		if res.err != nil || res.inc.Histogram.Total() < c.sc.set.Thresholds.MinSamples {
			continue
		}
		h := res.inc.Histogram
		if !histogram.SameLayout(h.Bounds, fleet.Histogram.Bounds) {
			m, err := histogram.Merge(h, empty)
			if err != nil {
				continue
			}
			h = m.Histogram
		}
		hs[r] = &h
		byRole[roles[r]] = append(byRole[roles[r]], h)
	}
	// Each replica against the p95 of its role (the fleet's without
	// roles).
	var roleQ [3]float64
	for k := range roleQ {
		roleQ[k] = fq.Value
		if pd && len(byRole[k]) > 0 {
			m, err := histogram.Merge(byRole[k]...)
			if err != nil {
				return rules.MissingFact(err)
			}
			roleQ[k] = m.Histogram.Quantile(0.95).Value
		}
	}
	worst, n := math.NaN(), 0
	for r, h := range hs {
		if h == nil || !(roleQ[roles[r]] > 0) {
			continue
		}
		n++
		if q := h.Quantile(0.95).Value / roleQ[roles[r]]; !(q <= worst) {
			worst = q
		}
	}
	if n < 2 {
		return rules.MissingFact(rules.TooLittle("fewer than two replicas with >= %g requests", c.sc.set.Thresholds.MinSamples))
	}
	src := c.sc.source(catalog.SignalTTFT) + " per replica"
	if pd {
		src += " over its role's p95" + roleNote
	}
	f := rules.Measured(worst).WithSource(src)
	f.Incident.Count = fq.Count
	return f
}

// replicaTTFTMeanMedian is the median over the replicas of each one's
// mean TTFT in w, the slowest left out (replica_ttft_mean_median): the
// replicas with at least Thresholds.MinSamples requests in w, two at the
// least, so that with two replicas the other one speaks.
func (c *factCtx) replicaTTFTMeanMedian(w evalWindow) rules.Fact {
	if !c.sc.has(catalog.SignalTTFT) {
		return rules.MissingFact(c.missingSignal(catalog.SignalTTFT))
	}
	if _, pd := c.roleGroups(w); pd {
		return rules.MissingFact(errors.New("prefill and decode replicas: their TTFTs measure different spans, and a median would mix them"))
	}
	var means []float64
	for r := range c.sc.replicas {
		res := c.sc.replicaHist(catalog.SignalTTFT, r, w.w)
		if res.err != nil || res.inc.Histogram.Total() < c.sc.set.Thresholds.MinSamples {
			continue
		}
		if m := res.inc.Histogram.Mean(); !math.IsNaN(m) {
			means = append(means, m)
		}
	}
	if len(means) < 2 {
		return rules.MissingFact(rules.TooLittle("fewer than two replicas with >= %g requests", c.sc.set.Thresholds.MinSamples))
	}
	slices.Sort(means)
	means = means[:len(means)-1] // the slowest left out
	med := means[len(means)/2]
	if len(means)%2 == 0 {
		med = (means[len(means)/2-1] + med) / 2
	}
	f := rules.Measured(med).WithSource(fmt.Sprintf("%s _sum / _count per replica, median of %d replicas (the slowest of %d left out)",
		c.sc.source(catalog.SignalTTFT), len(means), len(means)+1))
	f.Incident.Count = float64(len(means))
	return f
}

// burst is the peak arrival rate over one scrape interval divided by the
// window's mean arrival rate (arrivals per interval from arrivalsIn, the
// same estimate as the noise and dispersion use). Without completions it is
// the peak of waiting over its mean.
func (c *factCtx) burst(w evalWindow) rules.Fact {
	if w.lifetime {
		return rules.MissingFact(rules.TooLittle("lifetime counters: no intervals to find bursts in"))
	}
	step := c.st.interval
	if step <= 0 {
		return rules.MissingFact(rules.TooLittle("unknown scrape interval"))
	}
	if c.sc.backlog(-1) == nil {
		return rules.MissingFact(rules.NoSource("no waiting and running gauges"))
	}
	var rates []float64
	totalA, totalT := 0.0, 0.0
	for _, g := range c.scrapeIntervals(w.w) {
		if a, secs, ok := c.arrivalsIn(g); ok {
			rates = append(rates, a/secs)
			totalA += a
			totalT += secs
		}
	}
	if len(rates) >= 4 && totalA > 0 {
		mean := totalA / totalT
		f := rules.Measured(maxOf(rates) / mean).WithSource(fmt.Sprintf("peak %v arrival rate (completions + growth of waiting + running) / window mean", step))
		f.Incident.Count = float64(len(rates))
		return f
	}
	g, f, ok := c.fleetGaugeStats(catalog.SignalWaiting, w)
	if !ok {
		return f
	}
	if !(g.Mean > 0) {
		return rules.MissingFact(rules.TooLittle("no arrivals estimate and no waiting request in the window"))
	}
	f = rules.Measured(g.Max / g.Mean).WithSource("peak / mean of " + c.sc.source(catalog.SignalWaiting))
	f.Incident.Count = float64(g.N)
	return f
}

// replicaDown reports whether replica r has no scrape within w (it was
// restarting or gone).
func (c *factCtx) replicaDown(r int, w snapshot.Window) bool {
	for _, s := range c.sc.replicas[r].t.Scrapes {
		if !s.Time.Before(w.Start) && !s.Time.After(w.End) {
			return false
		}
	}
	return true
}

func maxOf(xs []float64) float64 {
	m := math.Inf(-1)
	for _, x := range xs {
		m = math.Max(m, x)
	}
	return m
}

// corrRunningTPOT correlates the fleet's running sequences with its TPOT
// p95 (ITL p95 when TPOT is missing) over the timeline intervals of the
// incident window.
func (c *factCtx) corrRunningTPOT() rules.Fact {
	if c.tl == nil || c.inc.lifetime {
		return rules.MissingFact(rules.TooLittle("no timeline (fewer than three scrapes per replica)"))
	}
	run := c.tl.fleet(catalog.SignalRunning)
	lat, latID := c.tl.fleet(catalog.SignalTPOT), catalog.SignalTPOT
	if lat == nil {
		lat, latID = c.tl.fleet(catalog.SignalITL), catalog.SignalITL
	}
	if run == nil || lat == nil {
		return rules.MissingFact(rules.TooLittle("no running or TPOT/ITL timeline"))
	}
	var xs, ys []float64
	for i, p := range lat.Points {
		t := p.T
		if t.After(c.inc.w.Start) && !t.After(c.inc.w.End) {
			x, y := float64(run.Points[i].Value), float64(p.Value)
			if math.IsNaN(x) || math.IsNaN(y) {
				continue
			}
			xs, ys = append(xs, x), append(ys, y)
		}
	}
	if len(xs) < 5 {
		return rules.MissingFact(rules.TooLittle("only %d intervals with running and %s in the incident window (need 5)", len(xs), latID))
	}
	r := stat.Correlation(xs, ys, nil)
	if math.IsNaN(r) {
		return rules.MissingFact(fmt.Errorf("running or %s constant over the incident window", latID))
	}
	f := rules.Measured(r).WithSource(fmt.Sprintf("Pearson correlation of fleet running and %s p95 per %v interval", latID, c.tl.step))
	f.Incident.Count = float64(len(xs))
	f.Incident.Window = c.inc.text()
	return f
}
