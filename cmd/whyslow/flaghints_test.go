package main

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// flagHints is what the command's output must read as: the library's
// names replaced by their flags, by strings.Replacer (writeHinted's oracle).
var flagHints = strings.NewReplacer(hintPairs[:]...)

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

// TestWriteHinted: writeHinted, and a hintWriter given the text in any
// pieces, write what flagHints.Replace makes of it (names next to each
// other, overlapping, cut short, repeated), on texts made of the names'
// pieces at random.
func TestWriteHinted(t *testing.T) {
	texts := []string{
		"",
		"no option here\n",
		"Options.Incident",
		"Options.IncidentOptions.Baseline\nCatalog.AliasCatalog.Alias",
		"Options.Options.SLO Options.SL Config.HTTP.TLSConfig.CAFile\n",
		"Thresholds.SetThresholds.Se\nt Options.MaxWindow\n\nOptions.KeepTimeOutliers",
		"Options.SLOptions.Incident", // a name that would start inside the one replaced
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var pieces []string
	for k := 0; k < len(hintPairs); k += 2 {
		name := hintPairs[k]
		pieces = append(pieces, name, name[:len(name)/2], name[len(name)/2:])
	}
	pieces = append(pieces, "\n", " ", ".", "O", "x")
	for range 300 {
		var b strings.Builder
		for range rng.IntN(40) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		texts = append(texts, b.String())
	}
	for _, text := range texts {
		want := flagHints.Replace(text)
		var got strings.Builder
		require.NoError(t, writeHinted(&got, []byte(text)))
		require.Equal(t, want, got.String(), "%q", text)
		for _, lines := range []bool{false, true} {
			var out, each strings.Builder
			w := &hintWriter{w: &out, lines: lines}
			rest := text
			for rest != "" {
				n := 1 + rng.IntN(len(rest))
				m, err := w.Write([]byte(rest[:n]))
				require.NoError(t, err)
				require.Equal(t, n, m)
				each.WriteString(flagHints.Replace(rest[:n]))
				rest = rest[n:]
			}
			require.NoError(t, w.Flush())
			if lines {
				// Whole lines keep their names whatever the cuts.
				assert.Equal(t, want, out.String(), "%q", text)
			} else {
				// Each write is rewritten on its own.
				assert.Equal(t, each.String(), out.String(), "%q", text)
			}
		}
	}
}
