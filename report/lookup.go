package report

import (
	"cmp"
	"math"
	"slices"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/rules"
)

// Quantile returns the fleet-wide quantile q (0.5, 0.95 or 0.99) of
// histogram signal over the incident window, as the report's signal
// table shows it: rep.Quantile(catalog.SignalTTFT, 0.95) is the fleet's
// TTFT p95. The second result is false when the signal, its incident
// measure or that quantile is absent.
func (r *Report) Quantile(signal catalog.SignalID, q float64) (Quantile, bool) {
	if r == nil {
		return Quantile{}, false
	}
	s, ok := signalByID(r.Signals.Fleet, signal)
	if !ok {
		return Quantile{}, false
	}
	return quantileOf(s.Incident, q)
}

// BaselineQuantile is Quantile over the baseline window.
func (r *Report) BaselineQuantile(signal catalog.SignalID, q float64) (Quantile, bool) {
	if r == nil {
		return Quantile{}, false
	}
	s, ok := signalByID(r.Signals.Fleet, signal)
	if !ok {
		return Quantile{}, false
	}
	return quantileOf(s.Baseline, q)
}

// ReplicaQuantile is Quantile for one replica (a name in
// Inputs.Replicas) over the incident window.
func (r *Report) ReplicaQuantile(replica string, signal catalog.SignalID, q float64) (Quantile, bool) {
	if r == nil {
		return Quantile{}, false
	}
	s, ok := signalByID(r.Signals.Replicas[replica], signal)
	if !ok {
		return Quantile{}, false
	}
	return quantileOf(s.Incident, q)
}

// replicaNames returns the replicas with signals, sorted, without the
// companion exporters' targets (DCGM, node), which are not replicas.
func (r *Report) replicaNames() []string {
	exporter := map[string]bool{}
	for _, e := range r.Inputs.Exporters {
		for _, t := range e.Targets {
			exporter[t] = true
		}
	}
	var names []string
	for n := range r.Signals.Replicas {
		if !exporter[n] {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}

// replicaSpread compares the replica with the highest incident TTFT p95
// with the others: a hot replica dominates the fleet's p95, so a ratio to
// the fleet hides it, and the median of the other replicas does not.
type replicaSpread struct {
	// Replica is the worst replica; Worst its TTFT p95 (seconds).
	Replica string
	Worst   float64
	// Others is the median TTFT p95 of the other replicas, over N of
	// them.
	Others float64
	N      int
}

// Ratio is Worst / Others.
func (s replicaSpread) Ratio() float64 { return s.Worst / s.Others }

// ttftSpread returns the worst replica's TTFT p95 against the median of
// the others', each over at least the MinSamples requests the engine's
// replica facts need. The second result is false with fewer than two
// such replicas or a median that is not positive.
func (r *Report) ttftSpread() (replicaSpread, bool) {
	minN := r.thresholds().MinSamples
	type rv struct {
		name string
		v    float64
	}
	var vs []rv
	for _, n := range r.replicaNames() {
		q, ok := r.ReplicaQuantile(n, catalog.SignalTTFT, 0.95)
		if !ok || !finiteFloat(q.Value) || float64(q.Count) < minN {
			continue
		}
		vs = append(vs, rv{n, float64(q.Value)})
	}
	if len(vs) < 2 {
		return replicaSpread{}, false
	}
	slices.SortStableFunc(vs, func(a, b rv) int {
		switch {
		case a.v > b.v:
			return -1
		case a.v < b.v:
			return 1
		}
		return 0
	})
	others := make([]float64, 0, len(vs)-1)
	for _, x := range vs[1:] {
		others = append(others, x.v)
	}
	m := median(others)
	if !(m > 0) {
		return replicaSpread{}, false
	}
	return replicaSpread{Replica: vs[0].name, Worst: vs[0].v, Others: m, N: len(others)}, true
}

// median returns the median of xs (not empty).
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// movedSignals returns the change point's moved series as the report
// shows them, the largest step (by ratio, either way) first. When the
// windows come from the change point, a series that is also a fact
// (ttft_p95, tpot_p95, itl_p95, e2e_p95) takes the fact's baseline and
// incident values, so the windows section and the summary's numbers say
// one number for the same windows; otherwise, or for other series, the
// series' means on each side of the point.
func (r *Report) movedSignals() []ChangeSignal {
	cp := r.Windows.ChangePoint
	if cp == nil || len(cp.Signals) == 0 {
		return nil
	}
	out := slices.Clone(cp.Signals)
	for i, c := range out {
		if f, ok := r.Facts[rules.FactID(c.Series)]; ok && cp.Used && f.Missing == nil && finite(f.Incident.Value) && finite(f.Baseline.Value) {
			out[i].Before, out[i].After = rules.Number(f.Baseline.Value), rules.Number(f.Incident.Value)
		}
	}
	step := func(c ChangeSignal) float64 {
		b, a := float64(c.Before), float64(c.After)
		if !(b > 0) || !(a > 0) {
			return -1
		}
		return math.Abs(math.Log(a / b))
	}
	slices.SortStableFunc(out, func(a, b ChangeSignal) int {
		return cmp.Compare(step(b), step(a))
	})
	return out
}
