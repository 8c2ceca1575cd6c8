package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/whyslow/whyslow/diagnose"
	"github.com/whyslow/whyslow/snapshot"
)

// inputFlags are the flags every command that reads evidence shares.
type inputFlags struct {
	match   string
	aliases listFlag
	format  string
	strict  bool
	output  string
}

func (f *inputFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.match, "match", "", "PromQL `SELECTOR` narrowing TSDB input, e.g. '{namespace=\"llm\"}'")
	fs.Var(&f.aliases, "alias", "`CANONICAL=NAME`: read signal CANONICAL (e.g. ttft, gpu_util, client_ttft) from metric NAME, or PREFIX:=NEWPREFIX: (e.g. vllm:=ray_vllm:); repeatable")
	fs.BoolVar(&f.strict, "strict", false, "treat a partial result (an unreadable file among many) as an error")
	fs.StringVar(&f.output, "o", "", "write the output to `FILE` instead of standard output")
}

// catalog returns the default catalog with the --alias flags applied.
func (f *inputFlags) catalog() (*diagnose.Catalog, error) {
	cat := diagnose.DefaultCatalog()
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
		if err := cat.Alias(diagnose.SignalID(id), name); err != nil {
			return nil, usagef("--alias %q: %v", a, err)
		}
	}
	return &cat, nil
}

// readEvidence reads the paths, printing problems on stderr. With --strict
// a partial result is an error.
func (f *inputFlags) readEvidence(ctx context.Context, e *env, paths []string, opts snapshot.Options) (*snapshot.Evidence, error) {
	if len(paths) == 0 {
		return nil, usagef("no PATH given (a dump, a folder of dumps, a TSDB directory, or - for stdin)")
	}
	if f.match != "" {
		ms, err := parser.NewParser(parser.Options{}).ParseMetricSelector(f.match)
		if err != nil {
			return nil, usagef("--match %q: %v", f.match, err)
		}
		opts.Matchers = append([]*labels.Matcher(nil), ms...)
	}
	if e.stdin != nil {
		for _, p := range paths {
			if p == "-" {
				opts.Stdin = e.stdin
			}
		}
	}
	if e.stderrIsTerminal {
		bar := newProgressBar(e.stderr)
		opts.Progress = bar.update
		defer bar.finish()
	}
	ev, err := snapshot.Read(ctx, paths, opts)
	if ev != nil {
		for _, p := range ev.Problems {
			fmt.Fprintln(e.stderr, p.String())
		}
	}
	if err != nil {
		return nil, err
	}
	if f.strict && ev.Partial() {
		return nil, fmt.Errorf("partial result (--strict): %d problem(s) above", len(ev.Problems))
	}
	return ev, nil
}

// out opens the output: -o FILE or stdout. The returned close function
// must be called; its error matters for files.
func (f *inputFlags) out(e *env) (io.Writer, func() error, error) {
	if f.output == "" || f.output == "-" {
		return e.stdout, func() error { return nil }, nil
	}
	file, err := os.Create(f.output)
	if err != nil {
		return nil, nil, err
	}
	return file, file.Close, nil
}

// writeJSON writes v indented, with a final newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// modelMatch builds the label match for --model.
func modelMatch(model string) map[string]string {
	if model == "" {
		return nil
	}
	return map[string]string{"model_name": model}
}

// labelValues lists the distinct values of label over every series of the
// evidence, sorted.
func labelValues(ev *snapshot.Evidence, label string) []string {
	seen := map[string]bool{}
	for _, t := range ev.Targets {
		for _, f := range t.Families {
			for _, s := range f.Series {
				if v := s.Labels.Get(label); v != "" {
					seen[v] = true
				}
			}
			for _, h := range f.Histograms {
				if v := h.Labels.Get(label); v != "" {
					seen[v] = true
				}
			}
		}
	}
	out := make([]string, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}
