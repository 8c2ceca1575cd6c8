package snapshot

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// dumpFile is a dump found in a directory.
type dumpFile struct {
	path     string
	inSubdir bool
	time     time.Time // from the name; zero if none
}

// addDir reads a dump directory: every dump file below dir (see
// isDumpName), in the order of the times in their names, and every TSDB
// directory (or other Source) below it through its registered Source.
// Nothing under dir is modified.
func (b *Builder) addDir(ctx context.Context, dir string) error {
	var (
		files   []dumpFile
		tsdbs   []string
		skipped []string
	)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			b.problems = append(b.problems, Problem{Severity: SeverityError, File: path, Offset: -1, Err: err})
			if d != nil && d.IsDir() && path != dir {
				return fs.SkipDir
			}
			return nil
		}
		if path == dir {
			return nil
		}
		name := d.Name()
		if strings.HasPrefix(name, ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if readsAsSource(path) {
				tsdbs = append(tsdbs, path)
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			// A symlink to a regular file is read; anything else skipped.
			fi, err := os.Stat(path)
			if err != nil || !fi.Mode().IsRegular() {
				skipped = append(skipped, path)
				return nil
			}
		}
		if !isDumpName(name) {
			skipped = append(skipped, path)
			return nil
		}
		rel, _ := filepath.Rel(dir, path)
		inSub := strings.ContainsRune(rel, filepath.Separator)
		files = append(files, dumpFile{path: path, inSubdir: inSub, time: parsePathName(path, inSub).time})
		return nil
	})
	if err != nil {
		return err
	}
	if len(skipped) > 0 {
		list := skipped
		if len(list) > 5 {
			list = list[:5]
		}
		more := ""
		if len(skipped) > len(list) {
			more = fmt.Sprintf(" and %d more", len(skipped)-len(list))
		}
		b.problems = append(b.problems, Problem{Severity: SeverityWarning, File: dir, Offset: -1,
			Err: fmt.Errorf("skipped %d files that are not dumps by name (%s): %s%s", len(skipped), strings.Join(dumpExts, " "), strings.Join(list, ", "), more)})
	}
	if len(files) == 0 && len(tsdbs) == 0 {
		b.problems = append(b.problems, Problem{Severity: SeverityError, File: dir, Offset: -1,
			Err: fmt.Errorf("%w: no dump file and no TSDB in the directory", ErrEmpty)})
		return nil
	}
	// Chronological order keeps samples appended in order (no sort later)
	// and bucket layouts changing forward in time.
	slices.SortStableFunc(files, func(x, y dumpFile) int {
		if c := x.time.Compare(y.time); c != 0 {
			return c
		}
		return cmp.Compare(x.path, y.path)
	})
	for i, f := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		if b.opts.Progress != nil {
			b.opts.Progress(Progress{Path: dir, What: "dumps", Done: i, Total: len(files)})
		}
		if !f.time.IsZero() && !b.inRange(f.time) {
			continue
		}
		b.addFile(f.path, f.inSubdir)
	}
	if b.opts.Progress != nil && len(files) > 0 {
		b.opts.Progress(Progress{Path: dir, What: "dumps", Done: len(files), Total: len(files)})
	}
	for _, d := range tsdbs {
		if err := ctx.Err(); err != nil {
			return err
		}
		b.addSource(ctx, d)
	}
	return nil
}

func (b *Builder) inRange(t time.Time) bool {
	ms := t.UnixMilli()
	return ms >= b.minT && ms <= b.maxT
}

// addFile reads one dump file, read-only.
func (b *Builder) addFile(path string, inSubdir bool) {
	data, mtime, err := b.readFile(path)
	if err != nil {
		b.problems = append(b.problems, Problem{Severity: SeverityError, File: path, Offset: -1, Err: err})
		b.sources = append(b.sources, path)
		return
	}
	_ = b.addDump(path, data, mtime, inSubdir)
}

// readFile reads a file opened read-only, refusing files larger than
// the per-scrape limit before reading them.
func (b *Builder) readFile(path string) ([]byte, time.Time, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, time.Time{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, time.Time{}, err
	}
	if fi.IsDir() {
		return nil, time.Time{}, fmt.Errorf("is a directory")
	}
	max, what := b.lim.MaxBytesPerScrape, "Limits.MaxBytesPerScrape"
	if fi.Size() > max {
		// Perhaps a file of many scrapes, which has a larger limit.
		head := make([]byte, headSize)
		n, _ := f.ReadAt(head, 0)
		head = head[:n]
		if len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b {
			head = gunzipHead(head)
		}
		max, what = b.byteLimit(head)
	}
	if fi.Size() > max {
		return nil, fi.ModTime(), fmt.Errorf("%w: %d bytes, more than %s (%d); file not read", ErrLimit, fi.Size(), what, max)
	}
	data := make([]byte, 0, fi.Size()+1)
	for {
		n, err := f.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fi.ModTime(), err
		}
		if int64(len(data)) > max {
			return nil, fi.ModTime(), fmt.Errorf("%w: file grew past %s (%d) while read", ErrLimit, what, max)
		}
		if len(data) == cap(data) {
			data = slices.Grow(data, 64<<10)
		}
	}
	return data, fi.ModTime(), nil
}
