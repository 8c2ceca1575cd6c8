package fleetsim

import (
	"math"
	"time"
)

// Engine faults of operators' incidents: a scheduler that
// stops, and gauges that stop updating after a mass abort.

// Stall stops the engine's scheduler of a pod from From to To (offsets):
// no step runs, so nothing is admitted, prefilled, decoded or finished;
// requests keep arriving and wait; the running batch stays as it was
// (vLLM #45388, #45414: /health still answers 200).
type Stall struct {
	From, To time.Duration
}

// Freeze is a mass abort at At (offset) after which the pod's scheduler
// gauges stop updating (vLLM #22545, #29928): every request in the engine
// is aborted by its client at At, and from then on vllm:num_requests_running,
// vllm:num_requests_waiting and the KV usage report the values they had
// just before the abort, while the counters show what really happens.
type Freeze struct {
	At time.Duration
}

// frozenGauges are the gauge values a Freeze keeps.
type frozenGauges struct {
	running, waiting int
	kv               float64
}

// stallUntil returns the end of the Stall that holds at t, if any.
func (e *engine) stallUntil(t float64) (float64, bool) {
	for _, s := range e.stalls {
		if t >= s.From.Seconds() && t < s.To.Seconds() {
			return s.To.Seconds(), true
		}
	}
	return 0, false
}

// beforeStall caps next at the start of the next Stall after the engine
// clock, so that no step runs into a stall.
func (e *engine) beforeStall(next float64) float64 {
	for _, s := range e.stalls {
		if from := s.From.Seconds(); from > e.now && from < next {
			next = from
		}
	}
	return next
}

// massAbort applies a Freeze whose time has come: it keeps the gauges'
// values and aborts every request in the engine, as clients that all
// disconnect at once.
func (e *engine) massAbort() {
	if e.frozen != nil || e.freezeAt <= 0 || e.now < e.freezeAt {
		return
	}
	e.frozen = &frozenGauges{running: len(e.running), waiting: e.waitingLen(), kv: float64(e.held) / float64(e.total)}
	for _, s := range e.running {
		e.release(s)
		e.abandon(s)
		s.done = true
	}
	clear(e.running)
	e.running = e.running[:0]
	for _, s := range e.front {
		e.release(s) // a decode leg whose KV arrived holds blocks
		e.abandon(s)
	}
	clear(e.front)
	e.front = e.front[:0]
	for _, s := range e.pulling {
		e.release(s)
		e.abandon(s)
	}
	clear(e.pulling)
	e.pulling = e.pulling[:0]
	for e.qh < len(e.queue) {
		s := e.queue[e.qh]
		e.popQueue()
		e.abandon(s)
	}
	e.prevEnd = math.Inf(-1)
}

// freezeSnap replaces the gauges of a snapshot taken after a Freeze.
func (e *engine) freezeSnap(s *engineSnap) {
	if e.frozen != nil {
		s.running, s.waiting, s.kvUsage = e.frozen.running, e.frozen.waiting, e.frozen.kv
	}
}

// Deferral holds every request that reaches a pod's engine from From to
// To (offsets) out of scheduling until To, as vLLM's scheduler defers
// requests blocked by a transient constraint (a KV transfer, the LoRA
// budget, a blocked status; vLLM #53130): they count in
// vllm:num_requests_waiting and in
// vllm:num_requests_waiting_by_reason{reason="deferred"}, which the pod
// exports when it has a Deferral. Requests already admitted run on.
type Deferral struct {
	From, To time.Duration
}

// deferUntil returns the end of the Deferral that holds at t, if any.
func (e *engine) deferUntil(t float64) (float64, bool) {
	for _, d := range e.deferrals {
		if t >= d.From.Seconds() && t < d.To.Seconds() {
			return d.To.Seconds(), true
		}
	}
	return 0, false
}

// push queues s, or defers it while a Deferral holds.
func (e *engine) push(s *seq) {
	if _, ok := e.deferUntil(e.now); ok {
		e.deferred = append(e.deferred, s)
		return
	}
	e.queue = append(e.queue, s)
}

// undefer queues the deferred requests once no Deferral holds.
func (e *engine) undefer() {
	if len(e.deferred) == 0 {
		return
	}
	if _, ok := e.deferUntil(e.now); ok {
		return
	}
	e.queue = append(e.queue, e.deferred...)
	clear(e.deferred)
	e.deferred = e.deferred[:0]
}

// nextUndefer is when the deferred requests are queued, +Inf for none.
func (e *engine) nextUndefer() float64 {
	if to, ok := e.deferUntil(e.now); ok && len(e.deferred) > 0 {
		return to
	}
	return math.Inf(1)
}

// waitingByReason adds vllm:num_requests_waiting_by_reason (vLLM 0.30's
// help text, reasons capacity and deferred) when the pod has a Deferral.
func (b *famBuilder) waitingByReason() {
	if len(b.sc.snaps) == 0 || !b.sc.snaps[0].byReason {
		return
	}
	f := family{name: "vllm:num_requests_waiting_by_reason", typ: typeGauge,
		help: "Number of waiting requests by reason. Reason labels: 'capacity' = waiting for scheduling capacity; 'deferred' = deferred by transient constraints (LoRA budget, KV transfer, blocked status). Sum of all reasons equals vllm:num_requests_waiting."}
	for i := range b.sc.snaps {
		s := &b.sc.snaps[i]
		f.series = append(f.series,
			series{labels: b.engineLabels(i, label{"reason", "capacity"}), value: float64(s.waiting - s.deferred), created: b.created()},
			series{labels: b.engineLabels(i, label{"reason", "deferred"}), value: float64(s.deferred), created: b.created()})
	}
	b.add(f)
}

// Sleep puts a pod's engines to sleep (vLLM's sleep mode, level 1: the
// weights offloaded, the KV cache discarded) from From to To (offsets),
// as an operator does to a model nobody uses: the pod reports
// vllm:engine_sleep_state{sleep_state="awake"} 0 and
// {sleep_state="weights_offloaded"} 1 meanwhile. The router is not told:
// whoever puts the pod to sleep takes it out of rotation first (a phase's
// Weights). A fleet with a Sleep exports vllm:engine_sleep_state on every
// V1 pod, as vLLM 0.30 does.
type Sleep struct {
	From, To time.Duration
}

// asleepAt reports whether one of sleeps holds at t (offset seconds).
func asleepAt(sleeps []Sleep, t float64) bool {
	for _, s := range sleeps {
		if t >= s.From.Seconds() && t < s.To.Seconds() {
			return true
		}
	}
	return false
}

// sleepState adds vllm:engine_sleep_state (vLLM 0.30's help text and
// labels) when the fleet has a Sleep.
func (b *famBuilder) sleepState() {
	if len(b.sc.snaps) == 0 || !b.sc.snaps[0].sleepFamily {
		return
	}
	f := family{name: "vllm:engine_sleep_state", typ: typeGauge,
		help: "Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means engine is awake; weights_offloaded = 1 means sleep level 1; discard_all = 1 means sleep level 2."}
	for i := range b.sc.snaps {
		awake, offloaded := 1.0, 0.0
		if b.sc.snaps[i].asleep {
			awake, offloaded = 0, 1
		}
		// vLLM writes sleep_state after model_name (the 0.30 capture).
		st := func(s string) []label { return append(b.engineLabels(i), label{"sleep_state", s}) }
		f.series = append(f.series,
			series{labels: st("awake"), value: awake},
			series{labels: st("weights_offloaded"), value: offloaded},
			series{labels: st("discard_all"), value: 0})
	}
	b.add(f)
}

// admissionRejections adds vllm:admission_rejections_total (PR 55812:
// label reason, no engine label; counted by the API server for the whole
// pod) when the pod has an admission limit, one series per reason from
// the start.
func (b *famBuilder) admissionRejections() {
	if !b.sc.pod.Engine.admissionLimited() {
		return
	}
	f := family{name: "vllm:admission_rejections", typ: typeCounter, created: true,
		help: "Number of admission attempts rejected by the admission limits (max_num_queued_reqs, max_num_queued_tokens)."}
	for r, reason := range admissionReasons {
		v := b.sum(func(s *engineStats) float64 { return s.refused[r] })
		f.series = append(f.series, series{labels: []label{{"model_name", b.model}, {"reason", reason}}, value: v, created: b.created()})
	}
	b.add(f)
}
