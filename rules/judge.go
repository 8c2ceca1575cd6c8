package rules

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"golang.org/x/perf/benchmath"

	"github.com/whyslow/whyslow/internal/textfmt"
)

// Decision is the outcome of judging an experiment (public JSON values).
type Decision string

// Decisions.
const (
	// Adopt: every expected improvement held beyond its minimum effect in
	// every pair of runs (and, from JudgeOptions.SignificanceRuns runs per
	// arm, with p < Alpha), no falsification condition fired and no guard
	// broke.
	Adopt Decision = "adopt"
	// Reject: a falsification condition fired, a guard broke, or an
	// expected improvement went the wrong way in every treatment run.
	Reject Decision = "reject"
	// Inconclusive: the data neither support nor reject the hypothesis:
	// the runs overlap, directions are mixed, or something needed could
	// not be evaluated.
	Inconclusive Decision = "inconclusive"
	// Refused: the experiment cannot be judged at all: an invalid plan,
	// too few runs (or too few runs with enough samples), or arms that
	// did not see the same workload.
	Refused Decision = "refused"
)

// RunFacts is one run (a repeat) of one arm of an experiment: the facts
// measured over its window after warm-up. Only a fact's Incident.Value,
// Incident.Count and Missing are read.
type RunFacts struct {
	// Name identifies the run, e.g. its dump folder.
	Name string
	// Window describes the measured window, e.g.
	// "2026-09-22T10:05:00Z/2026-09-22T10:20:00Z".
	Window string
	// Duration is the length of the measured window; zero when unknown
	// (the request-count and duration checks are then skipped).
	Duration time.Duration
	// Facts are the run's metric values.
	Facts Facts
}

// JudgeOptions tune Judge. Start from DefaultJudgeOptions; a zero field
// takes its default.
type JudgeOptions struct {
	// Alpha is the significance level of the Mann-Whitney U test
	// (two-sided), as benchstat's: 0.05.
	Alpha float64
	// SignificanceRuns is the number of runs per arm from which adopt
	// also requires p < Alpha on every expected metric: 4, the fewest
	// with which the U test can reach p < 0.05 at all (with 3 runs per
	// arm the smallest attainable p is 0.1).
	SignificanceRuns int
	// WorkloadTolerance is the largest relative difference between the
	// arms' medians of each workload descriptor (arrival rate, requests,
	// prompt and output length p50/p95, duration): 0.1.
	WorkloadTolerance float64
	// MinSamples is the fewest observations a quantile of one run needs
	// to be used: 20, as Thresholds.MinSamples.
	MinSamples float64
	// Metrics are compared and reported besides the plan's own; nil
	// means ReportedMetrics().
	Metrics []FactID
}

// DefaultJudgeOptions are the options of benchstat-like honesty: alpha
// 0.05, significance required from 4 runs per arm, workloads within 10%.
var DefaultJudgeOptions = JudgeOptions{
	Alpha:             0.05,
	SignificanceRuns:  4,
	WorkloadTolerance: 0.1,
	MinSamples:        20,
}

func (o JudgeOptions) withDefaults() JudgeOptions {
	d := DefaultJudgeOptions
	if o.Alpha <= 0 || o.Alpha >= 1 || math.IsNaN(o.Alpha) {
		o.Alpha = d.Alpha
	}
	if o.SignificanceRuns <= 0 {
		o.SignificanceRuns = d.SignificanceRuns
	}
	if !(o.WorkloadTolerance > 0) {
		o.WorkloadTolerance = d.WorkloadTolerance
	}
	if !(o.MinSamples >= 0) {
		o.MinSamples = d.MinSamples
	}
	if o.MinSamples == 0 {
		o.MinSamples = d.MinSamples
	}
	if o.Metrics == nil {
		o.Metrics = ReportedMetrics()
	}
	return o
}

// ReportedMetrics returns the metrics every judgement compares besides
// the plan's own, in report order: TTFT, TPOT, ITL and E2E quantiles,
// output tokens/s, queue time, KV usage, preemptions, error and abort
// shares, and the backlog left at the end of each run.
func ReportedMetrics() []FactID {
	return []FactID{
		TTFTP50, TTFTP95, TPOTP50, TPOTP95, ITLP95, E2EP50, E2EP95,
		GenerationTokenRate, QueueTimeP95, KVUsageMean, PreemptionRate,
		ErrorShare, AbortShare, BacklogEnd,
	}
}

// WorkloadMetrics returns the facts that describe the workload a run
// saw; both arms must agree on them within JudgeOptions.WorkloadTolerance.
// The request count (arrival rate times duration) and the duration are
// checked as well when the runs' durations are known.
func WorkloadMetrics() []FactID {
	return []FactID{ArrivalRate, PromptTokensP50, PromptTokensP95, GenerationTokensP50, GenerationTokensP95}
}

// Judgement is the outcome of Judge: the verdict with its reasons, the
// runs, the workload checks and one comparison per metric.
type Judgement struct {
	// Plan is the plan judged.
	Plan Plan `json:"plan"`
	// Verdict is adopt, reject, inconclusive or refused.
	Verdict Decision `json:"verdict"`
	// Reasons say what the verdict rests on, in the order: refusals,
	// expected improvements, falsification conditions, guards.
	Reasons []Reason `json:"reasons"`
	// Baseline and Treatment are the runs of each arm, in the order given.
	Baseline  []RunInfo `json:"baseline_runs"`
	Treatment []RunInfo `json:"treatment_runs"`
	// Workload compares what the arms saw.
	Workload []WorkloadCheck `json:"workload"`
	// Metrics compares the arms, metric by metric: the plan's expected,
	// guard and falsification metrics first, then the reported ones.
	Metrics []Comparison `json:"metrics"`
	// Alpha is the significance level used.
	Alpha float64 `json:"alpha"`
	// Warnings are non-fatal problems: runs dropped for too few samples,
	// metrics that could not be computed, significance that the run
	// count cannot reach.
	Warnings []string `json:"warnings"`
}

// RunInfo names one run in a Judgement.
type RunInfo struct {
	Name            string  `json:"name"`
	Window          string  `json:"window,omitempty"`
	DurationSeconds float64 `json:"duration_seconds,omitempty"`
}

// Reason is one line of a verdict.
type Reason struct {
	// Kind is "plan", "runs", "workload", "expect", "falsifier" or
	// "guard".
	Kind string `json:"kind"`
	// Metric is the metric the reason is about, if any.
	Metric FactID `json:"metric,omitempty"`
	// Outcome is one of: "refused"; for expectations "held", "not-held",
	// "wrong-way"; for falsifiers "fired", "not-fired", "manual"; for
	// guards "ok", "broke", or "skipped" when no run of either arm
	// carries the metric; or "unknown" when it could not be evaluated
	// (which keeps the verdict from adopt).
	Outcome string `json:"outcome"`
	// Text says it in words, with the numbers.
	Text string `json:"text"`
}

// String returns "outcome: text".
func (r Reason) String() string { return r.Outcome + ": " + r.Text }

// Reason outcomes.
const (
	outRefused  = "refused"
	outHeld     = "held"
	outNotHeld  = "not-held"
	outWrongWay = "wrong-way"
	outFired    = "fired"
	outNotFired = "not-fired"
	outManual   = "manual"
	outOK       = "ok"
	outBroke    = "broke"
	outUnknown  = "unknown"
	outSkipped  = "skipped"
)

// WorkloadCheck compares one workload descriptor between the arms.
type WorkloadCheck struct {
	// Name is a fact id (arrival_rate, prompt_tokens_p95, ...),
	// "requests" (arrival rate times duration) or "duration" (seconds).
	Name string `json:"name"`
	// Baseline and Treatment are the medians over each arm's runs.
	Baseline  float64 `json:"baseline"`
	Treatment float64 `json:"treatment"`
	// Change is Treatment/Baseline - 1.
	Change    float64 `json:"change"`
	Tolerance float64 `json:"tolerance"`
	// Outcome is "same", "differs" or "unknown".
	Outcome string `json:"outcome"`
	Text    string `json:"text"`
}

// ArmStats are one arm's values of one metric.
type ArmStats struct {
	// Values holds one value per run in run order; NaN where the run's
	// value is missing or rests on too few samples.
	Values []float64 `json:"values"`
	// Counts holds the observations behind each value (NaN if unknown).
	Counts []float64 `json:"counts"`
	// N is the number of usable values.
	N int `json:"n"`
	// Center is the median of the usable values; Min and Max their
	// range. NaN when N is 0.
	Center float64 `json:"center"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	// Missing lists why values are unusable, one line per run.
	Missing []string `json:"missing,omitempty"`
}

// Spread returns the largest relative distance of Min or Max from
// Center (benchstat's "± x%"), NaN when unknown.
func (a ArmStats) Spread() float64 {
	if a.N == 0 || a.Center == 0 {
		return math.NaN()
	}
	return math.Max(a.Max/a.Center-1, 1-a.Min/a.Center)
}

// Comparison compares one metric between the arms.
type Comparison struct {
	Metric FactID `json:"metric"`
	// Role is "expect", "guard", "falsifier" (named only by a
	// falsification condition) or "report".
	Role string `json:"role"`
	// Unit is the metric's unit (see FactInfo.Unit).
	Unit Unit `json:"unit,omitempty"`
	// Better is the direction in which the metric improves; empty when
	// neither is better by itself.
	Better Direction `json:"better,omitempty"`

	Baseline  ArmStats `json:"baseline"`
	Treatment ArmStats `json:"treatment"`

	// Change is the relative change of the centres,
	// Treatment.Center/Baseline.Center - 1 (±Inf from a zero baseline,
	// NaN when unknown).
	Change float64 `json:"change"`
	// RunChanges holds each treatment run's change against the baseline
	// centre, in run order.
	RunChanges []float64 `json:"run_changes"`
	// Up and Down count the treatment runs above and below the baseline
	// centre; Consistent is true when all usable treatment runs moved
	// the same way (or none moved).
	Up         int  `json:"up"`
	Down       int  `json:"down"`
	Consistent bool `json:"consistent"`
	// P is the two-sided Mann-Whitney U p-value of the arms' values
	// (golang.org/x/perf/benchmath.AssumeNothing); NaN when either arm
	// has fewer than two usable values. MinP is the smallest p the run
	// counts can attain at all.
	P    float64 `json:"p"`
	MinP float64 `json:"min_p"`
	// Notes are caveats about this comparison, such as "n=3 per arm
	// cannot reach p < 0.05".
	Notes []string `json:"notes,omitempty"`
}

// improvement returns the relative change in the better direction:
// positive is better. NaN when the direction is unknown.
func improvement(change float64, better Direction) float64 {
	switch better {
	case Lower:
		return -change
	case Higher:
		return change
	}
	return math.NaN()
}

// Judge judges a controlled experiment as benchstat judges benchmarks:
// per metric, the centre (median) and range of each arm, the relative
// change, whether every treatment run moved the same way, and a
// Mann-Whitney U p-value where the run count allows it.
//
// The verdict:
//
//   - Refused when the plan is invalid, an arm has fewer runs than the
//     plan asks (at least MinRuns), an expected metric has fewer than
//     that many usable runs in an arm (missing, or a quantile with fewer
//     than MinSamples observations), or a workload descriptor differs
//     between the arms by more than WorkloadTolerance.
//   - Reject when a falsification condition fires, a guard breaks (its
//     centre got worse by more than its tolerance), or an expected metric
//     moved the wrong way in every treatment run.
//   - Adopt when every expected metric held: every treatment run beats
//     every baseline run by at least MinEffect (max(t) <= (1-e)·min(b)
//     for "lower"), and, with SignificanceRuns or more runs in both arms,
//     also p < Alpha; and every automated falsifier and guard was
//     evaluated and did not fire. Manual falsifiers are listed for a
//     person to check.
//   - Inconclusive otherwise.
//
// Falsifiers: NoImprovement fires when the centre change falls short of
// the metric's expected MinEffect (zero when the metric is not in
// Expect); WorseThanGain fires when any Versus metric got worse, in
// relative terms, by more than Metric improved; Inconsistent fires when
// the treatment runs lie on both sides of the baseline centre. Runs are
// not paired: each treatment run is compared with the baseline arm's
// centre, and the separation test with every baseline run.
//
// Judge is pure; it does not modify its arguments.
func Judge(plan Plan, baseline, treatment []RunFacts, opts JudgeOptions) Judgement {
	opts = opts.withDefaults()
	j := Judgement{
		Plan: plan, Alpha: opts.Alpha,
		Baseline: runInfos(baseline), Treatment: runInfos(treatment),
		Reasons: []Reason{}, Workload: []WorkloadCheck{}, Metrics: []Comparison{}, Warnings: []string{},
	}
	refuse := func(kind string, metric FactID, format string, a ...any) {
		j.Reasons = append(j.Reasons, Reason{Kind: kind, Metric: metric, Outcome: outRefused, Text: fmt.Sprintf(format, a...)})
	}
	if err := plan.Validate(); err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			refuse("plan", "", "%s", line)
		}
	}
	need := max(plan.Runs, MinRuns)
	for _, arm := range []struct {
		name string
		runs []RunFacts
	}{{"baseline", baseline}, {"treatment", treatment}} {
		if len(arm.runs) < need {
			refuse("runs", "", "%s has %d runs, the plan needs >= %d", arm.name, len(arm.runs), need)
		}
	}

	j.Metrics = compareAll(plan, baseline, treatment, opts)
	byMetric := map[FactID]*Comparison{}
	for i := range j.Metrics {
		c := &j.Metrics[i]
		byMetric[c.Metric] = c
		if c.Role != "report" {
			j.Warnings = append(j.Warnings, missingWarnings(c)...)
		}
	}
	for _, e := range plan.Expect {
		c := byMetric[e.Metric]
		if c == nil {
			continue
		}
		if c.Baseline.N < need || c.Treatment.N < need {
			refuse("runs", e.Metric, "%s has %d baseline and %d treatment runs with a usable value, need >= %d in each arm",
				e.Metric, c.Baseline.N, c.Treatment.N, need)
		}
	}
	j.Workload = checkWorkload(baseline, treatment, opts)
	for _, w := range j.Workload {
		switch w.Outcome {
		case "differs":
			refuse("workload", FactID(w.Name), "the arms saw different workloads: %s", w.Text)
		case outUnknown:
			j.Warnings = append(j.Warnings, "workload: "+w.Text)
		}
	}
	if n := min(len(baseline), len(treatment)); n > 0 && n < opts.SignificanceRuns {
		j.Warnings = append(j.Warnings, fmt.Sprintf("with %d runs per arm the smallest attainable p is %.3f: no difference can reach p < %g; adopt rests on every treatment run beating every baseline run",
			n, minUTestP(n, n), opts.Alpha))
	}
	if len(j.Reasons) > 0 {
		j.Verdict = Refused
		return j
	}

	rejected, blocked := false, false
	add := func(r Reason) {
		j.Reasons = append(j.Reasons, r)
		switch r.Outcome {
		case outWrongWay, outFired, outBroke:
			rejected = true
		case outNotHeld, outUnknown:
			blocked = true
		}
	}
	useP := len(baseline) >= opts.SignificanceRuns && len(treatment) >= opts.SignificanceRuns
	for _, e := range plan.Expect {
		add(judgeExpectation(e, byMetric[e.Metric], useP, opts.Alpha))
	}
	for _, f := range plan.Falsification {
		add(judgeFalsifier(plan, f, byMetric))
	}
	for _, g := range plan.Guards {
		add(judgeGuard(g, byMetric[g.Metric]))
	}
	switch {
	case rejected:
		j.Verdict = Reject
	case blocked:
		j.Verdict = Inconclusive
	default:
		j.Verdict = Adopt
	}
	return j
}

func runInfos(runs []RunFacts) []RunInfo {
	out := make([]RunInfo, len(runs))
	for i, r := range runs {
		out[i] = RunInfo{Name: r.Name, Window: r.Window, DurationSeconds: r.Duration.Seconds()}
	}
	return out
}

// compareAll builds the comparisons: plan metrics first (expect, guard,
// falsifier), then the reported metrics present in some run.
func compareAll(plan Plan, baseline, treatment []RunFacts, opts JudgeOptions) []Comparison {
	type entry struct {
		id     FactID
		role   string
		better Direction
	}
	var order []entry
	seen := map[FactID]bool{}
	push := func(id FactID, role string, better Direction) {
		if id == "" || seen[id] {
			return
		}
		seen[id] = true
		if better == "" {
			info, _ := Info(id)
			better = info.Better
		}
		order = append(order, entry{id, role, better})
	}
	for _, e := range plan.Expect {
		push(e.Metric, "expect", e.Direction)
	}
	for _, g := range plan.Guards {
		push(g.Metric, "guard", g.Better)
	}
	for _, f := range plan.Falsification {
		push(f.Metric, "falsifier", "")
		for _, v := range f.Versus {
			push(v, "falsifier", "")
		}
	}
	present := func(id FactID) bool {
		for _, r := range slices.Concat(baseline, treatment) {
			if f, ok := r.Facts[id]; ok && f.Known() {
				return true
			}
		}
		return false
	}
	for _, id := range opts.Metrics {
		if !seen[id] && present(id) {
			push(id, "report", "")
		}
	}
	out := make([]Comparison, len(order))
	for i, e := range order {
		out[i] = compare(e.id, e.role, e.better, baseline, treatment, opts)
	}
	return out
}

// missingWarnings summarises why a metric's values are unusable: one
// line per reason, naming the runs.
func missingWarnings(c *Comparison) []string {
	var reasons []string
	runs := map[string][]string{}
	for _, m := range slices.Concat(c.Baseline.Missing, c.Treatment.Missing) {
		name, why, _ := strings.Cut(strings.TrimPrefix(m, "run "), ": ")
		if runs[why] == nil {
			reasons = append(reasons, why)
		}
		runs[why] = append(runs[why], name)
	}
	total := len(c.Baseline.Values) + len(c.Treatment.Values)
	out := make([]string, len(reasons))
	for i, why := range reasons {
		if len(runs[why]) == total {
			out[i] = fmt.Sprintf("%s: not usable in any run: %s", c.Metric, why)
		} else {
			word := "runs"
			if len(runs[why]) == 1 {
				word = "run"
			}
			out[i] = fmt.Sprintf("%s: not usable in %s %s: %s", c.Metric, word, strings.Join(runs[why], ", "), why)
		}
	}
	return out
}

// armStats collects one metric over the runs of one arm.
func armStats(id FactID, runs []RunFacts, minSamples float64) ArmStats {
	info, isKnown := Info(id)
	a := ArmStats{Values: make([]float64, len(runs)), Counts: make([]float64, len(runs))}
	var ok []float64
	for i, r := range runs {
		f, err := r.Facts.lookup(id)
		a.Values[i], a.Counts[i] = math.NaN(), f.Incident.Count
		switch {
		case err != nil:
			a.Missing = append(a.Missing, fmt.Sprintf("run %s: %v", r.Name, err))
		case math.IsInf(f.Incident.Value, 0):
			a.Missing = append(a.Missing, fmt.Sprintf("run %s: value %v", r.Name, f.Incident.Value))
		case isKnown && info.Kind == KindQuantile && !math.IsNaN(f.Incident.Count) && f.Incident.Count < minSamples:
			a.Missing = append(a.Missing, fmt.Sprintf("run %s: %s observations, need >= %s", r.Name, textfmt.Prose(f.Incident.Count), textfmt.Prose(minSamples)))
		default:
			a.Values[i] = f.Incident.Value
			ok = append(ok, f.Incident.Value)
		}
	}
	a.N = len(ok)
	a.Center, a.Min, a.Max = math.NaN(), math.NaN(), math.NaN()
	if a.N > 0 {
		slices.Sort(ok)
		a.Center = median(ok)
		a.Min, a.Max = ok[0], ok[len(ok)-1]
	}
	return a
}

// median of sorted values.
func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

func compare(id FactID, role string, better Direction, baseline, treatment []RunFacts, opts JudgeOptions) Comparison {
	info, _ := Info(id)
	c := Comparison{
		Metric: id, Role: role, Unit: info.Unit, Better: better,
		Baseline:  armStats(id, baseline, opts.MinSamples),
		Treatment: armStats(id, treatment, opts.MinSamples),
		P:         math.NaN(), MinP: math.NaN(),
	}
	c.Change = RelChange(c.Baseline.Center, c.Treatment.Center)
	c.RunChanges = make([]float64, len(c.Treatment.Values))
	for i, v := range c.Treatment.Values {
		c.RunChanges[i] = RelChange(c.Baseline.Center, v)
		switch {
		case math.IsNaN(c.RunChanges[i]):
		case v > c.Baseline.Center:
			c.Up++
		case v < c.Baseline.Center:
			c.Down++
		}
	}
	c.Consistent = c.Baseline.N > 0 && c.Treatment.N > 0 && (c.Up == 0 || c.Down == 0)
	nb, nt := c.Baseline.N, c.Treatment.N
	if nb >= 2 && nt >= 2 {
		c.MinP = minUTestP(nb, nt)
		c.P = uTest(c.Baseline.Values, c.Treatment.Values, opts.Alpha)
		if c.MinP >= opts.Alpha {
			if nb == nt {
				c.Notes = append(c.Notes, fmt.Sprintf("n=%d per arm cannot reach p < %g (smallest attainable p = %.3f)", nb, opts.Alpha, c.MinP))
			} else {
				c.Notes = append(c.Notes, fmt.Sprintf("n=%d+%d cannot reach p < %g (smallest attainable p = %.3f)", nb, nt, opts.Alpha, c.MinP))
			}
		}
	}
	return c
}

// uTest returns the two-sided Mann-Whitney U p-value of the usable values,
// as benchstat computes it (benchmath.AssumeNothing).
func uTest(xs, ys []float64, alpha float64) float64 {
	th := benchmath.Thresholds{CompareAlpha: alpha}
	usable := func(vs []float64) []float64 {
		var out []float64
		for _, v := range vs {
			if !math.IsNaN(v) {
				out = append(out, v)
			}
		}
		return out // a fresh slice: NewSample sorts in place
	}
	cmp := benchmath.AssumeNothing.Compare(benchmath.NewSample(usable(xs), &th), benchmath.NewSample(usable(ys), &th))
	return cmp.P
}

// minUTestP is the smallest two-sided p-value the exact Mann-Whitney U
// test can give with samples of n1 and n2 values and no ties: both tails
// of the most extreme arrangement, 2/C(n1+n2, n1), at most 1.
func minUTestP(n1, n2 int) float64 {
	// C(n1+n2, n1) computed in floating point; exact for the run counts
	// of experiments.
	c := 1.0
	for i := 1; i <= n1; i++ {
		c = c * float64(n2+i) / float64(i)
	}
	return math.Min(1, 2/c)
}

// separated reports whether every treatment value beats every baseline
// value by at least the relative effect e in direction d.
func separated(c *Comparison, d Direction, e float64) bool {
	if c.Baseline.N == 0 || c.Treatment.N == 0 {
		return false
	}
	switch d {
	case Lower:
		return c.Treatment.Max <= (1-e)*c.Baseline.Min
	case Higher:
		return c.Treatment.Min >= (1+e)*c.Baseline.Max
	}
	return false
}

func judgeExpectation(e Expectation, c *Comparison, useP bool, alpha float64) Reason {
	r := Reason{Kind: "expect", Metric: e.Metric}
	head := fmt.Sprintf("%s %s by >= %s", e.Metric, e.Direction, pct(e.MinEffect))
	if c == nil || math.IsNaN(c.Change) {
		r.Outcome, r.Text = outUnknown, head+": cannot be evaluated"
		return r
	}
	gain := improvement(c.Change, e.Direction)
	sep := separated(c, e.Direction, e.MinEffect)
	pText := fmtP(c, alpha)
	switch {
	case gain < 0 && c.Consistent:
		r.Outcome = outWrongWay
		r.Text = fmt.Sprintf("%s: went the wrong way, %s in every treatment run", head, fmtChange(c.Change))
	case sep && (!useP || c.P < alpha):
		r.Outcome = outHeld
		r.Text = fmt.Sprintf("%s: held, %s; every treatment run beat every baseline run by >= %s (%s)", head, fmtChange(c.Change), pct(e.MinEffect), pText)
	case sep:
		r.Outcome = outNotHeld
		r.Text = fmt.Sprintf("%s: %s and the runs separate, but not significant (%s, need p < %g)", head, fmtChange(c.Change), pText, alpha)
	case !c.Consistent:
		r.Outcome = outNotHeld
		r.Text = fmt.Sprintf("%s: %s, directions inconsistent across repeats (%d up, %d down)", head, fmtChange(c.Change), c.Up, c.Down)
	default:
		r.Outcome = outNotHeld
		r.Text = fmt.Sprintf("%s: %s, but not every treatment run beat every baseline run by >= %s (%s)", head, fmtChange(c.Change), pct(e.MinEffect), pText)
	}
	return r
}

func judgeFalsifier(plan Plan, f Falsifier, by map[FactID]*Comparison) Reason {
	r := Reason{Kind: "falsifier", Metric: f.Metric}
	text := f.Text
	if text == "" {
		text = fmt.Sprintf("%s on %s", f.Kind, f.Metric)
	}
	c := by[f.Metric]
	unknown := func(why string) Reason {
		r.Outcome, r.Text = outUnknown, fmt.Sprintf("%s: cannot be evaluated: %s", text, why)
		return r
	}
	switch f.Kind {
	case Manual:
		r.Outcome, r.Text = outManual, text+" (to be judged by a person)"
		return r
	case NoImprovement:
		if c == nil || math.IsNaN(c.Change) {
			return unknown("no value of " + string(f.Metric))
		}
		dir, eff := c.Better, 0.0
		for _, e := range plan.Expect {
			if e.Metric == f.Metric {
				dir, eff = e.Direction, e.MinEffect
			}
		}
		gain := improvement(c.Change, dir)
		if math.IsNaN(gain) {
			return unknown("no better direction for " + string(f.Metric))
		}
		if gain < eff {
			r.Outcome = outFired
			r.Text = fmt.Sprintf("%s: %s %s, short of %s %s", text, f.Metric, fmtChange(c.Change), pct(eff), dir)
		} else {
			r.Outcome = outNotFired
			r.Text = fmt.Sprintf("%s: no, %s %s", text, f.Metric, fmtChange(c.Change))
		}
		return r
	case Inconsistent:
		if c == nil || c.Treatment.N == 0 || c.Baseline.N == 0 {
			return unknown("no value of " + string(f.Metric))
		}
		if c.Consistent {
			r.Outcome = outNotFired
			r.Text = fmt.Sprintf("%s: no, %s moved the same way in all %d treatment runs", text, f.Metric, c.Treatment.N)
		} else {
			r.Outcome = outFired
			r.Text = fmt.Sprintf("%s: directions inconsistent across repeats, %s up in %d and down in %d treatment runs against the baseline median", text, f.Metric, c.Up, c.Down)
		}
		return r
	case WorseThanGain:
		if c == nil || math.IsNaN(c.Change) {
			return unknown("no value of " + string(f.Metric))
		}
		gain := improvement(c.Change, c.Better)
		if math.IsNaN(gain) {
			return unknown("no better direction for " + string(f.Metric))
		}
		var worse []string
		var unk []string
		for _, v := range f.Versus {
			cv := by[v]
			if cv == nil || math.IsNaN(cv.Change) {
				unk = append(unk, string(v))
				continue
			}
			loss := -improvement(cv.Change, cv.Better)
			if math.IsNaN(loss) {
				unk = append(unk, string(v))
				continue
			}
			if loss > 0 && loss > gain {
				worse = append(worse, fmt.Sprintf("%s %s", v, fmtChange(cv.Change)))
			}
		}
		switch {
		case len(worse) > 0:
			r.Outcome = outFired
			r.Text = fmt.Sprintf("%s: %s got worse by more than %s improved (%s)", text, strings.Join(worse, ", "), f.Metric, fmtChange(c.Change))
		case len(unk) > 0:
			return unknown("no value of " + strings.Join(unk, ", "))
		default:
			r.Outcome = outNotFired
			r.Text = fmt.Sprintf("%s: no, %s %s outweighs the changes of %s", text, f.Metric, fmtChange(c.Change), joinIDs(f.Versus))
		}
		return r
	}
	return unknown("unknown kind " + string(f.Kind))
}

func judgeGuard(g Guard, c *Comparison) Reason {
	r := Reason{Kind: "guard", Metric: g.Metric}
	head := fmt.Sprintf("guard %s (%s is better, tolerance %s)", g.Metric, g.Better, pct(g.Tolerance))
	switch {
	case c == nil || c.Baseline.N+c.Treatment.N == 0:
		// Not in the evidence at all (vLLM V1 counts no errors apart):
		// reported, not read as zero, and not held against adoption.
		r.Outcome, r.Text = outSkipped, head+": skipped, not in the evidence of any run"
		return r
	case math.IsNaN(c.Change):
		r.Outcome, r.Text = outUnknown, head+": cannot be evaluated"
		return r
	}
	loss := -improvement(c.Change, g.Better)
	if loss > g.Tolerance {
		r.Outcome = outBroke
		r.Text = fmt.Sprintf("%s: broke, %s", head, fmtChange(c.Change))
	} else {
		r.Outcome = outOK
		r.Text = fmt.Sprintf("%s: ok, %s", head, fmtChange(c.Change))
	}
	return r
}

// checkWorkload compares the arms' medians of each workload descriptor.
func checkWorkload(baseline, treatment []RunFacts, opts JudgeOptions) []WorkloadCheck {
	var out []WorkloadCheck
	medianOf := func(runs []RunFacts, get func(RunFacts) float64) (float64, int) {
		var vs []float64
		for _, r := range runs {
			if v := get(r); !math.IsNaN(v) {
				vs = append(vs, v)
			}
		}
		if len(vs) == 0 {
			return math.NaN(), 0
		}
		slices.Sort(vs)
		return median(vs), len(vs)
	}
	check := func(name string, get func(RunFacts) float64, fmtV func(float64) string) {
		b, nb := medianOf(baseline, get)
		t, nt := medianOf(treatment, get)
		w := WorkloadCheck{Name: name, Baseline: b, Treatment: t, Change: RelChange(b, t), Tolerance: opts.WorkloadTolerance}
		switch {
		case nb < len(baseline) || nt < len(treatment):
			w.Outcome = outUnknown
			w.Text = fmt.Sprintf("%s known in %d of %d baseline and %d of %d treatment runs", name, nb, len(baseline), nt, len(treatment))
		case math.Abs(w.Change) > opts.WorkloadTolerance:
			w.Outcome = "differs"
			w.Text = fmt.Sprintf("%s %s vs %s (%s, tolerance %s)", name, fmtV(b), fmtV(t), fmtChange(w.Change), pct(opts.WorkloadTolerance))
		default:
			w.Outcome = "same"
			w.Text = fmt.Sprintf("%s %s vs %s (%s)", name, fmtV(b), fmtV(t), fmtChange(w.Change))
		}
		if len(baseline) == 0 || len(treatment) == 0 {
			return
		}
		out = append(out, w)
	}
	factOf := func(id FactID) func(RunFacts) float64 {
		return func(r RunFacts) float64 {
			f, err := r.Facts.lookup(id)
			if err != nil {
				return math.NaN()
			}
			return f.Incident.Value
		}
	}
	for _, id := range WorkloadMetrics() {
		check(string(id), factOf(id), func(v float64) string { return fmtValue(id, v) })
	}
	known := func(runs []RunFacts) bool {
		for _, r := range runs {
			if r.Duration <= 0 {
				return false
			}
		}
		return true
	}
	if known(baseline) && known(treatment) {
		arrivals := factOf(ArrivalRate)
		check("requests", func(r RunFacts) float64 { return arrivals(r) * r.Duration.Seconds() }, fmtNum)
		check("duration", func(r RunFacts) float64 { return r.Duration.Seconds() },
			func(v float64) string { return time.Duration(v * float64(time.Second)).String() })
	}
	return out
}

// fmtChange formats a relative change as a signed percentage.
func fmtChange(c float64) string {
	switch {
	case math.IsNaN(c):
		return textfmt.Number(c)
	case math.IsInf(c, 1):
		return "up from 0"
	case math.IsInf(c, -1):
		return "down from 0"
	}
	return fmt.Sprintf("%+.1f%%", 100*c)
}

// fmtP formats a comparison's p-value with its run counts.
func fmtP(c *Comparison, alpha float64) string {
	if math.IsNaN(c.P) {
		return fmt.Sprintf("n=%d+%d, no p-value", c.Baseline.N, c.Treatment.N)
	}
	s := fmt.Sprintf("p=%.3f n=%d+%d", c.P, c.Baseline.N, c.Treatment.N)
	if c.MinP >= alpha {
		s += fmt.Sprintf(", cannot reach p < %g", alpha)
	}
	return s
}

func joinIDs(ids []FactID) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = string(id)
	}
	return strings.Join(s, ", ")
}
