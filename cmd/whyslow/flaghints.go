package main

import (
	"bytes"
	"io"
	"strings"
)

// The library's messages name what is missing in library terms
// (Catalog.Alias, Options.Incident, Thresholds.Set); on the command line
// the same options are flags. flagHints rewrites the one into the other in
// everything the command prints.
var flagHints = strings.NewReplacer(
	"Catalog.Alias", "--alias",
	"Options.Incident", "--incident",
	"Options.Baseline", "--baseline",
	"Options.MaxWindow", "--max-window",
	"Options.SLO", "--slo",
	"Thresholds.Set", "--thresholds",
	"Options.FollowLinks", "--follow-links",
	"Options.KeepTimeOutliers", "--keep-time-outliers",
	"Options.VLLMVersion", "--vllm-version",
	"Config.HTTP.TLSConfig.CAFile", "--tls-ca-file",
)

// hintWriter writes through flagHints. With lines set it holds back a
// partial line, so that a name split across two writes (a bufio.Writer
// flushing mid-line) is still rewritten; Flush writes the rest. Without
// it every write is rewritten on its own, which keeps a progress display
// that redraws with "\r" live.
type hintWriter struct {
	w     io.Writer
	lines bool
	buf   []byte
}

func (h *hintWriter) Write(p []byte) (int, error) {
	if !h.lines {
		_, err := io.WriteString(h.w, flagHints.Replace(string(p)))
		return len(p), err
	}
	h.buf = append(h.buf, p...)
	i := bytes.LastIndexByte(h.buf, '\n')
	if i < 0 {
		return len(p), nil
	}
	_, err := io.WriteString(h.w, flagHints.Replace(string(h.buf[:i+1])))
	h.buf = h.buf[:copy(h.buf, h.buf[i+1:])]
	return len(p), err
}

// Flush writes a held-back partial line.
func (h *hintWriter) Flush() error {
	if len(h.buf) == 0 {
		return nil
	}
	_, err := io.WriteString(h.w, flagHints.Replace(string(h.buf)))
	h.buf = h.buf[:0]
	return err
}

// withFlagHints returns a copy of e whose output streams rewrite library
// option names into flags, and the function that flushes them.
func withFlagHints(e *env) (*env, func()) {
	if _, ok := e.stdout.(*hintWriter); ok {
		return e, func() {}
	}
	out := &hintWriter{w: e.stdout, lines: true}
	c := *e
	c.stdout, c.stderr = out, &hintWriter{w: e.stderr}
	return &c, func() { out.Flush() }
}
