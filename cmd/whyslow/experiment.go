package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/whyslow/whyslow/diagnose"
	"github.com/whyslow/whyslow/rules"
	"github.com/whyslow/whyslow/snapshot"
)

const experimentExamples = `  whyslow experiment --plan plan.json \
      --baseline runs/b1/ --baseline runs/b2/ --baseline runs/b3/ \
      --treatment runs/t1/ --treatment runs/t2/ --treatment runs/t3/
  whyslow experiment --plan plan.json --warmup 2m --format markdown \
      --baseline tsdb/@2026-09-22T10:00:00Z/2026-09-22T10:20:00Z ... \
      --treatment tsdb/@2026-09-22T11:00:00Z/20m ...

The plan file is the "experiment" object of a hypothesis in
"whyslow diagnose --format json" output, saved as is or written by hand.
RUN is a dump folder or file, or PATH@START/END: a range of a TSDB or of a
longer dump series (RFC 3339; END may be a duration). The verdict (adopt,
reject, inconclusive, refused) is printed; a refused experiment is not an
error.
`

// runExperiment implements "whyslow experiment": it judges a controlled
// experiment from the evidence of its runs, as benchstat judges
// benchmarks.
func runExperiment(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e.stdout, "experiment", "--plan FILE --baseline RUN... --treatment RUN... [flags]", experimentExamples)
	var in inputFlags
	in.register(fs.FlagSet)
	var baseline, treatment listFlag
	planPath := fs.String("plan", "", "experiment plan `FILE` (JSON, the \"experiment\" object of the diagnose report)")
	fs.Var(&baseline, "baseline", "one baseline `RUN` (dump folder or file, or PATH@START/END); repeat for each run")
	fs.Var(&treatment, "treatment", "one treatment `RUN`; repeat for each run")
	warmup := fs.String("warmup", "", "warm-up `DURATION` excluded from the start of every run (default: the plan's warm_up_seconds, else 5m; 0 excludes nothing)")
	model := fs.String("model", "", "keep only model_name=`NAME`")
	format := fs.String("format", "text", "output `FORMAT`: text, markdown or json")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q: give runs with --baseline and --treatment", pos[0])
	}
	if *planPath == "" {
		return usagef("--plan is required")
	}
	if len(baseline) == 0 || len(treatment) == 0 {
		return usagef("give every run with --baseline RUN and --treatment RUN (one flag per run)")
	}
	if err := checkFormat(*format, "text", "markdown", "json"); err != nil {
		return err
	}
	var opts diagnose.ExperimentOptions
	if *warmup != "" {
		d, err := time.ParseDuration(*warmup)
		if err != nil || d < 0 {
			return usagef("--warmup %q: want a duration such as 5m or 0", *warmup)
		}
		opts.WarmUp = d
		if d == 0 {
			opts.WarmUp = -1 // explicitly none
		}
	}
	opts.Model = *model
	cat, err := in.catalog()
	if err != nil {
		return err
	}
	opts.Catalog = cat
	if err := in.checkOutput([]string{*planPath}); err != nil {
		return err
	}
	plan, err := readPlan(*planPath)
	if err != nil {
		return err
	}
	read := func(arm string, specs []string) ([]diagnose.Run, error) {
		runs := make([]diagnose.Run, len(specs))
		for i, s := range specs {
			path, w, err := parseRun(s)
			if err != nil {
				return nil, usagef("--%s %q: %v", arm, s, err)
			}
			ev, err := in.readEvidence(ctx, e, []string{path}, snapshot.Options{Start: w.Start, End: w.End})
			if err != nil {
				return nil, fmt.Errorf("%s run %s: %w", arm, s, err)
			}
			runs[i] = diagnose.Run{Name: s, Evidence: ev, Window: w}
		}
		return runs, nil
	}
	b, err := read("baseline", baseline)
	if err != nil {
		return err
	}
	t, err := read("treatment", treatment)
	if err != nil {
		return err
	}
	rep, err := diagnose.JudgeExperiment(plan, b, t, opts)
	if errors.Is(err, diagnose.ErrSeveralModels) {
		return fmt.Errorf("%w (on the command line: --model NAME)", err)
	}
	if err != nil {
		return err
	}
	out, closeOut, err := in.out(e)
	if err != nil {
		return err
	}
	switch *format {
	case "json":
		err = writeJSON(out, rep)
	case "markdown":
		_, err = io.WriteString(out, rep.Markdown())
	default:
		_, err = io.WriteString(out, rep.String())
	}
	return closeOut(err)
}

// parseRun splits "PATH@START/END" into the path and the window. A spec
// whose part after the last "@" is not a window is a path as a whole
// (paths may contain "@").
func parseRun(spec string) (string, snapshot.Window, error) {
	if spec == "" {
		return "", snapshot.Window{}, errors.New("empty run")
	}
	i := strings.LastIndex(spec, "@")
	if i < 0 || !strings.Contains(spec[i+1:], "/") {
		return spec, snapshot.Window{}, nil
	}
	w, err := parseWindow(spec[i+1:])
	if err != nil {
		if _, statErr := os.Stat(spec); statErr == nil {
			return spec, snapshot.Window{}, nil
		}
		return "", snapshot.Window{}, err
	}
	if i == 0 {
		return "", snapshot.Window{}, errors.New("no PATH before @")
	}
	return spec[:i], w, nil
}

// readPlan reads a plan file: the "experiment" object of the diagnose
// JSON report.
func readPlan(path string) (rules.Plan, error) {
	var p rules.Plan
	data, err := os.ReadFile(path)
	if err != nil {
		return p, err
	}
	lineAt := func(off int64) int {
		return 1 + strings.Count(string(data[:min(int(off), len(data))]), "\n")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return p, fmt.Errorf("%s:%d: offset %d: %v", path, lineAt(se.Offset), se.Offset, err)
		case errors.As(err, &te):
			return p, fmt.Errorf("%s: not an experiment plan: want a JSON object, found a JSON %s", path, te.Value)
		}
		return p, fmt.Errorf("%s: %v", path, err)
	}
	if _, ok := fields["hypotheses"]; ok {
		return p, fmt.Errorf("%s: a whole diagnose report, not a plan: save one hypothesis's \"experiment\" object, e.g. jq '.hypotheses[0].experiment' report.json > plan.json", path)
	}
	known := false
	for _, k := range []string{"hypothesis", "change", "expect"} {
		if _, ok := fields[k]; ok {
			known = true
		}
	}
	if !known {
		return p, fmt.Errorf("%s: not an experiment plan: none of the fields \"hypothesis\", \"change\", \"expect\" (see the \"experiment\" object of whyslow diagnose --format json)", path)
	}
	if err := json.Unmarshal(data, &p); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return p, fmt.Errorf("%s:%d: offset %d: field %q: unexpected JSON %s", path, lineAt(te.Offset), te.Offset, strings.TrimPrefix(te.Field, "plain."), te.Value)
		}
		return p, fmt.Errorf("%s: %v", path, err)
	}
	return p, nil
}
