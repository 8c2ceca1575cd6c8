package rules

import (
	"fmt"
	"math"
	"strconv"
)

// FormatNumber is whyslow's one number formatter, used by the evidence
// lines of findings, the experiment judgement and (through package report)
// every report: three significant digits, whole numbers and numbers of
// 100 and more without decimals and without exponent. NaN, a value that
// cannot be evaluated, is "n/a" (never 0 or "?"); ±Inf is "+Inf" or
// "-Inf".
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
