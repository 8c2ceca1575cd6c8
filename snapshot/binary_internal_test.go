package snapshot

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/whyslow/whyslow/snapshot/internal/stream"
)

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// maxBinaryRead bounds the bytes read of a file before binary data in
// it stop the read: the first chunk, and the head read to choose its
// limit.
const maxBinaryRead = stream.MaxChunk + headSize

// binaryProblem returns the one ErrNotExposition problem of e.
func binaryProblem(t *testing.T, e *Evidence) Problem {
	t.Helper()
	ps := e.ProblemsOf(ErrNotExposition)
	require.Len(t, ps, 1, "problems: %v", e.Problems)
	return ps[0]
}

// A file of zeros behind a first line that carries a timestamp (a sparse
// file of 3 GiB, which gets Limits.MaxBytesPerFile) stops being read at
// its first chunk: the problem names the file and the offset of the
// first zero, and the good line is read. The same in a folder.
func TestSparseFileAfterTimestampedLineIsNotReadWhole(t *testing.T) {
	const first = "vllm:num_requests_running 1 1758535200000\n"
	for _, inDir := range []bool{false, true} {
		t.Run(map[bool]string{false: "path", true: "folder"}[inDir], func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "vllm-0_2026-09-22T10-00-00Z.prom")
			require.NoError(t, os.WriteFile(path, []byte(first), 0o644))
			require.NoError(t, os.Truncate(path, 3<<30)) // sparse: costs no disk
			var n atomic.Int64
			testReader = func(r io.Reader) io.Reader { return countingReader{r, &n} }
			t.Cleanup(func() { testReader = nil })

			in := path
			if inDir {
				in = dir
			}
			ev, err := Read(context.Background(), []string{in}, Options{})
			require.NoError(t, err)
			p := binaryProblem(t, ev)
			assert.Equal(t, path, p.File)
			assert.Contains(t, p.Error(), "binary data (byte 0x00 at offset 42)")
			assert.Equal(t, 2, p.Line)
			assert.LessOrEqual(t, n.Load(), int64(maxBinaryRead), "bytes read of a 3 GiB file of zeros")
			assert.Positive(t, n.Load())
			require.Len(t, ev.Targets, 1)
			assert.Len(t, ev.Targets[0].Scrapes, 1, "the good first line is read")
		})
	}
}

// endless yields head, then fill's bytes forever.
type endless struct {
	head []byte
	fill func(p []byte)
}

func (e *endless) Read(p []byte) (int, error) {
	if len(e.head) > 0 {
		n := copy(p, e.head)
		e.head = e.head[n:]
		return n, nil
	}
	e.fill(p)
	return len(p), nil
}

// A stream of random bytes (/dev/urandom given as a path) or of zeros
// behind a good line stops being read at the first binary byte kept,
// with a problem naming the stream; a NUL byte in a comment line the
// reader drops does not stop it.
func TestBinaryStreamStopsEarly(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	tests := []struct {
		name  string
		in    io.Reader
		want  string // in the problem
		lines int    // samples kept
	}{
		{name: "random bytes", in: &endless{fill: func(p []byte) {
			for i := range p {
				p[i] = byte(rnd.Uint32())
			}
		}}, want: "binary data"},
		{name: "zeros after a timestamped line", in: &endless{
			head: []byte("vllm:num_requests_running 1 1758535200000\n"),
			fill: func(p []byte) { clear(p) },
		}, want: "binary data (byte 0x00 at offset 42)", lines: 1},
		{name: "a NUL in a dropped comment", in: strings.NewReader(
			"# a comment with a \x00 byte\nvllm:num_requests_running 1\nvllm:num_requests_waiting 2\n"), lines: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n atomic.Int64
			ev, err := Read(context.Background(), []string{"-"}, Options{Stdin: countingReader{tt.in, &n}})
			if tt.lines == 0 {
				require.Error(t, err)
				assert.True(t, errors.Is(err, ErrNotExposition), "%v", err)
			} else {
				require.NoError(t, err)
			}
			require.NotNil(t, ev)
			if tt.want != "" {
				p := binaryProblem(t, ev)
				assert.Equal(t, stdinName, p.File)
				assert.Contains(t, p.Error(), tt.want)
				assert.LessOrEqual(t, n.Load(), int64(maxBinaryRead))
			} else {
				assert.Empty(t, ev.ProblemsOf(ErrNotExposition))
			}
			samples := 0
			for _, tg := range ev.Targets {
				for _, f := range tg.Families {
					samples += len(f.Series)
				}
			}
			assert.Equal(t, tt.lines, samples)
		})
	}
}
