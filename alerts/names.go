package alerts

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/whyslow/whyslow/catalog"
)

// Versions the default (mixed) mode reads: V1 names as of defaultV1, the
// names of the first V1 releases (renamed since) and the V0 names of its
// last release, where they differ.
var (
	defaultV1 = catalog.Version{Major: 0, Minor: 11}
	firstV1   = catalog.Version{Major: 0, Minor: 8}
	lastV0    = catalog.Version{Major: 0, Minor: 10}
)

// names resolves the metric names of each catalog signal for the
// versions the rules target.
type names struct {
	cat catalog.Catalog
	// targets are the (engine, version) pairs whose names are used, in
	// order of preference.
	targets []target
	// mixed is true when the targets span bucket layouts (V0 and V1):
	// latency histograms then use only the bounds both share.
	mixed bool
}

type target struct {
	engine catalog.Engine
	ver    catalog.Version
}

// newNames parses --vllm-version: "" (V1 names, plus V0 names where they
// differ), "V0", "V1", or a release such as "0.9.2".
func newNames(cat catalog.Catalog, version string) (names, error) {
	n := names{cat: cat}
	switch strings.ToLower(strings.TrimSpace(version)) {
	case "":
		n.targets = []target{{catalog.EngineV1, defaultV1}, {catalog.EngineV1, firstV1}, {catalog.EngineV0, lastV0}}
		n.mixed = true
	case "v1":
		n.targets = []target{{catalog.EngineV1, defaultV1}}
	case "v0":
		n.targets = []target{{catalog.EngineV0, lastV0}}
	default:
		v, err := catalog.ParseVersion(strings.TrimPrefix(strings.ToLower(version), "v"))
		if err != nil {
			return n, fmt.Errorf("Options.VLLMVersion %q: want V0, V1 or a release such as 0.9.2: %w", version, err)
		}
		n.targets = []target{{catalog.EngineUnknown, v}}
	}
	return n, nil
}

// of returns the metric names of signal id for the targets, without
// duplicates, most preferred first; nil when no default name exists (the
// signal needs catalog.Alias, e.g. client_ttft).
func (n names) of(id catalog.SignalID) []string {
	spec, ok := n.cat.Signal(id)
	if !ok {
		return nil
	}
	var out []string
	for _, t := range n.targets {
		for _, c := range spec.Candidates {
			if !emits(c, t) {
				continue
			}
			if !slices.Contains(out, c.Metric) {
				out = append(out, c.Metric)
			}
			break
		}
	}
	if len(out) == 0 {
		// Names the history does not pin to versions (exporters,
		// gateways, aliases): the first candidate.
		for _, c := range spec.Candidates {
			if len(c.Versions) == 0 {
				return []string{c.Metric}
			}
		}
	}
	return out
}

func emits(c catalog.Candidate, t target) bool {
	for _, r := range c.Versions {
		if r.Contains(t.engine, t.ver) {
			return true
		}
	}
	return false
}

// sharedBounds are the latency bucket bounds that V0 and V1 share
// (reference/vllm-metrics.md section 3: V1's ladders extend V0's). Mixed
// fleets sum only these, so that no bucket counts one version alone.
var sharedBounds = map[catalog.SignalID][]float64{
	catalog.SignalTTFT: {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0},
	catalog.SignalITL:  {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5},
	catalog.SignalTPOT: {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5},
}

func init() {
	req := []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10, 15, 20, 30, 40, 50, 60}
	for _, id := range []catalog.SignalID{catalog.SignalE2E, catalog.SignalQueueTime, catalog.SignalInferenceTime, catalog.SignalPrefillTime, catalog.SignalDecodeTime} {
		sharedBounds[id] = req
	}
}

// leMatcher returns the `le` matcher of a histogram of signal id: the
// shared bounds in mixed mode (both spellings, "1" and "1.0"), else "".
func (n names) leMatcher(id catalog.SignalID) string {
	b, ok := sharedBounds[id]
	if !ok || !n.mixed {
		return ""
	}
	parts := make([]string, 0, len(b)+1)
	for _, v := range b {
		s := strconv.FormatFloat(v, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += `(\\.0)?`
		} else {
			s = strings.ReplaceAll(s, ".", `\\.`)
		}
		parts = append(parts, s)
	}
	parts = append(parts, `\\+Inf`)
	return `le=~"` + strings.Join(parts, "|") + `"`
}
