package main

import (
	"context"
	"errors"
	"io"
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
	cat, ev, err := in.catalogAndEvidence(ctx, e, paths)
	if err != nil {
		return err
	}
	out, closeOut, err := in.out(e)
	if err != nil {
		return err
	}
	_, err = io.WriteString(out, cat.Resolve(ev).String())
	return errors.Join(err, closeOut())
}
