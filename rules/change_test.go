package rules

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRelChange(t *testing.T) {
	inf := math.Inf(1)
	for _, tc := range []struct{ from, to, want float64 }{
		{2, 3, 0.5}, {4, 2, -0.5}, {0, 0, 0}, {0, 3, inf}, {0, -3, -inf}, {inf, inf, 0}, {1, inf, inf},
	} {
		assert.Equal(t, tc.want, RelChange(tc.from, tc.to), "%g -> %g", tc.from, tc.to)
	}
	assert.True(t, math.IsNaN(RelChange(math.NaN(), 1)))
	assert.True(t, math.IsNaN(RelChange(1, math.NaN())))
}

func TestOutsideSteady(t *testing.T) {
	assert.False(t, OutsideSteady(0.2, 1.2), "the band's edge is inside")
	assert.True(t, OutsideSteady(0.21, 1.2))
	assert.True(t, OutsideSteady(-0.2, 1.2), "1/1.2 = 0.833: a fall to 0.8 leaves the band")
	assert.False(t, OutsideSteady(-0.1, 1.2))
	assert.True(t, OutsideSteady(math.Inf(1), 1.2))
	assert.False(t, OutsideSteady(math.NaN(), 1.2))
}
