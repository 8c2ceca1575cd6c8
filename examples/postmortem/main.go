// Postmortem runs the whole whyslow diagnosis on sample evidence and prints
// the report: the verdict first, then the symptoms, the ranked hypotheses
// with their evidence and counter-evidence, the before/after table and the
// signals behind them.
//
// With no arguments it needs no network and no file: the sample (a 4-pod
// vLLM fleet whose prompts grow long half-way through an hour, see package
// evidence) is embedded in the program.
//
//	go run ./examples/postmortem
//	go run ./examples/postmortem -format markdown
//	go run ./examples/postmortem -format html -o report.html
//	go run ./examples/postmortem -scenario kv-preemption
//
// -scenario simulates another scenario of the repository's simulator in
// memory (a few seconds) instead of reading the embedded sample; -list
// lists them.
//
// The program is the library's main path in a few lines: read evidence
// (snapshot), diagnose it (diagnose.Diagnose), print the report.
package main

//go:generate go run gen.go

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/whyslow/whyslow/diagnose"
	"github.com/whyslow/whyslow/examples/internal/sample"
	"github.com/whyslow/whyslow/examples/postmortem/evidence"
	"github.com/whyslow/whyslow/internal/fleetsim"
	"github.com/whyslow/whyslow/report"
	"github.com/whyslow/whyslow/report/html"
	"github.com/whyslow/whyslow/snapshot"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// errUsage marks an error in the command line.
var errUsage = errors.New("usage")

// run is the program, apart from the process: it returns the exit code
// (0 success, 1 failure, 2 usage error).
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("postmortem", flag.ContinueOnError)
	fs.SetOutput(stderr)
	format := fs.String("format", "text", "report `format`: text, markdown, json or html")
	output := fs.String("o", "", "write the report to `FILE` instead of standard output")
	scenario := fs.String("scenario", "", "simulate the fleetsim scenario `NAME` instead of reading the embedded sample")
	list := fs.Bool("list", false, "list the scenarios -scenario accepts")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: postmortem [-format text|markdown|json|html] [-o FILE] [-scenario NAME]\n\n")
		fmt.Fprintf(stderr, "Diagnoses the embedded sample evidence (or a simulated scenario) and prints the report.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "postmortem: unexpected argument %q (evidence on disk is for `whyslow diagnose PATH`)\n", fs.Arg(0))
		return 2
	}
	if !validFormat(*format) {
		fmt.Fprintf(stderr, "postmortem: unknown format %q (want text, markdown, json or html)\n", *format)
		return 2
	}
	if *list {
		for _, s := range fleetsim.Scenarios() {
			fmt.Fprintf(stdout, "%-20s expect %-22s %s\n", s.Name, s.Expect, s.Description)
		}
		return 0
	}
	rep, err := postmortem(*scenario)
	if err == nil {
		if *output == "" {
			err = write(stdout, rep, *format)
		} else {
			err = writeFile(*output, rep, *format)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "postmortem: %v\n", err)
		if errors.Is(err, errUsage) {
			return 2
		}
		return 1
	}
	return 0
}

// postmortem reads the evidence, the embedded sample or the simulated
// scenario, and diagnoses it with the default options: windows chosen by
// the change-point search, default thresholds, no SLO (symptoms are judged
// against the baseline).
func postmortem(scenario string) (*report.Report, error) {
	ev, err := load(scenario)
	if err != nil {
		return nil, err
	}
	return diagnose.Diagnose(ev, diagnose.Options{})
}

// load returns the embedded sample when scenario is empty, else the
// scenario simulated at the sample's size.
func load(scenario string) (*snapshot.Evidence, error) {
	if scenario == "" {
		return evidence.Read()
	}
	if _, ok := fleetsim.LookupScenario(scenario); !ok {
		return nil, fmt.Errorf("%w: unknown scenario %q (see -list)", errUsage, scenario)
	}
	data, err := sample.Dump(scenario)
	if err != nil {
		return nil, err
	}
	// The whole fleet is one document, which may exceed the default limit
	// of one scrape's size (meant for untrusted dumps) for the scenarios
	// that keep 8 pods; this data comes from the simulator.
	opts := snapshot.Options{Limits: snapshot.Limits{MaxBytesPerScrape: 1 << 30}}
	return snapshot.ParseDump(data, sample.FileName(scenario), opts)
}

// writers are the report formats of -format.
var writers = map[string]func(*report.Report, io.Writer) error{
	"text":     (*report.Report).WriteText,
	"markdown": (*report.Report).WriteMarkdown,
	"md":       (*report.Report).WriteMarkdown,
	"json":     (*report.Report).WriteJSON,
	"html":     func(r *report.Report, w io.Writer) error { return html.Write(w, r) },
}

func validFormat(format string) bool { return writers[format] != nil }

// write prints the report in the given format.
func write(w io.Writer, rep *report.Report, format string) error {
	wr := writers[format]
	if wr == nil {
		return fmt.Errorf("%w: unknown format %q (want text, markdown, json or html)", errUsage, format)
	}
	return wr(rep, w)
}

// writeFile writes the report to the named file.
func writeFile(name string, rep *report.Report, format string) (err error) {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, f.Close()) }()
	return write(f, rep, format)
}
