package diagnose

import (
	"github.com/whyslow/whyslow/snapshot"
)

// Trimmer returns a function that trims a target for a diagnosis under
// o: the trimmed target keeps the samples of the families the diagnosis
// measures (each catalog signal's family on the target, as
// catalog.Catalog.ResolveTarget matches it) and, of every other family,
// the series' labels and bucket layouts only, which is all a diagnosis
// reads of them: their presence and layouts are version and engine
// clues, and the candidates a signal did not match are not measured.
// Scrapes are kept. The target given is not modified.
//
// A reader that collects the targets of evidence one at a time
// (snapshot.ReadEach) and trims each holds only what the diagnosis
// measures; Diagnose on the trimmed targets returns the report of the
// untrimmed ones. On a vLLM fleet with every histogram family of its
// version that is about a third less.
func (o Options) Trimmer() (func(t *snapshot.Target) *snapshot.Target, error) {
	set, err := o.settings()
	if err != nil {
		return nil, err
	}
	return func(t *snapshot.Target) *snapshot.Target { return trimTarget(&set, t) }, nil
}

// trimTarget is the trimmer of Options.Trimmer under set.
func trimTarget(set *settings, t *snapshot.Target) *snapshot.Target {
	measured := map[string]bool{}
	for _, m := range set.catalog.ResolveTarget(t).Matches {
		if m.Found() {
			measured[m.Family.Name] = true
		}
	}
	out := &snapshot.Target{Name: t.Name, NameFrom: t.NameFrom, Scrapes: t.Scrapes, Families: make(map[string]*snapshot.Family, len(t.Families))}
	for name, f := range t.Families {
		if measured[name] {
			out.Families[name] = f
		} else {
			out.Families[name] = f.WithoutSamples()
		}
	}
	return out
}
