package diagnose

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/internal/textfmt"
	"github.com/whyslow/whyslow/report"
	"github.com/whyslow/whyslow/rules"
	"github.com/whyslow/whyslow/snapshot"
)

// Diagnose reads the signals of the evidence, judges the four symptoms,
// runs the decision map of package rules and returns the report. It is
// pure: it reads only ev (which it does not modify) and opts, and neither
// clock nor files.
//
// The steps:
//
//  1. Every target is resolved against the catalog: which metric carries
//     each signal, and which vLLM versions its names are consistent with.
//  2. The fleet is split by Options.By (by model_name when several models
//     are served: signals are never merged across models); each group is
//     diagnosed on its own and the report summarises the groups.
//  3. The timelines (per-interval TTFT, queue, prefill, TPOT and ITL p95,
//     waiting, running, KV usage, preemption rate, GPU utilisation) are
//     built on a grid of Options.TimelineStep, fleet-wide and per replica.
//  4. The windows are chosen (see chooseWindows in the package source and
//     report.WindowInfo.From): as given; by the change-point search; as halves;
//     or, for dumps taken once or twice, from lifetime counters.
//  5. The signals are measured over both windows: histogram increases
//     merged across replicas with histogram.Merge before any quantile is
//     taken (never an average of per-pod quantiles), counter increases
//     with resets handled, gauges summed (or, for KV usage and GPU
//     utilisation, averaged) across replicas at each scrape instant.
//  6. Every fact of rules.FactIDs is computed, or marked missing with the
//     reason; rules.Evaluate judges symptoms and hypotheses.
//
// Diagnose returns an error only when opts are invalid or ev holds no
// scrape of a selected target; everything else (missing signals, low
// counts, resets, version skew) becomes a warning or a missing fact.
func Diagnose(ev *snapshot.Evidence, opts Options) (*report.Report, error) {
	if opts.Survey != nil && ev != nil {
		ev = opts.Survey.complete(ev)
	}
	ev = ev.JoinAddresses()
	set, res, groups, by, err := prepare(ev, opts)
	if err != nil {
		return nil, err
	}
	common := commonWarnings(ev, res)

	if len(groups) == 1 {
		rep, err := diagnoseScope(newScope(set, groups[0].sel, groups[0].reps))
		if err != nil {
			return nil, err
		}
		// The inputs are written after the diagnosis: a note may count
		// what the diagnosis asked a source for (snapshot.Engine).
		inputs := makeInputs(ev, res)
		rep.Group = groups[0].sel
		rep.Inputs = inputs
		if groups[0].sel != nil {
			rep.Inputs = restrictInputs(inputs, groups[0].reps)
		}
		withCommon(rep, common)
		rep.Dimensions = dimensions(set, rep, by, nil)
		finishReport(rep, set, ev)
		return rep, nil
	}

	inputs := makeInputs(ev, res)
	top := &report.Report{SchemaVersion: report.SchemaVersion, Inputs: inputs, Facts: rules.Facts{},
		Signals: report.Signals{Fleet: []report.Signal{}, Replicas: map[string][]report.Signal{}}}
	var values []string
	for _, g := range groups {
		rep, err := diagnoseScope(newScope(set, g.sel, g.reps))
		if err != nil {
			return nil, err
		}
		rep.Group = g.sel
		rep.Inputs = restrictInputs(makeInputs(ev, res), g.reps)
		rep.Dimensions = dimensions(set, rep, by, nil)
		finishReport(rep, set, ev)
		top.Groups = append(top.Groups, rep)
		values = append(values, groupName(g.sel))
	}
	primary := top.Groups[0]
	for _, g := range top.Groups[1:] {
		if verdictRank(g.Verdict) < verdictRank(primary.Verdict) {
			primary = g
		}
	}
	top.Verdict = primary.Verdict
	top.Windows = primary.Windows
	parts := make([]string, len(top.Groups))
	for i, g := range top.Groups {
		parts[i] = fmt.Sprintf("%s: %s", groupName(g.Group), g.Verdict)
	}
	top.Summary = fmt.Sprintf("split by %s into %d groups (%s); the top-level verdict is that of %s",
		by, len(top.Groups), strings.Join(parts, "; "), groupName(primary.Group))
	withCommon(top, common)
	top.Dimensions = dimensions(set, top, by, values)
	top.Symptoms = groupSymptoms(top.Groups)
	top.Hypotheses = []rules.Finding{}
	for _, g := range top.Groups {
		top.Inputs.Partial = top.Inputs.Partial || g.Inputs.Partial
	}
	finishReport(top, set, ev)
	return top, nil
}

// groupSymptoms is the union of the groups' symptoms, each naming its
// group, in the order of the groups: the top level of a split report.
func groupSymptoms(groups []*report.Report) []rules.Symptom {
	out := []rules.Symptom{}
	for _, g := range groups {
		for _, s := range g.Symptoms {
			s.Group = g.Group
			out = append(out, s)
		}
	}
	return out
}

// verdictRank orders verdicts for the summary of split reports: a
// supported hypothesis first, then undetermined, then no incident.
func verdictRank(v rules.Verdict) int {
	switch v {
	case rules.NoIncident:
		return 2
	case rules.Undetermined:
		return 1
	}
	return 0
}

func groupName(sel map[string]string) string {
	if len(sel) == 0 {
		return "all"
	}
	keys := slices.Sorted(maps.Keys(sel))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%q", k, sel[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// group is one slice of the fleet.
type group struct {
	sel  map[string]string
	reps []replica
}

// splitGroups splits the replicas by the split label (and model_name),
// keeping only Options.Model when set. It returns the label used.
func splitGroups(set settings, reps []replica) ([]group, string, error) {
	base := map[string]string{}
	if set.Model != "" {
		base["model_name"] = set.Model
	}
	// label tuples seen on the catalog's families
	byLabels := []string{}
	if set.By != "" {
		byLabels = append(byLabels, set.By)
	}
	models := labelValues(reps, "model_name", base)
	if set.Model == "" && len(models) > 1 && set.By != "model_name" {
		byLabels = append(byLabels, "model_name")
	}
	by := strings.Join(byLabels, ", ")
	if len(byLabels) == 0 {
		sel := base
		if len(sel) == 0 {
			sel = nil
		}
		g := group{sel: sel, reps: servingReplicas(reps, sel)}
		if len(g.reps) == 0 {
			return nil, "", fmt.Errorf("diagnose: no target serves model %q (models seen: %s)", set.Model, strings.Join(labelValues(reps, "model_name", nil), ", "))
		}
		return []group{g}, "", nil
	}
	tuples := labelTuples(reps, byLabels, base)
	if len(tuples) == 0 {
		return nil, "", fmt.Errorf("diagnose: no series carries the split label %s", by)
	}
	var gs []group
	for _, tup := range tuples {
		sel := maps.Clone(base)
		maps.Copy(sel, tup)
		gs = append(gs, group{sel: sel, reps: servingReplicas(reps, sel)})
	}
	return gs, by, nil
}

// catalogFamilies calls f for every family the resolution matched on r.
func catalogFamilies(r replica, f func(*snapshot.Family)) {
	for _, m := range r.res.Matches {
		if m.Found() {
			f(m.Family)
		}
	}
}

func familyLabelSets(fam *snapshot.Family, f func(get func(string) string)) {
	for _, s := range fam.Series {
		f(s.Labels.Get)
	}
	for _, h := range fam.Histograms {
		f(h.Labels.Get)
	}
}

func matchesSel(get func(string) string, sel map[string]string) bool {
	for k, v := range sel {
		if get(k) != v {
			return false
		}
	}
	return true
}

// labelValues returns the values of label seen on series matching sel.
func labelValues(reps []replica, label string, sel map[string]string) []string {
	seen := map[string]bool{}
	for _, r := range reps {
		catalogFamilies(r, func(fam *snapshot.Family) {
			familyLabelSets(fam, func(get func(string) string) {
				if v := get(label); v != "" && matchesSel(get, sel) {
					seen[v] = true
				}
			})
		})
	}
	return slices.Sorted(maps.Keys(seen))
}

// labelTuples returns the distinct combinations of the labels' values seen
// together on series matching sel (series lacking any label are skipped).
func labelTuples(reps []replica, labels []string, sel map[string]string) []map[string]string {
	seen := map[string]map[string]string{}
	for _, r := range reps {
		catalogFamilies(r, func(fam *snapshot.Family) {
			familyLabelSets(fam, func(get func(string) string) {
				if !matchesSel(get, sel) {
					return
				}
				tup := map[string]string{}
				var key []string
				for _, l := range labels {
					v := get(l)
					if v == "" {
						return
					}
					tup[l] = v
					key = append(key, v)
				}
				seen[strings.Join(key, "\xff")] = tup
			})
		})
	}
	keys := slices.Sorted(maps.Keys(seen))
	out := make([]map[string]string, len(keys))
	for i, k := range keys {
		out[i] = seen[k]
	}
	return out
}

// servingReplicas returns the replicas with a series matching sel on a
// catalog family (all replicas for a nil sel).
func servingReplicas(reps []replica, sel map[string]string) []replica {
	if len(sel) == 0 {
		return reps
	}
	var out []replica
	for _, r := range reps {
		found := false
		catalogFamilies(r, func(fam *snapshot.Family) {
			if found {
				return
			}
			familyLabelSets(fam, func(get func(string) string) {
				if matchesSel(get, sel) {
					found = true
				}
			})
		})
		if found {
			out = append(out, r)
		}
	}
	return out
}

// prepare is the first step of every diagnosis (Diagnose, and the
// measuring of an experiment's runs): the settings of opts, the catalog
// resolved on ev, and the replicas split into groups (one per model, or
// by the label of Options.By). A replica is a target whose series are
// joined by identity (snapshot.Target.JoinAddresses): callers pass ev
// joined.
func prepare(ev *snapshot.Evidence, opts Options) (set settings, res catalog.Resolution, groups []group, by string, err error) {
	set, err = opts.settings()
	if err != nil {
		return set, res, nil, "", err
	}
	if ev == nil || len(ev.Targets) == 0 {
		return set, res, nil, "", errors.New("diagnose: the evidence holds no target")
	}
	set.catalog = set.catalog.ForEvidence(ev) // Ray's ray_vllm: names, when present
	res = set.catalog.Resolve(ev)
	reps := make([]replica, len(ev.Targets))
	for i, t := range ev.Targets {
		reps[i] = replica{t: t, res: &res.Targets[i]}
	}
	groups, by, err = splitGroups(set, reps)
	if err == nil && set.Survey != nil && (len(groups) != 1 || !maps.Equal(groups[0].sel, set.Survey.group)) {
		err = fmt.Errorf("%w: the evidence of the windows has %d groups (by %s); the survey's was %s", ErrSurveyGroups, len(groups), by, groupName(set.Survey.group))
	}
	return set, res, groups, by, err
}

// measured is what the measuring step of a diagnosis found in one scope.
type measured struct {
	tl        *timelines
	base, inc evalWindow
	cp        *report.ChangePoint
	warns     []report.Warning
	facts     rules.Facts
}

// measure is the measuring step of a diagnosis, shared by Diagnose and
// JudgeExperiment: the scrape statistics, the fleet timelines on a grid
// of at most MaxIntervals, the windows (given, or from the change
// point), and the facts over them.
func (sc *scope) measure() (measured, error) {
	var st scrapeStats
	var tl *timelines
	if sv := sc.set.Survey; sv != nil {
		st, tl = sv.st, sv.tl
	} else {
		st = sc.scrapeStats()
		if st.times.len() == 0 {
			return measured{}, fmt.Errorf("diagnose: %s: no scrape", groupName(sc.group))
		}
		if st.maxPerTarget >= 3 {
			tl = sc.buildTimelines(timelineGrid(st.first, st.last, st.interval, sc.set.TimelineStep))
		}
	}
	if tl != nil {
		tl = tl.clone() // addReplicas rewrites its list
	}
	base, inc, cp, warns := sc.chooseWindows(st, tl)
	if err := sc.seedReduced(base, inc); err != nil {
		return measured{}, err
	}
	facts := sc.computeFacts(base, inc, tl, st)
	return measured{tl: tl, base: base, inc: inc, cp: cp, warns: warns, facts: facts}, nil
}

// diagnoseScope builds the report of one scope.
func diagnoseScope(sc *scope) (*report.Report, error) {
	m, err := sc.measure()
	if err != nil {
		return nil, err
	}
	base, inc, cp, warns, facts := m.base, m.inc, m.cp, m.warns, m.facts
	tl := m.tl
	result := rules.Evaluate(facts, sc.set.SLO, sc.set.Thresholds)

	rep := &report.Report{
		SchemaVersion: report.SchemaVersion,
		Verdict:       result.Verdict,
		Windows:       report.Windows{Baseline: base.info, Incident: inc.info, ChangePoint: cp},
		Symptoms:      result.Symptoms,
		Hypotheses:    result.Findings,
		Notes:         result.Notes,
		Candidates:    result.Candidates,
		Facts:         maps.Clone(facts),
	}
	if !base.ok {
		rep.Windows.Baseline = report.WindowInfo{From: "none"}
	}
	rep.Signals = sc.signals(base, inc)
	for _, w := range slices.Concat(warns, sc.scopeWarnings(base, inc, rep), pdWarnings(facts)) {
		rep.AddWarning(w)
	}
	for _, w := range result.Warnings {
		rep.AddWarning(report.Warning{Kind: report.WarnRules, Severity: snapshot.SeverityWarning, Text: w.Error(), Err: w})
	}
	rep.Summary = summary(rep, result, facts)
	if tl != nil {
		sc.addReplicas(tl, sc.standoutReplicas(rep))
		rep.Timelines = tl.list
	}
	return rep, nil
}

// finishReport records the settings a report was judged with, and
// prefixes the summary of a report on evidence that was not read whole:
// a verdict must say so where it is read first. Evidence that lost
// samples in a known range (a torn WAL, snapshot.LostRangeError) is
// partial when that range meets the baseline or the incident window.
func finishReport(rep *report.Report, set settings, ev *snapshot.Evidence) {
	rep.Settings = report.NewSettings(set.SLO, set.Thresholds)
	for _, w := range []report.WindowInfo{rep.Windows.Baseline, rep.Windows.Incident} {
		if !w.Start.IsZero() && !w.End.IsZero() && len(ev.LostIn(w.Start, w.End)) > 0 {
			rep.Inputs.Partial = true
		}
	}
	if rep.Inputs.Partial {
		rep.Summary = "PARTIAL EVIDENCE (some input could not be read; see inputs): " + rep.Summary
	}
}

// summary is the report's one sentence.
func summary(rep *report.Report, res rules.Result, fs rules.Facts) string {
	var present []string
	var unknown []string
	for _, s := range res.Symptoms {
		switch {
		case s.Present:
			present = append(present, string(s.ID))
		case !s.Evaluable:
			unknown = append(unknown, string(s.ID))
		}
	}
	switch res.Verdict {
	case rules.NoIncident:
		s := "no incident: every symptom was evaluated and none is present"
		if f := fs[rules.TTFTP95]; f.Known() {
			s += fmt.Sprintf(" (TTFT p95 %s over %s requests", rules.UnitSeconds.Format(f.Incident.Value), textfmt.Prose(f.Incident.Count))
			if f.HasBaseline() {
				s += fmt.Sprintf(", baseline %s", rules.UnitSeconds.Format(f.Baseline.Value))
			}
			s += ")"
		}
		for _, n := range res.Notes {
			s += "; " + n.ID
		}
		return s
	case rules.Undetermined:
		if len(present) > 0 && len(res.Candidates) > 0 {
			var cs []string
			for _, id := range res.Candidates {
				for _, f := range res.Findings {
					if f.ID == id {
						cs = append(cs, fmt.Sprintf("%s (%s confidence: %s)", id, f.Confidence, f.ConfidenceReason))
					}
				}
			}
			return fmt.Sprintf("undetermined: symptoms %s present; no hypothesis leads clearly; check next: %s", strings.Join(present, ", "), strings.Join(cs, "; "))
		}
		if len(present) > 0 {
			return fmt.Sprintf("undetermined: symptoms %s present but no hypothesis is supported; see the not-evaluable hypotheses for missing signals", strings.Join(present, ", "))
		}
		return fmt.Sprintf("undetermined: symptoms %s could not be evaluated (missing signals or no baseline), so \"no incident\" cannot be claimed", strings.Join(unknown, ", "))
	}
	for _, f := range res.Findings {
		if string(f.ID) != string(res.Verdict) {
			continue
		}
		var ev []string
		for _, e := range f.Evidence {
			if e.Text != "" {
				ev = append(ev, e.Text)
			}
			if len(ev) == 3 {
				break
			}
		}
		s := fmt.Sprintf("%s (%s), symptoms %s", f.ID, f.Title, strings.Join(present, ", "))
		if len(ev) > 0 {
			s += ": " + strings.Join(ev, "; ")
		}
		return s
	}
	return string(res.Verdict)
}

// commonWarnings are the warnings of the whole evidence: reading problems
// and the resolution's version skew, configuration drift and partial
// signals.
func commonWarnings(ev *snapshot.Evidence, res catalog.Resolution) []report.Warning {
	var out []report.Warning
	for _, p := range ev.Problems {
		if p.Severity == snapshot.SeverityInfo {
			continue // a note of Inputs, not a warning
		}
		out = append(out, report.Warning{Kind: report.WarnReading, Severity: p.Severity, Text: "reading: " + p.Error(), Err: p})
	}
	for _, w := range res.Warnings {
		out = append(out, report.Warning{Kind: report.WarnCatalog, Severity: snapshot.SeverityWarning, Text: w.Error(), Err: w})
	}
	for _, t := range res.Targets {
		for _, w := range t.Warnings {
			out = append(out, report.Warning{Kind: report.WarnCatalog, Severity: snapshot.SeverityWarning, Text: w.Error(), Err: w})
		}
	}
	return out
}

// withCommon returns rep's warnings preceded by the common ones.
func withCommon(rep *report.Report, common []report.Warning) {
	own, ownDetails := rep.Warnings, rep.WarningDetails
	rep.Warnings, rep.WarningDetails = nil, nil
	for _, w := range common {
		rep.AddWarning(w)
	}
	rep.Warnings = append(rep.Warnings, own...)
	rep.WarningDetails = append(rep.WarningDetails, ownDetails...)
}

func makeInputs(ev *snapshot.Evidence, res catalog.Resolution) report.Inputs {
	in := report.Inputs{Sources: slices.Clone(ev.Sources), Partial: ev.Partial(), Versions: map[string]string{}}
	if in.Sources == nil {
		in.Sources = []string{}
	}
	for i, t := range ev.Targets {
		if i < len(res.Targets) && isCompanion(&res.Targets[i]) {
			continue // listed once, in Exporters
		}
		in.Replicas = append(in.Replicas, t.Name)
	}
	sort.Strings(in.Replicas)
	for i, t := range res.Targets {
		if isCompanion(&res.Targets[i]) {
			continue
		}
		in.Versions[t.Target] = t.Versions.String()
	}
	in.Exporters = companionExporters(ev, res)
	for _, p := range ev.Problems {
		if p.Severity == snapshot.SeverityInfo {
			in.Notes = append(in.Notes, p.Error())
			continue
		}
		in.Problems = append(in.Problems, p.Error())
	}
	return in
}

// restrictInputs keeps only the replicas of a group.
func restrictInputs(in report.Inputs, reps []replica) report.Inputs {
	out := in
	out.Replicas = nil
	out.Versions = map[string]string{}
	for _, r := range reps {
		out.Replicas = append(out.Replicas, r.t.Name)
		if v, ok := in.Versions[r.t.Name]; ok {
			out.Versions[r.t.Name] = v
		}
	}
	sort.Strings(out.Replicas)
	return out
}

// dimensions says, for each of the article's dimensions, whether the
// evidence supports it.
func dimensions(set settings, rep *report.Report, by string, values []string) []report.Dimension {
	has := func(id rules.FactID) bool {
		f, ok := rep.Facts[id]
		return ok && f.Missing == nil
	}
	var ds []report.Dimension
	models := "one model"
	if g := rep.Group["model_name"]; g != "" {
		models = fmt.Sprintf("model_name=%q", g)
	}
	if len(values) > 0 {
		models = fmt.Sprintf("%s: %s", by, strings.Join(values, ", "))
	}
	ds = append(ds, report.Dimension{Name: "model and replica", Supported: true,
		How: fmt.Sprintf("model_name label (%s); %s, each with its own signals", models, textfmt.Plural(len(rep.Inputs.Replicas), "replica", "replicas"))})
	if set.By != "" && set.By != "model_name" {
		ds = append(ds, report.Dimension{Name: "workload type", Supported: true, How: fmt.Sprintf("split by the %s label", set.By)})
	} else {
		ds = append(ds, report.Dimension{Name: "workload type", Supported: false,
			How: "vLLM's metrics carry no workload label; when a gateway adds one (chat, RAG, agent), split by it with Options.By"})
	}
	if has(rules.PromptTokensP95) || has(rules.GenerationTokensP95) {
		ds = append(ds, report.Dimension{Name: "prompt/output length", Supported: true,
			How: "prompt and output length distributions (request_prompt_tokens, request_generation_tokens) per window; latency per length range is not visible, since histograms are not joined per request"})
	} else {
		ds = append(ds, report.Dimension{Name: "prompt/output length", Supported: false, How: "no prompt or output length histogram in the evidence"})
	}
	ds = append(ds, report.Dimension{Name: "streaming vs not", Supported: false,
		How: "not visible: vLLM's metrics do not tell streamed from non-streamed requests"})
	if has(rules.AbortShare) {
		ds = append(ds, report.Dimension{Name: "success/cancel/timeout", Supported: true,
			How: "finished_reason (stop, length, abort, error where counted) and HTTP status; a client timeout and a cancellation both count as abort, so timeouts are not visible apart"})
	} else {
		ds = append(ds, report.Dimension{Name: "success/cancel/timeout", Supported: false, How: "no request_success counter by finished_reason in the evidence"})
	}
	if has(rules.PrefixHitRatio) {
		ds = append(ds, report.Dimension{Name: "cold vs warm cache", Supported: true,
			How: "prefix-cache hit ratio per window and restarts (counter resets); which requests hit a warm cache is not visible"})
	} else {
		ds = append(ds, report.Dimension{Name: "cold vs warm cache", Supported: false, How: "no prefix-cache counters in the evidence; only restarts (counter resets) are visible"})
	}
	return ds
}
