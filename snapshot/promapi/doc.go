// Package promapi reads evidence from Prometheus-compatible servers
// (Prometheus, Thanos Query, Mimir and Cortex, VictoriaMetrics) through
// the Prometheus HTTP query API, into snapshot's Evidence. Importing it
// registers the reader with snapshot.RegisterSource for http:// and
// https:// paths, so snapshot.Read reads a server URL as it reads a TSDB
// directory:
//
//	import _ "github.com/whyslow/whyslow/snapshot/promapi"
//
//	ctx = promapi.WithConfig(ctx, promapi.Config{Concurrency: 2})
//	ev, err := snapshot.Read(ctx, []string{"http://prometheus:9090"}, opts)
//
// It fetches raw samples, never server-side aggregates: one range-vector
// selector (metric[RANGE] at the end of the range, /api/v1/query) per
// family, time chunk and batch of pods, so that whyslow computes
// increases and fleet quantiles exactly as from a TSDB directory.
//
// Servers return no metric types, so the samples are classified by name
// and labels exactly as snapshot classifies a /federate dump: they are
// handed to snapshot.Builder as timestamped text exposition.
//
// The remote-read API is not used.
package promapi
