// Package matrix is the generalisation matrix: every incident
// hypothesis and counter-case of fleetsim's matrix, at several fleet
// sizes, seeds and severities, simulated, read by snapshot in memory (from
// a temporary TSDB for the cases marked fleetsim.MatrixCase.TSDB) and
// diagnosed with default options exactly as `whyslow diagnose DIR` does,
// with the verdict compared to the ground truth.
//
// Run it with
//
//	go test ./internal/matrix -run TestMatrix -v -count=1
//	go test ./internal/matrix -run TestMatrix -v -count=1 -matrix.only=kv-preemption/16
//	go test ./internal/matrix -run TestMatrix -v -count=1 -short   # one seed per cell
//
// or from a program (inside the module, since the package is internal):
//
//	cells := matrix.Filter(matrix.Cells(true), "kv-preemption,replica-hotspot")
//	results := matrix.Run(cells, runtime.GOMAXPROCS(0))
//	fmt.Print(matrix.Summary(results))
//	if len(matrix.Failures(results)) > 0 { os.Exit(1) }
//
// The pass rule (Result.OK): no cell may name a wrong cause; moderate and
// severe incidents and every counter-case must be right; a mild incident
// may be undetermined. Severity is the ground truth of fleetsim's knob
// table (fleetsim.MatrixKnob, checked by fleetsim's TestSeverityTable),
// never what the report says.
//
// AxisCells adds the axes of axes.go: every case scraped every
// 5 and 60 s, on 2 and 32 pods, and with an incident that starts away
// from the middle and ends after 10-15 minutes; those cells are graded by
// their own ground truth (Result.Grade). A cell whose scrapes cannot show
// its cause (a burst a minute under scrapes a minute apart) passes when it
// names no wrong cause. TestMatrix runs a seeded sample of them beside the
// matrix, -matrix.axes=all every one.
package matrix

import (
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/diagnose"
	"github.com/whyslow/whyslow/internal/fleetsim"
	"github.com/whyslow/whyslow/rules"
)

// Cell is one fleet of the matrix.
type Cell struct {
	// Case is the fleetsim matrix case (fleetsim.MatrixCases).
	Case string
	// Expect is the verdict the cell must produce; Also, when set, a
	// second verdict its simulated physics calls for as rightly (see
	// physicsExpect).
	Expect, Also string
	Pods         int
	Seed         uint64
	// Severity is "mild", "moderate" or "severe" for incidents, empty for
	// counter-cases.
	Severity string
	// Knob is the case's severity knob (fleetsim.MatrixKnob).
	Knob float64
	// Axis names the axis of an axis cell (AxisCells), empty for the
	// matrix' own cells; Variant is how it observes and times the fleet.
	Axis    string
	Variant fleetsim.Variant
	// Unresolvable marks a cell whose scrapes cannot show its cause: it
	// passes when it names no wrong cause.
	Unresolvable bool
}

// Name is "case/pods/severity/seed", e.g. "kv-preemption/16/moderate/1001"
// (counter-cases: "healthy/8/-/1001"), followed for an axis cell by its
// axis ("/scrape-60s", "/off-centre-12m0s-24m30s"); -matrix.only matches
// substrings of it.
func (c Cell) Name() string {
	sev := c.Severity
	if sev == "" {
		sev = "-"
	}
	return fmt.Sprintf("%s/%d/%s/%d%s", c.Case, c.Pods, sev, c.Seed, c.axisName())
}

// Incident reports whether the cell is an incident (not a counter-case).
func (c Cell) Incident() bool { return c.Severity != "" }

// Cells returns the matrix: every case at every fleet size and severity
// of fleetsim's table, for every seed (full) or the first seed only.
// Cells missing from the knob table are left out (TestSeverityTable
// reports them).
func Cells(full bool) []Cell {
	seeds := fleetsim.MatrixSeeds
	if !full {
		seeds = seeds[:1]
	}
	var out []Cell
	for _, c := range fleetsim.MatrixCases() {
		for _, n := range fleetsim.MatrixSizes {
			sevs := []string{""}
			if c.Incident() {
				sevs = fleetsim.Severities
			}
			for _, sev := range sevs {
				k := 0.0
				if sev != "" {
					var ok bool
					if k, ok = fleetsim.MatrixKnob(c.Name, n, sev); !ok {
						continue
					}
				}
				for _, s := range seeds {
					out = append(out, Cell{Case: c.Name, Expect: c.Expect, Pods: n, Seed: s, Severity: sev, Knob: k})
				}
			}
		}
	}
	return out
}

// Filter keeps the cells whose Name contains any of the comma-separated
// substrings of only (all cells when only is empty).
func Filter(cells []Cell, only string) []Cell {
	if only == "" {
		return cells
	}
	var out []Cell
	for _, c := range cells {
		for _, s := range strings.Split(only, ",") {
			if s = strings.TrimSpace(s); s != "" && strings.Contains(c.Name(), s) {
				out = append(out, c)
				break
			}
		}
	}
	return out
}

// Hypothesis is one ranked finding of a report, as the matrix prints it.
type Hypothesis struct {
	ID     string
	Status string
	Score  float64
	// Confidence is the finding's "confidence" field when the report
	// has one (read from its JSON form, so that the matrix keeps working
	// while the schema grows), else empty.
	Confidence string
}

func (h Hypothesis) String() string {
	s := fmt.Sprintf("%s %s %.2f", h.ID, h.Status, h.Score)
	if h.Confidence != "" {
		s += " " + h.Confidence
	}
	return s
}

// Outcome classifies a verdict against the expectation.
type Outcome string

const (
	// Right: the verdict is the expected hypothesis (or no-incident).
	Right Outcome = "right"
	// WrongCause: the verdict names a hypothesis other than the
	// expected one (for a counter-case: any hypothesis).
	WrongCause Outcome = "wrong-cause"
	// Undetermined: the verdict is "undetermined".
	Undetermined Outcome = "undetermined"
	// Missed: an incident cell diagnosed as "no-incident".
	Missed Outcome = "missed"
	// Failed: the cell could not be simulated or diagnosed.
	Failed Outcome = "error"
)

// Result is the diagnosis of one cell.
type Result struct {
	Cell
	Verdict string
	Outcome Outcome
	// Confidence is the report's or the verdict finding's "confidence"
	// when the report has one.
	Confidence string
	// Top holds the first three ranked hypotheses.
	Top []Hypothesis
	// Summary is the report's one-sentence summary.
	Summary string
	// Truth is the ground-truth change of the case's primary symptom.
	Truth fleetsim.Change
	// Grade is the severity the pass rule holds the cell to: its
	// Severity, but for an axis incident or a case graded by its truth
	// (fleetsim.MatrixCase.GradedByTruth) the grade of its own Truth
	// ("mild" below +40%).
	Grade string
	// ExpectWhy says why Expect is not the case's own when the simulated
	// physics did something else (see physicsExpect).
	ExpectWhy string
	Err       error
	Elapsed   time.Duration
}

// OK reports whether the result passes the matrix' rule: no wrong cause
// ever; moderate and severe incidents and counter-cases right; mild
// incidents right, undetermined or missed.
//
// A mild incident (ground truth +20-40%) may be missed: vLLM's coarse
// buckets (TTFT 100-250 ms in one bucket) can show a +30% p95 as +7%, and
// a change the exported metrics show below the practical minimum
// (Thresholds.Rise) is by design no incident. What a mild cell may never
// do is name a wrong cause.
//
// An unresolvable cell (Cell.Unresolvable) passes whatever it says but a
// wrong cause.
func (r Result) OK() bool {
	switch r.Outcome {
	case Right:
		return true
	case Undetermined, Missed:
		g := r.Grade
		if g == "" {
			g = r.Severity
		}
		return g == "mild" || r.Unresolvable
	}
	return false
}

// Options returns the diagnose options `whyslow diagnose DIR` passes when
// given no flag: the default catalog (no --alias) and the default
// thresholds (no --thresholds), automatic windows, no SLO.
func Options() diagnose.Options {
	cat := catalog.Default()
	return diagnose.Options{Catalog: &cat, Thresholds: rules.DefaultThresholds}
}

// RunCell simulates, reads and diagnoses one cell.
func RunCell(c Cell) Result {
	t0 := time.Now()
	r := Result{Cell: c}
	defer func() { r.Elapsed = time.Since(t0) }()
	mc, ok := fleetsim.LookupMatrixCase(c.Case)
	if !ok {
		r.Outcome, r.Err = Failed, fmt.Errorf("unknown matrix case %q", c.Case)
		return r
	}
	f, err := fleetsim.Run(mc.VariantConfig(c.Pods, c.Seed, c.Knob, c.Variant))
	if err != nil {
		r.Outcome, r.Err = Failed, err
		return r
	}
	start, end := c.Variant.Span()
	r.Truth = f.GroundTruthSpan(mc.Symptom, start, end)
	if expect, also, why := physicsExpect(c, f, start, end); expect != "" {
		r.Expect, r.Also, r.ExpectWhy = expect, also, why
	}
	r.Grade = grade(c, r.Truth)
	ev := Evidence(f)
	if mc.TSDB {
		if ev, err = TSDBEvidence(f); err != nil {
			r.Outcome, r.Err = Failed, err
			return r
		}
	}
	rep, err := diagnose.Diagnose(ev, Options())
	if err != nil {
		r.Outcome, r.Err = Failed, err
		return r
	}
	r.Verdict, r.Summary = string(rep.Verdict), rep.Summary
	for i, h := range rep.Hypotheses {
		if i == 3 {
			break
		}
		r.Top = append(r.Top, Hypothesis{ID: string(h.ID), Status: string(h.Status), Score: h.Score, Confidence: confidence(h)})
	}
	r.Confidence = confidence(rep)
	if i := slices.IndexFunc(rep.Hypotheses, func(h rules.Finding) bool { return string(h.ID) == r.Verdict }); r.Confidence == "" && i >= 0 {
		r.Confidence = confidence(rep.Hypotheses[i])
	}
	r.Outcome = classify(r.Cell, r.Verdict)
	return r
}

// physicsExpect returns the verdict a cell's simulated physics calls for
// when it is not its case's, from the engines' true counters over the
// incident span, as vLLM counts preemptions (over finished requests: the
// map's PreemptionShare), and from the requests they fell on:
//
//   - a kv-preemption or preemption-thrash cell (a small KV pool, prompts
//     longer by the knob) preempted fewer times than
//     rules.DefaultThresholds.PreemptionShare per finished request never
//     ran short of KV blocks for long: its incident is the longer
//     prompts' prefill cost (prefill-long-prompts). When the preemptions
//     of some diagnose.DefaultMinWindow of the span (the shortest
//     incident a diagnosis isolates) were material all the same, the
//     case's own verdict is right too (also): the physics lies on both
//     sides of the map's line, by the window;
//   - a preemption-thrash cell whose requests preempted twice or more
//     carry less than rules.DefaultThresholds.Explains of its
//     preemptions spread them over many requests, about once each: that
//     is the pool short for everyone (kv-preemption), not a thrash.
//
// expect "" keeps the case's.
func physicsExpect(c Cell, f *fleetsim.Fleet, start, end time.Duration) (expect, also, why string) {
	thrash := c.Case == string(rules.PreemptionThrash)
	if (c.Case != string(rules.KVPreemption) && !thrash) || !c.Incident() {
		return "", "", ""
	}
	preemptions, done := enginePreemptions(f, start, end)
	if done == 0 {
		return "", "", ""
	}
	th := rules.DefaultThresholds
	share := preemptions / done
	if share < th.PreemptionShare {
		why = fmt.Sprintf("the simulation preempted %.0f times for %.0f finished requests (%.2f%%, under %g%%): the KV cache never ran short for long, the longer prompts' prefill is the incident",
			preemptions, done, 100*share, 100*th.PreemptionShare)
		for a := start; a+diagnose.DefaultMinWindow <= end; a += time.Minute {
			p, d := enginePreemptions(f, a, a+diagnose.DefaultMinWindow)
			if d > 0 && p/d >= th.PreemptionShare {
				also = c.Case
				why += fmt.Sprintf("; from %v to %v it preempted %.0f times for %.0f (%.2f%%): %s is right too", a, a+diagnose.DefaultMinWindow, p, d, 100*p/d, c.Case)
				break
			}
		}
		return string(rules.PrefillLongPrompts), also, why
	}
	// Which requests the preemptions fell on: every request in the
	// engines during the span, those the run ended on included (a
	// thrashing request may never finish).
	all, repeated := 0, 0
	for _, q := range f.Requests {
		if q.Arrival >= end || (q.Finished != fleetsim.NaNDuration && q.Finished < start) {
			continue
		}
		all += q.Preemptions
		if q.Preemptions >= 2 {
			repeated += q.Preemptions
		}
	}
	if rs := float64(repeated) / float64(max(all, 1)); thrash && rs < th.Explains {
		return string(rules.KVPreemption), "", fmt.Sprintf("requests preempted twice or more carry %.0f%% of the %d preemptions of the requests in the engines (under %g%%): they are spread over many requests, the pool is short for everyone",
			100*rs, all, 100*th.Explains)
	}
	return "", "", ""
}

// enginePreemptions returns the preemptions and the finished requests
// that the engines counted (their true counters, as vllm:num_preemptions
// and vllm:request_success count them) between the first scrape at or
// after start and the last at or before end of each pod; a pod that
// restarted in between counts from its last process's first scrape.
func enginePreemptions(f *fleetsim.Fleet, start, end time.Duration) (preemptions, finished float64) {
	for _, p := range f.Pods {
		var first, last *fleetsim.Scrape
		for _, sc := range p.Scrapes {
			if sc.Offset < start || sc.Offset > end {
				continue
			}
			if first == nil || !first.ProcessStart().Equal(sc.ProcessStart()) {
				first = sc
			}
			last = sc
		}
		if first == nil {
			continue
		}
		for i := range min(len(first.Engines), len(last.Engines)) {
			a, b := first.Engines[i], last.Engines[i]
			preemptions += b.Preemptions - a.Preemptions
			finished += b.Finished - a.Finished
		}
	}
	return preemptions, finished
}

// grade is the severity the pass rule holds c to: its Severity, or for an
// axis incident or a case graded by its truth the grade of its ground
// truth, "mild" below +40%.
func grade(c Cell, truth fleetsim.Change) string {
	mc, _ := fleetsim.LookupMatrixCase(c.Case)
	if !c.Incident() || (c.Axis == "" && !mc.GradedByTruth) {
		return c.Severity
	}
	if g := fleetsim.Severity(truth.Ratio()); g == "moderate" || g == "severe" {
		return g
	}
	return "mild"
}

// classify compares a verdict with the cell's expectation.
func classify(c Cell, verdict string) Outcome {
	switch {
	case verdict == c.Expect || (c.Also != "" && verdict == c.Also):
		return Right
	case verdict == string(rules.Undetermined):
		return Undetermined
	case verdict == string(rules.NoIncident):
		return Missed
	}
	return WrongCause
}

// confidence returns the "confidence" member of v's JSON form, if any (a
// string, or an object with a "level" or "grade" string).
func confidence(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return ""
	}
	raw, ok := m["confidence"]
	if !ok {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o map[string]any
	if json.Unmarshal(raw, &o) == nil {
		for _, k := range []string{"level", "grade", "value"} {
			if s, ok := o[k].(string); ok {
				return s
			}
		}
	}
	return strings.TrimSpace(string(raw))
}

// RunEach runs the cells on workers goroutines (GOMAXPROCS when <= 0),
// the largest fleets first, calling done, if not nil, with each result as
// soon as its cell finishes (from one goroutine at a time), and returns
// the results in the order of cells.
func RunEach(cells []Cell, workers int, done func(Result)) []Result {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	order := make([]int, len(cells))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cells[b].Pods - cells[a].Pods })
	out := make([]Result, len(cells))
	next := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for range workers {
		wg.Go(func() {
			for i := range next {
				out[i] = RunCell(cells[i])
				if done != nil {
					mu.Lock()
					done(out[i])
					mu.Unlock()
				}
			}
		})
	}
	for _, i := range order {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}
