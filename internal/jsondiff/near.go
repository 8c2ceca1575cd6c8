package jsondiff

import (
	"math"
	"regexp"
	"strconv"
)

// NearlyEqual compares two JSON values, for Diff; numbers are equal within 1e-9
// relative (VictoriaMetrics keeps about 12 significant digits of floats),
// and so are texts that differ only in such numbers.
func NearlyEqual(a, b any) bool {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		return ok && math.Abs(x-y) <= 1e-9*math.Max(math.Abs(x), math.Abs(y))
	case string:
		y, ok := b.(string)
		return ok && (x == y || numericText(x, y))
	}
	return a == b
}

// numericText reports whether two texts differ only in numbers that agree
// to 1e-9 relative ("p95 0.41999999999 s" and "p95 0.42 s").
func numericText(a, b string) bool {
	num := regexp.MustCompile(`-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?`)
	if num.ReplaceAllString(a, "#") != num.ReplaceAllString(b, "#") {
		return false
	}
	na, nb := num.FindAllString(a, -1), num.FindAllString(b, -1)
	for i := range na {
		x, _ := strconv.ParseFloat(na[i], 64)
		y, _ := strconv.ParseFloat(nb[i], 64)
		if math.Abs(x-y) > 1e-9*math.Max(math.Abs(x), math.Abs(y)) {
			return false
		}
	}
	return true
}
