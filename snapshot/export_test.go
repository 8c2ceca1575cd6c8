package snapshot

// Hooks for the external tests of the Builder (builder_whole_test.go).

var Canonical = canonical

// SetAdopt lets b take its inputs' slices (as a source's own Builder does).
func (b *Builder) SetAdopt(v bool) { b.adopt = v }

// TookWhole reports whether b kept an input whole.
func (b *Builder) TookWhole() bool { return b.whole != nil }

// AddTargets merges e into b target by target, never whole.
func (b *Builder) AddTargets(e *Evidence) {
	b.sources, b.problems = append(b.sources, e.Sources...), append(b.problems, e.Problems...)
	b.addTargets(e.Targets)
}
