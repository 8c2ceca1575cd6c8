package main

import (
	"encoding/json"
	"io"

	"github.com/whyslow/whyslow/diagnose"
)

// writeJSON writes the judgement in its JSON form (see rules.Judgement).
func writeJSON(w io.Writer, rep *diagnose.ExperimentReport) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(rep)
}
