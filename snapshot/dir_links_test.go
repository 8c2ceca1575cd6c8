//go:build unix

package snapshot_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/snapshot"
)

// skippedProblems returns the ErrSkipped problems, as text.
func skippedProblems(e *snapshot.Evidence) []string {
	var out []string
	for _, p := range e.ProblemsOf(snapshot.ErrSkipped) {
		out = append(out, p.Error())
	}
	return out
}

func evidenceText(e *snapshot.Evidence) string {
	var sb strings.Builder
	sb.WriteString(summary(e))
	for _, t := range e.Targets {
		for _, n := range t.FamilyNames() {
			sb.WriteString(familyText(t.Families[n]))
		}
	}
	return sb.String()
}

// A link inside a dump folder that leads out of it is not followed: its
// target's content never reaches the evidence or a message, and a
// problem names the link. Options.FollowLinks follows it.
func TestLinkOutOfTheFolderIsNotFollowed(t *testing.T) {
	outside := t.TempDir()
	secretPath := filepath.Join(outside, "passwd")
	require.NoError(t, os.WriteFile(secretPath, []byte("root:x:0:0:root:/root:/bin/bash\n"), 0o644))
	good := filepath.Join(outside, "good.prom")
	require.NoError(t, os.WriteFile(good, []byte(vllmDump(9, 0, [3]float64{1, 1, 1})), 0o644))

	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"vllm-0/2026-09-22T10-00-00Z.prom": vllmDump(3, 0, [3]float64{1, 2, 2}),
		"vllm-0/2026-09-22T10-00-15Z.prom": vllmDump(5, 1, [3]float64{1, 4, 5}),
	})
	require.NoError(t, os.Symlink(secretPath, filepath.Join(root, "vllm-0", "2026-09-22T10-09-59Z.prom")))
	require.NoError(t, os.Symlink("/proc/self/mem", filepath.Join(root, "vllm-0", "2026-09-22T10-10-00Z.prom")))
	require.NoError(t, os.Symlink(good, filepath.Join(root, "vllm-0", "2026-09-22T10-00-30Z.prom")))
	// A link inside the tree is followed.
	require.NoError(t, os.Symlink("2026-09-22T10-00-15Z.prom", filepath.Join(root, "vllm-0", "latest.prom")))
	before := treeHash(t, root)

	e, err := snapshot.Read(context.Background(), []string{root}, snapshot.Options{})
	require.NoError(t, err)
	assert.Equal(t, before, treeHash(t, root))
	text := evidenceText(e)
	assert.NotContains(t, text, "root:x")
	assert.NotContains(t, text, "/bin/bash")
	sk := strings.Join(skippedProblems(e), "\n")
	assert.Contains(t, sk, "2026-09-22T10-09-59Z.prom")
	assert.Contains(t, sk, "2026-09-22T10-10-00Z.prom")
	assert.Contains(t, sk, "a symbolic link to outside the folder")
	assert.Contains(t, sk, "latest.prom", "the link to a file already read is read once")
	v0 := e.Target("vllm-0")
	require.NotNil(t, v0)
	assert.Len(t, v0.Scrapes, 2, "the outside dump was not read either")

	// With FollowLinks the outside dump is read; /proc never is, and the
	// passwd file is not an exposition: its content is not quoted whole.
	e, _ = snapshot.Read(context.Background(), []string{root}, snapshot.Options{FollowLinks: true})
	assert.Equal(t, before, treeHash(t, root))
	assert.Len(t, e.Target("vllm-0").Scrapes, 3, summary(e))
	sk = strings.Join(skippedProblems(e), "\n")
	assert.Contains(t, sk, "2026-09-22T10-10-00Z.prom")
	assert.Contains(t, sk, "/proc, /sys or /dev")
	for _, p := range e.Problems {
		assert.NotContains(t, p.Error(), "/bin/bash", "a file that is not an exposition is not quoted: %v", p)
	}
}

// Inside a folder, only regular files are opened: a FIFO named like a
// dump is skipped as a FIFO (never opened, so reading does not block), a
// loop of links is named as a loop.
func TestSpecialFilesInAFolder(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"vllm-0/2026-09-22T10-00-00Z.prom": vllmDump(3, 0, [3]float64{1, 2, 2}),
	})
	require.NoError(t, syscall.Mkfifo(filepath.Join(root, "vllm-0", "2026-09-22T10-00-15Z.prom"), 0o644))
	require.NoError(t, os.Symlink("b.prom", filepath.Join(root, "vllm-0", "a.prom")))
	require.NoError(t, os.Symlink("a.prom", filepath.Join(root, "vllm-0", "b.prom")))
	require.NoError(t, os.Symlink("..", filepath.Join(root, "vllm-0", "up")))
	before := treeHash(t, root)

	done := make(chan struct{})
	var e *snapshot.Evidence
	var err error
	go func() {
		defer close(done)
		e, err = snapshot.Read(context.Background(), []string{root}, snapshot.Options{})
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("reading a folder with a FIFO blocked")
	}
	require.NoError(t, err)
	assert.Equal(t, before, treeHash(t, root))
	sk := strings.Join(skippedProblems(e), "\n")
	assert.Contains(t, sk, "a named pipe (FIFO), not a regular file: "+filepath.Join(root, "vllm-0", "2026-09-22T10-00-15Z.prom"))
	assert.Contains(t, sk, "a loop of symbolic links")
	assert.Contains(t, sk, "a.prom")
	assert.Contains(t, sk, "a link to a folder already read")
	for _, p := range e.Problems {
		assert.NotContains(t, p.Error(), "not dumps by name", "%v", p)
	}
	assert.Len(t, e.Target("vllm-0").Scrapes, 1)
}

// A FIFO given as PATH is read like standard input, so that
// whyslow diagnose <(curl -s pod:8000/metrics) works.
func TestFIFOAsPath(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "vllm-3.prom")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer f.Close()
		_, _ = f.WriteString(vllmDump(4, 2, [3]float64{1, 2, 3}))
	}()
	e, err := snapshot.Read(context.Background(), []string{fifo}, snapshot.Options{})
	require.NoError(t, err)
	require.Len(t, e.Targets, 1)
	assert.Equal(t, "vllm-3", e.Targets[0].Name)
	assert.Equal(t, []float64{4}, e.Targets[0].Family("vllm:num_requests_running").Series[0].V)
	assert.Equal(t, []string{fifo}, e.Sources)

	// /dev/fd/N, what the shell's <(...) gives, names no pod: "stdin".
	r, w, err := os.Pipe()
	require.NoError(t, err)
	go func() {
		_, _ = w.WriteString(vllmDump(4, 2, [3]float64{1, 2, 3}))
		w.Close()
	}()
	defer r.Close()
	path := "/dev/fd/" + itoa(int(r.Fd()))
	if _, err := os.Stat(path); err != nil {
		t.Skipf("no %s: %v", path, err)
	}
	e, err = snapshot.Read(context.Background(), []string{path}, snapshot.Options{})
	require.NoError(t, err)
	require.Len(t, e.Targets, 1)
	assert.Equal(t, "stdin", e.Targets[0].Name)
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

// A PATH that is a link to a folder is read as that folder; the same
// folder given three times, and hard links, are read once.
func TestLinkToFolderAndSameFileTwice(t *testing.T) {
	root := t.TempDir()
	alias := filepath.Join(root, "alias")
	writeFiles(t, alias, map[string]string{
		"vllm-0/2026-09-22T10-00-00Z.prom": vllmDump(3, 0, [3]float64{1, 2, 2}),
		"vllm-0/2026-09-22T10-00-15Z.prom": vllmDump(5, 1, [3]float64{1, 4, 5}),
	})
	require.NoError(t, os.Link(filepath.Join(alias, "vllm-0", "2026-09-22T10-00-15Z.prom"), filepath.Join(alias, "vllm-0", "copy-2026-09-22T10-00-15Z.prom")))
	link := filepath.Join(root, "link")
	require.NoError(t, os.Symlink("alias", link))
	before := treeHash(t, root)

	once, err := snapshot.Read(context.Background(), []string{alias}, snapshot.Options{})
	require.NoError(t, err)
	require.Len(t, once.Target("vllm-0").Scrapes, 2)
	assert.Len(t, skippedProblems(once), 1, "the hard link: %v", once.Problems)

	viaLink, err := snapshot.Read(context.Background(), []string{link}, snapshot.Options{})
	require.NoError(t, err, "a link to a folder is that folder")
	assert.Len(t, viaLink.Target("vllm-0").Scrapes, 2)

	thrice, err := snapshot.Read(context.Background(), []string{alias, link, alias + "/"}, snapshot.Options{})
	require.NoError(t, err)
	assert.Len(t, thrice.Target("vllm-0").Scrapes, 2)
	for _, p := range thrice.Problems {
		assert.NotErrorIs(t, p, snapshot.ErrDuplicateSeries)
		assert.Equal(t, snapshot.SeverityWarning, p.Severity, "%v", p)
	}
	assert.LessOrEqual(t, len(thrice.Problems), 3, "one warning per path at most: %v", thrice.Problems)
	assert.Equal(t, before, treeHash(t, root))

	// The same file given twice as PATH.
	f := filepath.Join(alias, "vllm-0", "2026-09-22T10-00-00Z.prom")
	twice, err := snapshot.Read(context.Background(), []string{f, f}, snapshot.Options{})
	require.NoError(t, err)
	assert.Len(t, twice.Targets[0].Scrapes, 1)
	require.Len(t, twice.Problems, 1)
	assert.ErrorIs(t, twice.Problems[0], snapshot.ErrSkipped)
}
