package main

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/whyslow/whyslow/alerts"
	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/diagnose"
	"github.com/whyslow/whyslow/internal/textfmt"
	"github.com/whyslow/whyslow/rules"
	"github.com/whyslow/whyslow/snapshot"
	"github.com/whyslow/whyslow/snapshot/promapi"
)

// A long history on a server is searched for its change point in the
// recording rules of whyslow alerts, and only the time around the change
// is surveyed (--records). The record names read are a public contract
// (README, "Reading from a server").
var (
	// changeRecords are the records read, each with the change-point
	// series it stands for (diagnose.FleetSeries).
	changeRecords = []struct {
		series string
		fact   rules.FactID
	}{
		{"ttft_p95", rules.TTFTP95},
		{"tpot_p95", rules.TPOTP95},
		{"itl_p95", rules.ITLP95},
		{"ttft_mean", rules.TTFTMean},
		{"waiting", rules.WaitingMean},
	}
	// recordsAround is how much time either side of the change the
	// records show is surveyed: a range longer than twice this is
	// searched in the records first.
	recordsAround = 3 * time.Hour
	// recordsCover is the least share of the intervals in which the
	// fleet was scraped that the records must have a value in: records
	// that begin later than the evidence cannot show an earlier change.
	recordsCover = 0.9
)

// recordsIntervals is about how many intervals the records are read in.
const recordsIntervals = 720

// surveyRange is the range --records chooses to survey on the server
// of eng (at path) under --range, or zero for the whole range, with its
// note (nil when the recording rules were not consulted).
func (f *diagnoseFlags) surveyRange(eng *promapi.Engine, path string, opts diagnose.Options, sel snapshot.Options) (snapshot.Window, *snapshot.Problem) {
	rng, err := parseWindow(f.server.readRange)
	if err != nil || !f.records || rng.IsZero() {
		return snapshot.Window{}, nil
	}
	cat := catalog.Default()
	if opts.Catalog != nil {
		cat = *opts.Catalog
	}
	return recordsRange(eng, promapi.Redact(path), rng, opts, f.match != "" || len(sel.Matchers) > 0, cat.SignalMetrics(catalog.SignalWaiting))
}

// recordsRange searches the range rng of a server (eng) for its change
// point in the whyslow:* recording rules (the series of opts.Model when
// set), and returns the part of rng to survey: recordsAround either side
// of the change they show, or the zero Window to survey rng whole (no
// records, too few, no change in them, a failure to read them, or a read
// that selects part of the fleet, part, which the records cannot show).
// The note says which, and what the records showed; it is nil when rng is
// too short to be searched so. The fleet counts as scraped at an
// interval's end where a series of a metric of present (the waiting
// requests' names) stands for it.
func recordsRange(eng *promapi.Engine, red string, rng snapshot.Window, opts diagnose.Options, part bool, present []string) (snapshot.Window, *snapshot.Problem) {
	if rng.Duration() <= 2*recordsAround {
		return snapshot.Window{}, nil
	}
	note := func(sev snapshot.Severity, format string, args ...any) *snapshot.Problem {
		return &snapshot.Problem{Severity: sev, File: red, Offset: -1, Err: fmt.Errorf("records: "+format, args...)}
	}
	whole := fmt.Sprintf("surveyed the whole range %s", rng)
	if part {
		return snapshot.Window{}, note(snapshot.SeverityInfo, "not read: the recording rules hold the whole fleet, and the read selects part of it (--match); %s", whole)
	}
	step := max(time.Minute, (rng.Duration() / recordsIntervals).Round(time.Minute))
	for rng.Duration()/step > recordsIntervals {
		step += time.Minute
	}
	n := int(rng.Duration() / step)
	grid := snapshot.Grid(snapshot.Window{Start: rng.End.Add(-time.Duration(n) * step), End: rng.End}, step)
	type recorded struct {
		series string
		tl     promapi.Timeline
	}
	var all []recorded
	var read []string
	covered := make([]bool, len(grid))
	sets := map[string]bool{}
	for _, c := range changeRecords {
		name := alerts.RecordName(c.fact)
		tls, err := eng.Timelines(fmt.Sprintf("avg_over_time(%s[%s])", name, model.Duration(step)), grid)
		if err != nil {
			return snapshot.Window{}, note(snapshot.SeverityWarning, "reading %s: %v; %s", name, err, whole)
		}
		if len(tls) > 0 {
			read = append(read, name)
		}
		for _, tl := range tls {
			if m := tl.Labels.Get("model_name"); opts.Model != "" && m != "" && m != opts.Model {
				continue // --model: another model's
			}
			for i, v := range tl.Values {
				covered[i] = covered[i] || !math.IsNaN(v)
			}
			sets[tl.Labels.String()] = true // avg_over_time drops the name
			all = append(all, recorded{c.series, tl})
		}
	}
	// Series are named by their labels where the records hold several
	// label sets (models).
	series := make([]diagnose.FleetSeries, len(all))
	for i, r := range all {
		series[i] = diagnose.FleetSeries{Name: r.series, Values: r.tl.Values}
		if len(sets) > 1 {
			series[i].Name += r.tl.Labels.String()
		}
	}
	if len(read) == 0 {
		return snapshot.Window{}, note(snapshot.SeverityInfo, "the server holds none of the recording rules %s over %s (whyslow alerts writes them); %s",
			strings.Join(recordNames(), ", "), rng, whole)
	}
	if len(all) == 0 {
		return snapshot.Window{}, note(snapshot.SeverityInfo, "the recording rules %s hold no series of model_name %q over %s; %s",
			strings.Join(read, ", "), opts.Model, rng, whole)
	}
	quoted := make([]string, len(present))
	for i, m := range present {
		quoted[i] = regexp.QuoteMeta(m)
	}
	fleet, err := eng.Timelines(fmt.Sprintf("count({__name__=~%q})", strings.Join(quoted, "|")), grid)
	if err != nil {
		return snapshot.Window{}, note(snapshot.SeverityWarning, "counting the fleet's replicas: %v; %s", err, whole)
	}
	scraped, both := 0, 0
	for _, tl := range fleet {
		for i, v := range tl.Values {
			if v > 0 {
				scraped++
				if covered[i] {
					both++
				}
			}
		}
	}
	if scraped == 0 || float64(both) < recordsCover*float64(scraped) {
		return snapshot.Window{}, note(snapshot.SeverityInfo, "the recording rules %s have values in %d of the %d %s intervals of %s in which the fleet was scraped (under %.0f%%); %s",
			strings.Join(read, ", "), both, scraped, textfmt.Duration(step), rng, 100*recordsCover, whole)
	}
	cp, err := diagnose.LocateChange(grid, series, opts)
	if err != nil {
		return snapshot.Window{}, note(snapshot.SeverityWarning, "%v; %s", err, whole)
	}
	searched := fmt.Sprintf("the change-point search over %s read the recording rules %s (avg_over_time per %s interval)",
		rng, strings.Join(read, ", "), textfmt.Duration(step))
	if cp == nil {
		return snapshot.Window{}, note(snapshot.SeverityInfo, "%s and found no change; %s", searched, whole)
	}
	w := snapshot.Window{Start: cp.Time.Add(-recordsAround), End: cp.Time.Add(recordsAround)}
	if w.Start.Before(rng.Start) {
		w.Start = rng.Start
	}
	if w.End.After(rng.End) {
		w.End = rng.End
	}
	var moved []string
	for _, s := range cp.Signals {
		moved = append(moved, s.Series)
	}
	return w, note(snapshot.SeverityInfo, "%s: a change at %s (score %.1f; %s moved); surveyed %s around it (--records=false surveys the whole range)",
		searched, cp.Time.UTC().Format(time.RFC3339), cp.Score, strings.Join(moved, ", "), w)
}

// recordNames are the names of changeRecords.
func recordNames() []string {
	out := make([]string, len(changeRecords))
	for i, c := range changeRecords {
		out[i] = alerts.RecordName(c.fact)
	}
	return out
}
