package report

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/whyslow/whyslow/rules"
)

// A quantile in an edge bucket is a bound, in the tables and in the
// timelines' points alike: one decision (Quantile.Bound), one number.
func TestBound(t *testing.T) {
	inf, nan := rules.Number(math.Inf(1)), rules.Number(math.NaN())
	t0 := time.Date(2026, 9, 22, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		q      Quantile
		op     string
		v      float64
		format string
	}{
		{"first bucket", Quantile{Value: 0.285, Lower: 0, Upper: 0.3, Count: 40}, "<=", 0.3, "<= 300ms"},
		{"overflow bucket", Quantile{Value: 60, Lower: 60, Upper: inf, Count: 40}, ">=", 60, ">= 60s"},
		{"inner bucket", Quantile{Value: 2.2, Lower: 1, Upper: 2.5, Count: 40}, "", 2.2, "2.2s"},
		{"no observations", Quantile{Value: nan, Lower: nan, Upper: nan}, "", math.NaN(), "n/a"},
		{"zero in the first bucket", Quantile{Value: 0, Lower: 0, Upper: 0.3, Count: 40}, "", 0, "0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			op, v := tt.q.Bound()
			assert.Equal(t, tt.op, op)
			if math.IsNaN(tt.v) {
				assert.True(t, math.IsNaN(v))
			} else {
				assert.Equal(t, tt.v, v)
			}
			assert.Equal(t, tt.format, fmtQuantilePoint(tt.q, "s"), "the tables")

			// The timeline point of the same quantile says the same.
			p := QuantilePoint(t0, tt.q)
			assert.Equal(t, math.Float64bits(float64(tt.q.Value)), math.Float64bits(float64(p.Value)), "the value is kept as computed")
			assert.Equal(t, tt.q.Count, p.Count)
			pop, pv := p.Bound()
			assert.Equal(t, op, pop)
			if math.IsNaN(v) {
				assert.True(t, math.IsNaN(pv))
			} else {
				assert.Equal(t, v, pv)
			}
		})
	}
	// A gauge's point, or one read back from JSON, is its value.
	op, v := Point{T: t0, Value: 0.285, Count: 3}.Bound()
	assert.Equal(t, "", op)
	assert.Equal(t, 0.285, v)
}
