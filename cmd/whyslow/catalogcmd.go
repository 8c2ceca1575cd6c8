package main

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/whyslow/whyslow/snapshot"
)

const catalogExamples = `  whyslow catalog ./evidence/
  whyslow catalog --alias ttft=gateway_ttft_seconds --alias vllm:=ray_vllm: ./dump.prom
`

// runCatalog implements "whyslow catalog": which signals were found, under
// which metric names and vLLM versions, and which are missing.
func runCatalog(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e.stdout, "catalog", "[flags] PATH...", catalogExamples)
	var in inputFlags
	in.register(fs.FlagSet)
	paths, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	cat, ev, err := in.catalogAndEvidence(ctx, e, paths, snapshot.Options{})
	if err != nil {
		return err
	}
	out, closeOut, err := in.out(e)
	if err != nil {
		return err
	}
	text := cat.Resolve(ev).String()
	if strings.Contains(text, "(name one with Catalog.Alias)") {
		// The library says it in its terms; the command in its flags.
		text += "\nname a metric for a signal without a default with --alias SIGNAL=METRIC, e.g. --alias client_ttft=gateway_ttft_seconds\n"
	}
	_, err = io.WriteString(out, text)
	return errors.Join(err, closeOut())
}
