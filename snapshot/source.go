package snapshot

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

// ErrNoReader: the input needs a reader the program does not link: a
// TSDB directory read without importing snapshot/tsdb.
var ErrNoReader = errors.New("no reader linked for this input")

// A Source reads one kind of evidence that is not a dump file: a
// Prometheus TSDB directory (package snapshot/tsdb), and later, say, a
// Prometheus-compatible server at an http(s):// address. Sources register
// themselves from an init function, the way image/png registers a format
// for image.Decode, so that a program links only the readers it imports:
//
//	import _ "github.com/whyslow/whyslow/snapshot/tsdb" // Read reads TSDB directories
//
// Read and the dump-directory walk ask every registered Source, in the
// order of registration, whether it reads a path before treating the path
// as a file or a dump directory.
type Source struct {
	// Name names the source in problems and progress: "tsdb".
	Name string
	// Match reports whether the source reads path: a TSDB directory, a
	// URL. It must be cheap (a few stats) and must not change anything.
	Match func(path string) bool
	// Read reads path into Evidence under opts, never changing anything
	// under it. Problems of single parts travel in Evidence.Problems; an
	// error means nothing could be read (the Evidence may still list the
	// problems).
	Read func(ctx context.Context, path string, opts Options) (*Evidence, error)
	// ReadEach, when non-nil, reads path as Read does but hands the
	// targets over one at a time (snapshot.ReadEach uses it when path is
	// the only path): it calls visit once per target, in name order, with
	// the target Read's Evidence would hold, keeps no reference to it
	// after visit returns, and returns the rest of that Evidence (Sources
	// and Problems; no Targets). Before the first visit it calls span
	// with bounds of the sample times (ms) of every target it will visit
	// (wider bounds are fine; minT > maxT when there is none). An error
	// returned by span or visit stops the read and is returned as is.
	ReadEach func(ctx context.Context, path string, opts Options, span func(minT, maxT int64) error, visit func(*Target) error) (*Evidence, error)
	// Redact, when non-nil, returns path as it may be shown: in
	// Evidence.Sources and in the Problem of a failed Read (a URL without
	// its user information and query string). Read's own Evidence names
	// its sources itself.
	Redact func(path string) string
}

var sources struct {
	sync.RWMutex
	list []Source
}

// RegisterSource makes s available to Read. It panics, as a programming
// error, when s has no Name, Match or Read, or when a source of that name
// is already registered.
func RegisterSource(s Source) {
	if s.Name == "" || s.Match == nil || s.Read == nil {
		panic("snapshot: RegisterSource: a Source needs a Name, Match and Read")
	}
	sources.Lock()
	defer sources.Unlock()
	if slices.ContainsFunc(sources.list, func(o Source) bool { return o.Name == s.Name }) {
		panic("snapshot: RegisterSource: source " + s.Name + " registered twice")
	}
	sources.list = append(sources.list, s)
}

// sourceFor returns the first registered source that reads path, or nil.
func sourceFor(path string) *Source {
	sources.RLock()
	defer sources.RUnlock()
	for i := range sources.list {
		if sources.list[i].Match(path) {
			s := sources.list[i]
			return &s
		}
	}
	return nil
}

// IsTSDB reports whether path looks like a Prometheus TSDB data directory
// or snapshot directory: a directory holding block directories (with a
// meta.json), a wal/ or a chunks_head/ directory. It only reads directory
// entries, and needs no TSDB reader: Read uses it to say which import a
// program lacks.
func IsTSDB(path string) bool {
	fi, err := os.Stat(path)
	if err != nil || !fi.IsDir() {
		return false
	}
	for _, d := range []string{"wal", "chunks_head"} {
		if fi, err := os.Stat(filepath.Join(path, d)); err == nil && fi.IsDir() {
			return true
		}
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(path, e.Name(), "meta.json")); err == nil {
			return true
		}
	}
	return false
}

// errNoTSDBReader is the problem of a TSDB directory read by a program that
// does not link the TSDB reader.
func errNoTSDBReader(dir string) error {
	return fmt.Errorf("%w: %s is a Prometheus TSDB directory, and the program does not link the TSDB reader "+
		"(import _ \"github.com/whyslow/whyslow/snapshot/tsdb\")", ErrNoReader, dir)
}

// readsAsSource reports whether path is read by a registered source, or is
// a TSDB directory that none reads (then it is a problem, not a dump
// directory).
func readsAsSource(path string) bool {
	return sourceFor(path) != nil || IsTSDB(path)
}

// addSource reads path with the source that reads it and merges the
// result; a TSDB directory without a registered reader is a problem.
func (b *Builder) addSource(ctx context.Context, path string) {
	src := sourceFor(path)
	if src == nil {
		b.problems = append(b.problems, Problem{Severity: SeverityError, File: path, Offset: -1, Err: errNoTSDBReader(path)})
		b.sources = append(b.sources, path)
		return
	}
	shown := path
	if src.Redact != nil {
		shown = src.Redact(path)
	}
	b.watch.note(shown)
	e, err := src.Read(ctx, path, b.opts)
	if err != nil {
		b.problems = append(b.problems, Problem{Severity: SeverityError, File: shown, Offset: -1, Err: err})
	}
	if e != nil {
		// e is read for this builder alone and dropped after: its
		// samples are taken, not copied.
		b.adopt = true
		b.AddEvidence(e)
		b.adopt = false
	}
	if e == nil || !slices.Contains(e.Sources, shown) {
		b.sources = append(b.sources, shown)
	}
}

// WithDefaults returns l with each zero field replaced by its default (see
// DefaultLimits), as Read applies them; for sources in other packages.
func (l Limits) WithDefaults() Limits { return l.withDefaults() }
