package fleetsim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"time"
)

// Warmup is how long the fleet is simulated before offset 0: pods start
// Warmup before the run, so the first scrape already shows a warm engine
// with non-zero counters.
const Warmup = 5 * time.Minute

// Status is the fate of a request.
type Status uint8

const (
	// StatusInFlight: still waiting or running when the run ended.
	StatusInFlight Status = iota
	// StatusFinished: completed with reason "stop" or "length".
	StatusFinished
	// StatusAborted: the client gave up, while the request waited
	// (Workload.ClientTimeout, ClientDeadline) or while it streamed
	// (ClientDeadline); vLLM counts finished_reason="abort" unless
	// Workload.Abandon is AbandonUncounted.
	StatusAborted
	// StatusLost: in flight when its pod restarted, or sent while every
	// pod was down; no pod counts it.
	StatusLost
	// StatusRejected: prompt longer than the model's context; the API
	// server answers HTTP 400 (http_requests_total status="4xx").
	StatusRejected
	// StatusFailed: the API server answered HTTP 500 (PodConfig.ServerErrors)
	// before the request reached the engine.
	StatusFailed
	// StatusRefused: the API server refused the request at admission
	// with HTTP 503 (EngineConfig.MaxNumQueuedReqs, MaxNumQueuedTokens):
	// it counts in vllm:admission_rejections_total and
	// http_requests_total{status="5xx"}, in no other vLLM metric.
	StatusRefused
)

var statusNames = [...]string{"in-flight", "finished", "aborted", "lost", "rejected", "failed", "refused"}

// String returns the status in lower case, e.g. "finished".
func (s Status) String() string { return enumString(s, "Status", statusNames[:]) }

// enumString returns the name of v in names, indexed by value, or
// "typ(v)" for a value without a name: the String method of the
// package's int enums.
func enumString[E ~int | ~uint8](v E, typ string, names []string) string {
	if v >= 0 && int(v) < len(names) && names[v] != "" {
		return names[v]
	}
	return fmt.Sprintf("%s(%d)", typ, int(v))
}

// Request is the simulator's ground truth about one request. Times are
// offsets from Config.Start (negative during warm-up); a time the request
// never reached is NaNDuration.
type Request struct {
	ID     int
	Pod    int // index in Fleet.Pods, -1 if no pod was up
	Engine int
	// PrefillPod is, in a disaggregated fleet, the prefill pod that
	// computed the prompt (Pod and Engine are then the decode pod's);
	// -1 otherwise. The request's times are the user's: Arrival at the
	// first pod, FirstToken and Finished on the decode pod.
	PrefillPod int
	// Arrival at the API server; Queued when it reached the engine.
	Arrival, Queued time.Duration
	// Scheduled is the first scheduling, FirstToken the first output
	// token, Finished the end (completion, abort, loss or end of run).
	Scheduled, FirstToken, Finished time.Duration
	PromptTokens                    int
	MaxTokens                       int
	OutputTokens                    int // tokens generated
	CachedTokens                    int // prefix-cache hit at first scheduling
	PrefixGroup                     int // -1 for none
	Preemptions                     int
	Status                          Status
	FinishReason                    string // "stop", "length", "abort" or ""
}

// NaNDuration marks a time a request never reached.
const NaNDuration = time.Duration(math.MinInt64)

// TTFT returns the time to first token, or NaNDuration.
func (r *Request) TTFT() time.Duration {
	if r.FirstToken == NaNDuration {
		return NaNDuration
	}
	return r.FirstToken - r.Arrival
}

// QueueTime returns the time from engine arrival to first scheduling, or
// NaNDuration.
func (r *Request) QueueTime() time.Duration {
	if r.Scheduled == NaNDuration {
		return NaNDuration
	}
	return r.Scheduled - r.Queued
}

func dur(sec float64) time.Duration {
	if math.IsNaN(sec) {
		return NaNDuration
	}
	return time.Duration(math.Round(sec * 1e9))
}

// Fleet is the result of a run: per-pod scrapes and the ground truth.
type Fleet struct {
	// Config is the configuration with every default filled in.
	Config Config
	// Pods in the order of Config.Pods.
	Pods []*Pod
	// Requests holds every request of the trace in arrival order
	// (Request.ID is the index).
	Requests []Request
}

// Pod is one simulated replica.
type Pod struct {
	Name string
	// Index is the pod's position in Fleet.Pods and Request.Pod.
	Index   int
	Version Version
	// Engine is the pod's resolved engine configuration (defaults and
	// derived NumGPUBlocks filled in).
	Engine       EngineConfig
	DataParallel int
	// Instance is the host:port Prometheus would scrape (label instance).
	Instance string
	// Node is the Kubernetes node, GPUInstance the DCGM exporter target.
	Node, GPUInstance string
	// Starts are the process start times (offsets); Starts[0] is -Warmup.
	Starts []time.Duration
	// Names and Instances are the pod's name and address during each
	// process (parallel to Starts): a restart may rename or readdress the
	// pod (Restart.Name, Restart.Instance).
	Names, Instances []string
	// Scrapes in time order; none while the pod is down.
	Scrapes []*Scrape
	// MaxRunning and MaxKVBlocks are the largest number of running
	// sequences and of used KV blocks any engine of the pod reached.
	MaxRunning, MaxKVBlocks int
	// Preemptions is the total number of preemptions over all processes.
	Preemptions int

	fleet *Fleet
	skew  time.Duration // offset of the pod's scrape grid
}

// Scrape is one scrape of a pod: the vLLM /metrics page and, with a GPU
// exporter, the DCGM page, plus the engine state behind them.
type Scrape struct {
	Time time.Time
	// Offset is Time - Config.Start.
	Offset time.Duration
	// Engines holds the true state of each engine at the scrape.
	Engines []EngineState

	pod   *Pod
	proc  int // index into pod.Starts
	snaps []engineSnap
}

// EngineState is the truth about one engine at a scrape instant.
type EngineState struct {
	Running, Waiting int
	// KVUsage is the fraction of KV blocks in use (0..1).
	KVUsage float64
	// GPUBusy is the fraction of wall time the GPU was busy since the
	// previous scrape (or process start).
	GPUBusy float64
	// Preemptions, PrefixQueries and PrefixHits are cumulative since the
	// process started.
	Preemptions, PrefixQueries, PrefixHits float64
	// Finished counts completed requests (stop+length) and Aborted the
	// client aborts since the process started.
	Finished, Aborted float64
}

// Pod returns the pod the scrape belongs to.
func (sc *Scrape) Pod() *Pod { return sc.pod }

// PodName returns the pod's name at the scrape (see Restart.Name).
func (sc *Scrape) PodName() string { return sc.pod.Names[sc.proc] }

// Instance returns the pod's address at the scrape (see Restart.Instance).
func (sc *Scrape) Instance() string { return sc.pod.Instances[sc.proc] }

// ProcessStart returns the start time of the process that served the
// scrape (process_start_time_seconds).
func (sc *Scrape) ProcessStart() time.Time {
	return sc.pod.fleet.Config.Start.Add(sc.pod.Starts[sc.proc])
}

// Run simulates the fleet described by cfg. The result depends only on cfg:
// the same configuration always yields the same fleet, byte for byte.
func Run(cfg Config) (*Fleet, error) {
	return run(cfg, false)
}

// run is Run; noMacro disables the decode fast path (for tests).
func run(cfg Config, noMacro bool) (*Fleet, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	warm := Warmup.Seconds()
	reqs := trace(&c, warm)
	f := &Fleet{Config: c, Requests: make([]Request, len(reqs))}
	perPod := make([][]*request, len(c.Pods))
	for i := range reqs {
		r := &reqs[i]
		f.Requests[i] = Request{
			ID: i, Pod: int(r.pod), Engine: int(r.engine), PrefillPod: -1,
			Arrival: dur(r.arrival), Queued: NaNDuration,
			Scheduled: NaNDuration, FirstToken: NaNDuration, Finished: NaNDuration,
			PromptTokens: int(r.prompt), MaxTokens: int(r.maxTokens),
			PrefixGroup: -1, Status: StatusInFlight,
		}
		if r.group >= 0 {
			f.Requests[i].PrefixGroup = int(r.group >> 20)
		}
		if r.pod < 0 {
			f.Requests[i].Status = StatusLost
			f.Requests[i].Finished = f.Requests[i].Arrival
			continue
		}
		perPod[r.pod] = append(perPod[r.pod], r)
	}
	if c.disaggregated() {
		runDisaggregated(f, reqs, perPod, noMacro)
		return f, nil
	}
	// Pods are independent once requests are routed: simulate them in
	// parallel, each with its own generator drawn in pod order so that the
	// result does not depend on scheduling.
	rng := rand.New(rand.NewPCG(c.Seed, 0x5851f42d4c957f2d))
	f.Pods = make([]*Pod, len(c.Pods))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i := range c.Pods {
		prng := rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			f.Pods[i] = simulatePod(f, i, perPod[i], prng, noMacro, f.Requests)
		})
	}
	wg.Wait()
	return f, nil
}

// runDisaggregated simulates a fleet with prefill and decode pods: the
// prefill pods first, each request's prefill leg asking for one token
// (max_tokens=1, as llm-d's routing sidecar and vLLM's toy proxy send
// it), then the decode pods, whose leg of each request arrives when its
// prefill leg has finished and reads the prompt's KV over the KV link.
// The ground truth of a request is the user's: its arrival, the decode
// pod's first token and finish.
func runDisaggregated(f *Fleet, reqs []request, perPod [][]*request, noMacro bool) {
	c := &f.Config
	rng := rand.New(rand.NewPCG(c.Seed, 0x5851f42d4c957f2d))
	prngs := make([]*rand.Rand, len(c.Pods))
	for i := range prngs {
		prngs[i] = rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))
	}
	f.Pods = make([]*Pod, len(c.Pods))
	// The prefill legs, with their own records.
	pre := slices.Clone(f.Requests)
	legs := make([]request, len(reqs))
	for i := range reqs {
		legs[i] = reqs[i]
		legs[i].maxTokens = 1
	}
	perRole := func(role string, recs []Request) {
		sem := make(chan struct{}, runtime.GOMAXPROCS(0))
		var wg sync.WaitGroup
		for i := range c.Pods {
			if c.Pods[i].Role != role {
				continue
			}
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				f.Pods[i] = simulatePod(f, i, perPod[i], prngs[i], noMacro, recs)
			})
		}
		wg.Wait()
	}
	for pi := range perPod {
		for k, r := range perPod[pi] {
			perPod[pi][k] = &legs[r.id]
		}
	}
	perRole(RolePrefill, pre)
	// The decode legs: sent once the prefill leg has answered.
	perPod = make([][]*request, len(c.Pods))
	dec := make([]request, len(reqs))
	for i := range reqs {
		r := &reqs[i]
		p := &pre[i]
		rec := &f.Requests[i]
		rec.PrefillPod = int(r.pod)
		if r.pod < 0 {
			continue
		}
		rec.Pod, rec.Engine = int(r.dpod), int(r.deng)
		if p.Status != StatusFinished || r.dpod < 0 {
			// The prefill leg failed or never ended, or no decode pod
			// was up: so did the request.
			*rec = *p
			rec.Pod, rec.Engine, rec.PrefillPod = int(r.dpod), int(r.deng), int(r.pod)
			if p.Status == StatusFinished {
				rec.Status, rec.FinishReason = StatusLost, ""
				rec.FirstToken = NaNDuration
			}
			continue
		}
		d := *r
		d.pod, d.engine = r.dpod, r.deng
		d.arrival = p.Finished.Seconds()
		d.group, d.prefixLen = -1, 0
		d.remote = true
		dec[i] = d
		perPod[d.pod] = append(perPod[d.pod], &dec[i])
	}
	perRole(RoleDecode, f.Requests)
}

// simulatePod runs every process lifetime of pod i, writing the fate of
// its requests into recs.
func simulatePod(f *Fleet, i int, reqs []*request, rng *rand.Rand, noMacro bool, recs []Request) *Pod {
	c := &f.Config
	pc := &c.Pods[i]
	p := &Pod{
		Name: pc.Name, Index: i, Version: pc.Version, Engine: *pc.Engine,
		DataParallel: pc.DataParallel,
		Instance:     fmt.Sprintf("10.42.%d.%d:8000", i/200, 10+i%200),
		Node:         fmt.Sprintf("gpu-node-%d", i),
		GPUInstance:  fmt.Sprintf("10.0.%d.%d:9400", i/200, 20+i%200),
		fleet:        f,
	}
	end := c.Duration.Seconds()
	skew := 0.0
	if c.ScrapeSkew > 0 {
		skew = float64(rng.IntN(int(c.ScrapeSkew/time.Second) + 1))
	}
	p.skew = dur(skew)
	var scrapeTimes []float64
	for t := skew; t <= end+1e-9; t += c.ScrapeInterval.Seconds() {
		scrapeTimes = append(scrapeTimes, t)
	}
	restarts := slices.Clone(pc.Restarts)
	slices.SortFunc(restarts, func(a, b Restart) int { return int(a.At - b.At) })
	// A process lives in [from, to); during a graceful stop's drain the
	// router sends it nothing (the pod is down from Restart.At) and it
	// finishes what it holds.
	type life struct {
		from, to       float64
		name, instance string
	}
	lives := []life{{from: -Warmup.Seconds(), name: p.Name, instance: p.Instance}}
	for _, r := range restarts {
		cur := &lives[len(lives)-1]
		cur.to = (r.At + r.Drain).Seconds()
		next := life{from: (r.At + r.Downtime).Seconds(), name: cur.name, instance: cur.instance}
		if r.Name != "" {
			next.name = r.Name
		}
		if r.Instance != "" {
			next.instance = r.Instance
		}
		lives = append(lives, next)
	}
	lives[len(lives)-1].to = end + 1e-6

	var slow []slowWin
	for _, s := range append(slices.Clone(c.Workload.Slowdowns), pc.Slowdowns...) {
		slow = append(slow, slowWin{s.From.Seconds(), s.To.Seconds(), s.CPUPerStep.Seconds(), s.CPUPerSeq.Seconds()})
	}
	lay := newLayout(pc.Version, pc.Engine.MaxModelLen)
	cs := newCosts(pc.Engine.Cost)
	sleepFam := slices.ContainsFunc(c.Pods, func(q PodConfig) bool { return len(q.Sleeps) > 0 })
	for _, r := range reqs {
		r.engArr = r.arrival + cs.frontReq + float64(r.prompt)*cs.frontTok
	}
	for li, L := range lives {
		p.Starts = append(p.Starts, dur(L.from))
		p.Names = append(p.Names, L.name)
		p.Instances = append(p.Instances, L.instance)
		var st []float64
		for _, t := range scrapeTimes {
			if t >= L.from && t < L.to {
				st = append(st, t)
			}
		}
		left := StatusLost
		if li == len(lives)-1 {
			left = StatusInFlight
		}
		snaps := make([][]engineSnap, pc.DataParallel)
		for ei := range pc.DataParallel {
			var mine []*request
			for _, r := range reqs {
				if int(r.engine) == ei && r.arrival >= L.from && r.arrival < L.to {
					mine = append(mine, r)
				}
			}
			slices.SortStableFunc(mine, func(a, b *request) int {
				switch {
				case a.engArr < b.engArr:
					return -1
				case a.engArr > b.engArr:
					return 1
				}
				return 0
			})
			erng := rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))
			e := newEngine(pc.Engine, lay, slow, c.Workload.ClientTimeout.Seconds(), erng, recs, L.from)
			switch pc.Role {
			case RoleDecode:
				e.link, e.kvTok = &c.KVLink, pc.Engine.Memory.KVBytesPerToken
			case RolePrefill:
				e.holdLink, e.kvTok = &c.KVLink, pc.Engine.Memory.KVBytesPerToken
			}
			e.noMacro = noMacro
			e.deadline = c.Workload.ClientDeadline.Seconds()
			e.countAbort = c.Workload.Abandon != AbandonUncounted
			e.errs = pc.ServerErrors
			e.stalls = pc.Stalls
			e.deferrals = pc.Deferrals
			e.sleeps = pc.Sleeps
			e.sleepFam = sleepFam
			if len(pc.Freezes) > 0 {
				e.freezeAt = pc.Freezes[0].At.Seconds()
			}
			snaps[ei] = e.run(mine, st, L.to, left)
			p.MaxRunning = max(p.MaxRunning, e.maxRunning)
			p.MaxKVBlocks = max(p.MaxKVBlocks, int(e.maxHeld))
			p.Preemptions += int(e.st.preemptions)
		}
		for k, t := range st {
			sc := &Scrape{
				Time:   c.Start.Add(dur(t)),
				Offset: dur(t),
				pod:    p,
				proc:   li,
			}
			for ei := range pc.DataParallel {
				sn := snaps[ei][k]
				sn.st.lay = lay
				sc.snaps = append(sc.snaps, sn)
				sc.Engines = append(sc.Engines, EngineState{
					Running: sn.running, Waiting: sn.waiting, KVUsage: sn.kvUsage, GPUBusy: sn.busyFrac,
					Preemptions: sn.st.preemptions, PrefixQueries: sn.st.prefixQueries, PrefixHits: sn.st.prefixHits,
					Finished: sn.st.success[reasonStop] + sn.st.success[reasonLength],
					Aborted:  sn.st.success[reasonAbort],
				})
			}
			p.Scrapes = append(p.Scrapes, sc)
		}
	}
	return p
}

// AbandonCount is the simulator's truth about abandoned requests.
type AbandonCount struct {
	// Total is the number of requests whose client gave up.
	Total int
	// Traceable is the number of them whose prefill had finished (a first
	// token was produced): vllm:prompt_tokens_total counts their prompt
	// tokens and TTFT their first token. The others left the queue
	// without a trace in vLLM's metrics.
	Traceable int
	// TraceablePromptTokens is the sum of the prompt tokens of the
	// traceable ones.
	TraceablePromptTokens int
}

// Abandoned counts the requests whose client gave up (StatusAborted) at
// an offset in [from, to).
func (f *Fleet) Abandoned(from, to time.Duration) AbandonCount {
	var n AbandonCount
	for i := range f.Requests {
		r := &f.Requests[i]
		if r.Status != StatusAborted || r.Finished < from || r.Finished >= to {
			continue
		}
		n.Total++
		if r.FirstToken != NaNDuration {
			n.Traceable++
			n.TraceablePromptTokens += r.PromptTokens
		}
	}
	return n
}
