//go:build linux

package tsdb

import (
	"io/fs"
	"syscall"
)

// tsdbCtime returns the inode change time of fi in nanoseconds.
func tsdbCtime(fi fs.FileInfo) int64 {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0
	}
	return st.Ctim.Nano()
}

// tsdbDevice returns the device the file lives on.
func tsdbDevice(fi fs.FileInfo) (uint64, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return uint64(st.Dev), true
}
