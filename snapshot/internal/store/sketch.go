package store

import (
	"github.com/prometheus/prometheus/model/labels"

	"github.com/whyslow/whyslow/snapshot"
)

// Sketch returns the target named name that the series lsets (each with
// __name__) make without any sample: its families as Columns.Evidence
// classifies them (a classic histogram from _bucket series with an le
// label and their _sum and _count, a summary from a quantile label, a
// counter from a _total name, else untyped), each series listed by its
// labels (no samples, a histogram with its bucket layout and no rows). It
// is what a reader knows of a target from an index before it reads a
// sample, and what Options.ForTarget is given: lsets may hold one
// series per sample name, enough for the families' names and types.
// Scrapes are empty.
func Sketch(name string, lsets []labels.Labels) *snapshot.Target {
	cols := NewColumns(name, snapshot.Options{TargetName: func(string, string) string { return name }})
	for _, ls := range lsets {
		if c := cols.Series(name, ls); c != nil {
			c.KeepLabels()
		}
	}
	for _, t := range cols.Evidence().Targets {
		if t.Name == name {
			return t
		}
	}
	return &snapshot.Target{Name: name, NameFrom: "override", Families: map[string]*snapshot.Family{}}
}
