package main

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The default text of diagnose, compare, quantile and catalog fits 120 columns
// (issue 14); --wide keeps each table row on one line.
func TestTextFits120Columns(t *testing.T) {
	const sample = "../../examples/postmortem/evidence/long-prompts.om.gz"
	real := "../../testdata/realdata/vllm/lora-multitenancy-experiment-0.30.0.prom"
	for _, args := range [][]string{
		{"diagnose", sample},
		{"diagnose", "--verbose", sample},
		{"compare", sample},
		{"quantile", "--metric", "ttft", sample},
		{"quantile", "--metric", "prompt_tokens", sample},
		{"diagnose", real},
		{"catalog", real},
	} {
		code, out, errOut := whyslow(t, "", args...)
		require.Equal(t, exitOK, code, errOut)
		for n, line := range strings.Split(out, "\n") {
			assert.LessOrEqual(t, utf8.RuneCountInString(line), 120, "%v: line %d: %q", args, n+1, line)
		}
	}
	// --wide: the compare table is one table again, its rows whole.
	_, wide, _ := whyslow(t, "", "compare", "--wide", sample)
	_, fitted, _ := whyslow(t, "", "compare", sample)
	assert.Equal(t, 1, strings.Count(wide, "  signal "), "one table")
	assert.Equal(t, 2, strings.Count(fitted, "  signal "), "split in two, each repeating the signal column")
	longest := 0
	for _, line := range strings.Split(wide, "\n") {
		longest = max(longest, utf8.RuneCountInString(line))
	}
	assert.Greater(t, longest, 120)
	_, wideCatalog, _ := whyslow(t, "", "catalog", "--wide", real)
	assert.Equal(t, 1, strings.Count(wideCatalog, "  signal "), "catalog --wide: one signal table")
}

// The short message for evidence without a vLLM target, as a golden file.
func TestNoVLLMMessageGolden(t *testing.T) {
	code, out, errOut := whyslow(t, "", "diagnose", "../../testdata/realdata/vllm/sglang-production-metrics-docs-unknown.prom")
	assert.Equal(t, exitInput, code)
	assert.Empty(t, out)
	// The reading warning names the file's mtime, which a checkout sets:
	// only the message itself is compared.
	var lines []string
	for _, l := range strings.Split(errOut, "\n") {
		if strings.HasPrefix(l, "whyslow diagnose:") {
			lines = append(lines, l)
		}
	}
	golden(t, "no-vllm.txt", strings.Join(lines, "\n")+"\n")
}
