package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/whyslow/whyslow/snapshot/internal/dumpdir"
)

// Read reads every path into one Evidence: dump files (text 0.0.4 or
// OpenMetrics 1.0, gzip-compressed or not, /federate dumps included), dump
// directories (DIR/<pod>/<timestamp>.prom, flat <pod>_<timestamp>.prom,
// several exporters of one pod side by side) and whatever a registered
// Source reads: TSDB data or snapshot directories once the program imports
// snapshot/tsdb (see RegisterSource). "-" reads standard input.
//
// Problems with single files or families become Evidence.Problems, and
// the result is partial (see Evidence.Partial) with a nil error. Read
// returns an error only when nothing usable was read (the error then
// joins the problems, and the returned Evidence still lists them), when
// the evidence kept would exceed Limits.MaxMemory (an error wrapping a
// *LimitError, with a nil Evidence), or when ctx is cancelled (with a nil
// Evidence).
//
// Read never writes, renames, locks or changes anything under the paths:
// files are opened read-only, and sources promise the same (the TSDB
// reader replays heads into memory).
func Read(ctx context.Context, paths []string, opts Options) (*Evidence, error) {
	if err := checkFormat(opts.Format); err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("snapshot: %w: no path given", ErrEmpty)
	}
	b := NewBuilder(opts)
	b.watch = readWatchOf(ctx)
	defer b.watch.note("")
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := b.opts.Memory.Err(); err != nil {
			return nil, fmt.Errorf("snapshot: %w", err)
		}
		if p == "-" {
			b.addStdin()
			continue
		}
		if readsAsSource(p) {
			if fi, err := os.Stat(p); err == nil && fi.IsDir() {
				if _, dup := b.seenFile(fi, p); dup {
					b.problems = append(b.problems, Problem{Severity: SeverityWarning, File: p, Offset: -1,
						Err: fmt.Errorf("%w: a TSDB already read through another path, read once", ErrSkipped)})
					continue
				}
			}
			b.addSource(ctx, p)
			continue
		}
		fi, err := os.Stat(p) // a link to a folder is that folder
		switch {
		case err != nil:
			b.problems = append(b.problems, Problem{Severity: SeverityError, File: p, Offset: -1, Err: err})
		case fi.IsDir():
			if err := b.addDir(ctx, p); err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				b.problems = append(b.problems, Problem{Severity: SeverityError, File: p, Offset: -1, Err: err})
			}
		case fi.Mode().IsRegular():
			if first, dup := b.seenFile(fi, p); dup {
				b.problems = append(b.problems, Problem{Severity: SeverityWarning, File: p, Offset: -1,
					Err: fmt.Errorf("%w: the same file as %s, read once", ErrSkipped, escapeName(first))})
				continue
			}
			// A path given may be a link; the file opened must be the one
			// stat saw.
			b.addFile(p, false, dumpdir.ListedAs(fi, p, false))
		default:
			// A FIFO (whyslow diagnose <(curl -s pod:8000/metrics)), a
			// character device: read as a stream, like standard input.
			b.addPath(p)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := b.opts.Memory.Err(); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	e := b.Evidence()
	if !e.usable() {
		return e, nothingUsable(e.Problems)
	}
	return e, nil
}

// nothingUsable is the error of a read that kept no sample: the errors
// among problems, or ErrEmpty when there are none.
func nothingUsable(problems []Problem) error {
	var errs []error
	for _, p := range problems {
		if p.Severity == SeverityError {
			errs = append(errs, p)
		}
	}
	if len(errs) == 0 {
		errs = append(errs, ErrEmpty)
	}
	return fmt.Errorf("snapshot: nothing usable read: %w", errors.Join(errs...))
}

// usable reports whether e holds at least one sample.
func (e *Evidence) usable() bool {
	for _, t := range e.Targets {
		for _, f := range t.Families {
			if len(f.Series) > 0 || len(f.Histograms) > 0 {
				return true
			}
		}
	}
	return false
}

// stdinName is the file name of standard input in problems.
const stdinName = "-"

func (b *Builder) addStdin() {
	b.watch.note("standard input")
	var in io.Reader = os.Stdin
	if b.opts.Stdin != nil {
		in = b.opts.Stdin
	}
	b.addStream(stdinName, in)
}

// addPath reads a path that is neither a directory nor a regular file
// as a stream.
func (b *Builder) addPath(p string) {
	b.watch.note(p)
	f, err := os.Open(p)
	if err != nil {
		b.problems = append(b.problems, Problem{Severity: SeverityError, File: p, Offset: -1, Err: err})
		b.sources = append(b.sources, p)
		return
	}
	defer f.Close()
	b.addStream(p, f)
}
