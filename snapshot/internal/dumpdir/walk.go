package dumpdir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// A Walk is what WalkDir listed below one directory.
type Walk struct {
	// Files are the dumps, in the order met.
	Files []File
	// TSDBs are the directories a registered reader reads
	// (WalkOptions.IsSource).
	TSDBs []string
	// NotDump are the files not named like dumps (IsDumpName).
	NotDump []string
	// Skipped maps a reason to the entries skipped for it; Reasons are
	// its keys, in the order met.
	Skipped map[string][]string
	Reasons []string
	// Errors are the entries that could not be listed, in the order met.
	Errors []Error
}

// A File is a dump WalkDir listed.
type File struct {
	Path string
	// InSubdir says the file lies in a subdirectory of the root.
	InSubdir bool
	// Time is the time its name gives (ParseName); zero if none.
	Time time.Time
	// Want is what Open checks the file still is.
	Want Listed
}

// An Error is an entry WalkDir could not list.
type Error struct {
	Path string
	Err  error
}

// WalkOptions say how WalkDir treats what it meets.
type WalkOptions struct {
	// FollowLinks follows symbolic links that lead out of the root.
	FollowLinks bool
	// Seen records a regular file (or a TSDB directory) to be read and
	// reports whether it was recorded before, through another path; nil
	// records nothing.
	Seen func(fi fs.FileInfo, path string) bool
	// IsSource reports whether a directory is read by a registered reader
	// (a TSDB), not walked; nil walks every directory.
	IsSource func(dir string) bool
}

// DupReason is the reason of Walk.Skipped for a file reached twice.
const DupReason = "files already read through another path (the same folder given twice, a hard link or a link), read once"

// WalkDir lists the dumps and TSDBs below root. It opens nothing but
// directories: only regular files are listed, hidden entries are not,
// links that lead out of root are not followed (unless
// opts.FollowLinks), links into /proc, /sys and /dev never are, and every
// directory is visited once, so that a loop of links ends. It returns an
// error only when root's links cannot be resolved.
func WalkDir(root string, opts WalkOptions) (*Walk, error) {
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, err
	}
	if abs, err := filepath.Abs(real); err == nil {
		real = abs
	}
	w := &walker{opts: opts, root: root, realRoot: real, out: &Walk{Skipped: map[string][]string{}}, visited: map[Key]bool{}}
	if fi, err := os.Stat(root); err == nil {
		if key, ok := KeyOf(fi, root); ok {
			w.visited[key] = true
		}
	}
	w.walk(root)
	return w.out, nil
}

type walker struct {
	opts     WalkOptions
	root     string // as given
	realRoot string // root with links resolved
	out      *Walk
	visited  map[Key]bool // directories
}

func (w *walker) skip(path, reason string) {
	if w.out.Skipped[reason] == nil {
		w.out.Reasons = append(w.out.Reasons, reason)
	}
	w.out.Skipped[reason] = append(w.out.Skipped[reason], path)
}

func (w *walker) fail(path string, err error) {
	w.out.Errors = append(w.out.Errors, Error{Path: path, Err: err})
}

func (w *walker) seen(fi fs.FileInfo, path string) bool {
	return w.opts.Seen != nil && w.opts.Seen(fi, path)
}

// walk lists dir, a directory below (or at) the root.
func (w *walker) walk(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		w.fail(dir, err)
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
		if !typ.IsDir() && !IsDumpName(name) && typ&fs.ModeSymlink == 0 {
			w.out.NotDump = append(w.out.NotDump, path)
			continue
		}
		var fi fs.FileInfo
		real := ""
		if typ&fs.ModeSymlink != 0 {
			if !IsDumpName(name) {
				// Only a link to a directory matters then; stat, which
				// opens nothing, tells.
				if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
					w.out.NotDump = append(w.out.NotDump, path)
					continue
				}
			}
			var ok bool
			if fi, real, ok = w.link(path); !ok {
				continue
			}
		} else if fi, err = d.Info(); err != nil {
			w.fail(path, err)
			continue
		}
		switch m := fi.Mode(); {
		case m.IsDir():
			key, ok := KeyOf(fi, path)
			if ok && w.visited[key] {
				w.skip(path, "a link to a folder already read (a loop of links?)")
				continue
			}
			w.visited[key] = true
			if w.opts.IsSource != nil && w.opts.IsSource(path) {
				if w.seen(fi, path) {
					w.skip(path, DupReason)
					continue
				}
				w.out.TSDBs = append(w.out.TSDBs, path)
				continue
			}
			w.walk(path)
		case m.IsRegular():
			if real != "" && isKernelFile(real) {
				w.skip(path, "a link to a file of /proc, /sys or /dev (a kernel interface, not a dump)")
				continue
			}
			if w.seen(fi, path) {
				w.skip(path, DupReason)
				continue
			}
			rel, _ := filepath.Rel(w.root, path)
			inSub := strings.ContainsRune(rel, filepath.Separator)
			open := path
			if real != "" {
				open = real
			}
			w.out.Files = append(w.out.Files, File{Path: path, InSubdir: inSub, Time: ParseName(path, inSub).Time,
				Want: ListedAs(fi, open, true)})
		default:
			w.skip(path, specialKind(m)+", not a regular file")
		}
	}
}

// link resolves the link at path. It reports false, after noting why,
// when the link is not to be followed: broken, a loop, or leading out of
// the root without WalkOptions.FollowLinks.
func (w *walker) link(path string) (fs.FileInfo, string, bool) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		switch {
		case errors.Is(err, syscall.ELOOP) || strings.Contains(err.Error(), "too many links"):
			w.skip(path, "a loop of symbolic links")
		case errors.Is(err, fs.ErrNotExist):
			w.skip(path, "a broken symbolic link")
		default:
			w.fail(path, err)
		}
		return nil, "", false
	}
	if !w.opts.FollowLinks && !within(real, w.realRoot) {
		w.skip(path, "a symbolic link to outside the folder (Options.FollowLinks follows it)")
		return nil, "", false
	}
	fi, err := os.Stat(path)
	if err != nil {
		w.fail(path, err)
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

// IsBlockDir reports whether dir is itself a TSDB block: it holds a
// meta.json file and a chunks directory (a data directory holds blocks,
// each of which does).
func IsBlockDir(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, "meta.json"))
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	fi, err = os.Stat(filepath.Join(dir, "chunks"))
	return err == nil && fi.IsDir()
}
