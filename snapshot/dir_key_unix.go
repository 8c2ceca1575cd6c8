//go:build unix

package snapshot

import (
	"io/fs"
	"syscall"
)

// fileKey identifies a file whatever the path that reaches it: device
// and inode, so that hard links and links are one file.
type fileKey struct{ dev, ino uint64 }

func keyOf(fi fs.FileInfo, _ string) (fileKey, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileKey{}, false
	}
	return fileKey{dev: uint64(st.Dev), ino: uint64(st.Ino)}, true //nolint:unconvert // Dev is int32 on some systems
}
