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
