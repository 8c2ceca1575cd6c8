package rules

import (
	"encoding/json"
	"math"
	"strconv"
)

// Number is a float64 whose JSON form is null when it is NaN (unknown) or
// ±Inf, since JSON has no such numbers; null reads back as NaN. Findings,
// judgements and reports all write numbers with it.
type Number float64

// MarshalJSON writes n, or null when n is not finite.
func (n Number) MarshalJSON() ([]byte, error) {
	return n.AppendJSON(nil), nil
}

// AppendJSON appends to b the JSON form of n that MarshalJSON writes:
// null when n is not finite, else the number as encoding/json writes a
// float64 (the shortest decimal that reads back as n, in exponent form
// below 1e-6 and from 1e21). A writer of many numbers (a report's
// timelines) uses it to write them without an encoder call each.
func (n Number) AppendJSON(b []byte) []byte {
	v := float64(n)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return append(b, "null"...)
	}
	format := byte('f')
	if abs := math.Abs(v); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, v, format, -1, 64)
	if format == 'e' {
		// Clean up e-09 to e-9, as encoding/json does.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// UnmarshalJSON reads a number, or null as NaN.
func (n *Number) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = Number(math.NaN())
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*n = Number(v)
	return nil
}
