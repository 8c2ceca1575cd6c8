//go:build unix

package dumpdir

import (
	"io/fs"
	"syscall"
)

// Key identifies a file whatever the path that reaches it: device
// and inode, so that hard links and links are one file.
type Key struct{ dev, ino uint64 }

// KeyOf returns the key of the file fi (the stat of path), or false
// when the system gives none.
func KeyOf(fi fs.FileInfo, _ string) (Key, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return Key{}, false
	}
	return Key{dev: uint64(st.Dev), ino: uint64(st.Ino)}, true //nolint:unconvert // Dev is int32 on some systems
}
