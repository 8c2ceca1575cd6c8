//go:build unix

package snapshot_test

import (
	"bytes"
	"compress/gzip"
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

	"github.com/whyslow/whyslow/snapshot"
)

// TestStreamScrapeTime: a dump with no time on its samples, read live
// from standard input that is a pipe (or any reader but a file), or from
// a FIFO given as a path, is a scrape taken when it was read, said once
// in an info note; standard input redirected from a regular file keeps
// the file's rule (its mtime, with a warning); a dump whose samples carry
// a time keeps that time, with no note.
func TestStreamScrapeTime(t *testing.T) {
	const noTime = "# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{model_name=\"m\"} 3\n" +
		"# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} 5\n"
	const withTime = "# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{model_name=\"m\"} 3 1758535200000\n"
	mtime := time.Date(2026, 9, 22, 10, 0, 0, 0, time.UTC)

	// pipe returns the read end of a pipe that carries data.
	pipe := func(t *testing.T, data string) *os.File {
		r, w, err := os.Pipe()
		require.NoError(t, err)
		go func() {
			defer w.Close()
			_, _ = w.WriteString(data)
		}()
		t.Cleanup(func() { r.Close() })
		return r
	}
	// regular returns a regular file holding data, opened for reading.
	regular := func(t *testing.T, data string) *os.File {
		name := filepath.Join(t.TempDir(), "dump")
		require.NoError(t, os.WriteFile(name, []byte(data), 0o644))
		require.NoError(t, os.Chtimes(name, mtime, mtime))
		f, err := os.Open(name)
		require.NoError(t, err)
		t.Cleanup(func() { f.Close() })
		return f
	}
	// fifo returns the path of a FIFO that a writer fills with data.
	fifo := func(t *testing.T, data string) string {
		name := filepath.Join(t.TempDir(), "pod.prom")
		require.NoError(t, syscall.Mkfifo(name, 0o644))
		go func() {
			f, err := os.OpenFile(name, os.O_WRONLY, 0)
			if err != nil {
				return
			}
			defer f.Close()
			_, _ = f.WriteString(data)
		}()
		return name
	}

	cases := []struct {
		name string
		// input returns the path to read and the reader of "-".
		input func(t *testing.T) (string, any)
		from  snapshot.TimeSource
		// at is the expected time; zero means "when it was read".
		at       time.Time
		severity snapshot.Severity
		noteHas  string // "" means no ErrNoTime problem at all
	}{
		{name: "stdin pipe", input: func(t *testing.T) (string, any) { return "-", pipe(t, noTime) },
			from: snapshot.TimeFromReadTime, severity: snapshot.SeverityInfo, noteHas: "taken as scraped when it was read"},
		{name: "stdin reader", input: func(t *testing.T) (string, any) { return "-", strings.NewReader(noTime) },
			from: snapshot.TimeFromReadTime, severity: snapshot.SeverityInfo, noteHas: "taken as scraped when it was read"},
		{name: "fifo path", input: func(t *testing.T) (string, any) { return fifo(t, noTime), nil },
			from: snapshot.TimeFromReadTime, severity: snapshot.SeverityInfo, noteHas: "taken as scraped when it was read"},
		{name: "stdin from a file", input: func(t *testing.T) (string, any) { return "-", regular(t, noTime) },
			from: snapshot.TimeFromModTime, at: mtime, severity: snapshot.SeverityWarning, noteHas: "mtime"},
		{name: "stdin pipe with sample times", input: func(t *testing.T) (string, any) { return "-", pipe(t, withTime) },
			from: snapshot.TimeFromSamples, at: time.UnixMilli(1758535200000).UTC()},
		{name: "gzip'ed stdin pipe", input: func(t *testing.T) (string, any) { return "-", pipe(t, gzipped(t, noTime)) },
			from: snapshot.TimeFromReadTime, severity: snapshot.SeverityInfo, noteHas: "taken as scraped when it was read"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path, in := tc.input(t)
			opts := snapshot.Options{}
			if r, ok := in.(interface{ Read([]byte) (int, error) }); ok {
				opts.Stdin = r
			}
			before := time.Now().Truncate(time.Millisecond)
			ev, err := snapshot.Read(context.Background(), []string{path}, opts)
			after := time.Now()
			require.NoError(t, err)
			require.Len(t, ev.Targets, 1)
			require.Len(t, ev.Targets[0].Scrapes, 1)
			sc := ev.Targets[0].Scrapes[0]
			assert.Equal(t, tc.from, sc.TimeFrom)
			if tc.at.IsZero() {
				assert.False(t, sc.Time.Before(before) || sc.Time.After(after), "scrape at %s, read between %s and %s", sc.Time, before, after)
			} else {
				assert.Equal(t, tc.at, sc.Time)
			}
			var notes []snapshot.Problem
			for _, p := range ev.Problems {
				if errors.Is(p, snapshot.ErrNoTime) {
					notes = append(notes, p)
				}
			}
			if tc.noteHas == "" {
				assert.Empty(t, notes)
				return
			}
			require.Len(t, notes, 1, "said once")
			assert.Equal(t, tc.severity, notes[0].Severity)
			assert.Contains(t, notes[0].Error(), tc.noteHas)
			assert.False(t, ev.Partial())
		})
	}
}

func gzipped(t *testing.T, s string) string {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, err := zw.Write([]byte(s))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return buf.String()
}
