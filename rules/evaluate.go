package rules

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// HypothesisID names a row of the decision map (public contract).
type HypothesisID string

// Hypothesis ids, in the article's order.
const (
	// QueueSustained: arrivals exceed capacity or admission blocks; the
	// queue accumulates (case A).
	QueueSustained HypothesisID = "queue-sustained"
	// QueueBurst: bursts of arrivals queue and drain again; the p99 shows
	// what the mean hides (case A).
	QueueBurst HypothesisID = "queue-burst"
	// PrefillLongPrompts: a group of longer prompts costs prefill time
	// (case B).
	PrefillLongPrompts HypothesisID = "prefill-long-prompts"
	// PrefixCacheLoss: identical token prefixes are no longer reused
	// (case B).
	PrefixCacheLoss HypothesisID = "prefix-cache-loss"
	// DecodePressure: more active sequences slow every decode step (case C).
	DecodePressure HypothesisID = "decode-pressure"
	// KVPreemption: KV space runs out; requests are preempted and
	// recomputed (case D).
	KVPreemption HypothesisID = "kv-preemption"
	// OutsideGPU: work queues while the GPU idles: CPU, gateway, routing
	// or clients (case E).
	OutsideGPU HypothesisID = "outside-gpu"
	// ReplicaHotspot: one replica takes more than its share.
	ReplicaHotspot HypothesisID = "replica-hotspot"
	// ProxyNetwork: client TTFT well above server TTFT: proxy buffering
	// or network.
	ProxyNetwork HypothesisID = "proxy-network"
	// ClientAbandonment: clients give up on requests (timeouts, cancels)
	// that vLLM V1 counts nowhere, usually because of a queue.
	ClientAbandonment HypothesisID = "client-abandonment"
	// ReplicaRestarts: a replica restarts repeatedly (crash loop, OOM)
	// and loses the requests in flight.
	ReplicaRestarts HypothesisID = "replica-restarts"
	// ServerErrors: the server or its gateway answers 5xx or 429.
	ServerErrors HypothesisID = "server-errors"
)

// Status is the state of a finding (public JSON values).
type Status string

// Statuses.
const (
	// Supported: every support condition holds and no counter-evidence
	// does.
	Supported Status = "supported"
	// Contradicted: named counter-evidence holds, or a support condition
	// fails.
	Contradicted Status = "contradicted"
	// NotEvaluable: a fact a support condition needs is missing, and
	// nothing contradicts the hypothesis.
	NotEvaluable Status = "not-evaluable"
)

// Verdict is the outcome of an evaluation: the id of the primary
// hypothesis, NoIncident or Undetermined.
type Verdict string

// Verdicts other than hypothesis ids.
const (
	// NoIncident: every symptom was evaluated and none is present.
	NoIncident Verdict = "no-incident"
	// Undetermined: symptoms are present (or could not be evaluated) but
	// no hypothesis is supported.
	Undetermined Verdict = "undetermined"
)

// Rule is one row of the decision map.
type Rule struct {
	ID HypothesisID
	// Title names the hypothesis to check first.
	Title string
	// Observed is the article's observed combination of signals.
	Observed string
	// Source points at the article's section.
	Source string
	// Explains lists the symptoms the hypothesis can explain.
	Explains []SymptomID
	// Support are the conditions that must all hold.
	Support []Cond
	// Counter is the named counter-evidence: any that holds contradicts.
	Counter []Counter
	// Checks are the next checks, automated where a condition is given.
	Checks []Check
	// Mitigations stop the bleeding during the incident.
	Mitigations []string
	// RootCause are the steps that find the cause after recovery.
	RootCause []string
	// Prevention keeps it from happening again.
	Prevention []string
	// Experiment tests the hypothesis by changing one variable.
	Experiment Plan
	// Refines lists more general hypotheses this one explains: when both
	// are supported, this one ranks first.
	Refines []HypothesisID
	// ExplainedBy lists hypotheses that explain this one when a condition
	// holds, reversing a refinement: long outputs that fill the KV cache
	// make the preemptions a consequence of the decode load, not its
	// cause.
	ExplainedBy []Explained
	// Drivers name what drives the hypothesis when it is supported, for
	// the mitigation (e.g. longer answers or longer prompts filling the KV
	// cache): each whose condition holds adds "driver: TEXT" and its facts
	// to the finding's evidence. They do not change the score or status.
	Drivers []Driver
}

// Driver is one thing that may drive a hypothesis (see Rule.Drivers).
type Driver struct {
	// Text names the driver and its mitigation, in one sentence.
	Text string
	When Cond
}

// Explained says that hypothesis By explains the rule's hypothesis when
// When holds (and both are supported): By then ranks first, as if it
// refined it, and the rule no longer refines By.
type Explained struct {
	By   HypothesisID
	When Cond
	// Why says why, in one sentence, for the report.
	Why string
}

// Counter is named counter-evidence.
type Counter struct {
	// Text is the article's wording.
	Text string
	When Cond
}

// Check is a next check: automated when When is set and its facts are
// available, else the article's manual checklist item.
type Check struct {
	Text string
	When *Cond
	// Neutral checks are reported but do not count for or against the
	// hypothesis (e.g. "output length shifted": another explanation).
	Neutral bool
}

// NextCheck is a check as reported in a finding.
type NextCheck struct {
	Text string `json:"text"`
	// Outcome is "holds", "does-not-hold", "unknown" (automated but a
	// fact is missing) or "manual".
	Outcome  string     `json:"outcome"`
	Evidence []Evidence `json:"evidence,omitempty"`
	Missing  []Missing  `json:"missing,omitempty"`
}

// Check outcomes.
const (
	CheckHolds   = "holds"
	CheckFails   = "does-not-hold"
	CheckUnknown = "unknown"
	CheckManual  = "manual"
)

// Finding is the evaluation of one rule.
type Finding struct {
	ID     HypothesisID `json:"id"`
	Title  string       `json:"title"` // the rule's title
	Status Status       `json:"status"`
	// Score ranks findings of the same status by the strength of their
	// evidence, in 0..1: the rule's support conditions (weight 2 each,
	// times the strength of what holds: a mild change 0.5, moderate 0.75,
	// severe 1, a limit that holds 1) and its automated, non-neutral
	// checks (weight 1 each, when they hold), over the total weight. A
	// hypothesis that refines a supported one takes at least its score.
	Score float64 `json:"score"`
	// Confidence grades a supported finding: "high", "medium" or "low"
	// (empty for the others), with the reason; see Evaluate.
	Confidence       Confidence `json:"confidence,omitempty"`
	ConfidenceReason string     `json:"confidence_reason,omitempty"`
	// Rivals are the supported hypotheses with a different mitigation
	// that keep a supported finding from a clear lead: those less than
	// twice Thresholds.Lead behind it, or ahead of it; best first.
	Rivals []Rival `json:"rivals,omitempty"`
	// Explains lists the present symptoms the hypothesis explains.
	Explains []SymptomID `json:"explains"`
	// Evidence holds the facts behind the support conditions that hold.
	Evidence []Evidence `json:"evidence"`
	// CounterEvidence holds the named counter-evidence that holds (a
	// sentence item "counter-evidence: ..." followed by its facts), then
	// the facts behind support conditions that fail.
	CounterEvidence []Evidence `json:"counter_evidence"`
	// Missing lists the facts that kept the finding from being judged.
	Missing     []Missing   `json:"missing,omitempty"`
	NextChecks  []NextCheck `json:"next_checks"`
	Mitigations []string    `json:"mitigations"` // immediate, during the incident
	RootCause   []string    `json:"root_cause"`  // after recovery
	Prevention  []string    `json:"prevention"`  // so it does not recur
	Experiment  Plan        `json:"experiment"`  // the proposed single-variable test
}

// Rival is a supported hypothesis that competes with a finding: it names
// a different mitigation, whether or not the map relates the two.
type Rival struct {
	ID    HypothesisID `json:"id"`
	Score float64      `json:"score"`
	// Related is true when one of the two explains the other through
	// Refines (or ExplainedBy): the map orders them, the evidence may not.
	Related bool `json:"related"`
}

// Confidence grades how firmly the evidence singles out a supported
// hypothesis (public JSON values).
type Confidence string

// Confidence grades.
const (
	// High: strong evidence (score >= 0.7, and a change beyond mild)
	// and well ahead of every rival, a supported hypothesis with a
	// different mitigation (by at least twice Thresholds.Lead). A tie is
	// never high.
	High Confidence = "high"
	// Medium: enough evidence (score above 0.5: not every change only
	// mild), ahead of every unrelated rival by at least Thresholds.Lead,
	// and at most tied with a rival the map relates to it (a hot spot
	// tied with the sustained queue it explains).
	Medium Confidence = "medium"
	// Low: weak evidence, or an unrelated rival within Thresholds.Lead:
	// a next check, never a verdict.
	Low Confidence = "low"
)

// Note is a counter-case the map recognises that must not read as an
// incident, such as a high but healthy KV cache.
type Note struct {
	ID       string     `json:"id"`
	Text     string     `json:"text"`
	Evidence []Evidence `json:"evidence"`
}

// Result is the outcome of Evaluate.
type Result struct {
	Verdict  Verdict   `json:"verdict"`
	Symptoms []Symptom `json:"symptoms"`
	// Findings are ranked: supported first, then not-evaluable, then
	// contradicted; by score within a status, a hypothesis before the
	// more general ones it refines, then in map order.
	Findings []Finding `json:"hypotheses"`
	Notes    []Note    `json:"notes,omitempty"`
	// Candidates are the leading supported hypotheses when the verdict is
	// Undetermined (a weak lead, or two unrelated causes close together),
	// best first; empty otherwise.
	Candidates []HypothesisID `json:"candidates,omitempty"`
	// Warnings are non-fatal problems: unknown fact ids (ErrUnusedFact),
	// symptoms that could not be evaluated (ErrNotEvaluable).
	Warnings []Warning `json:"warnings,omitempty"`
}

// Evaluate judges the symptoms, evaluates every rule of the map against
// the facts and chooses the verdict:
//
//   - the top supported hypothesis, when a symptom is present and some
//     hypothesis is supported;
//   - Undetermined when a symptom is present but none is supported, or
//     when no symptom is present but some symptom could not be evaluated
//     (a missing signal never reads as "no incident");
//   - NoIncident when every symptom was evaluated and none is present.
//
// Evaluate does not modify f.
func Evaluate(f Facts, slo SLO, th Thresholds) Result {
	e := &env{facts: f, th: th}
	e.symptoms = Symptoms(f, slo, th)
	var res Result
	res.Symptoms = e.symptoms

	for _, id := range f.Sorted() {
		if _, ok := Info(id); !ok {
			res.Warnings = append(res.Warnings, Warning{ErrUnusedFact, "fact " + string(id) + " is not used by any rule"})
		}
	}

	rules := Map()
	order := map[HypothesisID]int{}
	for i, r := range rules {
		order[r.ID] = i
		res.Findings = append(res.Findings, evalRule(e, r))
	}
	edges, reversed := refinements(e, rules, res.Findings)
	rank(res.Findings, edges, reversed, order)

	for _, o := range observations() {
		if r := o.when.eval(e); r.out == holds {
			res.Notes = append(res.Notes, Note{ID: o.id, Text: o.text, Evidence: dedupe(r.ev)})
		}
	}

	present, allKnown := false, true
	for _, s := range e.symptoms {
		present = present || s.Present
		if !s.Evaluable {
			allKnown = false
			res.Warnings = append(res.Warnings, Warning{ErrNotEvaluable, "symptom " + string(s.ID) + " cannot be evaluated: " + missingText(s.Missing)})
		}
	}
	if e.e2e().route == routeWorkload {
		res.Notes = append(res.Notes, Note{ID: "longer-answers", Text: "E2E latency rose because answers got longer at an unchanged time per token: a workload change, not a slowdown; look at output lengths per workload type", Evidence: dedupe(e.e2e().res.ev)})
	}
	lead := present && len(res.Findings) > 0 && res.Findings[0].Status == Supported
	if lead {
		lead = grade(res.Findings, edges, th)
		if !lead {
			for _, f := range res.Findings {
				if f.Status == Supported {
					res.Candidates = append(res.Candidates, f.ID)
				}
			}
			if len(res.Candidates) > 3 {
				res.Candidates = res.Candidates[:3]
			}
		}
	}
	switch {
	case lead:
		res.Verdict = Verdict(res.Findings[0].ID)
	case present || !allKnown:
		res.Verdict = Undetermined
	default:
		res.Verdict = NoIncident
	}
	return res
}

func missingText(ms []Missing) string {
	s := ""
	for i, m := range ms {
		if i > 0 {
			s += "; "
		}
		s += m.String()
	}
	return s
}

func evalRule(e *env, r Rule) Finding {
	fd := Finding{
		ID: r.ID, Title: r.Title,
		Evidence: []Evidence{}, CounterEvidence: []Evidence{}, Explains: []SymptomID{},
		Mitigations: r.Mitigations, RootCause: r.RootCause, Prevention: r.Prevention,
		Experiment: r.Experiment,
	}
	for _, id := range r.Explains {
		if e.symptom(id).Present {
			fd.Explains = append(fd.Explains, id)
		}
	}
	var weight, held float64
	failed, unknownSupport := false, false
	for _, c := range r.Support {
		res := c.eval(e)
		weight += 2
		switch res.out {
		case holds:
			held += 2 * res.strength
			fd.Evidence = append(fd.Evidence, res.ev...)
		case fails:
			failed = true
			fd.CounterEvidence = append(fd.CounterEvidence, res.ev...)
		default:
			unknownSupport = true
			fd.Missing = append(fd.Missing, res.missing...)
		}
	}
	// Named counter-evidence first, then the support that failed.
	var named []Evidence
	for _, c := range r.Counter {
		res := c.When.eval(e)
		if res.out == holds {
			named = append(named, labelled("counter-evidence", c.Text))
			named = append(named, res.ev...)
		}
	}
	countered := len(named) > 0
	fd.CounterEvidence = append(named, fd.CounterEvidence...)
	for _, ch := range r.Checks {
		nc := NextCheck{Text: ch.Text, Outcome: CheckManual}
		if ch.When != nil {
			res := ch.When.eval(e)
			nc.Evidence, nc.Missing = res.ev, res.missing
			switch res.out {
			case holds:
				nc.Outcome = CheckHolds
			case fails:
				nc.Outcome = CheckFails
			default:
				nc.Outcome = CheckUnknown
			}
			if !ch.Neutral {
				weight++
				if res.out == holds {
					held++
				}
			}
		}
		fd.NextChecks = append(fd.NextChecks, nc)
	}
	switch {
	case countered || failed:
		fd.Status = Contradicted
	case unknownSupport:
		fd.Status = NotEvaluable
	default:
		fd.Status = Supported
	}
	if weight > 0 {
		fd.Score = held / weight
	}
	if fd.Status == Supported {
		for _, d := range r.Drivers {
			if res := d.When.eval(e); res.out == holds {
				fd.Evidence = append(fd.Evidence, textEvidence("driver: "+d.Text))
				fd.Evidence = append(fd.Evidence, res.ev...)
			}
		}
	}
	fd.Evidence = dedupe(fd.Evidence)
	fd.CounterEvidence = dedupe(fd.CounterEvidence)
	return fd
}

// dedupe drops evidence items identical in fact and text to an earlier
// one, keeping the order.
func dedupe(ev []Evidence) []Evidence {
	type key struct {
		f FactID
		t string
	}
	seen := map[key]bool{}
	out := ev[:0:0]
	for _, e := range ev {
		k := key{e.ID, e.Text}
		if !seen[k] {
			seen[k] = true
			out = append(out, e)
		}
	}
	if out == nil {
		out = []Evidence{}
	}
	return out
}

var statusRank = map[Status]int{Supported: 0, NotEvaluable: 1, Contradicted: 2}

// refinements returns, for each hypothesis, the hypotheses it explains:
// the rules' Refines, with every ExplainedBy whose condition holds (both
// findings supported) reversing its edge.
//
// The reversal may close a cycle (kv-preemption explains a queue that
// explains decode pressure that now explains kv-preemption): scores then
// flow round it to the same value, and rank breaks the tie in favour of the
// hypothesis that explains by a reversal (its rule said why).
func refinements(e *env, rules []Rule, fs []Finding) (map[HypothesisID][]HypothesisID, map[HypothesisID]bool) {
	supported := map[HypothesisID]bool{}
	for _, f := range fs {
		supported[f.ID] = f.Status == Supported
	}
	edges := map[HypothesisID][]HypothesisID{}
	reversed := map[HypothesisID]bool{}
	for _, r := range rules {
		edges[r.ID] = append([]HypothesisID(nil), r.Refines...)
	}
	for _, r := range rules {
		for _, x := range r.ExplainedBy {
			if !supported[r.ID] || !supported[x.By] || x.When.eval(e).out != holds {
				continue
			}
			var keep []HypothesisID
			for _, g := range edges[r.ID] {
				if g != x.By {
					keep = append(keep, g)
				}
			}
			edges[r.ID] = keep
			edges[x.By] = append(edges[x.By], r.ID)
			reversed[x.By] = true
			for i := range fs {
				if fs[i].ID == x.By {
					fs[i].Evidence = append(fs[i].Evidence, textEvidence(fmt.Sprintf("explains %s: %s", r.ID, x.Why)))
				}
			}
		}
	}
	return edges, reversed
}

// rank orders findings in place: by status, then score (descending), then
// refinement (a tied finding that explains the other first, else the one
// that explains more supported findings), then map order. A supported finding that refines another
// supported finding first takes at least its score, so that the specific
// explanation (a hot replica) ranks above the general one (a sustained
// queue) it explains.
func rank(fs []Finding, edges map[HypothesisID][]HypothesisID, reversed map[HypothesisID]bool, order map[HypothesisID]int) {
	byID := map[HypothesisID]*Finding{}
	for i := range fs {
		byID[fs[i].ID] = &fs[i]
	}
	ids := make([]HypothesisID, 0, len(edges))
	for id := range edges {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return order[ids[i]] < order[ids[j]] })
	refines := map[HypothesisID]int{}
	// Scores flow up the refinement graph; two passes reach the top of
	// chains such as hot spot > queue > decode.
	for range 2 {
		for _, id := range ids {
			a := byID[id]
			if a == nil {
				continue
			}
			for _, g := range edges[id] {
				b := byID[g]
				if a.Status == Supported && b != nil && b.Status == Supported {
					if b.Score > a.Score {
						a.Score = b.Score
					}
				}
			}
		}
	}
	for _, id := range ids {
		for _, g := range edges[id] {
			if a, b := byID[id], byID[g]; a != nil && b != nil && a.Status == Supported && b.Status == Supported {
				refines[id]++
			}
		}
	}
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if statusRank[a.Status] != statusRank[b.Status] {
			return statusRank[a.Status] < statusRank[b.Status]
		}
		if a.Score != b.Score {
			return a.Score > b.Score
		}
		if reversed[a.ID] != reversed[b.ID] {
			return reversed[a.ID]
		}
		// Tied, and one explains the other: the specific one first,
		// however many other findings the general one explains.
		if a.Status == Supported && b.Status == Supported {
			ab, ba := reaches(edges, a.ID, b.ID), reaches(edges, b.ID, a.ID)
			if ab != ba {
				return ab
			}
		}
		if refines[a.ID] != refines[b.ID] {
			return refines[a.ID] > refines[b.ID]
		}
		return order[a.ID] < order[b.ID]
	})
}

// observation is a counter-case that must not read as an incident.
type observation struct {
	id, title, text string
	when            Cond
}

// grade sets the confidence of every supported finding (ranked), with
// its rivals, and reports whether the first may be the verdict: its
// confidence is not low.
//
// A finding's rivals are the other supported hypotheses that name a
// different mitigation (see SameMitigation), whether or not the map relates
// the two through Refines: a hypothesis the verdict explains still
// competes when acting on it means doing something else. The margin over
// the best rival sets the grade:
//
//   - high: score >= 0.7, a change beyond mild in its evidence
//     (strongChange), and at least 2*th.Lead ahead of every rival;
//   - medium: score above 0.5, at least th.Lead ahead of every unrelated
//     rival, and no related rival (one explains the other) th.Lead or
//     more ahead of it: a tie with a related rival is medium, ranked by
//     the map's refinement, not separated by the evidence;
//   - low otherwise: weak evidence, or an unrelated rival within
//     th.Lead (a tie the map does not order).
//
// A tie (within th.Lead) is therefore never high.
func grade(fs []Finding, explains map[HypothesisID][]HypothesisID, th Thresholds) bool {
	related := func(a, b HypothesisID) bool {
		return reaches(explains, a, b) || reaches(explains, b, a)
	}
	// ahead reports whether margin m is at least lim, forgiving the
	// rounding of scores that are ratios of small sums.
	ahead := func(m, lim float64) bool { return m >= lim-1e-9 }
	for i := range fs {
		f := &fs[i]
		if f.Status != Supported {
			continue
		}
		f.Rivals = nil
		unrelated, rel := 1.0, 1.0 // margins over the best rival of each kind
		var closest *Rival
		for j := range fs {
			g := fs[j]
			if j == i || g.Status != Supported || SameMitigation(*f, g) {
				continue
			}
			rv := Rival{ID: g.ID, Score: g.Score, Related: related(f.ID, g.ID)}
			m := f.Score - g.Score
			if rv.Related {
				rel = min(rel, m)
			} else {
				unrelated = min(unrelated, m)
			}
			if !ahead(m, 2*th.Lead) {
				f.Rivals = append(f.Rivals, rv)
			}
			if closest == nil || g.Score > closest.Score {
				closest = &rv
			}
		}
		sort.SliceStable(f.Rivals, func(a, b int) bool { return f.Rivals[a].Score > f.Rivals[b].Score })
		switch {
		case f.Score >= 0.7 && strongChange(*f) && ahead(unrelated, 2*th.Lead) && ahead(rel, 2*th.Lead):
			f.Confidence = High
		case f.Score > 0.5 && ahead(unrelated, th.Lead) && !ahead(-rel, th.Lead):
			// Above 0.5: evidence that is only ever mild is a weak lead.
			f.Confidence = Medium
		default:
			f.Confidence = Low
		}
		f.ConfidenceReason = confidenceReason(*f, closest, th, ahead)
	}
	return fs[0].Confidence != Low
}

// confidenceReason says why f has its confidence, naming every rival
// within th.Lead of it (the ties) or, failing that, the closest rival.
func confidenceReason(f Finding, closest *Rival, th Thresholds, ahead func(m, lim float64) bool) string {
	if f.Score <= 0.5 {
		return fmt.Sprintf("weak evidence (score %.2f, not above 0.50: every change only mild)", f.Score)
	}
	mild := ""
	if f.Score >= 0.7 && !strongChange(f) {
		mild = "; every change in its evidence is mild: not high"
	}
	if closest == nil {
		return fmt.Sprintf("score %.2f, no competing supported hypothesis", f.Score) + mild
	}
	var tied, unrelatedTied []string
	for _, r := range f.Rivals {
		if ahead(math.Abs(f.Score-r.Score), th.Lead) {
			continue
		}
		s := fmt.Sprintf("%s (%.2f)", r.ID, r.Score)
		tied = append(tied, s)
		if !r.Related {
			unrelatedTied = append(unrelatedTied, s)
		}
	}
	switch {
	case f.Score < closest.Score && !ahead(closest.Score-f.Score, th.Lead):
		return fmt.Sprintf("tied with %s within the lead %g: the evidence does not separate them", strings.Join(tied, ", "), th.Lead)
	case f.Score < closest.Score:
		return fmt.Sprintf("%s leads it (score %.2f vs %.2f)", closest.ID, closest.Score, f.Score)
	case len(unrelatedTied) > 0:
		return fmt.Sprintf("score %.2f, tied with %s within the lead %g, and the map does not order them", f.Score, strings.Join(tied, ", "), th.Lead)
	case len(tied) > 0:
		return fmt.Sprintf("score %.2f, tied with %s within the lead %g, each with another mitigation: the evidence does not separate them", f.Score, strings.Join(tied, ", "), th.Lead)
	case !ahead(f.Score-closest.Score, 2*th.Lead):
		return fmt.Sprintf("score %.2f, ahead of %s (%.2f) by %.2f, less than twice the lead %g", f.Score, closest.ID, closest.Score, f.Score-closest.Score, th.Lead)
	}
	return fmt.Sprintf("score %.2f, ahead of %s (%.2f) by %.2f", f.Score, closest.ID, closest.Score, f.Score-closest.Score) + mild
}

// strongChange reports whether f's evidence holds a change between the
// windows graded moderate or severe: a verdict whose every change is mild
// (+20-40%, the practical minimum) is not strong evidence, whatever its
// score.
func strongChange(f Finding) bool {
	for _, e := range f.Evidence {
		if e.Effect != nil && (e.Effect.Severity == SeverityModerate || e.Effect.Severity == SeveritySevere) {
			return true
		}
	}
	return false
}

// reaches reports whether a explains b through the Refines graph.
func reaches(g map[HypothesisID][]HypothesisID, a, b HypothesisID) bool {
	seen := map[HypothesisID]bool{}
	var walk func(HypothesisID) bool
	walk = func(x HypothesisID) bool {
		if seen[x] {
			return false
		}
		seen[x] = true
		for _, y := range g[x] {
			if y == b || walk(y) {
				return true
			}
		}
		return false
	}
	return walk(a)
}
