package report

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/whyslow/whyslow/rules"
)

func TestFmtUnitValue(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		unit string
		want string
	}{
		{0.042, "s", "42ms"},
		{0.64, "s", "640ms"},
		{1.9, "s", "1.9s"},
		{0.00085, "s", "850µs"},
		{150, "s", "2m30s"},
		{0, "s", "0s"},
		{6100, "tokens", "6100 tokens"},
		{0.925, "ratio", "92.5%"},
		{2.234, "req/s", "2.23 req/s"},
		{0.25, "1/s", "0.25/s"},
		{math.NaN(), "s", "n/a"},
		{math.Inf(1), "s", "+Inf"},
		{12345678, "", "12.3M"},
		{4.86e6, "tokens", "4.86M tokens"},
		{99999, "requests", "99999 req"},
		{1234.56, "", "1235"},
	} {
		assert.Equal(t, tc.want, FormatValue(tc.v, tc.unit), "%v %s", tc.v, tc.unit)
	}
}

func TestFmtWindow(t *testing.T) {
	t0 := time.Date(2026, 3, 14, 9, 30, 0, 0, time.UTC)
	w := WindowInfo{Start: t0, End: t0.Add(90 * time.Minute), From: "given", Scrapes: 12}
	assert.Equal(t, "2026-03-14 09:30–11:00Z (1h30m), 12 scrapes, from given", fmtWindow(w))
	w.End = t0.Add(24*time.Hour + 15*time.Second)
	assert.Equal(t, "2026-03-14 09:30:00–2026-03-15 09:30:15Z (24h0m15s)", FormatWindowSpan(w))
	assert.Equal(t, "none", fmtWindow(WindowInfo{From: "none"}))
	assert.Contains(t, fmtWindow(WindowInfo{End: t0, From: "lifetime"}), "lifetime (since process start)")
	// The window text of evidence is recognised as the report's.
	w = WindowInfo{Start: t0, End: t0.Add(30 * time.Minute), From: "given"}
	assert.Equal(t, "2026-03-14 09:30:00–10:00:00Z (30m0s)", windowText(w))
}

func TestRelChange(t *testing.T) {
	assert.InDelta(t, 1.5416, float64(relChange(2400, 6100)), 1e-3)
	assert.Equal(t, Float(0), relChange(0, 0))
	assert.True(t, math.IsInf(float64(relChange(0, 3)), 1))
	assert.True(t, math.IsNaN(float64(relChange(Float(math.NaN()), 3))))
	assert.True(t, outsideSteady(relChange(0.64, 1.9), 1.2))
	assert.False(t, outsideSteady(relChange(0.12, 0.13), 1.2))
	assert.True(t, outsideSteady(relChange(1, 0.8), 1.2), "a fall counts too")
	assert.False(t, outsideSteady(Float(math.NaN()), 1.2))
	// The table reads ±Inf as the judge does (it used to say NaN): a rise
	// to +Inf has moved, a fall from 0 to 0 has not.
	for _, c := range [][2]float64{{0, 0}, {1, math.Inf(1)}, {math.Inf(1), math.Inf(1)}, {0, -2}, {2, 1}} {
		assert.Equal(t, rules.RelChange(c[0], c[1]), float64(relChange(Float(c[0]), Float(c[1]))), "%v", c)
	}
	assert.True(t, outsideSteady(relChange(1, Float(math.Inf(1))), 1.2))
}

func TestMarkdownEscaping(t *testing.T) {
	assert.Equal(t, "ttft_p95 in [1s, 2.5s] (up >= 1.5x)", mdInline("ttft_p95 in [1s, 2.5s] (up >= 1.5x)"))
	assert.Equal(t, `\_private\_ a\*b \<b> x\|y`, mdInline("_private_ a*b <b> x|y"))
	assert.Equal(t, `[x\](http://e)`, mdInline("[x](http://e)"))
	assert.Equal(t, `\# not a heading`, mdInline("# not a heading"))
	assert.Equal(t, "+8%", mdCell("+8%"), "cells do not escape line-start markers")
	assert.Equal(t, "a<br>b", mdCell("a\nb"))
}

// FuzzMarkdownCell checks that no input breaks a table row: an escaped
// cell holds no line break and no unescaped pipe.
func FuzzMarkdownCell(f *testing.F) {
	for _, s := range []string{"a|b", `a\|b`, "x\ny", `\\|`, "_x_", "<b>|</b>", "[a](b)|"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c := mdCell(s)
		if strings.Contains(c, "\n") {
			t.Fatalf("line break in %q", c)
		}
		backslashes := 0
		for _, r := range c {
			if r == '|' && backslashes%2 == 0 {
				t.Fatalf("unescaped pipe in %q (from %q)", c, s)
			}
			if r == '\\' {
				backslashes++
			} else {
				backslashes = 0
			}
		}
	})
}

func TestUnescapeHTML(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`"up \u003e= 1.5x"`, `"up >= 1.5x"`},
		{`"a \u003c b \u0026 c"`, `"a < b & c"`},
		{`"literal \\u003e"`, `"literal \\u003e"`},
		{`"\\\u003e"`, `"\\>"`},
		{`"\u00e9"`, `"\u00e9"`},
		{`"end \`, `"end \`},
	} {
		assert.Equal(t, tc.want, string(unescapeHTML([]byte(tc.in))), tc.in)
	}
}

// A quantile in the +Inf bucket is a lower bound, and says so wherever it
// is printed.
func TestOverflowQuantileSaysAtLeast(t *testing.T) {
	q := Quantile{Q: 0.99, Value: 10000, Lower: 10000, Upper: Float(math.Inf(1)), Count: 28805}
	assert.Equal(t, ">= 10000 tokens", fmtQuantilePoint(q, "tokens"))
	assert.Equal(t, ">= 10000 tokens [10000 tokens, +Inf]", fmtQuantileValue(q, "tokens"))
	assert.Equal(t, ">= 10000 tokens [10000–+Inf]", fmtCompareCell(q, "tokens"))
	in := Quantile{Q: 0.95, Value: 8112, Lower: 5000, Upper: 10000, Count: 28805}
	assert.Equal(t, "8112 tokens", fmtQuantilePoint(in, "tokens"))
}
