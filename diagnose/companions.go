package diagnose

import (
	"errors"
	"slices"
	"strings"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/report"
	"github.com/whyslow/whyslow/snapshot"
)

// isCompanion reports whether a resolved target is an exporter scraped
// beside vLLM (NVIDIA's DCGM exporter, the node exporter): it exposes no
// vllm: metric, and every family it has is a known companion's, so the
// catalog raised no "not vLLM" warning for it. Its series feed signals
// (gpu_util), but it is no replica: its scrapes are not the fleet's.
func isCompanion(tr *catalog.TargetResolution) bool {
	if tr == nil || tr.Engine != catalog.EngineNotVLLM {
		return false
	}
	for _, w := range tr.Warnings {
		if errors.Is(w, catalog.ErrNotVLLM) {
			return false
		}
	}
	return true
}

// exporterKind names the exporter a companion target is.
func exporterKind(t *snapshot.Target) string {
	for name := range t.Families {
		switch {
		case strings.HasPrefix(name, "DCGM_"), strings.HasPrefix(name, "dcgm_"):
			return "DCGM exporter"
		}
	}
	for name := range t.Families {
		if strings.HasPrefix(name, "node_") {
			return "node exporter"
		}
	}
	return "exporter"
}

// companionExporters lists the companion targets once per kind of
// exporter, with the catalog signals read from them.
func companionExporters(ev *snapshot.Evidence, res catalog.Resolution) []report.Exporter {
	var out []report.Exporter
	at := map[string]int{}
	for i, t := range ev.Targets {
		if i >= len(res.Targets) || !isCompanion(&res.Targets[i]) {
			continue
		}
		kind := exporterKind(t)
		k, ok := at[kind]
		if !ok {
			k = len(out)
			at[kind] = k
			out = append(out, report.Exporter{Kind: kind, Targets: []string{}, Signals: []string{}})
		}
		out[k].Targets = append(out[k].Targets, t.Name)
		for _, m := range res.Targets[i].Matches {
			if m.Found() && !slices.Contains(out[k].Signals, string(m.Signal)) {
				out[k].Signals = append(out[k].Signals, string(m.Signal))
			}
		}
	}
	for i := range out {
		slices.Sort(out[i].Targets)
	}
	return out
}
