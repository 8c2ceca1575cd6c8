package histogram_test

import (
	"errors"
	"fmt"
	"math"

	"github.com/whyslow/whyslow/histogram"
)

func ExampleHistogram_Quantile() {
	// TTFT of one replica over a window: cumulative counts at le bounds.
	ttft := histogram.Histogram{
		Bounds: []float64{0.1, 0.25, 0.5, 1, 2.5, math.Inf(+1)},
		Counts: []float64{120, 700, 1100, 1180, 1228, 1234},
		Count:  1234,
		Sum:    420,
	}
	fmt.Println(ttft.Quantile(0.5))
	fmt.Println(ttft.Quantile(0.95))
	fmt.Println(ttft.Quantile(0.999))
	// Output:
	// p50 0.2285 [0.1, 0.25] n=1234
	// p95 0.9519 [0.5, 1] n=1234
	// p99.9 2.5 [2.5, +Inf] n=1234 unstable (need n>=10000)
}

func ExampleMerge() {
	// Two replicas on the current vLLM buckets, one on an older version
	// without the 0.25 bucket and with a 0.75 one.
	inf := math.Inf(+1)
	a := histogram.Histogram{Bounds: []float64{0.1, 0.25, 0.5, 1, inf}, Counts: []float64{50, 300, 450, 490, 500}, Count: 500, Sum: 150}
	b := histogram.Histogram{Bounds: []float64{0.1, 0.25, 0.5, 1, inf}, Counts: []float64{10, 40, 200, 700, 740}, Count: 740, Sum: 500}
	old := histogram.Histogram{Bounds: []float64{0.1, 0.5, 0.75, 1, inf}, Counts: []float64{20, 100, 150, 190, 200}, Count: 200, Sum: 80}

	fleet, err := histogram.Merge(a, b, old)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(fleet)
	fmt.Println(fleet.Quantile(0.95))

	// Averaging per-replica p95s is not a fleet p95.
	avg := (a.Quantile(0.95).Value + b.Quantile(0.95).Value + old.Quantile(0.95).Value) / 3
	fmt.Printf("average of replica p95s: %.3g\n", avg)
	// Output:
	// merged 3: n=1440 sum=730 mean=0.5069 {0.1:80 0.5:750 1:1380 +Inf:1440} dropped le=[0.25 0.75] (not shared by all inputs)
	// p95 0.9905 [0.5, 1] n=1440
	// average of replica p95s: 0.938
}

func ExampleHistogram_Fraction() {
	ttft := histogram.Histogram{
		Bounds: []float64{0.5, 1, 2.5, 5, math.Inf(+1)},
		Counts: []float64{600, 850, 940, 990, 1000},
		Count:  1000,
	}
	// SLO attainment: share of requests with TTFT <= 2 s.
	fmt.Println(ttft.Fraction(2))
	fmt.Println(ttft.Fraction(1))
	// Output:
	// <=2: 91% [85% at <=1, 94% at <=2.5] n=1000
	// <=1: 85% (exact, a bucket bound) n=1000
}

func ExampleSub() {
	bounds := []float64{0.5, 1, math.Inf(+1)}
	at10 := histogram.Histogram{Bounds: bounds, Counts: []float64{100, 180, 200}, Count: 200, Sum: 90}
	at15 := histogram.Histogram{Bounds: bounds, Counts: []float64{160, 290, 330}, Count: 330, Sum: 150}
	window, err := histogram.Sub(at15, at10)
	fmt.Println(window, err)

	// The pod restarted between the two scrapes.
	restarted := histogram.Histogram{Bounds: bounds, Counts: []float64{20, 30, 31}, Count: 31, Sum: 12}
	window, err = histogram.Sub(restarted, at15)
	fmt.Println(window, errors.Is(err, histogram.ErrCounterReset))
	fmt.Println(err)
	// Output:
	// n=130 sum=60 mean=0.4615 {0.5:60 1:110 +Inf:130} <nil>
	// n=31 sum=12 mean=0.3871 {0.5:20 1:30 +Inf:31} true
	// histogram: counter reset: count went down from 330 to 31
}
