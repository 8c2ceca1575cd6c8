package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/whyslow/whyslow/internal/textfmt"
	"github.com/whyslow/whyslow/rules"
)

// This file holds the number and window formatting shared by the text,
// Markdown and HTML forms of a report. Every value is printed with its
// unit; unknown values print as "n/a", never as zero.

// fmtValue formats a value with its unit u (the report units "s",
// "tokens", "requests", "ratio", "req/s", "1/s", "x", ...): rules.Unit's
// Format, whyslow's one formatter of values with units.
func fmtValue(v float64, u string) string { return rules.Unit(u).Format(v) }

// rateUnit is the unit of a per-second rate of a counter in unit u.
func rateUnit(u string) string { return string(rules.Unit(u).Rate()) }

// fmtCount formats a sample count: "n=4000", or "n=?" when unknown.
func fmtCount(c rules.Number) string {
	if !finiteFloat(c) {
		return "n=?"
	}
	v := math.Round(float64(c)*100) / 100
	if v == math.Round(v) {
		return "n=" + textfmt.Integer(v)
	}
	return "n=" + textfmt.Number(v)
}

// fmtQuantileValue formats a quantile with its bucket bounds:
// "2.2s [2s, 2.5s]", or ">= 10000 tokens [10000 tokens, +Inf]" in the
// overflow bucket. Bounds are left out when both are unknown.
func fmtQuantileValue(q Quantile, u string) string {
	s := fmtQuantilePoint(q, u)
	if edgeBucket(q) || math.IsNaN(float64(q.Lower)) && math.IsNaN(float64(q.Upper)) {
		return s
	}
	return fmt.Sprintf("%s [%s, %s]", s, fmtValue(float64(q.Lower), u), fmtValue(float64(q.Upper), u))
}

// fmtQuantilePoint formats a quantile's value alone: in the +Inf bucket
// histogram_quantile returns the bucket's lower edge, so the quantile is
// only known to be at least that, and the value says ">= b"; inside the
// first bucket [0, b] the value is an interpolation that says nothing
// beyond the bound, and the value says "<= b".
func fmtQuantilePoint(q Quantile, u string) string {
	if op, v := q.Bound(); op != "" {
		return op + " " + fmtValue(v, u)
	}
	return fmtValue(float64(q.Value), u)
}

// Bound says what is known of a quantile whose rank lies in an edge
// bucket of its histogram, as every form of the report says it: "<=" and
// the first bucket's upper edge b when it lies in [0, b] (the
// interpolated value says nothing beyond the bound), ">=" and the value,
// the overflow bucket's lower edge, when it lies in the +Inf bucket; ""
// and the value otherwise.
func (q Quantile) Bound() (op string, v float64) {
	switch {
	case !edgeBucket(q):
		return "", float64(q.Value)
	case math.IsInf(float64(q.Upper), 1):
		return ">=", float64(q.Value)
	}
	return "<=", float64(q.Upper)
}

// edgeBucket reports whether a quantile lies in the first bucket (lower
// bound 0, a finite upper bound above it) or the overflow (+Inf) bucket,
// where its bucket bounds say all that is known.
func edgeBucket(q Quantile) bool {
	lo, hi, v := float64(q.Lower), float64(q.Upper), float64(q.Value)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return false
	}
	return math.IsInf(hi, 1) || (lo == 0 && hi > 0 && !math.IsInf(hi, 0) && v > 0)
}

// fmtChange formats a relative change: "+154%", "-3.2%", "n/a"; a change
// to 10 times the baseline or more is written as the multiple, "125x".
func fmtChange(c rules.Number) string {
	v := float64(c)
	switch {
	case math.IsNaN(v):
		return "n/a"
	case math.IsInf(v, 1):
		return "up from 0"
	case v+1 >= 10:
		return textfmt.Multiple(v + 1)
	}
	s := textfmt.Number(100 * v)
	if v > 0 {
		s = "+" + s
	}
	return s + "%"
}

// fmtQ names a quantile: 0.95 -> "p95", 0.999 -> "p99.9".
func fmtQ(q float64) string {
	return "p" + strconv.FormatFloat(100*q, 'f', -1, 64)
}

// Span writes the time range of the window: "2026-03-14 09:30–10:00Z
// (30m)"; "lifetime (since process start) to ..." for values since process
// start; "none" for a missing window.
func (w WindowInfo) Span() string {
	if w.From == "lifetime" && w.End.IsZero() {
		return "lifetime (since process start; scrape time unknown)"
	}
	if w.From == "none" || (w.Start.IsZero() && w.End.IsZero()) {
		return "none"
	}
	if w.From == "lifetime" {
		return "lifetime (since process start) to " + w.End.UTC().Format("2006-01-02 15:04:05Z")
	}
	rng, _ := clockRange(w, true)
	return rng + " (" + textfmt.Duration(w.End.Sub(w.Start)) + ")"
}

// clockRange formats the clock times of a window, "2026-03-14
// 09:30–10:00Z" (without the start's date when withDate is false; the
// end's date only when it is another day), and reports whether the
// window has them: false for a lifetime or missing window.
func clockRange(w WindowInfo, withDate bool) (string, bool) {
	if w.From == "lifetime" || w.From == "none" || (w.Start.IsZero() && w.End.IsZero()) {
		return "", false
	}
	s, e := w.Start.UTC(), w.End.UTC()
	layout := "15:04"
	if s.Second() != 0 || e.Second() != 0 {
		layout = "15:04:05"
	}
	end := e.Format(layout + "Z")
	if s.YearDay() != e.YearDay() || s.Year() != e.Year() {
		end = e.Format("2006-01-02 " + layout + "Z")
	}
	start := s.Format(layout)
	if withDate {
		start = s.Format("2006-01-02 " + layout)
	}
	return start + "–" + end, true
}

// fmtWindow formats a window with its scrape count and how it was chosen.
func fmtWindow(w WindowInfo) string {
	span := w.Span()
	if span == "none" {
		if w.From != "" && w.From != "none" {
			return "none (" + w.From + ")"
		}
		return "none"
	}
	var extra []string
	if w.Scrapes > 0 {
		extra = append(extra, textfmt.Plural(w.Scrapes, "scrape", "scrapes"))
	}
	if w.From != "" {
		extra = append(extra, "from "+w.From)
	}
	if len(extra) == 0 {
		return span
	}
	return span + ", " + strings.Join(extra, ", ")
}

// finiteFloat reports whether f is a finite number.
func finiteFloat(f rules.Number) bool { return finite(float64(f)) }

// finite reports whether v is neither NaN nor ±Inf.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
