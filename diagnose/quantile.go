package diagnose

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/histogram"
	"github.com/whyslow/whyslow/internal/textfmt"
	"github.com/whyslow/whyslow/report"
	"github.com/whyslow/whyslow/rules"
	"github.com/whyslow/whyslow/snapshot"
)

// QuantileRequest asks for quantiles of one histogram across a fleet.
type QuantileRequest struct {
	// Metric is a histogram's base name ("vllm:time_to_first_token_seconds")
	// or a catalog signal id ("ttft"); a signal id takes, per replica, the
	// first of its candidate metrics that the replica exposes.
	Metric string
	// Catalog resolves signal ids; nil means catalog.Default().
	Catalog *catalog.Catalog
	// Quantiles to estimate; nil means 0.5, 0.95 and 0.99.
	Quantiles []float64
	// Window is the time range; the zero Window means each replica's
	// first to last scrape.
	Window snapshot.Window
	// Match keeps only series whose labels have these values, e.g.
	// {"model_name": "llama"}.
	Match map[string]string
}

// DefaultQuantiles are the quantiles reported when none are asked for.
var DefaultQuantiles = []float64{0.5, 0.95, 0.99}

// ErrSeveralModels is returned when evidence holds several model_name
// values and the request does not choose one: quantiles are never merged
// across models.
var ErrSeveralModels = errors.New("the evidence holds several models")

// FleetQuantiles estimates quantiles of one histogram, fleet-wide and per
// replica, from evidence. Each replica's histogram increase over the window
// is computed first (counter resets handled, engines of one pod merged);
// the fleet histogram is the exact merge of the replicas' increases (see
// histogram.Merge), and quantiles are taken after. Averaging per-replica
// quantiles would be wrong, so it is not offered.
//
// When the matching series carry several model_name values and Match does
// not fix model_name, FleetQuantiles returns an error wrapping
// ErrSeveralModels that lists them.
func FleetQuantiles(ev *snapshot.Evidence, req QuantileRequest) (*report.QuantileReport, error) {
	ev = ev.JoinAddresses()
	qs := req.Quantiles
	if len(qs) == 0 {
		qs = DefaultQuantiles
	}
	c := catalog.Default()
	if req.Catalog != nil {
		c = *req.Catalog
	}
	c = c.ForEvidence(ev) // Ray's ray_vllm: names, when present
	cat := &c
	names, err := histogramNames(cat, req.Metric)
	if err != nil {
		return nil, err
	}
	unit := histogramUnit(cat, req.Metric, names)
	if _, ok := req.Match["model_name"]; !ok {
		if models := histogramLabelValues(ev, names, "model_name", req.Match); len(models) > 1 {
			return nil, fmt.Errorf("%w (%s): choose one with QuantileRequest.Match[\"model_name\"] or split with FleetQuantilesBy", ErrSeveralModels, strings.Join(models, ", "))
		}
	}
	rep := &report.QuantileReport{Metric: req.Metric, Unit: unit, Replicas: map[string][]report.Quantile{}, Window: report.WindowSpan{Start: req.Window.Start, End: req.Window.End}}
	var perReplica []snapshot.HistogramIncrease
	used := map[string]bool{}
	var span report.WindowSpan
	spec, isSignal := cat.Signal(catalog.SignalID(req.Metric))
	for _, t := range ev.Targets {
		// A signal id takes the replica's metric as the catalog resolves
		// it (the same choice Diagnose makes), with its unit scale (a
		// millisecond histogram named by an alias becomes seconds).
		fam, scale := firstFamily(t, names), 1.0
		if isSignal {
			if m, ok := cat.ResolveTarget(t).Match(spec.ID); ok && m.Found() && len(m.Family.Histograms) > 0 {
				fam, scale = m.Family, m.Candidate.ScaleFor(math.NaN())
			}
		}
		if fam == nil {
			continue
		}
		inc, err := replicaHistogram(fam, scale, req.Window, req.Match)
		if err != nil {
			if !errors.Is(err, snapshot.ErrNotEvaluable) {
				return nil, fmt.Errorf("%s: %s: %w", t.Name, fam.Name, err)
			}
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s: %s: %v", t.Name, fam.Name, err))
			continue
		}
		used[fam.Name] = true
		rep.Lifetime = rep.Lifetime || inc.Lifetime
		rep.Warnings = append(rep.Warnings, increaseWarnings(t.Name, fam.Name, inc)...)
		perReplica = append(perReplica, inc)
		rep.Replicas[t.Name] = estimates(inc.Histogram, qs)
		rep.Warnings = append(rep.Warnings, stabilityWarnings(t.Name, rep.Replicas[t.Name])...)
		if span.Start.IsZero() || inc.From.Before(span.Start) {
			span.Start = inc.From
		}
		if inc.To.After(span.End) {
			span.End = inc.To
		}
	}
	for n := range used {
		rep.Metrics = append(rep.Metrics, n)
	}
	sort.Strings(rep.Metrics)
	if len(perReplica) == 0 {
		return nil, fmt.Errorf("no replica has histogram %s over window %s%s", strings.Join(names, " or "), req.Window, dataEnds(ev, names, req.Window))
	}
	if req.Window.IsZero() {
		rep.Window = span
		if rep.Lifetime && span.Start.Equal(span.End) {
			// Since process start: the start is not known.
			rep.Window.Start = time.Time{}
			rep.Window.End = knownTime(span.End)
		}
	}
	merged, err := mergeFleet(perReplica)
	if err != nil {
		return nil, fmt.Errorf("merging %d replicas: %w", len(perReplica), err)
	}
	if len(merged.Dropped) > 0 {
		rep.Dropped = merged.Dropped
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("fleet merge: bucket layouts differ; bounds %v left out (not shared by every replica)", merged.Dropped))
	}
	rep.Fleet = estimates(merged.Histogram, qs)
	rep.FleetMean = rules.Number(merged.Histogram.Mean())
	rep.Warnings = append(rep.Warnings, stabilityWarnings("fleet", rep.Fleet)...)
	return rep, nil
}

// histogramNames returns the metric names a request may mean: a signal's
// candidates, or the name itself.
func histogramNames(cat *catalog.Catalog, metric string) ([]string, error) {
	if metric == "" {
		return nil, errors.New("no metric given")
	}
	if spec, ok := cat.Signal(catalog.SignalID(metric)); ok {
		if spec.Kind != catalog.KindHistogram {
			return nil, fmt.Errorf("signal %q is a %s, not a histogram", metric, spec.Kind)
		}
		if len(spec.Candidates) == 0 {
			return nil, fmt.Errorf("signal %q has no metric name: give one with an alias", metric)
		}
		return spec.Metrics(), nil
	}
	return []string{strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(metric, "_bucket"), "_count"), "_sum")}, nil
}

// firstFamily returns the target's first family among names that holds
// histograms.
func firstFamily(t *snapshot.Target, names []string) *snapshot.Family {
	for _, n := range names {
		if f := t.Family(n); f != nil && len(f.Histograms) > 0 {
			return f
		}
	}
	return nil
}

// histogramLabelValues lists, sorted, the distinct values of label on the
// histogram series matching match of each target's first family among
// names (the family FleetQuantiles reads).
func histogramLabelValues(ev *snapshot.Evidence, names []string, label string, match map[string]string) []string {
	seen := map[string]bool{}
	for _, t := range ev.Targets {
		f := firstFamily(t, names)
		if f == nil {
			continue
		}
		for _, h := range f.HistogramsMatching(match) {
			if v := h.Labels.Get(label); v != "" {
				seen[v] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

func estimates(h histogram.Histogram, qs []float64) []report.Quantile {
	out := make([]report.Quantile, len(qs))
	for i, q := range qs {
		out[i] = report.QuantileOf(h.Quantile(q))
	}
	return out
}

// increaseWarnings turns the flags of a histogram increase into warnings.
func increaseWarnings(target, metric string, inc snapshot.HistogramIncrease) []string {
	var w []string
	if inc.Resets > 0 {
		w = append(w, fmt.Sprintf("%s: %s: %d counter reset(s) in the window (restart?)", target, metric, inc.Resets))
	}
	if inc.LowerBound {
		w = append(w, fmt.Sprintf("%s: %s: a reset between the edge scrapes lost observations: counts are a lower bound", target, metric))
	}
	if inc.Lifetime {
		w = append(w, fmt.Sprintf("%s: %s: a single scrape: lifetime values since process start, not windowed", target, metric))
	}
	if inc.StartClipped {
		w = append(w, fmt.Sprintf("%s: %s: no scrape at the window start; measured from %s", target, metric, inc.From.UTC().Format(time.RFC3339)))
	}
	if len(inc.Dropped) > 0 {
		w = append(w, fmt.Sprintf("%s: %s: bucket layout changed; bounds %v left out", target, metric, inc.Dropped))
	}
	for _, e := range inc.Warnings {
		w = append(w, fmt.Sprintf("%s: %s: %v", target, metric, e))
	}
	return w
}

// stabilityWarnings says which quantiles rest on too few observations,
// or that there is none at all.
func stabilityWarnings(who string, qs []report.Quantile) []string {
	var w []string
	for _, q := range qs {
		switch {
		case !(float64(q.Count) > 0):
			return []string{fmt.Sprintf("%s: no observation in the window: quantiles unknown", who)}
		case !q.Stable:
			w = append(w, fmt.Sprintf("%s: p%s from %s observations is unstable (need >= %s)", who, textfmt.Quantile(q.Q), textfmt.Number(float64(q.Count)), textfmt.Number(math.Round(histogram.MinCount(q.Q)))))
		}
	}
	return w
}

// histogramUnit is the unit of a histogram's values: the catalog's for a
// signal or a known metric, else guessed from the name.
func histogramUnit(cat *catalog.Catalog, metric string, names []string) string {
	unit := ""
	if spec, ok := cat.Signal(catalog.SignalID(metric)); ok {
		unit = spec.Unit
	} else {
		for _, spec := range cat.Signals() {
			for _, m := range spec.Metrics() {
				if m == names[0] {
					unit = spec.Unit
				}
			}
		}
	}
	switch {
	case unit == catalog.UnitSeconds || (unit == "" && strings.HasSuffix(names[0], "_seconds")):
		return "s"
	case unit == catalog.UnitTokens || (unit == "" && strings.HasSuffix(names[0], "_tokens")):
		return "tokens"
	}
	return ""
}

// dataEnds says where the samples of the histograms names lie when w
// starts before their last sample and ends more than snapshot.Lookback
// after it: the window's end edge has no sample to stand for it. It is ""
// otherwise.
func dataEnds(ev *snapshot.Evidence, names []string, w snapshot.Window) string {
	var last int64
	found := false
	for _, t := range ev.Targets {
		for _, n := range names {
			f := t.Family(n)
			if f == nil {
				continue
			}
			for _, h := range f.Histograms {
				if len(h.T) > 0 && (!found || h.T[len(h.T)-1] > last) {
					last, found = h.T[len(h.T)-1], true
				}
			}
		}
	}
	if !found || w.IsZero() {
		return ""
	}
	end := time.UnixMilli(last).UTC()
	if !w.Start.Before(end) || w.End.Sub(end) < snapshot.Lookback {
		return ""
	}
	return fmt.Sprintf(": its samples end at %s, and a window's end needs a sample at most %s before it (end the window by %s)",
		end.Format(time.RFC3339), snapshot.Lookback, end.Add(snapshot.Lookback).Format(time.RFC3339))
}
