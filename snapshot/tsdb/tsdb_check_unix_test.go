//go:build unix

package tsdb

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/whyslow/whyslow/snapshot"
)

// TestReadTSDBBlockFilesNotRegular puts a named pipe or a symbolic link in
// place of a file of one of two blocks: the read does not wait on the
// pipe, names the file, and reads the other block whole; a link is
// followed with Options.FollowLinks.
func TestReadTSDBBlockFilesNotRegular(t *testing.T) {
	base := writeTSDBFixture(t, filepath.Join(t.TempDir(), "data"))
	good := tsdbBlockDirs(t, base.dir)[0]
	fifo := func(name string) func(t *testing.T, b string) {
		return func(t *testing.T, b string) {
			fn := filepath.Join(b, name)
			require.NoError(t, os.RemoveAll(fn))
			require.NoError(t, syscall.Mkfifo(fn, 0o644))
		}
	}
	link := func(name string) func(t *testing.T, b string) {
		return func(t *testing.T, b string) {
			fn := filepath.Join(b, name)
			moved := filepath.Join(t.TempDir(), "moved")
			require.NoError(t, copyFile(fn, moved))
			require.NoError(t, os.Remove(fn))
			require.NoError(t, os.Symlink(moved, fn))
		}
	}
	for _, tc := range []struct {
		name, file string
		damage     func(t *testing.T, b string)
		reason     string
		follow     bool // the block reads with Options.FollowLinks
	}{
		{name: "fifo chunk segment", file: "chunks/000001", damage: fifo("chunks/000001"), reason: "a named pipe, not a regular file"},
		{name: "fifo index", file: "index", damage: fifo("index"), reason: "a named pipe, not a regular file"},
		{name: "fifo meta.json", file: "meta.json", damage: fifo("meta.json"), reason: "a named pipe, not a regular file"},
		{name: "fifo tombstones", file: "tombstones", damage: fifo("tombstones"), reason: "a named pipe, not a regular file"},
		{name: "link index", file: "index", damage: link("index"), reason: "a symbolic link (Options.FollowLinks follows it)", follow: true},
		{name: "link chunk segment", file: "chunks/000001", damage: link("chunks/000001"), reason: "a symbolic link (Options.FollowLinks follows it)", follow: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, bad := withDamagedCopy(t, base.dir, good, tc.damage)
			before := treeHash(t, dir)
			type result struct {
				ev  *snapshot.Evidence
				err error
			}
			done := make(chan result, 1)
			go func() {
				ev, err := Read(context.Background(), dir, snapshot.Options{})
				done <- result{ev, err}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(30 * time.Second):
				// Let the read that waits on the pipe go, and fail.
				if w, err := os.OpenFile(filepath.Join(bad, tc.file), os.O_WRONLY, 0); err == nil {
					w.Close()
				}
				t.Fatal("the read waits on a named pipe")
			}
			require.NoError(t, r.err)
			broken := r.ev.ProblemsOf(ErrBadBlock)
			require.Len(t, broken, 1, "%v", r.ev.Problems)
			assert.Equal(t, filepath.Join(bad, tc.file), broken[0].File)
			assert.Contains(t, broken[0].Error(), tc.reason)
			checkTSDBFixture(t, base, r.ev, 0, base.nBlock)
			requireTreeUnchanged(t, before, treeHash(t, dir))

			if tc.follow {
				ev, err := Read(context.Background(), dir, snapshot.Options{FollowLinks: true})
				require.NoError(t, err)
				assert.Empty(t, ev.ProblemsOf(ErrBadBlock))
			}
		})
	}
}

// TestReadTSDBWALSegmentPipe: a WAL segment swapped for a named pipe is
// refused at once, not waited on: the blocks are read, the head is not.
func TestReadTSDBWALSegmentPipe(t *testing.T) {
	f := writeTSDBFixture(t, filepath.Join(t.TempDir(), "data"))
	segs, err := filepath.Glob(filepath.Join(f.dir, "wal", "0*"))
	require.NoError(t, err)
	require.NotEmpty(t, segs)
	seg := segs[len(segs)-1]
	require.NoError(t, os.Remove(seg))
	require.NoError(t, syscall.Mkfifo(seg, 0o644))
	type result struct {
		ev  *snapshot.Evidence
		err error
	}
	done := make(chan result, 1)
	go func() {
		ev, err := Read(context.Background(), f.dir, snapshot.Options{})
		done <- result{ev, err}
	}()
	select {
	case r := <-done:
		require.NoError(t, r.err)
		notRead := r.ev.ProblemsOf(ErrHeadNotRead)
		require.Len(t, notRead, 1, "%v", r.ev.Problems)
		assert.Contains(t, notRead[0].Error(), "a named pipe")
		checkTSDBFixture(t, f, r.ev, 0, f.nBlock)
	case <-time.After(30 * time.Second):
		if w, err := os.OpenFile(seg, os.O_WRONLY, 0); err == nil {
			w.Close()
		}
		t.Fatal("the read waits on a named pipe")
	}
}
