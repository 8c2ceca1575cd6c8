package fleetsim

import (
	"math"
	"math/rand/v2"
)

// group is a shared prompt prefix whose KV blocks the engine may hold.
// A resident group with ref > 0 is referenced by running sequences and its
// blocks count as used; with ref == 0 its blocks are cached but free
// (evictable, least recently used first), as in vLLM's block pool.
type group struct {
	blocks     int32
	ref        int32
	resident   bool
	prev, next *group // LRU list of idle resident groups
}

// seq is a request inside one engine.
type seq struct {
	r          *request
	target     int32 // output tokens to produce (want cut at the limits)
	numTokens  int32 // prompt + generated
	computed   int32 // tokens whose KV is computed
	generated  int32
	own        int32 // KV blocks held by the sequence alone
	shared     int32 // KV blocks of its prefix group
	grp        *group
	sched      int32 // tokens scheduled in the current step
	preempts   int32
	cached     int32 // prefix-cache hit at first admission
	firstSched float64
	firstTok   float64
	lastTok    float64
	counted    bool // prompt tokens counted
	done       bool
	// remote: the prompt's KV is to be read from a prefill pod (the
	// decode leg of a disaggregated request; cleared by a preemption,
	// after which the engine recomputes it); pulled: its blocks are
	// allocated and the read is under way or done, ready at readyAt.
	remote, pulled bool
	readyAt        float64
	// lost: the read under way fails (KVLink.Failures); the request is
	// then recomputed here.
	lost bool
}

// costs is CostModel in seconds.
type costs struct {
	overhead, prefill, decode, attnPerTok, cpuStep, cpuSeq, jitter float64
	frontReq, frontTok                                             float64
}

func newCosts(c CostModel) costs {
	j := c.Jitter
	if j < 0 {
		j = 0
	}
	return costs{
		overhead:   c.StepOverhead.Seconds(),
		prefill:    c.PrefillPerToken.Seconds(),
		decode:     c.DecodePerSeq.Seconds(),
		attnPerTok: c.AttentionPerKToken.Seconds() / 1000,
		cpuStep:    c.CPUPerStep.Seconds(),
		cpuSeq:     c.CPUPerSeq.Seconds(),
		jitter:     j,
		frontReq:   c.FrontendPerRequest.Seconds(),
		frontTok:   c.FrontendPerPromptToken.Seconds(),
	}
}

// slowWin is a Slowdown in seconds.
type slowWin struct{ from, to, step, seq float64 }

// engineSnap is the state of one engine at one scrape.
type engineSnap struct {
	t       float64 // nominal scrape time
	at      float64 // engine clock when taken (first step boundary >= t)
	running int
	waiting int
	kvUsage float64
	// deferred counts the waiting requests a Deferral holds; byReason
	// says the pod exports the waiting split by reason.
	deferred int
	byReason bool
	// asleep says a Sleep holds; sleepFamily says the fleet exports
	// vllm:engine_sleep_state.
	asleep, sleepFamily bool
	busyFrac            float64 // GPU busy fraction since the previous scrape
	// promptRate and genRate are token throughputs since the previous
	// scrape (V0's average throughput gauges).
	promptRate, genRate float64
	st                  *engineStats
}

// engine simulates one vLLM engine core: a scheduler with a token budget,
// chunked prefill, paged KV blocks with prefix caching, and preemption by
// recompute.
type engine struct {
	B          int32
	total      int32 // KV blocks
	held       int32 // blocks used by running sequences (shared ones once)
	idle       int32 // blocks of idle cached groups (free, evictable)
	maxSeqs    int
	budgetMax  int32
	maxLen     int32
	caching    bool
	chunked    bool
	c          costs
	slow       []slowWin
	timeout    float64
	deadline   float64        // ClientDeadline in seconds; 0 for none
	countAbort bool           // abandoned requests count as finished_reason="abort"
	errs       []ServerErrors // periods of HTTP 5xx answers
	rng        *rand.Rand
	st         *engineStats
	running    []*seq
	sched      []*seq
	front      []*seq // preempted sequences; the last one is the head of the queue
	queue      []*seq // never scheduled, FIFO from qh
	qh         int
	groups     map[int64]*group
	lru, lruTl *group
	now        float64
	prevEnd    float64
	lastSnapT  float64
	lastBusy   float64
	lastPrompt float64
	lastGen    float64
	recs       []Request
	maxRunning int
	maxHeld    int32
	noMacro    bool          // tests: disable decodeRun to check it changes nothing
	stalls     []Stall       // periods without steps (faults_engine.go)
	freezeAt   float64       // Freeze time in seconds; 0 for none
	frozen     *frozenGauges // gauges kept after a Freeze
	deferrals  []Deferral    // periods that defer arrivals (faults_engine.go)
	sleeps     []Sleep       // periods asleep (faults_engine.go)
	sleepFam   bool          // the fleet exports vllm:engine_sleep_state
	deferred   []*seq        // requests held by a Deferral
	specK      int32
	// Admission limits (EngineConfig.MaxNumQueuedReqs, MaxNumQueuedTokens;
	// 0 for none) and the prompt tokens of the unfinished requests with
	// no output token yet, which the token limit reads.
	maxQueuedReqs   int
	maxQueuedTokens int64
	prefillTokens   int64
	// link is the KV link of a decode pod (nil otherwise); kvTok the KV
	// bytes of one token; pulling the sequences whose KV is being read.
	link    *KVLink
	kvTok   float64
	pulling []*seq
	// holdLink is the KV link of a prefill pod (nil otherwise), whose
	// finished requests keep their blocks in lingering until the decode
	// pod has read them (at readyAt).
	holdLink  *KVLink
	lingering []*seq
}

func newEngine(cfg *EngineConfig, lay *layout, slow []slowWin, timeout float64, rng *rand.Rand, recs []Request, start float64) *engine {
	e := &engine{
		B:         int32(cfg.BlockSize),
		total:     int32(cfg.NumGPUBlocks),
		maxSeqs:   cfg.MaxNumSeqs,
		budgetMax: int32(cfg.MaxNumBatchedTokens),
		maxLen:    int32(cfg.MaxModelLen),
		caching:   !cfg.DisablePrefixCaching,
		chunked:   !cfg.DisableChunkedPrefill,
		c:         newCosts(cfg.Cost),
		slow:      slow,
		timeout:   timeout,
		rng:       rng,
		st:        newEngineStats(lay),
		groups:    map[int64]*group{},
		now:       start,
		prevEnd:   math.Inf(-1),
		lastSnapT: start,
		recs:      recs,
		specK:     int32(cfg.SpecTokens),

		maxQueuedReqs:   cfg.MaxNumQueuedReqs,
		maxQueuedTokens: int64(cfg.MaxNumQueuedTokens),
	}
	e.st.specPerPos = make([]float64, cfg.SpecTokens)
	return e
}

func ceilDiv(a, b int32) int32 { return (a + b - 1) / b }

func (e *engine) waitingLen() int { return len(e.front) + len(e.queue) - e.qh }

func (e *engine) peek() *seq {
	if n := len(e.front); n > 0 {
		return e.front[n-1]
	}
	if e.qh < len(e.queue) {
		return e.queue[e.qh]
	}
	return nil
}

// pop removes the head of the waiting queue (see peek).
func (e *engine) pop() {
	if n := len(e.front); n > 0 {
		e.front = e.front[:n-1]
		return
	}
	e.popQueue()
}

// popQueue removes the oldest never-scheduled request.
func (e *engine) popQueue() {
	e.queue[e.qh] = nil
	e.qh++
	if e.qh > 256 && 2*e.qh > len(e.queue) {
		n := copy(e.queue, e.queue[e.qh:])
		clear(e.queue[n:])
		e.queue = e.queue[:n]
		e.qh = 0
	}
}

// lruRemove takes g out of the idle list.
func (e *engine) lruRemove(g *group) {
	if g.prev != nil {
		g.prev.next = g.next
	} else {
		e.lru = g.next
	}
	if g.next != nil {
		g.next.prev = g.prev
	} else {
		e.lruTl = g.prev
	}
	g.prev, g.next = nil, nil
}

// lruPush appends g as the most recently used idle group.
func (e *engine) lruPush(g *group) {
	g.prev, g.next = e.lruTl, nil
	if e.lruTl != nil {
		e.lruTl.next = g
	} else {
		e.lru = g
	}
	e.lruTl = g
}

// alloc takes k free blocks, evicting idle cached groups (least recently
// used first) when the never-used free blocks do not suffice. It reports
// false, changing nothing, when fewer than k blocks are free.
func (e *engine) alloc(k int32) bool {
	if k <= 0 {
		return true
	}
	if e.total-e.held < k {
		return false
	}
	for e.total-e.held-e.idle < k {
		g := e.lru
		e.lruRemove(g)
		g.resident = false
		e.idle -= g.blocks
	}
	e.held += k
	if e.held > e.maxHeld {
		e.maxHeld = e.held
	}
	return true
}

func (e *engine) unref(g *group) {
	g.ref--
	if g.ref == 0 {
		e.held -= g.blocks
		e.idle += g.blocks
		e.lruPush(g)
	}
}

// release frees the blocks of s.
func (e *engine) release(s *seq) {
	e.held -= s.own
	s.own = 0
	if s.grp != nil {
		e.unref(s.grp)
		s.grp = nil
	}
	s.shared = 0
}

// preempt sends s back to the head of the waiting queue; its KV is
// recomputed when it is scheduled again.
func (e *engine) preempt(s *seq) {
	e.release(s)
	s.computed = 0
	s.remote = false
	s.preempts++
	e.st.preemptions++
	e.front = append(e.front, s)
}

// countAnswer counts an HTTP answer at time t in *n, and notes t in
// *first when it is the first (NaN before).
func countAnswer(n, first *float64, t float64) {
	*n++
	if math.IsNaN(*first) {
		*first = t
	}
}

// enqueue hands a request to the engine (or rejects a prompt longer than
// the context, as the API server does with HTTP 400).
func (e *engine) enqueue(r *request, s *seq) {
	rec := &e.recs[r.id]
	if e.failed(r) {
		countAnswer(&e.st.http5xx, &e.st.first5xx, e.now)
		rec.Status = StatusFailed
		rec.Finished = dur(r.engArr)
		return
	}
	if reason, ok := e.refuse(); ok {
		countAnswer(&e.st.http5xx, &e.st.first5xx, e.now)
		e.st.refused[reason]++
		rec.Status = StatusRefused
		rec.Finished = dur(e.now)
		return
	}
	rec.Queued = dur(r.engArr)
	if r.prompt >= e.maxLen {
		countAnswer(&e.st.http4xx, &e.st.first4xx, e.now)
		rec.Status = StatusRejected
		rec.Finished = dur(r.engArr)
		return
	}
	*s = seq{r: r, numTokens: r.prompt, firstSched: math.NaN(), firstTok: math.NaN(), remote: r.remote}
	s.target = min(r.want, r.maxTokens, e.maxLen-r.prompt)
	e.prefillTokens += int64(r.prompt)
	e.push(s)
}

// Reasons of vllm:admission_rejections_total, indices of
// engineStats.refused: the limit that refused the request.
const (
	refusedReqs = iota
	refusedTokens
)

// admissionReasons are the reason label values of
// vllm:admission_rejections_total, by refusal index. PR 55812 labels the
// counter by the limit that fired (max_num_queued_reqs or
// max_num_queued_tokens); its exact label values are not in a stored
// release: these name the flags, as the PR's description does.
var admissionReasons = [...]string{refusedReqs: "max_num_queued_reqs", refusedTokens: "max_num_queued_tokens"}

// refuse reports whether the API server refuses a request arriving now at
// admission, and which limit refuses it, as vLLM's
// AsyncLLM.check_admission does (PR 49445) before the request is rendered
// and reaches the engine (issue 58192): the request limit first, when
// the unfinished requests (waiting, deferred, reading their KV from a
// prefill pod and running: vLLM counts every request its output
// processor holds) plus this one would exceed
// it; then the token limit, when the prompt tokens of the unfinished
// requests still in prefill have reached it.
func (e *engine) refuse() (reason int, ok bool) {
	if e.maxQueuedReqs > 0 && len(e.running)+e.waitingLen()+len(e.deferred)+len(e.pulling)+1 > e.maxQueuedReqs {
		return refusedReqs, true
	}
	if e.maxQueuedTokens > 0 && e.prefillTokens >= e.maxQueuedTokens {
		return refusedTokens, true
	}
	return 0, false
}

// failed reports whether the API server answers r with HTTP 500
// (PodConfig.ServerErrors). The choice hashes the request id, so that it
// draws nothing from the engine's generator.
func (e *engine) failed(r *request) bool {
	for _, w := range e.errs {
		if r.arrival >= w.From.Seconds() && r.arrival < w.To.Seconds() {
			h := uint64(r.id)*0x9e3779b97f4a7c15 + 0x632be59bd9b4e019
			h ^= h >> 29
			h *= 0xbf58476d1ce4e5b9
			h ^= h >> 32
			return float64(h>>11)/(1<<53) < w.Share
		}
	}
	return false
}

// queueLimit is how long a never-scheduled request may wait before its
// client gives up (the sooner of ClientTimeout and ClientDeadline); 0 for
// no limit.
func (e *engine) queueLimit() float64 {
	switch {
	case e.timeout > 0 && e.deadline > 0:
		return min(e.timeout, e.deadline)
	case e.timeout > 0:
		return e.timeout
	}
	return e.deadline
}

// expire aborts requests whose client gave up: waiting ones after
// queueLimit, preempted and running ones after ClientDeadline.
func (e *engine) expire() {
	lim := e.queueLimit()
	if lim <= 0 {
		return
	}
	for e.qh < len(e.queue) && e.queue[e.qh].r.arrival+lim <= e.now {
		s := e.queue[e.qh]
		e.popQueue()
		e.abandon(s)
	}
	if e.deadline <= 0 {
		return
	}
	if len(e.front) > 0 {
		kept := e.front[:0]
		for _, s := range e.front {
			if s.r.arrival+e.deadline <= e.now {
				e.release(s) // a decode leg whose KV arrived holds blocks
				e.abandon(s)
			} else {
				kept = append(kept, s)
			}
		}
		clear(e.front[len(kept):])
		e.front = kept
	}
	gone := false
	for _, s := range e.running {
		if s.r.arrival+e.deadline <= e.now {
			e.release(s)
			e.abandon(s)
			s.done = true
			gone = true
		}
	}
	if gone {
		kept := e.running[:0]
		for _, s := range e.running {
			if !s.done {
				kept = append(kept, s)
			}
		}
		clear(e.running[len(kept):])
		e.running = kept
		e.prevEnd = math.Inf(-1)
	}
}

// nextExpiry is the earliest time at which expire has work, +Inf for none.
func (e *engine) nextExpiry() float64 {
	t := math.Inf(1)
	if lim := e.queueLimit(); lim > 0 && e.qh < len(e.queue) {
		t = e.queue[e.qh].r.arrival + lim
	}
	if e.deadline > 0 {
		for _, s := range e.running {
			t = min(t, s.r.arrival+e.deadline)
		}
		for _, s := range e.front {
			t = min(t, s.r.arrival+e.deadline)
		}
	}
	return t
}

// abandon records that the client of s gave up now. Its blocks must be
// free already (a waiting request holds none).
func (e *engine) abandon(s *seq) {
	if math.IsNaN(s.firstTok) {
		e.prefillTokens -= int64(s.r.prompt)
	}
	if e.countAbort {
		e.st.success[reasonAbort]++
	}
	rec := &e.recs[s.r.id]
	rec.Status = StatusAborted
	rec.FinishReason = "abort"
	rec.Finished = dur(e.now)
	if !math.IsNaN(s.firstSched) {
		rec.Scheduled = dur(s.firstSched)
		rec.CachedTokens = int(s.cached)
	}
	if !math.IsNaN(s.firstTok) {
		rec.FirstToken = dur(s.firstTok)
	}
	rec.OutputTokens = int(s.generated)
	rec.Preemptions = int(s.preempts)
}

// admit schedules waiting requests while sequences, budget and blocks
// allow, and returns the budget left.
func (e *engine) admit(budget int32) int32 {
	for len(e.running) < e.maxSeqs && budget > 0 {
		w := e.peek()
		if w == nil {
			break
		}
		if w.remote {
			if !e.admitRemote(w, &budget) {
				break
			}
			continue
		}
		var (
			g           *group
			hit, shared int32
			newGroup    bool
		)
		if e.caching && w.r.group >= 0 {
			g = e.groups[w.r.group]
			if g == nil {
				g = &group{blocks: w.r.prefixLen / e.B}
				e.groups[w.r.group] = g
			}
			if g.blocks == 0 {
				g = nil
			}
		}
		if g != nil {
			shared = g.blocks
			if g.resident {
				hit = g.blocks * e.B
			} else {
				newGroup = true
			}
		}
		n := w.numTokens - hit
		if n > budget {
			if !e.chunked {
				break
			}
			n = budget
		}
		need := max(ceilDiv(hit+n, e.B)-shared, 0)
		if newGroup {
			need += g.blocks
		}
		wasIdle := g != nil && g.resident && g.ref == 0
		if wasIdle {
			e.lruRemove(g)
			e.idle -= g.blocks
			e.held += g.blocks
		}
		if !e.alloc(need) {
			if wasIdle {
				e.held -= g.blocks
				e.idle += g.blocks
				e.lruPush(g)
			}
			break
		}
		if e.held > e.maxHeld {
			e.maxHeld = e.held
		}
		e.pop()
		if g != nil {
			g.resident = true
			g.ref++
		}
		w.grp, w.shared, w.own = g, shared, need
		if newGroup {
			w.own -= g.blocks
		}
		w.computed = hit
		w.sched = n
		if math.IsNaN(w.firstSched) {
			w.firstSched = e.now
			w.cached = hit
		}
		if e.caching {
			e.st.prefixQueries += float64(w.numTokens)
			e.st.prefixHits += float64(hit)
		}
		e.running = append(e.running, w)
		e.sched = append(e.sched, w)
		budget -= n
	}
	return budget
}

// admitRemote admits the head of the queue, w, whose prompt KV lives on a
// prefill pod, as vLLM's scheduler does with the NIXL connector
// (vllm/v1/core/sched/scheduler.py, WAITING_FOR_REMOTE_KVS): the first
// time, it allocates the prompt's blocks and starts the read, and the
// request waits (it still counts in num_requests_waiting, and is not yet
// scheduled: its queue time includes the transfer); once the KV has
// arrived, it is scheduled with every prompt token but the last
// computed, so that its first step computes one token and emits the
// first. It reports false, changing nothing, when the blocks do not fit.
func (e *engine) admitRemote(w *seq, budget *int32) bool {
	if !w.pulled {
		need := ceilDiv(w.numTokens, e.B)
		if !e.alloc(need) {
			return false
		}
		e.pop()
		w.own, w.pulled = need, true
		w.computed = w.numTokens - 1
		// Whole blocks travel; one descriptor per block, layer and K/V
		// plane (an 8B model's 32 layers: 64 per block).
		bytes := float64(need*e.B) * e.kvTok
		x := e.link.transferTime(e.now, bytes)
		w.readyAt = e.now + x
		// Only links with failures draw: a fleet without them keeps its
		// random sequence.
		if p := e.link.failShare(e.now); p > 0 && e.rng.Float64() < p {
			w.lost = true
		} else {
			desc := float64(need) * 64
			e.st.observe(hNixlXfer, x)
			e.st.observe(hNixlPost, 20e-6+0.05e-6*desc)
			e.st.observe(hNixlBytes, bytes)
			e.st.observe(hNixlDesc, desc)
		}
		e.pulling = append(e.pulling, w)
		return true
	}
	e.pop()
	w.remote = false
	w.sched = w.numTokens - w.computed
	if math.IsNaN(w.firstSched) {
		w.firstSched = e.now
	}
	e.running = append(e.running, w)
	e.sched = append(e.sched, w)
	*budget -= w.sched
	return true
}

// pulledKV moves the sequences whose KV has arrived by now to the head of
// the waiting queue, soonest first.
func (e *engine) pulledKV() {
	if len(e.pulling) == 0 {
		return
	}
	kept := e.pulling[:0]
	var ready []*seq
	for _, s := range e.pulling {
		if s.readyAt <= e.now {
			if s.lost {
				// The blocks read are invalid: the request computes its
				// prompt here, from the head of the queue.
				e.release(s)
				s.computed, s.remote, s.pulled, s.lost = 0, false, false, false
				e.st.nixlFailed++
			}
			ready = append(ready, s)
		} else {
			kept = append(kept, s)
		}
	}
	clear(e.pulling[len(kept):])
	e.pulling = kept
	// e.front's last element is the head: push the latest first.
	for i := len(ready) - 1; i >= 0; i-- {
		e.front = append(e.front, ready[i])
	}
}

// freeRead releases the blocks of the finished requests of a prefill pod
// whose KV the decode pod has read by now.
func (e *engine) freeRead() {
	if len(e.lingering) == 0 {
		return
	}
	kept := e.lingering[:0]
	for _, s := range e.lingering {
		if s.readyAt <= e.now {
			e.release(s)
		} else {
			kept = append(kept, s)
		}
	}
	clear(e.lingering[len(kept):])
	e.lingering = kept
}

// nextPulled is the earliest time a KV read completes, +Inf for none.
func (e *engine) nextPulled() float64 {
	t := math.Inf(1)
	for _, s := range e.pulling {
		t = min(t, s.readyAt)
	}
	return t
}

// step runs one engine iteration: schedule, execute, emit tokens, finish.
func (e *engine) step() {
	e.sched = e.sched[:0]
	budget := e.budgetMax
	preempted := false
	for i := 0; i < len(e.running) && budget > 0; i++ {
		s := e.running[i]
		n := min(s.numTokens-s.computed, budget)
		need := max(ceilDiv(s.computed+n, e.B)-s.shared, 0) - s.own
		for need > 0 && !e.alloc(need) {
			v := e.running[len(e.running)-1]
			e.running = e.running[:len(e.running)-1]
			e.preempt(v)
			preempted = true
			if v == s {
				s = nil
				break
			}
		}
		if s == nil {
			break
		}
		if need > 0 {
			s.own += need
		}
		s.sched = n
		budget -= n
		e.sched = append(e.sched, s)
	}
	if !preempted {
		budget = e.admit(budget)
	}
	if len(e.running) > e.maxRunning {
		e.maxRunning = len(e.running)
	}
	if len(e.sched) == 0 {
		// Nothing fits (cannot happen with validated settings); wait.
		e.now += 0.001
		e.prevEnd = math.Inf(-1)
		return
	}

	var prefill, ctx int64
	decodes := 0
	for _, s := range e.sched {
		if s.generated > 0 && s.numTokens-s.computed == 1 {
			decodes++
		} else {
			prefill += int64(s.sched)
		}
		ctx += int64(s.computed + s.sched)
	}
	c := &e.c
	gpu := c.overhead + float64(prefill)*c.prefill + float64(decodes)*c.decode*(1+SpecCost*float64(e.specK)) + float64(ctx)*c.attnPerTok
	if c.jitter > 0 {
		gpu *= 1 + c.jitter*(2*e.rng.Float64()-1)
	}
	cpu := c.cpuStep + float64(len(e.sched))*c.cpuSeq
	for _, w := range e.slow {
		if e.now >= w.from && e.now < w.to {
			cpu += w.step + float64(len(e.sched))*w.seq
		}
	}
	end := e.now + gpu + cpu
	e.st.gpuBusy += gpu
	e.st.cpuSeconds += cpu
	e.st.observe(hIter, float64(e.budgetMax-budget))

	batched, finished := 0, 0
	for _, s := range e.sched {
		s.computed += s.sched
		if s.computed < s.numTokens {
			continue // chunked prefill in progress
		}
		if !s.counted {
			s.counted = true
			e.st.promptTokens += float64(s.r.prompt)
		}
		if s.generated > 0 && e.specK > 0 {
			e.speculate(s)
		}
		switch {
		case s.generated == 0:
			s.firstTok = end
			e.prefillTokens -= int64(s.r.prompt)
			e.st.observe(hTTFT, end-s.r.arrival)
		case s.lastTok == e.prevEnd:
			batched++
		default:
			e.st.observe(hITL, end-s.lastTok)
		}
		s.generated++
		s.numTokens++
		s.lastTok = end
		e.st.genTokens++
		if s.generated >= s.target {
			s.done = true
			finished++
		}
	}
	e.st.observeN(hITL, end-e.prevEnd, batched)
	if finished > 0 {
		e.removeDone(end)
	}
	e.prevEnd = end
	e.now = end
}

// speculate drafts specK tokens for decoding sequence s and emits the
// accepted prefix on top of the step's own token: their KV was computed
// by the verification (blocks are taken when s is next scheduled).
func (e *engine) speculate(s *seq) {
	acc := int32(0)
	for acc < e.specK && e.rng.Float64() < s.r.accept {
		acc++
	}
	st := e.st
	st.specDrafts++
	st.specDraftTok += float64(e.specK)
	st.specAccepted += float64(acc)
	for i := range acc {
		st.specPerPos[i]++
	}
	acc = min(acc, s.target-s.generated-1)
	if acc <= 0 {
		return
	}
	s.generated += acc
	s.numTokens += acc
	s.computed += acc
	st.genTokens += float64(acc)
}

// decodeRun runs consecutive pure-decode steps while no event (arrival,
// scrape, client timeout, end of life) is due before next, in O(1) per step
// instead of O(running). It applies only when every running sequence is
// decoding, no admission is possible and enough never-used blocks are free
// for the steps taken, so the result is identical to calling step
// repeatedly (same random draws, same observations in the same order). It
// reports false, changing nothing, when it does not apply.
func (e *engine) decodeRun(next float64) bool {
	n := len(e.running)
	if n == 0 || int32(n) > e.budgetMax || e.now >= next || e.specK > 0 {
		return false
	}
	if e.waitingLen() > 0 && n < e.maxSeqs {
		return false
	}
	minRem := int32(math.MaxInt32)
	var ctx int64
	for _, s := range e.running {
		if s.generated == 0 || s.numTokens-s.computed != 1 || s.lastTok != e.prevEnd {
			return false
		}
		minRem = min(minRem, s.target-s.generated)
		ctx += int64(s.computed)
	}
	// Each sequence needs at most 1+k/B new blocks over k steps.
	free := e.total - e.held - e.idle
	kMax := min(minRem, (free/int32(n)-1)*e.B)
	if kMax < 2 {
		return false
	}
	c := &e.c
	fn := float64(n)
	var k int32
	for k < kMax && e.now < next {
		k++
		gpu := c.overhead + fn*c.decode + float64(ctx+int64(k)*int64(n))*c.attnPerTok
		if c.jitter > 0 {
			gpu *= 1 + c.jitter*(2*e.rng.Float64()-1)
		}
		cpu := c.cpuStep + fn*c.cpuSeq
		for _, w := range e.slow {
			if e.now >= w.from && e.now < w.to {
				cpu += w.step + fn*w.seq
			}
		}
		end := e.now + gpu + cpu
		e.st.gpuBusy += gpu
		e.st.cpuSeconds += cpu
		e.st.observe(hIter, fn)
		e.st.observeN(hITL, end-e.prevEnd, n)
		e.st.genTokens += fn
		e.prevEnd = end
		e.now = end
	}
	finished := 0
	for _, s := range e.running {
		s.computed += k
		s.generated += k
		s.numTokens += k
		s.lastTok = e.now
		if need := max(ceilDiv(s.computed, e.B)-s.shared, 0) - s.own; need > 0 {
			e.held += need
			s.own += need
		}
		if s.generated >= s.target {
			s.done = true
			finished++
		}
	}
	e.maxHeld = max(e.maxHeld, e.held)
	if finished > 0 {
		e.removeDone(e.now)
	}
	return true
}

// removeDone finishes the done sequences at t and drops them from the
// running list, keeping its order.
func (e *engine) removeDone(t float64) {
	kept := e.running[:0]
	for _, s := range e.running {
		if s.done {
			e.finish(s, t)
		} else {
			kept = append(kept, s)
		}
	}
	clear(e.running[len(kept):])
	e.running = kept
}

// finish records a completed request at t.
func (e *engine) finish(s *seq, t float64) {
	if e.holdLink != nil {
		// A prefill pod keeps the request's blocks until the decode pod
		// has read them (the NIXL connector frees them on the decode
		// pod's notification; vLLM's request_finished delays the free):
		// here for one transfer over the link from now.
		bytes := float64(ceilDiv(s.r.prompt, e.B)*e.B) * e.kvTok
		s.readyAt = t + e.holdLink.transferTime(t, bytes)
		e.lingering = append(e.lingering, s)
	} else {
		e.release(s)
	}
	r := s.r
	reason, name := reasonStop, "stop"
	// vLLM V1's check_stop tests the length limits before EOS.
	if s.target < r.want || s.generated == r.maxTokens || r.prompt+s.generated >= e.maxLen {
		reason, name = reasonLength, "length"
	}
	st := e.st
	st.success[reason]++
	e2e := t - r.arrival
	st.observe(hE2E, e2e)
	st.observe(hQueue, s.firstSched-r.engArr)
	st.observe(hPrefill, s.firstTok-s.firstSched)
	st.observe(hDecode, t-s.firstTok)
	st.observe(hInference, t-s.firstSched)
	if s.generated > 1 {
		st.observe(hTPOT, (t-s.firstTok)/float64(s.generated-1))
	}
	st.observe(hPromptTokens, float64(r.prompt))
	st.observe(hGenTokens, float64(s.generated))
	st.observe(hMaxGenTokens, float64(s.generated))
	st.observe(hMaxTokens, float64(r.maxTokens))
	st.observe(hN, 1)
	st.observe(hPreempt, float64(s.preempts))
	countAnswer(&st.http2xx, &st.firstOK, t)
	st.observe(hHTTPHighr, e2e+0.0005)
	st.observe(hHTTPDur, e2e+0.0004)
	st.reqBytes += 180 + 4*float64(r.prompt)
	st.respBytes += 320 + 4*float64(s.generated)
	st.cpuSeconds += 0.004 + 0.00005*float64(s.generated)

	rec := &e.recs[r.id]
	rec.Status = StatusFinished
	rec.FinishReason = name
	rec.Scheduled = dur(s.firstSched)
	rec.FirstToken = dur(s.firstTok)
	rec.Finished = dur(t)
	rec.OutputTokens = int(s.generated)
	rec.CachedTokens = int(s.cached)
	rec.Preemptions = int(s.preempts)
}

// snapshot records the engine state for a scrape at t.
func (e *engine) snapshot(t float64) (snap engineSnap) {
	var busy, pr, gr float64
	if dt := t - e.lastSnapT; dt > 0 {
		busy = min(max((e.st.gpuBusy-e.lastBusy)/dt, 0), 1)
		pr = (e.st.promptTokens - e.lastPrompt) / dt
		gr = (e.st.genTokens - e.lastGen) / dt
	}
	e.lastSnapT, e.lastBusy = t, e.st.gpuBusy
	e.lastPrompt, e.lastGen = e.st.promptTokens, e.st.genTokens
	defer e.freezeSnap(&snap)
	return engineSnap{
		promptRate:  math.Round(pr*10) / 10,
		genRate:     math.Round(gr*10) / 10,
		t:           t,
		at:          e.now,
		running:     len(e.running),
		waiting:     e.waitingLen() + len(e.deferred) + len(e.pulling),
		deferred:    len(e.deferred),
		byReason:    len(e.deferrals) > 0,
		asleep:      asleepAt(e.sleeps, t),
		sleepFamily: e.sleepFam,
		kvUsage:     float64(e.held) / float64(e.total),
		busyFrac:    busy,
		st:          e.st.clone(),
	}
}

// run simulates the engine from e.now until end, feeding it reqs (sorted
// by engine arrival) and taking a snapshot at every scrape instant. It
// returns the snapshots and marks the requests still in the engine at end
// with status left.
func (e *engine) run(reqs []*request, scrapes []float64, end float64, left Status) []engineSnap {
	seqs := make([]seq, len(reqs))
	snaps := make([]engineSnap, 0, len(scrapes))
	i, si := 0, 0
	for {
		e.expire()
		e.massAbort()
		e.undefer()
		e.pulledKV()
		e.freeRead()
		for si < len(scrapes) && scrapes[si] <= e.now {
			snaps = append(snaps, e.snapshot(scrapes[si]))
			si++
		}
		if e.now >= end {
			break
		}
		for i < len(reqs) && reqs[i].engArr <= e.now {
			e.enqueue(reqs[i], &seqs[i])
			i++
		}
		if len(e.running) == 0 && e.waitingLen() == 0 {
			next := end
			if i < len(reqs) && reqs[i].engArr < next {
				next = reqs[i].engArr
			}
			if si < len(scrapes) && scrapes[si] < next {
				next = scrapes[si]
			}
			if e.freezeAt > e.now {
				next = min(next, e.freezeAt)
			}
			next = min(next, e.nextUndefer(), e.nextPulled())
			e.now = next
			e.prevEnd = math.Inf(-1)
			continue
		}
		next := end
		if i < len(reqs) {
			next = min(next, reqs[i].engArr)
		}
		if si < len(scrapes) {
			next = min(next, scrapes[si])
		}
		if e.timeout > 0 || e.deadline > 0 {
			next = min(next, e.nextExpiry())
		}
		if e.freezeAt > e.now {
			next = min(next, e.freezeAt)
		}
		next = min(next, e.nextPulled())
		if to, ok := e.stallUntil(e.now); ok {
			// The scheduler stands still: only arrivals and scrapes
			// happen until the stall ends.
			e.now = min(next, to)
			e.prevEnd = math.Inf(-1)
			continue
		}
		next = e.beforeStall(next)
		if e.noMacro || !e.decodeRun(next) {
			e.step()
		}
	}
	mark := func(s *seq) {
		rec := &e.recs[s.r.id]
		rec.Status = left
		rec.Finished = dur(end)
		if !math.IsNaN(s.firstSched) {
			rec.Scheduled = dur(s.firstSched)
		}
		if !math.IsNaN(s.firstTok) {
			rec.FirstToken = dur(s.firstTok)
		}
		rec.OutputTokens = int(s.generated)
		rec.Preemptions = int(s.preempts)
	}
	for _, s := range e.running {
		mark(s)
	}
	for _, s := range e.front {
		mark(s)
	}
	for _, s := range e.queue[e.qh:] {
		mark(s)
	}
	for _, s := range e.deferred {
		mark(s)
	}
	for _, s := range e.pulling {
		mark(s)
	}
	for _, r := range reqs[i:] {
		rec := &e.recs[r.id]
		rec.Status = left
		rec.Finished = dur(end)
	}
	return snaps
}
