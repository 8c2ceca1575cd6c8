package histogram_test

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/util/almost"

	"github.com/whyslow/whyslow/histogram"
)

// decodeHistogram turns fuzz bytes into a histogram. The first byte picks
// raw float64 bits (anything at all) or a structured form that stays
// close to real data: bound steps (0 repeats a bound), signed count steps,
// a start at or below zero, with or without a +Inf bucket.
func decodeHistogram(data []byte) (histogram.Histogram, []byte) {
	h := histogram.Histogram{Count: math.NaN(), Sum: math.NaN()}
	if len(data) == 0 {
		return h, data
	}
	mode, data := data[0], data[1:]
	n := 0
	if len(data) > 0 {
		n, data = int(data[0]%24), data[1:]
	}
	if mode%4 == 0 {
		for ; n > 0 && len(data) >= 16; n-- {
			h.Bounds = append(h.Bounds, math.Float64frombits(binary.LittleEndian.Uint64(data)))
			h.Counts = append(h.Counts, math.Float64frombits(binary.LittleEndian.Uint64(data[8:])))
			data = data[16:]
		}
		return h, data
	}
	b, c := 0.0, 0.0
	if mode&8 != 0 {
		b = -2
	}
	for ; n > 0 && len(data) >= 2; n-- {
		h.Bounds = append(h.Bounds, b)
		h.Counts = append(h.Counts, c)
		b += float64(data[0]) / 16
		c += float64(int8(data[1]))
		data = data[2:]
	}
	if mode&4 == 0 {
		h.Bounds = append(h.Bounds, math.Inf(+1))
		h.Counts = append(h.Counts, c)
	}
	h.Count = h.Total()
	return h, data
}

// close reports a <= b allowing for one rounding step of the linear
// interpolation.
func atMost(a, b float64) bool {
	return a <= b || almost.Equal(a, b, 1e-12)
}

func FuzzQuantile(f *testing.F) {
	f.Add([]byte{1, 5, 16, 2, 16, 3, 16, 0, 16, 9, 0, 1}, 0.5, 0.95)
	f.Add([]byte{9, 4, 0, 5, 16, 250, 32, 7}, 0.0, 1.0)
	f.Add([]byte{5, 3, 16, 0, 16, 0, 16, 4}, 0.25, 0.99)
	f.Add([]byte{0, 1, 0, 0, 0, 0, 0, 0, 0xf0, 0x7f, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f}, 0.3, 0.7)
	f.Fuzz(func(t *testing.T, data []byte, q1, q2 float64) {
		h, _ := decodeHistogram(data)
		e1, e2 := h.Quantile(q1), h.Quantile(q2) // must not panic
		_ = e1.String()
		_ = h.Fraction(q1).String()
		_ = h.FractionBetween(q1, q2)
		_ = h.Validate()
		_ = h.String()
		anyNaNBound := slices.ContainsFunc(h.Bounds, math.IsNaN)
		if !anyNaNBound && len(h.Bounds) > 0 && len(h.Bounds) == len(h.Counts) {
			for _, e := range []histogram.Estimate{e1, e2} {
				if want, _, _, _, _, _ := bucketQuantile(e.Q, h); !histogram.SameFloat(want, e.Value) {
					t.Fatalf("%v q=%v: PromQL %v, Quantile %v", h, e.Q, want, e.Value)
				}
			}
		}
		if h.Validate() != nil {
			return
		}
		for _, e := range []histogram.Estimate{e1, e2} {
			if math.IsNaN(e.Value) || math.IsInf(e.Value, 0) || math.IsNaN(e.Lower) {
				continue
			}
			if !atMost(e.Lower, e.Value) || !atMost(e.Value, e.Upper) {
				t.Fatalf("%v: %v outside its bucket", h, e)
			}
		}
		if q1 > q2 {
			e1, e2 = e2, e1
		}
		if !math.IsNaN(e1.Value) && !math.IsNaN(e2.Value) && !atMost(e1.Value, e2.Value) {
			t.Fatalf("%v: quantile not monotone in q: %v > %v", h, e1, e2)
		}
	})
}

func FuzzSub(f *testing.F) {
	f.Add([]byte{1, 3, 16, 2, 16, 3, 16, 1}, []byte{1, 3, 16, 5, 16, 3, 16, 1})
	f.Add([]byte{1, 3, 16, 2, 16, 3, 16, 1}, []byte{1, 3, 16, 0, 16, 0, 16, 0})
	f.Add([]byte{1, 3, 16, 2}, []byte{1, 3, 32, 2})
	f.Fuzz(func(t *testing.T, a, b []byte) {
		earlier, _ := decodeHistogram(a)
		later, _ := decodeHistogram(b)
		d, err := histogram.Sub(later, earlier)
		switch {
		case errors.Is(err, histogram.ErrCounterReset):
			if !slices.Equal(d.Counts, later.Counts) && !slices.ContainsFunc(later.Counts, math.IsNaN) {
				t.Fatalf("reset: got %v, want later %v", d, later)
			}
		case err != nil:
			if !errors.Is(err, histogram.ErrLayoutMismatch) && !errors.Is(err, histogram.ErrLengthMismatch) {
				t.Fatalf("unexpected error %v", err)
			}
		default:
			if !histogram.SameLayout(later.Bounds, earlier.Bounds) {
				t.Fatalf("different layouts subtracted: %v - %v", later, earlier)
			}
			for i, c := range d.Counts {
				if c < 0 {
					t.Fatalf("negative count %v at %d: %v - %v", c, i, later, earlier)
				}
				if want := later.Counts[i] - earlier.Counts[i]; !histogram.SameFloat(want, c) {
					t.Fatalf("bucket %d: %v, want %v", i, c, want)
				}
			}
		}
	})
}

func FuzzMerge(f *testing.F) {
	f.Add([]byte{1, 3, 16, 2, 16, 3, 16, 1, 1, 3, 16, 5, 16, 3, 16, 1})
	f.Add([]byte{1, 3, 16, 2, 16, 3, 16, 1, 1, 4, 8, 1, 8, 1, 8, 1, 8, 1})
	f.Add([]byte{1, 2, 16, 2, 16, 3, 1, 2, 17, 2, 16, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		var hs []histogram.Histogram
		for len(data) > 0 && len(hs) < 8 {
			var h histogram.Histogram
			h, data = decodeHistogram(data)
			hs = append(hs, h)
		}
		m, err := histogram.Merge(hs...)
		if err != nil {
			return
		}
		_ = m.String()
		if m.Inputs != len(hs) {
			t.Fatalf("Inputs %d, want %d", m.Inputs, len(hs))
		}
		// Kept bounds are in every input, with the exact sum of counts;
		// dropped ones are missing from some input; together they are all
		// finite bounds.
		for k, b := range m.Bounds {
			sum := 0.0
			for _, h := range hs {
				i := slices.Index(h.Bounds, b)
				if i < 0 {
					t.Fatalf("kept bound %v missing from input %v", b, h)
				}
				sum += h.Counts[i]
			}
			if !histogram.SameFloat(sum, m.Counts[k]) {
				t.Fatalf("bound %v: merged %v, want %v", b, m.Counts[k], sum)
			}
		}
		for _, b := range m.Dropped {
			if slices.Contains(m.Bounds, b) || !slices.ContainsFunc(hs, func(h histogram.Histogram) bool { return !slices.Contains(h.Bounds, b) }) {
				t.Fatalf("dropped bound %v is shared by all inputs", b)
			}
		}
		for _, h := range hs {
			for _, b := range h.Bounds {
				if !slices.Contains(m.Bounds, b) && !slices.Contains(m.Dropped, b) {
					t.Fatalf("bound %v of %v neither kept nor dropped", b, h)
				}
			}
		}
		e := m.Quantile(0.95)
		if !math.IsNaN(e.Value) && !math.IsNaN(e.Lower) && !math.IsInf(e.Value, 0) && (!atMost(e.Lower, e.Value) || !atMost(e.Value, e.Upper)) {
			t.Fatalf("%v outside its bucket", e)
		}
	})
}

// FuzzValidate: Validate's fast path passes only histograms its long way
// finds nothing wrong with, and passes the valid histograms of real data
// (the structured form with a +Inf bucket and counts that never fall).
func FuzzValidate(f *testing.F) {
	f.Add([]byte{1, 5, 16, 1, 16, 2, 16, 0, 16, 3})
	f.Add([]byte{0, 2, 0, 0, 0, 0, 0, 0, 0xf0, 0x7f, 0, 0, 0, 0, 0, 0, 0xf8, 0x7f})
	f.Add([]byte{5, 3, 0, 1, 16, 255, 16, 4})
	f.Fuzz(func(t *testing.T, data []byte) {
		h, rest := decodeHistogram(data)
		if len(rest) > 0 {
			h.Count = float64(int8(rest[0]))
		}
		if h.ValidFast() {
			if err := h.ValidateLong(); err != nil {
				t.Fatalf("fast path passed %+v, the long way says %v", h, err)
			}
		}
		if h.ValidateLong() == nil && len(h.Bounds) > 0 && !math.IsInf(h.Bounds[0], -1) {
			if !h.ValidFast() {
				t.Fatalf("valid %+v sent the long way", h)
			}
		}
		if (h.Validate() == nil) != (h.ValidateLong() == nil) {
			t.Fatalf("Validate and its long way disagree on %+v", h)
		}
	})
}
