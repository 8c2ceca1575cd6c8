package dumpdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// ErrChanged is the error of a file that changed between its listing and
// its opening (package snapshot's ErrChanged).
var ErrChanged = errors.New("input changed while read")

// Listed is what a dump file was when it was listed (by Walk, or by a
// stat of a path given): Open opens the file once and reads it only if it
// is still that regular file.
type Listed struct {
	// open is the path to open: the file's own path, or, for a link the
	// walk followed, the link's target as resolved then.
	open string
	// noFollow refuses a symbolic link at open: the walk saw no link
	// there (or resolved it). A path given by the user may be a link.
	noFollow bool
	key      Key
	keyed    bool
}

// ListedAs returns what fi, the stat of open, says about the file;
// noFollow refuses a link at open where none was listed.
func ListedAs(fi fs.FileInfo, open string, noFollow bool) Listed {
	key, ok := KeyOf(fi, open)
	return Listed{open: open, noFollow: noFollow, key: key, keyed: ok}
}

// BeforeOpen, when set (by a test), runs between a file's listing and its
// opening: the test swaps the file there.
var BeforeOpen func(path string)

// Open opens the file listed as want, once, without following a link
// where none was listed and without blocking on a named pipe, and checks
// that the descriptor is the regular file listed (same device and inode):
// a dump replaced by a link, a FIFO or another file after it was listed
// is never read (ErrChanged). path names the file in errors.
func Open(path string, want Listed) (*os.File, fs.FileInfo, error) {
	if BeforeOpen != nil {
		BeforeOpen(path)
	}
	f, err := openFile(want.open, want.noFollow)
	if err != nil {
		if li, lerr := os.Lstat(want.open); want.noFollow && lerr == nil && li.Mode()&fs.ModeSymlink != 0 {
			return nil, nil, fmt.Errorf("%w: the file listed is now a symbolic link; not read", ErrChanged)
		}
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	switch m := fi.Mode(); {
	case m.IsDir():
		f.Close()
		return nil, nil, fmt.Errorf("is a directory")
	case !m.IsRegular():
		f.Close()
		return nil, nil, fmt.Errorf("%w: the regular file listed is now %s; not read", ErrChanged, specialKind(m))
	}
	if key, ok := KeyOf(fi, want.open); want.keyed && ok && key != want.key {
		f.Close()
		return nil, nil, fmt.Errorf("%w: the file listed was replaced by another file; not read", ErrChanged)
	}
	return f, fi, nil
}

// specialKind names a file mode that is neither a directory nor regular.
func specialKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "a special file"
}
