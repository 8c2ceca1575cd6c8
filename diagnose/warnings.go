package diagnose

import (
	"errors"
	"fmt"

	"github.com/whyslow/whyslow/report"
	"github.com/whyslow/whyslow/snapshot"
)

// Sentinels of the diagnosis' own warnings. An entry of
// report.Report.WarningDetails of kind report.WarnWindow or
// report.WarnSignal unwraps to one of them (errors.Is), as a reading
// warning unwraps to snapshot's sentinels and a catalog warning to
// catalog's; a rules warning unwraps to rules.ErrUnusedFact or
// rules.ErrNotEvaluable.
var (
	// ErrNoChangePoint: the change-point search proposed nothing, so the
	// windows are the halves of the evidence.
	ErrNoChangePoint = errors.New("no change point")
	// ErrIncidentEnded: the symptoms rose and fell back before the
	// evidence ended; the incident window is the segment between.
	ErrIncidentEnded = errors.New("incident ended before the evidence")
	// ErrWindowClipped: a window given reaches beyond the evidence and was
	// clipped to its first or last scrape.
	ErrWindowClipped = errors.New("window clipped to the evidence")
	// ErrNoBaseline: there is no baseline window; the symptoms are judged
	// against SLO targets only.
	ErrNoBaseline = errors.New("no baseline")
	// ErrLifetimeWindow: a window is the counters' lifetime since each
	// process started (one or two scrapes per replica), not an interval
	// that was measured.
	ErrLifetimeWindow = errors.New("lifetime window")
	// ErrRestart: a replica restarted (a counter reset inside a window, or
	// a new process start time); its counts are lower bounds.
	ErrRestart = errors.New("replica restarted")
	// ErrLowCount: too few requests in the incident window for the
	// decision map.
	ErrLowCount = errors.New("low sample count")
	// ErrMixedRoles: prefill and decode instances share the fleet's
	// histograms, and a decode instance's TTFT under-reports the user's.
	ErrMixedRoles = errors.New("prefill and decode roles mixed")
)

// warnf returns the diagnosis' warning of the given kind (report.WarnWindow
// or report.WarnSignal) that unwraps to sentinel, its text formatted.
func warnf(kind string, sentinel error, format string, args ...any) report.Warning {
	return report.Warning{Kind: kind, Severity: snapshot.SeverityWarning, Text: fmt.Sprintf(format, args...), Err: sentinel}
}
