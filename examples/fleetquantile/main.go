// Fleetquantile shows why a fleet's p95 must be taken from buckets merged
// across replicas, never from the average of the replicas' own p95.
//
//	go run ./examples/fleetquantile
//
// It works twice: on two small hand-made histograms, where the arithmetic
// can be checked by eye, then on the embedded sample evidence (a 4-pod
// fleet over one hour, see package evidence), with diagnose.FleetQuantiles,
// the library call behind `whyslow quantile`.
//
// A quantile of the fleet is a statement about all its requests: "95% of
// requests got their first token within X". The average of per-replica
// p95 values is not a quantile of anything. It gives a replica that served
// 200 requests the same weight as one that served 1800, and it averages
// values from the tails of different distributions. Summing the cumulative
// bucket counts (PromQL's sum by (le)) and taking the quantile after gives
// the histogram of every request of the fleet, whose p95 is the fleet's.
package main

import (
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"time"

	"github.com/whyslow/whyslow/diagnose"
	"github.com/whyslow/whyslow/examples/postmortem/evidence"
	"github.com/whyslow/whyslow/histogram"
	"github.com/whyslow/whyslow/report"
	"github.com/whyslow/whyslow/rules"
	"github.com/whyslow/whyslow/snapshot"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "fleetquantile:", err)
		os.Exit(1)
	}
}

func run(w io.Writer) error {
	if err := handMade(w); err != nil {
		return err
	}
	fmt.Fprintln(w)
	return sample(w)
}

// ttftBounds are the upper bounds (le) of the TTFT histograms of the
// hand-made example, in seconds.
var ttftBounds = []float64{0.1, 0.25, 0.5, 1, 2.5, math.Inf(1)}

// handMade compares the two ways on two replicas: a healthy one that
// served 1800 requests and a slow one that served 200.
func handMade(w io.Writer) error {
	healthy := histogram.Histogram{Bounds: ttftBounds, Counts: []float64{1200, 1700, 1780, 1796, 1800, 1800}, Count: 1800, Sum: 270}
	slow := histogram.Histogram{Bounds: ttftBounds, Counts: []float64{10, 20, 60, 120, 190, 200}, Count: 200, Sum: 280}

	fmt.Fprintln(w, "1. Two replicas, TTFT histograms over the same 10 minutes")
	ph, ps := healthy.Quantile(0.95), slow.Quantile(0.95)
	fmt.Fprintf(w, "   healthy (1800 requests): %v\n", ph)
	fmt.Fprintf(w, "   slow     (200 requests): %v\n", ps)

	m, err := histogram.Merge(healthy, slow)
	if err != nil {
		return err
	}
	fleet := m.Histogram.Quantile(0.95)
	avg := (ph.Value + ps.Value) / 2
	fmt.Fprintf(w, "   average of the two p95:  %.3gs  <- not a quantile of anything\n", avg)
	fmt.Fprintf(w, "   fleet (merged buckets):  %v\n", fleet)
	// The share of requests above the averaged "p95" shows what it means:
	// fewer than 5% of the fleet's requests were that slow. The share is
	// exact only at bucket bounds: between them it is interpolated.
	fe := m.Histogram.Fraction(avg)
	fmt.Fprintf(w, "   requests slower than the averaged p95: %.1f%% (between %.1f%% and %.1f%%), not 5%%\n",
		100*(1-fe.Value), 100*(1-fe.AtUpper), 100*(1-fe.AtLower))
	return nil
}

// sample computes fleet and per-replica TTFT quantiles of the embedded
// evidence over its second half (the incident), then the average of the
// replicas' p95 for comparison.
func sample(w io.Writer) error {
	ev, err := evidence.Read()
	if err != nil {
		return err
	}
	first, last := ev.Span()
	mid := first.Add(last.Sub(first) / 2).Truncate(time.Minute)
	win := snapshot.Window{Start: mid, End: last}
	qr, err := diagnose.FleetQuantiles(ev, diagnose.QuantileRequest{
		Metric:    "ttft",
		Quantiles: []float64{0.5, 0.95, 0.99},
		Window:    win,
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "2. The sample fleet (%s), TTFT over the incident half\n\n", evidence.Scenario)
	fmt.Fprint(w, qr)

	names := slices.Sorted(maps.Keys(qr.Replicas))
	var sum float64
	for _, name := range names {
		sum += float64(p95(qr.Replicas[name]).Value)
	}
	fleet := p95(qr.Fleet)
	avg := sum / float64(len(names))
	fmt.Fprintf(w, "\naverage of the %d replicas' p95: %.3gs; fleet p95 from merged buckets: %.3gs [%.3g, %.3g], n=%.0f (%+.1f%%)\n",
		len(names), avg, float64(fleet.Value), float64(fleet.Lower), float64(fleet.Upper), float64(fleet.Count),
		100*(avg-float64(fleet.Value))/float64(fleet.Value))
	fmt.Fprintln(w, "The replicas here share one load balancer and one workload, so the two agree closely;")
	fmt.Fprintln(w, "they part as soon as replicas differ in traffic or health (part 1), which is when it matters.")
	return nil
}

// p95 returns the 0.95 quantile of qs, or a NaN one.
func p95(qs []report.Quantile) report.Quantile {
	for _, q := range qs {
		if q.Q == 0.95 {
			return q
		}
	}
	return report.Quantile{Q: 0.95, Value: rules.Number(math.NaN())}
}
