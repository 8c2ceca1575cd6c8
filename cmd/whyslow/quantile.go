package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/whyslow/whyslow/diagnose"
	wsreport "github.com/whyslow/whyslow/report"
	"github.com/whyslow/whyslow/snapshot"
)

const quantileExamples = `  whyslow quantile --metric ttft ./evidence/
  whyslow quantile --metric vllm:time_to_first_token_seconds --q 0.5,0.95,0.99 \
      --window 2026-09-22T10:00:00Z/2026-09-22T10:30:00Z --format json ./evidence/
  whyslow quantile --metric e2e --by model_name ./federate.txt
`

// runQuantile implements "whyslow quantile": the fleet quantile from
// merged buckets with bounds and counts, and the per-replica table.
func runQuantile(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e.stdout, "quantile", "--metric NAME [flags] PATH...", quantileExamples)
	var in inputFlags
	in.register(fs.FlagSet)
	metric := fs.String("metric", "", "histogram base `NAME` (vllm:time_to_first_token_seconds) or signal id (ttft)")
	qflag := fs.String("q", "0.5,0.95,0.99", "comma-separated `QUANTILES`")
	window := fs.String("window", "", "RFC 3339 interval `START/END`; default: each replica's first to last scrape")
	model := fs.String("model", "", "keep only model_name=`NAME`")
	by := fs.String("by", "", "split by `LABEL` (e.g. model_name): one table per value")
	format := fs.String("format", "text", "output `FORMAT`: text or json")
	paths, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if *metric == "" {
		return usagef("--metric is required")
	}
	if err := checkFormat(*format, "text", "json"); err != nil {
		return err
	}
	qs, err := parseQuantiles(*qflag)
	if err != nil {
		return usagef("--q: %v", err)
	}
	w, err := parseWindow(*window)
	if err != nil {
		return usagef("--window: %v", err)
	}
	cat, err := in.catalog()
	if err != nil {
		return err
	}
	req := diagnose.QuantileRequest{Metric: *metric, Catalog: cat, Quantiles: qs, Window: w, Match: modelMatch(*model)}
	// Read only the histogram asked for, over the window (see
	// QuantileRequest.Selection).
	sel := req.Selection()
	cat, ev, err := in.catalogAndEvidence(ctx, e, paths, sel)
	if err == nil && onlyProcessStart(ev) {
		// None of the histogram was read, only the process start times
		// the selection adds: read as if they were not asked for, so
		// that the messages say what the evidence holds.
		sel.Metrics = slices.DeleteFunc(slices.Clone(sel.Metrics), func(n string) bool { return n == processStartMetric })
		cat, ev, err = in.catalogAndEvidence(ctx, e, paths, sel)
	}
	if err != nil {
		return err
	}
	req.Catalog = cat
	if err := checkMetric(*metric, cat, ev); err != nil {
		return err
	}
	if err := checkModel(*model, ev); err != nil {
		return err
	}
	if err := checkWindow("--window", w, ev); err != nil {
		return err
	}
	out, closeOut, err := in.out(e)
	if err != nil {
		return err
	}
	if *by == "" {
		rep, err := diagnose.FleetQuantiles(ev, req)
		if err != nil {
			closeOut(err)
			if errors.Is(err, diagnose.ErrSeveralModels) {
				return usagef("%v (on the command line: choose one with --model NAME or split with --by model_name)", err)
			}
			return err
		}
		lost := lostWarnings(ev, rep)
		if in.strict && len(lost) > 0 {
			return closeOut(fmt.Errorf("partial result (--strict): %s", strings.TrimPrefix(lost[0], "partial: ")))
		}
		rep.Warnings = append(rep.Warnings, lost...)
		err = printQuantiles(out, *format, rep)
		return closeOut(err)
	}
	// One report per value of the split label.
	groups, err := diagnose.FleetQuantilesBy(ev, req, *by)
	if err != nil {
		closeOut(err)
		return fmt.Errorf("--by %s: %w", *by, err)
	}
	reps := map[string]*wsreport.QuantileReport{}
	for _, g := range groups {
		if g.Err != nil {
			fmt.Fprintf(e.stderr, "%s=%s: %v\n", *by, g.Value, g.Err)
			continue
		}
		lost := lostWarnings(ev, g.Report)
		if in.strict && len(lost) > 0 {
			return closeOut(fmt.Errorf("%s=%s: partial result (--strict): %s", *by, g.Value, strings.TrimPrefix(lost[0], "partial: ")))
		}
		g.Report.Warnings = append(g.Report.Warnings, lost...)
		reps[g.Value] = g.Report
	}
	if *format == "json" {
		err = writeJSON(out, map[string]any{"by": *by, "groups": reps})
		return closeOut(err)
	}
	keys := make([]string, 0, len(reps))
	for k := range reps {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		if i > 0 {
			fmt.Fprintln(out)
		}
		fmt.Fprintf(out, "%s=%s\n", *by, k)
		if err := printQuantiles(out, "text", reps[k]); err != nil {
			closeOut(err)
			return err
		}
	}
	return closeOut(nil)
}

// processStartMetric is the family QuantileRequest.Selection adds to the
// histogram's to tell restarts apart.
const processStartMetric = "process_start_time_seconds"

// onlyProcessStart reports whether ev holds targets and no family but
// process_start_time_seconds.
func onlyProcessStart(ev *snapshot.Evidence) bool {
	if len(ev.Targets) == 0 {
		return false
	}
	for _, t := range ev.Targets {
		for name := range t.Families {
			if name != processStartMetric {
				return false
			}
		}
	}
	return true
}

// lostWarnings says that the quantiles of rep are partial when samples
// of its window may be missing (a torn WAL: snapshot.LostRangeError).
func lostWarnings(ev *snapshot.Evidence, rep *wsreport.QuantileReport) []string {
	var ws []string
	for _, p := range ev.LostIn(rep.Window.Start, rep.Window.End) {
		ws = append(ws, "partial: samples of the window may be missing: "+p.Error())
	}
	return ws
}

func printQuantiles(w io.Writer, format string, rep *wsreport.QuantileReport) error {
	if format == "json" {
		if rep.Warnings == nil {
			rep.Warnings = []string{}
		}
		return writeJSON(w, rep)
	}
	_, err := io.WriteString(w, rep.String())
	return err
}
