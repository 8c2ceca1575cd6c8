package snapshot_test

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/whyslow/whyslow/snapshot"
)

// benchHistogram is 6 h of a 20-bucket histogram scraped every 15 s.
func benchHistogram() *snapshot.HistogramSeries {
	const n, nb = 6 * 240, 20
	h := &snapshot.HistogramSeries{Labels: labels.FromStrings("engine", "0")}
	for j := range nb - 1 {
		h.Bounds = append(h.Bounds, math.Pow(2, float64(j-10)))
	}
	h.Bounds = append(h.Bounds, math.Inf(1))
	for i := range n {
		h.T = append(h.T, at(time.Duration(i)*15*time.Second).UnixMilli())
		for j := range nb {
			h.Counts = append(h.Counts, float64(i*(j+1)))
		}
		h.Count = append(h.Count, float64(i*nb))
		h.Sum = append(h.Sum, float64(i))
	}
	return h
}

func BenchmarkHistogramIncrease6h(b *testing.B) {
	h := benchHistogram()
	w := win(0, 6*time.Hour-15*time.Second)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.Increase(w); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkHistogramSteps6hPerMinute(b *testing.B) {
	h := benchHistogram()
	w := win(0, 6*time.Hour-15*time.Second)
	b.ReportAllocs()
	for b.Loop() {
		snapshot.Steps(w, time.Minute, h.Increase)
	}
}

func BenchmarkCounterIncrease6h(b *testing.B) {
	s := series("c_total", labels.EmptyLabels(), every(0, 15*time.Second, 1440), ramp(0, 3, 1440)...)
	w := win(0, 6*time.Hour-15*time.Second)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Increase(w); err != nil {
			b.Fatal(err)
		}
	}
}
