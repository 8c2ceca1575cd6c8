//go:build !unix

package dumpdir

import "os"

// openFile opens path read-only. Without O_NOFOLLOW and O_NONBLOCK, a
// link or a special file put in a dump's place is refused by Open
// after the open, from the descriptor's stat and key.
func openFile(path string, _ bool) (*os.File, error) {
	return os.Open(path)
}
