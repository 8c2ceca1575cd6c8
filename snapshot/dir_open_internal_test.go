//go:build unix

package snapshot

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/snapshot/internal/dumpdir"
)

// readWithHook reads paths with dumpdir.BeforeOpen set to hook, failing the
// test if the read blocks.
func readWithHook(t *testing.T, paths []string, opts Options, hook func(path string)) (*Evidence, error) {
	t.Helper()
	dumpdir.BeforeOpen = hook
	t.Cleanup(func() { dumpdir.BeforeOpen = nil })
	type result struct {
		ev  *Evidence
		err error
	}
	done := make(chan result, 1)
	go func() {
		ev, err := Read(context.Background(), paths, opts)
		done <- result{ev, err}
	}()
	select {
	case r := <-done:
		return r.ev, r.err
	case <-time.After(20 * time.Second):
		t.Fatal("Read blocked on a file swapped after its listing")
		return nil, nil
	}
}

// hasMetric reports whether any target of e holds a family named name.
func hasMetric(e *Evidence, name string) bool {
	for _, tg := range e.Targets {
		if _, ok := tg.Families[name]; ok {
			return true
		}
	}
	return false
}

// A dump swapped, between the folder's listing and its opening, for a
// link to a file outside the folder, a named pipe or another file is
// refused with a problem naming it: never read, never blocked on. The
// other dumps are read, and a link named as a path is still followed.
func TestDumpSwappedAfterListingIsNotRead(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "secret.prom")
	require.NoError(t, os.WriteFile(outside, []byte(gaugeDump("secret_metric", 7)), 0o644))

	tests := []struct {
		name     string
		swap     func(t *testing.T, path string)
		explicit bool // the victim is named as a path, not found by the walk
		follow   bool
		want     string // in the problem; "" when the read must succeed
	}{
		{name: "link to outside", swap: func(t *testing.T, path string) {
			require.NoError(t, os.Remove(path))
			require.NoError(t, os.Symlink(outside, path))
		}, want: "now a symbolic link"},
		{name: "link to outside, FollowLinks", follow: true, swap: func(t *testing.T, path string) {
			require.NoError(t, os.Remove(path))
			require.NoError(t, os.Symlink(outside, path))
		}, want: "now a symbolic link"},
		{name: "named pipe", swap: func(t *testing.T, path string) {
			require.NoError(t, os.Remove(path))
			require.NoError(t, syscall.Mkfifo(path, 0o644))
		}, want: "now a named pipe (FIFO)"},
		{name: "another file", swap: func(t *testing.T, path string) {
			other := path + ".new"
			require.NoError(t, os.WriteFile(other, []byte(gaugeDump("secret_metric", 8)), 0o644))
			require.NoError(t, os.Rename(other, path))
		}, want: "replaced by another file"},
		{name: "path given, then a named pipe", explicit: true, swap: func(t *testing.T, path string) {
			require.NoError(t, os.Remove(path))
			require.NoError(t, syscall.Mkfifo(path, 0o644))
		}, want: "now a named pipe (FIFO)"},
		{name: "path given, a link to outside", explicit: true, swap: func(t *testing.T, path string) {
			require.NoError(t, os.Remove(path))
			require.NoError(t, os.Symlink(outside, path))
		}, want: "replaced by another file"},
		{name: "path given is a link, unchanged", explicit: true, swap: func(*testing.T, string) {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "vllm-0")
			require.NoError(t, os.Mkdir(dir, 0o755))
			for i, name := range []string{"2026-09-22T10-00-00Z.prom", "2026-09-22T10-00-15Z.prom", "2026-09-22T10-00-30Z.prom"} {
				require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(gaugeDump("vllm:num_requests_running", i)), 0o644))
			}
			victim := filepath.Join(dir, "2026-09-22T10-00-15Z.prom")
			paths := []string{root}
			if tt.explicit {
				paths = []string{filepath.Join(dir, "2026-09-22T10-00-00Z.prom"), victim}
				if tt.want == "" {
					// A link named as a path is followed.
					link := filepath.Join(t.TempDir(), "2026-09-22T10-00-15Z.prom")
					require.NoError(t, os.Symlink(victim, link))
					paths[1] = link
				}
			}
			swapped := 0
			ev, err := readWithHook(t, paths, Options{FollowLinks: tt.follow}, func(path string) {
				if path == paths[len(paths)-1] && tt.explicit || path == victim && !tt.explicit {
					swapped++
					tt.swap(t, path)
				}
			})
			require.NoError(t, err)
			assert.Equal(t, 1, swapped)
			assert.False(t, hasMetric(ev, "secret_metric"), "the swapped-in content was read")
			require.NotEmpty(t, ev.Targets)
			var changed []Problem
			for _, p := range ev.Problems {
				if errors.Is(p, ErrChanged) {
					changed = append(changed, p)
				}
			}
			scrapes := 0
			for _, tg := range ev.Targets {
				scrapes += len(tg.Scrapes)
			}
			if tt.want == "" {
				assert.Empty(t, changed)
				assert.Equal(t, 2, scrapes)
				return
			}
			require.Len(t, changed, 1, "problems: %v", ev.Problems)
			assert.Equal(t, SeverityError, changed[0].Severity)
			if tt.explicit {
				assert.Equal(t, paths[len(paths)-1], changed[0].File)
			} else {
				assert.Equal(t, victim, changed[0].File)
			}
			assert.Contains(t, changed[0].Error(), tt.want)
			assert.NotContains(t, changed[0].Error(), "secret")
			assert.True(t, ev.Partial())
			want := 2 // the other two dumps of the folder
			if tt.explicit {
				want = 1
			}
			assert.Equal(t, want, scrapes, "the other dumps are read")
		})
	}
}

// A dump reached through a link inside the folder is opened at the link's
// target as resolved when listed: swapping that target for a link is
// refused too.
func TestLinkedDumpSwappedAfterListingIsNotRead(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "secret.prom")
	require.NoError(t, os.WriteFile(outside, []byte(gaugeDump("secret_metric", 7)), 0o644))
	root := t.TempDir()
	target := filepath.Join(root, "store", "a.keep")
	require.NoError(t, os.Mkdir(filepath.Dir(target), 0o755))
	require.NoError(t, os.WriteFile(target, []byte(gaugeDump("vllm:num_requests_running", 1)), 0o644))
	link := filepath.Join(root, "vllm-0_2026-09-22T10-00-00Z.prom")
	require.NoError(t, os.Symlink(filepath.Join("store", "a.keep"), link))
	require.NoError(t, os.WriteFile(filepath.Join(root, "vllm-0_2026-09-22T10-00-15Z.prom"), []byte(gaugeDump("vllm:num_requests_running", 2)), 0o644))

	ev, err := readWithHook(t, []string{root}, Options{}, func(path string) {
		if path == link {
			require.NoError(t, os.Remove(target))
			require.NoError(t, os.Symlink(outside, target))
		}
	})
	require.NoError(t, err)
	assert.False(t, hasMetric(ev, "secret_metric"))
	var msgs []string
	for _, p := range ev.Problems {
		if errors.Is(p, ErrChanged) {
			msgs = append(msgs, p.Error())
		}
	}
	require.Len(t, msgs, 1, "problems: %v", ev.Problems)
	assert.True(t, strings.HasPrefix(msgs[0], link+": "), msgs[0])
}
