// Command whyslow diagnoses slow vLLM serving fleets offline, from saved
// Prometheus evidence: /metrics dumps, dump folders, /federate dumps,
// TSDB data directories, and Prometheus-compatible servers (an http:// or
// https:// URL: Prometheus, Thanos Query, Mimir, VictoriaMetrics).
//
// Usage:
//
//	whyslow diagnose   [flags] PATH...   verdict, symptoms, ranked hypotheses
//	whyslow quantile   [flags] PATH...   fleet and per-replica quantiles of a histogram
//	whyslow compare    [flags] PATH...   before/after table of p50/p95 per signal
//	whyslow experiment [flags]           judge a single-variable experiment
//	whyslow catalog    [flags] PATH...   which signals were found, under which names
//	whyslow rules                        print the decision map
//
// Flags may come before or after the paths; "-" reads standard input.
// Exit status: 0 on success (a partial result, such as one unreadable file
// among many, is a success with warnings unless --strict is given), 1 on a
// problem with the input, 2 on a usage error. Errors go to standard error
// and name the file and line.
//
// Run "whyslow COMMAND --help" for a command's flags and examples.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"

	_ "github.com/whyslow/whyslow/snapshot/promapi" // registers the reader of server URLs
	_ "github.com/whyslow/whyslow/snapshot/tsdb"    // registers the TSDB directory reader
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "devel"

// Exit codes, a public contract for scripts.
const (
	exitOK    = 0
	exitInput = 1
	exitUsage = 2
)

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env *env, args []string) error
}

// env carries the process's streams so that tests can run commands in
// process.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// stderrIsTerminal enables the progress display.
	stderrIsTerminal bool
	// exit, when set (by main: os.Exit), ends the process at once when
	// the run passes its memory budget (see guardMemory); in process, the
	// run's context is cancelled instead.
	exit func(code int)
	// cleanup runs, last first, when the command returns.
	cleanup []func()
}

func commands() []command {
	return []command{
		{"diagnose", "verdict, symptoms and ranked hypotheses for saved evidence", runDiagnose},
		{"quantile", "fleet and per-replica quantiles of one histogram", runQuantile},
		{"compare", "before/after table of p50/p95 per signal", runCompare},
		{"experiment", "judge a single-variable experiment (adopt, reject, inconclusive, refused)", runExperiment},
		{"catalog", "which signals were found, under which metric names and vLLM versions", runCatalog},
		{"rules", "print the decision map", runRules},
		{"alerts", "write Prometheus recording and alerting rules from the decision map", runAlerts},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	e := &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, stderrIsTerminal: isTerminal(os.Stderr), exit: os.Exit}
	code := run(ctx, e, os.Args[1:])
	stop()
	os.Exit(code)
}

// run executes one command line and returns the exit status.
func run(ctx context.Context, e *env, args []string) int {
	e, flush := withFlagHints(e)
	defer flush()
	if len(args) == 0 {
		usage(e.stderr)
		return exitUsage
	}
	switch args[0] {
	case "help":
		// "whyslow help diagnose" is "whyslow diagnose --help".
		if len(args) > 1 {
			return run(ctx, e, []string{args[1], "--help"})
		}
		usage(e.stdout)
		return exitOK
	case "-h", "-help", "--help":
		usage(e.stdout)
		return exitOK
	case "-version", "--version", "version":
		fmt.Fprintln(e.stdout, "whyslow", versionString())
		return exitOK
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, e, args[1:])
		for i := len(e.cleanup) - 1; i >= 0; i-- {
			e.cleanup[i]()
		}
		e.cleanup = nil
		return report(e.stderr, c.name, err)
	}
	fmt.Fprintf(e.stderr, "whyslow: unknown command %q\n\n", args[0])
	usage(e.stderr)
	return exitUsage
}

// report prints err and maps it to an exit status.
func report(w io.Writer, name string, err error) int {
	var ue *usageError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errHelp):
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(w, "whyslow %s: %s\n", name, trimPackage(ue.err.Error()))
		fmt.Fprintf(w, "Run 'whyslow %s --help' for usage.\n", name)
		return exitUsage
	default:
		fmt.Fprintf(w, "whyslow %s: %s\n", name, trimPackage(err.Error()))
		return exitInput
	}
}

// trimPackage drops the library's package prefix ("diagnose: ",
// "snapshot: ") from an error message: on the command line the command's
// name already says where the message comes from.
func trimPackage(msg string) string {
	for _, p := range []string{"diagnose: ", "snapshot: ", "rules: ", "histogram: "} {
		msg = strings.TrimPrefix(msg, p)
	}
	return msg
}

func usage(w io.Writer) {
	fmt.Fprintf(w, `whyslow diagnoses slow vLLM serving fleets offline, from saved Prometheus evidence.

Usage:
  whyslow COMMAND [flags] PATH...

Commands:
`)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-11s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, `
PATH is a /metrics dump (text 0.0.4 or OpenMetrics, .gz allowed), a folder of
dumps, a /federate dump, a Prometheus TSDB data directory, or "-" for stdin.
Flags may come before or after the paths. "whyslow COMMAND --help" (or
"whyslow help COMMAND") lists a command's flags with examples.

Examples:
  whyslow diagnose ./evidence/
  whyslow diagnose --incident 2026-09-22T10:00:00Z/2026-09-22T10:30:00Z --slo ttft_p95=2s ./evidence/
  whyslow quantile --metric ttft --q 0.5,0.95,0.99 ./evidence/
  whyslow rules

Exit status: 0 success (partial results too, unless --strict), 1 input problem, 2 usage error.
`)
}

// versionString is the version set at build time, else the module version
// recorded by "go install ...@VERSION", else "devel" with the VCS revision
// when the build recorded one.
func versionString() string {
	if version != "devel" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return version
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+dirty"
			}
		}
	}
	if rev == "" {
		return version
	}
	return fmt.Sprintf("devel (%.12s%s)", rev, modified)
}

// usageError marks an error in the command line.
type usageError struct{ err error }

func (u *usageError) Error() string { return u.err.Error() }
func (u *usageError) Unwrap() error { return u.err }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// errHelp is returned when --help was asked for and printed.
var errHelp = errors.New("help requested")

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
