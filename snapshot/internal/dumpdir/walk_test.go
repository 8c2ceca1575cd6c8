//go:build unix

package dumpdir

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWalkDir lists a directory holding what a dump directory may hold
// and checks what the walk lists, skips and says why.
func TestWalkDir(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	write := func(path string) string {
		t.Helper()
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte("x 1\n"), 0o644))
		return path
	}
	dump := write(filepath.Join(root, "vllm-0", "2026-09-22T10-00-15Z.prom"))
	flat := write(filepath.Join(root, "vllm-1_20260922T100030Z.prom.gz"))
	notes := write(filepath.Join(root, "notes.md"))
	write(filepath.Join(root, ".hidden.prom"))
	write(filepath.Join(root, "data", "wal", "00000000"))
	away := write(filepath.Join(outside, "away.prom"))
	require.NoError(t, os.Symlink(away, filepath.Join(root, "away.prom")))
	require.NoError(t, os.Symlink(root, filepath.Join(root, "vllm-0", "loop")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(root, "pipe.prom"), 0o644))
	require.NoError(t, os.Symlink(dump, filepath.Join(root, "again.prom")))

	var seen []string
	keys := map[Key]bool{}
	w, err := WalkDir(root, WalkOptions{
		Seen: func(fi fs.FileInfo, path string) bool {
			seen = append(seen, path)
			k, _ := KeyOf(fi, path)
			dup := keys[k]
			keys[k] = true
			return dup
		},
		IsSource: func(dir string) bool { return filepath.Base(dir) == "data" },
	})
	require.NoError(t, err)

	var paths []string
	for _, f := range w.Files {
		paths = append(paths, f.Path)
	}
	// Entries come in the order os.ReadDir gives (by name), depth first:
	// the dump is reached first through its link, then skipped.
	again := filepath.Join(root, "again.prom")
	assert.Equal(t, []string{again, flat}, paths)
	assert.Equal(t, []string{filepath.Join(root, "data")}, w.TSDBs)
	assert.Equal(t, []string{notes}, w.NotDump)
	assert.Empty(t, w.Errors)
	assert.Equal(t, []string{
		"a symbolic link to outside the folder (Options.FollowLinks follows it)",
		"a named pipe (FIFO), not a regular file",
		DupReason,
		"a link to a folder already read (a loop of links?)",
	}, w.Reasons)
	assert.Equal(t, []string{dump}, w.Skipped[DupReason])
	assert.Contains(t, seen, dump)
	assert.False(t, w.Files[1].InSubdir)
	assert.True(t, w.Files[1].Time.Equal(time.Date(2026, 9, 22, 10, 0, 30, 0, time.UTC)))

	// Open reads a file only while it is the one listed: through the
	// link, the dump's inode.
	f, _, err := Open(again, w.Files[0].Want)
	require.NoError(t, err)
	f.Close()
	// Another file at the same path (made before the old one goes, so
	// that its inode is another).
	require.NoError(t, os.Rename(write(dump+".new"), dump))
	_, _, err = Open(again, w.Files[0].Want)
	assert.ErrorIs(t, err, ErrChanged)

	// Following links out of the root lists the file away.
	w, err = WalkDir(root, WalkOptions{FollowLinks: true})
	require.NoError(t, err)
	paths = nil
	for _, f := range w.Files {
		paths = append(paths, f.Path)
	}
	assert.Contains(t, paths, filepath.Join(root, "away.prom"))
}
