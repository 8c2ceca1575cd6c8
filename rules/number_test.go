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

// Values with a unit are written once: Unit.Format for tables, Unit.Prose
// for sentences (thousands separators, no exponent, whole multiples from
// 10x), so that nothing downstream rewrites them.
func TestUnitFormatting(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  string
		want string
	}{
		{"tokens in a table", UnitTokens.Format(8112), "8112 tokens"},
		{"tokens in a sentence", UnitTokens.Prose(8112), "8,112 tokens"},
		{"requests in a sentence", UnitRequests.Prose(16512), "16,512 req"},
		{"large in a sentence", UnitTokens.Prose(1.5e6), "1.5M tokens"},
		{"multiple in a table", UnitMultiple.Format(23.4), "23.4x"},
		{"multiple in a sentence", UnitMultiple.Prose(23.4), "23x"},
		{"seconds", UnitSeconds.Prose(0.354), "354ms"},
		{"ratio", fmtRatio(2.994), "2.99x"},
		{"ratio from 10x", fmtRatio(15.34), "15x"},
		{"ratio rounding to 10x", fmtRatio(9.996), "10x"},
		{"ratio large", fmtRatio(23920.86), "23,921x"},
		{"ratio up from 0", fmtRatio(math.Inf(1)), "up from 0"},
	} {
		assert.Equal(t, tc.want, tc.got, tc.name)
	}
}
