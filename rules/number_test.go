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

// Numbers are written once: FormatNumber for tables, ProseNumber and
// Unit.Prose for sentences (thousands separators, no exponent, whole
// multiples from 10x), so that nothing downstream rewrites them.
func TestNumberFormatting(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  string
		want string
	}{
		{"integer", FormatInteger(55477), "55,477"},
		{"integer small", FormatInteger(960), "960"},
		{"integer million", FormatInteger(6.311235e+06), "6,311,235"},
		{"integer negative", FormatInteger(-1200), "-1,200"},
		{"integer rounds", FormatInteger(999.6), "1,000"},
		{"integer NaN", FormatInteger(math.NaN()), "n/a"},
		{"multiple small", FormatMultiple(2.4001), "2.4x"},
		{"multiple under 10", FormatMultiple(9.87), "9.87x"},
		{"multiple at 10", FormatMultiple(10.39), "10x"},
		{"multiple large", FormatMultiple(23920.86), "23,921x"},
		{"multiple NaN", FormatMultiple(math.NaN()), "n/ax"},
		{"table number", FormatNumber(8112), "8112"},
		{"table tiny", FormatNumber(1.74e-05), "1.74e-05"},
		{"prose big", ProseNumber(6.311235e+06), "6,311,235"},
		{"prose four digits", ProseNumber(8112), "8,112"},
		{"prose rounds from 100", ProseNumber(1234.5), "1,235"},
		{"prose tiny", ProseNumber(1.234e-7), "0.000000123"},
		{"prose small", ProseNumber(1.74e-05), "0.0000174"},
		{"prose plain", ProseNumber(0.0417), "0.0417"},
		{"prose NaN", ProseNumber(math.NaN()), "n/a"},
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
