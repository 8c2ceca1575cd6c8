//go:build !unix

package snapshot

import (
	"io/fs"
	"path/filepath"
)

// fileKey identifies a file: without inodes, by its absolute path with
// links resolved.
type fileKey struct{ path string }

func keyOf(_ fs.FileInfo, path string) (fileKey, bool) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return fileKey{}, false
	}
	abs, err := filepath.Abs(real)
	if err != nil {
		return fileKey{}, false
	}
	return fileKey{path: abs}, true
}
