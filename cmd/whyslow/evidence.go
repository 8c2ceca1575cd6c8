package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/prometheus/promql/parser"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/snapshot"
)

// inputFlags are the flags every command that reads evidence shares.
type inputFlags struct {
	match      string
	aliases    listFlag
	strict     bool
	output     string
	maxBytes   string
	maxSamples int
	maxMemory  string
	follow     bool
	keepTimes  bool
	keepCut    bool
	server     serverFlags
	// printed holds the problems printed, so that a second read of the
	// same evidence (the windows after a survey) does not print them again.
	printed map[string]bool
	// outputChecked holds the input paths checkOutput found apart from
	// the output, so that a second read does not walk them again.
	outputChecked map[string]bool
}

func (f *inputFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.match, "match", "", "PromQL `SELECTOR` keeping only matching series, e.g. '{namespace=\"llm\"}' (target labels such as pod exist in TSDB and /federate input, not in plain /metrics dumps)")
	fs.Var(&f.aliases, "alias", "`CANONICAL=NAME` reads signal CANONICAL (e.g. ttft, gpu_util, client_ttft) from metric NAME; vllm:=NEWPREFIX: remaps the prefix (e.g. vllm:=ray_vllm:); repeatable")
	fs.BoolVar(&f.strict, "strict", false, "treat a partial result (an unreadable file among many) as an error")
	fs.StringVar(&f.output, "o", "", "write the output to `FILE` instead of standard output (never inside an input path)")
	fs.StringVar(&f.maxBytes, "max-bytes", "", "largest decompressed `SIZE` of one scrape's dump, e.g. 256MiB (default 64MiB); a file of many scrapes (/federate, timestamped OpenMetrics) may hold up to 4GiB, or SIZE if larger")
	fs.Func("max-samples", "read at most `N` samples per scrape (default 200000; a file of many scrapes holds N per scrape time)", func(s string) error {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			return fmt.Errorf("want a positive count, got %q", s)
		}
		f.maxSamples = n
		return nil
	})
	fs.StringVar(&f.maxMemory, "max-memory", "", "memory budget of the whole run, e.g. 8GiB (default 3/4 of the machine's or cgroup's memory, 4GiB where unknown): the evidence kept may take a quarter of it; a run whose live heap would pass it stops with an error (exit 1) instead of running out of memory")
	fs.BoolVar(&f.follow, "follow-links", false, "inside a dump folder, follow symbolic links that lead out of it (by default they are not read: a folder's links cannot pull other files into a report)")
	fs.BoolVar(&f.keepCut, "keep-cut-files", false, "keep the samples read from a file before a limit (--max-samples) stopped it; by default such a file is left out, so that a cut cardinality bomb adds no series")
	fs.BoolVar(&f.keepTimes, "keep-time-outliers", false, "keep scrapes and TSDB blocks whose times lie far outside the rest of the evidence (a file named a year ahead, timestamps in seconds, a block dated decades after it was written), which are left out by default")
	f.server.register(fs)
}

// catalog returns the default catalog with the --alias flags applied.
func (f *inputFlags) catalog() (*catalog.Catalog, error) {
	cat := catalog.Default()
	for _, a := range f.aliases {
		id, name, ok := strings.Cut(a, "=")
		if !ok || id == "" || name == "" {
			return nil, usagef("--alias %q: want CANONICAL=NAME", a)
		}
		if strings.HasSuffix(id, ":") && strings.HasSuffix(name, ":") {
			if id != "vllm:" {
				return nil, usagef("--alias %q: only the vllm: prefix can be remapped", a)
			}
			c, err := cat.WithPrefix(name)
			if err != nil {
				return nil, usagef("--alias %q: %v", a, err)
			}
			cat = c
			continue
		}
		if err := cat.Alias(catalog.SignalID(id), name); err != nil {
			return nil, usagef("--alias %q: %v", a, err)
		}
	}
	return &cat, nil
}

// catalogAndEvidence builds the catalog of the --alias flags, then reads
// the evidence of paths, narrowed by sel (the selection fields of
// snapshot.Options: what the question needs; zero reads everything):
// what the catalog and quantile commands start with.
func (f *inputFlags) catalogAndEvidence(ctx context.Context, e *env, paths []string, sel snapshot.Options) (*catalog.Catalog, *snapshot.Evidence, error) {
	cat, err := f.catalog()
	if err != nil {
		return nil, nil, err
	}
	ev, err := f.readEvidence(ctx, e, paths, sel)
	return cat, ev, err
}

// readEvidence reads the paths, printing problems on stderr. With --strict
// a partial result is an error.
func (f *inputFlags) readEvidence(ctx context.Context, e *env, paths []string, opts snapshot.Options) (*snapshot.Evidence, error) {
	return f.readEach(ctx, e, paths, opts, nil)
}

// readWithoutSamples is snapshot.Read of a source that streams
// (snapshot.Streams), keeping only the scrapes and labels of its targets.
func readWithoutSamples(ctx context.Context, paths []string, opts snapshot.Options) (*snapshot.Evidence, error) {
	var targets []*snapshot.Target
	opts.Revisit = func() error { targets = nil; return nil }
	ev, err := snapshot.ReadEach(ctx, paths, opts, func(t *snapshot.Target) error {
		targets = append(targets, t.WithoutSamples())
		return nil
	})
	if err != nil {
		return nil, err
	}
	ev.Targets = targets
	return ev, nil
}

// outside reports whether the range [start, end] (a zero end: open) lies
// wholly before or after the scrapes of ev.
func outside(ev *snapshot.Evidence, start, end time.Time) bool {
	first, last := ev.Span()
	if first.IsZero() {
		return true
	}
	return (!end.IsZero() && end.Before(first)) || start.After(last)
}

// narrow sets on opts what --match and --max-bytes ask for.
func (f *inputFlags) narrow(opts *snapshot.Options) error {
	if f.match != "" {
		ms, err := parser.NewParser(parser.Options{}).ParseMetricSelector(f.match)
		if err != nil {
			return usagef("--match %q: %v", f.match, err)
		}
		opts.Matchers = append(slices.Clone(opts.Matchers), ms...)
	}
	if f.maxBytes != "" {
		n, err := parseSize(f.maxBytes)
		if err != nil {
			return usagef("--max-bytes %q: %v", f.maxBytes, err)
		}
		opts.Limits.MaxBytesPerScrape = n
		if n > snapshot.DefaultLimits.MaxBytesPerFile {
			opts.Limits.MaxBytesPerFile = n
		}
	}
	return nil
}

// errMatchedNothing is readEach's error, with a visitor, when the
// selection matched nothing: the caller reads whole with readEvidence,
// which says why.
var errMatchedNothing = fmt.Errorf("the selection matched nothing: %w", snapshot.ErrEmpty)

// readEach is readEvidence, handing the targets to visit one at a time
// when visit is not nil (snapshot.ReadEach; the Evidence returned then
// holds no target).
func (f *inputFlags) readEach(ctx context.Context, e *env, paths []string, opts snapshot.Options, visit func(*snapshot.Target) error) (*snapshot.Evidence, error) {
	if len(paths) == 0 {
		return nil, usagef("no PATH given (a dump, a folder of dumps, a TSDB directory, a server URL, or - for stdin)")
	}
	budget, err := f.memoryBudget()
	if err != nil {
		return nil, err
	}
	ctx, err = f.server.apply(ctx, paths, &opts, f)
	if err != nil {
		return nil, err
	}
	opts.Limits.MaxMemory = budget / evidenceShare
	ctx = guardMemory(ctx, e, budget)
	if err := f.checkOutput(paths); err != nil {
		return nil, err
	}
	if err := f.narrow(&opts); err != nil {
		return nil, err
	}
	opts.Limits.MaxSeriesPerScrape = f.maxSamples
	opts.FollowLinks = f.follow
	if cat, err := f.catalog(); err == nil {
		// A diagnosis' selection lists them already (its Selection).
		for _, m := range cat.NonNegativeMetrics() {
			if !slices.Contains(opts.NonNegative, m) {
				opts.NonNegative = append(opts.NonNegative, m)
			}
		}
	}
	opts.KeepTimeOutliers = f.keepTimes
	opts.KeepCutFiles = f.keepCut
	stdin := 0
	for _, p := range paths {
		if p == "-" {
			stdin++
		}
	}
	if stdin > 1 {
		return nil, usagef("\"-\" (standard input) given %d times: it can be read only once", stdin)
	}
	if stdin == 1 && e.stdin != nil {
		opts.Stdin = e.stdin
	}
	if stdin == 1 {
		// Standard input is read once, and a dump is small: read it whole
		// so that the messages about what it lacks can list what it has.
		opts.Metrics = nil
	}
	var bar *progressBar
	if e.stderrIsTerminal {
		bar = newProgressBar(e.stderr)
		opts.Progress = bar.update
	}
	var ev *snapshot.Evidence
	if visit != nil {
		ev, err = snapshot.ReadEach(ctx, paths, opts, visit)
	} else {
		ev, err = snapshot.Read(ctx, paths, opts)
	}
	if err != nil && visit != nil && ctx.Err() == nil && errors.Is(err, snapshot.ErrEmpty) && stdin == 0 && selects(opts) {
		// Streamed: the targets are gone. The caller reads again whole,
		// through the branch below, to say why.
		if bar != nil {
			bar.finish()
		}
		return nil, errMatchedNothing
	}
	if err != nil && ctx.Err() == nil && errors.Is(err, snapshot.ErrEmpty) && stdin == 0 && selects(opts) {
		// The question's selection matched nothing. Read what lies outside
		// it, so that the command can say where the evidence lies (the
		// window outside the scrapes) or what it holds (the histograms
		// present): first the same metrics over the whole range, then
		// everything. This costs a full read, but only on the way to an
		// error message. Where the range is widened, a source that
		// streams keeps of each target its scrapes and labels only
		// (Target.WithoutSamples), enough to say where the evidence lies,
		// so that a window mistyped on a long history costs time, not its
		// memory; should the range not lie outside the evidence after
		// all, it is read whole.
		sel := selection{metrics: len(opts.Metrics), start: opts.Start, end: opts.End}
		for i, wider := range []func(*snapshot.Options){
			func(o *snapshot.Options) { o.Start, o.End = time.Time{}, time.Time{} },
			func(o *snapshot.Options) { o.Metrics = nil },
		} {
			wider(&opts)
			read := snapshot.Read
			if i == 0 && snapshot.Streams(paths) {
				read = func(ctx context.Context, paths []string, opts snapshot.Options) (*snapshot.Evidence, error) {
					ev, err := readWithoutSamples(ctx, paths, opts)
					if err == nil && !outside(ev, sel.start, sel.end) {
						return snapshot.Read(ctx, paths, opts)
					}
					return ev, err
				}
			}
			if ev2, err2 := read(ctx, paths, opts); err2 == nil {
				fmt.Fprintf(e.stderr, "note: %s matched nothing; read the rest of the evidence to say why\n", sel)
				ev, err = ev2, nil
				break
			}
		}
	}
	if bar != nil {
		// Erase the bar before anything else is printed on its line.
		bar.finish()
	}
	if merr := memoryCause(ctx); merr != nil {
		return nil, merr
	}
	if merr := evidenceBudgetErr(err, budget); merr != nil {
		return nil, merr
	}
	failed := err != nil || (f.strict && ev != nil && ev.Partial())
	hints := map[string]bool{}
	var hintOrder []string
	if ev != nil {
		var fresh []snapshot.Problem
		for _, p := range ev.Problems {
			if f.printed[p.Error()] {
				continue
			}
			if f.printed == nil {
				f.printed = map[string]bool{}
			}
			f.printed[p.Error()] = true
			fresh = append(fresh, p)
			if p.Severity == snapshot.SeverityInfo {
				continue
			}
			if h := limitHint(p); h != "" && !hints[h] {
				hints[h] = true
				hintOrder = append(hintOrder, h)
			}
		}
		for _, g := range groupProblems(fresh) {
			p := g.first
			var head string
			switch {
			case p.Severity == snapshot.SeverityInfo:
				// How a gap of the input was filled; nothing is wrong.
				head = "note: "
			case failed:
				head = p.Severity.String() + ": "
			default:
				// The run goes on: whatever was lost is a warning about
				// the result, not an error of the run.
				head = "warning: "
			}
			if len(g.files) == 1 {
				fmt.Fprintln(e.stderr, head+p.Error())
				continue
			}
			fmt.Fprintln(e.stderr, head+g.String())
		}
	}
	for _, h := range hintOrder {
		fmt.Fprintln(e.stderr, "hint: "+h)
	}
	if err != nil {
		if ctx.Err() == nil && ev != nil && len(ev.Problems) > 0 {
			// The problems, printed above, are the reasons.
			return nil, fmt.Errorf("nothing usable read from %s (%d problem(s) above)", shownPaths(paths), len(ev.Problems))
		}
		if ctx.Err() == nil {
			reason := strings.TrimPrefix(trimPackage(err.Error()), "nothing usable read: ")
			if !opts.Start.IsZero() || !opts.End.IsZero() {
				reason += fmt.Sprintf(" between %s and %s", fmtTime(opts.Start), fmtTime(opts.End))
			}
			if f.match != "" {
				reason += " matching --match " + f.match
			}
			if len(opts.Metrics) > 0 {
				reason += fmt.Sprintf(" among the %d metric names the question needs", len(opts.Metrics))
			}
			return nil, fmt.Errorf("nothing usable read from %s: %s", shownPaths(paths), reason)
		}
		return nil, err
	}
	if f.strict && ev.Partial() {
		return nil, fmt.Errorf("partial result (--strict): %d problem(s) above", len(ev.Problems))
	}
	return ev, nil
}

// problemGroup is the problems of several files that say the same thing
// (times aside): "no scrape time" for each of 8 dumps is one line.
type problemGroup struct {
	first  snapshot.Problem
	files  []string
	reason string // the first problem's reason, its times as a range (grouped only)
}

// maxGroupFiles is how many file names a group's line names.
const maxGroupFiles = 3

// String says the group in one line: "8 files (a.prom, b.prom, c.prom
// and 5 more): no scrape time: ...".
func (g problemGroup) String() string {
	names := make([]string, 0, maxGroupFiles)
	for _, f := range g.files[:min(maxGroupFiles, len(g.files))] {
		names = append(names, quoteControl(f))
	}
	list := strings.Join(names, ", ")
	if n := len(g.files) - maxGroupFiles; n > 0 {
		list += fmt.Sprintf(" and %d more", n)
	}
	reason := g.reason
	if g.first.Family != "" {
		reason = g.first.Family + ": " + reason
	}
	return fmt.Sprintf("%d files (%s): %s", len(g.files), list, reason)
}

// groupProblems groups, in the order first met, the problems that concern
// a whole file (no line, no offset) and share severity, family and
// reason, the time a file's scrape was placed at aside
// (snapshot.NoTimeError); every other problem is a group of its own. A
// group of such times shows them as "first – last".
func groupProblems(ps []snapshot.Problem) []problemGroup {
	var out []problemGroup
	at := map[string]int{}
	times := map[int][]string{}
	for _, p := range ps {
		if p.Line > 0 || p.Offset >= 0 || p.File == "" || p.Err == nil {
			out = append(out, problemGroup{first: p, files: []string{p.File}})
			continue
		}
		reason := p.Err.Error()
		nt, timed := p.Err.(*snapshot.NoTimeError)
		same := "text\x00" + reason
		if timed {
			// Apart from every other reason: a group's first problem
			// then carries a time whenever the group does.
			same = "time\x00" + nt.Reason("")
		}
		key := p.Severity.String() + "\x00" + p.Family + "\x00" + same
		i, ok := at[key]
		if !ok {
			i = len(out)
			at[key] = i
			out = append(out, problemGroup{first: p, reason: reason})
		}
		out[i].files = append(out[i].files, p.File)
		if timed {
			times[i] = append(times[i], nt.At.UTC().Format(time.RFC3339))
		}
	}
	for i, ts := range times {
		if first, last := slices.Min(ts), slices.Max(ts); first != last {
			out[i].reason = out[i].first.Err.(*snapshot.NoTimeError).Reason(first + " – " + last)
		}
	}
	return out
}

// quoteControl quotes a file name that holds control characters, as
// snapshot.Problem.Error does.
func quoteControl(name string) string {
	if strings.IndexFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
		return strconv.Quote(name)
	}
	return name
}

// limitHint says what raises the limit a problem hit, naming the flag
// that does, or saying that none does; "" when p is no limit problem.
func limitHint(p snapshot.Problem) string {
	var le *snapshot.LimitError
	if !errors.As(p, &le) {
		if errors.Is(p, snapshot.ErrLimit) {
			return "--max-bytes and --max-samples raise the limits per scrape"
		}
		return ""
	}
	switch le.Limit {
	case "Limits.MaxBytesPerScrape", "Limits.MaxBytesPerFile":
		return "--max-bytes raises the size limit of a file (" + le.Limit + ", " + fmtBytes(le.Max) + ")"
	case "Limits.MaxSeriesPerScrape":
		return fmt.Sprintf("--max-samples raises the limit of samples per scrape (%s, %d)", le.Limit, le.Max)
	}
	return fmt.Sprintf("no flag raises %s (%s): the input exceeds what any real exporter writes", le.Limit, fmtBytes(le.Max))
}

// fmtBytes formats a byte count as KiB, MiB or GiB when it is a whole
// multiple.
func fmtBytes(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d %s", n/u.size, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

// parseSize parses a byte count such as 268435456, 256MiB, 256M or 1GiB
// (K, M and G are binary multiples, as in the default 64MiB).
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1 << 10}, {"MB", 1 << 20}, {"GB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSuffix(t, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(t), 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64/mult {
		return 0, errors.New("want a positive size such as 256MiB")
	}
	return n * mult, nil
}

// writeJSON writes v indented, with a final newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	// ">=" in a warning stays readable; nothing here is embedded in HTML.
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// modelMatch builds the label match for --model.
func modelMatch(model string) map[string]string {
	if model == "" {
		return nil
	}
	return map[string]string{"model_name": model}
}

// fmtTime formats an edge of a read range; the zero time is an open edge.
func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "(open)"
	}
	return t.UTC().Format(time.RFC3339)
}

// selects reports whether opts narrow what is read (metrics or a time
// range) beyond what the user asked with --match.
func selects(o snapshot.Options) bool {
	return len(o.Metrics) > 0 || !o.Start.IsZero() || !o.End.IsZero()
}

// selection describes what a command chose to read, for messages.
type selection struct {
	metrics    int
	start, end time.Time
}

// String says "the selection (N metric names between A and B)".
func (s selection) String() string {
	var parts []string
	if s.metrics > 0 {
		parts = append(parts, fmt.Sprintf("%d metric names", s.metrics))
	}
	if !s.start.IsZero() || !s.end.IsZero() {
		parts = append(parts, fmt.Sprintf("between %s and %s", fmtTime(s.start), fmtTime(s.end)))
	}
	return "the selection the question needs (" + strings.Join(parts, " ") + ")"
}
