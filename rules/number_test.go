package rules

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Number's JSON is encoding/json's for a finite float64, null otherwise,
// and reads back as the same number (NaN for null).
func FuzzNumberJSON(f *testing.F) {
	for _, v := range []float64{0, math.Copysign(0, -1), 1, -2.5, 1e-6, 9.99e-7, 1e21, 1e20, 123456789.125, 1e-9, -3e-300, math.MaxFloat64,
		math.SmallestNonzeroFloat64, math.NaN(), math.Inf(1), math.Inf(-1)} {
		f.Add(math.Float64bits(v))
	}
	f.Fuzz(func(t *testing.T, bits uint64) {
		v := math.Float64frombits(bits)
		got, err := Number(v).MarshalJSON()
		require.NoError(t, err)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			assert.Equal(t, "null", string(got))
		} else {
			want, err := json.Marshal(v)
			require.NoError(t, err)
			assert.Equal(t, string(want), string(got))
		}
		assert.Equal(t, string(got), string(Number(v).AppendJSON(nil)))
		assert.Equal(t, "x"+string(got), string(Number(v).AppendJSON([]byte("x"))))
		var back Number
		require.NoError(t, json.Unmarshal(got, &back))
		if math.IsNaN(v) || math.IsInf(v, 0) {
			assert.True(t, math.IsNaN(float64(back)))
		} else {
			assert.Equal(t, v, float64(back))
		}
	})
}
