package rules

import (
	"encoding/json"
	"fmt"
	"math"
)

// Severity grades a change of a fact against its baseline, or a symptom,
// or the evidence behind a finding (public JSON values).
//
// The grades follow the practical sizes an on-call engineer acts on
// (Thresholds.Rise, SeverityModerate, SeveritySevere; defaults +20%,
// +40%, 2x): mild is worth a look, moderate is an incident, severe is an
// outage of the latency budget. A fall is graded by the inverse ratio.
type Severity string

// Severities, from the weakest.
const (
	// SeverityNone: no change beyond the practical minimum.
	SeverityNone Severity = ""
	// SeverityMild: at least Rise x baseline (default +20%).
	SeverityMild Severity = "mild"
	// SeverityModerate: at least SeverityModerate x baseline (default +40%).
	SeverityModerate Severity = "moderate"
	// SeveritySevere: at least SeveritySevere x baseline (default 2x).
	SeveritySevere Severity = "severe"
)

// strength maps a grade to the weight it gives the evidence: a mild
// change supports a hypothesis half as much as a severe one.
func (s Severity) strength() float64 {
	switch s {
	case SeverityMild:
		return 0.5
	case SeverityModerate:
		return 0.75
	case SeveritySevere:
		return 1
	}
	return 0
}

// strengthGrade is the grade whose strength is st (the inverse of
// Severity.strength); SeverityNone below mild.
func (t Thresholds) strengthGrade(st float64) Severity {
	switch {
	case st >= 1:
		return SeveritySevere
	case st >= 0.75:
		return SeverityModerate
	case st >= 0.5:
		return SeverityMild
	}
	return SeverityNone
}

// Effect is the comparison of a fact's incident value with its baseline
// value: the effect size, the range the histogram buckets allow, the
// range the variation between intervals allows, and the grade.
//
// A change is "beyond noise" when the noise interval lies entirely on one
// side of 1: resampling each window's intervals (minutes) never produced
// a ratio on the other side. That is the test of a repeated measurement
// (benchstat compares runs the same way), and it is what keeps a 1.48x
// change on 70,000 requests from being ignored and a 1.6x change on a
// handful of noisy minutes from being believed. A change whose noise is
// unknown (no intervals: a single scrape, lifetime counters) is judged by
// its ratio alone, and says so.
type Effect struct {
	// Ratio is the incident value over the baseline's (the effect size;
	// 1 is no change).
	Ratio float64 `json:"ratio"`
	// BoundsLower and BoundsUpper bound Ratio by the bucket bounds of
	// both windows' quantiles (incident lower / baseline upper, incident
	// upper / baseline lower); NaN when the values are exact.
	BoundsLower float64 `json:"bounds_lower"`
	BoundsUpper float64 `json:"bounds_upper"`
	// NoiseLower and NoiseUpper bound Ratio by the variation between
	// intervals (NaN when NoiseKnown is false).
	NoiseLower float64 `json:"noise_lower"`
	NoiseUpper float64 `json:"noise_upper"`
	// Intervals and BaselineIntervals count the intervals behind the
	// noise bounds.
	Intervals         int `json:"intervals"`
	BaselineIntervals int `json:"baseline_intervals"`
	// NoiseKnown is false when no interval data exist.
	NoiseKnown bool `json:"noise_known"`
	// Unprecedented counts the incident observations above every
	// baseline observation when the rise rests on them (Fact.Unprecedented
	// at least Thresholds.MinSamples); 0 otherwise. Such a rise is beyond
	// the baseline's range even where the noise bounds reach 1.
	Unprecedented float64 `json:"unprecedented,omitempty"`
	// SamplingZ is Fact.SamplingZ when SamplingKnown; WithinSampling
	// is true when the change would be beyond noise but SamplingZ is
	// below Thresholds.SamplingZ in the direction of Ratio: then it is
	// not beyond noise, unless it is Unprecedented (a count-based test of
	// its own).
	SamplingZ      float64 `json:"sampling_z,omitempty"`
	SamplingKnown  bool    `json:"-"`
	WithinSampling bool    `json:"within_sampling,omitempty"`
	// Beyond is true when the change is beyond noise in the direction of
	// Ratio (always true, with NoiseKnown false, when the noise is unknown
	// and Ratio is not 1).
	Beyond bool `json:"beyond_noise"`
	// Severity grades a rise (Ratio > 1) or a fall (1/Ratio) that is
	// beyond noise; SeverityNone otherwise, and for an improvement.
	Severity Severity `json:"severity,omitempty"`
	// Improved is true when a change that Severity would grade is in the
	// fact's better direction (FactInfo.Better: a latency down, a hit
	// ratio or throughput up): an improvement, which carries no severity.
	Improved bool `json:"improved,omitempty"`
}

// Effect compares f with its baseline under th. The second result is
// false when f has no usable value or baseline.
func (f Fact) Effect(th Thresholds) (Effect, bool) {
	if !f.Known() || !f.HasBaseline() {
		return Effect{}, false
	}
	c := Effect{Ratio: ratio(f.Incident.Value, f.Baseline.Value), BoundsLower: math.NaN(), BoundsUpper: math.NaN(),
		NoiseLower: math.NaN(), NoiseUpper: math.NaN(), SamplingZ: f.SamplingZ, SamplingKnown: f.SamplingKnown}
	if !math.IsNaN(f.Incident.Lower) && !math.IsNaN(f.Incident.Upper) && !math.IsNaN(f.Baseline.Lower) && !math.IsNaN(f.Baseline.Upper) {
		c.BoundsLower, c.BoundsUpper = ratio(f.Incident.Lower, f.Baseline.Upper), ratio(f.Incident.Upper, f.Baseline.Lower)
	}
	if f.Intervals > 0 && f.BaselineIntervals > 0 && !math.IsNaN(f.NoiseLower) && !math.IsNaN(f.NoiseUpper) {
		c.NoiseKnown = true
		c.NoiseLower, c.NoiseUpper = f.NoiseLower, f.NoiseUpper
		c.Intervals, c.BaselineIntervals = f.Intervals, f.BaselineIntervals
	}
	if f.Unprecedented >= th.MinSamples && c.Ratio > 1 {
		c.Unprecedented = f.Unprecedented
	}
	switch {
	case c.Ratio > 1:
		c.Beyond = !c.NoiseKnown || c.NoiseLower > 1 || c.Unprecedented > 0
		c.WithinSampling = c.Beyond && c.SamplingKnown && c.SamplingZ < th.SamplingZ && c.Unprecedented == 0
	case c.Ratio < 1:
		c.Beyond = !c.NoiseKnown || c.NoiseUpper < 1
		c.WithinSampling = c.Beyond && c.SamplingKnown && c.SamplingZ > -th.SamplingZ
	}
	c.Beyond = c.Beyond && !c.WithinSampling
	if c.Beyond {
		c.Severity = th.grade(c.Ratio)
	}
	return c, true
}

// Toward judges c by the better direction of fact id: a change graded
// in that direction is Improved and loses its Severity. A fact without a
// better direction, or a change in its bad direction, is returned as is.
func (c Effect) Toward(id FactID) Effect {
	info, ok := Info(id)
	if !ok || c.Severity == SeverityNone {
		return c
	}
	if (info.Better == Lower && c.Ratio < 1) || (info.Better == Higher && c.Ratio > 1) {
		c.Improved, c.Severity = true, SeverityNone
	}
	return c
}

// grade returns the severity of a ratio (a fall by its inverse).
func (t Thresholds) grade(r float64) Severity {
	if r > 0 && r < 1 {
		r = 1 / r
	}
	switch {
	case math.IsNaN(r):
		return SeverityNone
	case r >= t.SeveritySevere:
		return SeveritySevere
	case r >= t.SeverityModerate:
		return SeverityModerate
	case r >= t.Rise:
		return SeverityMild
	}
	return SeverityNone
}

// Up reports whether the change is a rise beyond noise and at least the
// practical minimum th.Rise.
func (c Effect) Up(th Thresholds) bool { return c.Beyond && c.Ratio >= th.Rise }

// Down reports whether the change is a fall beyond noise to at most
// 1/th.Rise.
func (c Effect) Down(th Thresholds) bool { return c.Beyond && c.Ratio <= 1/th.Rise }

// Steady reports whether the change is within [1/th.Steady, th.Steady]
// or within noise.
func (c Effect) Steady(th Thresholds) bool {
	return (c.Ratio >= 1/th.Steady && c.Ratio <= th.Steady) || ((c.NoiseKnown || c.WithinSampling) && !c.Beyond)
}

// String describes the change: "2.10x, severe (noise 1.92-2.31x over
// 30/30 intervals)".
func (c Effect) String() string {
	return fmtRatio(c.Ratio) + c.gradeText() + " (" + c.noiseText() + ")"
}

// noiseText says what the noise estimate is.
func (c Effect) noiseText() string {
	if c.WithinSampling {
		s := fmt.Sprintf("within sampling noise: z %s", fmtNum(c.SamplingZ))
		if c.NoiseKnown {
			s += fmt.Sprintf("; noise %s-%s over %d/%d intervals", fmtRatio(c.NoiseLower), fmtRatio(c.NoiseUpper), c.Intervals, c.BaselineIntervals)
		}
		return s
	}
	if !c.NoiseKnown {
		return "noise unknown"
	}
	w := "beyond noise"
	if !c.Beyond {
		w = "within noise"
	}
	if c.Unprecedented > 0 && !(c.NoiseLower > 1) {
		return fmt.Sprintf("beyond the baseline's range: %s observations above its slowest; noise %s-%s over %d/%d intervals", fmtNum(c.Unprecedented), fmtRatio(c.NoiseLower), fmtRatio(c.NoiseUpper), c.Intervals, c.BaselineIntervals)
	}
	return fmt.Sprintf("%s %s-%s over %d/%d intervals", w, fmtRatio(c.NoiseLower), fmtRatio(c.NoiseUpper), c.Intervals, c.BaselineIntervals)
}

// MarshalJSON writes the effect with non-finite numbers as null, and
// sampling_z only when measured.
func (c Effect) MarshalJSON() ([]byte, error) {
	var z *Number
	if c.SamplingKnown {
		n := Number(c.SamplingZ)
		z = &n
	}
	return json.Marshal(struct {
		Ratio             Number   `json:"ratio"`
		BoundsLower       Number   `json:"bounds_lower"`
		BoundsUpper       Number   `json:"bounds_upper"`
		NoiseLower        Number   `json:"noise_lower"`
		NoiseUpper        Number   `json:"noise_upper"`
		Intervals         int      `json:"intervals"`
		BaselineIntervals int      `json:"baseline_intervals"`
		NoiseKnown        bool     `json:"noise_known"`
		Beyond            bool     `json:"beyond_noise"`
		Severity          Severity `json:"severity,omitempty"`
		Improved          bool     `json:"improved,omitempty"`
		Unprecedented     float64  `json:"unprecedented,omitempty"`
		SamplingZ         *Number  `json:"sampling_z,omitempty"`
		WithinSampling    bool     `json:"within_sampling,omitempty"`
	}{Number(c.Ratio), Number(c.BoundsLower), Number(c.BoundsUpper), Number(c.NoiseLower), Number(c.NoiseUpper),
		c.Intervals, c.BaselineIntervals, c.NoiseKnown, c.Beyond, c.Severity, c.Improved, c.Unprecedented,
		z, c.WithinSampling})
}

// ratioText formats the ratio of f (a lower or upper bound where a
// quantile sits in the +Inf bucket) and its grade: the lead of an
// evidence sentence, which noiseText follows.
func (c Effect) ratioText(f Fact) string {
	return fmtRatioEst(c.Ratio, f) + c.gradeText()
}

// gradeText is ", improved" for an improvement, ", " and the severity
// for a graded change, else empty.
func (c Effect) gradeText() string {
	switch {
	case c.Improved:
		return ", improved"
	case c.Severity != SeverityNone:
		return ", " + string(c.Severity)
	}
	return ""
}
