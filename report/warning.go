package report

import "github.com/whyslow/whyslow/snapshot"

// Warning is one non-fatal problem of a report, typed. It is an error
// whose Unwrap is the problem it reports: a reading warning unwraps to
// its snapshot.Problem, a catalog warning to the resolution's error, the
// diagnosis' own to diagnose's sentinels (diagnose.ErrNoChangePoint, ...)
// and the rules' to theirs, so that errors.Is finds them
// (snapshot.ErrTimeOutlier, catalog.ErrVersionSkew, ...) as
// util/annotations lets PromQL's callers find theirs.
type Warning struct {
	// Kind says where it comes from: one of the Warn* kinds.
	Kind string `json:"kind"`
	// Severity is snapshot.SeverityError (part of the evidence could not
	// be used: the result is partial) or snapshot.SeverityWarning (the
	// result stands, with a caveat), as snapshot grades its problems;
	// JSON holds its name, "error" or "warning".
	Severity snapshot.Severity `json:"severity"`
	// Text is the warning as Report.Warnings prints it.
	Text string `json:"text"`
	// Err is the problem the warning reports: a snapshot.Problem, a
	// resolution's error, a diagnose or rules sentinel (a rules.Warning);
	// nil for a report read back from JSON.
	Err error `json:"-"`
}

// Error returns the warning's text.
func (w Warning) Error() string { return w.Text }

// Unwrap returns the problem the warning reports, or nil.
func (w Warning) Unwrap() error { return w.Err }

// Kinds of Warning.
const (
	// WarnReading: a problem met while reading the evidence (snapshot).
	WarnReading = "reading"
	// WarnCatalog: metric resolution: version skew, a signal missing on
	// some targets, configuration drift, a target that is not vLLM.
	WarnCatalog = "catalog"
	// WarnWindow: how the windows were chosen (no change point, a
	// lifetime window).
	WarnWindow = "window"
	// WarnSignal: measuring signals and facts (low counts, resets,
	// dropped buckets).
	WarnSignal = "signal"
	// WarnRules: the decision map's evaluation.
	WarnRules = "rules"
)

// AddWarning appends w to r.WarningDetails and its text to r.Warnings.
func (r *Report) AddWarning(w Warning) {
	r.Warnings = append(r.Warnings, w.Text)
	r.WarningDetails = append(r.WarningDetails, w)
}
