package snapshot

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/whyslow/whyslow/histogram"
)

// FuzzSurelyValid checks the shortcut of the increases' validity
// (validSample): a histogram whose bounds pass validBounds and whose
// counts pass surelyValidCounts is one histogram.Histogram.Validate
// accepts, whatever the numbers (the increases take such a sample as
// valid without calling Validate).
func FuzzSurelyValid(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 2, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x40})
	for _, special := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), -1, 1e308, 5e-324} {
		b := binary.LittleEndian.AppendUint64(nil, math.Float64bits(special))
		f.Add(append(append(b, b...), b...))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var vals []float64
		for len(data) >= 8 {
			vals = append(vals, math.Float64frombits(binary.LittleEndian.Uint64(data)))
			data = data[8:]
		}
		// n finite bounds and +Inf, n+1 counts, the total when one is left
		// (NaN, unknown, otherwise).
		if len(vals) == 0 {
			return
		}
		n := (len(vals) - 1) / 2
		h := histogram.Histogram{Bounds: append(vals[:n:n], math.Inf(1)), Counts: vals[n : 2*n+1 : 2*n+1], Count: math.NaN()}
		if len(vals) > 2*n+1 {
			h.Count = vals[2*n+1]
		}
		if validBounds(h.Bounds) && surelyValidCounts(h) {
			if err := h.Validate(); err != nil {
				t.Fatalf("%v: surely valid, but Validate says %v", h, err)
			}
		}
	})
}
