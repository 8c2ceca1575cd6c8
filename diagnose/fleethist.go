package diagnose

import (
	"fmt"
	"maps"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/report"
	"github.com/whyslow/whyslow/snapshot"
)

// The one path by which a fleet histogram is built, used by Diagnose (the
// scope's replicaHist and fleetHist, and the timelines' intervals),
// FleetQuantiles and FleetQuantilesBy: per replica, the increase over the
// window of the family the catalog resolved, with counter resets handled,
// the engines of the pod merged and the catalog's unit scale applied
// (replicaHistogram, or replicaHistogramSteps over a grid of windows);
// then the exact merge of the replicas' increases on their shared bounds
// (mergeFleet). Quantiles are taken after the merge, never averaged.

// replicaHistogram is one replica's histogram increase over w of the
// series of fam matching match, with the bucket bounds (and sum)
// multiplied by scale (catalog.Candidate.ScaleFor: milliseconds to seconds).
func replicaHistogram(fam *snapshot.Family, scale float64, w snapshot.Window, match map[string]string) (snapshot.HistogramIncrease, error) {
	inc, err := fam.HistogramIncrease(w, match)
	if err == nil && scale != 1 {
		inc.Histogram = scaleBounds(inc.Histogram, scale)
	}
	return inc, err
}

// replicaHistogramSteps is replicaHistogram over every window of grid, in
// one pass over the samples (snapshot.Family.HistogramIncreaseSteps).
func replicaHistogramSteps(fam *snapshot.Family, scale float64, grid []snapshot.Window, match map[string]string) []snapshot.Step[snapshot.HistogramIncrease] {
	steps := fam.HistogramIncreaseSteps(grid, match)
	if scale != 1 {
		for i := range steps {
			if steps[i].Err == nil {
				steps[i].Result.Histogram = scaleBounds(steps[i].Result.Histogram, scale)
			}
		}
	}
	return steps
}

// replicaHistogramEach is replicaHistogramSteps handed to fn window by
// window (snapshot.Family.HistogramIncreaseEach): inc may share memory
// with the samples and with the next window's increase (the scaled
// bounds too), so fn must not modify it nor keep it past its return.
func replicaHistogramEach(fam *snapshot.Family, scale float64, grid []snapshot.Window, match map[string]string, fn func(k int, inc snapshot.HistogramIncrease, err error)) {
	var bounds []float64 // the scaled bounds, reused while the layout is the same
	var from []float64   // the bounds they were scaled from
	fam.HistogramIncreaseEach(grid, match, func(k int, inc snapshot.HistogramIncrease, err error) {
		if err == nil && scale != 1 {
			// What scaleBounds returns, its bounds scaled once a layout.
			h := inc.Histogram
			if !sameFloats(from, h.Bounds) {
				from, bounds = h.Bounds, scaleBounds(h, scale).Bounds
			}
			h.Bounds, h.Sum = bounds, h.Sum*scale
			inc.Histogram = h
		}
		fn(k, inc, err)
	})
}

// sameFloats reports whether a and b are the same slice (same start and
// length), so that values scaled from a stand for b's.
func sameFloats(a, b []float64) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// mergeFleet merges the replicas' increases (snapshot.MergeHistogramIncreases:
// histogram.Merge on the bounds every replica shares, the others listed
// in Dropped).
func mergeFleet(incs []snapshot.HistogramIncrease) (snapshot.HistogramIncrease, error) {
	return snapshot.MergeHistogramIncreases(incs...)
}

// QuantileGroup is the fleet quantiles of one value of a split label.
type QuantileGroup struct {
	// Value is the label's value, e.g. "llama" for model_name.
	Value string
	// Report holds the quantiles; nil when Err is set.
	Report *report.QuantileReport
	// Err says why this value has no quantiles (no replica has the
	// histogram with that label value over the window).
	Err error
}

// FleetQuantilesBy answers FleetQuantiles once per value of label found on
// the requested histogram's series (those matching req.Match), in order
// of value, so that quantiles are never merged across, say, models. It
// returns an error when no series of the histogram carries label; a value
// whose quantiles cannot be computed is a group with Err set.
func FleetQuantilesBy(ev *snapshot.Evidence, req QuantileRequest, label string) ([]QuantileGroup, error) {
	c := catalog.Default()
	if req.Catalog != nil {
		c = *req.Catalog
	}
	c = c.ForEvidence(ev)
	names, err := histogramNames(&c, req.Metric)
	if err != nil {
		return nil, err
	}
	values := histogramLabelValues(ev, names, label, req.Match)
	if len(values) == 0 {
		return nil, fmt.Errorf("no series of %s carries label %q", req.Metric, label)
	}
	var groups []QuantileGroup
	for _, v := range values {
		r := req
		r.Catalog = &c
		r.Match = map[string]string{label: v}
		maps.Copy(r.Match, req.Match)
		rep, err := FleetQuantiles(ev, r)
		groups = append(groups, QuantileGroup{Value: v, Report: rep, Err: err})
	}
	return groups, nil
}
