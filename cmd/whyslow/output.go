package main

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// maxLinkHops bounds how many symbolic links resolveLinks follows, as the
// kernel's ELOOP does.
const maxLinkHops = 40

// checkOutput refuses an output file (-o) that is an input path, lies
// under one, or is an input file under another name: evidence is never
// written, and a report written into a dump folder would be read as a
// dump the next time. The output is resolved through its symbolic links
// first, even a dangling one (its target is where the report would be
// created); a hard link to an input file shares its device and inode,
// which are compared with those of every file under the inputs.
func (f *inputFlags) checkOutput(paths []string) error {
	if f.output == "" || f.output == "-" {
		return nil
	}
	target := resolveLinks(f.output)
	out := canonicalPath(target)
	outInfo, outErr := os.Stat(target)
	for _, p := range paths {
		if p == "-" || isURL(p) || f.outputChecked[p] {
			continue
		}
		in := canonicalPath(p)
		inside := out == in || strings.HasPrefix(out, strings.TrimSuffix(in, string(filepath.Separator))+string(filepath.Separator))
		if !inside && outErr == nil && holdsFile(p, outInfo, f.follow) {
			return usagef("-o %s: the same file as one under the input path %s (a hard or symbolic link to it); evidence is never written: write the output elsewhere", f.output, p)
		}
		if inside {
			return usagef("-o %s: inside the input path %s; evidence is never written: write the output elsewhere", f.output, p)
		}
		if f.outputChecked == nil {
			f.outputChecked = map[string]bool{}
		}
		f.outputChecked[p] = true
	}
	return nil
}

// isURL reports whether an input path is a server's URL.
func isURL(p string) bool {
	return strings.HasPrefix(p, "http://") || strings.HasPrefix(p, "https://")
}

// resolveLinks follows p's symbolic links, as far as they go: the path a
// file created at p would have. A dangling link resolves to its missing
// target; a path that does not exist resolves to itself.
func resolveLinks(p string) string {
	for range maxLinkHops {
		info, err := os.Lstat(p)
		if err != nil || info.Mode()&fs.ModeSymlink == 0 {
			return p
		}
		dest, err := os.Readlink(p)
		if err != nil {
			return p
		}
		if !filepath.IsAbs(dest) {
			dest = filepath.Join(filepath.Dir(p), dest)
		}
		p = dest
	}
	return p
}

// holdsFile reports whether the input path p is, or holds, the file out:
// the same device and inode, reached by any name (a hard link, or a link
// the reader would follow). Links to folders are followed when follow is
// set (--follow-links); a file that cannot be read is not compared (the
// reader reports it).
func holdsFile(p string, out os.FileInfo, follow bool) bool {
	info, err := os.Stat(p)
	if err != nil {
		return false
	}
	if os.SameFile(info, out) {
		return true
	}
	if !info.IsDir() {
		return false
	}
	found := false
	seen := map[string]bool{}
	var walk func(dir string)
	walk = func(dir string) {
		real, err := filepath.EvalSymlinks(dir)
		if err != nil || seen[real] {
			return
		}
		seen[real] = true
		_ = filepath.WalkDir(real, func(path string, d fs.DirEntry, err error) error {
			if err != nil || found {
				if found {
					return filepath.SkipAll
				}
				return nil
			}
			if d.IsDir() {
				return nil
			}
			var fi os.FileInfo
			if d.Type()&fs.ModeSymlink != 0 {
				if fi, err = os.Stat(path); err == nil && fi.IsDir() {
					if follow {
						walk(path)
					}
					return nil
				}
			} else {
				fi, err = d.Info()
			}
			if err == nil && os.SameFile(fi, out) {
				found = true
				return filepath.SkipAll
			}
			return nil
		})
	}
	walk(p)
	return found
}

// canonicalPath returns the absolute path of p with symbolic links
// resolved as far as p exists.
func canonicalPath(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	// Resolve the longest existing prefix, keep the rest as is.
	rest := ""
	for dir := abs; ; {
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return abs
		}
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = parent
	}
}

// out opens the output: -o FILE or stdout. The returned done function
// must be called with the error of the writing, if any, and returns it
// joined with its own.
//
// A regular file (or a new one) is written to a temporary file beside
// the link-resolved path and renamed into place by done when the writing
// succeeded, so that a failed run leaves an earlier output as it was and
// a hard link to the output's old contents keeps them. Anything else (a
// device such as /dev/null, a FIFO, a terminal) is written in place.
func (f *inputFlags) out(e *env) (io.Writer, func(error) error, error) {
	if f.output == "" || f.output == "-" {
		return e.stdout, func(err error) error { return err }, nil
	}
	w, done, err := createOutput(f.output)
	if err != nil {
		return nil, nil, err
	}
	if _, ok := e.stdout.(*hintWriter); ok {
		// The file reads as standard output would: library option names
		// are written as the command's flags (see withFlagHints).
		hw := &hintWriter{w: w, lines: true}
		return hw, func(err error) error {
			if err == nil {
				err = hw.Flush()
			}
			return done(err)
		}, nil
	}
	return w, done, nil
}

// createOutput opens path for writing as out documents.
func createOutput(path string) (io.Writer, func(error) error, error) {
	target := resolveLinks(path)
	info, statErr := os.Stat(target)
	if statErr == nil && !info.Mode().IsRegular() {
		if info.IsDir() {
			return nil, nil, &fs.PathError{Op: "write", Path: path, Err: errors.New("is a directory")}
		}
		file, err := os.OpenFile(target, os.O_WRONLY, 0)
		if err != nil {
			return nil, nil, err
		}
		return file, func(err error) error { return errors.Join(err, file.Close()) }, nil
	}
	perm := fs.FileMode(0o644)
	if statErr == nil {
		perm = info.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".*.tmp")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			pe.Op, pe.Path = "create", path
		}
		return nil, nil, err
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, nil, err
	}
	done := func(err error) error {
		err = errors.Join(err, tmp.Close())
		if err == nil {
			if rerr := os.Rename(tmp.Name(), target); rerr != nil {
				err = rerr
			}
		}
		if err != nil {
			os.Remove(tmp.Name())
		}
		return err
	}
	return tmp, done, nil
}
