package snapshot

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// dumpFile is a dump found in a directory.
type dumpFile struct {
	path     string
	inSubdir bool
	time     time.Time // from the name; zero if none
	want     listed
}

// listed is what a dump file was when it was listed (by the folder walk,
// or by Read's stat of a path given): readFile opens the file once and
// reads it only if it is still that regular file.
type listed struct {
	// open is the path to open: the file's own path, or, for a link the
	// walk followed, the link's target as resolved then.
	open string
	// noFollow refuses a symbolic link at open: the walk saw no link
	// there (or resolved it). A path given by the user may be a link.
	noFollow bool
	key      fileKey
	keyed    bool
}

// listedAs returns what fi, the stat of open, says about the file.
func listedAs(fi fs.FileInfo, open string, noFollow bool) listed {
	key, ok := keyOf(fi, open)
	return listed{open: open, noFollow: noFollow, key: key, keyed: ok}
}

// walker lists the dumps and TSDBs of one dump directory. It opens
// nothing but directories: only regular files are read later, links that
// lead out of the directory are not followed (unless
// Options.FollowLinks), and every directory is visited once, so that a
// loop of links ends.
type walker struct {
	b        *Builder
	root     string // as given
	realRoot string // root with links resolved
	files    []dumpFile
	tsdbs    []string
	notDump  []string
	skipped  map[string][]string // reason -> paths
	reasons  []string            // keys of skipped, in order met
	visited  map[fileKey]bool    // directories
}

func (w *walker) skip(path, reason string) {
	if w.skipped[reason] == nil {
		w.reasons = append(w.reasons, reason)
	}
	w.skipped[reason] = append(w.skipped[reason], path)
}

// walk lists dir, a directory below (or at) the root.
func (w *walker) walk(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		w.b.problems = append(w.b.problems, Problem{Severity: SeverityError, File: dir, Offset: -1, Err: err})
		if len(entries) == 0 {
			return
		}
	}
	for _, d := range entries {
		name := d.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		path := filepath.Join(dir, name)
		typ := d.Type()
		if !typ.IsDir() && !isDumpName(name) && typ&fs.ModeSymlink == 0 {
			w.notDump = append(w.notDump, path)
			continue
		}
		var fi fs.FileInfo
		real := ""
		if typ&fs.ModeSymlink != 0 {
			if !isDumpName(name) {
				// Only a link to a directory matters then; stat, which
				// opens nothing, tells.
				if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
					w.notDump = append(w.notDump, path)
					continue
				}
			}
			var ok bool
			if fi, real, ok = w.link(path); !ok {
				continue
			}
		} else if fi, err = d.Info(); err != nil {
			w.b.problems = append(w.b.problems, Problem{Severity: SeverityError, File: path, Offset: -1, Err: err})
			continue
		}
		switch m := fi.Mode(); {
		case m.IsDir():
			key, ok := keyOf(fi, path)
			if ok && w.visited[key] {
				w.skip(path, "a link to a folder already read (a loop of links?)")
				continue
			}
			w.visited[key] = true
			if readsAsSource(path) {
				if _, dup := w.b.seenFile(fi, path); dup {
					w.skip(path, dupReason)
					continue
				}
				w.tsdbs = append(w.tsdbs, path)
				continue
			}
			w.walk(path)
		case m.IsRegular():
			if real != "" && isKernelFile(real) {
				w.skip(path, "a link to a file of /proc, /sys or /dev (a kernel interface, not a dump)")
				continue
			}
			if _, dup := w.b.seenFile(fi, path); dup {
				w.skip(path, dupReason)
				continue
			}
			rel, _ := filepath.Rel(w.root, path)
			inSub := strings.ContainsRune(rel, filepath.Separator)
			open := path
			if real != "" {
				open = real
			}
			w.files = append(w.files, dumpFile{path: path, inSubdir: inSub, time: parsePathName(path, inSub).time,
				want: listedAs(fi, open, true)})
		default:
			w.skip(path, specialKind(m)+", not a regular file")
		}
	}
}

// link resolves the link at path. It reports false, after noting why,
// when the link is not to be followed: broken, a loop, or leading out of
// the root without Options.FollowLinks.
func (w *walker) link(path string) (fs.FileInfo, string, bool) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		switch {
		case errors.Is(err, syscall.ELOOP) || strings.Contains(err.Error(), "too many links"):
			w.skip(path, "a loop of symbolic links")
		case errors.Is(err, fs.ErrNotExist):
			w.skip(path, "a broken symbolic link")
		default:
			w.b.problems = append(w.b.problems, Problem{Severity: SeverityError, File: path, Offset: -1, Err: err})
		}
		return nil, "", false
	}
	if !w.b.opts.FollowLinks && !within(real, w.realRoot) {
		w.skip(path, "a symbolic link to outside the folder (Options.FollowLinks follows it)")
		return nil, "", false
	}
	fi, err := os.Stat(path)
	if err != nil {
		w.b.problems = append(w.b.problems, Problem{Severity: SeverityError, File: path, Offset: -1, Err: err})
		return nil, "", false
	}
	return fi, real, true
}

// within reports whether path lies at or under root (both cleaned and
// with links resolved).
func within(path, root string) bool {
	if path == root {
		return true
	}
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// isKernelFile reports whether a resolved path names a file of a kernel
// interface: reading /proc/self/mem or /dev/zero is never a dump.
func isKernelFile(real string) bool {
	for _, p := range []string{"/proc", "/sys", "/dev"} {
		if real == p || strings.HasPrefix(real, p+"/") {
			return true
		}
	}
	return false
}

// specialKind names a file mode that is neither a directory nor regular.
func specialKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "a special file"
}

// seenFile records a regular file (or a TSDB directory) to be read and
// reports whether it was recorded before (under the path first).
func (b *Builder) seenFile(fi fs.FileInfo, path string) (first string, dup bool) {
	key, ok := keyOf(fi, path)
	if !ok {
		return "", false
	}
	if first, dup := b.seen[key]; dup {
		return first, true
	}
	if b.seen == nil {
		b.seen = map[fileKey]string{}
	}
	b.seen[key] = path
	return "", false
}

// addDir reads a dump directory: every dump file below dir (see
// isDumpName), in the order of the times in their names, and every TSDB
// directory below it through its registered Source (snapshot/tsdb for TSDBs). dir may be a link to a directory.
// Nothing under dir is modified.
func (b *Builder) addDir(ctx context.Context, dir string) error {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return err
	}
	if abs, err := filepath.Abs(real); err == nil {
		real = abs
	}
	if isBlockDir(dir) {
		// One block of a TSDB, copied out or named by mistake: its files
		// are not dumps, and a TSDB is read from the directory holding
		// its blocks (with the WAL, when there is one).
		b.problems = append(b.problems, Problem{Severity: SeverityError, File: dir, Offset: -1,
			Err: fmt.Errorf("%w: the directory is one Prometheus TSDB block (meta.json, index, chunks/): "+
				"give the data directory that holds the blocks, %s", ErrEmpty, filepath.Dir(filepath.Clean(dir)))})
		return nil
	}
	w := &walker{b: b, root: dir, realRoot: real, skipped: map[string][]string{}, visited: map[fileKey]bool{}}
	if fi, err := os.Stat(dir); err == nil {
		if key, ok := keyOf(fi, dir); ok {
			w.visited[key] = true
		}
	}
	w.walk(dir)
	files, tsdbs := w.files, w.tsdbs
	if len(w.notDump) > 0 {
		list, more := firstFew(w.notDump)
		b.problems = append(b.problems, Problem{Severity: SeverityWarning, File: dir, Offset: -1,
			Err: fmt.Errorf("skipped %d files that are not dumps by name (%s): %s%s", len(w.notDump), strings.Join(dumpExts, " "), list, more)})
	}
	for _, r := range w.reasons {
		paths := w.skipped[r]
		list, more := firstFew(paths)
		b.problems = append(b.problems, Problem{Severity: SeverityWarning, File: dir, Offset: -1,
			Err: fmt.Errorf("%w: %d entries: %s: %s%s", ErrSkipped, len(paths), r, list, more)})
	}
	if len(files) == 0 && len(tsdbs) == 0 {
		if len(w.skipped) > 0 && len(w.notDump) == 0 && allDuplicates(w.skipped) {
			return nil // a folder given twice: read once, said above
		}
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
		if b.opts.Memory.Err() != nil {
			return nil // Read returns the budget's error
		}
		if b.opts.Progress != nil {
			b.opts.Progress(Progress{Path: dir, What: "dumps", Done: i, Total: len(files)})
		}
		if !f.time.IsZero() && !b.inRange(f.time) {
			continue
		}
		b.addFile(f.path, f.inSubdir, f.want)
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

// dupReason is the reason for skipping a file reached twice.
const dupReason = "files already read through another path (the same folder given twice, a hard link or a link), read once"

func allDuplicates(skipped map[string][]string) bool {
	for r := range skipped {
		if r != dupReason {
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
func (b *Builder) addFile(path string, inSubdir bool, want listed) {
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

// Test hooks: testBeforeOpen runs between a file's listing and its
// opening (a test swaps the file there); testReader wraps the reader of
// a file's bytes (a test counts them).
var (
	testBeforeOpen func(path string)
	testReader     func(io.Reader) io.Reader
)

// openListed opens the file listed as want, once, without following a
// link where none was listed and without blocking on a named pipe, and
// checks that the descriptor is the regular file listed (same device and
// inode): a dump replaced by a link, a FIFO or another file after it was
// listed is never read. path names the file in errors.
func openListed(path string, want listed) (*os.File, fs.FileInfo, error) {
	if testBeforeOpen != nil {
		testBeforeOpen(path)
	}
	f, err := openFile(want.open, want.noFollow)
	if err != nil {
		if li, lerr := os.Lstat(want.open); want.noFollow && lerr == nil && li.Mode()&fs.ModeSymlink != 0 {
			return nil, nil, fmt.Errorf("%w: the file listed is now a symbolic link; not read", ErrChanged)
		}
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	switch m := fi.Mode(); {
	case m.IsDir():
		f.Close()
		return nil, nil, fmt.Errorf("is a directory")
	case !m.IsRegular():
		f.Close()
		return nil, nil, fmt.Errorf("%w: the regular file listed is now %s; not read", ErrChanged, specialKind(m))
	}
	if key, ok := keyOf(fi, want.open); want.keyed && ok && key != want.key {
		f.Close()
		return nil, nil, fmt.Errorf("%w: the file listed was replaced by another file; not read", ErrChanged)
	}
	return f, fi, nil
}

// readFile reads the file listed as want (see openListed). A plain file
// is read whole (its size is checked against the per-scrape limit before
// it is read) unless binary data turn up: reading stops at the chunk
// that holds them, and checkContent reports them. A gzip file is inflated
// as it streams (see inflow), so that a bomb costs its limit, not its
// inflated size. lm is nil when the data are as found in the file.
func (b *Builder) readFile(path string, want listed) ([]byte, *lineMap, time.Time, error) {
	f, fi, err := openListed(path, want)
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
		zr, err := openGzip(bufio.NewReaderSize(r, chunkSize))
		if err != nil {
			return nil, nil, fi.ModTime(), err
		}
		defer zr.Close()
		lm := &lineMap{}
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
	data := make([]byte, 0, min(fi.Size()+1, maxChunk))
	var bin binaryScan
	for {
		if len(data) == cap(data) {
			grow := fi.Size() + 1 - int64(len(data)) // the rest as listed
			if grow < 64<<10 {
				grow = 64 << 10 // the file grows
			}
			data = slices.Grow(data, int(grow))
		}
		n, err := r.Read(data[len(data):min(cap(data), len(data)+maxChunk)])
		data = data[:len(data)+n]
		if bin.scan(data[len(data)-n:]) {
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
	br := bufio.NewReaderSize(r, chunkSize)
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
	lm := &lineMap{}
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

// isBlockDir reports whether dir is itself a TSDB block: it holds a
// meta.json file and a chunks directory (a data directory holds blocks,
// each of which does).
func isBlockDir(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, "meta.json"))
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	fi, err = os.Stat(filepath.Join(dir, "chunks"))
	return err == nil && fi.IsDir()
}
