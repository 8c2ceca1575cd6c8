//go:build unix

package dumpdir

import (
	"os"
	"syscall"
)

// openFile opens path read-only without blocking (a named pipe put in a
// dump's place opens at once, and Open refuses it) and, when
// noFollow is set, without following a symbolic link in its last element.
func openFile(path string, noFollow bool) (*os.File, error) {
	flag := os.O_RDONLY | syscall.O_NONBLOCK
	if noFollow {
		flag |= syscall.O_NOFOLLOW
	}
	return os.OpenFile(path, flag, 0)
}
