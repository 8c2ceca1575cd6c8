package main

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Each class of bad input, as a new user meets it: the exit code, and a
// message naming the file, the line and what the input is.
func TestBadInputClasses(t *testing.T) {
	data, err := os.ReadFile(capture)
	require.NoError(t, err)
	crlf := bytes.ReplaceAll(data, []byte("\n"), []byte("\r\n"))
	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	_, _ = zw.Write([]byte("vllm:num_requests_waiting{pod=\"a\"} 1\n"))
	pad := bytes.Repeat([]byte("# padding\n"), 1<<16)
	for range 40 {
		_, _ = zw.Write(pad)
	}
	require.NoError(t, zw.Close())

	tests := []struct {
		name, file string
		data       []byte
		args       []string
		code       int
		want       []string
		not        []string
	}{
		{"json", "vllm-0_2026-09-28T10-00-00Z.prom", []byte(`{"status":"success","data":{}}`), nil, exitInput,
			[]string{"vllm-0_2026-09-28T10-00-00Z.prom:1: file is JSON, not an exposition"}, nil},
		{"utf-16", "vllm-0_2026-09-28T10-00-00Z.prom", append([]byte{0xff, 0xfe}, []byte("v\x00l\x00l\x00m\x00:\x00a\x00 \x001\x00\n\x00")...), nil, exitInput,
			[]string{":1: file is UTF-16LE text, not UTF-8: convert it to UTF-8"}, []string{"binary data"}},
		{"crlf", "vllm-0_2026-09-28T10-00-00Z.prom", crlf, nil, exitOK,
			[]string{"warning: ", "input normalised: CRLF line endings of"}, []string{"error: ", `counter\r`}},
		{"crlf strict", "vllm-0_2026-09-28T10-00-00Z.prom", crlf, []string{"--strict"}, exitOK,
			[]string{"warning: "}, nil},
		{"gzip bomb", "federate.txt.gz", bomb.Bytes(), []string{"--max-bytes", "1MiB"}, exitInput,
			[]string{"federate.txt.gz: limit exceeded: gzip stream holds more than Limits.MaxBytesPerScrape", "hint: --max-bytes raises"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, tt.file)
			require.NoError(t, os.WriteFile(p, tt.data, 0o644))
			before := hashDir(t, dir)
			code, _, errOut := whyslow(t, "", append(append([]string{"catalog"}, tt.args...), p)...)
			assert.Equal(t, tt.code, code, errOut)
			for _, w := range tt.want {
				assert.Contains(t, errOut, w)
			}
			for _, n := range tt.not {
				assert.NotContains(t, errOut, n)
			}
			assert.Equal(t, before, hashDir(t, dir), "nothing under the input changed")
		})
	}
}

// hashDir describes every file of dir: name, mode, size, mtime, content.
func hashDir(t *testing.T, dir string) string {
	var sb strings.Builder
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		require.NoError(t, err)
		fi, err := os.Lstat(p)
		require.NoError(t, err)
		sb.WriteString(p + " " + fi.Mode().String() + " " + fi.ModTime().String() + "\n")
		if fi.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			require.NoError(t, err)
			sb.Write(data)
		}
		return nil
	}))
	return sb.String()
}
