package diagnose

import (
	"time"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/snapshot"
)

// ReadMargin widens a read range beyond snapshot.Lookback on both sides:
// one scrape interval, taken as one minute (the longest interval vLLM
// fleets are commonly scraped at), so that the samples standing for a
// window's edges are read even when scrapes are late.
const ReadMargin = time.Minute

// processStart is the Prometheus client libraries' process start time,
// whose change marks a restart.
const processStart = "process_start_time_seconds"

// Selection returns what a diagnosis under o needs from the evidence, as
// the selection fields of snapshot.Options (Metrics, Start, End, and
// NonNegative: the catalog's counting gauges, whose negative samples are
// impossible; the caller sets the others): a reader that honours them
// reads less and the diagnosis is the same.
//
// Metrics are the catalog's EvidenceMetrics (o.Catalog, or the default).
// The range is the whole evidence, unless both o.Baseline and o.Incident
// are given: then it spans them, from the earlier start less
// snapshot.Lookback and ReadMargin (the start edge of a window is the last
// sample before it within Lookback) to the later end plus ReadMargin. With
// given windows, the timelines and the change point the report shows
// beside them are computed over that range, not the whole evidence; the
// verdict, the window measures and the facts from them are those of a full
// read. A given Incident alone is read with the MaxWindow before it, its
// "preceding" baseline. Without an Incident the change-point search needs
// the whole history (and so does a preceding baseline with a negative
// MaxWindow): Start and End are zero.
func (o Options) Selection() snapshot.Options {
	cat := catalog.Default()
	if o.Catalog != nil {
		cat = *o.Catalog
	}
	sel := snapshot.Options{Metrics: cat.EvidenceMetrics(), NonNegative: cat.NonNegativeMetrics()}
	if base := o.baselineRead(); !base.IsZero() && !o.Incident.IsZero() {
		sel.Start, sel.End = readRange(base, o.Incident)
	}
	return sel
}

// preceding is the "preceding" baseline a given Incident alone is
// compared with, before it is clipped to the evidence: the MaxWindow
// before the incident; zero when Baseline is given, Incident is not, or
// MaxWindow is negative (everything before the incident).
func (o Options) preceding() snapshot.Window {
	mw := o.MaxWindow
	if mw == 0 {
		mw = DefaultMaxWindow
	}
	if !o.Baseline.IsZero() || o.Incident.IsZero() || mw < 0 {
		return snapshot.Window{}
	}
	return snapshot.Window{Start: o.Incident.Start.Add(-mw), End: o.Incident.Start}
}

// baselineRead is the baseline window to read: Baseline, or the preceding
// one.
func (o Options) baselineRead() snapshot.Window {
	if !o.Baseline.IsZero() {
		return o.Baseline
	}
	return o.preceding()
}

// Selection returns what FleetQuantiles needs from the evidence for r, as
// the selection fields of snapshot.Options: the histogram families of
// r.Metric (a signal's candidates under every prefix, or the one family
// named) with process_start_time_seconds, which tells restarts apart, and, for a given r.Window, its range widened by snapshot.Lookback
// and ReadMargin before and ReadMargin after. A zero Window (each
// replica's first to last scrape) reads the whole range.
func (r QuantileRequest) Selection() snapshot.Options {
	cat := catalog.Default()
	if r.Catalog != nil {
		cat = *r.Catalog
	}
	sel := snapshot.Options{NonNegative: cat.NonNegativeMetrics()}
	if names, err := histogramNames(&cat, r.Metric); err == nil {
		// The re-exported names (ray_vllm:, kserve_vllm:), which
		// FleetQuantiles resolves when the evidence has them.
		reexported := cat
		for _, p := range catalog.ReexportPrefixes() {
			reexported, _ = reexported.WithPrefix(p)
		}
		if spec, ok := reexported.Signal(catalog.SignalID(r.Metric)); ok {
			names = spec.Metrics()
		}
		// process_start_time_seconds tells a restart from scrapes out of
		// order (snapshot's counter check): without it, a histogram alone
		// dropping at every scrape reads as a restart at each.
		sel.Metrics = append(names, processStart)
	}
	if !r.Window.IsZero() {
		sel.Start, sel.End = readRange(r.Window)
	}
	return sel
}

// ReadRanges returns the time ranges a diagnosis under o reads: none (the
// whole evidence) unless o.Incident is given with o.Baseline or a bounded
// "preceding" baseline (see Selection), else each window widened as
// Selection widens their span, in time order, and merged when they
// overlap. Reading each range apart (and merging the
// evidence, see snapshot.Builder.AddEvidence) skips the history between
// the windows; the result diagnoses as a read of Selection's single range
// does, for the timeline grid starts at the first scrape read either way.
func (o Options) ReadRanges() []snapshot.Window {
	base := o.baselineRead()
	if base.IsZero() || o.Incident.IsZero() {
		return nil
	}
	var rs []snapshot.Window
	for _, w := range []snapshot.Window{base, o.Incident} {
		s, e := readRange(w)
		rs = append(rs, snapshot.Window{Start: s, End: e})
	}
	if rs[1].Start.Before(rs[0].Start) {
		rs[0], rs[1] = rs[1], rs[0]
	}
	if !rs[1].Start.After(rs[0].End) {
		if rs[1].End.After(rs[0].End) {
			rs[0].End = rs[1].End
		}
		rs = rs[:1]
	}
	return rs
}

// readRange spans the windows, widened as Selection documents.
func readRange(ws ...snapshot.Window) (start, end time.Time) {
	for _, w := range ws {
		if start.IsZero() || w.Start.Before(start) {
			start = w.Start
		}
		if w.End.After(end) {
			end = w.End
		}
	}
	return start.Add(-snapshot.Lookback - ReadMargin), end.Add(ReadMargin)
}
