package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An output named through a hard link or a symbolic link is still the
// evidence: refused, the evidence unchanged and nothing created under the
// input path.
func TestOutputLinkedToEvidence(t *testing.T) {
	dir := t.TempDir()
	dump := copyCapture(t, filepath.Join(dir))
	before, err := os.ReadFile(dump)
	require.NoError(t, err)
	outside := t.TempDir()

	hard := filepath.Join(outside, "hard")
	require.NoError(t, os.Link(dump, hard))
	dangling := filepath.Join(outside, "dangling.txt")
	require.NoError(t, os.Symlink(filepath.Join(dir, "report.txt"), dangling))
	relDangling := filepath.Join(outside, "rel.txt")
	rel, err := filepath.Rel(outside, filepath.Join(dir, "sub", "r.txt"))
	require.NoError(t, err)
	require.NoError(t, os.Symlink(rel, relDangling))
	chain := filepath.Join(outside, "chain.txt")
	require.NoError(t, os.Symlink(dangling, chain))

	for _, tt := range []struct {
		name, out, want string
	}{
		{"hard link to a dump", hard, "the same file as one under the input path"},
		{"dangling link into the input", dangling, "inside the input path"},
		{"relative dangling link into the input", relDangling, "inside the input path"},
		{"chain of links into the input", chain, "inside the input path"},
	} {
		for _, cmd := range [][]string{
			{"diagnose", "-o", tt.out, dir},
			{"catalog", "-o", tt.out, dir},
			{"quantile", "--metric", "ttft", "-o", tt.out, dir},
		} {
			t.Run(tt.name+"/"+cmd[0], func(t *testing.T) {
				code, _, errOut := whyslow(t, "", cmd...)
				assert.Equal(t, exitUsage, code, errOut)
				assert.Contains(t, errOut, tt.want)
			})
		}
	}
	after, err := os.ReadFile(dump)
	require.NoError(t, err)
	assert.Equal(t, before, after, "the evidence was changed")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "nothing is created under an input path")
}

// A regular output is written beside its path and renamed into place: a
// hard link to the old output keeps the old contents, a symbolic link to
// a file outside the inputs gets the report at its target and stays a
// link, and a failed run leaves the earlier output as it was.
func TestOutputRenamedIntoPlace(t *testing.T) {
	out := t.TempDir()
	old := filepath.Join(out, "report.txt")
	require.NoError(t, os.WriteFile(old, []byte("earlier report\n"), 0o640))
	keep := filepath.Join(out, "keep")
	require.NoError(t, os.Link(old, keep))

	code, _, errOut := whyslow(t, "", "catalog", "-o", old, capture)
	require.Equal(t, exitOK, code, errOut)
	got, err := os.ReadFile(old)
	require.NoError(t, err)
	assert.NotEqual(t, "earlier report\n", string(got))
	kept, err := os.ReadFile(keep)
	require.NoError(t, err)
	assert.Equal(t, "earlier report\n", string(kept), "the other name of the old output keeps it")
	info, err := os.Stat(old)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o640), info.Mode().Perm(), "the output keeps its permissions")

	target := filepath.Join(out, "target.txt")
	link := filepath.Join(out, "link.txt")
	require.NoError(t, os.Symlink(target, link))
	code, _, errOut = whyslow(t, "", "catalog", "-o", link, capture)
	require.Equal(t, exitOK, code, errOut)
	li, err := os.Lstat(link)
	require.NoError(t, err)
	assert.NotZero(t, li.Mode()&os.ModeSymlink, "the link stays a link")
	assert.FileExists(t, target)

	// A run that fails after the output is opened leaves it alone.
	before, err := os.ReadFile(old)
	require.NoError(t, err)
	code, _, _ = whyslow(t, "", "quantile", "--metric", "ttft", "--model", "nosuchmodel", "-o", old, capture)
	require.NotEqual(t, exitOK, code)
	after, err := os.ReadFile(old)
	require.NoError(t, err)
	assert.Equal(t, before, after)
	entries, err := os.ReadDir(out)
	require.NoError(t, err)
	for _, e := range entries {
		assert.False(t, strings.HasSuffix(e.Name(), ".tmp"), "temporary file left: %s", e.Name())
	}

	// A device is written in place.
	code, _, errOut = whyslow(t, "", "catalog", "-o", os.DevNull, capture)
	require.Equal(t, exitOK, code, errOut)
}
