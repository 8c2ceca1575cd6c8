package main

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/diagnose"
	"github.com/whyslow/whyslow/snapshot"
	"github.com/whyslow/whyslow/snapshot/promapi"
)

// readPushdown reads a server's history for a diagnosis that chooses its
// own windows, letting the server aggregate (--pushdown): a survey whose
// histogram timelines the server sums (diagnose.Surveyor.PushDown; the
// gauges, counters and process start times of every pod, and the labels
// of every series, are read as they are), the few samples the sums cannot
// stand for (a pod's first interval, a pod that restarted), then the
// samples of the chosen windows only. It returns the evidence of the
// windows and opts with the survey set, as readSurveyed does; evidence
// that splits into groups is read whole.
func (f *diagnoseFlags) readPushdown(ctx context.Context, e *env, paths []string, opts diagnose.Options, trim func(*snapshot.Target) *snapshot.Target) (*snapshot.Evidence, diagnose.Options, error) {
	s, err := diagnose.NewSurveyor(opts)
	if err != nil {
		return nil, opts, err
	}
	sel := opts.Selection()
	eng, err := f.engine(ctx, paths[0], sel)
	if err != nil {
		return nil, opts, err
	}
	if err := s.PushDown(eng); err != nil {
		return nil, opts, err
	}
	var problems []snapshot.Problem
	if rng, err := parseWindow(f.server.readRange); err == nil && f.records && !rng.IsZero() {
		cat := catalog.Default()
		if opts.Catalog != nil {
			cat = *opts.Catalog
		}
		w, note := recordsRange(eng, promapi.Redact(paths[0]), rng, opts, f.match != "" || len(sel.Matchers) > 0, cat.SignalMetrics(catalog.SignalWaiting))
		if note != nil {
			problems = append(problems, *note)
		}
		if !w.IsZero() {
			sel.Start, sel.End = w.Start, w.End
		}
	}
	surveySel := sel
	surveySel.LabelsOnly = s.LabelsOnly()
	sev, err := f.readEvidence(ctx, e, paths, surveySel)
	if err != nil {
		return nil, opts, err
	}
	problems = append(problems, sev.Problems...)
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
			for _, t := range sev.Targets {
				if err := s.Add(t); err != nil {
					return nil, opts, err
				}
			}
		}
		var again bool
		sv, again, err = s.Survey()
		switch {
		case errors.Is(err, diagnose.ErrSurveyGroups):
			ev, err := f.readRanges(ctx, e, paths, sel, nil, trim)
			return ev, opts, err
		case err != nil:
			return nil, opts, fmt.Errorf("%w (--pushdown=false reads every pod's samples instead)", err)
		case again:
			sv = nil
		}
	}
	// The windows are read without the families that the survey listed by
	// their labels and no signal matches on any target (a signal's older
	// names, the info and parameter histograms): Diagnose takes their
	// labels from the survey, as after a TSDB's survey (Survey.SkipFor).
	skip := map[string]int{}
	for _, t := range sev.Targets {
		for _, name := range sv.SkipFor(t) {
			skip[name]++
		}
	}
	sel.Metrics = slices.DeleteFunc(slices.Clone(sel.Metrics), func(m string) bool {
		n := max(skip[m], skip[snapshot.FamilyBaseName(m)])
		return n > 0 && n == len(sev.Targets)
	})
	return f.readWindows(ctx, e, paths, sel, opts, sv, append(problems, eng.Cost()), trim)
}

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
	o.Start, o.End = r.Window.Start.Add(-snapshot.Lookback), r.Window.End
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
