// Package store is the columnar store of the readers of sources that keep
// no metric types, a TSDB directory (snapshot/tsdb) and a
// Prometheus-compatible server (snapshot/promapi): float series appended
// as they are read, labels once per series, then classified into the
// evidence model of package snapshot (Columns.Evidence), so that the same
// samples make the same snapshot.Evidence from either source. Sketch is
// what such a reader shows Options.ForTarget before it reads a sample.
//
// It does no I/O and imports no whyslow package but snapshot and
// histogram.
package store
