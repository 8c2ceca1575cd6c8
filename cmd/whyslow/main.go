// Command whyslow diagnoses slow vLLM serving fleets offline, from saved
// Prometheus evidence: /metrics dumps, dump folders, /federate dumps and
// TSDB data directories.
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
}

func commands() []command {
	return []command{
		{"diagnose", "verdict, symptoms and ranked hypotheses for saved evidence", runDiagnose},
		{"quantile", "fleet and per-replica quantiles of one histogram", runQuantile},
		{"compare", "before/after table of p50/p95 per signal", runCompare},
		{"experiment", "judge a single-variable experiment (adopt, reject, inconclusive, refused)", runExperiment},
		{"catalog", "which signals were found, under which metric names and vLLM versions", runCatalog},
		{"rules", "print the decision map", runRules},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	e := &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, stderrIsTerminal: isTerminal(os.Stderr)}
	code := run(ctx, e, os.Args[1:])
	stop()
	os.Exit(code)
}

// run executes one command line and returns the exit status.
func run(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 {
		usage(e.stderr)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage(e.stdout)
		return exitOK
	case "-version", "--version", "version":
		fmt.Fprintln(e.stdout, "whyslow", version)
		return exitOK
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, e, args[1:])
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
		fmt.Fprintf(w, "whyslow %s: %v\n", name, ue.err)
		fmt.Fprintf(w, "Run 'whyslow %s --help' for usage.\n", name)
		return exitUsage
	default:
		fmt.Fprintf(w, "whyslow %s: %v\n", name, err)
		return exitInput
	}
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
Flags may come before or after the paths.

Examples:
  whyslow diagnose ./evidence/
  whyslow diagnose --incident 2026-09-22T10:00:00Z/2026-09-22T10:30:00Z --slo ttft_p95=2s ./evidence/
  whyslow quantile --metric ttft --q 0.5,0.95,0.99 ./evidence/
  whyslow rules

Exit status: 0 success (partial results too, unless --strict), 1 input problem, 2 usage error.
`)
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
