// Package promapi reads evidence from Prometheus-compatible servers
// (Prometheus, Thanos Query, Mimir and Cortex, VictoriaMetrics) into
// snapshot's Evidence. Importing it registers the reader with
// snapshot.RegisterSource for http:// and https:// paths, so snapshot.Read
// reads a server URL as it reads a TSDB directory:
//
//	import _ "github.com/whyslow/whyslow/snapshot/promapi"
//
//	ctx = promapi.WithConfig(ctx, promapi.Config{Concurrency: 2})
//	ev, err := snapshot.Read(ctx, []string{"http://prometheus:9090"}, opts)
//
// Read fetches raw samples per family, time chunk and batch of pods: by
// the remote read protocol (/api/v1/read) where the server serves it,
// else with one range-vector selector (metric[RANGE] at the end of the
// chunk, /api/v1/query) each, so that whyslow computes increases and
// fleet quantiles exactly as from a TSDB directory. Servers return no
// metric types: the samples are classified by name and labels as
// snapshot classifies a /federate dump. ReadEach (snapshot.ReadEach of a
// URL) hands the targets over a batch of pods at a time.
//
// Config.Engine is the other way in: a snapshot.Engine whose histogram
// increases the server sums (PromQL aggregations with whyslow's edge
// semantics), for a diagnosis that searches a long range for its change
// point (diagnose.Surveyor.PushDown).
package promapi
