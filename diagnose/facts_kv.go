package diagnose

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/histogram"
	"github.com/whyslow/whyslow/rules"
	"github.com/whyslow/whyslow/snapshot"
)

// This file measures the facts that judge a cause where it acts rather
// than over the whole fleet: the KV cache of the replicas that preempted
// (kv_usage_preempting, kv_full_share_preempting) and the fleet without
// its hot replicas (ttft_p95_without_hot, ttft_mean_without_hot,
// tpot_p95_without_hot, tpot_mean_without_hot).

// kvJobs adds the facts of this file to js.
func (c *factCtx) kvJobs(js *factJobs) {
	both := func(id rules.FactID, f func(evalWindow) rules.Fact) {
		js.add(id, func() rules.Fact { return c.both(id, f) })
	}
	both(rules.KVUsagePreempting, func(w evalWindow) rules.Fact { return c.kvPreempting(w, false) })
	both(rules.KVFullSharePreempting, func(w evalWindow) rules.Fact { return c.kvPreempting(w, true) })
	js.add(rules.TTFTP95WithoutHot, func() rules.Fact { return c.withoutHot(catalog.SignalTTFT, false) })
	js.add(rules.TTFTMeanWithoutHot, func() rules.Fact { return c.withoutHot(catalog.SignalTTFT, true) })
	js.add(rules.TPOTP95WithoutHot, func() rules.Fact { return c.withoutHot(catalog.SignalTPOT, false) })
	js.add(rules.TPOTMeanWithoutHot, func() rules.Fact { return c.withoutHot(catalog.SignalTPOT, true) })
}

// kvPreempting is the KV usage of the replicas that preempted within w:
// at each scrape interval in which a replica's preemption counter rose,
// the higher of its KV usage at the two scrapes that bound the interval,
// averaged over those intervals; or (full) the share of those replicas'
// scrapes in w with KV usage at or above Thresholds.KVHigh.
func (c *factCtx) kvPreempting(w evalWindow, full bool) rules.Fact {
	for _, id := range []catalog.SignalID{catalog.SignalKVUsage, catalog.SignalPreemptions} {
		if !c.sc.has(id) {
			return rules.MissingFact(c.missingSignal(id))
		}
	}
	if w.lifetime {
		return rules.MissingFact(rules.TooLittle("lifetime counters: no scrape intervals to find preemptions in"))
	}
	lo, hi := w.w.Start.UnixMilli(), w.w.End.UnixMilli()
	high := c.sc.set.Thresholds.KVHigh
	var sum float64
	var n, scrapes, atCeiling, replicas int
	for r := range c.sc.replicas {
		ps, kv := c.sc.replicaGauge(catalog.SignalPreemptions, r), c.sc.replicaGauge(catalog.SignalKVUsage, r)
		if ps == nil || kv == nil {
			continue
		}
		preempted := false
		for i := 1; i < len(ps.T); i++ {
			if ps.T[i] <= lo || ps.T[i] > hi {
				continue
			}
			d := ps.V[i] - ps.V[i-1]
			if d < 0 { // a reset: the counter restarted from 0
				d = ps.V[i]
			}
			if !(d > 0) {
				continue
			}
			a, okA := nearest(kv, ps.T[i-1])
			b, okB := nearest(kv, ps.T[i])
			if !okA && !okB {
				continue
			}
			var v float64
			switch {
			case okA && okB:
				v = math.Max(a, b)
			case okA:
				v = a
			default:
				v = b
			}
			sum += v
			n++
			preempted = true
		}
		if !preempted {
			continue
		}
		replicas++
		for i, t := range kv.T {
			if t > lo && t <= hi && !math.IsNaN(kv.V[i]) {
				scrapes++
				if kv.V[i] >= high {
					atCeiling++
				}
			}
		}
	}
	if n == 0 {
		return rules.MissingFact(rules.TooLittle("no replica preempted a request in the window"))
	}
	var f rules.Fact
	if full {
		if scrapes == 0 {
			return rules.MissingFact(rules.TooLittle("no KV usage scrape of the preempting replicas in the window"))
		}
		f = rules.Measured(float64(atCeiling) / float64(scrapes))
		f.Incident.Count = float64(scrapes)
		f.Source = fmt.Sprintf("%s of the %d replicas that preempted: share of their scrapes at >= %g", c.sc.source(catalog.SignalKVUsage), replicas, high)
		return f
	}
	f = rules.Measured(sum / float64(n))
	f.Incident.Count = float64(n)
	f.Source = fmt.Sprintf("%s at the %d scrape intervals in which %s rose, on %d replicas", c.sc.source(catalog.SignalKVUsage), n, c.sc.source(catalog.SignalPreemptions), replicas)
	return f
}

// nearest returns the value of s at the sample nearest to t (ms), when
// one lies within half a scrape interval.
func nearest(s *snapshot.Series, t int64) (float64, bool) {
	best, bestD := math.NaN(), int64(math.MaxInt64)
	// The series is short per window; a binary search finds the place.
	i, j := 0, len(s.T)
	for i < j {
		h := int(uint(i+j) >> 1)
		if s.T[h] < t {
			i = h + 1
		} else {
			j = h
		}
	}
	for _, k := range []int{i - 1, i} {
		if k >= 0 && k < len(s.T) {
			if d := abs64(s.T[k] - t); d < bestD && !math.IsNaN(s.V[k]) {
				best, bestD = s.V[k], d
			}
		}
	}
	return best, !math.IsNaN(best)
}

// hotReplicas returns the replicas whose share of the incident window's
// arrivals is at least Thresholds.Hotspot times their fair share (as in
// replica_load_share_max), and the replicas with a load measured.
func (c *factCtx) hotReplicas() (hot, measured []int, err error) {
	loads, err := c.replicaLoads(c.inc)
	if err != nil {
		return nil, nil, err
	}
	th := c.sc.set.Thresholds.Hotspot
	for _, l := range loads {
		measured = append(measured, l.r)
		if l.share >= th {
			hot = append(hot, l.r)
		}
	}
	if len(hot) == 0 {
		return nil, nil, fmt.Errorf("no replica takes >= %gx its fair share of the arrivals: no hot spot to leave out", th)
	}
	return hot, measured, nil
}

// withoutHot is a fleet measure of the replicas that are not hot in the
// incident window, in both windows: the TTFT or TPOT p95 of their
// histograms merged as the fleet's are, or (mean) the mean TTFT of the
// merged histogram, or the mean time per output token from their decode
// time and generation token sums (as tpot_mean).
func (c *factCtx) withoutHot(sig catalog.SignalID, mean bool) rules.Fact {
	fromSums := sig == catalog.SignalTPOT && mean // as tpotMean: no TPOT histogram's mean
	need := []catalog.SignalID{sig}
	if fromSums {
		need = []catalog.SignalID{catalog.SignalDecodeTime, catalog.SignalGenerationTokens}
	}
	for _, id := range need {
		if !c.sc.has(id) {
			return rules.MissingFact(c.missingSignal(id))
		}
	}
	hot, measured, err := c.hotReplicas()
	if err != nil {
		return rules.MissingFact(err)
	}
	var rest []int
	for _, r := range measured {
		if !slices.Contains(hot, r) {
			rest = append(rest, r)
		}
	}
	if len(rest) == 0 {
		return rules.MissingFact(errors.New("every replica is hot: no rest of the fleet to compare"))
	}
	// merged is the histogram of id over the rest in w.
	merged := func(id catalog.SignalID, w evalWindow) (histogram.Histogram, error) {
		var hs []histogram.Histogram
		for _, r := range rest {
			res := c.sc.replicaHist(id, r, w.w)
			if res.err == nil && res.inc.Histogram.Total() > 0 {
				hs = append(hs, res.inc.Histogram)
			}
		}
		if len(hs) == 0 {
			return histogram.Histogram{}, rules.TooLittle("no %s observation outside the hot replicas", id)
		}
		m, err := histogram.Merge(hs...)
		if err != nil {
			return histogram.Histogram{}, err
		}
		return m.Histogram, nil
	}
	one := func(w evalWindow) (rules.Fact, error) {
		if fromSums {
			dec, err := merged(catalog.SignalDecodeTime, w)
			if err != nil {
				return rules.Fact{}, err
			}
			gen, err := merged(catalog.SignalGenerationTokens, w)
			if err != nil {
				return rules.Fact{}, err
			}
			v := catalog.MeanTPOTFromSums(dec.Sum, gen.Sum, gen.Total())
			if math.IsNaN(v) {
				return rules.Fact{}, rules.TooLittle("no output token decoded outside the hot replicas (or _sum missing)")
			}
			f := rules.Measured(v)
			f.Incident.Count = gen.Total()
			return f, nil
		}
		h, err := merged(sig, w)
		if err != nil {
			return rules.Fact{}, err
		}
		if mean {
			f := rules.Measured(h.Mean())
			f.Incident.Count = h.Count
			return f, nil
		}
		e := h.Quantile(0.95)
		f := rules.Measured(e.Value).WithBounds(e.Lower, e.Upper)
		f.Incident.Count = e.Count
		return f, nil
	}
	out, err := one(c.inc)
	if err != nil {
		return rules.MissingFact(err)
	}
	out.Incident.Window = c.inc.text()
	var names []string
	for _, r := range hot {
		names = append(names, c.sc.replicas[r].t.Name)
	}
	src := c.sc.source(sig)
	if fromSums {
		src = catalog.TPOTFallback
	}
	out.Source = fmt.Sprintf("%s of the %d replicas other than %s", src, len(rest), strings.Join(names, ", "))
	if c.base.ok {
		if b, err := one(c.base); err == nil {
			out.Baseline = b.Incident
			out.Baseline.Window = c.base.text()
		}
	}
	return out
}
