package main

import (
	"context"
	"io"
	"strings"

	wsreport "github.com/whyslow/whyslow/report"
	"github.com/whyslow/whyslow/snapshot"
)

const catalogExamples = `  whyslow catalog ./evidence/
  whyslow catalog --alias ttft=gateway_ttft_seconds --alias vllm:=ray_vllm: ./dump.prom
  whyslow catalog --format json ./evidence/
`

// runCatalog implements "whyslow catalog": which signals were found, under
// which metric names and vLLM versions, and which are missing.
func runCatalog(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e.stdout, "catalog", "[flags] PATH...", catalogExamples)
	var in inputFlags
	in.register(fs.FlagSet)
	wide := fs.Bool("wide", false, "do not fit the tables to 120 columns (one row per line, however wide)")
	format := fs.String("format", "text", "output `FORMAT`: text or json")
	paths, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if err := checkFormat(*format, "text", "json"); err != nil {
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
	res := cat.Resolve(ev)
	if *format == "json" {
		return closeOut(wsreport.WriteCatalogJSON(out, res))
	}
	doc := wsreport.CatalogDocument(res)
	width := wsreport.TextWidth
	if *wide {
		width = 0
	}
	err = doc.WriteTextWidth(out, width)
	if err == nil && strings.Contains(res.String(), "(name one with Catalog.Alias)") {
		_, err = io.WriteString(out, "\nname a metric for a signal without a default with --alias SIGNAL=METRIC, e.g. --alias client_ttft=gateway_ttft_seconds\n")
	}
	return closeOut(err)
}
