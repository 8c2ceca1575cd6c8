package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestFlagHints: library option names read as flags, also when a
// buffered writer splits a name across two writes.
func TestFlagHints(t *testing.T) {
	var b strings.Builder
	w := &hintWriter{w: &b, lines: true}
	w.Write([]byte("no max_num_seqs metric (name one with Catalog.Al"))
	w.Write([]byte("ias max_num_seqs=METRIC)\ngive Options.Incident and Options.Baseline"))
	assert.Equal(t, "no max_num_seqs metric (name one with --alias max_num_seqs=METRIC)\n", b.String())
	w.Flush()
	assert.Equal(t, "no max_num_seqs metric (name one with --alias max_num_seqs=METRIC)\ngive --incident and --baseline", b.String())
}
