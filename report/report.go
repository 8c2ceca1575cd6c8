package report

import (
	"encoding/json"
	"maps"
	"math"
	"strings"
	"time"

	"github.com/whyslow/whyslow/histogram"
	"github.com/whyslow/whyslow/internal/textfmt"
	"github.com/whyslow/whyslow/rules"
)

// SchemaVersion is the version of the JSON form of Report. It is an
// integer that grows by one with every change that could break a reader;
// adding a field does not change it.
const SchemaVersion = 1

// Report is the outcome of Diagnose: the verdict first, then the windows it
// compared, the symptoms, the ranked hypotheses and the signals behind
// them, and every warning met on the way.
//
// Report is a plain value. Its JSON form (see the JSON schema in
// docs/ids.md) is a public contract: field names never change; new fields
// may be added.
type Report struct {
	// SchemaVersion is SchemaVersion.
	SchemaVersion int `json:"schema_version"`
	// Verdict is a hypothesis id, "no-incident" or "undetermined".
	Verdict rules.Verdict `json:"verdict"`
	// Summary is one sentence saying what the verdict rests on.
	Summary string `json:"summary"`
	// Group names the slice of the fleet this report covers, e.g.
	// {"model_name": "llama"}; empty for the whole evidence.
	Group map[string]string `json:"group,omitempty"`
	// Windows are the baseline and incident windows compared.
	Windows Windows `json:"windows"`
	// Symptoms are the four user symptoms, judged.
	Symptoms []rules.Symptom `json:"symptoms"`
	// Hypotheses are the decision map's findings, ranked. In JSON each
	// carries its explicit "rank" (1 first), in this order.
	Hypotheses []rules.Finding `json:"hypotheses"`
	// Culprit is the replica or group the report singles out, or nil
	// (see NamedCulprit). WriteJSON fills it from NamedCulprit when nil.
	Culprit *Culprit `json:"culprit,omitempty"`
	// Notes are counter-cases recognised (e.g. a high but healthy KV
	// cache) that must not read as incidents.
	Notes []rules.Note `json:"notes,omitempty"`
	// Candidates are the leading supported hypotheses when the verdict is
	// undetermined (a weak lead, or unrelated causes close together):
	// the next checks, never a verdict.
	Candidates []rules.HypothesisID `json:"candidates,omitempty"`
	// Signals are the measured signals, fleet-wide and per replica.
	Signals Signals `json:"signals"`
	// Timelines are per-interval series (fleet and per replica) over the
	// whole evidence, for plots and the change-point search: TTFT, queue,
	// prefill and TPOT p95, waiting, running, KV usage, preemption rate,
	// GPU utilisation.
	Timelines []Timeline `json:"timelines,omitempty"`
	// Facts are the inputs given to the decision map, by fact id, as
	// rules.Fact writes them in JSON.
	Facts rules.Facts `json:"facts"`
	// Inputs describe the evidence read.
	Inputs Inputs `json:"inputs"`
	// Dimensions says, for each of the article's dimensions to keep apart
	// (model and replica, workload type, prompt/output length, streaming,
	// success/cancel/timeout, cold/warm cache), whether this evidence
	// supports it or why not.
	Dimensions []Dimension `json:"dimensions"`
	// Warnings are non-fatal problems: low counts, counter resets,
	// mismatched bucket layouts, version skew, configuration drift,
	// unreadable files, non-finite numbers written as null.
	Warnings []string `json:"warnings"`
	// WarningDetails types the warnings: the same texts, in the same
	// order, each with its kind and severity, so that tools test Kind and
	// Severity instead of grepping Text. Add warnings with AddWarnings to
	// keep the two lists in step. Empty in reports written before it
	// existed.
	WarningDetails []Warning `json:"warning_details,omitempty"`
	// Settings are the SLO targets and decision-map thresholds the report
	// was judged with, so that a saved report can be read (and re-judged)
	// on its own.
	Settings Settings `json:"settings"`
	// Groups holds one report per value of the split label when the
	// evidence was split (by model_name by default when several models
	// are present); the top-level fields then summarise the groups.
	Groups []*Report `json:"groups,omitempty"`
}

// Windows are the time ranges a Report compares.
type Windows struct {
	Baseline WindowInfo `json:"baseline"`
	Incident WindowInfo `json:"incident"`
	// ChangePoint is the automatic proposal of when the incident
	// started; nil when none was searched or none was found.
	ChangePoint *ChangePoint `json:"change_point,omitempty"`
}

// WindowInfo is one window with how it was chosen.
type WindowInfo struct {
	// Start and End bound the window (RFC 3339 UTC in JSON). Both are zero
	// for a missing baseline.
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// From says how the window was chosen: "given" (by the caller),
	// "change-point", "halves" (no change point: first and second half),
	// "preceding" (a given incident without a baseline: everything before
	// it),
	// "lifetime" (a single dump per pod: values since process start, not
	// windowed), "whole" (first to last scrape) or "none".
	From string `json:"from"`
	// Scrapes is the number of scrape instants of vLLM targets inside the
	// window, summed over the targets (a replica scraped 60 times and
	// another 60 times make 120), the same count for every evidence kind
	// (dumps, /federate, OpenMetrics, TSDB). A companion exporter's
	// targets (DCGM, node exporter: Inputs.Exporters) do not count, nor do
	// per-series samples. Gauges' counts (Measure.Count of a gauge) are
	// something else: the samples of the series summarised (a fleet
	// gauge's are the instants of its fleet sum), which the text calls
	// "samples".
	Scrapes int `json:"scrapes"`
}

// ChangePoint is a proposed start of the incident.
type ChangePoint struct {
	Time time.Time `json:"time"`
	// Score is the size of the shift at Time (see the method).
	Score float64 `json:"score"`
	// Method describes how the point was found.
	Method string `json:"method"`
	// Used reports whether the windows were derived from it.
	Used bool `json:"used"`
	// Signals are the symptom series that step at Time (their shift is
	// material and counts toward Score), largest shift first: which
	// signal moved, from what level to what.
	Signals []ChangeSignal `json:"signals,omitempty"`
}

// ChangeSignal is one series that steps at a change point.
type ChangeSignal struct {
	// Series names the per-interval series: "ttft_p95", "tpot_p95",
	// "itl_p95", "e2e_p95" (fleet, buckets merged per interval) or
	// "waiting" (fleet mean).
	Series string `json:"series"`
	// Unit is the unit of Before and After: "s" or "requests".
	Unit string `json:"unit"`
	// Before and After are the series' means over the intervals before
	// and after the change point.
	Before rules.Number `json:"before"`
	After  rules.Number `json:"after"`
	// Score is the series' standardised shift (its term of the score).
	Score float64 `json:"score"`
}

// Signals are the measured signals of a report.
type Signals struct {
	// Fleet holds the fleet-wide signals (histograms merged across
	// replicas before quantiles are taken), in catalog order.
	Fleet []Signal `json:"fleet"`
	// Replicas maps a replica name to its own signals.
	Replicas map[string][]Signal `json:"replicas"`
}

// Signal is one signal over the baseline and incident windows.
type Signal struct {
	// ID is the catalog signal id, e.g. "ttft" (snake_case, stable).
	ID string `json:"id"`
	// Kind is "histogram", "counter", "gauge" or "ratio".
	Kind string `json:"kind"`
	// Unit is the unit of values: "s", "tokens", "requests", "ratio",
	// "1/s".
	Unit string `json:"unit"`
	// Metric is the metric name the values came from.
	Metric string `json:"metric,omitempty"`
	// Versions is the range of vLLM versions that expose Metric.
	Versions string `json:"versions,omitempty"`
	// Baseline and Incident are nil when the window is missing or the
	// signal could not be evaluated over it.
	Baseline *Measure `json:"baseline"`
	Incident *Measure `json:"incident"`
	// Missing says why the signal cannot be evaluated; empty when it can.
	Missing string `json:"missing,omitempty"`
	// Warnings touch this signal only (low counts, resets, dropped
	// buckets).
	Warnings []string `json:"warnings,omitempty"`
}

// Measure is a signal's value over one window. Which fields are set
// depends on the signal's kind.
type Measure struct {
	// Window is the window measured.
	Window WindowInfo `json:"window"`
	// Quantiles (histograms): p50, p95 and p99 with bucket bounds and
	// counts.
	Quantiles []Quantile `json:"quantiles,omitempty"`
	// Mean (histograms: sum/count; gauges: mean over scrapes).
	Mean rules.Number `json:"mean"`
	// Count is the number of observations (histograms: requests, or
	// token gaps for the inter-token latency), the counter increase
	// (counters) or the number of scrape instants the gauge was read at
	// (gauges: per replica, that replica's scrapes; fleet-wide, the scrape
	// times at which the replicas' values were summed).
	Count rules.Number `json:"count"`
	// Rate is the counter increase per second (counters), or NaN.
	Rate rules.Number `json:"rate"`
	// Min, Max, Last and Slope (per second) summarise gauges.
	Min   rules.Number `json:"min"`
	Max   rules.Number `json:"max"`
	Last  rules.Number `json:"last"`
	Slope rules.Number `json:"slope"`
	// Resets counts counter resets seen inside the window.
	Resets int `json:"resets"`
	// LowerBound is true when a reset between two edge scrapes makes the
	// value a lower bound.
	LowerBound bool `json:"lower_bound"`
	// Lifetime is true when the value is since process start, not
	// windowed (a single scrape).
	Lifetime bool `json:"lifetime"`
}

// Quantile is one quantile estimate in the JSON form docs/ids.md
// documents: {q, value, lower, upper, count}; non-finite numbers are null.
type Quantile struct {
	Q      float64      `json:"q"`
	Value  rules.Number `json:"value"`
	Lower  rules.Number `json:"lower"`
	Upper  rules.Number `json:"upper"`
	Count  rules.Number `json:"count"`
	Stable bool         `json:"stable"`
}

// QuantileOf converts a histogram estimate.
func QuantileOf(e histogram.Estimate) Quantile {
	return Quantile{Q: e.Q, Value: rules.Number(e.Value), Lower: rules.Number(e.Lower), Upper: rules.Number(e.Upper), Count: rules.Number(e.Count), Stable: e.Stable}
}

// RuleFacts returns the facts the report's verdict was judged on, as
// rules.Facts: rules.Evaluate(r.RuleFacts(), slo, th) reproduces the
// symptoms and hypotheses, and lets a notebook try other SLOs or
// thresholds on the same evidence without reading it again.
func (r *Report) RuleFacts() rules.Facts {
	return maps.Clone(r.Facts)
}

// Inputs describe the evidence behind a report.
type Inputs struct {
	// Sources are the files and directories read.
	Sources []string `json:"sources"`
	// Replicas are the target names, sorted.
	Replicas []string `json:"replicas"`
	// Versions maps a replica to the vLLM versions consistent with the
	// metric names it exposes.
	Versions map[string]string `json:"versions,omitempty"`
	// Partial is true when some input could not be read.
	Partial bool `json:"partial"`
	// Problems are the reading problems, formatted.
	Problems []string `json:"problems,omitempty"`
	// Notes say how the reader settled what the input left open (a dump
	// read live from a pipe, with no time on its samples, timed when it
	// was read); nothing in them is wrong.
	Notes []string `json:"notes,omitempty"`
	// Exporters are the companion targets scraped beside vLLM (DCGM
	// exporter, node exporter), once per kind: they feed signals
	// (gpu_util) but are not replicas, and their scrapes are not counted
	// in WindowInfo.Scrapes.
	Exporters []Exporter `json:"exporters,omitempty"`
}

// Exporter is one kind of companion exporter in the evidence.
type Exporter struct {
	// Kind is "DCGM exporter", "node exporter" or "exporter".
	Kind string `json:"kind"`
	// Targets are the exporter's target names, sorted.
	Targets []string `json:"targets"`
	// Signals are the catalog signals read from them ("gpu_util").
	Signals []string `json:"signals"`
}

// String says "2 DCGM exporter targets (gpu_util, fb_used)".
func (e Exporter) String() string {
	s := textfmt.Plural(len(e.Targets), e.Kind+" target", e.Kind+" targets")
	if len(e.Signals) > 0 {
		s += " (" + strings.Join(e.Signals, ", ") + ")"
	}
	return s
}

// Dimension is one of the article's dimensions to keep apart.
type Dimension struct {
	Name      string `json:"name"`
	Supported bool   `json:"supported"`
	// How says which label or metric provides it, or why it is not
	// visible in the data.
	How string `json:"how"`
}

// Timeline is one signal over time, on a regular grid of intervals.
type Timeline struct {
	// Signal is the signal id ("ttft", "waiting", ...).
	Signal string `json:"signal"`
	// Stat is what each point holds: "p95" (of the observations made in
	// the interval, buckets merged across replicas), "mean", "max",
	// "rate" (per second).
	Stat string `json:"stat"`
	// Replica is empty for the fleet, else the replica name.
	Replica string `json:"replica,omitempty"`
	// Step is the interval length.
	Step time.Duration `json:"-"`
	// Points are the interval ends and values, ascending.
	Points []Point `json:"points"`
}

// Point is one value of a Timeline: the value over the interval ending at
// T, and the number of observations (or scrapes) behind it.
type Point struct {
	T     time.Time    `json:"t"`
	Value rules.Number `json:"value"`
	Count rules.Number `json:"count"`
	// Edge is set on a quantile point whose quantile lies in an edge
	// bucket of the histogram (see Quantile.Bound): the first bucket's
	// upper edge b when it lies in [0, b], +Inf when it lies in the
	// overflow bucket; zero otherwise and on gauges and rates. Bound reads
	// it. The JSON form leaves it out.
	Edge rules.Number `json:"-"`
}

// QuantilePoint is the point of quantile q over the interval ending at t,
// with its Edge.
func QuantilePoint(t time.Time, q Quantile) Point {
	p := Point{T: t, Value: q.Value, Count: q.Count}
	if op, _ := q.Bound(); op != "" {
		p.Edge = q.Upper
	}
	return p
}

// Bound says what is known of the point as the tables say it of a
// quantile (Quantile.Bound): "<=" and the first bucket's upper edge, ">="
// and the value (the overflow bucket's lower edge), or "" and the value.
func (p Point) Bound() (op string, v float64) {
	q := Quantile{Value: p.Value, Lower: rules.Number(math.NaN()), Upper: p.Edge}
	switch e := float64(p.Edge); {
	case math.IsInf(e, 1):
		q.Lower = p.Value
	case e > 0:
		q.Lower = 0
	default:
		return "", float64(p.Value)
	}
	return q.Bound()
}

// MarshalJSON writes p as encoding/json writes the struct, in one call: a
// report holds a point per interval, replica and signal (some 400,000 for
// 100 pods over 6 hours), and an encoder call for each of its fields is
// most of the time a report takes to write.
func (p Point) MarshalJSON() ([]byte, error) { return p.appendJSON(make([]byte, 0, 80)) }

// appendJSON appends p's JSON form to b.
func (p Point) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"t":"`...)
	b, err := p.T.AppendText(b)
	if err != nil {
		return nil, err
	}
	b = append(b, `","value":`...)
	b = p.Value.AppendJSON(b)
	b = append(b, `,"count":`...)
	b = p.Count.AppendJSON(b)
	return append(b, '}'), nil
}

// jsonTime is a time whose JSON form is RFC 3339 in UTC, or null when it
// is the zero time (an open or missing window edge).
type jsonTime time.Time

// MarshalJSON writes t in RFC 3339 UTC, or null for the zero time.
func (t jsonTime) MarshalJSON() ([]byte, error) {
	tt := time.Time(t)
	if tt.IsZero() {
		return []byte("null"), nil
	}
	return json.Marshal(tt.UTC().Format(time.RFC3339Nano))
}

// MarshalJSON writes the window with RFC 3339 UTC times; a zero (open or
// missing) edge is null.
func (w WindowInfo) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Start   jsonTime `json:"start"`
		End     jsonTime `json:"end"`
		From    string   `json:"from"`
		Scrapes int      `json:"scrapes"`
	}{jsonTime(w.Start), jsonTime(w.End), w.From, w.Scrapes})
}

// WindowSpan is a time range in JSON: {"start": ..., "end": ...} in
// RFC 3339 UTC.
type WindowSpan struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// MarshalJSON writes the span with RFC 3339 UTC times; a zero edge is
// null.
func (w WindowSpan) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Start jsonTime `json:"start"`
		End   jsonTime `json:"end"`
	}{jsonTime(w.Start), jsonTime(w.End)})
}

// MarshalJSON writes the timeline with its step in seconds
// ("step_seconds").
//
// It writes what encoding/json writes for the struct's fields and
// "step_seconds" after them, the points with Point's own writer: a
// report's timelines hold most of its numbers.
func (t Timeline) MarshalJSON() ([]byte, error) {
	return t.appendJSON(make([]byte, 0, 96+80*len(t.Points)))
}

// appendJSON appends what MarshalJSON returns to b.
func (t Timeline) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"signal":`...)
	b = appendJSONString(b, t.Signal)
	b = append(b, `,"stat":`...)
	b = appendJSONString(b, t.Stat)
	if t.Replica != "" {
		b = append(b, `,"replica":`...)
		b = appendJSONString(b, t.Replica)
	}
	b = append(b, `,"points":`...)
	if t.Points == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, p := range t.Points {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = p.appendJSON(b); err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
	}
	b = append(b, `,"step_seconds":`...)
	b = rules.Number(t.Step.Seconds()).AppendJSON(b) // finite: as a float64
	return append(b, '}'), nil
}

// appendJSONString appends s as json.Marshal writes it.
func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always marshals
	return append(b, q...)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (t *Timeline) UnmarshalJSON(b []byte) error {
	type plain Timeline
	var v struct {
		plain
		StepSeconds float64 `json:"step_seconds"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*t = Timeline(v.plain)
	t.Step = time.Duration(v.StepSeconds * float64(time.Second))
	return nil
}

// Settings are the SLO targets and thresholds a report was judged with.
type Settings struct {
	// SLO maps a target's name (ttft_p95, ttft_p99, tpot_p95, itl_p95,
	// e2e_p99, error_share) to its limit in base units; targets not given
	// are left out.
	SLO map[string]float64 `json:"slo"`
	// Thresholds maps every decision-map threshold's snake_case name
	// (see rules.ThresholdNames) to its value.
	Thresholds map[string]float64 `json:"thresholds"`
}

// NewSettings records the SLO targets (the ones set) and every threshold
// a report was judged with.
func NewSettings(slo rules.SLO, th rules.Thresholds) Settings {
	s := Settings{SLO: map[string]float64{}, Thresholds: map[string]float64{}}
	for name, v := range map[string]float64{
		"ttft_p95": slo.TTFTP95, "ttft_p99": slo.TTFTP99, "tpot_p95": slo.TPOTP95,
		"itl_p95": slo.ITLP95, "e2e_p99": slo.E2EP99, "error_share": slo.ErrorShare,
	} {
		if v > 0 {
			s.SLO[name] = v
		}
	}
	for _, n := range rules.ThresholdNames() {
		s.Thresholds[n], _ = th.Get(n)
	}
	return s
}

// thresholds returns the thresholds the report was judged with, or
// rules.DefaultThresholds for a report that does not record them.
func (r *Report) thresholds() rules.Thresholds {
	th := rules.DefaultThresholds
	for n, v := range r.Settings.Thresholds {
		_ = th.Set(n, v)
	}
	return th
}
