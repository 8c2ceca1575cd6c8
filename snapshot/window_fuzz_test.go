package snapshot_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/whyslow/whyslow/snapshot"
)

// fuzzSeries decodes data into a counter: each pair of bytes is a gap of
// 1..256 s after the previous sample and a value; values 250..255 stand for
// NaN, +Inf, -Inf, -1 and two large values.
func fuzzSeries(data []byte) *snapshot.Series {
	s := &snapshot.Series{Name: "c_total", Labels: labels.EmptyLabels()}
	t := at(0).UnixMilli()
	for i := 0; i+1 < len(data); i += 2 {
		t += (int64(data[i]) + 1) * 1000
		v := float64(data[i+1])
		switch data[i+1] {
		case 250:
			v = math.NaN()
		case 251:
			v = math.Inf(1)
		case 252:
			v = math.Inf(-1)
		case 253:
			v = -1
		case 254:
			v = 1e300
		case 255:
			v = math.MaxFloat64
		}
		s.T = append(s.T, t)
		s.V = append(s.V, v)
	}
	return s
}

func FuzzSeriesIncrease(f *testing.F) {
	f.Add([]byte{14, 1, 14, 2, 14, 0, 14, 5}, int16(0), int16(60), uint8(15))
	f.Add([]byte{0, 10, 200, 3, 255, 250, 1, 7}, int16(-300), int16(600), uint8(0))
	f.Add([]byte{}, int16(0), int16(0), uint8(1))
	f.Add([]byte{59, 0, 59, 200, 59, 100, 59, 254, 59, 1}, int16(30), int16(290), uint8(30))
	f.Fuzz(func(t *testing.T, data []byte, start, end int16, step uint8) {
		s := fuzzSeries(data)
		w := snapshot.Window{Start: at(time.Duration(start) * time.Second), End: at(time.Duration(end) * time.Second)}
		if start == 0 && end == 0 {
			w = snapshot.Window{}
		}
		inc, err := s.Increase(w)
		if err != nil {
			if w.IsZero() || !w.End.Before(w.Start) {
				if !errors.Is(err, snapshot.ErrNotEvaluable) {
					t.Fatalf("error does not wrap ErrNotEvaluable: %v", err)
				}
			}
			return
		}
		if !(inc.Value >= 0) {
			t.Fatalf("increase %v is negative or NaN: %v", inc.Value, inc)
		}
		if inc.N < 1 || inc.N+inc.Skipped > s.Len() {
			t.Fatalf("N=%d Skipped=%d of %d samples", inc.N, inc.Skipped, s.Len())
		}
		if inc.Resets > inc.N-1 || inc.LowerBound != (inc.Resets > 0) {
			t.Fatalf("Resets=%d N=%d LowerBound=%v", inc.Resets, inc.N, inc.LowerBound)
		}
		if inc.To.Before(inc.From) || (!w.IsZero() && inc.To.After(w.End)) {
			t.Fatalf("edges %s..%s for window %s", inc.From, inc.To, w)
		}
		if inc.Lifetime != (inc.N == 1) {
			t.Fatalf("Lifetime=%v with N=%d", inc.Lifetime, inc.N)
		}
		_ = inc.String()

		// Increases over a grid add up to the whole window's when every
		// step is evaluable and none is clipped (values below 250 are
		// integers, so the sums are exact unless huge values take part).
		if w.IsZero() || step == 0 || inc.StartClipped {
			return
		}
		total, resets := 0.0, 0
		for _, st := range snapshot.Steps(w, time.Duration(step)*time.Second, s.Increase) {
			if st.Err != nil || st.Result.StartClipped {
				return
			}
			total += st.Result.Value
			resets += st.Result.Resets
		}
		if inc.Value < 1e15 && total != inc.Value || resets != inc.Resets {
			t.Fatalf("steps add up to %v with %d resets, whole window %v with %d", total, resets, inc.Value, inc.Resets)
		}
	})
}

func FuzzGauge(f *testing.F) {
	f.Add([]byte{14, 1, 14, 250, 14, 0, 14, 5}, int16(0), int16(60))
	f.Add([]byte{0, 251, 200, 252, 255, 250, 1, 7}, int16(-300), int16(600))
	f.Fuzz(func(t *testing.T, data []byte, start, end int16) {
		s := fuzzSeries(data)
		w := snapshot.Window{Start: at(time.Duration(start) * time.Second), End: at(time.Duration(end) * time.Second)}
		g, err := s.Gauge(w)
		if err != nil {
			return
		}
		if g.N < 1 || g.N+g.Skipped > s.Len() {
			t.Fatalf("N=%d Skipped=%d of %d samples", g.N, g.Skipped, s.Len())
		}
		if g.Min > g.Max || math.IsNaN(g.First) || math.IsNaN(g.Last) {
			t.Fatalf("bad stats %v", g)
		}
		tol := 1e-12*math.Max(math.Abs(g.Min), math.Abs(g.Max)) + 1e-9
		if !math.IsNaN(g.Mean) && (g.Mean < g.Min-tol || g.Mean > g.Max+tol) {
			t.Fatalf("mean %v outside [%v, %v]", g.Mean, g.Min, g.Max)
		}
		_ = g.String()
	})
}
