package snapshot

import "slices"

// MergeRanges merges evidence read from the same paths over disjoint time
// ranges (a baseline and an incident window far apart, read one range at
// a time so that the history between them is not read) into one
// Evidence, as Merge does, except that a problem or source met by several
// reads is listed once. The inputs are not modified.
func MergeRanges(evs ...*Evidence) *Evidence {
	ev := Merge(evs...)
	seen := map[string]bool{}
	ev.Problems = slices.DeleteFunc(ev.Problems, func(p Problem) bool {
		k := p.String()
		dup := seen[k]
		seen[k] = true
		return dup
	})
	src := map[string]bool{}
	ev.Sources = slices.DeleteFunc(ev.Sources, func(s string) bool {
		dup := src[s]
		src[s] = true
		return dup
	})
	return ev
}
