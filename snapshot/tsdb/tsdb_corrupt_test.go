package tsdb

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/whyslow/whyslow/snapshot"
)

// TestReadTSDBCorruptions damages one of two blocks (or the whole
// directory) and checks that the error or snapshot.Problem names the file and the
// reason, and that the other block is still read.
func TestReadTSDBCorruptions(t *testing.T) {
	// Two blocks, no head: the good one must survive the bad one.
	base := writeTSDBFixture(t, filepath.Join(t.TempDir(), "data"))
	good := tsdbBlockDirs(t, base.dir)[0]
	for _, tc := range []struct {
		name    string
		damage  func(t *testing.T, block string) // block: the bad block's dir
		file    string                           // relative to the bad block, "" = the block dir
		reason  string
		wantErr bool // nothing readable: Read fails
	}{
		{
			name:   "missing index",
			damage: removeInBlock("index"),
			file:   "index",
			reason: "index missing",
		},
		{
			name:   "missing meta.json",
			damage: removeInBlock("meta.json"),
			file:   "meta.json",
			reason: "meta.json missing",
		},
		{
			name:   "broken meta.json",
			damage: overwriteInBlock("meta.json", `{"ulid": "01`),
			file:   "meta.json",
			reason: "unexpected end of JSON input",
		},
		{
			name:   "meta.json of another version",
			damage: overwriteInBlock("meta.json", `{"ulid":"01M8KZHE6580JP2RMGCQKZFXCD","minTime":1,"maxTime":2,"version":7}`),
			file:   "meta.json",
			reason: "unsupported block version 7",
		},
		{
			name:   "corrupt chunk",
			damage: corruptChunk,
			file:   "chunks/000001",
			reason: "checksum mismatch",
		},
		{
			name:   "missing chunks dir",
			damage: removeInBlock("chunks"),
			file:   "chunks",
			reason: "chunks missing",
		},
		{
			name: "empty block dir",
			damage: func(t *testing.T, b string) {
				require.NoError(t, os.RemoveAll(b))
				require.NoError(t, os.Mkdir(b, 0o755))
			},
			file:   "meta.json",
			reason: "meta.json missing",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, bad := withDamagedCopy(t, base.dir, good, tc.damage)

			ev, err := Read(context.Background(), dir, snapshot.Options{})
			require.NoError(t, err)
			require.True(t, ev.Partial())
			broken := ev.ProblemsOf(ErrBadBlock)
			require.NotEmpty(t, broken, "%v", ev.Problems)
			p := broken[0]
			assert.Equal(t, snapshot.SeverityError, p.Severity)
			if tc.file == "" {
				assert.Equal(t, bad, p.File)
			} else {
				assert.Equal(t, filepath.Join(bad, tc.file), p.File)
			}
			assert.Contains(t, p.Error(), tc.reason)
			// The good block is whole.
			checkTSDBFixture(t, base, ev, 0, base.nBlock)
		})
	}

	t.Run("all blocks bad", func(t *testing.T) {
		dir := withoutIndex(t, base.dir, good)
		_, err := Read(context.Background(), dir, snapshot.Options{})
		require.ErrorIs(t, err, ErrBadBlock)
		assert.ErrorContains(t, err, filepath.Join(dir, good, "index"))
		assert.ErrorContains(t, err, "nothing could be read")
	})
	// A block outside the range read is not opened: its broken index is
	// not read, nor reported, by Read or ReadEach; a range that meets it
	// reports it.
	t.Run("broken index outside the range", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "data")
		require.NoError(t, copyTree(base.dir, dir))
		overwriteInBlock("index", "not an index")(t, filepath.Join(dir, good))
		// 260 scrapes in: past the block's 240, in the head.
		headOnly := snapshot.Options{Start: base.t0.Add(base.step * 260)}
		require.Greater(t, 260, base.nBlock)
		ev, err := Read(context.Background(), dir, headOnly)
		require.NoError(t, err)
		assert.Empty(t, ev.ProblemsOf(ErrBadBlock))
		assert.NotEmpty(t, ev.Targets)
		n := 0
		ev, err = ReadEach(context.Background(), dir, headOnly, func(int64, int64) error { return nil }, func(*snapshot.Target) error { n++; return nil })
		require.NoError(t, err)
		assert.Empty(t, ev.ProblemsOf(ErrBadBlock))
		assert.Positive(t, n)
		ev, err = Read(context.Background(), dir, snapshot.Options{})
		require.NoError(t, err)
		broken := ev.ProblemsOf(ErrBadBlock)
		require.NotEmpty(t, broken)
		assert.Equal(t, filepath.Join(dir, good, "index"), broken[0].File)
	})
	for name, mk := range map[string]func(t *testing.T) string{
		"empty dir": func(t *testing.T) string { return t.TempDir() },
		"not a TSDB": func(t *testing.T) string {
			d := t.TempDir()
			require.NoError(t, os.Mkdir(filepath.Join(d, "pod-a"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(d, "pod-a", "1758535200.prom"), []byte("x 1\n"), 0o644))
			return d
		},
		"missing dir": func(t *testing.T) string { return filepath.Join(t.TempDir(), "nope") },
	} {
		t.Run(name, func(t *testing.T) {
			dir := mk(t)
			_, err := Read(context.Background(), dir, snapshot.Options{})
			require.Error(t, err)
			assert.ErrorContains(t, err, dir)
			if name != "missing dir" {
				assert.ErrorIs(t, err, ErrNotTSDB)
			}
		})
	}
}

// withDamagedCopy copies block good of the TSDB in src into a new data
// directory, beside a second copy under another ULID (shifted in time by
// nothing: overlapping blocks are legal) damaged by damage. It returns the
// directory and the bad block's.
func withDamagedCopy(t *testing.T, src, good string, damage func(t *testing.T, block string)) (dir, bad string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "data")
	require.NoError(t, copyTree(filepath.Join(src, good), filepath.Join(dir, good)))
	bad = filepath.Join(dir, "01M8KZHE6580JP2RMGCQKZFXCD")
	require.NoError(t, copyTree(filepath.Join(src, good), bad))
	damage(t, bad)
	return dir, bad
}

// withoutIndex copies block good of the TSDB in src alone into a new data
// directory and removes its index: no block is readable.
func withoutIndex(t *testing.T, src, good string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	require.NoError(t, copyTree(filepath.Join(src, good), filepath.Join(dir, good)))
	require.NoError(t, os.Remove(filepath.Join(dir, good, "index")))
	return dir
}

// removeInBlock damages a block by removing its file or directory name.
func removeInBlock(name string) func(t *testing.T, block string) {
	return func(t *testing.T, b string) { require.NoError(t, os.RemoveAll(filepath.Join(b, name))) }
}

// overwriteInBlock damages a block by overwriting its file name with data.
func overwriteInBlock(name, data string) func(t *testing.T, block string) {
	return func(t *testing.T, b string) {
		require.NoError(t, os.WriteFile(filepath.Join(b, name), []byte(data), 0o644))
	}
}

// corruptChunk damages a block by flipping every 7th byte of its first
// chunk file, away from its head and tail.
func corruptChunk(t *testing.T, b string) {
	fn := filepath.Join(b, "chunks", "000001")
	data, err := os.ReadFile(fn)
	require.NoError(t, err)
	for i := 100; i < len(data)-100; i += 7 {
		data[i] ^= 0xff
	}
	require.NoError(t, os.WriteFile(fn, data, 0o644))
}

// corruptSeriesEntry damages a block by flipping a byte inside the
// index entry of its fifth series (the series section, from the index's
// table of contents; each entry 16-byte aligned: a uvarint length, the
// entry, a CRC32): that entry fails its checksum, the others read.
func corruptSeriesEntry(t *testing.T, b string) {
	fn := filepath.Join(b, "index")
	data, err := os.ReadFile(fn)
	require.NoError(t, err)
	toc := data[len(data)-6*8-4:]
	pos := int(binary.BigEndian.Uint64(toc[8:16]))
	for range 4 {
		n, w := binary.Uvarint(data[pos:])
		require.Positive(t, w)
		pos += w + int(n) + 4
		pos = (pos + 15) / 16 * 16
	}
	_, w := binary.Uvarint(data[pos:])
	data[pos+w+2] ^= 0xff
	require.NoError(t, os.WriteFile(fn, data, 0o644))
}

// TestReadTSDBBadFileNamed damages one file of one of two blocks: the
// problem names the file, and the offset where the decoder places the
// fault, not the block alone; Read and ReadEach agree.
func TestReadTSDBBadFileNamed(t *testing.T) {
	base := writeTSDBFixture(t, filepath.Join(t.TempDir(), "data"))
	good := tsdbBlockDirs(t, base.dir)[0]
	size := func(t *testing.T, fn string) int64 {
		fi, err := os.Stat(fn)
		require.NoError(t, err)
		return fi.Size()
	}
	var chunkSize int64
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, b string)
		file   string
		offset func(t *testing.T, fn string) int64 // of the file in the bad block
		reason string
	}{
		{
			name:   "index magic number",
			damage: overwriteInBlock("index", "not an index, not at all, not an index, not at all, not an index"),
			file:   "index", offset: func(*testing.T, string) int64 { return 0 },
			reason: "invalid magic number",
		},
		{
			name: "index cut",
			damage: func(t *testing.T, b string) {
				fn := filepath.Join(b, "index")
				require.NoError(t, os.Truncate(fn, size(t, fn)-100))
			},
			// Its table of contents is the last 52 bytes.
			file: "index", offset: func(t *testing.T, fn string) int64 { return size(t, fn) - 52 },
			reason: "read TOC",
		},
		{
			name:   "tombstones magic number",
			damage: overwriteInBlock("tombstones", "no tombstones here"),
			file:   "tombstones", offset: func(*testing.T, string) int64 { return 0 },
			reason: "invalid magic number",
		},
		{
			name: "tombstones checksum",
			damage: func(t *testing.T, b string) {
				fn := filepath.Join(b, "tombstones")
				data, err := os.ReadFile(fn)
				require.NoError(t, err)
				data[len(data)-1] ^= 0xff
				require.NoError(t, os.WriteFile(fn, data, 0o644))
			},
			file: "tombstones", offset: func(t *testing.T, fn string) int64 { return size(t, fn) - 4 },
			reason: "checksum did not match",
		},
		{
			name: "chunk segment cut",
			damage: func(t *testing.T, b string) {
				fn := filepath.Join(b, "chunks", "000001")
				chunkSize = size(t, fn)
				require.NoError(t, os.Truncate(fn, chunkSize/2))
			},
			file: "chunks/000001",
			// The first chunk past the cut begins before it.
			offset: func(t *testing.T, fn string) int64 { return -2 },
			reason: "segment doesn't include enough bytes",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, bad := withDamagedCopy(t, base.dir, good, tc.damage)
			fn := filepath.Join(bad, tc.file)
			ev := requireEachAsRead(t, []string{dir}, snapshot.Options{})
			broken := ev.ProblemsOf(ErrBadBlock)
			require.Len(t, broken, 1, "%v", ev.Problems)
			p := broken[0]
			assert.Equal(t, fn, p.File)
			assert.Contains(t, p.Error(), tc.reason)
			if want := tc.offset(t, fn); want == -2 {
				assert.Positive(t, p.Offset)
				assert.Less(t, p.Offset, chunkSize/2)
				assert.Contains(t, p.Error(), fmt.Sprintf("chunk at offset %d of chunks/000001 (block %s)", p.Offset, filepath.Base(bad)))
				assert.NotContains(t, p.Error(), "00000000000000000000000000")
			} else {
				assert.Equal(t, want, p.Offset)
			}
			checkTSDBFixture(t, base, ev, 0, base.nBlock)
		})
	}
}
