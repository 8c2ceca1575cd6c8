package catalog

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/whyslow/whyslow/snapshot"
)

// Warnings of Resolve, wrapped with details; test with errors.Is.
var (
	// ErrNotVLLM: a target exposes no vllm: metric, under the vllm: name
	// or a recognised prefix (ReexportPrefixes, WithPrefix), and is not one
	// of the exporters scraped beside vLLM (NVIDIA DCGM, the node exporter,
	// process and runtime collectors) or a gateway's endpoint picker
	// (inference_objective_ and related families), which are expected
	// without vLLM names.
	ErrNotVLLM = errors.New("no vllm: metric")
	// ErrConflictingClues: a target's names contradict each other (V0-only
	// and V1-only names together, or version ranges that do not meet); the
	// contradicting clue was left out of the version range.
	ErrConflictingClues = errors.New("conflicting version clues")
	// ErrVersionSkew: targets run different engines or versions, or one
	// signal comes from different metric names on different targets.
	ErrVersionSkew = errors.New("version skew")
	// ErrPartialSignal: a signal is found on some targets and missing on
	// others.
	ErrPartialSignal = errors.New("signal missing on some targets")
	// ErrConfigDrift: an info metric's labels differ between targets.
	ErrConfigDrift = errors.New("configuration drift")
	// ErrUnexpectedType: a candidate family has a type the signal cannot
	// use (a gauge where a histogram is needed); it was skipped.
	ErrUnexpectedType = errors.New("unexpected metric type")
)

// Resolution says, for evidence of a fleet, where each signal comes from on
// each target, and which vLLM versions each target is consistent with.
type Resolution struct {
	// Targets holds one entry per target, in the evidence's order (by
	// name).
	Targets []TargetResolution
	// Signals lists the catalog's signals in order; Matches of every
	// target follow the same order.
	Signals []SignalSpec
	// Versions is the hull of the vLLM targets' consistent ranges: the
	// versions the fleet as a whole may run. It is the zero range when no
	// target is vLLM.
	Versions VersionRange
	// Drift lists the labels of info metrics (cache_config) whose values
	// differ between targets or within one.
	Drift []Drift
	// Warnings are fleet-level findings: version skew, signals missing on
	// some targets, configuration drift. Per-target warnings are in
	// TargetResolution.Warnings.
	Warnings []error
}

// TargetResolution is the resolution of one target (replica).
type TargetResolution struct {
	// Target is the target's name.
	Target string
	// Engine is the most likely engine generation (Likely.Engine, or
	// EngineNotVLLM).
	Engine Engine
	// Versions is the range of versions consistent with the names,
	// labels and bucket layouts seen, by documented and approximate
	// facts only.
	Versions VersionRange
	// Likely narrows Versions with weak evidence: names absent although
	// every server of an era emits them, unverified facts, and the lack
	// of both engine label and _created families (V0). It assumes the
	// capture holds every family the server exposed (a dump read with
	// snapshot.Options.Metrics, or a truncated one, does not).
	Likely VersionRange
	// Clues are the observations behind Versions and Likely, in the order
	// applied.
	Clues []Clue
	// Matches holds one Match per catalog signal, in catalog order.
	Matches []Match
	// Warnings are this target's problems: conflicting clues, skipped
	// candidates, not vLLM.
	Warnings []error
	// Unseen says what a vLLM target's families cannot show and how the
	// diagnosis makes do, one sentence each: no process_start_time_seconds
	// (restarts from counter drops only), no http_* families (server
	// errors from finished_reason only), no _created series. vLLM's Rust
	// frontend (VLLM_USE_RUST_FRONTEND=1) serves OpenMetrics without all
	// three.
	Unseen []string
}

// Unseen notes of TargetResolution.
const (
	UnseenProcessStart = "no process_start_time_seconds: restarts are detected from counter drops only"
	UnseenHTTP         = "no http_* metrics: server errors are seen from request_success finished_reason only"
	UnseenCreated      = "no _created series (OpenMetrics without them, as vLLM's Rust frontend serves, or multiprocess mode): counter start times are unknown"
)

// Match is where one signal comes from on one target.
type Match struct {
	// Signal is the signal's id.
	Signal SignalID
	// Metric is the lookup name of the family used; "" when the signal is
	// missing ("cannot evaluate", never zero).
	Metric string
	// Candidate is the catalog entry of Metric (zero when missing).
	Candidate Candidate
	// Family is the family read; nil when missing. It belongs to the
	// evidence: do not modify it.
	Family *snapshot.Family
	// Shadowed lists the other candidates present on the target that
	// lost to Metric (e.g. the old vllm:gpu_cache_usage_perc next to
	// vllm:kv_cache_usage_perc).
	Shadowed []string
}

// Found reports whether a candidate family was found.
func (m Match) Found() bool { return m.Family != nil }

// Empty reports whether the family was found but holds no sample (an idle
// server, or HELP/TYPE lines only).
func (m Match) Empty() bool {
	if m.Family == nil {
		return false
	}
	for _, s := range m.Family.Series {
		if s.Len() > 0 {
			return false
		}
	}
	for _, h := range m.Family.Histograms {
		if h.Len() > 0 {
			return false
		}
	}
	return true
}

// Match returns the match of signal id; ok is false when the catalog has no
// such signal.
func (t TargetResolution) Match(id SignalID) (m Match, ok bool) {
	for _, m := range t.Matches {
		if m.Signal == id {
			return m, true
		}
	}
	return Match{Signal: id}, false
}

// Clue is one observation about a target's version.
type Clue struct {
	// Evidence says what was observed: a metric name, "<name> buckets",
	// "engine label", "_created families" or "no engine label or
	// _created family".
	Evidence string
	// Absent is true when the clue is that Evidence is missing: weak
	// evidence, used for Likely only.
	Absent bool
	// Versions is the range consistent with the observation; for an
	// absent name, the range it rules out.
	Versions VersionRange
	// Confidence grades the fact behind the clue.
	Confidence Confidence
	// Skipped is true when the clue contradicted those applied before it
	// and was left out.
	Skipped bool
}

// String formats c as "vllm:kv_cache_usage_perc: >= 0.9.2 (V1)" or
// "absent vllm:time_per_output_token_seconds: not 0.7–0.11.x (V1)".
func (c Clue) String() string {
	s := c.Evidence + ": " + c.Versions.String()
	if c.Absent {
		s = "absent " + c.Evidence + ": not " + c.Versions.String()
	}
	if c.Confidence != Documented {
		s += " [" + c.Confidence.String() + "]"
	}
	if c.Skipped {
		s += " (skipped: contradicts)"
	}
	return s
}

// Drift is one label of an info metric whose values differ.
type Drift struct {
	// Signal is the info signal, e.g. cache_config.
	Signal SignalID
	// Metric is the family the label was read from.
	Metric string
	// Label is the differing label, e.g. "gpu_memory_utilization".
	Label string
	// Values lists each value with the targets showing it, by value.
	Values []DriftValue
}

// DriftValue is one value of a drifting label.
type DriftValue struct {
	Value   string
	Targets []string
}

// String formats d as `cache_config gpu_memory_utilization: "0.9" (a, b), "0.92" (c)`.
func (d Drift) String() string {
	parts := make([]string, len(d.Values))
	for i, v := range d.Values {
		parts[i] = fmt.Sprintf("%q (%s)", v.Value, strings.Join(v.Targets, ", "))
	}
	return fmt.Sprintf("%s %s: %s", d.Signal, d.Label, strings.Join(parts, ", "))
}

// driftIgnoredLabels identify a series rather than configure it; they are
// not compared for drift.
var driftIgnoredLabels = []string{"engine", "pod", "instance", "job", "namespace", "container", "node", "service", "endpoint", "hostname", "Hostname"}

// Resolve resolves every target of ev against c. It never fails: what it
// cannot establish it reports as missing matches, unknown ranges and
// warnings. A nil ev gives an empty Resolution.
func (c Catalog) Resolve(ev *snapshot.Evidence) Resolution {
	if ev == nil {
		return Resolution{Signals: c.Signals()}
	}
	c = c.ForEvidence(ev)
	res := Resolution{Signals: c.Signals()}
	h := history()
	for _, t := range ev.Targets {
		res.Targets = append(res.Targets, c.resolveTarget(t, h))
	}
	res.fleet()
	return res
}

// ResolveTarget resolves one target against c.
func (c Catalog) ResolveTarget(t *snapshot.Target) TargetResolution {
	return c.forTargets(t).resolveTarget(t, history())
}

func (c Catalog) resolveTarget(t *snapshot.Target, h []Era) TargetResolution {
	tr := TargetResolution{Target: t.Name}
	// Signals: first candidate present with a usable type wins.
	for _, sig := range c.signals {
		m := Match{Signal: sig.ID}
		for _, cand := range sig.Candidates {
			f := t.Family(cand.Metric)
			if f == nil {
				continue
			}
			if !sig.Kind.accepts(f.Type) {
				tr.Warnings = append(tr.Warnings, fmt.Errorf("%w: %s: %s is a %s, %s needs a %s; skipped",
					ErrUnexpectedType, t.Name, cand.Metric, f.Type, sig.ID, sig.Kind))
				continue
			}
			if m.Family == nil {
				m.Metric, m.Candidate, m.Family = cand.Metric, cand, f
			} else {
				m.Shadowed = append(m.Shadowed, cand.Metric)
			}
		}
		tr.Matches = append(tr.Matches, m)
	}
	c.inferVersions(t, h, &tr)
	tr.Unseen = unseen(t, tr.Engine)
	return tr
}

// unseen lists the Unseen notes of target t of engine e.
func unseen(t *snapshot.Target, e Engine) []string {
	if e == EngineNotVLLM {
		return nil
	}
	var out []string
	if t.Family("process_start_time_seconds") == nil {
		out = append(out, UnseenProcessStart)
	}
	http, created := false, false
	for name, f := range t.Families {
		if strings.HasPrefix(name, "http_") {
			http = true
		}
		if strings.HasSuffix(name, "_created") {
			created = true
		}
		for _, s := range f.Series {
			if s.StartT != nil {
				created = true
			}
		}
	}
	if !http {
		out = append(out, UnseenHTTP)
	}
	if e == EngineV1 && !created {
		out = append(out, UnseenCreated)
	}
	return out
}

// companionPrefixes are the name prefixes of exporters commonly scraped
// beside vLLM: NVIDIA's DCGM exporter, the node exporter and the generic
// collectors of client libraries. A target whose families all carry one is
// a companion, not a wrong input, and draws no ErrNotVLLM.
var companionPrefixes = []string{"DCGM_", "dcgm_", "node_", "process_", "go_", "python_", "promhttp_", "scrape_", "up"}

// gatewayPrefixes are the name prefixes of the gateways in front of vLLM
// whose request metrics are default candidates (the Gateway API Inference
// Extension's and llm-d's endpoint picker). A target with such a family
// is a gateway, not a wrong input, and draws no ErrNotVLLM.
var gatewayPrefixes = []string{"inference_objective_", "inference_model_", "inference_pool_", "inference_extension_", "llm_d_inference_scheduler_"}

// isGateway reports whether some family of t has one of gatewayPrefixes.
func isGateway(t *snapshot.Target) bool {
	for name := range t.Families {
		if slices.ContainsFunc(gatewayPrefixes, func(p string) bool { return strings.HasPrefix(name, p) }) {
			return true
		}
	}
	return false
}

// companionOnly reports whether every family of t (at least one) has one of
// companionPrefixes.
func companionOnly(t *snapshot.Target) bool {
	if len(t.Families) == 0 {
		return false
	}
	for name := range t.Families {
		if !slices.ContainsFunc(companionPrefixes, func(p string) bool { return strings.HasPrefix(name, p) }) {
			return false
		}
	}
	return true
}

// inferVersions fills Engine, Versions, Likely and Clues. See
// TargetResolution for the method.
func (c Catalog) inferVersions(t *snapshot.Target, h []Era, tr *TargetResolution) {
	// Canonical vLLM names present (prefixes mapped back to vllm:).
	present := map[string]*snapshot.Family{}
	var others []string
	for _, name := range t.FamilyNames() {
		canon := c.canonical(name)
		if strings.HasPrefix(canon, "vllm:") || strings.HasPrefix(canon, "http_") {
			present[canon] = t.Families[name]
		}
		if !strings.HasPrefix(canon, "vllm:") {
			if i := strings.IndexByte(name, ':'); i > 0 {
				others = append(others, name[:i+1])
			}
		}
	}
	vllm := false
	for n := range present {
		if strings.HasPrefix(n, "vllm:") {
			vllm = true
			break
		}
	}
	if !vllm {
		tr.Engine = EngineNotVLLM
		tr.Versions = VersionRange{Engine: EngineNotVLLM}
		tr.Likely = tr.Versions
		if companionOnly(t) || isGateway(t) {
			return // an exporter or gateway scraped beside vLLM: not a wrong input
		}
		msg := fmt.Errorf("%w on target %s", ErrNotVLLM, t.Name)
		if others = slices.Compact(slices.Sorted(slices.Values(others))); len(others) > 0 {
			msg = fmt.Errorf("%w on target %s (prefixes seen: %s)", ErrNotVLLM, t.Name, strings.Join(others, " "))
		}
		tr.Warnings = append(tr.Warnings, msg)
		return
	}

	// Engine clues.
	engineLabel, created := false, false
	for n, f := range present {
		if !strings.HasPrefix(n, "vllm:") {
			continue
		}
		if base, ok := strings.CutSuffix(n, "_created"); ok &&
			(present[base+"_total"] != nil || present[base] != nil) {
			created = true
		}
		for _, s := range f.Series {
			if s.Labels.Has("engine") {
				engineLabel = true
			}
			if s.StartT != nil && f.Type != "gauge" {
				created = true
			}
		}
		for _, hs := range f.Histograms {
			if hs.Labels.Has("engine") {
				engineLabel = true
			}
		}
	}
	byName := map[string][]Era{}
	var layouts []Era
	for _, e := range h {
		if e.Bounds != nil {
			layouts = append(layouts, e)
		} else {
			byName[e.Metric] = append(byName[e.Metric], e)
		}
	}
	names := make([]string, 0, len(present))
	for n := range present {
		if _, ok := byName[n]; ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var v0Only, v1Only []string
	for _, n := range names {
		switch engineOf(byName[n]) {
		case EngineV0:
			v0Only = append(v0Only, n)
		case EngineV1:
			v1Only = append(v1Only, n)
		}
	}

	var clues []Clue
	strong := EngineUnknown
	v1Clue := engineLabel || created || len(v1Only) > 0
	conflict := v1Clue && len(v0Only) > 0
	switch {
	case conflict:
		tr.Warnings = append(tr.Warnings, fmt.Errorf("%w: %s: V0-only names (%s) next to V1 signs",
			ErrConflictingClues, t.Name, strings.Join(v0Only, ", ")))
	case v1Clue:
		strong = EngineV1
	case len(v0Only) > 0:
		strong = EngineV0
	}
	if engineLabel {
		clues = append(clues, Clue{Evidence: "engine label", Versions: Since(EngineV1, Version{}), Confidence: Documented})
	}
	if created {
		clues = append(clues, Clue{Evidence: "_created families", Versions: Since(EngineV1, Version{}), Confidence: Approximate})
	}

	// Presence clues: the hull of the name's eras compatible with the
	// engine.
	for _, n := range names {
		r, conf, ok := hullFor(byName[n], strong)
		if !ok {
			continue
		}
		clues = append(clues, Clue{Evidence: n, Versions: r, Confidence: conf})
	}
	// Layout clues: a histogram whose finite bounds equal a known layout.
	for _, n := range names {
		f := present[n]
		var matched []Era
		for _, e := range layouts {
			if e.Metric != n || !compatible(e.Versions.Engine, strong) {
				continue
			}
			for _, hs := range f.Histograms {
				if sameBounds(finite(hs.Bounds), e.Bounds) {
					matched = append(matched, e)
					break
				}
			}
		}
		if r, conf, ok := hullFor(matched, strong); ok {
			clues = append(clues, Clue{Evidence: n + " buckets", Versions: r, Confidence: conf})
		}
	}

	// Consistent range: documented and approximate clues, strongest first.
	sort.SliceStable(clues, func(i, j int) bool { return clues[i].Confidence < clues[j].Confidence })
	r := VersionRange{Engine: strong}
	for i := range clues {
		if clues[i].Confidence == Unverified {
			continue
		}
		next := r.Intersect(clues[i].Versions)
		if next.Empty() {
			clues[i].Skipped = true
			tr.Warnings = append(tr.Warnings, fmt.Errorf("%w: %s: %s", ErrConflictingClues, t.Name, clues[i]))
			continue
		}
		r = next
	}
	tr.Versions = r

	// Likely range: unverified clues, the V0 default, then absences.
	l := r
	for i := range clues {
		if clues[i].Confidence != Unverified {
			continue
		}
		if next := l.Intersect(clues[i].Versions); !next.Empty() {
			l = next
		} else {
			clues[i].Skipped = true
		}
	}
	if l.Engine == EngineUnknown && !v1Clue && !conflict {
		if next := l.Intersect(Since(EngineV0, Version{})); !next.Empty() {
			l = next
			clues = append(clues, Clue{Evidence: "no engine label or _created family", Versions: Since(EngineV0, Version{}), Confidence: Unverified})
		}
	}
	var absent []Era
	for _, e := range h {
		if e.Bounds == nil && e.Default && present[e.Metric] == nil && e.Confidence != Unverified {
			absent = append(absent, e)
		}
	}
	for changed := true; changed; {
		changed = false
		for i, e := range absent {
			if e.Metric == "" {
				continue
			}
			if next, ok := l.without(e.Versions); ok {
				l = next
				clues = append(clues, Clue{Evidence: e.Metric, Absent: true, Versions: e.Versions, Confidence: e.Confidence})
				absent[i].Metric = "" // used
				changed = true
			}
		}
	}
	tr.Likely = l
	tr.Engine = l.Engine
	tr.Clues = clues
}

// engineOf returns the single engine of eras, or EngineUnknown when they
// span both or none.
func engineOf(eras []Era) Engine {
	e := EngineUnknown
	for i, era := range eras {
		if i == 0 {
			e = era.Versions.Engine
		} else if era.Versions.Engine != e {
			return EngineUnknown
		}
	}
	return e
}

// compatible reports whether an era of engine e can hold a target believed
// to run engine target.
func compatible(e, target Engine) bool {
	return e == EngineUnknown || target == EngineUnknown || e == target
}

// hullFor returns the hull of the eras compatible with engine, and the
// confidence of the clue: the weakest confidence among them, except that a
// clue with any documented or approximate era is never Unverified (an
// unverified era only widens the hull).
func hullFor(eras []Era, engine Engine) (VersionRange, Confidence, bool) {
	var r VersionRange
	found := false
	conf, best := Documented, Unverified
	for _, e := range eras {
		if !compatible(e.Versions.Engine, engine) {
			continue
		}
		if !found {
			r, found = e.Versions, true
		} else {
			r = r.Hull(e.Versions)
		}
		conf = max(conf, e.Confidence)
		best = min(best, e.Confidence)
	}
	if best < Unverified && conf == Unverified {
		conf = Approximate
	}
	return r, conf, found
}

// finite returns bounds without a trailing +Inf.
func finite(bounds []float64) []float64 {
	if n := len(bounds); n > 0 && math.IsInf(bounds[n-1], 1) {
		return bounds[:n-1]
	}
	return bounds
}

// sameBounds reports whether a and b are the same layout, allowing the
// rounding of a float printed and read back.
func sameBounds(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-9*math.Max(1, math.Abs(b[i])) {
			return false
		}
	}
	return true
}

// fleet fills the fleet-level fields from the targets.
func (res *Resolution) fleet() {
	var vllmTargets []*TargetResolution
	for i := range res.Targets {
		if res.Targets[i].Engine != EngineNotVLLM {
			vllmTargets = append(vllmTargets, &res.Targets[i])
		}
	}
	// Versions and skew.
	engines := map[Engine][]string{}
	meet := VersionRange{}
	for i, t := range vllmTargets {
		if i == 0 {
			res.Versions = t.Versions
		} else {
			res.Versions = res.Versions.Hull(t.Versions)
		}
		meet = meet.Intersect(t.Versions)
		if t.Engine == EngineV0 || t.Engine == EngineV1 {
			engines[t.Engine] = append(engines[t.Engine], t.Target)
		}
	}
	if len(engines) > 1 {
		res.Warnings = append(res.Warnings, fmt.Errorf("%w: engines differ: V0 on %s; V1 on %s",
			ErrVersionSkew, strings.Join(engines[EngineV0], ", "), strings.Join(engines[EngineV1], ", ")))
	} else if len(vllmTargets) > 1 && meet.Empty() {
		parts := make([]string, len(vllmTargets))
		for i, t := range vllmTargets {
			parts[i] = t.Target + " " + t.Versions.String()
		}
		res.Warnings = append(res.Warnings, fmt.Errorf("%w: version ranges do not overlap: %s", ErrVersionSkew, strings.Join(parts, "; ")))
	}
	// Per signal: names that differ, targets that miss it.
	for si, sig := range res.Signals {
		byMetric := map[string][]string{}
		var missing []string
		onVLLM := 0 // vLLM targets that carry the signal
		for _, t := range res.Targets {
			m := t.Matches[si]
			switch {
			case m.Found():
				byMetric[m.Metric] = append(byMetric[m.Metric], t.Target)
				if t.Engine != EngineNotVLLM {
					onVLLM++
				}
			case t.Engine != EngineNotVLLM:
				missing = append(missing, t.Target)
			}
		}
		if len(byMetric) > 1 {
			res.Warnings = append(res.Warnings, fmt.Errorf("%w: %s comes from %s", ErrVersionSkew, sig.ID, describeByMetric(byMetric)))
		}
		// A signal only other targets carry (a gateway's client TTFT) is
		// not expected on vLLM pods.
		if onVLLM > 0 && len(missing) > 0 {
			res.Warnings = append(res.Warnings, fmt.Errorf("%w: %s missing on %s", ErrPartialSignal, sig.ID, strings.Join(missing, ", ")))
		}
		if sig.Kind == KindInfo {
			res.Drift = append(res.Drift, drift(sig.ID, si, res.Targets)...)
		}
	}
	for _, d := range res.Drift {
		res.Warnings = append(res.Warnings, fmt.Errorf("%w: %s", ErrConfigDrift, d))
	}
}

func describeByMetric(byMetric map[string][]string) string {
	names := slices.Sorted(maps.Keys(byMetric))
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s on %s", n, strings.Join(byMetric[n], ", "))
	}
	return strings.Join(parts, "; ")
}

// drift compares the labels of info signal si across targets. Only targets
// that carry a label take part in its comparison: a label that exists in
// newer versions only is version skew, not drift.
func drift(id SignalID, si int, targets []TargetResolution) []Drift {
	// label -> value -> targets
	values := map[string]map[string][]string{}
	metric := ""
	for _, t := range targets {
		m := t.Matches[si]
		if !m.Found() {
			continue
		}
		if metric == "" {
			metric = m.Metric
		}
		seen := map[[2]string]bool{}
		for _, s := range m.Family.Series {
			s.Labels.Range(func(l labels.Label) {
				if slices.Contains(driftIgnoredLabels, l.Name) || seen[[2]string{l.Name, l.Value}] {
					return
				}
				seen[[2]string{l.Name, l.Value}] = true
				if values[l.Name] == nil {
					values[l.Name] = map[string][]string{}
				}
				// Numbers compare as numbers: "0" and "0.0", "4294967296"
				// and "4294967296.0" are one setting.
				v := l.Value
				if f, err := strconv.ParseFloat(v, 64); err == nil {
					v = strconv.FormatFloat(f, 'g', -1, 64)
				}
				if !slices.Contains(values[l.Name][v], t.Target) {
					values[l.Name][v] = append(values[l.Name][v], t.Target)
				}
			})
		}
	}
	var out []Drift
	for label, vals := range values {
		if len(vals) < 2 {
			continue
		}
		d := Drift{Signal: id, Metric: metric, Label: label}
		for v, ts := range vals {
			d.Values = append(d.Values, DriftValue{Value: v, Targets: ts})
		}
		sort.Slice(d.Values, func(i, j int) bool { return d.Values[i].Value < d.Values[j].Value })
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Label < out[j].Label })
	return out
}

// Missing returns the signals that no target carries, in catalog order.
func (res Resolution) Missing() []SignalID {
	var out []SignalID
	for si, sig := range res.Signals {
		found := false
		for _, t := range res.Targets {
			if t.Matches[si].Found() {
				found = true
				break
			}
		}
		if !found {
			out = append(out, sig.ID)
		}
	}
	return out
}

// Table is one of the resolution's tables as text cells: a header row
// and the body rows. Reports lay it out (package report); String writes
// it in aligned columns.
type Table struct {
	Head []string
	Rows [][]string
}

// String prints the resolution as tables: the targets with their engine
// and version ranges (and the clues that bound them), then one row per
// signal and metric name with the number of targets it was found on and the
// versions that emit it, then warnings and drift. Missing signals read
// "cannot evaluate".
func (res Resolution) String() string {
	var b strings.Builder
	b.WriteString(res.Title() + "\n\n")
	writeTable(&b, res.TargetTable())
	b.WriteString("\n")
	writeTable(&b, res.SignalTable())
	if ws := res.WarningLines(); len(ws) > 0 {
		b.WriteString("\nwarnings:\n")
		for _, w := range ws {
			fmt.Fprintf(&b, "  %s\n", w)
		}
	}
	if us := res.UnseenLines(); len(us) > 0 {
		b.WriteString("\ncannot see:\n")
		for _, u := range us {
			fmt.Fprintf(&b, "  %s\n", u)
		}
	}
	return b.String()
}

// UnseenLines are the targets' Unseen notes as "target: note", a note
// shared by every vLLM target once as "all targets: note".
func (res Resolution) UnseenLines() []string {
	count := map[string]int{}
	vllm := 0
	for _, t := range res.Targets {
		if t.Engine == EngineNotVLLM {
			continue
		}
		vllm++
		for _, u := range t.Unseen {
			count[u]++
		}
	}
	var out []string
	done := map[string]bool{}
	for _, t := range res.Targets {
		for _, u := range t.Unseen {
			switch {
			case vllm > 1 && count[u] == vllm:
				if !done[u] {
					out = append(out, "all targets: "+u)
					done[u] = true
				}
			default:
				out = append(out, t.Target+": "+u)
			}
		}
	}
	return out
}

func writeTable(b *strings.Builder, t Table) {
	tw := tabwriter.NewWriter(b, 0, 4, 2, ' ', 0)
	for _, row := range append([][]string{t.Head}, t.Rows...) {
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	tw.Flush()
}

// Title says how many targets were resolved and the fleet's versions:
// "vLLM metric catalog: 2 target(s), fleet versions >= 0.10 (V1)".
func (res Resolution) Title() string {
	s := fmt.Sprintf("vLLM metric catalog: %d target(s)", len(res.Targets))
	if !res.Versions.Unbounded() || len(res.Targets) > 0 {
		s += ", fleet versions " + fleetVersions(res)
	}
	return s
}

// TargetTable has one row per target: its engine, the versions it is
// consistent with and likely runs, and the clues that bound them.
func (res Resolution) TargetTable() Table {
	t := Table{Head: []string{"target", "engine", "consistent with", "likely", "bounded by"}}
	for _, tr := range res.Targets {
		t.Rows = append(t.Rows, []string{tr.Target, tr.Engine.String(), rangeOrDash(tr.Versions), rangeOrDash(tr.Likely), boundingClues(tr)})
	}
	return t
}

// WarningLines are the targets' warnings, then the resolution's.
func (res Resolution) WarningLines() []string {
	var out []string
	for _, t := range res.Targets {
		for _, w := range t.Warnings {
			out = append(out, fmt.Sprint(w))
		}
	}
	for _, w := range res.Warnings {
		out = append(out, fmt.Sprint(w))
	}
	return out
}

// SignalTable has one row per signal and metric name: the number of
// targets it was found on and the versions that emit it; the targets
// without a signal get a row of their own that reads "cannot evaluate".
func (res Resolution) SignalTable() Table {
	tab := Table{Head: []string{"signal", "kind", "unit", "targets", "metric", "emitted by"}}
	n := len(res.Targets)
	for si, sig := range res.Signals {
		type row struct {
			metric   string
			cand     Candidate
			targets  int
			empty    int
			shadowed []string
			engines  map[Engine]bool
		}
		var rows []*row
		byMetric := map[string]*row{}
		for _, t := range res.Targets {
			m := t.Matches[si]
			if !m.Found() {
				continue
			}
			r := byMetric[m.Metric]
			if r == nil {
				r = &row{metric: m.Metric, cand: m.Candidate, engines: map[Engine]bool{}}
				byMetric[m.Metric] = r
				rows = append(rows, r)
			}
			r.targets++
			r.engines[t.Engine] = true
			if m.Empty() {
				r.empty++
			}
			for _, s := range m.Shadowed {
				if !slices.Contains(r.shadowed, s) {
					r.shadowed = append(r.shadowed, s)
				}
			}
		}
		unit := sig.Unit
		if unit == UnitNone {
			unit = "-"
		}
		found := 0
		for i, r := range rows {
			id, kind, u := string(sig.ID), sig.Kind.String(), unit
			if i > 0 {
				id, kind, u = "", "", ""
			}
			found += r.targets
			metric := r.metric
			if r.empty == r.targets {
				metric += " (no samples)"
			} else if r.empty > 0 {
				metric += fmt.Sprintf(" (no samples on %d)", r.empty)
			}
			if len(r.shadowed) > 0 {
				metric += "; also present: " + strings.Join(r.shadowed, ", ")
			}
			tab.Rows = append(tab.Rows, []string{id, kind, u, fmt.Sprintf("%d/%d", r.targets, n), metric, emittedBy(r.cand, r.engines)})
		}
		if found < n || n == 0 {
			// The targets without the signal get a row of their own.
			id, kind, u := string(sig.ID), sig.Kind.String(), unit
			if len(rows) > 0 {
				id, kind, u = "", "", ""
			}
			note := "cannot evaluate"
			switch {
			case sig.Fallback != "":
				note += "; fallback: " + strings.SplitN(sig.Fallback, ":", 2)[0] + fallbackState(res, sig, si)
			case len(sig.Candidates) == 0:
				note += "; no default metric (name one with Catalog.Alias)"
			}
			tab.Rows = append(tab.Rows, []string{id, kind, u, fmt.Sprintf("%d/%d missing", n-found, n), "-", note})
		}
	}
	return tab
}

// String prints the target's clues and matches, one per line.
func (t TargetResolution) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "target %s: engine %s, consistent with %s, likely %s\n", t.Target, t.Engine, rangeOrDash(t.Versions), rangeOrDash(t.Likely))
	for _, c := range t.Clues {
		fmt.Fprintf(&b, "  clue   %s\n", c)
	}
	for _, m := range t.Matches {
		if m.Found() {
			fmt.Fprintf(&b, "  signal %s: %s\n", m.Signal, m.Metric)
		} else {
			fmt.Fprintf(&b, "  signal %s: cannot evaluate\n", m.Signal)
		}
	}
	for _, w := range t.Warnings {
		fmt.Fprintf(&b, "  warning %v\n", w)
	}
	for _, u := range t.Unseen {
		fmt.Fprintf(&b, "  unseen  %s\n", u)
	}
	return b.String()
}

func fleetVersions(res Resolution) string {
	for _, t := range res.Targets {
		if t.Engine != EngineNotVLLM {
			return rangeOrDash(res.Versions)
		}
	}
	return "- (no vLLM target)"
}

func rangeOrDash(r VersionRange) string {
	if r.Engine == EngineNotVLLM {
		return "-"
	}
	return r.String()
}

// fallbackState says on how many of the targets that miss sig the inputs
// of its fallback are all present: " (inputs on 1/2)".
func fallbackState(res Resolution, sig SignalSpec, si int) string {
	idx := map[SignalID]int{}
	for i, s := range res.Signals {
		idx[s.ID] = i
	}
	have, missing := 0, 0
	for _, t := range res.Targets {
		if t.Matches[si].Found() {
			continue
		}
		missing++
		ok := true
		for _, need := range sig.FallbackFrom {
			if j, known := idx[need]; !known || !t.Matches[j].Found() {
				ok = false
			}
		}
		if ok {
			have++
		}
	}
	if missing == 0 {
		return ""
	}
	return fmt.Sprintf(" (inputs on %d/%d)", have, missing)
}

// emittedBy formats the version ranges of a candidate restricted to the
// engines of the targets that use it.
func emittedBy(c Candidate, engines map[Engine]bool) string {
	var parts []string
	for _, r := range c.Versions {
		if r.Engine != EngineUnknown && !engines[r.Engine] && !engines[EngineUnknown] {
			continue
		}
		parts = append(parts, r.String())
	}
	if len(parts) == 0 {
		if len(c.Versions) == 0 {
			return "-"
		}
		for _, r := range c.Versions {
			parts = append(parts, r.String())
		}
	}
	s := strings.Join(parts, ", ")
	if c.Confidence == Unverified {
		s += " [unverified]"
	}
	return s
}

// boundingClues names the clues that set the ends of the target's ranges:
// ">= 0.11 by A; <= 0.11.x by B, C (+2); likely >= 0.13 by D". An end is
// listed for Likely only where it differs from Versions.
func boundingClues(t TargetResolution) string {
	if t.Engine == EngineNotVLLM {
		return "no vllm: family"
	}
	var parts []string
	end := func(prefix string, rng VersionRange, likely, low bool) {
		var bound Version
		if low {
			bound = rng.Min
		} else {
			bound = rng.Max
		}
		if bound.IsZero() {
			return
		}
		var names []string
		for _, c := range t.Clues {
			if c.Skipped || (!likely && (c.Absent || c.Confidence == Unverified)) {
				continue
			}
			var hit bool
			switch {
			case c.Absent && low:
				hit = c.Versions.Max == bound
			case c.Absent:
				hit = c.Versions.Min == bound
			case low:
				hit = c.Versions.Min == bound
			default:
				hit = c.Versions.Max == bound
			}
			if hit {
				name := c.Evidence
				if c.Absent {
					name = "absent " + name
				}
				names = append(names, name)
			}
		}
		if len(names) == 0 {
			return
		}
		const show = 2
		list := strings.Join(names[:min(show, len(names))], ", ")
		if len(names) > show {
			list += fmt.Sprintf(" (+%d)", len(names)-show)
		}
		b := ">= " + lowString(bound)
		if !low {
			b = "<= " + highString(bound)
		}
		parts = append(parts, prefix+b+" by "+list)
	}
	end("", t.Versions, false, true)
	end("", t.Versions, false, false)
	if t.Likely.Min != t.Versions.Min {
		end("likely ", t.Likely, true, true)
	}
	if t.Likely.Max != t.Versions.Max {
		end("likely ", t.Likely, true, false)
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, "; ")
}
