package diagnose

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/report"
	"github.com/whyslow/whyslow/rules"
	"github.com/whyslow/whyslow/snapshot"
)

// DefaultWarmUp is the warm-up excluded from the start of every
// experiment run when neither ExperimentOptions.WarmUp nor the plan's
// WarmUp says otherwise: five minutes, the article's suggestion.
const DefaultWarmUp = 5 * time.Minute

// Run is one run (repeat) of one arm of an experiment: evidence over its
// own window.
type Run struct {
	// Name identifies the run in reports, e.g. its path.
	Name string
	// Evidence holds the run's scrapes; it may hold more than the run
	// (a long dump series, a TSDB), in which case Window selects it.
	Evidence *snapshot.Evidence
	// Window is the run's time range before warm-up is excluded; the
	// zero Window means from the first to the last scrape of Evidence.
	Window snapshot.Window
}

// ExperimentOptions control JudgeExperiment. The zero value is usable.
type ExperimentOptions struct {
	// WarmUp is excluded from the start of every run: zero means the
	// plan's WarmUp, or DefaultWarmUp when the plan has none; a negative
	// value excludes nothing.
	WarmUp time.Duration
	// Catalog maps signals to metric names; nil means catalog.Default().
	Catalog *catalog.Catalog
	// Model, when not empty, keeps only that model_name; evidence that
	// serves several models needs it.
	Model string
	// Judge tunes the verdict; the zero value means
	// rules.DefaultJudgeOptions.
	Judge rules.JudgeOptions
}

// ExperimentReport is the outcome of JudgeExperiment: the judgement of
// package rules (verdict, reasons, workload checks, per-metric
// comparison) and what the evidence shows of the configuration.
type ExperimentReport struct {
	rules.Judgement
	// WarmUpSeconds is the warm-up excluded from every run.
	WarmUpSeconds float64 `json:"warm_up_seconds"`
	// Configuration compares the configuration the info metrics show.
	Configuration ConfigCheck `json:"configuration"`
}

// ConfigCheck compares the configuration visible in info metrics (such as
// vllm:cache_config_info) between the arms.
type ConfigCheck struct {
	// Sources are the info metrics read.
	Sources []string `json:"sources"`
	// Variable is the plan's variable; Visible says whether an info
	// metric shows it.
	Variable string `json:"variable"`
	Visible  bool   `json:"visible"`
	// Differences lists the labels whose values differ between the arms.
	Differences []ConfigDiff `json:"differences"`
	// Text says in one sentence what was found.
	Text string `json:"text"`
}

// ConfigDiff is one configuration label whose values differ between the
// arms.
type ConfigDiff struct {
	Name      string   `json:"name"`
	Baseline  []string `json:"baseline"`
	Treatment []string `json:"treatment"`
	// DerivedFrom, when not empty, names the settings this value is
	// computed from at start-up (num_gpu_blocks from
	// gpu_memory_utilization and memory profiling): it does not count as
	// a second variable.
	DerivedFrom string `json:"derived_from,omitempty"`
}

// derivedConfig lists configuration labels that vLLM computes at
// start-up from other settings; a change in them follows from another
// change and does not count as a second variable.
var derivedConfig = map[string]string{
	"num_gpu_blocks":   "gpu_memory_utilization, kv_cache_memory_bytes, block_size, max_num_seqs and memory profiling",
	"num_cpu_blocks":   "swap_space and cpu_offload_gb",
	"swap_space_bytes": "swap_space",
}

// identityLabels name the series rather than configure the engine.
var identityLabels = map[string]bool{
	"engine": true, "model_name": true, "instance": true, "job": true, "pod": true, "namespace": true,
	"container": true, "service": true, "endpoint": true, "node": true, "hostname": true, "Hostname": true,
}

// JudgeExperiment judges a controlled experiment from the evidence of
// its runs. For every run it excludes the warm-up from the start of the
// run's window, computes the facts of the remaining window as Diagnose
// does (fleet quantiles from merged buckets, counter increases with
// resets handled) and gives them, with the plan, to rules.Judge. It
// checks the workloads through the judge (arrival rate, request count,
// prompt and output length p50/p95) and compares the configuration the
// info metrics show: exactly one variable should differ, labels derived
// from another setting (num_gpu_blocks) not counting.
//
// Problems that keep the experiment from being judged (an invalid plan,
// too few runs, different workloads) give a report with verdict
// "refused"; JudgeExperiment returns an error only when a run's evidence
// cannot be read at all (no scrape in its window, several models without
// ExperimentOptions.Model). It is pure: it reads only its arguments.
func JudgeExperiment(plan rules.Plan, baseline, treatment []Run, opts ExperimentOptions) (*ExperimentReport, error) {
	warm := opts.WarmUp
	switch {
	case warm == 0 && plan.WarmUp > 0:
		warm = plan.WarmUp
	case warm == 0:
		warm = DefaultWarmUp
	case warm < 0:
		warm = 0
	}
	jopts := opts.Judge
	var warnings []string
	facts := func(arm string, runs []Run) ([]rules.RunFacts, error) {
		out := make([]rules.RunFacts, len(runs))
		for i, r := range runs {
			rf, warns, err := runFacts(r, warm, opts)
			if err != nil {
				return nil, fmt.Errorf("%s run %d (%s): %w", arm, i+1, r.Name, err)
			}
			out[i] = rf
			for _, w := range warns {
				warnings = append(warnings, fmt.Sprintf("%s run %s: %s", arm, r.Name, w))
			}
		}
		return out, nil
	}
	bf, err := facts("baseline", baseline)
	if err != nil {
		return nil, err
	}
	tf, err := facts("treatment", treatment)
	if err != nil {
		return nil, err
	}
	if jopts.MinSamples == 0 {
		jopts.MinSamples = rules.DefaultThresholds.MinSamples
	}
	rep := &ExperimentReport{Judgement: rules.Judge(plan, bf, tf, jopts), WarmUpSeconds: warm.Seconds()}
	rep.Configuration = checkConfig(plan, baseline, treatment, opts)
	cfgWarn := configWarnings(rep.Configuration)
	rep.Warnings = append(append(warnings, cfgWarn...), rep.Warnings...)
	return rep, nil
}

// runFacts computes the facts of one run after warm-up.
func runFacts(r Run, warm time.Duration, opts ExperimentOptions) (rules.RunFacts, []string, error) {
	if r.Evidence == nil || len(r.Evidence.Targets) == 0 {
		return rules.RunFacts{}, nil, errors.New("no evidence")
	}
	var warns []string
	w := r.Window
	var times []time.Time
	perTarget := 0
	for _, t := range r.Evidence.Targets {
		n := 0
		for _, s := range t.Scrapes {
			if !w.IsZero() && (s.Time.Before(w.Start) || s.Time.After(w.End)) {
				continue
			}
			times = append(times, s.Time)
			n++
		}
		perTarget = max(perTarget, n)
	}
	if len(times) == 0 {
		return rules.RunFacts{}, nil, fmt.Errorf("no scrape in window %v", w)
	}
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	if w.IsZero() {
		w = snapshot.Window{Start: times[0], End: times[len(times)-1]}
	}
	measured := w
	switch {
	case warm > 0 && perTarget <= 2:
		warns = append(warns, fmt.Sprintf("only %d scrapes per replica: the %v warm-up cannot be excluded; the whole run is measured", perTarget, warm))
	case warm > 0:
		measured.Start = w.Start.Add(warm)
		left := 0
		for _, t := range times {
			if !t.Before(measured.Start) && !t.After(measured.End) {
				left++
			}
		}
		if !measured.End.After(measured.Start) || left < 2 {
			return rules.RunFacts{}, nil, fmt.Errorf("the %v warm-up leaves no measurable window in %v", warm, w)
		}
	}
	if measured.End.Equal(measured.Start) {
		return rules.RunFacts{}, nil, fmt.Errorf("window %v is empty", measured)
	}
	// The facts of the run's window, measured as Diagnose measures them
	// (one path), without judging them: a run has no baseline of its own.
	set, _, groups, _, err := prepare(r.Evidence.JoinAddresses(), Options{Catalog: opts.Catalog, Model: opts.Model, Incident: measured})
	if err != nil {
		return rules.RunFacts{}, nil, err
	}
	if len(groups) > 1 {
		return rules.RunFacts{}, nil, fmt.Errorf("%w: set ExperimentOptions.Model", ErrSeveralModels)
	}
	m, err := newScope(set, groups[0].sel, groups[0].reps).measure()
	if err != nil {
		return rules.RunFacts{}, nil, err
	}
	fs := make(rules.Facts, len(m.facts))
	for id, f := range m.facts {
		fs[id] = rules.Fact{Incident: f.Incident, Baseline: rules.Unmeasured(), Source: f.Source, Missing: f.Missing}
	}
	return rules.RunFacts{Name: r.Name, Window: measured.String(), Duration: measured.Duration(), Facts: fs}, warns, nil
}

// armConfig collects, over the runs of one arm, the values of every
// configuration label of the info metrics.
func armConfig(runs []Run, cat catalog.Catalog, sources map[string]bool) map[string]map[string]bool {
	cfg := map[string]map[string]bool{}
	var infos []catalog.SignalID
	for _, s := range cat.Signals() {
		if s.Kind == catalog.KindInfo {
			infos = append(infos, s.ID)
		}
	}
	for _, r := range runs {
		if r.Evidence == nil {
			continue
		}
		res := cat.Resolve(r.Evidence)
		for _, tr := range res.Targets {
			for _, id := range infos {
				m, ok := tr.Match(id)
				if !ok || !m.Found() {
					continue
				}
				sources[m.Metric] = true
				for _, s := range m.Family.Series {
					s.Labels.Range(func(l labels.Label) {
						if identityLabels[l.Name] {
							return
						}
						if cfg[l.Name] == nil {
							cfg[l.Name] = map[string]bool{}
						}
						cfg[l.Name][l.Value] = true
					})
				}
			}
		}
	}
	return cfg
}

// checkConfig compares the arms' visible configuration.
func checkConfig(plan rules.Plan, baseline, treatment []Run, opts ExperimentOptions) ConfigCheck {
	cat := catalog.Default()
	if opts.Catalog != nil {
		cat = *opts.Catalog
	}
	sources := map[string]bool{}
	b := armConfig(baseline, cat, sources)
	t := armConfig(treatment, cat, sources)
	cc := ConfigCheck{Sources: slices.Sorted(maps.Keys(sources)), Variable: plan.Change.Name, Differences: []ConfigDiff{}}
	variable := configName(plan.Change.Name)
	names := map[string]bool{}
	for n := range b {
		names[n] = true
	}
	for n := range t {
		names[n] = true
	}
	for _, n := range slices.Sorted(maps.Keys(names)) {
		if configName(n) == variable {
			cc.Visible = true
		}
		bv, tv := slices.Sorted(maps.Keys(b[n])), slices.Sorted(maps.Keys(t[n]))
		if slices.Equal(bv, tv) {
			continue
		}
		cc.Differences = append(cc.Differences, ConfigDiff{Name: n, Baseline: bv, Treatment: tv, DerivedFrom: derivedConfig[n]})
	}
	var independent, derived []string
	for _, d := range cc.Differences {
		s := fmt.Sprintf("%s %s -> %s", d.Name, strings.Join(d.Baseline, ","), strings.Join(d.Treatment, ","))
		if d.DerivedFrom != "" {
			derived = append(derived, s)
		} else {
			independent = append(independent, s)
		}
	}
	var parts []string
	switch {
	case len(cc.Sources) == 0:
		parts = append(parts, "no info metric shows the configuration")
	case len(independent) == 0:
		parts = append(parts, fmt.Sprintf("%s shows the same configuration in both arms", strings.Join(cc.Sources, ", ")))
	default:
		parts = append(parts, fmt.Sprintf("%s differs: %s", strings.Join(cc.Sources, ", "), strings.Join(independent, "; ")))
	}
	if len(derived) > 0 {
		parts = append(parts, "derived, not counted: "+strings.Join(derived, "; "))
	}
	if !cc.Visible {
		parts = append(parts, fmt.Sprintf("%s is not visible in any info metric", plan.Change.Name))
	}
	cc.Text = strings.Join(parts, "; ")
	return cc
}

// configName normalises a setting name: "--max-num-seqs" and
// "max_num_seqs" are the same.
func configName(s string) string {
	return strings.ReplaceAll(strings.TrimLeft(strings.TrimSpace(s), "-"), "-", "_")
}

// configWarnings turns the configuration check into warnings: more than
// one variable changed, the plan's variable did not change, or a value
// differs within one arm.
func configWarnings(cc ConfigCheck) []string {
	var out []string
	var independent []string
	changed := false
	for _, d := range cc.Differences {
		if len(d.Baseline) > 1 || len(d.Treatment) > 1 {
			out = append(out, fmt.Sprintf("configuration: %s differs within an arm (baseline %s, treatment %s)",
				d.Name, strings.Join(d.Baseline, ","), strings.Join(d.Treatment, ",")))
		}
		if d.DerivedFrom != "" {
			continue
		}
		independent = append(independent, d.Name)
		if configName(d.Name) == configName(cc.Variable) {
			changed = true
		}
	}
	switch {
	case len(independent) > 1:
		out = append(out, fmt.Sprintf("configuration: %d variables differ between the arms (%s); the experiment should change one",
			len(independent), strings.Join(independent, ", ")))
	case len(independent) == 1 && cc.Visible && !changed:
		out = append(out, fmt.Sprintf("configuration: %s differs between the arms, not the plan's %s", independent[0], cc.Variable))
	}
	if cc.Visible && !changed {
		out = append(out, fmt.Sprintf("configuration: the plan changes %s but %s shows the same value in both arms",
			cc.Variable, strings.Join(cc.Sources, ", ")))
	}
	if !cc.Visible && len(cc.Sources) > 0 {
		out = append(out, fmt.Sprintf("configuration: %s is not visible in %s; the change cannot be confirmed from the evidence",
			cc.Variable, strings.Join(cc.Sources, ", ")))
	}
	return out
}

// Document lays out the report: the judgement (report.JudgementDocument)
// followed by the warm-up and the configuration check.
func (r ExperimentReport) Document() *report.Document {
	return report.JudgementDocument(r.Judgement,
		fmt.Sprintf("warm-up excluded: %v per run", time.Duration(r.WarmUpSeconds*float64(time.Second))),
		"configuration: "+r.Configuration.Text)
}

// String prints the report as text within 120 columns.
func (r ExperimentReport) String() string {
	var b strings.Builder
	_ = r.Document().WriteText(&b)
	return b.String()
}

// Markdown returns the report as Markdown.
func (r ExperimentReport) Markdown() string {
	var b strings.Builder
	_ = r.Document().WriteMarkdown(&b)
	return b.String()
}
