//go:build unix

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A link out of a dump folder is not read, and its content reaches no
// output; --follow-links reads it.
func TestFollowLinksFlag(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "passwd")
	require.NoError(t, os.WriteFile(secret, []byte("root:x:0:0:root:/root:/bin/bash\n"), 0o644))
	data, err := os.ReadFile(capture)
	require.NoError(t, err)
	other := filepath.Join(outside, "dump.prom")
	require.NoError(t, os.WriteFile(other, data, 0o644))

	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "vllm-0"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "vllm-0", "2026-09-28T10-00-00Z.prom"), data, 0o644))
	require.NoError(t, os.Symlink(secret, filepath.Join(dir, "vllm-0", "2026-09-28T10-09-59Z.prom")))
	require.NoError(t, os.Symlink(other, filepath.Join(dir, "vllm-1_2026-09-28T10-00-00Z.prom")))

	for _, format := range []string{"text", "json", "markdown"} {
		code, out, errOut := whyslow(t, "", "diagnose", "--format", format, dir)
		assert.Equal(t, exitOK, code, errOut)
		assert.NotContains(t, out+errOut, "root:x:0:0")
		assert.Contains(t, errOut, "warning: ")
		assert.Contains(t, errOut, "2026-09-28T10-09-59Z.prom")
		assert.Contains(t, errOut, "a symbolic link to outside the folder")
		assert.NotContains(t, errOut, "error: ")
	}
	code, out, errOut := whyslow(t, "", "catalog", "--follow-links", dir)
	assert.Equal(t, exitOK, code, errOut)
	assert.NotContains(t, out+errOut, "root:x:0:0", "not an exposition: not quoted")
	assert.Contains(t, out, "vllm-1", "the linked dump is read with --follow-links")
}

// A label over the 64 KiB label limit: the hint says no flag raises it.
func TestLabelLimitHint(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile(capture)
	require.NoError(t, err)
	big := "vllm:num_requests_waiting{model_name=\"" + strings.Repeat("x", 70<<10) + "\"} 1\n"
	p := filepath.Join(dir, "vllm-0_2026-09-28T10-00-00Z.prom")
	require.NoError(t, os.WriteFile(p, append(data, big...), 0o644))
	code, _, errOut := whyslow(t, "", "catalog", p)
	assert.Equal(t, exitOK, code, errOut)
	assert.Contains(t, errOut, "hint: no flag raises Limits.MaxLabelBytes (64 KiB)")
	assert.NotContains(t, errOut, "--max-bytes")
}

// whyslow diagnose <(cat dump): the shell gives a /dev/fd path, a pipe.
func TestProcessSubstitution(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	bin := filepath.Join(t.TempDir(), "whyslow")
	build := exec.Command("go", "build", "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	cmd := exec.Command(bash, "-c", `"$0" catalog <(cat "$1")`, bin, capture)
	out, err = cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "vllm:")
	assert.Contains(t, string(out), "stdin")
}

// An impossible value (+Inf, a negative queue) is a warning naming the
// file and line, and the sample is left out.
func TestImpossibleValuesAreWarnings(t *testing.T) {
	data, err := os.ReadFile(capture)
	require.NoError(t, err)
	s := string(data)
	i := strings.Index(s, "vllm:num_requests_waiting{")
	require.GreaterOrEqual(t, i, 0)
	j := i + strings.IndexByte(s[i:], '\n')
	k := strings.LastIndexByte(s[i:j], ' ') + i
	line := strings.Count(s[:i], "\n") + 1
	dir := t.TempDir()
	for _, v := range []string{"+Inf", "-3"} {
		p := filepath.Join(dir, "vllm-0_2026-09-28T10-00-00Z.prom")
		require.NoError(t, os.WriteFile(p, []byte(s[:k+1]+v+s[j:]), 0o644))
		code, _, errOut := whyslow(t, "", "catalog", p)
		assert.Equal(t, exitOK, code, errOut)
		assert.Contains(t, errOut, "warning: "+p+":"+itoa(line)+": impossible sample value: ")
		assert.Contains(t, errOut, "vllm:num_requests_waiting")
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
