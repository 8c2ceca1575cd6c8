// The report schema and its text, Markdown and JSON writers live in
// package report; Diagnose builds a report.Report. These names are
// report's, kept here so that code written against diagnose before the
// move compiles unchanged (rep.WriteText, rep.WriteMarkdown, rep.WriteJSON
// and rep.String work as before). The HTML form is package report/html.

package diagnose

import (
	"github.com/whyslow/whyslow/histogram"
	"github.com/whyslow/whyslow/report"
	"io"
)

// Types of package report.
type (
	// Report is report.Report: what Diagnose returns.
	Report = report.Report
	// ChangePoint is report.ChangePoint.
	ChangePoint = report.ChangePoint
	// CompareRow is report.CompareRow.
	CompareRow = report.CompareRow
	// Dimension is report.Dimension.
	Dimension = report.Dimension
	// FactValue is report.FactValue.
	FactValue = report.FactValue
	// Float is report.Float.
	Float = report.Float
	// Inputs is report.Inputs.
	Inputs = report.Inputs
	// Measure is report.Measure.
	Measure = report.Measure
	// Point is report.Point.
	Point = report.Point
	// QuantileReport is report.QuantileReport: what FleetQuantiles returns.
	QuantileReport = report.QuantileReport
	// Quantile is report.Quantile.
	Quantile = report.Quantile
	// Settings is report.Settings.
	Settings = report.Settings
	// Signal is report.Signal.
	Signal = report.Signal
	// Signals is report.Signals.
	Signals = report.Signals
	// Timeline is report.Timeline.
	Timeline = report.Timeline
	// WindowInfo is report.WindowInfo.
	WindowInfo = report.WindowInfo
	// WindowSpan is report.WindowSpan.
	WindowSpan = report.WindowSpan
	// Windows is report.Windows.
	Windows = report.Windows
)

// SchemaVersion is report.SchemaVersion.
const SchemaVersion = report.SchemaVersion

// CompareTable is report.CompareTable.
func CompareTable(r *Report) []CompareRow { return report.CompareTable(r) }

// QuantileOf is report.QuantileOf.
func QuantileOf(e histogram.Estimate) Quantile { return report.QuantileOf(e) }

// WriteCompareText is report.WriteCompareText.
func WriteCompareText(w io.Writer, rows []CompareRow) error { return report.WriteCompareText(w, rows) }

// WriteCompareMarkdown is report.WriteCompareMarkdown.
func WriteCompareMarkdown(w io.Writer, rows []CompareRow) error {
	return report.WriteCompareMarkdown(w, rows)
}
