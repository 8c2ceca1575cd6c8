package snapshot

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/whyslow/whyslow/snapshot/internal/outlier"
)

// ReadEach reads paths as Read does, but hands the targets to visit one
// at a time, in the order of Read's Evidence.Targets (by name), each
// equal to the target of that name Read would return: a caller that
// looks at one target at a time (a survey of the fleet) holds one
// target's samples, not the fleet's. visit may keep the target or drop
// it; ReadEach keeps no reference to it after visit returns. When visit
// returns an error, ReadEach stops and returns it (with a nil Evidence).
//
// The returned Evidence is what Read would return without its Targets
// (nil): Sources and Problems (the same problems, the order of those
// found target by target aside). Errors are Read's: nothing usable read
// (the Evidence, still listing the problems, is returned with it, after
// the targets were visited), the memory budget exceeded, ctx done.
//
// Only a single path read by a Source that streams (Source.ReadEach: a
// TSDB directory once snapshot/tsdb is imported, a server URL once
// snapshot/promapi is, a batch of pods at a time) is read target by
// target; then the Limits.MaxMemory budget is charged while a target is
// held and released after its visit, so that a fleet larger than the
// budget is read when each target fits, and Limits.MaxTotalBytes bounds
// the bytes read over all targets. Any other paths (dump files and
// directories, several paths) are read whole with Read and the targets
// handed over from its Evidence, each dropped from it after its visit.
//
// The check of time that needs the whole evidence (ErrTimeOutlier) is
// exact: when the sample times the source announces (Source.ReadEach's
// span, from its index) lie farther apart than the check's smallest
// margin (6 h), some scrape may be an outlier, and the source is read
// once more beforehand for every target's scrape times alone (one
// target's samples at a time again); within 6 h none can be, and the
// source is read once. With Options.Revisit, the source is read once and
// the check made at the end, reading and visiting again only where it
// finds an outlier. The checks of one target (counters that decrease
// without a restart) run on each target as Read runs them.
func ReadEach(ctx context.Context, paths []string, opts Options, visit func(*Target) error) (*Evidence, error) {
	if err := checkFormat(opts.Format); err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("snapshot: %w: no path given", ErrEmpty)
	}
	if len(paths) == 1 && paths[0] != "-" {
		if src := sourceFor(paths[0]); src != nil && src.ReadEach != nil {
			return readEachSource(ctx, paths[0], src, opts, visit)
		}
	}
	ev, err := Read(ctx, paths, opts)
	if ev == nil {
		return nil, err
	}
	ts := ev.Targets
	ev.Targets = nil
	for i, t := range ts {
		ts[i] = nil
		if verr := visit(t); verr != nil {
			return nil, verr
		}
	}
	return ev, err
}

// errNeedTimes stops a streamed read whose targets cannot be checked for
// time outliers one at a time: the whole evidence's scrape times are read
// first.
var errNeedTimes = errors.New("snapshot: the scrape times of every target are needed first")

// eachRead is the state of one ReadEach of a streaming source.
type eachRead struct {
	opts  Options
	visit func(*Target) error
	// listed and metrics are the sets of the Builder of every target
	// (NewBuilder's), made once (named).
	listed, metrics map[string]bool
	named           bool

	timesKnown bool // no outlier is possible, or they were searched
	// collecting is set when the outliers are searched after the read
	// (Options.Revisit): times holds the known scrape times (ms) of the
	// targets visited, and scrapes counts all their scrapes.
	collecting bool
	times      []int64
	scrapes    int
	drop       map[string]map[int64]bool // outlier scrapes to leave out, by target
	visitErr   error                     // what visit returned
	usable     bool                      // a visited target holds a sample
	built      []Problem                 // problems of building the targets (AddEvidence, finishFamily)
	checked    []Problem                 // problems of the counter checks
	outliers   []Problem                 // problems of the outlier search
}

// span decides, before the first target, whether the targets can be
// checked one at a time: with every sample within outlier.MinMargin of
// every other, no scrape can be an outlier.
func (r *eachRead) span(minT, maxT int64) error {
	if r.timesKnown || minT > maxT || maxT-minT <= outlier.MinMargin.Milliseconds() {
		r.timesKnown = true
		return nil
	}
	if r.opts.Revisit != nil {
		r.collecting = true
		return nil
	}
	return errNeedTimes
}

// target processes one target of the source as Builder.AddEvidence and
// Builder.Evidence process it in Read, and visits it.
func (r *eachRead) target(t *Target) error {
	switch {
	case r.collecting:
		r.scrapes += len(t.Scrapes)
		for _, sc := range t.Scrapes {
			if sc.TimeFrom != TimeUnknown {
				r.times = append(r.times, sc.Time.UnixMilli())
			}
		}
	case !r.timesKnown:
		return errNeedTimes // the source did not call span
	}
	if !r.named {
		r.listed, r.metrics, r.named = listedNames(r.opts), metricNames(r.opts), true
	}
	b := newBuilder(r.opts, r.listed, r.metrics)
	b.adopt, b.perTarget = true, true
	if r.opts.ForTarget != nil {
		b.listUnsampled(t)
	}
	if !r.opts.KeepTimeOutliers {
		b.dropAt = r.drop[t.Name]
	}
	b.AddEvidence(&Evidence{Targets: []*Target{t}})
	e := b.Evidence()
	r.built = append(r.built, e.Problems[:b.checksAt]...)
	r.checked = append(r.checked, e.Problems[b.checksAt:]...)
	for _, tg := range e.Targets {
		r.usable = r.usable || (&Evidence{Targets: []*Target{tg}}).usable()
		if err := r.visit(tg); err != nil {
			r.visitErr = err
			return err
		}
	}
	return nil
}

// readEachSource is ReadEach of one path read by a streaming source: as
// Read's addSource, target by target.
func readEachSource(ctx context.Context, path string, src *Source, opts Options, visit func(*Target) error) (*Evidence, error) {
	if opts.Memory == nil {
		opts.Memory = NewMemoryBudget(opts.Limits.withDefaults().MaxMemory)
	}
	if err := opts.Memory.Err(); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	shown := path
	if src.Redact != nil {
		shown = src.Redact(path)
	}
	w := readWatchOf(ctx)
	w.note(shown)
	defer w.note("")
	r := &eachRead{opts: opts, visit: visit}
	e, err := src.ReadEach(ctx, path, opts, r.span, r.target)
	if r.collecting && r.visitErr == nil && ctx.Err() == nil {
		// Options.Revisit: the targets were visited before their times
		// were checked. Where a scrape must be left out, or the read
		// failed (a read of the times first would have failed before any
		// visit), start over the way a read without Revisit goes.
		r.collecting = false
		if err != nil || anyTimeOutlier(r.scrapes, r.times) {
			if err := opts.Revisit(); err != nil {
				return nil, err
			}
			*r = eachRead{opts: opts, visit: visit}
			err = errNeedTimes
		}
		r.times = nil
	}
	if errors.Is(err, errNeedTimes) && r.visitErr == nil {
		e, err = r.readTimes(ctx, path, src)
		if err == nil {
			e, err = src.ReadEach(ctx, path, opts, r.span, r.target)
		}
	}
	if r.visitErr != nil {
		return nil, r.visitErr
	}
	if cerr := ctx.Err(); cerr != nil {
		return nil, cerr
	}
	if merr := opts.Memory.Err(); merr != nil {
		return nil, fmt.Errorf("snapshot: %w", merr)
	}
	ev := &Evidence{}
	if err != nil {
		ev.Problems = append(ev.Problems, Problem{Severity: SeverityError, File: shown, Offset: -1, Err: err})
	}
	if e != nil {
		ev.Sources = append(ev.Sources, e.Sources...)
		ev.Problems = append(ev.Problems, e.Problems...)
	}
	if e == nil || !slices.Contains(e.Sources, shown) {
		ev.Sources = append(ev.Sources, shown)
	}
	ev.Problems = append(append(append(ev.Problems, r.built...), r.outliers...), r.checked...)
	if !r.usable {
		return ev, nothingUsable(ev.Problems)
	}
	return ev, nil
}

// readTimes reads the source once for the scrape times of every target
// alone, searches them for outliers as Builder.Evidence does over a whole
// Evidence, and keeps the problems and the scrapes to leave out. It
// returns what the source's read returned when it failed.
func (r *eachRead) readTimes(ctx context.Context, path string, src *Source) (*Evidence, error) {
	opts := r.opts
	if p := opts.Progress; p != nil {
		opts.Progress = func(pr Progress) {
			pr.What += " (scrape times)"
			p(pr)
		}
	}
	times := &Evidence{}
	e, err := src.ReadEach(ctx, path, opts, func(int64, int64) error { return nil }, func(t *Target) error {
		times.Targets = append(times.Targets, &Target{Name: t.Name, Scrapes: slices.Clone(t.Scrapes)})
		return nil
	})
	if err != nil {
		return e, err
	}
	b := NewBuilder(r.opts)
	out := b.timeOutliers(times)
	r.outliers = b.problems
	r.drop = map[string]map[int64]bool{}
	for tg, idx := range out {
		d := map[int64]bool{}
		for i := range idx {
			d[tg.Scrapes[i].Time.UnixMilli()] = true
		}
		r.drop[tg.Name] = d
	}
	r.timesKnown = true
	return e, nil
}

// Streams reports whether ReadEach reads paths one target at a time (a
// single path read by a Source that streams, such as a TSDB directory once
// snapshot/tsdb is imported or a server URL once snapshot/promapi is),
// rather than whole with Read. A caller that reads the evidence twice (a
// survey, then some windows) pays for a second whole read when it does
// not.
func Streams(paths []string) bool {
	if len(paths) != 1 || paths[0] == "-" {
		return false
	}
	src := sourceFor(paths[0])
	return src != nil && src.ReadEach != nil
}
