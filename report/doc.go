// Package report is the schema of a whyslow report and its text, Markdown
// and JSON writers, all over one document model (Report.Layout gives the
// Document every writer renders). It shows what package diagnose decided
// and never decides itself: no verdict, hot spot or change is recomputed
// here. Of whyslow it imports only histogram, catalog and rules (snapshot
// only through catalog), never diagnose, and not its own html subpackage,
// which holds the plotting dependencies.
//
// A Report is a plain value: Report.String and WriteText for a terminal or
// notebook, WriteMarkdown for a postmortem, WriteJSON for tools (schema
// version SchemaVersion; non-finite numbers are null). CompareTable is the
// before and after table of p50 and p95 per signal; QuantileReport is what
// diagnose.FleetQuantiles returns.
package report
