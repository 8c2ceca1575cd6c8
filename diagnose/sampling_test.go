package diagnose

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/histogram"
)

func TestShareAboveZ(t *testing.T) {
	h := func(below, total float64) histogram.Histogram {
		return histogram.Histogram{Bounds: []float64{0.1, math.Inf(1)}, Counts: []float64{below, total}, Count: total, Sum: math.NaN()}
	}
	for _, tt := range []struct {
		name      string
		inc, base histogram.Histogram
		z         float64
	}{
		// 15 of 100 above 0.1 s against 5 of 100: pooled share 0.1, standard
		// error sqrt(0.1 x 0.9 x 2/100).
		{"a rise", h(85, 100), h(95, 100), 0.10 / math.Sqrt(0.1*0.9*0.02)},
		{"a fall", h(95, 100), h(85, 100), -0.10 / math.Sqrt(0.1*0.9*0.02)},
		{"the same shares", h(950, 1000), h(95, 100), 0},
		// Ten times the requests at the same shares: sqrt(10) times the z.
		{"more requests, more certainty", h(850, 1000), h(950, 1000), 0.10 / math.Sqrt(0.1*0.9*0.002)},
		{"none above in either", h(100, 100), h(50, 50), 0},
		{"all above in one, none in the other", h(0, 100), h(100, 100), 1 / math.Sqrt(0.25*0.02)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			z, ok := shareAboveZ(tt.inc, tt.base, 0.1)
			require.True(t, ok)
			assert.InDelta(t, tt.z, z, 1e-9)
		})
	}
	_, ok := shareAboveZ(h(0, 0), h(95, 100), 0.1)
	assert.False(t, ok, "no incident observation")
}
