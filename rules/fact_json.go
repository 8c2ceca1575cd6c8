package rules

import (
	"encoding/json"
	"math"
)

// factJSON is a Fact's JSON form, the "facts" object of a report
// (docs/ids.md): unknown numbers are null, the optional fields are left
// out when unset.
type factJSON struct {
	Value             Number  `json:"value"`
	Lower             Number  `json:"lower"`
	Upper             Number  `json:"upper"`
	Count             Number  `json:"count"`
	Baseline          Number  `json:"baseline"`
	BaselineLower     Number  `json:"baseline_lower"`
	BaselineUpper     Number  `json:"baseline_upper"`
	BaselineCount     Number  `json:"baseline_count"`
	Window            string  `json:"window,omitempty"`
	BaselineWindow    string  `json:"baseline_window,omitempty"`
	Source            string  `json:"source,omitempty"`
	Missing           string  `json:"missing,omitempty"`
	NoiseLower        Number  `json:"noise_lower"`
	NoiseUpper        Number  `json:"noise_upper"`
	Intervals         int     `json:"intervals,omitempty"`
	BaselineIntervals int     `json:"baseline_intervals,omitempty"`
	SamplingZ         *Number `json:"sampling_z,omitempty"`
	Unprecedented     *Number `json:"unprecedented,omitempty"`
	Lifetime          bool    `json:"lifetime,omitempty"`
}

// MarshalJSON writes f as a report's "facts" entry: every field of f,
// sampling_z only when SamplingKnown, unprecedented only when positive
// (absent: none, or not measured) and lifetime only when set. What it
// writes reads back (UnmarshalJSON) into a Fact that Evaluate judges as
// it judges f.
func (f Fact) MarshalJSON() ([]byte, error) {
	j := factJSON{
		Value: Number(f.Incident.Value), Lower: Number(f.Incident.Lower), Upper: Number(f.Incident.Upper), Count: Number(f.Incident.Count),
		Baseline: Number(f.Baseline.Value), BaselineLower: Number(f.Baseline.Lower), BaselineUpper: Number(f.Baseline.Upper),
		BaselineCount: Number(f.Baseline.Count), Window: f.Incident.Window, BaselineWindow: f.Baseline.Window,
		Source: f.Source, NoiseLower: Number(f.NoiseLower), NoiseUpper: Number(f.NoiseUpper),
		Intervals: f.Intervals, BaselineIntervals: f.BaselineIntervals, Lifetime: f.Lifetime,
	}
	if f.Missing != nil {
		j.Missing = f.Missing.Error()
	}
	if f.SamplingKnown {
		z := Number(f.SamplingZ)
		j.SamplingZ = &z
	}
	if f.Unprecedented > 0 {
		u := Number(f.Unprecedented)
		j.Unprecedented = &u
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON writes; a number that is null or
// absent reads as NaN (unknown), as does an absent unprecedented; an
// absent sampling_z leaves SamplingKnown false.
func (f *Fact) UnmarshalJSON(b []byte) error {
	nan := Number(math.NaN())
	j := factJSON{Value: nan, Lower: nan, Upper: nan, Count: nan, Baseline: nan, BaselineLower: nan,
		BaselineUpper: nan, BaselineCount: nan, NoiseLower: nan, NoiseUpper: nan}
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*f = Fact{
		Incident: Measurement{Value: float64(j.Value), Lower: float64(j.Lower), Upper: float64(j.Upper), Count: float64(j.Count), Window: j.Window},
		Baseline: Measurement{Value: float64(j.Baseline), Lower: float64(j.BaselineLower), Upper: float64(j.BaselineUpper),
			Count: float64(j.BaselineCount), Window: j.BaselineWindow},
		Source: j.Source, NoiseLower: float64(j.NoiseLower), NoiseUpper: float64(j.NoiseUpper),
		Intervals: j.Intervals, BaselineIntervals: j.BaselineIntervals, Lifetime: j.Lifetime,
		Unprecedented: math.NaN(),
	}
	if j.Missing != "" {
		f.Missing = Warning{Text: j.Missing}
	}
	if j.SamplingZ != nil {
		f.SamplingZ, f.SamplingKnown = float64(*j.SamplingZ), true
	}
	if j.Unprecedented != nil {
		f.Unprecedented = float64(*j.Unprecedented)
	}
	return nil
}
