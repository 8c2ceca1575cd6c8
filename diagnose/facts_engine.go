package diagnose

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/rules"
	"github.com/whyslow/whyslow/snapshot"
)

// This file measures the engine progress and admission facts of
// rules/facts_engine.go: runs of scrapes at which a replica holds
// requests and none of its counters advances (engine-stall,
// stale-gauges), the deferred share of the queue and the admission
// rejections.

// stallMinScrapes is the fewest consecutive scrapes of a no-progress run:
// three scrapes are two intervals in a row without a completion or a
// token, which a serving engine with requests in flight does not show.
const stallMinScrapes = 3

// stallMinSpan is the shortest no-progress run that counts whatever the
// scrape interval: a full minute without a completion or a token while
// requests are in flight. A serving engine emits a token every step (tens
// of milliseconds) and runs decodes between the chunks of a long prefill,
// so scrapes a minute apart need two scrapes, not three, to show a stall
// of a minute or two.
const stallMinSpan = time.Minute

// progressCounters advance whenever an engine serves: completions, output
// tokens and prefilled prompt tokens.
var progressCounters = []catalog.SignalID{catalog.SignalRequestSuccess, catalog.SignalGenerationTokensTotal, catalog.SignalPromptTokensTotal}

// arrivalCounters advance when clients arrive or their responses end,
// outside the engine.
var arrivalCounters = []catalog.SignalID{catalog.SignalHTTPRequests, catalog.SignalGatewayRequests}

// engineJobs adds the facts of this file to js.
func (c *factCtx) engineJobs(js *factJobs) {
	js.add(rules.StalledReplicas, func() rules.Fact { return c.progressFact(rules.StalledReplicas) })
	js.add(rules.FrozenGaugeReplicas, func() rules.Fact { return c.progressFact(rules.FrozenGaugeReplicas) })
	js.add(rules.FrozenQuietReplicas, func() rules.Fact { return c.progressFact(rules.FrozenQuietReplicas) })
	js.add(rules.FrozenGaugeShare, func() rules.Fact { return c.progressFact(rules.FrozenGaugeShare) })
	js.add(rules.StallSuspected, func() rules.Fact { return c.progressFact(rules.StallSuspected) })
	js.add(rules.DeferredShare, func() rules.Fact { return c.deferredShare(c.inc) })
	js.add(rules.DeferralQueueShare, func() rules.Fact { return c.deferralQueueShare(c.inc) })
	js.add(rules.AdmissionRejectionShare, func() rules.Fact {
		return c.both(rules.AdmissionRejectionShare, c.admissionRejectionShare)
	})
}

// replicaProgress is what the incident window's scrapes of one replica
// show about its progress.
type replicaProgress struct {
	name    string
	known   bool // waiting, running and a progress counter are there
	scrapes int  // scrapes in the window
	// longest is the longest no-progress run (scrapes); stalled and
	// frozen classify the runs of at least stallMinScrapes: live gauges
	// or arrivals (stalled), nothing moving (frozen); quiet is frozen with
	// an arrival counter that stayed flat and requests shown running.
	longest                int
	stalled, frozen, quiet bool
	// suspected: fewer scrapes than a run needs, and the last one shows
	// requests waiting, none running, no counter advancing before it.
	suspected bool
	// inflight is the mean waiting + running over the window's scrapes.
	inflight float64
}

// scrapeSlack is how far a sample's time may lie from its scrape's time
// and still belong to that scrape.
const scrapeSlack = int64(time.Second / time.Millisecond)

// at returns the value of the sample of s taken at the scrape at t (ms):
// the latest within scrapeSlack of t, NaN when that scrape did not carry
// the series (a value from an older scrape is not this scrape's).
func at(s *snapshot.Series, t int64) float64 {
	if s == nil {
		return math.NaN()
	}
	i := sort.Search(len(s.T), func(i int) bool { return s.T[i] > t+scrapeSlack })
	if i == 0 || s.T[i-1] < t-scrapeSlack {
		return math.NaN()
	}
	return s.V[i-1]
}

// counterAt is the sum over the series of counter id on replica r of
// their values at t; ok is false when the replica has no such series.
func (c *factCtx) counterAt(id catalog.SignalID, r int, t int64) (v float64, ok bool) {
	m := c.sc.match(r, id)
	if !m.Found() {
		return 0, false
	}
	for _, s := range m.Family.SeriesMatching(c.sc.selector(m.Family)) {
		if x := at(s, t); !math.IsNaN(x) {
			v += x
			ok = true
		}
	}
	return v, ok
}

// asleep reports whether replica r's engine reports itself asleep
// (engine_sleep_state{sleep_state="awake"} == 0) at t.
func (c *factCtx) asleep(r int, t int64) bool {
	m := c.sc.match(r, catalog.SignalEngineSleepState)
	if !m.Found() {
		return false
	}
	sel := map[string]string{"sleep_state": "awake"}
	for k, v := range c.sc.selector(m.Family) {
		sel[k] = v
	}
	for _, s := range m.Family.SeriesMatching(sel) {
		if at(s, t) == 0 {
			return true
		}
	}
	return false
}

// replicaProgressIn reads replica r's scrapes in w.
func (c *factCtx) replicaProgressIn(r int, w evalWindow) replicaProgress {
	p := replicaProgress{name: c.sc.replicas[r].t.Name}
	wait, run := c.sc.replicaGauge(catalog.SignalWaiting, r), c.sc.replicaGauge(catalog.SignalRunning, r)
	if wait == nil || run == nil {
		return p
	}
	kv := c.sc.replicaGauge(catalog.SignalKVUsage, r)
	var times []int64
	for _, s := range c.sc.replicas[r].t.Scrapes {
		if w.w.IsZero() || (!s.Time.Before(w.w.Start) && !s.Time.After(w.w.End)) {
			times = append(times, s.Time.UnixMilli())
		}
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	type point struct {
		t             int64 // Unix ms
		wait, run, kv float64
		progress      []float64
		arrivals      []float64
		hasArrivals   bool // an arrival counter was scraped
		asleep        bool
	}
	var pts []point
	for _, t := range times {
		pt := point{t: t, wait: at(wait, t), run: at(run, t), kv: at(kv, t), asleep: c.asleep(r, t)}
		if math.IsNaN(pt.wait) || math.IsNaN(pt.run) {
			continue
		}
		for _, id := range progressCounters {
			v, ok := c.counterAt(id, r, t)
			if ok {
				p.known = true
			}
			pt.progress = append(pt.progress, v)
		}
		for _, id := range arrivalCounters {
			v, ok := c.counterAt(id, r, t)
			pt.hasArrivals = pt.hasArrivals || ok
			pt.arrivals = append(pt.arrivals, v)
		}
		pts = append(pts, pt)
		p.inflight += pt.wait + pt.run
	}
	p.scrapes = len(pts)
	if !p.known || p.scrapes == 0 {
		p.known = false
		return p
	}
	p.inflight /= float64(p.scrapes)
	busy := func(x point) bool { return !x.asleep && x.wait+x.run > 0 }
	same := func(a, b []float64) bool {
		for i := range a {
			if a[i] != b[i] {
				return false
			}
		}
		return true
	}
	stuck := func(i int) bool { // no progress from pts[i-1] to pts[i], both busy
		return busy(pts[i-1]) && busy(pts[i]) && same(pts[i-1].progress, pts[i].progress)
	}
	if p.scrapes < stallMinScrapes {
		last := pts[p.scrapes-1]
		p.suspected = !last.asleep && last.wait > 0 && last.run == 0 && (p.scrapes == 1 || stuck(p.scrapes-1))
		return p
	}
	judge := func(from, to int) { // the run pts[from..to]
		n := to - from + 1
		long := n >= 2 && time.Duration(pts[to].t-pts[from].t)*time.Millisecond >= stallMinSpan
		if n < stallMinScrapes && !long {
			return
		}
		p.longest = max(p.longest, n)
		// The run's first interval may hold the change into it (the
		// last serving scrape, then the stuck state): the gauges are
		// judged from its second scrape on, or on its one interval when
		// a minute long.
		live, arrived := false, false
		first := from + 2
		if n == 2 {
			first = from + 1
		}
		for i := first; i <= to; i++ {
			a, b := pts[i-1], pts[i]
			live = live || a.wait != b.wait || a.run != b.run || (a.kv != b.kv && !math.IsNaN(a.kv+b.kv))
			arrived = arrived || b.wait > a.wait || !same(a.arrivals, b.arrivals)
		}
		if live || arrived {
			p.stalled = true
			return
		}
		p.frozen = true
		// Quiet: an arrival counter scraped all along stayed flat while
		// the gauges show requests running.
		quiet := pts[to].run > 0
		for i := from + 1; i <= to; i++ {
			quiet = quiet && pts[i].hasArrivals
		}
		p.quiet = quiet
	}
	from := 0
	for i := 1; i < len(pts); i++ {
		if !stuck(i) {
			judge(from, i-1)
			from = i
		}
	}
	judge(from, len(pts)-1)
	return p
}

// progressFact measures one of the run facts over the incident window.
func (c *factCtx) progressFact(id rules.FactID) rules.Fact {
	var ps []replicaProgress
	for r := range c.sc.replicas {
		if p := c.replicaProgressIn(r, c.inc); p.known {
			ps = append(ps, p)
		}
	}
	if len(ps) == 0 {
		return rules.MissingFact(rules.TooLittle("no replica with waiting and running gauges and a progress counter (request_success, generation_tokens, prompt_tokens) in the window"))
	}
	longest, most := 0, 0
	for _, p := range ps {
		longest, most = max(longest, p.longest), max(most, p.scrapes)
	}
	if id != rules.StallSuspected && most < stallMinScrapes {
		return rules.MissingFact(rules.TooLittle("%d scrape(s) per replica in the window, %d needed: a single scrape cannot show flat counters (see stall_suspected)", most, stallMinScrapes))
	}
	var names []string
	n := 0.0
	pick := func(p replicaProgress) bool {
		switch id {
		case rules.StalledReplicas:
			return p.stalled
		case rules.FrozenGaugeReplicas, rules.FrozenGaugeShare:
			return p.frozen
		case rules.FrozenQuietReplicas:
			return p.quiet
		}
		return p.suspected
	}
	var frozenIn, allIn float64
	for _, p := range ps {
		allIn += p.inflight
		if pick(p) {
			n++
			names = append(names, p.name)
			frozenIn += p.inflight
		}
	}
	src := fmt.Sprintf("runs of >= %d scrapes (or of two a minute apart) without a completion or token while requests are in flight (longest %d scrapes)", stallMinScrapes, longest)
	if id == rules.StallSuspected {
		src = "waiting > 0 and running == 0 at the last scrape, counters flat: a suspicion, since fewer than " +
			fmt.Sprint(stallMinScrapes) + " scrapes cannot show flat counters"
	}
	if len(names) > 0 {
		src += "; " + strings.Join(names, ", ")
	}
	f := rules.Measured(n)
	if id == rules.FrozenGaugeShare {
		v := 0.0
		if allIn > 0 {
			v = frozenIn / allIn
		}
		f = rules.Measured(v)
	}
	f.Incident.Count = float64(len(ps))
	f.Incident.Window = c.inc.text()
	return f.WithSource(src)
}

// deferredShare is the deferred waiting requests over all waiting
// requests, summed over the replicas' scrapes in w.
func (c *factCtx) deferredShare(w evalWindow) rules.Fact {
	return c.deferralFact(w, false)
}

// deferralQueueShare is the share of the waiting requests, summed over
// the replicas' scrapes in w, that deferral accounts for. Where some
// replicas deferred requests in w and others did not, it is the share
// waiting on the deferring replicas: the others, under the same load,
// show what the queue is without deferral, at any scrape interval (scrapes
// a minute apart may miss episodes shorter than that and see only the
// backlog a release hands on). Where every replica deferred, it is the
// share waiting at scrapes where the replica deferred, then or at its
// previous scrape.
func (c *factCtx) deferralQueueShare(w evalWindow) rules.Fact {
	return c.deferralFact(w, true)
}

// deferralFact measures deferredShare or, with episodes, deferralQueueShare.
func (c *factCtx) deferralFact(w evalWindow, episodes bool) rules.Fact {
	var deferred, adjacent, waiting, onDeferring float64
	found, deferring, others := false, 0, 0
	for r := range c.sc.replicas {
		d, ok := c.deferredGauge(r)
		wait := c.sc.replicaGauge(catalog.SignalWaiting, r)
		if !ok || wait == nil {
			continue
		}
		found = true
		var mine float64   // waiting on this replica
		did := false       // it deferred a request at a scrape in w
		prev := math.NaN() // deferred at the replica's previous scrape
		for _, s := range c.sc.replicas[r].t.Scrapes {
			t := s.Time.UnixMilli()
			y := at(d, t)
			in := w.w.IsZero() || !(s.Time.Before(w.w.Start) || s.Time.After(w.w.End))
			did = did || (in && y > 0)
			if x := at(wait, t); in && x > 0 {
				mine += x
				if y > 0 {
					deferred += y
				}
				if y > 0 || prev > 0 {
					adjacent += x
				}
			}
			prev = y
		}
		waiting += mine
		if did {
			deferring++
			onDeferring += mine
		} else {
			others++
		}
	}
	if !found {
		return rules.MissingFact(c.missingSignal(catalog.SignalWaitingByReason))
	}
	held := deferred
	src := c.sc.source(catalog.SignalWaitingByReason) + `{reason="deferred"} / ` + c.sc.source(catalog.SignalWaiting)
	switch {
	case episodes && deferring > 0 && others > 0:
		held = onDeferring
		src = fmt.Sprintf("%s on the %d replicas whose %s{reason=\"deferred\"} > 0 at a scrape of the window (%d did not defer) / all %s", c.sc.source(catalog.SignalWaiting), deferring, c.sc.source(catalog.SignalWaitingByReason), others, c.sc.source(catalog.SignalWaiting))
	case episodes:
		held = adjacent
		src = c.sc.source(catalog.SignalWaiting) + ` on replicas whose ` + c.sc.source(catalog.SignalWaitingByReason) + `{reason="deferred"} > 0 at that scrape or the one before / all ` + c.sc.source(catalog.SignalWaiting)
	}
	if !(waiting > 0) {
		// A share of no waiting request is unknown, not 0: scrapes a
		// minute apart may miss every episode of a deferral that drains
		// within the minute.
		return rules.MissingFact(rules.TooLittle("no request was waiting at a scrape of the window"))
	}
	f := rules.Measured(math.Min(1, held/waiting)).WithSource(src)
	f.Incident.Count, f.Incident.Window = waiting, w.text()
	return f
}

// admissionRejectionShare is the requests rejected at admission over
// those rejected plus those finished, over w.
func (c *factCtx) admissionRejectionShare(w evalWindow) rules.Fact {
	if f, ok := c.need(catalog.SignalAdmissionRejections, catalog.SignalRequestSuccess); !ok {
		return f
	}
	rej, err := c.sc.fleetCounter(catalog.SignalAdmissionRejections, w.w, nil)
	if err != nil {
		return rules.MissingFact(err)
	}
	done, err := c.sc.fleetCounter(catalog.SignalRequestSuccess, w.w, nil)
	if err != nil {
		return rules.MissingFact(err)
	}
	total := rej.Value + done.Value
	if !(total > 0) {
		return rules.MissingFact(rules.TooLittle("no request finished or was rejected in the window"))
	}
	f := rules.Measured(rej.Value / total).WithSource(c.sc.source(catalog.SignalAdmissionRejections) + " / (itself + " + c.sc.source(catalog.SignalRequestSuccess) + ")")
	f.Incident.Count = total
	return f
}

// deferredGauge is replica r's num_requests_waiting_by_reason{reason=
// "deferred"} summed over its series; ok is false when the replica does
// not export the gauge (before vLLM 0.13).
func (c *factCtx) deferredGauge(r int) (s *snapshot.Series, ok bool) {
	v := c.deferred.get(r, func() deferredSeries {
		m := c.sc.match(r, catalog.SignalWaitingByReason)
		if !m.Found() {
			return deferredSeries{}
		}
		sel := map[string]string{"reason": "deferred"}
		for k, v := range c.sc.selector(m.Family) {
			sel[k] = v
		}
		return deferredSeries{m.Family.Aggregate(sel, snapshot.AggregateSum), true}
	})
	return v.s, v.ok
}

// deferredSeries is a replica's deferred gauge, and whether it has one.
type deferredSeries struct {
	s  *snapshot.Series
	ok bool
}
