package main

import (
	"bytes"
	"io"
)

// The library's messages name what is missing in library terms
// (Catalog.Alias, Options.Incident, Thresholds.Set); on the command line
// the same options are flags. hintPairs are the library's names and the
// flags they read as, in pairs, and writeHinted rewrites the one into the
// other in everything the command prints. No name is the prefix of
// another, so that the first name found in a text is the one to replace
// there, as a strings.Replacer of the pairs would (the tests' oracle).
var hintPairs = [...]string{
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
	"Config.Deadline", "--server-deadline",
	"Config.MaxResponseBytes", "--max-bytes",
}

// writeHinted writes p to w with each library name of hintPairs replaced
// by its flag, without copying p: the text between the names goes out as
// it is. A report of
// megabytes names an option a few times, or never, and was copied three
// times over to be rewritten (13 MB of JSON: ~0.1 s).
func writeHinted(w io.Writer, p []byte) error {
	// next[k] is where name k is next found in p at or after at, or -1.
	var next [len(hintNames)]int
	for k, name := range hintNames {
		next[k] = bytes.Index(p, name)
	}
	at := 0
	for {
		k := -1
		for j, i := range next {
			if i >= 0 && (k < 0 || i < next[k]) {
				k = j
			}
		}
		if k < 0 {
			break
		}
		if _, err := w.Write(p[at:next[k]]); err != nil {
			return err
		}
		if _, err := io.WriteString(w, hintPairs[2*k+1]); err != nil {
			return err
		}
		at = next[k] + len(hintNames[k])
		for j, i := range next {
			if i >= 0 && i < at {
				if next[j] = bytes.Index(p[at:], hintNames[j]); next[j] >= 0 {
					next[j] += at
				}
			}
		}
	}
	_, err := w.Write(p[at:])
	return err
}

// hintNames are the library's names of hintPairs, in their order.
var hintNames = func() (names [len(hintPairs) / 2][]byte) {
	for k := range names {
		names[k] = []byte(hintPairs[2*k])
	}
	return names
}()

// hintWriter writes through writeHinted. With lines set it holds back a
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
	n := len(p)
	if !h.lines {
		return n, writeHinted(h.w, p)
	}
	if len(h.buf) > 0 {
		// The line held back goes first, with what completes it.
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			h.buf = append(h.buf, p...)
			return n, nil
		}
		h.buf = append(h.buf, p[:i+1]...)
		err := writeHinted(h.w, h.buf)
		h.buf, p = h.buf[:0], p[i+1:]
		if err != nil {
			return n, err
		}
	}
	// No name holds a newline: the whole lines of p are rewritten where
	// they are, the partial one held back.
	i := bytes.LastIndexByte(p, '\n')
	if i >= 0 {
		if err := writeHinted(h.w, p[:i+1]); err != nil {
			return n, err
		}
	}
	h.buf = append(h.buf, p[i+1:]...)
	return n, nil
}

// Flush writes a held-back partial line.
func (h *hintWriter) Flush() error {
	if len(h.buf) == 0 {
		return nil
	}
	err := writeHinted(h.w, h.buf)
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
