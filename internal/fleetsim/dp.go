package fleetsim

import (
	"fmt"
	"time"
)

// EngineSkew makes the router among a pod's data-parallel engines favour
// some of them from From to To: each request the pod gets goes to an
// engine by smooth weighted round-robin over Weights (one per engine;
// zero sends it none), as a balancer that misreads its engines' queues
// does (vLLM #48808). Outside every skew the engines take turns.
type EngineSkew struct {
	From, To time.Duration
	Weights  []float64
}

// checkEngineSkews validates the pod's skews against its engine count.
func (p *PodConfig) checkEngineSkews() error {
	for _, s := range p.EngineSkews {
		if len(s.Weights) != p.DataParallel {
			return fmt.Errorf("fleetsim: pod %s: engine skew from %v has %d weights for %d engines", p.Name, s.From, len(s.Weights), p.DataParallel)
		}
		total := 0.0
		for _, w := range s.Weights {
			if w < 0 {
				return fmt.Errorf("fleetsim: pod %s: engine skew from %v: negative weight", p.Name, s.From)
			}
			total += w
		}
		if !(total > 0) || s.To <= s.From {
			return fmt.Errorf("fleetsim: pod %s: engine skew from %v to %v: need a positive weight and From < To", p.Name, s.From, s.To)
		}
	}
	return nil
}

// pickEngine returns the engine of pod that takes a request arriving at
// t (offset seconds).
func (r *router) pickEngine(pod int, t float64) int {
	p := &r.c.Pods[pod]
	for _, s := range p.EngineSkews {
		if t < s.From.Seconds() || t >= s.To.Seconds() {
			continue
		}
		if r.engCur == nil {
			r.engCur = map[int][]float64{}
		}
		cur := r.engCur[pod]
		if cur == nil {
			cur = make([]float64, p.DataParallel)
			r.engCur[pod] = cur
		}
		total, best := 0.0, -1
		for i, w := range s.Weights {
			if w <= 0 {
				continue
			}
			cur[i] += w
			total += w
			if best < 0 || cur[i] > cur[best] {
				best = i
			}
		}
		cur[best] -= total
		return best
	}
	e := r.engNext[pod] % p.DataParallel
	r.engNext[pod]++
	return e
}
