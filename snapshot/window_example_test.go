package snapshot_test

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/whyslow/whyslow/snapshot"
)

// A counter scraped every minute; the pod restarted between 10:02 and
// 10:03.
func ExampleSeries_Increase() {
	start := time.Date(2026, 9, 22, 10, 0, 0, 0, time.UTC)
	s := &snapshot.Series{Name: "vllm:request_success_total", Labels: labels.FromStrings("engine", "0")}
	for i, v := range []float64{100, 110, 125, 4, 9} {
		s.T = append(s.T, start.Add(time.Duration(i)*time.Minute).UnixMilli())
		s.V = append(s.V, v)
	}
	inc, err := s.Increase(snapshot.Window{Start: start, End: start.Add(4 * time.Minute)})
	if err != nil {
		panic(err)
	}
	fmt.Println(inc)
	fmt.Printf("%.4f/s\n", inc.Rate())

	// A window the evidence does not reach is not evaluable, never zero.
	_, err = s.Increase(snapshot.Window{Start: start.Add(time.Hour), End: start.Add(2 * time.Hour)})
	fmt.Println(errors.Is(err, snapshot.ErrNotEvaluable))
	// Output:
	// increase 34 over 2026-09-22T10:00:00Z/2026-09-22T10:04:00Z (5 samples from 2026-09-22T10:00:00Z to 2026-09-22T10:04:00Z, 1 reset, lower bound)
	// 0.1417/s
	// true
}

// The time-to-first-token histogram of one pod with two data-parallel
// engines, summed bucket by bucket.
func ExampleTarget_HistogramIncrease() {
	start := time.Date(2026, 9, 22, 10, 0, 0, 0, time.UTC)
	bounds := []float64{0.1, 0.5, 1, math.Inf(1)}
	engine := func(id string, rows ...[]float64) *snapshot.HistogramSeries {
		h := &snapshot.HistogramSeries{Labels: labels.FromStrings("engine", id, "model_name", "llama"), Bounds: bounds}
		for i, r := range rows {
			h.T = append(h.T, start.Add(time.Duration(i)*15*time.Second).UnixMilli())
			h.Counts = append(h.Counts, r...)
			h.Count = append(h.Count, r[len(r)-1])
			h.Sum = append(h.Sum, 0.3*r[len(r)-1])
		}
		return h
	}
	pod := &snapshot.Target{
		Name: "vllm-0",
		Scrapes: []snapshot.Scrape{
			{Time: start}, {Time: start.Add(15 * time.Second)}, {Time: start.Add(30 * time.Second)},
		},
		Families: map[string]*snapshot.Family{
			"vllm:time_to_first_token_seconds": {
				Name: "vllm:time_to_first_token_seconds",
				Histograms: []*snapshot.HistogramSeries{
					engine("0", []float64{0, 0, 0, 0}, []float64{3, 8, 9, 10}, []float64{5, 15, 18, 20}),
					engine("1", []float64{2, 2, 2, 2}, []float64{4, 9, 10, 10}, []float64{6, 14, 17, 18}),
				},
			},
		},
	}
	// The zero Window is the pod's first to last scrape.
	inc, err := pod.HistogramIncrease("vllm:time_to_first_token_seconds", snapshot.Window{}, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(inc)
	fmt.Println(inc.Histogram.Counts)
	// Output:
	// histogram increase 36 observations, sum 10.8 over 2026-09-22T10:00:00Z/2026-09-22T10:00:30Z (6 samples of 2 series from 2026-09-22T10:00:00Z to 2026-09-22T10:00:30Z)
	// [9 27 33 36]
}

// Per-minute increases of a counter, for change-point search.
func ExampleSteps() {
	start := time.Date(2026, 9, 22, 10, 0, 0, 0, time.UTC)
	s := &snapshot.Series{Name: "vllm:num_preemptions_total"}
	for i := range 13 {
		s.T = append(s.T, start.Add(time.Duration(i)*15*time.Second).UnixMilli())
		s.V = append(s.V, float64(i*i))
	}
	w := snapshot.Window{Start: start, End: start.Add(3 * time.Minute)}
	for _, st := range snapshot.Steps(w, time.Minute, s.Increase) {
		fmt.Println(st.Window.End.Format("15:04"), st.Result.Value, st.Err)
	}
	// Output:
	// 10:01 16 <nil>
	// 10:02 48 <nil>
	// 10:03 80 <nil>
}

// Queue length of a pod with two engines: summed across engines.
func ExampleFamily_Gauge() {
	start := time.Date(2026, 9, 22, 10, 0, 0, 0, time.UTC)
	engine := func(id string, vs ...float64) *snapshot.Series {
		s := &snapshot.Series{Name: "vllm:num_requests_waiting", Labels: labels.FromStrings("engine", id)}
		for i, v := range vs {
			s.T = append(s.T, start.Add(time.Duration(i)*15*time.Second).UnixMilli())
			s.V = append(s.V, v)
		}
		return s
	}
	f := &snapshot.Family{Name: "vllm:num_requests_waiting", Series: []*snapshot.Series{
		engine("0", 0, 2, 4, 6, 8),
		engine("1", 1, 1, 1, 1, 1),
	}}
	g, err := f.Gauge(snapshot.Window{Start: start, End: start.Add(time.Minute)}, nil, snapshot.AggregateSum)
	if err != nil {
		panic(err)
	}
	fmt.Println(g)
	// Output:
	// gauge mean 5 min 1 max 9 first 1 last 9 slope 0.133333/s over 2026-09-22T10:00:00Z/2026-09-22T10:01:00Z (5 samples of 2 series from 2026-09-22T10:00:00Z to 2026-09-22T10:01:00Z)
}
