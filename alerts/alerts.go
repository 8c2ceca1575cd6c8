// Package alerts writes Prometheus recording and alerting rules from the
// decision map of package rules: prevention from the same map that
// explains an incident afterwards.
//
// Every fact the map reads becomes a recording rule (fleet quantiles from
// buckets summed per group, never averages of per-pod quantiles; rates;
// gauge statistics over the rate window; means from _sum/_count), with a
// baseline twin shifted by Options.BaselineOffset. Every symptom becomes
// an alert, and every hypothesis an alert whose expression is its
// supporting combination with its counter-evidence excluded, translated
// condition by condition in three-valued logic (holds, fails, unknown),
// each quantile guarded by the library's minimum observation count and
// the alert by a `for:` duration.
//
// What PromQL cannot do is said, not hidden: "beyond noise" (the
// library's resampling of intervals) has no PromQL form, so the alerts
// judge changes by the practical minimum ratio (Thresholds.Rise) and rely
// on the minimum count and `for:` as the noise guard; facts without a
// PromQL expression (RuleFile.NotExpressible) make the conditions that
// read them unknown, and a hypothesis whose support needs one gets no
// alert (RuleFile.Excluded).
//
// The package imports only rules (the map) and catalog (the metric names);
// it reads no evidence, so it must not import snapshot, diagnose or report.
package alerts

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/rules"
)

// Options configure Generate. Start from DefaultOptions.
type Options struct {
	// SLO targets: a symptom with a target alerts on the target, else on
	// a rise over the baseline.
	SLO rules.SLO
	// Thresholds are the decision map's limits (rules.DefaultThresholds).
	Thresholds rules.Thresholds
	// By are the labels every fleet expression keeps apart (default
	// model_name).
	By []string
	// Replica is the label that names a replica (default pod).
	Replica string
	// For is the alerts' `for:` duration (default 10m).
	For time.Duration
	// RateWindow is the window of rate(), increase() and the gauge
	// statistics (default 5m).
	RateWindow time.Duration
	// ShortWindow is the window of the short-interval arrival peaks of
	// the legacy burst records (default 1m; at least two scrape
	// intervals).
	ShortWindow time.Duration
	// ScrapeInterval is the targets' scrape interval (default 15s): the
	// queue's shape (bursts, arrival dispersion, the share of scrapes
	// with requests waiting) is measured per scrape interval, as whyslow
	// diagnose measures it. A value shorter than the real interval makes
	// those facts unknown where irate finds one sample; a longer one
	// blurs bursts.
	ScrapeInterval time.Duration
	// Hold is how long an alert's condition counts as holding after it
	// was last seen (max_over_time over a subquery), so that `for:` is
	// not reset by one evaluation at which a burst left the rate window
	// (default: the rate window; 0 disables). Bursts recur: a 5m window
	// between two of them looks healthy.
	Hold time.Duration
	// BaselineOffset is how far back the baseline lies (default 1d): a
	// live alert has no incident window, so "rises" compares with the
	// same expression shifted by this offset.
	BaselineOffset time.Duration
	// VLLMVersion selects the metric names: "" for V1 names with the V0
	// names where they differ (and only the latency bucket bounds both
	// share), "V0", "V1", or a release such as "0.9.2".
	VLLMVersion string
	// Catalog supplies the metric names (catalog.Default() when zero).
	Catalog *catalog.Catalog
}

// DefaultOptions are the options of "whyslow alerts" without flags.
var DefaultOptions = Options{
	Thresholds:     rules.DefaultThresholds,
	By:             []string{"model_name"},
	Replica:        "pod",
	For:            10 * time.Minute,
	RateWindow:     5 * time.Minute,
	ShortWindow:    time.Minute,
	ScrapeInterval: 15 * time.Second,
	Hold:           5 * time.Minute,
	BaselineOffset: 24 * time.Hour,
}

// RuleFile is a Prometheus rule file (the YAML `promtool check rules`
// reads) plus what could not be expressed.
type RuleFile struct {
	Groups []Group `yaml:"groups"`
	// NotExpressible lists the facts the map reads that have no PromQL
	// form, and why; conditions on them are unknown in the alerts.
	NotExpressible []Note `yaml:"-"`
	// Excluded lists the hypotheses that get no alert because their
	// support needs a fact without PromQL form.
	Excluded []Note `yaml:"-"`
	// Inhibit are the Alertmanager inhibit rules of the alerts
	// (AlertmanagerYAML): a specific alert silences the general one it
	// refines where the general one adds no other mitigation.
	Inhibit []InhibitRule `yaml:"-"`
	// NotInhibited lists the refinements left uninhibited, and why.
	NotInhibited []Note `yaml:"-"`
}

// Note is an item left out, with the reason.
type Note struct {
	ID     string
	Reason string
}

// Group is one rule group.
type Group struct {
	Name  string `yaml:"name"`
	Rules []Rule `yaml:"rules"`
}

// Rule is a recording rule (Record) or an alerting rule (Alert).
type Rule struct {
	Record      string            `yaml:"record,omitempty"`
	Alert       string            `yaml:"alert,omitempty"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for,omitempty"`
	Labels      map[string]string `yaml:"labels,omitempty"`
	Annotations map[string]string `yaml:"annotations,omitempty"`
}

var labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// NoiseNote is the caveat every alert carries.
const NoiseNote = "PromQL cannot test whether a change is beyond noise (whyslow resamples intervals); " +
	"this alert uses the practical minimum ratio plus the minimum observation count and `for:` as the noise guard. " +
	"Confirm offline with whyslow diagnose on the preserved evidence."

// Generate returns the rule file for the decision map under opts. It is
// pure: the same options give the same file.
func Generate(opts Options) (RuleFile, error) {
	if opts.Thresholds == (rules.Thresholds{}) {
		opts.Thresholds = rules.DefaultThresholds
	}
	if len(opts.By) == 0 {
		return RuleFile{}, errors.New("alerts: By needs at least one label (e.g. model_name)")
	}
	if opts.Replica == "" {
		opts.Replica = "pod"
	}
	for _, l := range append([]string{opts.Replica}, opts.By...) {
		if !labelName.MatchString(l) {
			return RuleFile{}, fmt.Errorf("alerts: %q is not a label name ([a-zA-Z_][a-zA-Z0-9_]*)", l)
		}
	}
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{{"rate window", &opts.RateWindow, DefaultOptions.RateWindow}, {"short window", &opts.ShortWindow, DefaultOptions.ShortWindow},
		{"scrape interval", &opts.ScrapeInterval, DefaultOptions.ScrapeInterval},
		{"for", &opts.For, -1}, {"hold", &opts.Hold, -1}, {"baseline offset", &opts.BaselineOffset, DefaultOptions.BaselineOffset}} {
		if *d.v < 0 {
			return RuleFile{}, fmt.Errorf("alerts: %s %v is negative", d.name, *d.v)
		}
		if *d.v == 0 && d.def > 0 {
			*d.v = d.def
		}
	}
	if opts.RateWindow < 2*opts.ScrapeInterval {
		return RuleFile{}, fmt.Errorf("alerts: rate window %v holds fewer than two scrape intervals of %v", opts.RateWindow, opts.ScrapeInterval)
	}
	if opts.BaselineOffset < opts.RateWindow {
		return RuleFile{}, fmt.Errorf("alerts: baseline offset %v is shorter than the rate window %v: the windows would overlap", opts.BaselineOffset, opts.RateWindow)
	}
	cat := catalog.Default()
	if opts.Catalog != nil {
		cat = *opts.Catalog
	}
	nm, err := newNames(cat, opts.VLLMVersion)
	if err != nil {
		return RuleFile{}, err
	}
	by := strings.Join(opts.By, ", ")
	g := &gen{opt: opts, names: nm, by: by, byReplica: by + ", " + opts.Replica,
		w: dur(opts.RateWindow), short: dur(opts.ShortWindow), step: dur(opts.ShortWindow), scrape: dur(opts.ScrapeInterval),
		off: " offset " + dur(opts.BaselineOffset), shortSeconds: opts.ShortWindow.Seconds()}
	tr := &translator{th: opts.Thresholds, slo: opts.SLO, need: newNeed(nm)}

	var alerts []Rule
	syms := map[rules.SymptomID]tri{}
	for _, s := range rules.SymptomIDs() {
		r := tr.symptom(s)
		syms[s] = r
		if r.holds == "" {
			continue
		}
		// Under an SLO, nothing fires while it holds: a symptom alert
		// needs one of its targets exceeded (any target when it has none).
		expr := symName(s, "present")
		if gate := tr.sloGate([]rules.SymptomID{s}); gate != "" {
			expr = and(expr, gate)
		}
		alerts = append(alerts, symptomAlert(s, g.hold(expr), opts))
	}
	var out RuleFile
	for _, h := range rules.Map() {
		var support []string
		var unknown []string
		for _, c := range h.Support {
			r := tr.cond(c)
			if r.holds == "" {
				unknown = append(unknown, c.Describe(opts.Thresholds))
			}
			support = append(support, r.holds)
		}
		var counters []string
		for _, c := range h.Counter {
			counters = append(counters, tr.cond(c.When).holds)
		}
		expr := and(support...)
		if expr == "" {
			out.Excluded = append(out.Excluded, Note{string(h.ID), "its support cannot hold in PromQL: " + strings.Join(unknown, "; ")})
			continue
		}
		expr = unless(expr, or(counters...))
		// The map's precedence: a hypothesis whose observed combination
		// needs a symptom normal (decode pressure: TTFT normal) does not
		// alert while that symptom is present or unknown.
		for _, s := range needsAbsent[h.ID] {
			if syms[s].fails == "" {
				expr = ""
				break
			}
			expr = and(expr, symName(s, "absent"))
		}
		if expr == "" {
			out.Excluded = append(out.Excluded, Note{string(h.ID), "the symptom it needs normal cannot be judged in PromQL"})
			continue
		}
		gate := tr.sloGate(h.Explains)
		if gate != "" {
			expr = and(expr, gate)
		}
		alerts = append(alerts, hypothesisAlert(h, g.hold(expr), gate != "", opts))
	}

	// Recording rules: facts (value, baseline, counts), then symptoms.
	var rec []Rule
	order := append([]rules.FactID(nil), tr.need.order...)
	for _, id := range order {
		fe := factTable[id]
		rec = append(rec, Rule{Record: RecordName(id), Expr: fe.expr(g, "")})
		if fe.legacy != nil {
			rec = append(rec, Rule{Record: legacyName(id), Expr: fe.legacy(g, "")})
		}
		if tr.need.base[id] {
			rec = append(rec, Rule{Record: baseName(id), Expr: fe.expr(g, g.off)})
			if fe.legacy != nil {
				rec = append(rec, Rule{Record: legacyName(id) + ":baseline", Expr: fe.legacy(g, g.off)})
			}
		}
		if fe.count != nil && rules.MinSamples(id, opts.Thresholds) > 0 {
			rec = append(rec, Rule{Record: countName(id), Expr: fe.count(g, "")})
			if tr.need.base[id] {
				rec = append(rec, Rule{Record: baseCountName(id), Expr: fe.count(g, g.off)})
			}
		}
	}
	rec = append(rec, g.replicaRules()...)
	for _, s := range rules.SymptomIDs() {
		r := syms[s]
		if r.holds != "" {
			rec = append(rec, Rule{Record: symName(s, "present"), Expr: fmt.Sprintf("group by (%s) (%s)", by, r.holds)})
		}
		if r.fails != "" {
			rec = append(rec, Rule{Record: symName(s, "absent"), Expr: fmt.Sprintf("group by (%s) (%s)", by, r.fails)})
		}
	}
	out.Groups = []Group{{Name: "whyslow-recording", Rules: rec}, {Name: "whyslow-alerts", Rules: alerts}}
	names := map[string]bool{}
	for _, a := range alerts {
		names[a.Alert] = true
	}
	out.Inhibit, out.NotInhibited = inhibitions(names, opts.By)
	for id, why := range tr.need.notExpressible {
		out.NotExpressible = append(out.NotExpressible, Note{string(id), why})
	}
	sort.Slice(out.NotExpressible, func(i, j int) bool { return out.NotExpressible[i].ID < out.NotExpressible[j].ID })
	return out, nil
}

// needsAbsent lists, per hypothesis, the symptoms the map's observed
// combination needs normal: decode pressure is "TTFT normal + TPOT/ITL
// up"; with TTFT up, the queue, prefill or KV hypotheses explain the
// slower decode.
var needsAbsent = map[rules.HypothesisID][]rules.SymptomID{
	rules.DecodePressure: {rules.SymptomTTFT},
}

// replicaRules are per-replica views for hot spots (dashboards; the
// alerts read their fleet maxima).
func (g *gen) replicaRules() []Rule {
	return []Rule{
		{Record: "whyslow:replica_ttft_p95", Expr: g.quantileBy(catalog.SignalTTFT, 0.95, "", g.byReplica)},
		{Record: "whyslow:replica_load_share", Expr: g.loadShare("")},
		{Record: "whyslow:replica_waiting", Expr: g.gaugeAggBy("sum", catalog.SignalWaiting, g.byReplica)},
	}
}

// AlertName returns the alert name of a hypothesis or symptom id:
// "kv-preemption" -> "WhyslowKvPreemption".
func AlertName(id string) string {
	var b strings.Builder
	b.WriteString("Whyslow")
	for _, part := range strings.FieldsFunc(id, func(r rune) bool { return r == '-' || r == '_' }) {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

// hold keeps expr holding for opts.Hold after it was last seen.
func (g *gen) hold(expr string) string {
	if g.opt.Hold <= 0 {
		return expr
	}
	// group drops the metric name, which differs between the parts of an
	// "or" over time.
	return fmt.Sprintf("max_over_time((group by (%s) (%s))[%s:%s])", g.by, expr, dur(g.opt.Hold), g.step)
}

func symptomAlert(s rules.SymptomID, expr string, opts Options) Rule {
	basis := "a rise of at least " + num(opts.Thresholds.Rise) + "x over the same expression " + dur(opts.BaselineOffset) + " earlier"
	sev := "warning"
	if t := sloOf(s, opts.SLO); t != "" {
		basis, sev = "the SLO target ("+t+")", "critical"
	} else if t := sloText(nil, opts.SLO); t != "" {
		basis, sev = basis+", while an SLO target is exceeded ("+t+")", "critical"
	}
	return Rule{
		Alert: AlertName("symptom-" + string(s)),
		Expr:  expr,
		For:   dur(opts.For),
		Labels: map[string]string{
			"severity": sev,
			"symptom":  string(s),
		},
		Annotations: map[string]string{
			"summary":     symptomSummary[s],
			"description": "Judged as whyslow judges the symptom, against " + basis + ", with at least " + num(opts.Thresholds.MinSamples) + " observations (" + num(opts.Thresholds.MinSamplesTail) + " for p99) in the " + dur(opts.RateWindow) + " window. The hypothesis alerts say what to check first.",
			"noise":       NoiseNote,
			"runbook":     "Preserve the evidence before restarting pods (counters, /metrics dumps or the TSDB), then run: whyslow diagnose --incident START/END ./evidence/",
		},
	}
}

var symptomSummary = map[rules.SymptomID]string{
	rules.SymptomTTFT:        "first token late (TTFT p95 up)",
	rules.SymptomTPOT:        "generation slow after the first token (TPOT/ITL p95 up)",
	rules.SymptomTail:        "only some requests slow (p99 up, p50 not)",
	rules.SymptomReliability: "requests not completing (errors, aborts, HTTP 5xx)",
}

// sloText names the SLO targets of the symptoms, else every target.
func sloText(ss []rules.SymptomID, slo rules.SLO) string {
	var parts []string
	for _, s := range ss {
		if t := sloOf(s, slo); t != "" {
			parts = append(parts, t)
		}
	}
	if len(parts) == 0 {
		for _, s := range rules.SymptomIDs() {
			if t := sloOf(s, slo); t != "" {
				parts = append(parts, t)
			}
		}
	}
	return strings.Join(parts, ", ")
}

func sloOf(s rules.SymptomID, slo rules.SLO) string {
	var parts []string
	add := func(name string, v float64) {
		if v > 0 {
			parts = append(parts, fmt.Sprintf("%s <= %g", name, v))
		}
	}
	switch s {
	case rules.SymptomTTFT:
		add("ttft_p95", slo.TTFTP95)
	case rules.SymptomTPOT:
		add("tpot_p95", slo.TPOTP95)
		add("itl_p95", slo.ITLP95)
	case rules.SymptomTail:
		add("ttft_p99", slo.TTFTP99)
		add("e2e_p99", slo.E2EP99)
	case rules.SymptomReliability:
		add("error_share", slo.ErrorShare)
	}
	return strings.Join(parts, ", ")
}

// hypothesisAlert is the alert of hypothesis h; sloGated says its
// expression needs an SLO target exceeded, which makes it critical like
// the symptom alerts on the SLO.
func hypothesisAlert(h rules.Rule, expr string, sloGated bool, opts Options) Rule {
	th := opts.Thresholds
	var ev, ce, checks []string
	for _, c := range h.Support {
		ev = append(ev, c.Describe(th))
	}
	for _, c := range h.Counter {
		ce = append(ce, c.Text+" ("+c.When.Describe(th)+")")
	}
	for _, c := range h.Checks {
		checks = append(checks, c.Text)
	}
	syms := make([]string, len(h.Explains))
	for i, s := range h.Explains {
		syms[i] = string(s)
	}
	mit := ""
	if len(h.Mitigations) > 0 {
		mit = h.Mitigations[0]
	}
	runbook := "Mitigate: " + strings.Join(h.Mitigations, "; ") + ". Root cause: " + strings.Join(h.RootCause, "; ") +
		". Preserve the evidence before restarting pods, then run: whyslow diagnose --incident START/END ./evidence/ (experiment: change " +
		h.Experiment.Change.Name + " from " + h.Experiment.Change.From + " to " + h.Experiment.Change.To + ", one variable at a time)."
	sev := "warning"
	if sloGated {
		sev = "critical"
		ev = append(ev, "an SLO target of its symptoms exceeded ("+sloText(h.Explains, opts.SLO)+")")
	}
	for _, s := range needsAbsent[h.ID] {
		ev = append(ev, "symptom "+string(s)+" absent")
	}
	return Rule{
		Alert: AlertName(string(h.ID)),
		Expr:  expr,
		For:   dur(opts.For),
		Labels: map[string]string{
			"severity":   sev,
			"hypothesis": string(h.ID),
			"symptom":    strings.Join(syms, ","),
		},
		Annotations: map[string]string{
			"summary":          "check first: " + h.Title + " (" + h.Observed + ")",
			"evidence":         strings.Join(ev, "; and "),
			"counter_evidence": "excluded when: " + strings.Join(ce, "; or "),
			"next_checks":      strings.Join(checks, " | "),
			"mitigation":       mit,
			"runbook":          runbook,
			"noise":            NoiseNote,
		},
	}
}

// YAML returns the rule file as YAML, preceded by comments that list
// what was left out.
func (f RuleFile) YAML() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("# Generated by whyslow alerts from the decision map (package rules); do not edit by hand.\n")
	b.WriteString("# " + NoiseNote + "\n")
	for _, n := range f.NotExpressible {
		fmt.Fprintf(&b, "# not expressible in PromQL: %s: %s\n", n.ID, n.Reason)
	}
	for _, n := range f.Excluded {
		fmt.Fprintf(&b, "# no alert for hypothesis %s: %s\n", n.ID, n.Reason)
	}
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(struct {
		Groups []Group `yaml:"groups"`
	}{f.Groups}); err != nil {
		return nil, err
	}
	return b.Bytes(), enc.Close()
}
