package report

import (
	"fmt"
	"io"
	"math"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/internal/textfmt"
	"github.com/whyslow/whyslow/rules"
)

// WriteText writes the report for a terminal: the verdict and its summary
// first, then the windows (with how they were chosen and the change-point
// score), the four symptoms with their evidence, the ranked hypotheses,
// the before/after table of p50 and p95 per signal, per-replica hot spots,
// every signal with its source metric and vLLM versions, the dimensions
// the evidence can keep apart, the warnings and the inputs.
//
// Every number carries its unit, and its window and sample count where the
// report has them; estimates carry their bucket bounds. Hypotheses that
// named counter-evidence contradicts are printed in short (status, score,
// evidence and counter-evidence); WriteMarkdown prints them in full.
//
// A report split into groups (Report.Groups, e.g. one per model_name)
// prints a short summary of the groups, then each group in turn.
func (r *Report) WriteText(w io.Writer) error {
	return r.Layout(LayoutOptions{}).WriteText(w)
}

// String returns the text form of the report (see WriteText), so that a
// report prints well in a notebook cell.
func (r *Report) String() string {
	var b strings.Builder
	_ = r.WriteText(&b) // a strings.Builder never fails
	return b.String()
}

// WriteMarkdown writes the report as a Markdown document for a
// postmortem: the same content as WriteText under headings, with tables.
// Layout(LayoutOptions{Verbose: true}).WriteMarkdown prints everything.
func (r *Report) WriteMarkdown(w io.Writer) error {
	return r.Layout(LayoutOptions{}).WriteMarkdown(w)
}

// LayoutOptions select what a form of the report shows.
type LayoutOptions struct {
	// Full prints contradicted and not-evaluable hypotheses in full
	// instead of one line each.
	Full bool
	// Verbose restores everything: every hypothesis in full, the summary
	// sentence, and every evidence line with its source metric and vLLM
	// versions (by default the metrics are said once, in the signal
	// list). Verbose implies Full.
	Verbose bool
	// Plots adds BlockPlots blocks where the timeline plots go (HTML).
	Plots bool
	// Wide keeps every text line whole instead of fitting TextWidth
	// columns (the --wide flag).
	Wide bool
}

// Layout lays out the report as a Document, the model every writer
// renders: WriteText is Layout(LayoutOptions{}).WriteText, WriteMarkdown
// Layout(LayoutOptions{}).WriteMarkdown. A nil report gives a document
// that says "no report".
func (r *Report) Layout(o LayoutOptions) *Document {
	if o.Verbose {
		o.Full = true
	}
	d := &Document{verbose: o.Verbose, wide: o.Wide}
	if r == nil {
		d.heading(1, "whyslow report")
		d.para("", "no report")
		return d
	}
	if len(r.Groups) == 0 {
		layoutReport(d, r, o, "whyslow report: "+string(r.Verdict))
		return d
	}
	d.heading(1, "whyslow report: "+string(r.Verdict))
	d.para("verdict "+verdictClass(r.Verdict), verdictLine(r))
	if r.Summary != "" && o.Verbose {
		d.para("", r.Summary)
	}
	layoutSummary(d, r)
	d.heading(2, "Groups")
	t := &Table{Head: []string{"group", "verdict", "symptoms present", "replicas", "incident window"}}
	for _, g := range r.Groups {
		t.Rows = append(t.Rows, []string{textfmt.Selector(g.Group), string(g.Verdict), presentSymptoms(g),
			fmt.Sprint(len(g.Inputs.Replicas)), g.Windows.Incident.Span()})
		t.Marks = append(t.Marks, g.Verdict != rules.NoIncident)
	}
	d.table("groups", t)
	layoutDimensions(d, r)
	layoutWarnings(d, r)
	layoutInputs(d, r)
	for _, g := range r.Groups {
		d.shift = 1
		layoutReport(d, g, o, "group "+textfmt.Selector(g.Group)+": "+string(g.Verdict))
	}
	d.shift = 0
	return d
}

// presentSymptoms lists the present symptoms of a report, or "none";
// at the top of a split report, whose symptoms are the union of its
// groups', by group: "model_name=a: ttft, tail; model_name=b: tpot".
func presentSymptoms(r *Report) string {
	var groups []string
	byGroup := map[string][]string{}
	for _, sy := range r.Symptoms {
		if !sy.Present {
			continue
		}
		g := ""
		if len(sy.Group) > 0 {
			g = textfmt.Selector(sy.Group)
		}
		if _, ok := byGroup[g]; !ok {
			groups = append(groups, g)
		}
		byGroup[g] = append(byGroup[g], string(sy.ID))
	}
	if len(groups) == 0 {
		return "none"
	}
	parts := make([]string, len(groups))
	for i, g := range groups {
		parts[i] = strings.Join(byGroup[g], ", ")
		if g != "" {
			parts[i] = g + ": " + parts[i]
		}
	}
	return strings.Join(parts, "; ")
}

// verdictLine says the verdict and, for a hypothesis, its title.
func verdictLine(r *Report) string {
	for _, f := range r.Hypotheses {
		if string(f.ID) == string(r.Verdict) {
			return fmt.Sprintf("verdict: %s: %s (score %.2f, %s confidence)", r.Verdict, f.Title, f.Score, f.Confidence)
		}
	}
	for _, g := range r.Groups {
		if g != nil && g.Verdict == r.Verdict && len(g.Hypotheses) > 0 {
			return verdictLine(g) + " in group " + textfmt.Selector(g.Group)
		}
	}
	switch r.Verdict {
	case rules.NoIncident:
		return "verdict: no-incident: every symptom was evaluated and none is present"
	case rules.Undetermined:
		return "verdict: undetermined: " + undeterminedWhy(r) + ", and no hypothesis is supported"
	}
	return "verdict: " + string(r.Verdict)
}

// unjudgedSymptoms lists the symptoms that could not be judged, once
// each (a split report's groups may repeat one).
func unjudgedSymptoms(r *Report) []string {
	var ids []string
	for _, sy := range r.Symptoms {
		if !sy.Evaluable && !slices.Contains(ids, string(sy.ID)) {
			ids = append(ids, string(sy.ID))
		}
	}
	return ids
}

// undeterminedWhy says which of an undetermined verdict's reasons hold,
// as the summary's "symptoms present" line does: the symptoms that could
// not be judged, and whether any symptom is present.
func undeterminedWhy(r *Report) string {
	present, unjudged := presentSymptoms(r) != "none", unjudgedSymptoms(r)
	switch {
	case present && len(unjudged) > 0:
		return "symptoms are present, " + strings.Join(unjudged, ", ") + " could not be judged"
	case present:
		return "symptoms are present"
	case len(unjudged) > 0:
		return strings.Join(unjudged, ", ") + " could not be judged, no other symptom is present"
	}
	return "symptoms are present or could not be judged"
}

// verdictClass is the HTML class of the verdict box: "verdict-incident",
// "verdict-undetermined" or "verdict-no-incident".
func verdictClass(v rules.Verdict) string {
	switch v {
	case rules.NoIncident:
		return "verdict-no-incident"
	case rules.Undetermined:
		return "verdict-undetermined"
	}
	return "verdict-incident"
}

// layoutReport lays out one report (not split, or one group): the verdict
// and the summary block first, then (HTML) the timelines, the before and
// after table and the hypotheses, then the detail.
func layoutReport(d *Document, r *Report, o LayoutOptions, title string) {
	d.heading(1, title)
	d.para("verdict "+verdictClass(r.Verdict), verdictLine(r))
	if r.Summary != "" && o.Verbose {
		d.para("", r.Summary)
	}
	layoutSummary(d, r)
	if o.Plots {
		d.Blocks = append(d.Blocks, Block{Kind: BlockPlots, Text: textfmt.Selector(r.Group)})
	}
	layoutCompare(d, r)
	layoutHypotheses(d, r, o)
	layoutWindows(d, r)
	layoutSymptoms(d, r)
	layoutNotes(d, r)
	layoutReplicas(d, r)
	layoutSignals(d, r)
	layoutDimensions(d, r)
	layoutWarnings(d, r)
	layoutInputs(d, r)
}

func layoutWindows(d *Document, r *Report) {
	d.heading(2, "Windows")
	items := []Item{
		{Text: "baseline: " + fmtWindow(r.Windows.Baseline)},
		{Text: "incident: " + fmtWindow(r.Windows.Incident)},
	}
	if cp := r.Windows.ChangePoint; cp != nil {
		used := "proposed, not used: the windows were given"
		if cp.Used {
			used = "used to choose the windows"
		}
		it := Item{Text: fmt.Sprintf("change point: %s, score %s (%s)", cp.Time.UTC().Format("2006-01-02 15:04:05Z"), textfmt.Number(cp.Score), used)}
		if len(cp.Signals) > 0 {
			it.Sub = append(it.Sub, Item{Text: "moved: " + movedText(r.movedSignals())})
		}
		if cp.Method != "" && d.verbose {
			it.Sub = append(it.Sub, Item{Text: "method: " + cp.Method})
		}
		items = append(items, it)
	} else {
		items = append(items, Item{Text: "change point: none proposed"})
	}
	d.list("windows", items)
}

// movedText says which series stepped at a change point, and how:
// "tpot_p95 24.3ms -> 36ms (1.48x), waiting 0 -> 11.3 req".
func movedText(sigs []ChangeSignal) string {
	parts := make([]string, len(sigs))
	for i, c := range sigs {
		p := fmt.Sprintf("%s %s -> %s", c.Series, fmtValue(float64(c.Before), c.Unit), fmtValue(float64(c.After), c.Unit))
		if b := float64(c.Before); b > 0 {
			p += " (" + textfmt.Multiple(float64(c.After)/b) + ")"
		}
		parts[i] = p
	}
	return strings.Join(parts, ", ")
}

// symptomState names the state of a symptom.
func symptomState(s rules.Symptom) string {
	switch {
	case !s.Evaluable:
		return "not evaluable"
	case s.Present:
		return "PRESENT"
	}
	return "absent"
}

func layoutSymptoms(d *Document, r *Report) {
	d.heading(2, "Symptoms")
	if len(r.Symptoms) == 0 {
		d.para("", "no symptom was judged")
		return
	}
	var items []Item
	for _, s := range r.Symptoms {
		it := Item{Text: fmt.Sprintf("%s: %s", s.ID, symptomState(s)), Class: strings.ReplaceAll(symptomState(s), " ", "-")}
		if !d.verbose {
			// One item per symptom: its facts in a phrase each (the
			// hypotheses and --verbose give them in full), and the names
			// of those that cannot be evaluated.
			var parts, miss []string
			for _, e := range s.Evidence {
				// A fact two checks both cite (tpot_mean: the tpot
				// fallback and the lifecycle's decode route) is said once.
				if p := leadClause(e); !slices.Contains(parts, p) {
					parts = append(parts, p)
				}
			}
			for _, m := range s.Missing {
				miss = append(miss, string(m.Fact))
			}
			if len(parts) > 0 {
				it.Text += ": " + strings.Join(parts, "; ")
			}
			if len(miss) > 0 {
				it.Text += "; cannot evaluate " + strings.Join(miss, ", ")
			}
			items = append(items, it)
			continue
		}
		it.Sub = evidenceItems(d, r, s.Evidence)
		for _, m := range s.Missing {
			it.Sub = append(it.Sub, Item{Text: "cannot evaluate " + m.String()})
		}
		items = append(items, it)
	}
	d.list("symptoms", items)
}

// evidenceItems formats evidence like rules.Evidence.String, except that
// a window equal to one of the report's is named ("incident window")
// rather than repeated: the Windows section states it once.
//
// Unless the document is verbose, the source metric is left out (the
// signal list names each metric once) and numbers follow the prose rules
// (numbers.go).
func evidenceItems(d *Document, r *Report, ev []rules.Evidence) []Item {
	items := make([]Item, 0, len(ev))
	for _, e := range ev {
		items = append(items, Item{Text: fmtEvidence(r, e, d.verbose)})
	}
	return items
}

// windowText is the window text Diagnose gives facts for w.
func windowText(w WindowInfo) string {
	if w.From == "none" || (w.Start.IsZero() && w.End.IsZero()) {
		return ""
	}
	return textfmt.Window(w.Start, w.End, w.From == "lifetime")
}

func fmtEvidence(r *Report, e rules.Evidence, verbose bool) string {
	var extra []string
	unit := ""
	if info, ok := rules.Info(e.ID); ok {
		unit = string(info.Unit)
	}
	if !math.IsNaN(e.Fact.Incident.Lower) || !math.IsNaN(e.Fact.Incident.Upper) {
		extra = append(extra, fmt.Sprintf("in [%s, %s]", fmtValue(e.Fact.Incident.Lower, unit), fmtValue(e.Fact.Incident.Upper, unit)))
	}
	if !math.IsNaN(e.Fact.Incident.Count) {
		c := fmtCountOf(rules.Number(e.Fact.Incident.Count), countNoun(e.ID))
		if !math.IsNaN(e.Fact.Baseline.Count) {
			c += " (baseline " + strings.TrimPrefix(fmtCountOf(rules.Number(e.Fact.Baseline.Count), ""), "n=") + ")"
		}
		extra = append(extra, c)
	}
	if e.Fact.Incident.Window != "" {
		inc, base := e.Fact.Incident.Window, e.Fact.Baseline.Window
		if inc == windowText(r.Windows.Incident) {
			inc = "incident window"
		}
		if base != "" && base == windowText(r.Windows.Baseline) {
			base = "baseline window"
		}
		switch {
		case base == "":
			extra = append(extra, inc)
		case inc == "incident window" && base == "baseline window":
			extra = append(extra, "incident vs baseline window")
		default:
			extra = append(extra, inc+" vs "+base)
		}
	}
	text := e.Text
	if verbose {
		if e.Fact.Source != "" {
			extra = append(extra, e.Fact.Source)
		}
	} else {
		// The source is left out, not the replica a fact singles out.
		if name := e.Fact.Replica; name != "" && slices.Contains(r.Inputs.Replicas, name) {
			extra = append(extra, "replica "+name)
		}
	}
	if len(extra) == 0 {
		return text
	}
	if text == "" {
		return strings.Join(extra, "; ")
	}
	return text + "; " + strings.Join(extra, "; ")
}

// hypothesisOrder returns the indexes of r.Hypotheses in the order the
// text, Markdown and HTML forms show them: supported (and other
// evidence-bearing) hypotheses first, each in full; then the ones that
// could not be evaluated and the contradicted ones, a line each. Within
// and across the two tiers the order is the ranking's, so the numbers
// the forms print (the JSON rank) ascend.
func hypothesisOrder(hs []rules.Finding) []int {
	tier := func(f rules.Finding) int {
		switch f.Status {
		case rules.Contradicted, rules.NotEvaluable:
			return 1
		}
		return 0
	}
	idx := make([]int, len(hs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return tier(hs[a]) - tier(hs[b]) })
	return idx
}

// ruledOutBy says in one phrase the counter-evidence that contradicts a
// finding: the named counter-evidence sentence (with its first fact), or
// the first failing support condition.
func ruledOutBy(f rules.Finding) string {
	var parts []string
	for _, e := range f.CounterEvidence {
		if e.ID == "" {
			if len(parts) > 0 {
				break
			}
			parts = append(parts, e.Lead)
			continue
		}
		parts = append(parts, compactEvidence(e))
		break
	}
	if len(parts) == 0 {
		return "a support condition fails"
	}
	return strings.Join(parts, ": ")
}

// needs says what would make a not-evaluable finding evaluable: the
// missing facts with their reasons, each reason once.
func needs(f rules.Finding) string {
	var out []string
	seen := map[string]bool{}
	for _, m := range f.Missing {
		reason := m.Reason()
		if seen[reason] {
			continue
		}
		seen[reason] = true
		out = append(out, m.String())
	}
	if len(out) == 0 {
		return "no missing fact was named"
	}
	return strings.Join(out, "; ")
}

func layoutHypotheses(d *Document, r *Report, o LayoutOptions) {
	d.heading(2, "Hypotheses, ranked")
	if len(r.Hypotheses) == 0 {
		d.para("", "no hypothesis was evaluated")
		return
	}
	var short []Item
	flushShort := func() {
		d.list("findings-short", short)
		short = nil
	}
	for _, i := range hypothesisOrder(r.Hypotheses) {
		f := r.Hypotheses[i]
		head := fmt.Sprintf("%d. %s [%s, score %.2f]: %s", i+1, f.ID, f.Status, f.Score, f.Title)
		if !o.Full && f.Status == rules.Contradicted {
			short = append(short, Item{Text: fmt.Sprintf("%d. %s [contradicted, score %.2f]: ruled out by %s", i+1, f.ID, f.Score, ruledOutBy(f)),
				Class: "status-contradicted"})
			continue
		}
		if !o.Full && f.Status == rules.NotEvaluable {
			short = append(short, Item{Text: fmt.Sprintf("%d. %s [not evaluable]: %s; needs %s", i+1, f.ID, f.Title, needs(f)),
				Class: "status-not-evaluable"})
			continue
		}
		flushShort()
		d.heading(3, head)
		d.Blocks[len(d.Blocks)-1].Class = "status-" + string(f.Status)
		if !o.Full && string(f.ID) != string(r.Verdict) && f.Status == rules.Supported {
			// A supported rival of the verdict: what sets it apart, in a
			// few lines; --verbose prints it in full.
			layoutRival(d, r, f)
			continue
		}
		if len(f.Explains) > 0 {
			ex := make([]string, len(f.Explains))
			for j, s := range f.Explains {
				ex[j] = string(s)
			}
			d.para("status-"+string(f.Status), "explains the symptoms "+strings.Join(ex, ", "))
		}
		var items []Item
		section := func(title string, sub []Item) {
			if len(sub) > 0 {
				items = append(items, Item{Text: title, Sub: sub})
			}
		}
		if o.Full {
			section("evidence:", evidenceItems(d, r, f.Evidence))
		} else {
			// One line per fact, each once (--verbose: in full, with
			// the noise band, bucket and window of each).
			var ev []Item
			seen := map[string]bool{}
			for _, e := range f.Evidence {
				t := compactEvidence(e)
				if !seen[t] {
					seen[t] = true
					ev = append(ev, Item{Text: t})
				}
			}
			section("evidence:", ev)
		}
		section("counter-evidence:", evidenceItems(d, r, f.CounterEvidence))
		var miss []Item
		for _, m := range f.Missing {
			miss = append(miss, Item{Text: m.String()})
		}
		section("cannot evaluate:", miss)
		var checks []Item
		for _, c := range f.NextChecks {
			it := Item{Text: fmt.Sprintf("[%s] %s", c.Outcome, c.Text), Class: "check-" + c.Outcome}
			if o.Full {
				it.Sub = evidenceItems(d, r, c.Evidence)
				for _, m := range c.Missing {
					it.Sub = append(it.Sub, Item{Text: "missing " + m.String()})
				}
			} else {
				// The facts behind the outcome, a phrase each.
				for _, e := range c.Evidence {
					it.Sub = append(it.Sub, Item{Text: compactEvidence(e)})
				}
				for _, m := range c.Missing {
					it.Sub = append(it.Sub, Item{Text: "missing " + string(m.Fact)})
				}
			}
			checks = append(checks, it)
		}
		section("next checks:", checks)
		if f.Status == rules.Supported || o.Verbose {
			section("mitigate now (immediate, during the incident):", textItems(f.Mitigations))
			section("root cause (after recovery):", textItems(f.RootCause))
			section("prevent:", textItems(f.Prevention))
			if f.Experiment.Hypothesis != "" {
				items = append(items, Item{Text: "proposed experiment: " + f.Experiment.Summary(), Sub: textItems(f.Experiment.Terms())})
			}
		}
		d.list("finding", items)
	}
	if len(short) > 0 {
		d.heading(3, "Ruled out, and not evaluable")
		flushShort()
	}
}

// layoutRival lays out a supported hypothesis that is not the verdict
// in a few lines: the symptoms it explains, its evidence that the
// verdict's does not already show (one line each, compact), the
// automated checks by outcome, and its first mitigation.
func layoutRival(d *Document, r *Report, f rules.Finding) {
	// key names a piece of evidence: its fact, or its text for a
	// sentence that names none (the lifecycle breakdown).
	key := func(e rules.Evidence) string {
		if e.ID != "" {
			return string(e.ID)
		}
		return e.Text
	}
	shown := map[string]bool{}
	if v, ok := r.verdictFinding(); ok {
		for _, e := range v.Evidence {
			shown[key(e)] = true
		}
	}
	var items []Item
	if len(f.Explains) > 0 {
		ex := make([]string, len(f.Explains))
		for j, s := range f.Explains {
			ex[j] = string(s)
		}
		items = append(items, Item{Text: "explains the symptoms " + strings.Join(ex, ", ")})
	}
	var own []string
	same := 0
	for _, e := range f.Evidence {
		if shown[key(e)] {
			same++
			continue
		}
		shown[key(e)] = true
		own = append(own, compactEvidence(e))
	}
	if len(own) > 0 {
		text := "its own evidence: "
		if same > 0 {
			text = fmt.Sprintf("its own evidence (and %d of the verdict's): ", same)
		}
		items = append(items, Item{Text: text + strings.Join(own, "; ")})
	} else if same > 0 {
		items = append(items, Item{Text: fmt.Sprintf("evidence: %d of the verdict's, nothing of its own", same)})
	}
	byOutcome := map[string][]string{}
	for _, c := range f.NextChecks {
		if c.Outcome != rules.CheckManual {
			byOutcome[c.Outcome] = append(byOutcome[c.Outcome], c.Text)
		}
	}
	for _, oc := range []string{rules.CheckHolds, rules.CheckFails, rules.CheckUnknown} {
		if len(byOutcome[oc]) > 0 {
			items = append(items, Item{Text: "checks that " + checkVerb(oc) + ": " + strings.Join(byOutcome[oc], " ")})
		}
	}
	if len(f.Mitigations) > 0 {
		items = append(items, Item{Text: "mitigate first: " + f.Mitigations[0]})
	}
	d.list("finding", items)
}

// checkVerb says a check outcome after "checks that".
func checkVerb(outcome string) string {
	switch outcome {
	case rules.CheckHolds:
		return "hold"
	case rules.CheckFails:
		return "do not hold"
	}
	return "cannot be judged"
}

func layoutNotes(d *Document, r *Report) {
	if len(r.Notes) == 0 {
		return
	}
	d.heading(2, "Not incidents")
	var items []Item
	for _, n := range r.Notes {
		items = append(items, Item{Text: n.ID + ": " + n.Text, Sub: evidenceItems(d, r, n.Evidence)})
	}
	d.list("notes", items)
}

func layoutCompare(d *Document, r *Report) {
	rows := CompareTable(r)
	d.heading(2, "Before and after: p50 and p95 per signal")
	if len(rows) == 0 {
		d.para("", "no latency or size histogram was found")
		return
	}
	d.para("", compareCaption(rows))
	t, missing := compareRTable(rows, false)
	if len(t.Rows) > 0 {
		d.table("compare", t)
	}
	d.list("missing", missing)
}

// replicaColumn is one column of the per-replica table.
type replicaColumn struct {
	head string
	id   catalog.SignalID
	// value returns the cell text and the number it shows.
	value func(s Signal) (string, float64)
}

func quantileOf(m *Measure, q float64) (Quantile, bool) {
	if m == nil {
		return Quantile{}, false
	}
	for _, x := range m.Quantiles {
		if math.Abs(x.Q-q) < 1e-9 {
			return x, true
		}
	}
	return Quantile{}, false
}

func signalByID(sigs []Signal, id catalog.SignalID) (Signal, bool) {
	for _, s := range sigs {
		if s.ID == string(id) {
			return s, true
		}
	}
	return Signal{}, false
}

// TagCulprit is the Table.Tags tag of the row of the replica the report
// singles out (Report.NamedCulprit).
const TagCulprit = "culprit"

func layoutReplicas(d *Document, r *Report) {
	exporter := map[string]bool{} // companion targets: listed in Inputs, not replicas
	for _, e := range r.Inputs.Exporters {
		for _, t := range e.Targets {
			exporter[t] = true
		}
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range r.Signals.Replicas {
			if !exporter[n] && !yield(n) {
				return
			}
		}
	})
	if len(names) == 0 {
		return
	}
	th := r.thresholds()
	p95 := func(s Signal) (string, float64) {
		q, ok := quantileOf(s.Incident, 0.95)
		if !ok {
			return "n/a", math.NaN()
		}
		if !d.verbose {
			// The counts are --verbose: a row's requests are its
			// completions, the first column.
			return fmtQuantilePoint(q, s.Unit), float64(q.Value)
		}
		return fmt.Sprintf("%s %s", fmtQuantilePoint(q, s.Unit), fmtCount(q.Count)), float64(q.Value)
	}
	gauge := func(s Signal) (string, float64) {
		if s.Incident == nil {
			return "n/a", math.NaN()
		}
		m := s.Incident
		if !d.verbose {
			// The mean alone (--verbose adds the maximum).
			return strings.TrimSuffix(fmtValue(float64(m.Mean), s.Unit), " req"), float64(m.Mean)
		}
		return fmt.Sprintf("%s (max %s)", fmtValue(float64(m.Mean), s.Unit), fmtValue(float64(m.Max), s.Unit)), float64(m.Mean)
	}
	rate := func(s Signal) (string, float64) {
		if s.Incident == nil {
			return "n/a", math.NaN()
		}
		return fmtValue(float64(s.Incident.Rate), rateUnit(s.Unit)), float64(s.Incident.Rate)
	}
	cols := []replicaColumn{
		{"completions", catalog.SignalRequestSuccess, rate},
		{"TTFT p95", catalog.SignalTTFT, p95},
		{"queue p95", catalog.SignalQueueTime, p95},
		{"prefill p95", catalog.SignalPrefillTime, p95},
		{"TPOT p95", catalog.SignalTPOT, p95},
		{"waiting mean", catalog.SignalWaiting, gauge},
		{"running mean", catalog.SignalRunning, gauge},
		{"KV usage mean", catalog.SignalKVUsage, gauge},
		{"preemptions", catalog.SignalPreemptions, rate},
		{"GPU util mean", catalog.SignalGPUUtil, gauge},
	}
	var used []replicaColumn
	var none []string // columns left out: zero on every replica
	for _, c := range cols {
		has, nonzero := false, false
		for _, n := range names {
			if s, ok := signalByID(r.Signals.Replicas[n], c.id); ok && s.Incident != nil {
				has = true
				nonzero = nonzero || float64(s.Incident.Rate) != 0
			}
		}
		switch {
		case !has:
		case !d.verbose && c.id == catalog.SignalPreemptions && !nonzero:
			none = append(none, "no "+c.head+" on any replica")
		default:
			if !d.verbose {
				c.head = strings.TrimSuffix(c.head, " mean")
			}
			used = append(used, c)
		}
	}
	if len(used) == 0 {
		return
	}
	// The share column is a measurement; whether the fleet has a hot spot
	// is the engine's decision, read from its balance facts (weighted by
	// engine count, with minimum samples), never recomputed here.
	var total float64
	shares := make(map[string]float64, len(names))
	for _, n := range names {
		if s, ok := signalByID(r.Signals.Replicas[n], catalog.SignalRequestSuccess); ok && s.Incident != nil && finiteFloat(s.Incident.Count) {
			shares[n] = float64(s.Incident.Count)
			total += float64(s.Incident.Count)
		}
	}
	t := &Table{Head: []string{"replica"}, Right: []bool{false}}
	for _, c := range used {
		t.Head = append(t.Head, c.head)
		t.Right = append(t.Right, true)
	}
	t.Head = append(t.Head, "share")
	t.Right = append(t.Right, true)
	culprit := ""
	if c := r.NamedCulprit(); c != nil && c.Kind == "replica" {
		culprit = c.Name
	}
	for _, n := range names {
		if culprit != "" {
			tag := ""
			if n == culprit {
				tag = TagCulprit
			}
			t.Tags = append(t.Tags, tag)
		}
		row := []string{n}
		for _, c := range used {
			s, ok := signalByID(r.Signals.Replicas[n], c.id)
			if !ok {
				row = append(row, "n/a")
				continue
			}
			text, _ := c.value(s)
			row = append(row, text)
		}
		share := "n/a"
		if total > 0 && len(shares) >= 2 {
			share = fmtValue(shares[n]/total, "ratio")
		}
		t.Rows = append(t.Rows, append(row, share))
	}
	d.heading(2, "Per replica")
	gauges := "gauges are means (and maxima) over the window's scrapes"
	if !d.verbose {
		gauges = "gauges are means over the window's scrapes (--verbose adds maxima and counts)"
	}
	d.para("", fmt.Sprintf("incident window %s; "+gauges+", rates per second; "+
		"share is the replica's share of completions", r.Windows.Incident.Span()))
	d.table("replicas", t)
	if len(none) > 0 {
		d.para("", strings.Join(none, "; "))
	}
	d.list("", textItems(balanceFacts(r, th)))
}

// balanceFacts says what the engine's replica-balance facts decided: the
// largest shares over the fair share, each a hot spot at or above the
// Hotspot threshold; and the worst replica's TTFT p95 over the median of
// the other replicas' (ttftSpread), judged by the same threshold, with
// the engine's ratio to the fleet beside it (a hot replica dominates the
// fleet's p95, so that ratio alone would call it balanced).
func balanceFacts(r *Report, th rules.Thresholds) []string {
	var out []string
	verdict := func(v float64) string {
		if v >= th.Hotspot {
			return "a hot spot"
		}
		return "balanced"
	}
	for _, b := range []struct {
		id       rules.FactID
		what, of string
	}{
		{rules.ReplicaShareMax, "largest share of completions", "the fair share (by engine count)"},
		{rules.ReplicaLoadShareMax, "largest share of arrivals", "the fair share (by engine count)"},
	} {
		f, ok := r.Facts[b.id]
		if !ok || f.Missing != nil || !finite(f.Incident.Value) {
			continue
		}
		out = append(out, fmt.Sprintf("%s: %s %s, %s (hot spot at %gx; %s)", b.what, textfmt.Multiple(f.Incident.Value), b.of, verdict(f.Incident.Value), th.Hotspot, b.id))
	}
	f, fok := r.Facts[rules.ReplicaTTFTRatio]
	fok = fok && f.Missing == nil && finite(f.Incident.Value)
	if sp, ok := r.ttftSpread(); ok {
		line := fmt.Sprintf("worst replica TTFT p95: %s %s, %s %s, %s (hot spot at %gx",
			sp.Replica, fmtValue(sp.Worst, "s"), textfmt.Multiple(sp.Ratio()), othersMedian(sp), verdict(sp.Ratio()), th.Hotspot)
		if fok {
			line += fmt.Sprintf("; %s the fleet's, %s", textfmt.Multiple(f.Incident.Value), rules.ReplicaTTFTRatio)
		}
		return append(out, line+")")
	}
	if fok {
		out = append(out, fmt.Sprintf("worst replica TTFT p95: %s the fleet's, %s (hot spot at %gx; %s)", textfmt.Multiple(f.Incident.Value), verdict(f.Incident.Value), th.Hotspot, rules.ReplicaTTFTRatio))
	}
	return out
}

// othersMedian names what a replica spread compares with: "the other
// replica's 231ms" or "the other 7 replicas' median 231ms".
func othersMedian(sp replicaSpread) string {
	if sp.N == 1 {
		return "the other replica's " + fmtValue(sp.Others, "s")
	}
	return fmt.Sprintf("the other %d replicas' median %s", sp.N, fmtValue(sp.Others, "s"))
}

// measureText summarises a measure by the kind of its signal.
func measureText(s Signal, m *Measure) string {
	if m == nil {
		return "n/a"
	}
	var parts []string
	switch s.Kind {
	case "histogram":
		for _, q := range m.Quantiles {
			parts = append(parts, fmtQ(q.Q)+" "+fmtQuantileValue(q, s.Unit))
		}
		parts = append(parts, "mean "+fmtValue(float64(m.Mean), s.Unit), fmtCountOf(m.Count, countNounSignal(s.ID)))
	case "counter":
		parts = append(parts, fmtValue(float64(m.Rate), rateUnit(s.Unit)),
			"+"+fmtValue(float64(m.Count), s.Unit)+" over the window")
	case "gauge":
		parts = append(parts, "mean "+fmtValue(float64(m.Mean), s.Unit), "max "+fmtValue(float64(m.Max), s.Unit))
		if finiteFloat(m.Slope) {
			parts = append(parts, "slope "+textfmt.Number(float64(m.Slope))+"/s")
		}
		parts = append(parts, fmtCountOf(m.Count, "samples"))
	default:
		v, u := m.Mean, s.Unit
		if !finiteFloat(v) && finiteFloat(m.Rate) {
			v, u = m.Rate, rateUnit(s.Unit)
		}
		parts = append(parts, fmtValue(float64(v), u), fmtCount(m.Count))
	}
	if m.Resets > 0 {
		parts = append(parts, fmt.Sprintf("%d reset(s)", m.Resets))
	}
	if m.LowerBound {
		parts = append(parts, "lower bound")
	}
	if m.Lifetime {
		parts = append(parts, "lifetime, not windowed")
	}
	return strings.Join(parts, ", ")
}

func layoutSignals(d *Document, r *Report) {
	if len(r.Signals.Fleet) == 0 {
		return
	}
	d.heading(2, "Signals, fleet-wide")
	d.para("", fmt.Sprintf("baseline %s; incident %s; histograms merged across replicas before quantiles are taken",
		r.Windows.Baseline.Span(), r.Windows.Incident.Span()))
	var items, missing, warns []Item
	var missingIDs []string
	var rows [][]string
	warnIDs := map[string][]string{}
	var warnOrder []string
	for _, s := range r.Signals.Fleet {
		if s.Missing != "" && s.Incident == nil && s.Baseline == nil {
			missing = append(missing, Item{Text: s.ID + ": " + s.Missing})
			missingIDs = append(missingIDs, s.ID)
			continue
		}
		if !d.verbose && strings.Contains(s.Metric, "{") && s.Kind == "counter" {
			continue // a counter's split by a label: --verbose
		}
		if !d.verbose {
			// A space before a selector's labels lets a long one wrap
			// (PromQL reads it the same).
			rows = append(rows, []string{s.ID, shortMeasure(s, s.Baseline), shortMeasure(s, s.Incident), strings.Replace(s.Metric, "{", " {", 1)})
			for _, w := range s.Warnings {
				if _, ok := warnIDs[w]; !ok {
					warnOrder = append(warnOrder, w)
				}
				warnIDs[w] = append(warnIDs[w], s.ID)
			}
			continue
		}
		head := s.ID
		if s.Metric != "" {
			head += " from " + s.Metric
		}
		if s.Versions != "" {
			head += " (vLLM " + s.Versions + ")"
		}
		items = append(items, Item{Text: head, Sub: []Item{
			{Text: "baseline: " + measureText(s, s.Baseline)},
			{Text: "incident: " + measureText(s, s.Incident)},
		}})
		for _, w := range s.Warnings {
			if _, ok := warnIDs[w]; !ok {
				warnOrder = append(warnOrder, w)
			}
			warnIDs[w] = append(warnIDs[w], s.ID)
		}
	}
	// A warning shared by several signals is listed once, with them.
	for _, w := range warnOrder {
		warns = append(warns, Item{Text: w + " (" + strings.Join(warnIDs[w], ", ") + ")"})
	}
	if len(rows) > 0 {
		// One row per signal, its source metric last (said once here; the
		// evidence leaves it out); --verbose gives every measure in full,
		// with the vLLM versions of each metric.
		d.table("signals", &Table{Head: []string{"signal", "baseline mean", "incident mean", "from"}, Right: []bool{false, true, true, false}, Rows: rows})
	}
	d.list("signals", items)
	if len(missing) > 0 && !d.verbose {
		d.list("missing", []Item{{Text: "cannot evaluate: " + strings.Join(missingIDs, ", ") + " (--verbose says why)"}})
	} else if len(missing) > 0 {
		d.para("", "cannot evaluate:")
		d.list("missing", missing)
	}
	if len(warns) > 0 {
		d.para("", "signal warnings:")
		d.list("warnings", warns)
	}
}

// shortMeasure is a measure in a table cell under "mean": the mean and
// the p99 of a histogram (its p50 and p95 are in the before-and-after
// table), the mean and maximum of a gauge, the (mean) rate of a counter,
// the value of a ratio over the window.
func shortMeasure(s Signal, m *Measure) string {
	if m == nil {
		return "n/a"
	}
	// Counts of requests and tokens go without their unit: the signal's
	// name says it, and the cell stays narrow.
	val := func(v float64) string {
		t := fmtValue(v, s.Unit)
		return strings.TrimSuffix(strings.TrimSuffix(t, " tokens"), " req")
	}
	var parts []string
	switch s.Kind {
	case "histogram":
		parts = append(parts, val(float64(m.Mean)))
		if q, ok := quantileOf(m, 0.99); ok {
			p := fmtQuantilePoint(q, s.Unit)
			parts = append(parts, "p99 "+strings.TrimSuffix(strings.TrimSuffix(p, " tokens"), " req"))
		}
	case "counter":
		parts = append(parts, fmtValue(float64(m.Rate), rateUnit(s.Unit)))
	case "gauge":
		parts = append(parts, val(float64(m.Mean)), "max "+val(float64(m.Max)))
	default:
		v, u := m.Mean, s.Unit
		if !finiteFloat(v) && finiteFloat(m.Rate) {
			v, u = m.Rate, rateUnit(s.Unit)
		}
		parts = append(parts, fmtValue(float64(v), u))
	}
	if m.Lifetime {
		parts = append(parts, "lifetime")
	}
	return strings.Join(parts, ", ")
}

func layoutDimensions(d *Document, r *Report) {
	if len(r.Dimensions) == 0 {
		return
	}
	d.heading(2, "Dimensions")
	if !d.verbose {
		// Which dimensions the evidence can split by, in two lines; the
		// table with how each is (or is not) visible is --verbose.
		var yes, no []string
		for _, dm := range r.Dimensions {
			if dm.Supported {
				yes = append(yes, dm.Name)
			} else {
				no = append(no, dm.Name)
			}
		}
		var items []Item
		if len(yes) > 0 {
			items = append(items, Item{Text: "visible: " + strings.Join(yes, ", ")})
		}
		if len(no) > 0 {
			items = append(items, Item{Text: "not visible: " + strings.Join(no, ", ")})
		}
		d.list("dimensions", items)
		return
	}
	t := &Table{Head: []string{"dimension", "supported", "how"}}
	for _, dm := range r.Dimensions {
		sup := "no"
		if dm.Supported {
			sup = "yes"
		}
		t.Rows = append(t.Rows, []string{dm.Name, sup, dm.How})
	}
	d.table("dimensions", t)
}

func layoutWarnings(d *Document, r *Report) {
	d.heading(2, "Warnings")
	if len(r.Warnings) == 0 {
		d.para("", "none")
		return
	}
	d.list("warnings", textItems(r.Warnings))
}

func layoutInputs(d *Document, r *Report) {
	in := r.Inputs
	if len(in.Sources) == 0 && len(in.Replicas) == 0 && len(in.Problems) == 0 && len(in.Notes) == 0 && len(in.Exporters) == 0 {
		return
	}
	d.heading(2, "Inputs")
	var items []Item
	if src := summarizeSources(in.Sources); len(src) > 3 && !d.verbose {
		// One item; folders of one parent said once.
		text := fmt.Sprintf("sources (%d): %s", len(in.Sources), strings.Join(src, ", "))
		if parent := commonParent(src); parent != "" {
			short := make([]string, len(src))
			for i, s := range src {
				short[i] = strings.TrimPrefix(s, parent)
			}
			text = fmt.Sprintf("sources (%d) in %s: %s", len(in.Sources), parent, strings.Join(short, ", "))
		}
		items = append(items, Item{Text: text})
	} else if len(in.Sources) > 0 {
		items = append(items, Item{Text: fmt.Sprintf("sources (%d):", len(in.Sources)), Sub: textItems(src)})
	}
	versions := map[string]bool{}
	for _, n := range in.Replicas {
		versions[in.Versions[n]] = true
	}
	if len(in.Replicas) > 1 && len(versions) == 1 && !d.verbose {
		// One version everywhere: the replicas in one line.
		text := fmt.Sprintf("replicas (%d): %s", len(in.Replicas), strings.Join(in.Replicas, ", "))
		if v := in.Versions[in.Replicas[0]]; v != "" {
			text += "; all vLLM " + v
		}
		items = append(items, Item{Text: text})
	} else if len(in.Replicas) > len(versions) && !d.verbose {
		// The replicas of each version range together.
		var order []string
		byVersion := map[string][]string{}
		for _, n := range in.Replicas {
			v := in.Versions[n]
			if _, ok := byVersion[v]; !ok {
				order = append(order, v)
			}
			byVersion[v] = append(byVersion[v], n)
		}
		var reps []Item
		for _, v := range order {
			text := strings.Join(byVersion[v], ", ")
			if v != "" {
				text += ": vLLM " + v
			}
			reps = append(reps, Item{Text: text})
		}
		items = append(items, Item{Text: fmt.Sprintf("replicas (%d):", len(in.Replicas)), Sub: reps})
	} else if len(in.Replicas) > 0 {
		var reps []Item
		for _, n := range in.Replicas {
			text := n
			if v := in.Versions[n]; v != "" {
				text += ": vLLM " + v
			}
			reps = append(reps, Item{Text: text})
		}
		items = append(items, Item{Text: fmt.Sprintf("replicas (%d):", len(in.Replicas)), Sub: reps})
	}
	if in.Partial {
		items = append(items, Item{Text: "partial: some input could not be read", Sub: textItems(in.Problems)})
	} else if len(in.Problems) > 0 {
		items = append(items, Item{Text: "problems:", Sub: textItems(in.Problems)})
	}
	for _, e := range in.Exporters {
		items = append(items, Item{Text: "beside vLLM: " + e.String() + ": " + strings.Join(e.Targets, ", ")})
	}
	if len(in.Notes) > 0 {
		items = append(items, Item{Text: "notes:", Sub: textItems(in.Notes)})
	}
	d.list("inputs", items)
}

// maxSources is the number of sources (or folders of sources) listed.
const maxSources = 8

// summarizeSources lists a few sources as they are, and many as the
// folders that hold them, with counts.
// commonParent returns the folder ("a/b/") that every source lies in
// when there is one and it is not the current one; "" otherwise.
func commonParent(src []string) string {
	var parent string
	for i, s := range src {
		dir := path.Dir(strings.TrimSuffix(strings.Fields(filepath.ToSlash(s))[0], "/"))
		switch {
		case dir == "." || dir == "/":
			return ""
		case i == 0:
			parent = dir
		case dir != parent:
			return ""
		}
	}
	if parent == "" {
		return ""
	}
	return parent + "/"
}

func summarizeSources(src []string) []string {
	if len(src) <= maxSources {
		return src
	}
	var dirs []string
	count := map[string]int{}
	for _, s := range src {
		dir := path.Dir(filepath.ToSlash(s))
		if count[dir] == 0 {
			dirs = append(dirs, dir)
		}
		count[dir]++
	}
	var out []string
	for i, dir := range dirs {
		if i == maxSources {
			out = append(out, fmt.Sprintf("and %d more folders", len(dirs)-maxSources))
			break
		}
		out = append(out, fmt.Sprintf("%s/ (%d files)", dir, count[dir]))
	}
	return out
}
