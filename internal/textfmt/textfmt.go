// Package textfmt writes whyslow's numbers, durations, counts and windows
// as text: the one formatter behind the evidence sentences of package
// rules, the diagnosis' warnings and every form of a report. Values with a
// unit are rules.Unit's (its Format and Prose use these numbers).
package textfmt

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Number writes a number for a table: three significant digits, whole
// numbers and numbers of 100 and more without decimals and without
// exponent. NaN, a value that cannot be evaluated, is "n/a" (never 0 or
// "?"); ±Inf is "+Inf" or "-Inf". Running text writes numbers as Prose
// does.
func Number(v float64) string {
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

// Prose is Number for running text (the sentences of evidence, notes and
// reasons): whole numbers with thousands separators from 1,000 ("55,477")
// and no exponent at any size (1.74e-05 is "0.0000174").
func Prose(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return Number(v)
	case v == math.Trunc(v) || math.Abs(v) >= 100:
		return Integer(v)
	}
	s := Number(v)
	if strings.ContainsRune(s, 'e') {
		// Three significant digits without an exponent.
		f, _ := strconv.ParseFloat(s, 64)
		s = strconv.FormatFloat(f, 'f', -1, 64)
	}
	return s
}

// Integer writes a whole number with thousands separators: 55477 ->
// "55,477", -1200 -> "-1,200". A value that is not whole is rounded; NaN
// is "n/a", ±Inf "+Inf" / "-Inf".
func Integer(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return Number(v)
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

// Multiple writes a ratio as a multiple: three significant digits below
// 10 ("2.45x", "1.3x"), a whole number with thousands separators from 10
// on ("15x", "23,921x"), never an exponent.
func Multiple(v float64) string {
	if !math.IsNaN(v) && !math.IsInf(v, 0) && math.Abs(v) >= 10 {
		return Integer(v) + "x"
	}
	return Prose(v) + "x"
}

// Quantile writes a quantile as the percentile a column or a warning
// names: 0.95 as "95", 0.999 as "99.9".
func Quantile(q float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.4f", q*100), "0"), ".")
}

// Duration writes a window's length without trailing zero units: 30m,
// 1h30m, 45s.
func Duration(d time.Duration) string {
	s := d.Round(time.Second).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// Plural writes a count with its noun: "1 scrape", "2 scrapes".
func Plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// Selector writes a group's label selector: "model_name=llama", its
// labels in name order and joined by commas, or "all" when it is empty.
func Selector(sel map[string]string) string {
	if len(sel) == 0 {
		return "all"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(sel)) {
		parts = append(parts, k+"="+sel[k])
	}
	return strings.Join(parts, ",")
}

// Window writes a window as facts and reports say it: "2026-09-22
// 10:00:00–10:30:00Z (30m0s)", or for counters read since process start
// (lifetime) "lifetime (since process start, to 2026-09-22 10:30:00Z)".
func Window(start, end time.Time, lifetime bool) string {
	if lifetime {
		if end.IsZero() {
			return "lifetime (since process start; scrape time unknown)"
		}
		return fmt.Sprintf("lifetime (since process start, to %s)", end.UTC().Format("2006-01-02 15:04:05Z"))
	}
	s, en := start.UTC(), end.UTC()
	endFmt := "15:04:05Z"
	if s.YearDay() != en.YearDay() || s.Year() != en.Year() {
		endFmt = "2006-01-02 15:04:05Z"
	}
	return fmt.Sprintf("%s–%s (%v)", s.Format("2006-01-02 15:04:05"), en.Format(endFmt), en.Sub(s).Round(time.Second))
}
