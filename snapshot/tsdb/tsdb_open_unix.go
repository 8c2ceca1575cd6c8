//go:build unix

package tsdb

import "syscall"

// Flags of openRegular: a named pipe opens without waiting for a writer,
// and a symbolic link is not followed.
const (
	oNonBlock = syscall.O_NONBLOCK
	oNoFollow = syscall.O_NOFOLLOW
)
