package rules

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
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

// FormatNumber is whyslow's one number formatter, used by the evidence
// lines of findings, the experiment judgement and (through package report)
// every report: three significant digits, whole numbers and numbers of
// 100 and more without decimals and without exponent. NaN, a value that
// cannot be evaluated, is "n/a" (never 0 or "?"); ±Inf is "+Inf" or
// "-Inf". Running text writes numbers as ProseNumber does.
func FormatNumber(v float64) string {
	switch {
	case math.IsNaN(v):
		return "n/a"
	case math.IsInf(v, 0):
		return fmt.Sprint(v)
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case math.Abs(v) >= 100:
		return strconv.FormatFloat(math.Round(v), 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// ProseNumber is FormatNumber for running text (the sentences of
// evidence, notes and reasons): whole numbers with thousands separators
// from 1,000 ("55,477") and no exponent at any size (1.74e-05 is
// "0.0000174").
func ProseNumber(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return FormatNumber(v)
	case v == math.Trunc(v) || math.Abs(v) >= 100:
		return FormatInteger(v)
	}
	s := FormatNumber(v)
	if strings.ContainsRune(s, 'e') {
		// Three significant digits without an exponent.
		f, _ := strconv.ParseFloat(s, 64)
		s = strconv.FormatFloat(f, 'f', -1, 64)
	}
	return s
}

// FormatInteger writes a whole number with thousands separators:
// 55477 -> "55,477", -1200 -> "-1,200". A value that is not whole is
// rounded; NaN is "n/a", ±Inf "+Inf" / "-Inf".
func FormatInteger(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return FormatNumber(v)
	}
	s := strconv.FormatFloat(math.Abs(math.Round(v)), 'f', 0, 64)
	var b strings.Builder
	if v < 0 && math.Round(v) != 0 {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// FormatMultiple writes a ratio as a multiple: three significant digits
// below 10 ("2.45x", "1.3x"), a whole number with thousands separators
// from 10 on ("15x", "23,921x"), never an exponent.
func FormatMultiple(v float64) string {
	if !math.IsNaN(v) && !math.IsInf(v, 0) && math.Abs(v) >= 10 {
		return FormatInteger(v) + "x"
	}
	return ProseNumber(v) + "x"
}
