package snapshot

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/whyslow/whyslow/snapshot/internal/dumpdir"
	"github.com/whyslow/whyslow/snapshot/internal/stream"
)

// seenFile records a regular file (or a TSDB directory) to be read and
// reports whether it was recorded before (under the path first).
func (b *Builder) seenFile(fi fs.FileInfo, path string) (first string, dup bool) {
	key, ok := dumpdir.KeyOf(fi, path)
	if !ok {
		return "", false
	}
	if first, dup := b.seen[key]; dup {
		return first, true
	}
	if b.seen == nil {
		b.seen = map[dumpdir.Key]string{}
	}
	b.seen[key] = path
	return "", false
}

// addDir reads a dump directory: every dump file below dir (see
// dumpdir.IsDumpName), in the order of the times in their names, and every TSDB
// directory below it through its registered Source (snapshot/tsdb for TSDBs). dir may be a link to a directory.
// Nothing under dir is modified.
func (b *Builder) addDir(ctx context.Context, dir string) error {
	if dumpdir.IsBlockDir(dir) {
		// One block of a TSDB, copied out or named by mistake: its files
		// are not dumps, and a TSDB is read from the directory holding
		// its blocks (with the WAL, when there is one).
		b.problems = append(b.problems, Problem{Severity: SeverityError, File: dir, Offset: -1,
			Err: fmt.Errorf("%w: the directory is one Prometheus TSDB block (meta.json, index, chunks/): "+
				"give the data directory that holds the blocks, %s", ErrEmpty, filepath.Dir(filepath.Clean(dir)))})
		return nil
	}
	w, err := dumpdir.WalkDir(dir, dumpdir.WalkOptions{
		FollowLinks: b.opts.FollowLinks,
		Seen:        func(fi fs.FileInfo, path string) bool { _, dup := b.seenFile(fi, path); return dup },
		IsSource:    readsAsSource,
	})
	if err != nil {
		return err
	}
	for _, e := range w.Errors {
		b.problems = append(b.problems, Problem{Severity: SeverityError, File: e.Path, Offset: -1, Err: e.Err})
	}
	files, tsdbs := w.Files, w.TSDBs
	if len(w.NotDump) > 0 {
		list, more := firstFew(w.NotDump)
		b.problems = append(b.problems, Problem{Severity: SeverityWarning, File: dir, Offset: -1,
			Err: fmt.Errorf("skipped %d files that are not dumps by name (%s): %s%s", len(w.NotDump), strings.Join(dumpdir.Exts, " "), list, more)})
	}
	for _, r := range w.Reasons {
		paths := w.Skipped[r]
		list, more := firstFew(paths)
		b.problems = append(b.problems, Problem{Severity: SeverityWarning, File: dir, Offset: -1,
			Err: fmt.Errorf("%w: %d entries: %s: %s%s", ErrSkipped, len(paths), r, list, more)})
	}
	if len(files) == 0 && len(tsdbs) == 0 {
		if len(w.Skipped) > 0 && len(w.NotDump) == 0 && allDuplicates(w.Skipped) {
			return nil // a folder given twice: read once, said above
		}
		b.problems = append(b.problems, Problem{Severity: SeverityError, File: dir, Offset: -1,
			Err: fmt.Errorf("%w: no dump file and no TSDB in the directory", ErrEmpty)})
		return nil
	}
	// Chronological order keeps samples appended in order (no sort later)
	// and bucket layouts changing forward in time.
	slices.SortStableFunc(files, func(x, y dumpdir.File) int {
		if c := x.Time.Compare(y.Time); c != 0 {
			return c
		}
		return cmp.Compare(x.Path, y.Path)
	})
	for i, f := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		if b.opts.Memory.Err() != nil {
			return nil // Read returns the budget's error
		}
		if b.opts.Progress != nil {
			b.opts.Progress(Progress{Path: dir, What: "dumps", Done: i, Total: len(files)})
		}
		if !f.Time.IsZero() && !b.inRange(f.Time) {
			continue
		}
		b.addFile(f.Path, f.InSubdir, f.Want)
	}
	if b.opts.Progress != nil && len(files) > 0 {
		b.opts.Progress(Progress{Path: dir, What: "dumps", Done: len(files), Total: len(files)})
	}
	for _, d := range tsdbs {
		if err := ctx.Err(); err != nil {
			return err
		}
		if b.opts.Memory.Err() != nil {
			return nil
		}
		b.addSource(ctx, d)
	}
	return nil
}

// allDuplicates reports whether every entry skipped was a file reached
// twice.
func allDuplicates(skipped map[string][]string) bool {
	for r := range skipped {
		if r != dumpdir.DupReason {
			return false
		}
	}
	return true
}

// firstFew lists up to five paths, and says how many more there are.
func firstFew(paths []string) (list, more string) {
	l := paths
	if len(l) > 5 {
		l = l[:5]
	}
	names := make([]string, len(l))
	for i, p := range l {
		names[i] = escapeName(p)
	}
	if len(paths) > len(l) {
		more = fmt.Sprintf(" and %d more", len(paths)-len(l))
	}
	return strings.Join(names, ", "), more
}

func (b *Builder) inRange(t time.Time) bool {
	ms := t.UnixMilli()
	return ms >= b.minT && ms <= b.maxT
}

// addFile reads one dump file, read-only, if it is still the regular
// file listed as want.
func (b *Builder) addFile(path string, inSubdir bool, want dumpdir.Listed) {
	b.watch.note(path)
	data, lm, mtime, err := b.readFile(path, want)
	if err != nil {
		b.problems = append(b.problems, Problem{Severity: SeverityError, File: path, Offset: -1, Err: err})
		if data == nil {
			b.sources = append(b.sources, path)
			return
		}
	}
	_ = b.addPrepared(path, data, lm, mtime, inSubdir)
}

// testReader, when set (by a test), wraps the reader of a file's bytes
// (the test counts them).
var testReader func(io.Reader) io.Reader

// readFile reads the file listed as want (see dumpdir.Open). A plain file
// is read whole (its size is checked against the per-scrape limit before
// it is read) unless binary data turn up: reading stops at the chunk
// that holds them, and checkContent reports them. A gzip file is inflated
// as it streams (see inflow), so that a bomb costs its limit, not its
// inflated size. lm is nil when the data are as found in the file.
func (b *Builder) readFile(path string, want dumpdir.Listed) ([]byte, *stream.Map, time.Time, error) {
	f, fi, err := dumpdir.Open(path, want)
	if err != nil {
		return nil, nil, time.Time{}, err
	}
	defer f.Close()
	var r io.Reader = f
	if testReader != nil {
		r = testReader(r)
	}
	var magic [2]byte
	if n, _ := f.ReadAt(magic[:], 0); n == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := openGzip(bufio.NewReaderSize(r, stream.ChunkSize))
		if err != nil {
			return nil, nil, fi.ModTime(), err
		}
		defer zr.Close()
		lm := &stream.Map{}
		data, err := b.inflow(path, zr, lm, 0)
		return data, lm, fi.ModTime(), err
	}
	max, what := b.lim.MaxBytesPerScrape, "Limits.MaxBytesPerScrape"
	if fi.Size() > max {
		// Perhaps a file of many scrapes, which has a larger limit.
		head := make([]byte, headSize)
		n, _ := f.ReadAt(head, 0)
		max, what = b.byteLimit(head[:n])
	}
	if fi.Size() > max {
		return nil, nil, fi.ModTime(), limitErr(what, max, fmt.Sprintf("%d bytes, more than %s (%d); file not read", fi.Size(), what, max))
	}
	// The first chunk is read into a buffer of its own: a file of zeros
	// behind one good line costs that chunk, not its size.
	data := make([]byte, 0, min(fi.Size()+1, stream.MaxChunk))
	var bin stream.BinaryScan
	for {
		if len(data) == cap(data) {
			grow := fi.Size() + 1 - int64(len(data)) // the rest as listed
			if grow < 64<<10 {
				grow = 64 << 10 // the file grows
			}
			data = slices.Grow(data, int(grow))
		}
		n, err := r.Read(data[len(data):min(cap(data), len(data)+stream.MaxChunk)])
		data = data[:len(data)+n]
		if bin.Scan(data[len(data)-n:]) {
			break // checkContent reports it; the rest is not read
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, fi.ModTime(), err
		}
		if int64(len(data)) > max {
			return nil, nil, fi.ModTime(), limitErr(what, max, fmt.Sprintf("file grew past %s (%d) while read", what, max))
		}
	}
	return data, nil, fi.ModTime(), nil
}

// addStream reads a dump from a stream (standard input, a FIFO given as
// a path) under the same limits as a file, inflating gzip as it streams.
// A dump whose samples carry no time is timed like a file when the stream
// is a regular file (standard input redirected from one: its mtime), else
// when it was read: a dump read live is a scrape taken then.
func (b *Builder) addStream(name string, r io.Reader) {
	var modTime time.Time
	live := true
	if f, ok := r.(interface{ Stat() (fs.FileInfo, error) }); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			modTime, live = fi.ModTime(), false
		}
	}
	br := bufio.NewReaderSize(r, stream.ChunkSize)
	var src io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := openGzip(br)
		if err != nil {
			b.problems = append(b.problems, Problem{Severity: SeverityError, File: name, Offset: 0, Err: err})
			b.sources = append(b.sources, name)
			return
		}
		defer zr.Close()
		src = zr
	}
	lm := &stream.Map{}
	data, err := b.inflow(name, src, lm, 0)
	if err != nil {
		b.problems = append(b.problems, Problem{Severity: SeverityError, File: name, Offset: -1, Err: err})
		if data == nil {
			b.sources = append(b.sources, name)
			return
		}
	}
	if live {
		b.readAt = time.Now()
		defer func() { b.readAt = time.Time{} }()
	}
	_ = b.addPrepared(name, data, lm, modTime, false)
}
