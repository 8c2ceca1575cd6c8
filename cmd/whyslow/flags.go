package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/whyslow/whyslow/snapshot"
)

// flagSet is a command's flag.FlagSet with its help text. Parse errors
// are reported once, by the caller (see report), not by the flag package;
// --help prints the help text on the help writer (standard output), so that
// "whyslow diagnose --help | less" works.
type flagSet struct {
	*flag.FlagSet
	help io.Writer
}

// newFlagSet returns a flagSet that reports errors instead of exiting and
// prints its help, with the given synopsis and examples, on help.
func newFlagSet(help io.Writer, name, synopsis, examples string) *flagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "Usage: whyslow %s %s\n\nFlags:\n", name, synopsis)
		fs.PrintDefaults()
		if examples != "" {
			fmt.Fprintf(w, "\nExamples:\n%s", examples)
		}
	}
	return &flagSet{FlagSet: fs, help: help}
}

// printHelp writes the command's help text on the help writer.
func (fs *flagSet) printHelp() {
	fs.SetOutput(fs.help)
	defer fs.SetOutput(io.Discard)
	fs.Usage()
}

// parseInterspersed parses args with fs, allowing flags after positional
// arguments ("whyslow diagnose dir --format json"). A lone "-" is a
// positional argument (stdin); "--" ends the flags.
func parseInterspersed(fs *flagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.printHelp()
				return nil, errHelp
			}
			return nil, &usageError{err}
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		// fs.Parse stops at the first non-flag, or after "--".
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// listFlag is a flag that may repeat; each value is kept.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(s string) error {
	*l = append(*l, s)
	return nil
}

// parseWindow parses an RFC 3339 interval "START/END". END may also be a
// Go duration ("2026-09-22T10:00:00Z/30m"). The empty string is the zero
// Window.
// windowForms lists the accepted forms of a window, for error messages.
const windowForms = "accepted forms: 2026-09-22T10:30:00Z/2026-09-22T11:00:00Z, 2026-09-22T10:30:00Z/30m, " +
	"2026-09-22T12:30:00+02:00/1h (a date and time with its zone, then an end time or a Go duration)"

func parseWindow(s string) (snapshot.Window, error) {
	if s == "" {
		return snapshot.Window{}, nil
	}
	a, b, ok := strings.Cut(s, "/")
	if !ok {
		return snapshot.Window{}, fmt.Errorf("window %q: want START/END in RFC 3339, e.g. 2026-09-22T10:00:00Z/2026-09-22T10:30:00Z", s)
	}
	start, err := time.Parse(time.RFC3339, strings.TrimSpace(a))
	if err != nil {
		return snapshot.Window{}, fmt.Errorf("window %q: start %q is not an RFC 3339 time; %s", s, strings.TrimSpace(a), windowForms)
	}
	b = strings.TrimSpace(b)
	end, err := time.Parse(time.RFC3339, b)
	if err != nil {
		d, derr := time.ParseDuration(b)
		if derr != nil {
			return snapshot.Window{}, fmt.Errorf("window %q: end %q is neither an RFC 3339 time nor a duration; %s", s, b, windowForms)
		}
		end = start.Add(d)
	}
	if !end.After(start) {
		return snapshot.Window{}, fmt.Errorf("window %q: end is not after start", s)
	}
	return snapshot.Window{Start: start.UTC(), End: end.UTC()}, nil
}

// parseQuantiles parses "0.5,0.95,0.99".
func parseQuantiles(s string) ([]float64, error) {
	var qs []float64
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		q, err := strconv.ParseFloat(f, 64)
		if err != nil || q < 0 || q > 1 {
			return nil, fmt.Errorf("quantile %q: want a number in [0, 1]", f)
		}
		qs = append(qs, q)
	}
	if len(qs) == 0 {
		return nil, fmt.Errorf("no quantile given")
	}
	return qs, nil
}

// checkFormat validates a --format value against the allowed ones.
func checkFormat(format string, allowed ...string) error {
	for _, a := range allowed {
		if format == a {
			return nil
		}
	}
	return usagef("--format %q: want one of %s", format, strings.Join(allowed, ", "))
}
