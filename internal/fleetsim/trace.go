package fleetsim

import (
	"math"
	"math/rand/v2"
	"slices"
)

// request is one request of the trace. Times are seconds from the start of
// the run (negative during warm-up).
type request struct {
	id        int32
	pod       int16
	engine    int16
	arrival   float64 // at the API server
	engArr    float64 // at the engine, after the frontend
	prompt    int32
	want      int32 // output length the model would produce unbounded
	maxTokens int32
	group     int64 // prefix group key, -1 for none
	prefixLen int32
	accept    float64 // speculative acceptance per draft token (Phase.SpecAccept)
	// dpod and deng are the decode pod and engine of a disaggregated
	// fleet (pod and engine are then the prefill ones); remote marks the
	// decode leg, whose prompt KV comes over the KV link.
	dpod, deng int16
	remote     bool
}

// trace generates the request trace of c: Poisson arrivals per phase and
// burst, request shapes and routing. It depends only on TraceSeed,
// Workload, the pods' weights and restarts, Warmup and Duration, never on
// engine settings other than the frontend cost, so that [Replay] sees the
// same requests.
func trace(c *Config, warmup float64) []request {
	rng := rand.New(rand.NewPCG(c.TraceSeed, 0x9e3779b97f4a7c15))
	end := c.Duration.Seconds()
	phases := c.Workload.Phases
	phaseAt := func(t float64) int {
		i := 0
		for j := range phases {
			if phases[j].Start.Seconds() <= t {
				i = j
			}
		}
		return i
	}
	// Arrival times: one Poisson stream per phase segment and per burst.
	var times []float64
	for i, ph := range phases {
		from := ph.Start.Seconds()
		if i == 0 {
			from = -warmup
		}
		to := end
		if i+1 < len(phases) {
			to = phases[i+1].Start.Seconds()
		}
		if ph.RampTo > 0 {
			times = ramp(rng, times, ph.Rate, ph.RampTo, math.Max(from, ph.Start.Seconds()), to, from)
			continue
		}
		times = poisson(rng, times, ph.Rate, from, to)
	}
	for _, b := range c.Workload.Bursts {
		from := b.At.Seconds()
		times = poisson(rng, times, b.Rate, from, math.Min(from+b.Length.Seconds(), end))
	}
	slices.Sort(times)

	zipfs := map[[2]float64]*rand.Zipf{}
	rr := newRouter(c)
	var rd *router
	if c.disaggregated() {
		// The prefill and decode legs are routed among the pods of
		// their role (llm-d's scheduler picks one of each).
		rr.allow = func(i int) bool { return c.Pods[i].Role == RolePrefill }
		rd = newRouter(c)
		rd.allow = func(i int) bool { return c.Pods[i].Role == RoleDecode }
	}
	reqs := make([]request, 0, len(times))
	for _, t := range times {
		pi := phaseAt(t)
		ph := &phases[pi]
		r := request{
			id:        int32(len(reqs)),
			arrival:   t,
			maxTokens: int32(ph.MaxTokens),
			group:     -1,
			accept:    ph.SpecAccept,
		}
		r.prompt = int32(ph.Prompt.draw(rng))
		r.want = int32(ph.Output.draw(rng))
		if ph.PrefixGroups > 0 && ph.PrefixLen > 0 && rng.Float64() < ph.PrefixShare {
			skew := ph.PrefixSkew
			if skew == 0 {
				skew = 1.2
			}
			var k int64
			if skew <= 1 {
				k = rng.Int64N(int64(ph.PrefixGroups))
			} else {
				key := [2]float64{float64(ph.PrefixGroups), skew}
				z := zipfs[key]
				if z == nil {
					z = rand.NewZipf(rng, skew, 1, uint64(ph.PrefixGroups-1))
					zipfs[key] = z
				}
				k = int64(z.Uint64())
			}
			if ph.PrefixUnique > 0 && rng.Float64() < ph.PrefixUnique {
				k = 1<<32 + int64(len(reqs)) // never shared
			}
			r.group = k<<20 | int64(ph.PrefixLen)
			r.prefixLen = int32(ph.PrefixLen)
			r.prompt += int32(ph.PrefixLen)
		}
		r.pod, r.engine = rr.route(t, ph)
		r.dpod = -1
		if rd != nil {
			r.dpod, r.deng = rd.route(t, ph)
		}
		reqs = append(reqs, r)
	}
	return reqs
}

// poisson appends the arrival instants of a Poisson process of the given
// rate on [from, to).
func poisson(rng *rand.Rand, dst []float64, rate, from, to float64) []float64 {
	if rate <= 0 {
		return dst
	}
	for t := from + rng.ExpFloat64()/rate; t < to; t += rng.ExpFloat64() / rate {
		dst = append(dst, t)
	}
	return dst
}

// ramp appends the arrival instants on [from, to) of a Poisson process
// whose rate moves linearly from r0 at start to r1 at to (r0 before
// start, during a warm-up), by thinning a process at the larger rate.
func ramp(rng *rand.Rand, dst []float64, r0, r1, start, to, from float64) []float64 {
	top := math.Max(r0, r1)
	if top <= 0 || to <= start {
		return poisson(rng, dst, r0, from, to)
	}
	rate := func(t float64) float64 {
		if t <= start {
			return r0
		}
		return r0 + (r1-r0)*(t-start)/(to-start)
	}
	for t := from + rng.ExpFloat64()/top; t < to; t += rng.ExpFloat64() / top {
		if rng.Float64()*top < rate(t) {
			dst = append(dst, t)
		}
	}
	return dst
}

// draw returns one token count from d.
func (d Dist) draw(rng *rand.Rand) int {
	med, sig := d.Median, d.Sigma
	if d.TailWeight > 0 && rng.Float64() < d.TailWeight {
		med, sig = d.TailMedian, d.TailSigma
	}
	v := med
	if sig > 0 {
		v = med * math.Exp(sig*rng.NormFloat64())
	}
	n := int(math.Round(v))
	lo := d.Min
	if lo < 1 {
		lo = 1
	}
	if n < lo {
		n = lo
	}
	if d.Max > 0 && n > d.Max {
		n = d.Max
	}
	return n
}

// router spreads requests over pods by smooth weighted round-robin (the
// algorithm of nginx), skipping pods that are down, and over the engines
// of a pod round-robin.
type router struct {
	c       *Config
	current []float64
	engNext []int
	engCur  map[int][]float64 // per pod: smooth weighted round-robin state of an EngineSkew
	windows [][][2]float64    // per pod: [from, to) restart downtimes
	allow   func(int) bool    // the pods it routes to; nil for all
}

func newRouter(c *Config) *router {
	r := &router{c: c, current: make([]float64, len(c.Pods)), engNext: make([]int, len(c.Pods))}
	r.windows = make([][][2]float64, len(c.Pods))
	for i, p := range c.Pods {
		for _, rs := range p.Restarts {
			a := rs.At.Seconds()
			r.windows[i] = append(r.windows[i], [2]float64{a, a + rs.Downtime.Seconds()})
		}
	}
	return r
}

// up reports whether pod i serves requests at t.
func (r *router) up(i int, t float64) bool {
	for _, w := range r.windows[i] {
		if t >= w[0] && t < w[1] {
			return false
		}
	}
	return true
}

// route picks the pod and engine of a request arriving at t; pod -1 means
// every pod is down.
func (r *router) route(t float64, ph *Phase) (int16, int16) {
	total, best := 0.0, -1
	for i := range r.c.Pods {
		w := r.c.Pods[i].Weight
		if ph.Weights != nil {
			w = ph.Weights[i]
		}
		if w <= 0 || !r.up(i, t) || (r.allow != nil && !r.allow(i)) {
			continue
		}
		r.current[i] += w
		total += w
		if best < 0 || r.current[i] > r.current[best] {
			best = i
		}
	}
	if best < 0 {
		return -1, 0
	}
	r.current[best] -= total
	return int16(best), int16(r.pickEngine(best, t))
}
