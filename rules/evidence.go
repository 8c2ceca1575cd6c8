package rules

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// Evidence is one number behind a symptom or finding: the fact, its
// incident and baseline values with bounds, counts and windows, and a
// sentence saying what it shows. Unknown numbers are NaN (null in JSON).
type Evidence struct {
	Fact           FactID  // empty for a sentence-only item
	Value          float64 // incident-window value
	Baseline       float64 // baseline-window value
	Lower, Upper   float64 // bounds of Value
	Count          float64 // observations behind Value
	BaselineCount  float64 // observations behind Baseline
	Window         string  // incident window
	BaselineWindow string  // baseline window
	Source         string  // metric name and version
	// Text says what the number shows, e.g. "queue_time_p95 450ms vs
	// baseline 120ms: 3.75x, severe (beyond noise 3.1x-4.4x over 30/30
	// intervals; rises: >= 1.2x)".
	Text string
	// Lead is the start of Text that holds the number and its change
	// (e.g. "queue_time_p95 450ms vs baseline 120ms: 3.75x, severe"),
	// which the report's short forms show; empty when it is all of Text.
	Lead string
	// Effect is the comparison with the baseline, for evidence that
	// compares the windows; nil otherwise.
	Effect *Effect
}

func evidenceOf(id FactID, f Fact) Evidence {
	return Evidence{
		Fact: id, Value: f.Value, Baseline: f.Baseline,
		Lower: f.Lower, Upper: f.Upper, Count: f.Count, BaselineCount: f.BaselineCount,
		Window: f.Window, BaselineWindow: f.BaselineWindow, Source: f.Source,
	}
}

// textEvidence is an evidence item that carries only a sentence.
func textEvidence(text string) Evidence {
	e := evidenceOf("", MissingFact(""))
	e.Text = text
	return e
}

// String returns the text followed by bounds, count, window and source
// where known.
func (e Evidence) String() string {
	var b strings.Builder
	b.WriteString(e.Text)
	var extra []string
	if !math.IsNaN(e.Lower) || !math.IsNaN(e.Upper) {
		extra = append(extra, fmt.Sprintf("in [%s, %s]", fmtValue(e.Fact, e.Lower), fmtValue(e.Fact, e.Upper)))
	}
	if !math.IsNaN(e.Count) {
		c := "n=" + ProseNumber(e.Count)
		if !math.IsNaN(e.BaselineCount) {
			c += " (baseline n=" + ProseNumber(e.BaselineCount) + ")"
		}
		extra = append(extra, c)
	}
	if e.Window != "" {
		w := e.Window
		if e.BaselineWindow != "" {
			w += " vs " + e.BaselineWindow
		}
		extra = append(extra, w)
	}
	if e.Source != "" {
		extra = append(extra, e.Source)
	}
	if len(extra) > 0 {
		b.WriteString("; ")
		b.WriteString(strings.Join(extra, "; "))
	}
	return b.String()
}

// MarshalJSON writes the evidence with snake_case keys; non-finite
// numbers (unknown values, an unbounded upper bound) are null.
func (e Evidence) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Fact           FactID  `json:"fact,omitempty"`
		Value          Number  `json:"value"`
		Baseline       Number  `json:"baseline"`
		Lower          Number  `json:"lower"`
		Upper          Number  `json:"upper"`
		Count          Number  `json:"count"`
		BaselineCount  Number  `json:"baseline_count"`
		Window         string  `json:"window,omitempty"`
		BaselineWindow string  `json:"baseline_window,omitempty"`
		Source         string  `json:"source,omitempty"`
		Text           string  `json:"text"`
		Effect         *Effect `json:"effect,omitempty"`
	}{e.Fact, Number(e.Value), Number(e.Baseline), Number(e.Lower), Number(e.Upper),
		Number(e.Count), Number(e.BaselineCount), e.Window, e.BaselineWindow, e.Source, e.Text, e.Effect})
}

// fmtValue formats a value in the unit of the fact for a sentence
// (Unit.Prose).
func fmtValue(id FactID, v float64) string {
	info, _ := Info(id)
	return info.Unit.Prose(v)
}

// fmtNum is ProseNumber.
func fmtNum(v float64) string { return ProseNumber(v) }

func fmtRatio(r float64) string {
	if math.IsInf(r, 1) {
		return "up from 0"
	}
	if math.IsInf(r, 0) || math.IsNaN(r) {
		return fmt.Sprintf("%vx", r)
	}
	if math.Abs(math.Round(r*100)) >= 1000 {
		// From 10x on (as two decimals would print it) a multiple is a
		// whole number, as FormatMultiple writes it.
		return FormatInteger(r) + "x"
	}
	return fmt.Sprintf("%.2fx", r)
}

// fmtEst formats an estimate whose bucket has upper bound upper: a value
// in the +Inf bucket is only a lower bound (histogram_quantile returns the
// bucket's lower edge there), printed ">= v".
func fmtEst(id FactID, v, upper float64) string {
	if math.IsInf(upper, 1) && !math.IsInf(v, 0) && !math.IsNaN(v) {
		return ">= " + fmtValue(id, v)
	}
	return fmtValue(id, v)
}

// fmtRatioEst formats value/baseline when either may be a lower bound
// (an estimate in the +Inf bucket): a lower-bound value makes the ratio a
// lower bound, a lower-bound baseline an upper bound, both unknown.
func fmtRatioEst(r float64, f Fact) string {
	vLow, bLow := math.IsInf(f.Upper, 1), math.IsInf(f.BaselineUpper, 1)
	switch {
	case vLow && bLow:
		return "~" + fmtRatio(r) + " (both in the +Inf bucket)"
	case vLow:
		return ">= " + fmtRatio(r)
	case bLow:
		return "<= " + fmtRatio(r)
	}
	return fmtRatio(r)
}
