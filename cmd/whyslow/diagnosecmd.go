package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/diagnose"
	"github.com/whyslow/whyslow/internal/textfmt"
	wsreport "github.com/whyslow/whyslow/report"
	"github.com/whyslow/whyslow/report/html"
	"github.com/whyslow/whyslow/rules"
	"github.com/whyslow/whyslow/snapshot"
	"github.com/whyslow/whyslow/snapshot/promapi"
)

const diagnoseExamples = `  whyslow diagnose ./evidence/
  whyslow diagnose --slo ttft_p95=2s,tpot_p95=80ms --format markdown -o postmortem.md ./evidence/
  whyslow diagnose --baseline 2026-09-22T09:00:00Z/2026-09-22T10:00:00Z \
      --incident 2026-09-22T10:00:00Z/2026-09-22T10:30:00Z ./prometheus-data/
  whyslow diagnose --format html -o report.html ./before/ ./after/
  whyslow diagnose --alias vllm:=ray_vllm: --alias client_ttft=gateway_ttft_seconds ./federate.txt.gz
`

// diagnoseFlags are the flags of "diagnose" and "compare".
type diagnoseFlags struct {
	inputFlags
	baseline, incident string
	slo, thresholds    string
	model, by          string
	format             string
	verbose, wide      bool
	maxWindow          time.Duration
	pushdown           bool
	records            bool
}

func (f *diagnoseFlags) register(fsName string, e *env, synopsis, examples string, formats string) *flagSet {
	fs := newFlagSet(e.stdout, fsName, synopsis, examples)
	f.inputFlags.register(fs.FlagSet)
	fs.StringVar(&f.baseline, "baseline", "", "baseline window, RFC 3339 interval `START/END`")
	fs.StringVar(&f.incident, "incident", "", "incident window, RFC 3339 interval `START/END`; without it, the automatic change point")
	fs.StringVar(&f.slo, "slo", "", "SLO `TARGETS`, e.g. ttft_p95=2s,ttft_p99=5s,tpot_p95=80ms,itl_p95=100ms,e2e_p99=30s,error_share=0.01")
	fs.StringVar(&f.thresholds, "thresholds", "", "decision-map `LIMITS` replacing the defaults (see whyslow rules), e.g. rise=2,kv_high=0.95,gpu_low=0.3")
	fs.StringVar(&f.model, "model", "", "keep only model_name=`NAME`")
	fs.StringVar(&f.by, "by", "", "split signals by `LABEL` (default: model_name when several models are present)")
	fs.StringVar(&f.format, "format", "text", "output `FORMAT`: "+formats)
	fs.DurationVar(&f.maxWindow, "max-window", diagnose.DefaultMaxWindow, "longest baseline and incident `DURATION` chosen either side of the change point, and longest baseline before a given --incident alone (0: no bound)")
	if fsName == "diagnose" {
		fs.BoolVar(&f.verbose, "verbose", false, "print every hypothesis in full and every evidence line with its source metric (text, markdown, html)")
	}
	fs.BoolVar(&f.wide, "wide", false, "do not fit text tables to 120 columns (one row per line, however wide)")
	fs.BoolVar(&f.records, "records", true, "server URL with --pushdown and a --range over 6h: search the range for the change point in the whyslow:* recording rules of whyslow alerts where the server holds them, and survey the 3h either side of it only; false surveys the whole range")
	fs.BoolVar(&f.pushdown, "pushdown", true, "server URL without --incident: let the server sum the histograms of the timelines the change point is searched in (PromQL), and read samples over the chosen windows only; false reads every pod's samples of the timelines over the whole range, a batch of pods at a time, then the windows'")
	return fs
}

// options turns the flags into diagnose.Options.
func (f *diagnoseFlags) options() (diagnose.Options, error) {
	var opts diagnose.Options
	var err error
	if opts.Baseline, err = parseWindow(f.baseline); err != nil {
		return opts, usagef("--baseline: %v", err)
	}
	if opts.Incident, err = parseWindow(f.incident); err != nil {
		return opts, usagef("--incident: %v", err)
	}
	if !opts.Baseline.IsZero() && opts.Incident.IsZero() {
		return opts, usagef("--baseline needs --incident")
	}
	if opts.Thresholds, err = parseThresholds(f.thresholds); err != nil {
		return opts, usagef("--thresholds: %v", err)
	}
	if opts.SLO, err = parseSLO(f.slo); err != nil {
		return opts, usagef("--slo: %v", err)
	}
	if opts.Catalog, err = f.catalog(); err != nil {
		return opts, err
	}
	opts.Model = f.model
	opts.By = f.by
	switch {
	case f.maxWindow < 0:
		return opts, usagef("--max-window %v: want a positive duration, or 0 for no bound", f.maxWindow)
	case f.maxWindow == 0:
		opts.MaxWindow = -1
	default:
		opts.MaxWindow = f.maxWindow
	}
	return opts, nil
}

// parseSLO parses "ttft_p95=2s,tpot_p95=80ms,error_share=0.01". Latencies
// take a Go duration or plain seconds.
func parseSLO(s string) (rules.SLO, error) {
	var slo rules.SLO
	if s == "" {
		return slo, nil
	}
	fields := map[string]*float64{
		"ttft_p95":    &slo.TTFTP95,
		"ttft_p99":    &slo.TTFTP99,
		"tpot_p95":    &slo.TPOTP95,
		"itl_p95":     &slo.ITLP95,
		"e2e_p99":     &slo.E2EP99,
		"error_share": &slo.ErrorShare,
	}
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		dst, known := fields[k]
		if !ok || !known {
			names := make([]string, 0, len(fields))
			for n := range fields {
				names = append(names, n)
			}
			sort.Strings(names)
			return slo, fmt.Errorf("%q: want NAME=VALUE with NAME one of %s", kv, strings.Join(names, ", "))
		}
		if k == "error_share" {
			x, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
			if err != nil || x < 0 {
				return slo, fmt.Errorf("%q: want a share such as 0.01 or 1%%", kv)
			}
			if strings.HasSuffix(v, "%") {
				x /= 100
			}
			*dst = x
			continue
		}
		if d, err := time.ParseDuration(v); err == nil && d > 0 {
			*dst = d.Seconds()
			continue
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || x <= 0 {
			return slo, fmt.Errorf("%q: want a duration such as 2s or 80ms", kv)
		}
		*dst = x
	}
	return slo, nil
}

// runDiagnose implements "whyslow diagnose".
func runDiagnose(ctx context.Context, e *env, args []string) error {
	return diagnoseAndWrite(ctx, e, args, "diagnose", "[flags] PATH...", diagnoseExamples,
		[]string{"text", "markdown", "json", "html"}, writeReport)
}

// diagnoseAndWrite parses the flags of diagnose and compare, reads the
// evidence, diagnoses it and writes the report with write.
func diagnoseAndWrite(ctx context.Context, e *env, args []string, name, synopsis, examples string, formats []string,
	write func(io.Writer, *diagnoseFlags, *wsreport.Report) error) error {
	var f diagnoseFlags
	fs := f.register(name, e, synopsis, examples, strings.Join(formats, ", "))
	paths, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if err := checkFormat(f.format, formats...); err != nil {
		return err
	}
	opts, err := f.options()
	if err != nil {
		return err
	}
	// Read only what the diagnosis needs: the catalog's metrics, over the
	// given windows when both are given (see diagnose.Options.Selection);
	// a history to search for the change point in, surveyed one target at
	// a time and then read over the chosen windows only.
	// A target read one at a time keeps only the samples the diagnosis
	// measures (diagnose.Options.Trimmer).
	trim, err := opts.Trimmer()
	if err != nil {
		return err
	}
	var ev *snapshot.Evidence
	// A source that streams is surveyed, then read over the windows only
	// (readSurveyed): the windows the survey chooses, or those given when
	// one range covers both or the incident and all before it (no range:
	// opts.ReadRanges); given far apart, each is read alone. A server with
	// --pushdown=false has its samples read whole. The survey keeps the
	// memory to a few numbers a replica and interval where a whole read
	// holds every sample of the windows (figures in
	// snapshot/tsdb/TSDB_BENCHMARKS.md).
	given := !opts.Incident.IsZero()
	surveyed := snapshot.Streams(paths) && (!given || len(opts.ReadRanges()) < 2 && (f.pushdown || !slices.ContainsFunc(paths, promapi.IsURL)))
	if surveyed && f.pushdown && len(paths) == 1 && promapi.IsURL(paths[0]) {
		// The server's answers are garbage soon (see serverReadGOGC),
		// the diagnosis's too.
		defer lowerGC(serverReadGOGC)()
	}
	switch {
	case surveyed:
		ev, opts, err = f.readSurveyed(ctx, e, paths, opts, trim)
	default:
		ev, err = f.readRanges(ctx, e, paths, diagnoseSelection(paths, opts), opts.ReadRanges(), trim, nil)
	}
	if err != nil {
		return err
	}
	if err := checkVLLM(opts.Catalog, ev); err != nil {
		return err
	}
	if err := checkWindow("--baseline", opts.Baseline, ev); err != nil {
		return err
	}
	if err := checkWindow("--incident", opts.Incident, ev); err != nil {
		return err
	}
	rep, err := diagnose.Diagnose(ev, opts)
	if err != nil {
		return err
	}
	if f.strict && rep.Inputs.Partial {
		// The read itself may have succeeded while samples of a window
		// are lost (a torn WAL): the report is partial all the same.
		return fmt.Errorf("partial result (--strict): %s", partialReason(ev, rep))
	}
	// The evidence is garbage now: return its memory to the system before
	// the report is written, whose JSON form alone takes tens of megabytes
	// on a large fleet, so that the peak is the diagnosis's, not the sum
	// (see snapshot/tsdb/TSDB_BENCHMARKS.md). The text and Markdown forms
	// take a few kilobytes: returning the memory would only cost time.
	ev, opts = nil, diagnose.Options{}
	if f.format == "json" || f.format == "html" {
		debug.FreeOSMemory()
	}
	out, closeOut, err := f.out(e)
	if err != nil {
		return err
	}
	err = write(out, &f, rep)
	return closeOut(err)
}

// partialReason says why rep is partial: the problems of ev that lost
// samples of its windows, else the count of ev's problems.
func partialReason(ev *snapshot.Evidence, rep *wsreport.Report) string {
	var lost []string
	for _, w := range []wsreport.WindowInfo{rep.Windows.Baseline, rep.Windows.Incident} {
		if w.Start.IsZero() || w.End.IsZero() {
			continue
		}
		for _, p := range ev.LostIn(w.Start, w.End) {
			if !slices.Contains(lost, p.Error()) {
				lost = append(lost, p.Error())
			}
		}
	}
	if len(lost) > 0 {
		return "samples of the windows may be missing: " + strings.Join(lost, "; ")
	}
	return fmt.Sprintf("%d problem(s) in the inputs (see the report's inputs)", len(ev.Problems))
}

// checkVLLM refuses evidence in which no target is vLLM (another engine's
// capture, such as SGLang's, or only companion exporters): a short
// message naming the paths and the targets read, instead of a report of nothing but
// "cannot evaluate".
func checkVLLM(cat *catalog.Catalog, ev *snapshot.Evidence) error {
	if cat == nil || ev == nil || len(ev.Targets) == 0 {
		return nil
	}
	res := cat.Resolve(ev)
	var names []string
	for _, t := range res.Targets {
		if t.Engine != catalog.EngineNotVLLM {
			return nil
		}
		names = append(names, t.Target)
	}
	return fmt.Errorf("no vLLM target in %s: %s read (%s), none with a vllm: metric. "+
		"whyslow diagnoses vLLM; for renamed metrics give --alias vllm:=PREFIX (e.g. --alias vllm:=ray_vllm:), "+
		"and see whyslow catalog PATH for what was found",
		firstFew(ev.Sources, "the evidence"), textfmt.Plural(len(names), "target", "targets"), firstFew(names, ""))
}

// firstFew lists the first four of items, and how many more there are;
// none is said when there are none.
func firstFew(items []string, none string) string {
	const maxItems = 4
	if len(items) == 0 {
		return none
	}
	list := strings.Join(items[:min(len(items), maxItems)], ", ")
	if len(items) > maxItems {
		list += fmt.Sprintf(" and %d more", len(items)-maxItems)
	}
	return list
}

func writeReport(w io.Writer, f *diagnoseFlags, rep *wsreport.Report) error {
	o := wsreport.LayoutOptions{Verbose: f.verbose, Wide: f.wide}
	switch f.format {
	case "markdown":
		return rep.Layout(o).WriteMarkdown(w)
	case "json":
		return rep.WriteJSON(w)
	case "html":
		return html.WriteOptions(w, rep, html.Options{Verbose: f.verbose})
	default:
		return rep.Layout(o).WriteText(w)
	}
}

const compareExamples = `  whyslow compare --baseline 2026-09-22T09:00:00Z/2026-09-22T09:30:00Z \
      --incident 2026-09-22T10:00:00Z/2026-09-22T10:30:00Z ./evidence/
  whyslow compare --format markdown ./before/ ./after/
`

// runCompare implements "whyslow compare": the before/after table of p50
// and p95 per signal, marking what moved.
func runCompare(ctx context.Context, e *env, args []string) error {
	return diagnoseAndWrite(ctx, e, args, "compare", "[--baseline START/END --incident START/END] [flags] PATH...", compareExamples,
		[]string{"text", "markdown", "json"}, writeCompare)
}

// writeCompare prints the before/after table. Its JSON form is
// {"schema_version", "windows", "rows": [CompareRow...], "warnings"}.
func writeCompare(w io.Writer, f *diagnoseFlags, rep *wsreport.Report) error {
	rows := wsreport.CompareTable(rep)
	switch f.format {
	case "markdown":
		return wsreport.WriteCompareMarkdown(w, rows)
	case "json":
		if rows == nil {
			rows = []wsreport.CompareRow{}
		}
		warnings := rep.Warnings
		if warnings == nil {
			warnings = []string{}
		}
		return writeJSON(w, struct {
			SchemaVersion int                   `json:"schema_version"`
			Windows       wsreport.Windows      `json:"windows"`
			Rows          []wsreport.CompareRow `json:"rows"`
			Warnings      []string              `json:"warnings"`
		}{wsreport.SchemaVersion, rep.Windows, rows, warnings})
	default:
		if f.wide {
			return wsreport.CompareDocument(rows).WriteTextWidth(w, 0)
		}
		return wsreport.WriteCompareText(w, rows)
	}
}

// parseThresholds parses "rise=2,kv_high=0.95" into the default
// thresholds with those fields replaced.
func parseThresholds(s string) (rules.Thresholds, error) {
	th := rules.DefaultThresholds
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return th, fmt.Errorf("%q: want NAME=VALUE (names: %s)", kv, strings.Join(rules.ThresholdNames(), ", "))
		}
		x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return th, fmt.Errorf("%q: %q is not a number", kv, v)
		}
		if err := th.Set(strings.TrimSpace(k), x); err != nil {
			return th, err
		}
	}
	return th, nil
}

// diagnoseSelection is what to read of paths for a diagnosis under opts
// (diagnose.Options.Selection). A server is read up to the end of an
// incident given alone with no bound before it (--max-window 0), not up
// to now: a directory is read whole, a server over a range.
func diagnoseSelection(paths []string, opts diagnose.Options) snapshot.Options {
	sel := opts.Selection()
	if sel.End.IsZero() && !opts.Incident.IsZero() && slices.ContainsFunc(paths, promapi.IsURL) {
		sel.End = opts.Incident.End.Add(diagnose.ReadMargin)
	}
	return sel
}

// readSurveyed reads a history for a diagnosis that chooses its own
// windows, or over the range of the windows given (opts.Baseline and
// opts.Incident), from a source that streams (snapshot.Streams: a TSDB, a
// server), in two steps whose memory does not grow with the history: a
// survey (diagnose.Surveyor) of the targets read one at a time (a
// server's, a batch of pods at a time), which keeps per target and
// timeline interval a few numbers; then a read of only the windows the
// survey chose. It returns the evidence of the windows and opts with the
// survey set, which Diagnose turns into the report of a whole read.
// Evidence that splits into groups (several models, --by) is read whole.
//
// From a server with --pushdown, the server sums the survey's histogram
// timelines (diagnose.Surveyor.PushDown; the gauges, counters and process
// start times of every pod, and the labels of every series, are read as
// they are), the survey asks for the few samples the sums cannot stand
// for (a pod's first interval, a pod that restarted: SampleReads), and
// over a long range the recording rules choose where to survey
// (--records).
func (f *diagnoseFlags) readSurveyed(ctx context.Context, e *env, paths []string, opts diagnose.Options, trim func(*snapshot.Target) *snapshot.Target) (*snapshot.Evidence, diagnose.Options, error) {
	sel := diagnoseSelection(paths, opts)
	var eng *promapi.Engine
	var problems []snapshot.Problem
	if f.pushdown && promapi.IsURL(paths[0]) {
		var err error
		if eng, err = f.engine(ctx, paths[0], sel); err != nil {
			return nil, opts, err
		}
		if opts.Incident.IsZero() { // given windows are read as given
			w, note := f.surveyRange(eng, paths[0], opts, sel)
			if note != nil {
				problems = append(problems, *note)
			}
			if !w.IsZero() {
				sel.Start, sel.End = w.Start, w.End
			}
		}
	} else {
		// The survey and the windows' read allocate much and hold little
		// (see surveyHeapFloor): fewer collections while they run.
		defer raiseGCFloor(surveyHeapFloor, surveyMaxGOGC, gcPoll)()
	}
	newSurveyor := func() (*diagnose.Surveyor, error) {
		s, err := diagnose.NewSurveyor(opts)
		if err == nil && eng != nil {
			err = s.PushDown(eng)
		}
		return s, err
	}
	s, err := newSurveyor()
	if err != nil {
		return nil, opts, err
	}
	// The survey measures the timeline families and lists the others by
	// their labels: a TSDB's blocks are not decoded for them, nor, target
	// by target, for the candidates of a timeline signal that the catalog
	// does not match there (s is the Surveyor of the read under way).
	var names []string // the targets of the survey's read
	surveySel := sel
	surveySel.LabelsOnly = s.LabelsOnly()
	surveySel.ForTarget = func(sketch *snapshot.Target) snapshot.TargetSelection {
		return snapshot.TargetSelection{LabelsOnly: s.LabelsOnlyFor(sketch)}
	}
	// A history over 6 h is surveyed as read, and its scrape times checked
	// at the end (snapshot.Options.Revisit): only where a scrape must be
	// left out does the survey start over.
	surveySel.Revisit = func() error {
		names = nil
		s, err = newSurveyor()
		return err
	}
	surveyed := false // the problems of the survey's read are kept (a later pass reads them again)
	var sv *diagnose.Survey
	for pass := 1; sv == nil; pass++ {
		if pass > 5 {
			return nil, opts, errors.New("diagnose: the survey asked for a sixth pass")
		}
		if reads := s.SampleReads(); reads != nil {
			for _, r := range reads {
				rev, err := f.readSamples(ctx, e, paths, sel, r)
				if err != nil {
					return nil, opts, err
				}
				problems = append(problems, rev.Problems...)
				for _, t := range rev.Targets {
					if slices.ContainsFunc(r.Targets, func(x *snapshot.Target) bool { return x.Name == t.Name }) {
						if err := s.AddSamples(r, t); err != nil {
							return nil, opts, err
						}
					}
				}
			}
		} else {
			names = nil
			ev, err := f.readEach(ctx, e, paths, surveySel, func(t *snapshot.Target) error {
				names = append(names, t.Name)
				return s.Add(t)
			})
			if errors.Is(err, errMatchedNothing) {
				// The selection matched nothing: the whole read says why
				// (where the evidence lies, what it holds).
				ev, err := f.readEvidence(ctx, e, paths, sel)
				return ev, opts, err
			}
			if err != nil {
				return nil, opts, err
			}
			if !surveyed {
				surveyed = true
				problems = append(problems, ev.Problems...)
			}
		}
		var again bool
		sv, again, err = s.Survey()
		switch {
		case errors.Is(err, diagnose.ErrSurveyGroups):
			ev, err := f.readRanges(ctx, e, paths, sel, nil, trim, nil)
			return ev, opts, err
		case err != nil && eng != nil:
			return nil, opts, fmt.Errorf("%w (--pushdown=false reads every pod's samples instead)", err)
		case err != nil:
			return nil, opts, err
		case again:
			sv = nil
		}
	}
	if eng != nil {
		// The windows are read without the families that the survey
		// listed by their labels and no signal matches on any target (a
		// signal's older names, the info and parameter histograms):
		// Diagnose takes their labels from the survey (Survey.SkipFor).
		skip := map[string]int{}
		for _, name := range names {
			for _, m := range sv.SkipFor(&snapshot.Target{Name: name}) {
				skip[m]++
			}
		}
		sel.Metrics = slices.DeleteFunc(slices.Clone(sel.Metrics), func(m string) bool {
			n := max(skip[m], skip[snapshot.FamilyBaseName(m)])
			return n > 0 && n == len(names)
		})
		problems = append(problems, eng.Cost())
	}
	return f.readWindows(ctx, e, paths, sel, opts, sv, problems, trim)
}

// readWindows reads the windows survey sv chose (the whole range under
// sel when it chose none: lifetime values) and returns their evidence,
// with problems (what the survey's reads found, outside the windows too)
// added to its own, and opts with the survey set.
func (f *diagnoseFlags) readWindows(ctx context.Context, e *env, paths []string, sel snapshot.Options, opts diagnose.Options, sv *diagnose.Survey, problems []snapshot.Problem, trim func(*snapshot.Target) *snapshot.Target) (*snapshot.Evidence, diagnose.Options, error) {
	ranges := sv.ReadRanges()
	if len(ranges) == 0 {
		ev, err := f.readRanges(ctx, e, paths, sel, nil, trim, nil)
		return ev, opts, err
	}
	// The windows are read without the families that the survey read by
	// their labels and the diagnosis does not measure (the older names
	// of a signal, _created): Diagnose takes their labels from the survey.
	sel.ForTarget = func(sketch *snapshot.Target) snapshot.TargetSelection {
		return snapshot.TargetSelection{Skip: sv.SkipFor(sketch)}
	}
	if len(ranges) == 1 {
		sel.Start, sel.End = ranges[0].Start, ranges[0].End
	}
	// Each target's histograms are measured over the windows as it is
	// read, and their samples dropped (diagnose.Survey.Reduce).
	ev, err := f.readRanges(ctx, e, paths, sel, ranges, trim, sv.Reduce)
	if err != nil {
		return nil, opts, err
	}
	seen := map[string]bool{}
	for _, p := range ev.Problems {
		seen[p.Error()] = true
	}
	for _, p := range problems {
		if !seen[p.Error()] {
			ev.Problems = append(ev.Problems, p)
		}
	}
	opts.Survey = sv
	return ev, opts, nil
}

// readCollected is readEvidence, reading a source that streams
// (snapshot.Streams: a TSDB) one target at a time and collecting the
// targets, each as trim leaves it (diagnose.Options.Trimmer) and then, when
// reduce is not nil, as reduce leaves it (diagnose.Survey.Reduce): the
// evidence the diagnosis measures, without holding every target's raw
// series at once while it is assembled, nor the samples it does not
// measure.
func (f *diagnoseFlags) readCollected(ctx context.Context, e *env, paths []string, sel snapshot.Options, trim func(*snapshot.Target) *snapshot.Target, reduce func(*snapshot.Target) (*snapshot.Target, error)) (*snapshot.Evidence, error) {
	if !snapshot.Streams(paths) {
		return f.readEvidence(ctx, e, paths, sel)
	}
	var targets []*snapshot.Target
	sel.Revisit = func() error { targets = nil; return nil }
	ev, err := f.readEach(ctx, e, paths, sel, func(t *snapshot.Target) error {
		t = trim(t)
		if reduce != nil {
			var err error
			if t, err = reduce(t); err != nil {
				return err
			}
		}
		targets = append(targets, t)
		return nil
	})
	if errors.Is(err, errMatchedNothing) {
		// The selection matched nothing: readEvidence reads the rest to
		// say why (the window outside the scrapes, the metrics present).
		return f.readEvidence(ctx, e, paths, sel)
	}
	if err != nil {
		return nil, err
	}
	ev.Targets = targets
	return ev, nil
}

// readRanges reads the paths under sel, once per range when there are
// several (the baseline and the incident far apart: the history between
// them is not read), and merges the evidence (snapshot.MergeRanges). A
// source that streams keeps each target as trim and then reduce (when not
// nil) leave it; reduce is not applied to evidence read whole.
func (f *diagnoseFlags) readRanges(ctx context.Context, e *env, paths []string, sel snapshot.Options, ranges []snapshot.Window, trim func(*snapshot.Target) *snapshot.Target, reduce func(*snapshot.Target) (*snapshot.Target, error)) (*snapshot.Evidence, error) {
	if len(ranges) < 2 || slices.Contains(paths, "-") {
		return f.readCollected(ctx, e, paths, sel, trim, reduce)
	}
	if snapshot.Streams(paths) {
		return f.readRangesMerged(ctx, e, paths, sel, ranges, trim, reduce)
	}
	var evs []*snapshot.Evidence
	for _, r := range ranges {
		o := sel
		o.Start, o.End = r.Start, r.End
		ev, err := f.readCollected(ctx, e, paths, o, trim, nil)
		if err != nil {
			return nil, err
		}
		if first, last := ev.Span(); first.Before(r.Start) || last.After(r.End) {
			// The range matched nothing and readEvidence read the rest to
			// say why (the window lies outside the evidence).
			return ev, nil
		}
		evs = append(evs, ev)
	}
	return snapshot.MergeRanges(evs...), nil
}

// readRangesMerged is readRanges of a source that streams: each target of
// a later range is merged, as it is read, into the same target of the
// ranges before (snapshot.Merge of the two), so that no range's evidence
// is held twice while the ranges are merged. The result is
// snapshot.MergeRanges of the ranges' evidence: the same targets, their
// problems after the ranges' own, each problem and source once.
func (f *diagnoseFlags) readRangesMerged(ctx context.Context, e *env, paths []string, sel snapshot.Options, ranges []snapshot.Window, trim func(*snapshot.Target) *snapshot.Target, reduce func(*snapshot.Target) (*snapshot.Target, error)) (*snapshot.Evidence, error) {
	byName := map[string]*snapshot.Target{}
	mergedOnce := map[string]bool{}
	var sources []string
	var problems, merging []snapshot.Problem
	add := func(t *snapshot.Target) error {
		if prev := byName[t.Name]; prev != nil {
			m := snapshot.Merge(&snapshot.Evidence{Targets: []*snapshot.Target{prev}}, &snapshot.Evidence{Targets: []*snapshot.Target{t}})
			merging = append(merging, m.Problems...)
			t, mergedOnce[t.Name] = m.Targets[0], true
		}
		byName[t.Name] = t
		return nil
	}
	for _, r := range ranges {
		o := sel
		o.Start, o.End = r.Start, r.End
		// A range is merged into the ranges before as it is read: it
		// cannot start over (snapshot.Options.Revisit).
		o.Revisit = nil
		ev, err := f.readEach(ctx, e, paths, o, func(t *snapshot.Target) error { return add(trim(t)) })
		if errors.Is(err, errMatchedNothing) {
			// The range matched nothing: readEvidence reads the rest to
			// say why (the window lies outside the evidence).
			ev, err = f.readEvidence(ctx, e, paths, o)
			if err != nil {
				return nil, err
			}
			if first, last := ev.Span(); first.Before(r.Start) || last.After(r.End) {
				return ev, nil
			}
			for _, t := range ev.Targets {
				add(trim(t))
			}
		}
		if err != nil {
			return nil, err
		}
		sources = append(sources, ev.Sources...)
		problems = append(problems, ev.Problems...)
	}
	out := &snapshot.Evidence{}
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		t := byName[name]
		if !mergedOnce[name] {
			// A target of one range passes through Merge too, as in
			// MergeRanges (which leaves out series without samples).
			m := snapshot.Merge(&snapshot.Evidence{Targets: []*snapshot.Target{t}})
			merging = append(merging, m.Problems...)
			t = m.Targets[0]
		}
		if reduce != nil {
			// After the merge, which leaves out series without samples.
			var err error
			if t, err = reduce(t); err != nil {
				return nil, err
			}
		}
		out.Targets = append(out.Targets, t)
		delete(byName, name)
	}
	seen := map[string]bool{}
	for _, src := range sources {
		if !seen[src] {
			seen[src] = true
			out.Sources = append(out.Sources, src)
		}
	}
	clear(seen)
	for _, p := range append(problems, merging...) {
		if k := p.String(); !seen[k] {
			seen[k] = true
			out.Problems = append(out.Problems, p)
		}
	}
	return out, nil
}
