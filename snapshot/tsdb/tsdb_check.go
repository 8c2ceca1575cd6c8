package tsdb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/tsdb/index"
	"github.com/whyslow/whyslow/snapshot"
)

// openRegular opens path read-only without ever blocking: a named pipe
// put in a file's place opens at once (and is then refused), and a
// symbolic link is not followed unless follow. It returns the file when
// it is a regular file, with its information.
func openRegular(path string, follow bool) (*os.File, fs.FileInfo, error) {
	flags := os.O_RDONLY | oNonBlock
	if !follow {
		flags |= oNoFollow
	}
	f, err := os.OpenFile(path, flags, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, errors.Join(err, f.Close())
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, errors.Join(fmt.Errorf("%s: %s", path, notRegular(fi.Mode())), f.Close())
	}
	return f, fi, nil
}

// readRegular reads the regular file path whole (openRegular).
func readRegular(path string, follow bool) ([]byte, error) {
	f, _, err := openRegular(path, follow)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// notRegular says what a file of mode m is instead of a regular file.
func notRegular(m fs.FileMode) string {
	what := "not a regular file"
	switch {
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	case m&fs.ModeDevice != 0:
		what = "a device"
	case m&fs.ModeSymlink != 0:
		what = "a symbolic link (Options.FollowLinks follows it)"
	case m.IsDir():
		what = "a directory"
	}
	return what + ", not a regular file"
}

// checkFile checks that path is a regular file (a directory when dir),
// without opening it; a symbolic link is followed only when follow. A
// missing file is no problem when optional.
func checkFile(path string, dir, optional, follow bool) *snapshot.Problem {
	fi, err := os.Lstat(path)
	if err == nil && fi.Mode()&fs.ModeSymlink != 0 && follow {
		fi, err = os.Stat(path)
	}
	if err != nil {
		if optional && errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		p := blockProblem(path, err)
		return &p
	}
	switch m := fi.Mode(); {
	case dir && m.IsDir(), !dir && m.IsRegular():
		return nil
	case dir && m&fs.ModeSymlink != 0:
		err = errors.New("a symbolic link (Options.FollowLinks follows it), not a directory")
	case dir:
		err = errors.New("not a directory")
	default:
		err = errors.New(notRegular(m))
	}
	p := blockProblem(path, err)
	return &p
}

// checkBlockFiles checks the files of block directory bdir that
// openBlock and blockFiles open by name, but meta.json (read
// before, see readBlockMeta): index, tombstones (when present) and each
// chunk segment must be regular files, and chunks/ a directory
// (checkFile). Nothing is opened, so that a named pipe put in a file's
// place cannot stop the read. The first file that fails is the problem,
// an error naming it.
func checkBlockFiles(bdir string, follow bool) *snapshot.Problem {
	for _, f := range []struct {
		name          string
		dir, optional bool
	}{
		{tsdbIndexFile, false, false},
		{tsdbChunksDir, true, false},
		{tsdbTombstonesFile, false, true},
	} {
		if p := checkFile(filepath.Join(bdir, f.name), f.dir, f.optional, follow); p != nil {
			return p
		}
	}
	for _, seg := range chunkSegments(filepath.Join(bdir, tsdbChunksDir)) {
		if p := checkFile(seg, false, false, follow); p != nil {
			return p
		}
	}
	return nil
}

// chunkSegments lists the chunk segments in cdir as chunks.NewDirReader
// does: the entries whose name is a number, in name order. A block chunk
// reference's sequence is a position in that list.
func chunkSegments(cdir string) []string {
	ents, err := os.ReadDir(cdir)
	if err != nil {
		return nil
	}
	var segs []string
	for _, e := range ents {
		if _, err := strconv.ParseUint(e.Name(), 10, 64); err == nil {
			segs = append(segs, filepath.Join(cdir, e.Name()))
		}
	}
	return segs
}

// badSegment returns the first chunk segment in cdir whose header is not
// that of a segment (magic number, format version), and the offset.
func badSegment(cdir string) (file string, off int64, ok bool) {
	for _, fn := range chunkSegments(cdir) {
		hdr, size, err := readAt(fn, 0, chunks.SegmentHeaderSize)
		switch {
		case err != nil:
			return fn, -1, true
		case size < chunks.SegmentHeaderSize || binary.BigEndian.Uint32(hdr) != chunks.MagicChunks:
			return fn, 0, true
		case hdr[chunks.MagicChunksSize] != 1: // chunks' format version 1
			return fn, chunks.MagicChunksSize, true
		}
	}
	return "", 0, false
}

// indexOffset returns where in index file fn the decoder's error err
// lies, by the step of index.NewFileReader that failed; -1 when unknown.
func indexOffset(fn string, err error) int64 {
	const tocLen = 6*8 + crc32.Size // index's table of contents
	msg := err.Error()
	switch {
	case strings.HasPrefix(msg, "index header"), strings.HasPrefix(msg, "invalid magic number"):
		return 0
	case strings.HasPrefix(msg, "unknown index file version"):
		return 4
	}
	tail, size, rerr := readAt(fn, -tocLen, tocLen)
	if rerr != nil || size < tocLen {
		return -1
	}
	if strings.HasPrefix(msg, "read TOC") {
		return size - tocLen
	}
	toc, terr := index.NewTOCFromByteSlice(tailSlice{b: tail, size: int(size)})
	if terr != nil {
		return -1
	}
	switch {
	case strings.HasPrefix(msg, "read symbols"):
		return int64(toc.Symbols)
	case strings.HasPrefix(msg, "read postings table"):
		return int64(toc.PostingsTable)
	}
	return -1
}

// tombstonesOffset returns where in tombstones file fn the decoder's
// error err lies; -1 when unknown.
func tombstonesOffset(fn string, err error) int64 {
	msg := err.Error()
	switch {
	case strings.HasPrefix(msg, "tombstones header"), strings.HasPrefix(msg, "invalid magic number"):
		return 0
	case strings.HasPrefix(msg, "checksum did not match"):
		if fi, serr := os.Stat(fn); serr == nil {
			return fi.Size() - crc32.Size // the checksum, at the end
		}
	}
	return -1
}

// readAt reads n bytes of fn at off (from the end when negative), and
// returns them with the file's size; fewer when the file is shorter.
func readAt(fn string, off int64, n int) ([]byte, int64, error) {
	f, fi, err := openRegular(fn, false)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	size := fi.Size()
	if off < 0 {
		off = max(size+off, 0)
	}
	b := make([]byte, n)
	k, err := f.ReadAt(b, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, size, err
	}
	return b[:k], size, nil
}

// tailSlice is the end of a file, b, as an index.ByteSlice of the file's
// size (only the end may be read).
type tailSlice struct {
	b    []byte
	size int
}

func (s tailSlice) Len() int { return s.size }

func (s tailSlice) Range(start, end int) []byte {
	base := s.size - len(s.b)
	return s.b[start-base : end-base]
}
