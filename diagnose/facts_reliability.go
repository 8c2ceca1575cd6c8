package diagnose

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/rules"
	"github.com/whyslow/whyslow/snapshot"
)

// This file computes the facts of requests that do not complete and that
// vLLM counts nowhere (the article's fourth symptom): client abandonment
// hidden by vLLM V1's accounting (vLLM issues #31503 and #55634: an
// abandoned request leaves no abort count and no per-request histogram
// observation, but its prefill counts in vllm:prompt_tokens_total and its
// first token in TTFT), restarts and the requests lost with them, OOM
// kills and HTTP errors.
//
// Every estimate works on each replica's process lifetimes inside the
// window: the window's edges and each restart cut it into segments, and
// the requests running at a segment's start (prefilled before it, finished
// inside) and at its end (prefilled inside, not finished) are corrected
// for with the running gauge. Counters and gauges of one replica are
// sampled by the same scrape, so the edges agree.
//
// Lifetime counters (one scrape per replica) are one segment from the
// process start, when nothing was in flight, to the scrape: the same
// estimates hold for the process's whole life, with no time to place
// them in. The requests waiting at the scrape count as having had a first
// token (a preempted request has one), so the count is a lower bound.

// inflightUncertainty is the least relative uncertainty of the mean prompt
// length of the requests in flight at the edges (their prompts are not
// observed): 5%, or two standard errors of a mean of n lengths whose
// coefficient of variation is about 1 (vLLM prompt lengths are roughly
// log-normal with sigma 0.7-0.9), whichever is larger.
func inflightUncertainty(n float64) float64 {
	if !(n > 0) {
		return 0.05
	}
	return math.Max(0.05, 2/math.Sqrt(n))
}

// firstTokenSlack is the share of the requests in flight at the edges
// that the TTFT-minus-E2E count may misjudge: a running request still in
// its chunked prefill has no first token yet, a preempted one waiting has
// one.
const firstTokenSlack = 0.05

// replicaLife is one replica over one window, split at its restarts.
type replicaLife struct {
	name  string
	index int // in the scope's replicas
	// runStart and runEnd are the running requests at the window's edge
	// samples; runBefore those at the last scrape before each restart,
	// and lostBefore the waiting + running there.
	runStart, runEnd float64
	// waitEnd is the waiting requests at the window's last sample.
	waitEnd    float64
	runBefore  []float64
	lostBefore []float64
	// before and after are the times (Unix ms) of the last scrape before
	// and the first after each restart.
	before, after []int64
	restarts      int
	gaps          int // scrape intervals longer than twice the usual one
	unserved      float64
	// ok is false when the running gauge does not cover the window.
	ok bool
}

// life reads replica r over w: edges, restarts (a change of
// process_start_time_seconds or, where the process start time is not
// exposed (V0, multiprocess mode), the request, prompt-token and
// generation-token counters all dropping together), the
// requests in flight before each restart, scrape gaps, and the requests
// that left the backlog beyond the completions of an interval.
func (c *factCtx) life(r int, w snapshot.Window) replicaLife {
	sc := c.sc
	l := replicaLife{name: sc.replicas[r].t.Name}
	run := sc.replicaGauge(catalog.SignalRunning, r)
	if run == nil {
		return l
	}
	g, err := run.Gauge(w)
	if err != nil {
		return l
	}
	l.ok = true
	l.runStart, l.runEnd = g.First, g.Last
	lo, hi := g.From.UnixMilli(), g.To.UnixMilli()
	var idx []int
	for i, t := range run.T {
		if t >= lo && t <= hi && !math.IsNaN(run.V[i]) {
			idx = append(idx, i)
		}
	}
	at := func(s *snapshot.Series) map[int64]float64 {
		if s == nil {
			return nil
		}
		m := make(map[int64]float64, len(s.T))
		for i, t := range s.T {
			m[t] = s.V[i]
		}
		return m
	}
	starts := at(sc.replicaGauge(catalog.SignalProcessStart, r))
	waiting := at(sc.replicaGauge(catalog.SignalWaiting, r))
	if len(idx) > 0 {
		l.waitEnd = waiting[run.T[idx[len(idx)-1]]]
	}
	var counters []map[int64]float64
	var done map[int64]float64 // completions
	for _, id := range []catalog.SignalID{catalog.SignalRequestSuccess, catalog.SignalPromptTokensTotal, catalog.SignalGenerationTokensTotal} {
		if m := sc.match(r, id); m.Found() {
			v := at(m.Family.Aggregate(sc.selector(m.Family), snapshot.AggregateSum))
			counters = append(counters, v)
			if id == catalog.SignalRequestSuccess {
				done = v
			}
		}
	}
	step := c.st.interval.Milliseconds()
	for k := 1; k < len(idx); k++ {
		i, j := idx[k-1], idx[k]
		t0, t1 := run.T[i], run.T[j]
		if step > 0 && t1-t0 > 2*step {
			l.gaps++
		}
		restarted := false
		a, okA := starts[t0]
		b, okB := starts[t1]
		if okA && okB && !math.IsNaN(a) && !math.IsNaN(b) {
			restarted = a != b
		} else {
			// No process start time (V0, multiprocess mode): a restart
			// resets every counter at once; one counter dropping alone
			// is a glitch of that series.
			drops, compared := 0, 0
			for _, m := range counters {
				a, ok0 := m[t0]
				b, ok1 := m[t1]
				if ok0 && ok1 && a > 0 {
					compared++
					if b < a {
						drops++
					}
				}
			}
			restarted = drops > 0 && drops == compared
		}
		w0 := waiting[t0]
		if restarted {
			l.restarts++
			l.runBefore = append(l.runBefore, run.V[i])
			l.lostBefore = append(l.lostBefore, run.V[i]+w0)
			l.before, l.after = append(l.before, t0), append(l.after, t1)
			continue
		}
		if done != nil && waiting != nil {
			a, ok0 := done[t0]
			b, ok1 := done[t1]
			w1, okw := waiting[t1]
			if ok0 && ok1 && okw {
				fell := (run.V[i] + w0) - (run.V[j] + w1)
				l.unserved += math.Max(0, fell-(b-a))
			}
		}
	}
	return l
}

// inflight is the correction of a segment count for the requests running
// at the segments' edges: + those running at a segment's start, - those at
// its end; plus and minus are the two sums apart.
func (l replicaLife) inflight() (plus, minus float64) {
	minus = l.runEnd
	for _, v := range l.runBefore {
		minus += v
	}
	return l.runStart, minus
}

// hiddenEstimate is one replica's or the fleet's hidden-abandonment
// inputs over a window.
type hiddenEstimate struct {
	prompt, promptSum, finished float64 // increase of prompt_tokens_total; request_prompt_tokens _sum and _count
	ttft, e2e                   float64 // TTFT and E2E observations
	plus, minus                 float64 // in-flight corrections
	// waiting is, for lifetime counters, the requests waiting at the
	// scrape (they may have had a first token: see abandonedAfterFirstToken).
	waiting float64
	// lifetime: the counters are since each process started.
	lifetime           bool
	tokensOK, countsOK bool
	replicas           int
	resets             int
	// top is the replica with the most requests abandoned after their
	// first token (topValue, in-flight corrected); "" when none.
	top      string
	topValue float64
}

// relWindow is what the facts of this file read of one window, computed
// once: the replicas' lives and the sums of the hidden estimates.
type relWindow struct {
	evalWindow
	h     hiddenEstimate
	lives []replicaLife
}

// relWindows computes relWindow once per window.
type relWindows map[snapshot.Window]*relWindow

func (c *factCtx) rel(cache relWindows, w evalWindow) *relWindow {
	if rw, ok := cache[w.w]; ok {
		return rw
	}
	rw := &relWindow{evalWindow: w}
	rw.h, rw.lives = c.hidden(w)
	cache[w.w] = rw
	return rw
}

// hidden sums the inputs of the abandonment estimates over the replicas.
func (c *factCtx) hidden(w evalWindow) (hiddenEstimate, []replicaLife) {
	var h hiddenEstimate
	var lives []replicaLife
	h.tokensOK, h.countsOK, h.lifetime = true, true, w.lifetime
	for r := range c.sc.replicas {
		l := c.life(r, w.w)
		if !l.ok {
			continue
		}
		l.index = r
		lives = append(lives, l)
		h.replicas++
		h.resets += l.restarts
		p, m := l.inflight()
		wait := 0.0
		if w.lifetime {
			// Each process started with nothing in flight.
			p, wait = 0, l.waitEnd
		}
		h.plus += p
		h.minus += m
		h.waiting += wait
		if h.tokensOK {
			pt, err := c.sc.replicaCounter(catalog.SignalPromptTokensTotal, r, w.w, nil)
			ph := c.sc.replicaHist(catalog.SignalPromptTokens, r, w.w)
			if err != nil || ph.err != nil || math.IsNaN(ph.inc.Histogram.Sum) {
				h.tokensOK = false
			} else {
				h.prompt += pt.Value
				h.promptSum += ph.inc.Histogram.Sum
				h.finished += ph.inc.Histogram.Total()
			}
		}
		if h.countsOK {
			tt, et := c.sc.replicaHist(catalog.SignalTTFT, r, w.w), c.sc.replicaHist(catalog.SignalE2E, r, w.w)
			if tt.err != nil || et.err != nil {
				h.countsOK = false
			} else {
				n := tt.inc.Histogram.Total()
				e := et.inc.Histogram.Total()
				h.ttft += n
				h.e2e += e
				if y := n - e + p - m - wait; y > h.topValue {
					h.top, h.topValue = l.name, y
				}
			}
		}
	}
	if h.replicas == 0 {
		h.tokensOK, h.countsOK = false, false
	}
	return h, lives
}

// hiddenAssumptions states what the estimates rest on.
func (c *factCtx) hiddenAssumptions(h hiddenEstimate) string {
	if h.lifetime {
		return "lifetime counters, since each process started (one scrape: no window, so when these requests were abandoned is unknown); in-flight correction from the gauges at the scrape; abandonment while still queued leaves no trace (a lower bound)"
	}
	step := c.st.interval
	s := fmt.Sprintf("in-flight correction from the running gauge sampled every %v at the window's edges", step)
	if h.resets > 0 {
		s += fmt.Sprintf(" and before %d restart(s)", h.resets)
	}
	return s + "; abandonment while still queued leaves no trace (a lower bound)"
}

// abandonedPromptTokens is increase(prompt_tokens_total) -
// increase(request_prompt_tokens_sum) corrected for the requests in
// flight at the edges, in tokens.
func (c *factCtx) abandonedPromptTokens(w *relWindow) rules.Fact {
	if f, ok := c.need(catalog.SignalPromptTokensTotal, catalog.SignalPromptTokens, catalog.SignalRunning); !ok {
		return f
	}
	h := w.h
	if !h.tokensOK {
		return rules.MissingFact(rules.TooLittle("prompt_tokens_total or the request_prompt_tokens histogram does not cover the window on every replica"))
	}
	if !(h.finished > 0) {
		return rules.MissingFact(rules.TooLittle("no request finished in the window: no mean prompt length"))
	}
	mean := h.promptSum / h.finished
	u := inflightUncertainty(h.plus + h.minus)
	base := h.prompt - h.promptSum
	v := base + mean*(h.plus-h.minus)
	lo := base + mean*(h.plus*(1-u)-h.minus*(1+u))
	hi := base + mean*(h.plus*(1+u)-h.minus*(1-u))
	f := rules.Measured(v).WithBounds(lo, hi).WithSource(fmt.Sprintf(
		"%s - %s _sum + (running at segment starts %g - at segment ends %g) x mean prompt %.0f tokens (+-%.0f%% for the in-flight prompts); %s",
		c.sc.source(catalog.SignalPromptTokensTotal), c.sc.source(catalog.SignalPromptTokens), h.plus, h.minus, mean, 100*u, c.hiddenAssumptions(h)))
	f.Incident.Count = h.finished
	return f
}

// abandonedByTokens is abandoned_prompt_tokens over the mean prompt length.
func (c *factCtx) abandonedByTokens(w *relWindow) rules.Fact {
	t := c.abandonedPromptTokens(w)
	if !t.Known() {
		return t
	}
	h := w.h
	mean := h.promptSum / h.finished
	f := rules.Measured(t.Incident.Value/mean).WithBounds(t.Incident.Lower/mean, t.Incident.Upper/mean).WithSource(
		fmt.Sprintf("abandoned_prompt_tokens / mean prompt length %.0f tokens of finished requests (assumes abandoned prompts are as long on average); %s", mean, c.hiddenAssumptions(h)))
	f.Incident.Count = t.Incident.Count
	return f
}

// abandonedAfterFirstToken is the TTFT count minus the E2E count
// corrected for the requests in flight at the edges.
func (c *factCtx) abandonedAfterFirstToken(w *relWindow) rules.Fact {
	if f, ok := c.need(catalog.SignalTTFT, catalog.SignalE2E, catalog.SignalRunning); !ok {
		return f
	}
	h := w.h
	if !h.countsOK {
		return rules.MissingFact(rules.TooLittle("the TTFT or E2E histogram does not cover the window on every replica"))
	}
	v := h.ttft - h.e2e + h.plus - h.minus - h.waiting
	slack := firstTokenSlack * (h.plus + h.minus)
	most := ""
	if h.top != "" && h.replicas > 1 {
		most = fmt.Sprintf("most on %s (%.0f); ", h.top, h.topValue)
	}
	inflight := fmt.Sprintf("(running at segment starts %g - at segment ends %g)", h.plus, h.minus)
	if h.lifetime {
		inflight = fmt.Sprintf("- running %g - waiting %g at the scrape", h.minus, h.waiting)
	}
	f := rules.Measured(v).WithBounds(v-slack, v+h.waiting+slack).WithSource(most + fmt.Sprintf(
		"%s count %g - %s count %g %s, +-%g%% of those running (chunked prefills, preempted requests); vLLM observes TTFT at the first token, E2E only at the finish; %s",
		c.sc.source(catalog.SignalTTFT), h.ttft, c.sc.source(catalog.SignalE2E), h.e2e, inflight, 100*firstTokenSlack, c.hiddenAssumptions(h)))
	f.Incident.Count = h.ttft
	return f
}

// abandonedRequests combines the two estimates: the count from first
// tokens when known (it needs no prompt length), else the one from
// tokens; the bounds span both.
func (c *factCtx) abandonedRequests(w *relWindow) rules.Fact {
	a, b := c.abandonedAfterFirstToken(w), c.abandonedByTokens(w)
	var f rules.Fact
	switch {
	case a.Known():
		f = rules.Measured(a.Incident.Value).WithBounds(a.Incident.Lower, a.Incident.Upper)
		f.Incident.Count = a.Incident.Count
		f.Source = "abandoned_after_first_token"
		if b.Known() {
			f.Incident.Lower, f.Incident.Upper = math.Min(a.Incident.Lower, b.Incident.Lower), math.Max(a.Incident.Upper, b.Incident.Upper)
			f.Source += fmt.Sprintf("; bounds span abandoned_by_tokens %.0f", b.Incident.Value)
		}
	case b.Known():
		f = rules.Measured(b.Incident.Value).WithBounds(b.Incident.Lower, b.Incident.Upper)
		f.Incident.Count = b.Incident.Count
		f.Source = "abandoned_by_tokens (no TTFT/E2E counts)"
	default:
		return rules.MissingFact(fmt.Errorf("neither estimate can be computed: %s; %s", reasonText(a), reasonText(b)))
	}
	f.Source += "; " + c.accounting(w.evalWindow)
	return f
}

// accounting says which accounting of aborts the version seen implies.
func (c *factCtx) accounting(w evalWindow) string {
	reasons := c.sc.splitValues(catalog.SignalRequestSuccess, "finished_reason")
	if !slices.Contains(reasons, "abort") {
		return "no finished_reason=\"abort\" series: this vLLM does not count aborted requests apart"
	}
	inc, err := c.sc.fleetCounter(catalog.SignalRequestSuccess, w.w, map[string]string{"finished_reason": "abort"})
	if err != nil {
		return "finished_reason=\"abort\" not evaluable over the window"
	}
	if inc.Value > 0 {
		return fmt.Sprintf("finished_reason=\"abort\" rose by %g: this vLLM counts aborts (see abort_share); the estimate may repeat them", inc.Value)
	}
	return "finished_reason=\"abort\" stayed at 0: this vLLM counts no abandoned request (V1 accounting, vLLM issues #31503 and #55634)"
}

// abandonShare is abandoned_requests over completions + abandoned_requests.
func (c *factCtx) abandonShare(w *relWindow) rules.Fact {
	a := c.abandonedRequests(w)
	if !a.Known() {
		return a
	}
	if !c.sc.has(catalog.SignalRequestSuccess) {
		return rules.MissingFact(c.missingSignal(catalog.SignalRequestSuccess))
	}
	done, err := c.sc.fleetCounter(catalog.SignalRequestSuccess, w.w, nil)
	if err != nil {
		return rules.MissingFact(err)
	}
	share := func(x float64) float64 {
		x = math.Max(x, 0)
		if !(done.Value+x > 0) {
			return math.NaN()
		}
		return x / (done.Value + x)
	}
	v := share(a.Incident.Value)
	if math.IsNaN(v) {
		return rules.MissingFact(rules.TooLittle("no request finished or was abandoned in the window"))
	}
	f := rules.Measured(v).WithBounds(share(a.Incident.Lower), share(a.Incident.Upper)).WithSource(
		fmt.Sprintf("abandoned_requests / (completions %g + abandoned_requests); a lower bound of abandonment: requests abandoned while queued leave no trace unless a gateway counter is aliased (gateway_requests)", done.Value))
	f.Incident.Count = done.Value + math.Max(a.Incident.Value, 0)
	return f
}

// queueUnservedMin sums over the replicas' scrape intervals how far the
// backlog fell beyond the interval's completions.
func (c *factCtx) queueUnservedMin(w *relWindow) rules.Fact {
	if w.lifetime {
		return rules.MissingFact(rules.TooLittle("lifetime counters: no intervals"))
	}
	if f, ok := c.need(catalog.SignalWaiting, catalog.SignalRunning, catalog.SignalRequestSuccess); !ok {
		return f
	}
	sum, n := 0.0, 0
	for _, l := range w.lives {
		sum += l.unserved
		n++
	}
	if n == 0 {
		return rules.MissingFact(rules.TooLittle("no replica's running gauge covers the window"))
	}
	f := rules.Measured(sum).WithSource(fmt.Sprintf("sum over %d replicas' scrape intervals of max(0, fall of waiting + running - completions), restarts excluded: a lower bound, arrivals in an interval hide the rest", n))
	f.Incident.Count = float64(n)
	return f
}

// gatewayUnserved is the gateway's arrivals minus completions minus the
// growth of waiting + running.
func (c *factCtx) gatewayUnserved(w evalWindow, share bool) rules.Fact {
	if !c.sc.has(catalog.SignalGatewayRequests) {
		return rules.MissingFact(rules.NoSource("no gateway arrival counter (name one with Catalog.Alias gateway_requests=METRIC): requests abandoned while queued cannot be counted"))
	}
	if w.lifetime {
		return rules.MissingFact(rules.TooLittle("lifetime counters: no window"))
	}
	g, err := c.sc.fleetCounter(catalog.SignalGatewayRequests, w.w, nil)
	if err != nil {
		return rules.MissingFact(err)
	}
	done, err := c.sc.fleetCounter(catalog.SignalRequestSuccess, w.w, nil)
	if err != nil {
		return rules.MissingFact(err)
	}
	gs, f, ok := c.fleetBacklog(w, "no waiting and running gauges")
	if !ok {
		return f
	}
	v := g.Value - done.Value - (gs.Last - gs.First)
	src := fmt.Sprintf("%s %g - completions %g - growth of waiting + running %g", c.sc.source(catalog.SignalGatewayRequests), g.Value, done.Value, gs.Last-gs.First)
	if share {
		if !(g.Value > 0) {
			return rules.MissingFact(rules.TooLittle("no gateway arrival in the window"))
		}
		f := rules.Measured(math.Max(v, 0) / g.Value).WithSource(src + ", over the gateway's arrivals")
		f.Incident.Count = g.Value
		return f
	}
	f = rules.Measured(v).WithSource(src)
	f.Incident.Count = g.Value
	return f
}

// restartFacts computes restarts, restarts_replica_max,
// restarts_per_hour_max, requests_lost and lost_share over w.
func (c *factCtx) restartFacts(w *relWindow) map[rules.FactID]rules.Fact {
	out := map[rules.FactID]rules.Fact{}
	ids := []rules.FactID{rules.Restarts, rules.RestartsReplicaMax, rules.RestartsPerHourMax, rules.RequestsLost, rules.LostShare}
	miss := func(why error) map[rules.FactID]rules.Fact {
		for _, id := range ids {
			out[id] = rules.MissingFact(why)
		}
		return out
	}
	if w.lifetime {
		return miss(rules.TooLittle("lifetime counters: no window to find restarts in"))
	}
	if !c.sc.has(catalog.SignalRunning) {
		return miss(c.missingSignal(catalog.SignalRunning))
	}
	total, top, lost, gaps, n := 0, 0, 0.0, 0, 0
	who := ""
	var names []string
	for _, l := range w.lives {
		n++
		total += l.restarts
		gaps += l.gaps
		for _, v := range l.lostBefore {
			lost += v
		}
		if l.restarts > 0 {
			names = append(names, fmt.Sprintf("%s %d", l.name, l.restarts))
		}
		if l.restarts > top {
			top, who = l.restarts, l.name
		}
	}
	if n == 0 {
		return miss(rules.TooLittle("no replica's running gauge covers the window"))
	}
	sort.Strings(names)
	how := "process_start_time_seconds changes"
	if !c.sc.has(catalog.SignalProcessStart) {
		how = "counters dropping together (no process_start_time_seconds: V0 or multiprocess mode)"
	}
	src := fmt.Sprintf("%s, over %d replicas; %d scrape gap(s)", how, n, gaps)
	if len(names) > 0 {
		src += "; restarts: " + strings.Join(names, ", ")
	}
	f := rules.Measured(float64(total)).WithSource(src)
	f.Incident.Count = float64(n)
	out[rules.Restarts] = f
	m := rules.Measured(float64(top)).WithSource(src)
	if who != "" {
		m.Source, m.Replica = who+": "+src, who
	}
	m.Incident.Count = float64(n)
	out[rules.RestartsReplicaMax] = m
	hours := w.w.Duration().Hours()
	if hours > 0 {
		ph := rules.Measured(float64(top) / hours).WithSource(m.Source)
		ph.Incident.Count, ph.Replica = float64(n), m.Replica
		out[rules.RestartsPerHourMax] = ph
	} else {
		out[rules.RestartsPerHourMax] = rules.MissingFact(rules.TooLittle("window of zero length"))
	}
	lf := rules.Measured(lost).WithSource("waiting + running at the last scrape before each restart (requests that arrived after that scrape are not seen)")
	lf.Incident.Count = float64(total)
	out[rules.RequestsLost] = lf
	if !c.sc.has(catalog.SignalRequestSuccess) {
		out[rules.LostShare] = rules.MissingFact(c.missingSignal(catalog.SignalRequestSuccess))
		return out
	}
	done, err := c.sc.fleetCounter(catalog.SignalRequestSuccess, w.w, nil)
	if err != nil || !(done.Value+lost > 0) {
		out[rules.LostShare] = rules.MissingFact(rules.TooLittle("no request finished or was lost in the window"))
		return out
	}
	ls := rules.Measured(lost / (done.Value + lost)).WithSource(fmt.Sprintf("requests_lost / (completions %g + requests_lost)", done.Value))
	ls.Incident.Count = done.Value + lost
	out[rules.LostShare] = ls
	return out
}

// oomKills counts the containers of the scope's replicas whose last
// termination was OOMKilled at the end of w.
func (c *factCtx) oomKills(w evalWindow) rules.Fact {
	if !c.sc.has(catalog.SignalTerminatedReason) {
		return rules.MissingFact(rules.NoSource("no kube-state-metrics kube_pod_container_status_last_terminated_reason in the evidence"))
	}
	n, seen := 0, 0
	for r := range c.sc.replicas {
		m := c.sc.match(r, catalog.SignalTerminatedReason)
		if !m.Found() {
			continue
		}
		for _, s := range m.Family.SeriesMatching(map[string]string{"reason": "OOMKilled"}) {
			g, err := s.Gauge(w.w)
			if err != nil {
				continue
			}
			seen++
			if g.Last >= 1 {
				n++
			}
		}
	}
	f := rules.Measured(float64(n)).WithSource(fmt.Sprintf(`%s{reason="OOMKilled"} = 1 at the window's end, of %d series`, c.sc.source(catalog.SignalTerminatedReason), seen))
	f.Incident.Count = float64(seen)
	return f
}

// fbRise is the least rise of framebuffer use over the pod's own median
// level, at the last scrape before a restart, that points at memory
// exhaustion: vLLM preallocates its KV cache, so the level is flat while
// the process is healthy and a leak shows as a climb.
const fbRise = 0.02

// fbRiseRestarts counts the restarts in w preceded by framebuffer use at
// least fbRise above the median of the same process's earlier samples.
func (c *factCtx) fbRiseRestarts(w *relWindow) rules.Fact {
	if !c.sc.has(catalog.SignalFBUsed) {
		return rules.MissingFact(c.missingSignal(catalog.SignalFBUsed))
	}
	if w.lifetime {
		return rules.MissingFact(rules.TooLittle("lifetime counters: no window to find restarts in"))
	}
	n, restarts := 0, 0
	var who []string
	for _, l := range w.lives {
		fb := c.sc.replicaGauge(catalog.SignalFBUsed, l.index)
		if fb == nil {
			continue
		}
		for k, t := range l.before {
			restarts++
			from := int64(math.MinInt64)
			if k > 0 {
				from = l.after[k-1]
			}
			var vs []float64
			last := math.NaN()
			for i, ts := range fb.T {
				if ts >= from && ts <= t && !math.IsNaN(fb.V[i]) {
					vs = append(vs, fb.V[i])
					last = fb.V[i]
				}
			}
			if len(vs) < 4 {
				continue
			}
			sort.Float64s(vs)
			if med := vs[len(vs)/2]; med > 0 && last >= (1+fbRise)*med {
				n++
				who = append(who, fmt.Sprintf("%s +%.0f%%", l.name, 100*(last/med-1)))
			}
		}
	}
	src := fmt.Sprintf("%s at the last scrape before each of %d restart(s) vs the median of the same process's samples (rise >= %g%%)", c.sc.source(catalog.SignalFBUsed), restarts, 100*fbRise)
	if len(who) > 0 {
		src += ": " + strings.Join(who, ", ")
	}
	f := rules.Measured(float64(n)).WithSource(src)
	f.Incident.Count = float64(restarts)
	return f
}

// httpShareOf is the share of HTTP responses whose status matches.
func (c *factCtx) httpShareOf(w evalWindow, r int, match func(string) bool, what string) rules.Fact {
	if !c.sc.has(catalog.SignalHTTPRequests) {
		return rules.MissingFact(c.missingSignal(catalog.SignalHTTPRequests))
	}
	count := func(extra map[string]string) (float64, error) {
		if r < 0 {
			inc, err := c.sc.fleetCounter(catalog.SignalHTTPRequests, w.w, extra)
			return inc.Value, err
		}
		inc, err := c.sc.replicaCounter(catalog.SignalHTTPRequests, r, w.w, extra)
		return inc.Value, err
	}
	total, err := count(nil)
	if err != nil {
		return rules.MissingFact(err)
	}
	if !(total > 0) {
		return rules.MissingFact(rules.TooLittle("no HTTP response in the window"))
	}
	bad := 0.0
	for _, st := range c.sc.splitValues(catalog.SignalHTTPRequests, "status") {
		if !match(st) {
			continue
		}
		if v, err := count(map[string]string{"status": st}); err == nil {
			bad += v
		}
	}
	f := rules.Measured(bad / total).WithSource(c.sc.source(catalog.SignalHTTPRequests) + `{status="` + what + `"}`)
	f.Incident.Count = total
	return f
}

// http429Share is the share of 429 answers. The instrumentator groups
// status codes by default (4xx), so a grouped fleet has no 429 apart.
func (c *factCtx) http429Share(w evalWindow) rules.Fact {
	sts := c.sc.splitValues(catalog.SignalHTTPRequests, "status")
	if c.sc.has(catalog.SignalHTTPRequests) && !slices.Contains(sts, "429") && (slices.Contains(sts, "4xx") || slices.Contains(sts, "2xx")) {
		return rules.MissingFact(rules.NoSource("http_requests_total groups status codes (2xx, 4xx, 5xx): no 429 apart"))
	}
	return c.httpShareOf(w, -1, func(s string) bool { return s == "429" }, "429")
}

func is5xx(s string) bool { return strings.HasPrefix(s, "5") }

// http5xxShareMax is the largest 5xx share of one replica.
func (c *factCtx) http5xxShareMax(w evalWindow) rules.Fact {
	if !c.sc.has(catalog.SignalHTTPRequests) {
		return rules.MissingFact(c.missingSignal(catalog.SignalHTTPRequests))
	}
	best, who, n := math.NaN(), "", 0
	var count float64
	for r := range c.sc.replicas {
		if !c.sc.match(r, catalog.SignalHTTPRequests).Found() {
			continue
		}
		f := c.httpShareOf(w, r, is5xx, "5xx")
		if !f.Known() {
			continue
		}
		n++
		if !(f.Incident.Value <= best) {
			best, who, count = f.Incident.Value, c.sc.replicas[r].t.Name, f.Incident.Count
		}
	}
	if n == 0 {
		return rules.MissingFact(rules.TooLittle("no replica answered HTTP requests in the window"))
	}
	f := rules.Measured(best).WithSource(fmt.Sprintf(`%s: %s{status="5xx"} of its responses, the largest of %d replicas`, who, c.sc.source(catalog.SignalHTTPRequests), n))
	f.Incident.Count = count
	return f
}

// addReliabilityFacts computes the facts of this file into fs.
func (c *factCtx) addReliabilityFacts(fs rules.Facts) {
	cache := relWindows{}
	on := func(f func(*relWindow) rules.Fact) func(evalWindow) rules.Fact {
		return func(w evalWindow) rules.Fact { return f(c.rel(cache, w)) }
	}
	fs[rules.AbandonedPromptTokens] = c.both(rules.AbandonedPromptTokens, on(c.abandonedPromptTokens))
	fs[rules.AbandonedByTokens] = c.both(rules.AbandonedByTokens, on(c.abandonedByTokens))
	fs[rules.AbandonedAfterFirstToken] = c.both(rules.AbandonedAfterFirstToken, on(c.abandonedAfterFirstToken))
	fs[rules.AbandonedRequests] = c.both(rules.AbandonedRequests, on(c.abandonedRequests))
	fs[rules.AbandonShare] = c.both(rules.AbandonShare, on(c.abandonShare))
	fs[rules.QueueUnservedMin] = c.both(rules.QueueUnservedMin, on(c.queueUnservedMin))
	fs[rules.GatewayUnserved] = c.both(rules.GatewayUnserved, func(w evalWindow) rules.Fact { return c.gatewayUnserved(w, false) })
	fs[rules.GatewayUnservedShare] = c.both(rules.GatewayUnservedShare, func(w evalWindow) rules.Fact { return c.gatewayUnserved(w, true) })
	inc := c.restartFacts(c.rel(cache, c.inc))
	var base map[rules.FactID]rules.Fact
	if c.base.ok {
		base = c.restartFacts(c.rel(cache, c.base))
	}
	for id, f := range inc {
		f.Incident.Window = c.inc.text()
		if b, ok := base[id]; ok && b.Known() {
			f.Baseline.Value, f.Baseline.Count, f.Baseline.Window = b.Incident.Value, b.Incident.Count, c.base.text()
		}
		fs[id] = f
	}
	fs[rules.OutageLoadFactor] = c.both(rules.OutageLoadFactor, c.outageLoadFactor)
	fs[rules.OOMKills] = c.both(rules.OOMKills, c.oomKills)
	fs[rules.FBRiseRestarts] = c.both(rules.FBRiseRestarts, on(c.fbRiseRestarts))
	fs[rules.HTTP429Share] = c.both(rules.HTTP429Share, c.http429Share)
	fs[rules.HTTP5xxShareMax] = c.both(rules.HTTP5xxShareMax, c.http5xxShareMax)
}
