package rules

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// Direction says which way a metric moves: "lower" or "higher".
type Direction string

// Directions.
const (
	Lower  Direction = "lower"
	Higher Direction = "higher"
)

// Plan is a controlled experiment that tests one hypothesis by changing
// one variable, written before it runs (the article's section 12).
//
// Plan is a public contract: the diagnose JSON report carries it as the
// "experiment" object of each hypothesis, and `whyslow experiment --plan`
// reads exactly that object back from a file. Its JSON form:
//
//	{
//	  "hypothesis": "decode-pressure",
//	  "change": {"name": "max_num_seqs", "from": "current", "to": "one step lower"},
//	  "hold": ["dataset", "arrival trace", "output policy", "cache state"],
//	  "expect": [{"metric": "tpot_p95", "direction": "lower", "min_effect": 0.1}],
//	  "guards": [{"metric": "ttft_p95", "better": "lower", "tolerance": 0.1}],
//	  "falsification": [{"kind": "no-improvement", "metric": "tpot_p95",
//	                     "text": "TPOT p95 does not improve"}],
//	  "runs": 3,
//	  "warm_up_seconds": 300,
//	  "duration_seconds": 900
//	}
//
// Metric names are fact ids (FactID), computed per run. Effects and
// tolerances are relative fractions of the baseline arm's centre (0.1 =
// 10%).
type Plan struct {
	// Hypothesis is the hypothesis id the plan tests.
	Hypothesis string `json:"hypothesis"`
	// Change is the one variable changed between the arms.
	Change Change `json:"change"`
	// Hold lists what must stay the same in both arms.
	Hold []string `json:"hold,omitempty"`
	// Expect lists the metrics expected to improve.
	Expect []Expectation `json:"expect"`
	// Guards lists metrics that must not get worse beyond a tolerance.
	Guards []Guard `json:"guards,omitempty"`
	// Falsification lists the conditions, written in advance, under
	// which the hypothesis is rejected.
	Falsification []Falsifier `json:"falsification"`
	// Runs is the number of repeats per arm, at least 3.
	Runs int `json:"runs"`
	// WarmUp is excluded from the start of every run.
	WarmUp time.Duration `json:"-"`
	// Duration is the measured length of every run after warm-up; zero
	// when not specified.
	Duration time.Duration `json:"-"`
}

// Change is the one variable an experiment changes.
type Change struct {
	// Name is the variable, e.g. "max_num_seqs".
	Name string `json:"name"`
	// From is its baseline value; "current" when taken as deployed.
	From string `json:"from"`
	// To is its treatment value.
	To string `json:"to"`
}

// Expectation is a metric the hypothesis predicts to improve.
type Expectation struct {
	// Metric is a fact id, e.g. "tpot_p95".
	Metric FactID `json:"metric"`
	// Direction is the expected direction of change.
	Direction Direction `json:"direction"`
	// MinEffect is the smallest relative change that counts as an
	// improvement (0.1 = 10%).
	MinEffect float64 `json:"min_effect"`
}

// Guard is a metric that must not get worse by more than Tolerance.
type Guard struct {
	// Metric is a fact id, e.g. "ttft_p95".
	Metric FactID `json:"metric"`
	// Better is the direction in which the metric improves; the opposite
	// direction is "worse".
	Better Direction `json:"better"`
	// Tolerance is the largest relative worsening allowed (0.1 = 10%).
	Tolerance float64 `json:"tolerance"`
}

// FalsifierKind says how a falsification condition is judged.
type FalsifierKind string

// Falsifier kinds.
const (
	// NoImprovement fires when Metric does not improve by its expected
	// MinEffect in the expected direction.
	NoImprovement FalsifierKind = "no-improvement"
	// WorseThanGain fires when the metrics in Versus got worse, in
	// relative terms, by more than Metric improved.
	WorseThanGain FalsifierKind = "worse-than-gain"
	// Inconsistent fires when the direction of Metric's change is not
	// the same in every repeat.
	Inconsistent FalsifierKind = "inconsistent"
	// Manual is judged by a person; Text says how.
	Manual FalsifierKind = "manual"
)

// Falsifier is one falsification condition.
type Falsifier struct {
	Kind FalsifierKind `json:"kind"`
	// Metric is the metric the condition is about; empty for Manual.
	Metric FactID `json:"metric,omitempty"`
	// Versus lists the metrics weighed against Metric (WorseThanGain).
	Versus []FactID `json:"versus,omitempty"`
	// Text states the condition in words.
	Text string `json:"text"`
}

// MarshalJSON writes the plan with durations in seconds.
func (p Plan) MarshalJSON() ([]byte, error) {
	type plain Plan // drops the methods, avoiding recursion
	return json.Marshal(struct {
		plain
		WarmUpSeconds   float64 `json:"warm_up_seconds"`
		DurationSeconds float64 `json:"duration_seconds,omitempty"`
	}{plain(p), p.WarmUp.Seconds(), p.Duration.Seconds()})
}

// UnmarshalJSON reads a plan written by MarshalJSON or by hand; unknown
// fields are ignored. It does not validate; see Validate.
func (p *Plan) UnmarshalJSON(b []byte) error {
	type plain Plan
	var v struct {
		plain
		WarmUpSeconds   float64 `json:"warm_up_seconds"`
		DurationSeconds float64 `json:"duration_seconds"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	for _, s := range []float64{v.WarmUpSeconds, v.DurationSeconds} {
		if s < 0 || math.IsNaN(s) || s > math.MaxInt64/float64(time.Second) {
			return fmt.Errorf("plan: duration %v seconds out of range", s)
		}
	}
	*p = Plan(v.plain)
	p.WarmUp = time.Duration(v.WarmUpSeconds * float64(time.Second))
	p.Duration = time.Duration(v.DurationSeconds * float64(time.Second))
	return nil
}

// MinRuns is the fewest repeats per arm a plan may ask for.
const MinRuns = 3

// Validate reports every problem that makes the plan unusable, joined:
// no hypothesis, no variable, fewer than MinRuns runs, no expectation,
// a bad direction, a negative or non-finite effect or tolerance, or a
// falsifier of an unknown kind or without the metric its kind needs.
// Metric ids the rules do not know are allowed (custom signals).
func (p Plan) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("plan: "+format, a...)) }
	if p.Hypothesis == "" {
		bad("no hypothesis")
	}
	if p.Change.Name == "" {
		bad("no variable to change")
	} else if p.Change.From == p.Change.To {
		bad("change of %s from %q to %q changes nothing", p.Change.Name, p.Change.From, p.Change.To)
	}
	if p.Runs < MinRuns {
		bad("runs = %d, need >= %d", p.Runs, MinRuns)
	}
	if p.WarmUp < 0 || p.Duration < 0 {
		bad("negative warm-up or duration")
	}
	if len(p.Expect) == 0 {
		bad("no expected improvement")
	}
	okDir := func(d Direction) bool { return d == Lower || d == Higher }
	okFrac := func(x float64) bool { return x >= 0 && !math.IsInf(x, 0) && !math.IsNaN(x) }
	for i, e := range p.Expect {
		if e.Metric == "" {
			bad("expect[%d]: no metric", i)
		}
		if !okDir(e.Direction) {
			bad("expect[%d] %s: direction %q, want %q or %q", i, e.Metric, e.Direction, Lower, Higher)
		}
		if !okFrac(e.MinEffect) {
			bad("expect[%d] %s: min_effect %v is not a finite fraction >= 0", i, e.Metric, e.MinEffect)
		}
	}
	for i, g := range p.Guards {
		if g.Metric == "" {
			bad("guards[%d]: no metric", i)
		}
		if !okDir(g.Better) {
			bad("guards[%d] %s: better %q, want %q or %q", i, g.Metric, g.Better, Lower, Higher)
		}
		if !okFrac(g.Tolerance) {
			bad("guards[%d] %s: tolerance %v is not a finite fraction >= 0", i, g.Metric, g.Tolerance)
		}
	}
	if len(p.Falsification) == 0 {
		bad("no falsification condition")
	}
	for i, f := range p.Falsification {
		switch f.Kind {
		case NoImprovement, Inconsistent:
			if f.Metric == "" {
				bad("falsification[%d] %s: no metric", i, f.Kind)
			}
		case WorseThanGain:
			if f.Metric == "" || len(f.Versus) == 0 {
				bad("falsification[%d] %s: needs metric and versus", i, f.Kind)
			}
		case Manual:
			if f.Text == "" {
				bad("falsification[%d] manual: no text", i)
			}
		default:
			bad("falsification[%d]: unknown kind %q", i, f.Kind)
		}
	}
	return errors.Join(errs...)
}

// String prints the plan in a few lines: "experiment for" the
// hypothesis, its Summary, then its Terms indented.
func (p Plan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "experiment for %s: %s\n", p.Hypothesis, p.Summary())
	for _, t := range p.Terms() {
		b.WriteString("  " + t + "\n")
	}
	return b.String()
}

// Summary says the change and the runs in a line, e.g. "change
// max_num_batched_tokens from 2048 to 8192; 3 runs per arm after 5m0s
// warm-up, 30m0s each".
func (p Plan) Summary() string {
	s := fmt.Sprintf("change %s from %s to %s; %d runs per arm after %v warm-up", p.Change.Name, p.Change.From, p.Change.To, p.Runs, p.WarmUp)
	if p.Duration > 0 {
		s += fmt.Sprintf(", %v each", p.Duration)
	}
	return s
}

// Terms says what the plan holds, expects, guards and rejects, a line
// each ("hold: ...", "expect: ...", "guard: ...", "reject if: ...").
func (p Plan) Terms() []string {
	var out []string
	if len(p.Hold) > 0 {
		out = append(out, "hold: "+strings.Join(p.Hold, ", "))
	}
	for _, e := range p.Expect {
		out = append(out, fmt.Sprintf("expect: %s %s by >= %s", e.Metric, e.Direction, pct(e.MinEffect)))
	}
	for _, g := range p.Guards {
		out = append(out, fmt.Sprintf("guard: %s no worse than %s (%s is better)", g.Metric, pct(g.Tolerance), g.Better))
	}
	for _, f := range p.Falsification {
		out = append(out, "reject if: "+f.Text)
	}
	return out
}

func pct(x float64) string { return fmt.Sprintf("%.0f%%", 100*x) }
