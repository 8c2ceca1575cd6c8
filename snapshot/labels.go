package snapshot

import (
	"maps"
	"slices"
)

// LabelValues lists, sorted, the distinct non-empty values of label over
// every series and histogram series of e: the models a capture serves
// (model_name), its engines, its status codes.
func (e *Evidence) LabelValues(label string) []string {
	seen := map[string]bool{}
	for _, t := range e.Targets {
		for _, f := range t.Families {
			for _, s := range f.Series {
				if v := s.Labels.Get(label); v != "" {
					seen[v] = true
				}
			}
			for _, h := range f.Histograms {
				if v := h.Labels.Get(label); v != "" {
					seen[v] = true
				}
			}
		}
	}
	return slices.Sorted(maps.Keys(seen))
}
