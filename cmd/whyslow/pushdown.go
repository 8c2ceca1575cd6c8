package main

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/whyslow/whyslow/diagnose"
	"github.com/whyslow/whyslow/snapshot"
	"github.com/whyslow/whyslow/snapshot/promapi"
)

// engine returns the server's promapi.Engine under the flags: the
// server configuration, --match and the selection's limits.
func (f *inputFlags) engine(ctx context.Context, path string, sel snapshot.Options) (*promapi.Engine, error) {
	ctx, err := f.server.apply(ctx, []string{path}, &sel, f)
	if err != nil {
		return nil, err
	}
	if err := f.narrow(&sel); err != nil {
		return nil, err
	}
	return promapi.ConfigFrom(ctx).Engine(ctx, path, sel)
}

// readSamples reads a survey's SampleRead: its metrics of its targets
// over its window (from snapshot.Lookback before, for the edge samples).
func (f *diagnoseFlags) readSamples(ctx context.Context, e *env, paths []string, sel snapshot.Options, r diagnose.SampleRead) (*snapshot.Evidence, error) {
	o := sel
	o.Metrics, o.LabelsOnly = r.Metrics, nil
	// Within the range of the read that fed the survey (sel's; --range
	// bounds every read, see serverFlags.apply): the samples it could
	// hold, as a directory's read of the range holds them.
	o.Start, o.End, _ = within(r.Window.Start.Add(-snapshot.Lookback), r.Window.End, snapshot.Window{Start: sel.Start, End: sel.End})
	byLabel := map[string][]string{}
	for _, t := range r.Targets {
		byLabel[t.NameFrom] = append(byLabel[t.NameFrom], regexp.QuoteMeta(t.Name))
	}
	if len(byLabel) != 1 {
		return nil, fmt.Errorf("%s: the targets of a sample read over %v are named by %d labels, not one", shownPaths(paths), r.Window, len(byLabel))
	}
	for label, names := range byLabel {
		m, err := labels.NewMatcher(labels.MatchRegexp, label, strings.Join(names, "|"))
		if err != nil {
			return nil, err
		}
		o.Matchers = append(slices.Clone(o.Matchers), m)
	}
	return f.readEvidence(ctx, e, paths, o)
}
