package report

import (
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/whyslow/whyslow/rules"
)

// This file holds the prose rules for numbers: multiples beyond 10x as
// whole numbers ("125x"), integers with thousands separators
// ("55,477"), never an exponent, and counts that say what they count.

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
	return FormatNumber(v) + "x"
}

// FormatProseNumber is FormatNumber for running text: three significant
// digits, whole numbers of 10,000 and more with thousands separators,
// and no exponent at any size (1e-7 is "0.0000001").
func FormatProseNumber(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return FormatNumber(v)
	case math.Abs(v) >= 10000:
		return FormatInteger(v)
	case v != 0 && math.Abs(v) < 1e-3:
		// Three significant digits without an exponent.
		p := strconv.FormatFloat(v, 'g', 3, 64)
		f, _ := strconv.ParseFloat(p, 64)
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return FormatNumber(v)
}

var (
	// proseMultiple matches a multiple such as "23920.86x" (not part of
	// a word or a longer number).
	proseMultiple = regexp.MustCompile(`\b(\d+(?:\.\d+)?)x\b`)
	// proseExp matches a number in e-notation: "6.311235e+06".
	proseExp = regexp.MustCompile(`\b\d+(?:\.\d+)?e[+-]?\d+\b`)
	// proseLong matches an integer of four digits or more.
	proseLong = regexp.MustCompile(`\b\d{4,}\b`)
)

// proseNumbers rewrites the numbers of a sentence written by the rules
// (evidence texts) by the prose rules: multiples of 10x and more as whole
// numbers, no e-notation, thousands separators in integers of four
// digits and more. Numbers inside a longer token (a version, a time, a
// decimal fraction) are left alone.
func proseNumbers(s string) string {
	s = proseExp.ReplaceAllStringFunc(s, func(m string) string {
		v, err := strconv.ParseFloat(m, 64)
		if err != nil {
			return m
		}
		return FormatProseNumber(v)
	})
	s = proseMultiple.ReplaceAllStringFunc(s, func(m string) string {
		v, err := strconv.ParseFloat(strings.TrimSuffix(m, "x"), 64)
		if err != nil || v < 10 {
			return m
		}
		return FormatMultiple(v)
	})
	return replaceWhole(s, proseLong, func(m string) string {
		v, err := strconv.ParseFloat(m, 64)
		if err != nil {
			return m
		}
		return FormatInteger(v)
	})
}

// replaceWhole replaces the matches of re that stand alone: not preceded
// or followed by a '.', ',' digit or ':' (parts of decimals, lists of
// digits already grouped, or times).
func replaceWhole(s string, re *regexp.Regexp, f func(string) string) string {
	idx := re.FindAllStringIndex(s, -1)
	if idx == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for _, m := range idx {
		i, j := m[0], m[1]
		if (i > 0 && strings.ContainsRune(".,:-/", rune(s[i-1]))) || (j < len(s) && strings.ContainsRune("-/", rune(s[j]))) ||
			(j < len(s) && strings.ContainsRune(".,:", rune(s[j])) && j+1 < len(s) && s[j+1] >= '0' && s[j+1] <= '9') {
			continue
		}
		b.WriteString(s[last:i])
		b.WriteString(f(s[i:j]))
		last = j
	}
	b.WriteString(s[last:])
	return b.String()
}

// countNoun says what the count behind a fact counts: "requests" for
// latencies and shares of finished requests, "token gaps" for the
// inter-token latency, "samples" for gauges (the samples of the series
// summarised: a fleet gauge's are the instants of its fleet sum, not the
// window's scrapes), "intervals" for statistics over the timeline's
// intervals, "replicas", "preemptions"; "" when the fact does not say.
func countNoun(id rules.FactID) string {
	switch {
	case strings.HasPrefix(string(id), "itl_"):
		return "token gaps"
	}
	switch id {
	case rules.PrefixHitRatio:
		return "tokens queried"
	case rules.WaitingBurst, rules.CorrRunningTPOT:
		return "intervals"
	case rules.Restarts, rules.RestartsReplicaMax, rules.RestartsPerHourMax:
		return "replicas"
	case rules.PreemptionRate:
		return "preemptions"
	case rules.ReplicaLoadShareMax, rules.ReplicaShareMax, rules.ArrivalRate:
		return "requests"
	}
	info, ok := rules.Info(id)
	if !ok {
		return ""
	}
	switch info.Kind {
	case rules.Quantile, rules.Mean:
		return "requests"
	case rules.Gauge:
		return "samples"
	case rules.Rate:
		if info.Unit == "ratio" || info.Unit == "s" {
			return "requests"
		}
	}
	return ""
}

// fmtCountOf formats a count with what it counts: "n=55,477 requests",
// "n=121 samples", or "n=?" when unknown.
func fmtCountOf(c Float, noun string) string {
	if !finiteFloat(c) {
		return "n=?"
	}
	v := float64(c)
	s := "n=" + FormatInteger(v)
	if v != math.Round(v) {
		s = "n=" + FormatNumber(math.Round(v*100)/100)
	}
	if noun != "" {
		s += " " + noun
	}
	return s
}
