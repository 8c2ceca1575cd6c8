package report

import (
	"encoding/json"
	"io"
	"slices"

	"github.com/whyslow/whyslow/catalog"
)

// CatalogDocument lays out a catalog resolution (whyslow catalog): the
// title, the targets with their versions, the signals with the metric
// names they were found under, the warnings, and what the targets'
// metrics cannot show (catalog.Resolution.UnseenLines). Its text form fits
// TextWidth columns; the cells are the catalog's own (catalog.Table).
//
// The signal counts are over the vLLM targets: companion exporters (DCGM,
// node, a gateway) are not replicas, and a fleet whose every pod carries
// a signal reads "8/8", never "8/16 ... missing". The signals only the
// companions carry get a table of their own, counted over them.
func CatalogDocument(res catalog.Resolution) *Document {
	d := &Document{}
	d.para("", res.Title())
	d.table("targets", docTable(res.TargetTable()))
	vllm, comp := splitCompanions(res)
	if len(comp.Targets) == 0 || len(vllm.Targets) == 0 {
		d.table("signals", docTable(res.SignalTable()))
	} else {
		d.para("", "signals on the vLLM targets:")
		d.table("signals", docTable(dropSignals(vllm.SignalTable(), companionOnly(vllm, comp))))
		d.para("", "signals from companion exporters (not vLLM targets):")
		d.table("companion-signals", docTable(foundRows(comp.SignalTable())))
	}
	if ws := res.WarningLines(); len(ws) > 0 {
		d.heading(2, "Warnings")
		d.list("warning", textItems(ws))
	}
	if us := res.UnseenLines(); len(us) > 0 {
		d.heading(2, "Cannot see")
		d.list("unseen", textItems(us))
	}
	return d
}

// splitCompanions returns res with only its vLLM targets, and with only
// the others (the companion exporters).
func splitCompanions(res catalog.Resolution) (vllm, comp catalog.Resolution) {
	vllm, comp = res, res
	vllm.Targets, comp.Targets = nil, nil
	for _, t := range res.Targets {
		if t.Engine == catalog.EngineNotVLLM {
			comp.Targets = append(comp.Targets, t)
		} else {
			vllm.Targets = append(vllm.Targets, t)
		}
	}
	return vllm, comp
}

// found reports whether signal si is found on any of res's targets.
func found(res catalog.Resolution, si int) bool {
	for _, t := range res.Targets {
		if t.Matches[si].Found() {
			return true
		}
	}
	return false
}

// companionOnly lists the signals the companions carry and no vLLM
// target does (gpu_util from DCGM).
func companionOnly(vllm, comp catalog.Resolution) map[string]bool {
	out := map[string]bool{}
	for si, sig := range comp.Signals {
		if found(comp, si) && !found(vllm, si) {
			out[string(sig.ID)] = true
		}
	}
	return out
}

// dropSignals removes the rows of the named signals from a signal table
// (a signal's first row names it, its further rows have an empty id).
func dropSignals(t catalog.Table, drop map[string]bool) catalog.Table {
	out := catalog.Table{Head: t.Head}
	cur := ""
	for _, r := range t.Rows {
		if r[0] != "" {
			cur = r[0]
		}
		if !drop[cur] {
			out.Rows = append(out.Rows, r)
		}
	}
	return out
}

// foundRows keeps a companion signal table's rows of signals found (the
// "missing" rows of signals no companion carries say nothing), naming
// each signal on its first row kept.
func foundRows(t catalog.Table) catalog.Table {
	out := catalog.Table{Head: t.Head}
	cur, named := "", false
	for _, r := range t.Rows {
		if r[0] != "" {
			cur, named = r[0], false
		}
		if r[len(r)-2] == "-" { // the metric column of a "missing" row
			continue
		}
		row := slices.Clone(r)
		if !named {
			row[0], named = cur, true
		}
		out.Rows = append(out.Rows, row)
	}
	return out
}

// docTable makes a document table of a catalog table, the counts of
// targets right-aligned.
func docTable(t catalog.Table) *Table {
	out := &Table{Head: t.Head, Rows: t.Rows, Right: make([]bool, len(t.Head))}
	for i, h := range t.Head {
		out.Right[i] = h == "targets"
	}
	return out
}

// CatalogJSON is the JSON form of a catalog resolution (whyslow catalog
// --format json). Field names are a public contract: they may be added,
// never renamed.
type CatalogJSON struct {
	// Title is the text form's first line.
	Title string `json:"title"`
	// Versions is the fleet's version range ("-" without a vLLM target).
	Versions string `json:"versions"`
	// Targets are the targets read, vLLM pods and companion exporters.
	Targets []CatalogTarget `json:"targets"`
	// Signals are the catalog's signals, in catalog order.
	Signals []CatalogSignal `json:"signals"`
	// Missing lists the signals no target carries.
	Missing []string `json:"missing"`
	// Warnings are the targets' warnings, then the fleet's.
	Warnings []string `json:"warnings"`
}

// CatalogTarget is one target of a catalog resolution.
type CatalogTarget struct {
	Name string `json:"name"`
	// Engine is "V0", "V1", "unknown" or "not vLLM".
	Engine string `json:"engine"`
	// VLLM is false for a companion exporter (DCGM, node, a gateway).
	VLLM bool `json:"vllm"`
	// ConsistentWith and Likely are version ranges ("-" when not vLLM).
	ConsistentWith string `json:"consistent_with"`
	Likely         string `json:"likely"`
}

// CatalogSignal is where one signal was found.
type CatalogSignal struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	Unit string `json:"unit"`
	// Companion is true when only companion exporters carry the signal
	// (gpu_util from DCGM); Found and Of then count those exporters.
	Companion bool `json:"companion"`
	// Found counts the targets that carry the signal, of Of: the vLLM
	// targets, or the companion exporters for a companion signal.
	Found int `json:"found"`
	Of    int `json:"of"`
	// Metrics are the metric names it was found under, with the targets
	// of each.
	Metrics []CatalogMetric `json:"metrics"`
	// MissingOn lists the counted targets without the signal.
	MissingOn []string `json:"missing_on"`
}

// CatalogMetric is one metric name a signal was found under.
type CatalogMetric struct {
	Metric  string   `json:"metric"`
	Targets []string `json:"targets"`
}

// CatalogReport is the JSON form of res.
func CatalogReport(res catalog.Resolution) CatalogJSON {
	vllm, comp := splitCompanions(res)
	out := CatalogJSON{Title: res.Title(), Versions: "-", Targets: []CatalogTarget{}, Signals: []CatalogSignal{},
		Missing: []string{}, Warnings: res.WarningLines()}
	if out.Warnings == nil {
		out.Warnings = []string{}
	}
	if len(vllm.Targets) > 0 {
		out.Versions = res.Versions.String()
	}
	for _, t := range res.Targets {
		ct := CatalogTarget{Name: t.Target, Engine: t.Engine.String(), VLLM: t.Engine != catalog.EngineNotVLLM,
			ConsistentWith: "-", Likely: "-"}
		if ct.VLLM {
			ct.ConsistentWith, ct.Likely = t.Versions.String(), t.Likely.String()
		}
		out.Targets = append(out.Targets, ct)
	}
	for _, id := range res.Missing() {
		out.Missing = append(out.Missing, string(id))
	}
	for si, sig := range res.Signals {
		cs := CatalogSignal{ID: string(sig.ID), Kind: sig.Kind.String(), Unit: sig.Unit, Metrics: []CatalogMetric{}, MissingOn: []string{}}
		over := vllm
		switch {
		case len(vllm.Targets) == 0:
			over = res
		case !found(vllm, si) && found(comp, si):
			over, cs.Companion = comp, true
		}
		cs.Of = len(over.Targets)
		for _, t := range over.Targets {
			m := t.Matches[si]
			if !m.Found() {
				cs.MissingOn = append(cs.MissingOn, t.Target)
				continue
			}
			cs.Found++
			i := slices.IndexFunc(cs.Metrics, func(c CatalogMetric) bool { return c.Metric == m.Metric })
			if i < 0 {
				cs.Metrics = append(cs.Metrics, CatalogMetric{Metric: m.Metric})
				i = len(cs.Metrics) - 1
			}
			cs.Metrics[i].Targets = append(cs.Metrics[i].Targets, t.Target)
		}
		out.Signals = append(out.Signals, cs)
	}
	return out
}

// WriteCatalogJSON writes CatalogReport(res) as indented JSON.
func WriteCatalogJSON(w io.Writer, res catalog.Resolution) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(CatalogReport(res))
}
