//go:build !unix

package dumpdir

import (
	"io/fs"
	"path/filepath"
)

// Key identifies a file: without inodes, by its absolute path with
// links resolved.
type Key struct{ path string }

// KeyOf returns the key of the file fi (the stat of path), or false
// when the system gives none.
func KeyOf(_ fs.FileInfo, path string) (Key, bool) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return Key{}, false
	}
	abs, err := filepath.Abs(real)
	if err != nil {
		return Key{}, false
	}
	return Key{path: abs}, true
}
