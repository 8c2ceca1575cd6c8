package report

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/internal/textfmt"
	"github.com/whyslow/whyslow/rules"
)

// Culprit is the replica or group a report singles out: the replica the
// verdict's hot-spot evidence names, or the group (model or other label
// value) whose verdict is the report's.
type Culprit struct {
	// Kind is "replica", "model" (a model_name group) or "label" (a
	// group of another label).
	Kind string `json:"kind"`
	// Name is the replica name, or the group's label value.
	Name string `json:"name"`
	// Share is the replica's share of arrivals (or completions) over its
	// fair share, as a multiple (2.4 = 2.4x its fair share); nil (null)
	// when not known, as for a group.
	Share *rules.Number `json:"share"`
	// Why says in one phrase what singles it out.
	Why string `json:"why"`
}

// replicaFacts are the facts whose evidence names or measures one replica.
var replicaFacts = []rules.FactID{rules.ReplicaLoadShareMax, rules.ReplicaShareMax, rules.ReplicaTTFTRatio}

// NamedCulprit returns the replica or group the report singles out, or
// nil. It reads what the engine decided and never re-judges: a replica
// is named only when the verdict's own evidence includes a per-replica
// fact whose source names it (replica_load_share_max's source begins
// "REPLICA: "), and a group only when the report is split and one group's
// verdict is the report's.
func (r *Report) NamedCulprit() *Culprit {
	if r == nil {
		return nil
	}
	if len(r.Groups) > 0 {
		if r.Verdict == rules.NoIncident || r.Verdict == rules.Undetermined {
			return nil
		}
		var hit *Report
		for _, g := range r.Groups {
			if g != nil && g.Verdict == r.Verdict {
				if hit != nil {
					return nil // several groups share the verdict
				}
				hit = g
			}
		}
		if hit == nil || len(hit.Group) != 1 {
			return nil
		}
		for k, v := range hit.Group {
			kind := "label"
			if k == "model_name" || k == "model" {
				kind = "model"
			}
			return &Culprit{Kind: kind, Name: v,
				Why: fmt.Sprintf("the verdict %s comes from %s=%s alone", r.Verdict, k, v)}
		}
	}
	f, ok := r.verdictFinding()
	if !ok {
		return nil
	}
	for _, e := range f.Evidence {
		if !slices.Contains(replicaFacts, e.ID) {
			continue
		}
		name := e.Fact.Replica
		if name == "" || !slices.Contains(r.Inputs.Replicas, name) {
			continue
		}
		why := fmt.Sprintf("takes %s its fair share of arrivals", textfmt.Multiple(e.Fact.Incident.Value))
		if e.ID == rules.ReplicaShareMax {
			why = fmt.Sprintf("takes %s its fair share of completions", textfmt.Multiple(e.Fact.Incident.Value))
		}
		share := rules.Number(e.Fact.Incident.Value)
		c := &Culprit{Kind: "replica", Name: name, Share: &share, Why: why}
		if e.ID == rules.ReplicaTTFTRatio {
			c.Why = fmt.Sprintf("its TTFT p95 is %s the fleet's", textfmt.Multiple(e.Fact.Incident.Value))
			if sp, ok := r.ttftSpread(); ok && sp.Replica == name {
				c.Why = fmt.Sprintf("its TTFT p95 %s is %s %s", fmtValue(sp.Worst, "s"), textfmt.Multiple(sp.Ratio()), othersMedian(sp))
			}
			c.Share = nil
		}
		return c
	}
	return nil
}

// verdictFinding returns the finding the verdict names.
func (r *Report) verdictFinding() (rules.Finding, bool) {
	return r.finding(rules.HypothesisID(r.Verdict))
}

// maxSummaryNumbers is the number of evidence numbers the summary shows.
const maxSummaryNumbers = 4

// compactEvidence is one evidence item in short: the rule's sentence up
// to its first clause, then the count with what it counts. The windows
// are said once in the summary, the metrics once in the signal table.
func compactEvidence(e rules.Evidence) string {
	text := leadClause(e)
	if !math.IsNaN(e.Fact.Incident.Count) && e.ID != "" {
		text += " (" + fmtCountOf(rules.Number(e.Fact.Incident.Count), countNoun(e.ID)) + ")"
	}
	return text
}

// summaryNumbers picks the numbers that carry the verdict: from the
// verdict's evidence, the per-replica facts (the culprit's), the first
// symptom number, then the facts that set this hypothesis apart (those
// no symptom shows: prompt length, prefill time, hit ratio...), then more
// symptom numbers. Without a hypothesis verdict (undetermined, no
// incident) it picks the first evidence of each symptom, present ones
// first.
func summaryNumbers(r *Report) []string {
	inSymptoms := map[rules.FactID]bool{}
	for _, s := range r.Symptoms {
		for _, e := range s.Evidence {
			inSymptoms[e.ID] = true
		}
	}
	var ev []rules.Evidence
	f, isHyp := r.verdictFinding()
	if isHyp {
		ev = f.Evidence
	} else {
		for _, present := range []bool{true, false} {
			for _, s := range r.Symptoms {
				if s.Present == present && len(s.Evidence) > 0 {
					ev = append(ev, s.Evidence[0])
				}
			}
		}
	}
	var out []string
	seen := map[rules.FactID]bool{}
	take := func(keep func(rules.Evidence) bool, limit int) {
		for _, e := range ev {
			if len(out) >= limit || len(out) >= maxSummaryNumbers {
				return
			}
			if e.ID == "" || seen[e.ID] || !keep(e) {
				continue
			}
			seen[e.ID] = true
			out = append(out, compactEvidence(e))
		}
	}
	all := func(rules.Evidence) bool { return true }
	take(func(e rules.Evidence) bool { return slices.Contains(replicaFacts, e.ID) }, 1)
	if isHyp {
		take(func(e rules.Evidence) bool { return inSymptoms[e.ID] }, len(out)+1)
		take(func(e rules.Evidence) bool { return !inSymptoms[e.ID] }, maxSummaryNumbers)
	}
	take(all, maxSummaryNumbers)
	return out
}

// windowsLine says the windows compared, with scrape counts and how they
// were chosen, in one line: the date is said once when both windows lie
// within one UTC day.
func windowsLine(r *Report) string {
	w := r.Windows
	if w.Incident.From == "lifetime" && (w.Baseline.From == "" || w.Baseline.From == "none") {
		at := "an unknown time"
		if !w.Incident.End.IsZero() {
			at = w.Incident.End.UTC().Format("2006-01-02 15:04:05Z")
		}
		return fmt.Sprintf("none to compare: %s at %s, values since process start",
			textfmt.Plural(max(w.Incident.Scrapes, 1), "scrape", "scrapes"), at)
	}
	b, i := w.Baseline, w.Incident
	sameDay := !b.Start.IsZero() && !i.End.IsZero() && b.From != "lifetime" && i.From != "lifetime" &&
		b.Start.UTC().Format(time.DateOnly) == i.End.UTC().Format(time.DateOnly)
	one := func(name string, wi WindowInfo) string {
		n := ""
		switch {
		case wi.Scrapes == 1:
			n = "1 scrape"
		case wi.Scrapes > 1:
			n = textfmt.Integer(float64(wi.Scrapes)) + " scrapes"
		}
		rng, timed := clockRange(wi, !sameDay)
		switch {
		case !timed && (sameDay || n == ""):
			return name + " " + wi.Span()
		case !timed:
			return name + " " + wi.Span() + ", " + n
		case sameDay && n != "":
			// "10:00–10:30Z (121 scrapes)": the date follows once.
			return name + " " + rng + " (" + n + ")"
		}
		paren := textfmt.Duration(wi.End.Sub(wi.Start))
		if n != "" {
			paren += ", " + n
		}
		return name + " " + rng + " (" + paren + ")"
	}
	s := one("baseline", b) + ", " + one("incident", i)
	if sameDay {
		s += " on " + b.Start.UTC().Format(time.DateOnly)
	}
	if cp := w.ChangePoint; cp != nil && cp.Used {
		s += "; change point " + cp.Time.UTC().Format("15:04Z")
		if moved := r.movedSignals(); len(moved) > 0 {
			var names []string
			for _, c := range moved[:min(2, len(moved))] {
				names = append(names, c.Series)
			}
			s += " (" + strings.Join(names, ", ") + " moved)"
		}
	} else if i.From != "" {
		s += "; " + i.From
	}
	return s
}

// evidenceLine says what evidence the report read, in one line.
func evidenceLine(r *Report) string {
	in := r.Inputs
	parts := []string{textfmt.Plural(len(in.Replicas), "replica", "replicas"), strings.Replace(textfmt.Plural(len(in.Sources), "source", "sources"), strconv.Itoa(len(in.Sources)), textfmt.Integer(float64(len(in.Sources))), 1)}
	for _, e := range in.Exporters {
		parts = append(parts, e.String())
	}
	vers := map[string]bool{}
	for _, v := range in.Versions {
		vers[v] = true
	}
	delete(vers, "none")
	if len(vers) == 1 {
		for v := range vers {
			parts = append(parts, "vLLM "+v)
		}
	} else if len(vers) > 1 {
		parts = append(parts, fmt.Sprintf("%d vLLM version ranges", len(vers)))
	}
	if in.Partial {
		parts = append(parts, "partial: some input could not be read")
	}
	if n := len(r.Warnings); n > 0 {
		parts = append(parts, textfmt.Plural(n, "warning", "warnings")+" (see Warnings)")
	}
	return strings.Join(parts, ", ")
}

// layoutSummary lays out the summary block that leads a report: the
// verdict with its confidence, the culprit, the numbers that carry it,
// the first mitigation and next check, the windows and the evidence.
//
// A report split into groups summarises the group its verdict comes from
// (the culprit), else the top level.
func layoutSummary(d *Document, r *Report) {
	d.heading(2, "Summary")
	var items []Item
	c := r.NamedCulprit()
	if c != nil {
		items = append(items, Item{Text: fmt.Sprintf("culprit: %s %s: %s", c.Kind, c.Name, c.Why), Class: "culprit"})
	}
	if c != nil && c.Kind != "replica" {
		for _, g := range r.Groups {
			if g != nil && g.Verdict == r.Verdict {
				win, ev := g.Windows, g.Inputs
				r = &Report{Verdict: g.Verdict, Hypotheses: g.Hypotheses, Symptoms: g.Symptoms, Notes: g.Notes,
					Candidates: g.Candidates, Windows: win, Inputs: ev, Warnings: r.Warnings, Settings: r.Settings}
				break
			}
		}
	}
	f, isHyp := r.verdictFinding()
	switch {
	case isHyp && f.ConfidenceReason != "":
		items = append(items, confidenceItem(r, f))
	case r.Verdict == rules.Undetermined && len(r.Candidates) > 0:
		var c []string
		for _, id := range r.Candidates {
			for _, h := range r.Hypotheses {
				if h.ID == id {
					c = append(c, fmt.Sprintf("%s (score %.2f)", id, h.Score))
				}
			}
		}
		items = append(items, Item{Text: "candidates (check these next, none is a verdict): " + strings.Join(c, ", ")})
	}
	items = append(items, Item{Text: "symptoms present: " + presentSymptoms(r) + unjudgedNote(r)})
	single := r.Windows.Incident.From == "lifetime" && r.Windows.Baseline.From != "lifetime"
	if single {
		items = append(items, lifetimeItems(r)...)
	}
	// The top of a split report leaves the numbers to each group's
	// section: its symptoms are the groups' union.
	if nums := summaryNumbers(r); len(nums) > 0 && (!single || isHyp) && len(r.Groups) == 0 {
		items = append(items, Item{Text: "numbers (incident vs baseline window):", Sub: textItems(nums)})
	}
	if isHyp {
		if len(f.Mitigations) > 0 {
			items = append(items, Item{Text: "mitigate first: " + f.Mitigations[0]})
		}
		if c, ok := firstCheck(f); ok {
			items = append(items, Item{Text: "check next: " + c})
		}
	}
	for _, n := range r.Notes {
		items = append(items, noteItem(r, n))
	}
	items = append(items, Item{Text: "windows: " + windowsLine(r)}, Item{Text: "evidence: " + evidenceLine(r)})
	d.list("summary", items)
}

// unjudgedNote is " (not judged: ttft, tail)" when symptoms could not be
// judged, so that "symptoms present: none" never reads as all clear.
func unjudgedNote(r *Report) string {
	ids := unjudgedSymptoms(r)
	if len(ids) == 0 {
		return ""
	}
	return " (not judged: " + strings.Join(ids, ", ") + ")"
}

// noteItem is a counter-case in the summary: "not an incident: ID" for
// the notes that say so; replica-slower says a replica is slower than the
// others under a fair share (a local cause, not a hot spot), which is no
// judgement of the incident, so it reads "note:" with the replica's TTFT
// p95 against the others' and, from one scrape, that the shares are
// lifetime totals.
func noteItem(r *Report, n rules.Note) Item {
	if n.ID != "replica-slower" {
		return Item{Text: "not an incident: " + n.ID}
	}
	text := "note: replica-slower: one replica is slower under a fair share of the load"
	if sp, ok := r.ttftSpread(); ok {
		text = fmt.Sprintf("note: replica-slower: %s's TTFT p95 %s is %s %s under a fair share of the load",
			sp.Replica, fmtValue(sp.Worst, "s"), textfmt.Multiple(sp.Ratio()), othersMedian(sp))
	}
	text += ": a local cause on that replica, not a hot spot"
	if r.Windows.Incident.From == "lifetime" {
		text += " (shares from lifetime totals, which one scrape cannot window)"
	}
	return Item{Text: text}
}

// confidenceItem says the verdict's confidence: its reason when nothing
// competes closely, else why in one line over one line per rival (the
// supported hypotheses with another mitigation that keep it from a clear
// lead), each with its score, "tied" when within the lead, and its
// decisive number (decisiveEvidence): what the ranked list shows.
func confidenceItem(r *Report, f rules.Finding) Item {
	head := "confidence: " + string(f.Confidence) + ": "
	if len(f.Rivals) == 0 {
		return Item{Text: head + f.ConfidenceReason}
	}
	lead := r.thresholds().Lead
	tied := func(rv rules.Rival) bool { return math.Abs(f.Score-rv.Score) < lead-1e-9 }
	why := fmt.Sprintf("score %.2f, ahead of hypotheses with other mitigations by less than twice the lead %g:", f.Score, lead)
	if slices.ContainsFunc(f.Rivals, tied) {
		why = fmt.Sprintf("score %.2f, tied (within the lead %g) with hypotheses with other mitigations; the evidence does not separate them:", f.Score, lead)
	}
	var sub []string
	for _, rv := range f.Rivals {
		g, ok := r.finding(rv.ID)
		if !ok {
			continue
		}
		how := fmt.Sprintf("%.2f behind", f.Score-rv.Score)
		if tied(rv) {
			how = "tied"
		}
		s := fmt.Sprintf("%s (score %.2f, %s)", rv.ID, rv.Score, how)
		if e, ok := decisiveEvidence(r, f, g); ok {
			s += ": " + leadClause(e)
		}
		sub = append(sub, s)
	}
	return Item{Text: head + why, Sub: textItems(sub)}
}

// decisiveEvidence is the number that sets rival g apart from the
// verdict's finding f: its first evidence with a fact that neither f's
// evidence nor a symptom shows, else the first f does not show, else its
// first with a fact.
func decisiveEvidence(r *Report, f, g rules.Finding) (rules.Evidence, bool) {
	shown := map[rules.FactID]bool{}
	for _, e := range f.Evidence {
		shown[e.ID] = true
	}
	inSymptoms := map[rules.FactID]bool{}
	for _, s := range r.Symptoms {
		for _, e := range s.Evidence {
			inSymptoms[e.ID] = true
		}
	}
	for _, keep := range []func(rules.Evidence) bool{
		func(e rules.Evidence) bool { return !shown[e.ID] && !inSymptoms[e.ID] },
		func(e rules.Evidence) bool { return !shown[e.ID] },
		func(rules.Evidence) bool { return true },
	} {
		for _, e := range g.Evidence {
			if e.ID != "" && keep(e) {
				return e, true
			}
		}
	}
	return rules.Evidence{}, false
}

// finding returns the finding of hypothesis id.
func (r *Report) finding(id rules.HypothesisID) (rules.Finding, bool) {
	for _, f := range r.Hypotheses {
		if f.ID == id {
			return f, true
		}
	}
	return rules.Finding{}, false
}

// firstCheck is the first next check still to do: an automated check
// that could not run, else a manual one, else the first.
func firstCheck(f rules.Finding) (string, bool) {
	for _, want := range []string{rules.CheckUnknown, rules.CheckManual} {
		for _, c := range f.NextChecks {
			if c.Outcome == want {
				return c.Text, true
			}
		}
	}
	if len(f.NextChecks) > 0 {
		return "[" + f.NextChecks[0].Outcome + "] " + f.NextChecks[0].Text, true
	}
	return "", false
}

// leadClause is an evidence item's lead (Evidence.Lead: the number and
// its change), which says so when the change lies within sampling noise
// (Effect.WithinSampling: the clause left out says why a rise is not
// counted).
func leadClause(e rules.Evidence) string {
	s := e.Lead
	if s == "" {
		s = e.Text
	}
	if e.Effect != nil && e.Effect.WithinSampling {
		s += ", within sampling noise"
	}
	return s
}

// lifetimeSignals are the latency signals a single scrape summarises,
// with their lifetime quantiles.
var lifetimeSignals = []string{"ttft", "tpot", "itl", "e2e"}

// lifetimeItems say what one scrape per replica (counters since process
// start) can and cannot show, its lifetime quantiles with bounds, the
// mean time per phase from the histograms' sums, and what to do next.
func lifetimeItems(r *Report) []Item {
	items := []Item{{Text: "one scrape per replica: every value is since its process started. It shows lifetime quantiles and " +
		"the mean time per phase; it cannot show a change over time, a baseline or a change point, so no hypothesis can be " +
		"singled out"}}
	var qs []string
	for _, id := range lifetimeSignals {
		sig, ok := signalByID(r.Signals.Fleet, catalogID(id))
		if !ok || sig.Incident == nil {
			continue
		}
		var parts []string
		for _, q := range sig.Incident.Quantiles {
			if q.Q == 0.5 || q.Q == 0.95 {
				parts = append(parts, fmtQ(q.Q)+" "+fmtQuantileValue(q, sig.Unit))
			}
		}
		if len(parts) > 0 {
			qs = append(qs, fmt.Sprintf("%s %s (%s)", id, strings.Join(parts, ", "), fmtCountOf(sig.Incident.Count, countNounSignal(id))))
		}
	}
	if len(qs) > 0 {
		items = append(items, Item{Text: "lifetime quantiles [bucket]:", Sub: textItems(qs)})
	}
	var phases []string
	for _, ph := range []struct{ id, name string }{{"queue_time", "queue"}, {"prefill_time", "prefill"}, {"decode_time", "decode"}} {
		sig, ok := signalByID(r.Signals.Fleet, catalogID(ph.id))
		if !ok || sig.Incident == nil || !finiteFloat(sig.Incident.Mean) {
			continue
		}
		phases = append(phases, ph.name+" "+fmtValue(float64(sig.Incident.Mean), "s"))
	}
	if len(phases) > 0 {
		items = append(items, Item{Text: "lifecycle, mean per request (from _sum / _count): " + strings.Join(phases, ", ")})
	}
	next := "next: take a second scrape 10-30 minutes later and diagnose both files together"
	if len(r.Settings.SLO) == 0 {
		next += ", or judge these values against targets with Options.SLO ttft_p95=2s,tpot_p95=80ms"
	}
	return append(items, Item{Text: next})
}

// catalogID converts a signal id of the report to the catalog's type.
func catalogID(id string) catalog.SignalID { return catalog.SignalID(id) }

// countNounSignal says what a latency histogram's count counts.
func countNounSignal(id string) string {
	if id == "itl" {
		return "token gaps"
	}
	return "requests"
}
