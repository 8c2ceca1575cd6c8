package rules

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/whyslow/whyslow/internal/textfmt"
)

// Evidence is one number behind a symptom or finding: the fact as it was
// measured, the condition of the decision map it was put to, and a
// sentence saying what it shows. A sentence-only item has no ID, an
// unknown Fact and no Cond.
type Evidence struct {
	ID   FactID // empty for a sentence-only item
	Fact Fact   // the measured value: incident and baseline with bounds, counts, windows, source
	// Text says what the number shows, e.g. "queue_time_p95 450ms vs
	// baseline 120ms: 3.75x, severe (beyond noise 3.1x-4.4x over 30/30
	// intervals; rises: >= 1.2x)".
	Text string
	// Lead is the start of Text that the report's short forms show: the
	// number and its change (e.g. "queue_time_p95 450ms vs baseline
	// 120ms: 3.75x, severe"), or a labelled sentence without its label
	// ("counter-evidence: "); empty when it is all of Text.
	Lead string
	// Effect is the comparison with the baseline, for evidence that
	// compares the windows; nil otherwise.
	Effect *Effect
	// Cond is the condition of the decision map the fact was put to (its
	// kind, facts and limit: Cond.Kind, Cond.Limit), and Holds whether
	// it held; nil for a sentence and for a symptom's signal. For a
	// ratio or delta-share condition both facts' items carry it. Neither
	// is written to JSON.
	Cond  *Cond
	Holds bool
}

// tested records that the evidence's fact was put to condition c, with
// outcome out.
func (e *Evidence) tested(c Cond, out outcome) {
	e.Cond, e.Holds = &c, out == holds
}

func evidenceOf(id FactID, f Fact) Evidence {
	return Evidence{ID: id, Fact: f}
}

// textEvidence is an evidence item that carries only a sentence.
func textEvidence(text string) Evidence {
	return Evidence{Fact: Measured(math.NaN()), Text: text}
}

// labelled is an evidence item that carries only a sentence, under a
// label ("counter-evidence"): its Text is "label: text", its Lead the
// text alone.
func labelled(label, text string) Evidence {
	return Evidence{Fact: Measured(math.NaN()), Text: label + ": " + text, Lead: text}
}

// String returns the text followed by bounds, count, window and source
// where known.
func (e Evidence) String() string {
	f := e.Fact
	var b strings.Builder
	b.WriteString(e.Text)
	var extra []string
	if !math.IsNaN(f.Incident.Lower) || !math.IsNaN(f.Incident.Upper) {
		extra = append(extra, fmt.Sprintf("in [%s, %s]", fmtValue(e.ID, f.Incident.Lower), fmtValue(e.ID, f.Incident.Upper)))
	}
	if !math.IsNaN(f.Incident.Count) {
		c := "n=" + textfmt.Prose(f.Incident.Count)
		if !math.IsNaN(f.Baseline.Count) {
			c += " (baseline n=" + textfmt.Prose(f.Baseline.Count) + ")"
		}
		extra = append(extra, c)
	}
	if f.Incident.Window != "" {
		w := f.Incident.Window
		if f.Baseline.Window != "" {
			w += " vs " + f.Baseline.Window
		}
		extra = append(extra, w)
	}
	if f.Source != "" {
		extra = append(extra, f.Source)
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
	f := e.Fact
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
	}{e.ID, Number(f.Incident.Value), Number(f.Baseline.Value), Number(f.Incident.Lower), Number(f.Incident.Upper),
		Number(f.Incident.Count), Number(f.Baseline.Count), f.Incident.Window, f.Baseline.Window, f.Source, e.Text, e.Effect})
}

// UnmarshalJSON reads what MarshalJSON writes; the fact's numbers read
// as Fact.UnmarshalJSON reads them (null or absent: NaN).
func (e *Evidence) UnmarshalJSON(b []byte) error {
	var j struct {
		Fact   FactID  `json:"fact"`
		Text   string  `json:"text"`
		Effect *Effect `json:"effect"`
	}
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	var f Fact
	if err := f.UnmarshalJSON(b); err != nil {
		return err
	}
	*e = Evidence{ID: j.Fact, Fact: f, Text: j.Text, Effect: j.Effect}
	return nil
}

// fmtValue formats a value in the unit of the fact for a sentence
// (Unit.Prose).
func fmtValue(id FactID, v float64) string {
	info, _ := Info(id)
	return info.Unit.Prose(v)
}

// fmtNum is textfmt.Prose.
func fmtNum(v float64) string { return textfmt.Prose(v) }

func fmtRatio(r float64) string {
	if math.IsInf(r, 1) {
		return "up from 0"
	}
	if math.IsInf(r, 0) || math.IsNaN(r) {
		return fmt.Sprintf("%vx", r)
	}
	if math.Abs(math.Round(r*100)) >= 1000 {
		// From 10x on (as two decimals would print it) a multiple is a
		// whole number, as textfmt.Multiple writes it.
		return textfmt.Integer(r) + "x"
	}
	return fmt.Sprintf("%.2fx", r)
}

// fmtEst formats a measured value: one in the +Inf bucket (an upper
// bound of +Inf) is only a lower bound (histogram_quantile returns the
// bucket's lower edge there), printed ">= v".
func fmtEst(id FactID, m Measurement) string {
	v := m.Value
	if math.IsInf(m.Upper, 1) && !math.IsInf(v, 0) && !math.IsNaN(v) {
		return ">= " + fmtValue(id, v)
	}
	return fmtValue(id, v)
}

// fmtRatioEst formats value/baseline when either may be a lower bound
// (an estimate in the +Inf bucket): a lower-bound value makes the ratio a
// lower bound, a lower-bound baseline an upper bound, both unknown.
func fmtRatioEst(r float64, f Fact) string {
	vLow, bLow := math.IsInf(f.Incident.Upper, 1), math.IsInf(f.Baseline.Upper, 1)
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
