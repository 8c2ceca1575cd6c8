package diagnose

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/whyslow/whyslow/histogram"
	"github.com/whyslow/whyslow/snapshot"
)

// QuantileRequest asks for quantiles of one histogram across a fleet.
type QuantileRequest struct {
	// Metric is a histogram's base name ("vllm:time_to_first_token_seconds")
	// or a catalog signal id ("ttft"); a signal id takes, per replica, the
	// first of its candidate metrics that the replica exposes.
	Metric string
	// Catalog resolves signal ids; nil means DefaultCatalog().
	Catalog *Catalog
	// Quantiles to estimate; nil means 0.5, 0.95 and 0.99.
	Quantiles []float64
	// Window is the time range; the zero Window means each replica's
	// first to last scrape.
	Window snapshot.Window
	// Match keeps only series whose labels have these values, e.g.
	// {"model_name": "llama"}.
	Match map[string]string
}

// QuantileReport holds fleet and per-replica quantiles of one histogram.
// Its JSON form is a public contract (see README): metric, window,
// fleet, replicas, warnings.
type QuantileReport struct {
	// Metric is what was asked for; Metrics the metric names used.
	Metric  string   `json:"metric"`
	Metrics []string `json:"metrics"`
	// Unit is the unit of the values: "s", "tokens" or "" when unknown.
	Unit string `json:"unit"`
	// Window is the window asked for, or the span actually covered when
	// none was given.
	Window WindowSpan `json:"window"`
	// Fleet holds the quantiles of the histogram merged across replicas
	// (buckets summed first, quantile taken after).
	Fleet []Quantile `json:"fleet"`
	// FleetMean is the fleet's sum/count over the window.
	FleetMean Float `json:"fleet_mean"`
	// Replicas maps a replica name to its own quantiles.
	Replicas map[string][]Quantile `json:"replicas"`
	// Lifetime is true when some replica had a single scrape in the
	// window: its values are since process start, not windowed.
	Lifetime bool `json:"lifetime"`
	// Dropped lists bucket bounds left out of the fleet merge because not
	// every replica has them (mixed bucket layouts).
	Dropped []float64 `json:"dropped_bounds,omitempty"`
	// Warnings: low counts, resets, replicas left out, non-finite values.
	Warnings []string `json:"warnings"`
}

// WindowSpan is a time range in JSON: {"start": ..., "end": ...} in
// RFC 3339 UTC.
type WindowSpan struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
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
func FleetQuantiles(ev *snapshot.Evidence, req QuantileRequest) (*QuantileReport, error) {
	qs := req.Quantiles
	if len(qs) == 0 {
		qs = DefaultQuantiles
	}
	c := DefaultCatalog()
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
		if models := modelNames(ev, names, req.Match); len(models) > 1 {
			return nil, fmt.Errorf("%w (%s): choose one with --model or split with --by model_name", ErrSeveralModels, strings.Join(models, ", "))
		}
	}
	rep := &QuantileReport{Metric: req.Metric, Unit: unit, Replicas: map[string][]Quantile{}, Window: WindowSpan{Start: req.Window.Start, End: req.Window.End}}
	var perReplica []histogram.Histogram
	used := map[string]bool{}
	var span WindowSpan
	spec, isSignal := cat.Signal(SignalID(req.Metric))
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
		inc, err := fam.HistogramIncrease(req.Window, req.Match)
		if err == nil && scale != 1 {
			inc.Histogram = scaleBounds(inc.Histogram, scale)
		}
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
		perReplica = append(perReplica, inc.Histogram)
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
		return nil, fmt.Errorf("no replica has histogram %s over window %s", strings.Join(names, " or "), req.Window)
	}
	if req.Window.IsZero() {
		rep.Window = span
		if rep.Lifetime && span.Start.Equal(span.End) {
			// Since process start: the start is not known.
			rep.Window.Start = time.Time{}
			rep.Window.End = knownTime(span.End)
		}
	}
	merged, err := histogram.Merge(perReplica...)
	if err != nil {
		return nil, fmt.Errorf("merging %d replicas: %w", len(perReplica), err)
	}
	if len(merged.Dropped) > 0 {
		rep.Dropped = merged.Dropped
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("fleet merge: bucket layouts differ; bounds %v left out (not shared by every replica)", merged.Dropped))
	}
	rep.Fleet = estimates(merged.Histogram, qs)
	rep.FleetMean = Float(merged.Histogram.Mean())
	rep.Warnings = append(rep.Warnings, stabilityWarnings("fleet", rep.Fleet)...)
	return rep, nil
}

// histogramNames returns the metric names a request may mean: a signal's
// candidates, or the name itself.
func histogramNames(cat *Catalog, metric string) ([]string, error) {
	if metric == "" {
		return nil, errors.New("no metric given")
	}
	if spec, ok := cat.Signal(SignalID(metric)); ok {
		if spec.Kind != KindHistogram {
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

// modelNames lists the distinct model_name values of the matching series.
func modelNames(ev *snapshot.Evidence, names []string, match map[string]string) []string {
	seen := map[string]bool{}
	for _, t := range ev.Targets {
		f := firstFamily(t, names)
		if f == nil {
			continue
		}
		for _, h := range f.HistogramsMatching(match) {
			if m := h.Labels.Get("model_name"); m != "" {
				seen[m] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for m := range seen {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

func estimates(h histogram.Histogram, qs []float64) []Quantile {
	out := make([]Quantile, len(qs))
	for i, q := range qs {
		out[i] = QuantileOf(h.Quantile(q))
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

// qLabel formats 0.95 as "95" and 0.999 as "99.9".
func qLabel(q float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.4f", q*100), "0"), ".")
}

// String prints the fleet quantiles and the per-replica table, every
// value with its bucket bounds and the number of observations behind it.
func (r *QuantileReport) String() string {
	var b strings.Builder
	var span string
	switch {
	case r.Lifetime && r.Window.Start.IsZero() && r.Window.End.IsZero():
		span = "the replicas' lifetime (single scrape at an unknown time; since process start, not windowed)"
	case r.Lifetime && r.Window.Start.IsZero():
		span = "the replicas' lifetime (single scrape at " + r.Window.End.UTC().Format(time.RFC3339) + "; since process start, not windowed)"
	case r.Lifetime:
		span = r.Window.Start.UTC().Format(time.RFC3339) + "/" + r.Window.End.UTC().Format(time.RFC3339) + " (some replicas: single scrape, lifetime values)"
	default:
		span = r.Window.Start.UTC().Format(time.RFC3339) + "/" + r.Window.End.UTC().Format(time.RFC3339)
	}
	fmt.Fprintf(&b, "%s over %s\n", r.Metric, span)
	if len(r.Metrics) > 0 && (len(r.Metrics) > 1 || r.Metrics[0] != r.Metric) {
		fmt.Fprintf(&b, "metric: %s\n", strings.Join(r.Metrics, ", "))
	}
	names := make([]string, 0, len(r.Replicas))
	for n := range r.Replicas {
		names = append(names, n)
	}
	sort.Strings(names)
	rows := [][]string{{"replica"}}
	for _, q := range r.Fleet {
		rows[0] = append(rows[0], "p"+qLabel(q.Q)+" [bucket]")
	}
	rows[0] = append(rows[0], "n")
	marked := false
	row := func(name string, qs []Quantile) {
		cells := []string{name}
		var n Float
		for _, q := range qs {
			cell := "n/a"
			if !math.IsNaN(float64(q.Value)) {
				cell = fmtQuantileValue(q, r.Unit)
			}
			if !q.Stable && float64(q.Count) > 0 {
				cell += " ~"
				marked = true
			}
			cells = append(cells, cell)
			n = q.Count
		}
		cells = append(cells, strings.TrimPrefix(fmtCount(n), "n="))
		rows = append(rows, cells)
	}
	row("fleet (merged)", r.Fleet)
	for _, n := range names {
		row(n, r.Replicas[n])
	}
	widths := make([]int, len(rows[0]))
	for _, cells := range rows {
		for i, c := range cells {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	for _, cells := range rows {
		for i, c := range cells {
			if i > 0 {
				b.WriteString("  ")
			}
			pad := widths[i] - utf8.RuneCountInString(c)
			if i == len(cells)-1 {
				b.WriteString(strings.Repeat(" ", pad) + c)
			} else {
				b.WriteString(c + strings.Repeat(" ", pad))
			}
		}
		b.WriteString("\n")
	}
	if len(r.Warnings) > 0 {
		b.WriteString("warnings:\n")
		for _, w := range r.Warnings {
			fmt.Fprintf(&b, "  %s\n", w)
		}
	}
	if marked {
		b.WriteString("~ marks an estimate from too few observations for its quantile (see warnings).\n")
	}
	return b.String()
}

// stabilityWarnings says which quantiles rest on too few observations,
// or that there is none at all.
func stabilityWarnings(who string, qs []Quantile) []string {
	var w []string
	for _, q := range qs {
		switch {
		case !(float64(q.Count) > 0):
			return []string{fmt.Sprintf("%s: no observation in the window: quantiles unknown", who)}
		case !q.Stable:
			w = append(w, fmt.Sprintf("%s: p%s from %s observations is unstable (need >= %s)", who, qLabel(q.Q), fmtPlain(float64(q.Count)), fmtPlain(math.Round(histogram.MinCount(q.Q)))))
		}
	}
	return w
}

// histogramUnit is the unit of a histogram's values: the catalog's for a
// signal or a known metric, else guessed from the name.
func histogramUnit(cat *Catalog, metric string, names []string) string {
	unit := ""
	if spec, ok := cat.Signal(SignalID(metric)); ok {
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
	case unit == UnitSeconds || (unit == "" && strings.HasSuffix(names[0], "_seconds")):
		return "s"
	case unit == UnitTokens || (unit == "" && strings.HasSuffix(names[0], "_tokens")):
		return "tokens"
	}
	return ""
}
