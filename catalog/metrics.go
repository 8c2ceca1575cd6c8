package catalog

import (
	"slices"
	"strings"
)

// EvidenceMetrics returns the family lookup names (see
// snapshot.Family.Name) that a diagnosis under c reads, for
// snapshot.Options.Metrics: a reader that keeps only these drops nothing
// the diagnosis uses. They are, sorted and distinct:
//
//   - every candidate metric of every signal (vLLM's names of all
//     versions, the aliases and prefixes added to c, the HTTP metrics,
//     process_start_time_seconds, the DCGM GPU utilisation fields, the
//     info families of the configuration);
//   - every name of the version history (History), whose presence or
//     absence is a version clue;
//   - the "_created" family of each of those names (prometheus_client
//     writes it beside counters and histograms in text 0.0.4, and its
//     presence is an engine clue);
//   - each vllm: name again under every prefix of c and under
//     ReexportPrefixes, which ForEvidence adds when the evidence uses them
//     (it cannot be known before reading).
//
// Names outside the list (other exporters' families, vLLM families that
// no version of the history knows) do not change a diagnosis, except in
// one respect: a target that exposes none of the listed families is not
// read at all, so it is neither a replica nor a "not vLLM" warning.
func (c Catalog) EvidenceMetrics() []string {
	var base []string
	for _, s := range c.signals {
		for _, src := range s.Candidates {
			base = append(base, src.Metric)
		}
	}
	for _, e := range history() {
		base = append(base, e.Metric)
	}
	return c.expandMetrics(base)
}

// SignalMetrics returns the family lookup names, spelled as
// EvidenceMetrics spells them, of the candidate metrics of the signals
// ids and of the signals their fallbacks are computed from (TPOT from
// decode time and output tokens): the families whose samples give those
// signals' values. Unknown ids are ignored.
func (c Catalog) SignalMetrics(ids ...SignalID) []string {
	var base []string
	seen := map[SignalID]bool{}
	var add func(id SignalID)
	add = func(id SignalID) {
		i := c.index(id)
		if seen[id] || i < 0 {
			return
		}
		seen[id] = true
		for _, src := range c.signals[i].Candidates {
			base = append(base, src.Metric)
		}
		for _, from := range c.signals[i].FallbackFrom {
			add(from)
		}
	}
	for _, id := range ids {
		add(id)
	}
	return c.expandMetrics(base)
}

// expandMetrics returns the names base with their "_created" families
// and each vllm: name under every prefix of c and ReexportPrefixes, sorted and
// distinct (see EvidenceMetrics).
func (c Catalog) expandMetrics(base []string) []string {
	prefixes := slices.Clone(c.prefixes)
	for _, p := range builtinPrefixes {
		if !slices.Contains(prefixes, p) {
			prefixes = append(prefixes, p)
		}
	}
	var out []string
	add := func(name string) {
		out = append(out, name, strings.TrimSuffix(name, "_total")+"_created")
	}
	for _, name := range base {
		add(name)
		if rest, ok := strings.CutPrefix(name, "vllm:"); ok {
			for _, p := range prefixes {
				add(p + rest)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// NonNegativeMetrics lists the metrics of the catalog's gauges that count
// something (requests, tokens, a ratio of used capacity): a negative
// sample of one is impossible, and a reader given them in
// snapshot.Options.NonNegative leaves it out with a problem.
func (c Catalog) NonNegativeMetrics() []string {
	var names []string
	for _, s := range c.Signals() {
		if s.Kind != KindGauge {
			continue
		}
		switch s.Unit {
		case UnitRequests, UnitTokens, UnitRatio, UnitCount:
			for _, cand := range s.Candidates {
				names = append(names, cand.Metric)
			}
		}
	}
	return names
}
