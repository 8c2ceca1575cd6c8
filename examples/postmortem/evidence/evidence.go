// Package evidence holds the sample evidence of the examples: an incident
// on a 4-pod vLLM fleet, one hour of scrapes every 30 s, in which 12% of the
// prompts become ~7k-token documents from minute 30 (the "long-prompts"
// scenario of the repository's simulator).
//
// The data is one gzip-compressed OpenMetrics document, File, which the
// whyslow command reads as any other evidence:
//
//	whyslow diagnose examples/postmortem/evidence/long-prompts.om.gz
//
// It is generated, not written by hand: see ../gen.go.
package evidence

import (
	_ "embed"

	"github.com/whyslow/whyslow/snapshot"
)

// Scenario is the simulator scenario the sample was generated from, and
// Expect the hypothesis that scenario is built to produce.
const (
	Scenario = "long-prompts"
	Expect   = "prefill-long-prompts"
)

// File is the name of the sample file in this directory.
const File = "long-prompts.om.gz"

//go:embed long-prompts.om.gz
var data []byte

// Bytes returns the gzip-compressed sample. The caller must not modify it.
func Bytes() []byte { return data }

// Read parses the embedded sample into Evidence, as snapshot.Read would
// read the file File from disk.
func Read() (*snapshot.Evidence, error) {
	return snapshot.ParseDump(data, File, snapshot.Options{})
}
