// Package whyslow diagnoses slow vLLM serving fleets offline, from the
// Prometheus evidence that was saved before the pods restarted.
//
// "It got slow" has many causes. whyslow reads preserved evidence —
// /metrics dumps (Prometheus text 0.0.4 and OpenMetrics 1.0, gzip or not),
// dump directories, /federate dumps and Prometheus TSDB data directories
// (blocks and the WAL head, always read-only) — merges histogram buckets
// across the fleet before it computes quantiles, splits the slowness into
// the four user symptoms (late first token, slow generation, slow tail, not
// completing), and runs a decision map from symptoms and metric combinations
// to bottleneck hypotheses. Each hypothesis comes with its evidence,
// counter-evidence, next checks, mitigations and a single-variable
// experiment, whose results whyslow can later judge (adopt or reject).
//
// The module is a set of small packages, in the order data flows:
//
//   - [github.com/whyslow/whyslow/snapshot] reads evidence into one model:
//     targets (replicas), each with a timeline of scrapes and metric
//     families; window helpers give counter increases with reset detection
//     and gauge statistics.
//   - [github.com/whyslow/whyslow/histogram] is the math: classic
//     histograms, quantiles identical to PromQL's histogram_quantile with
//     the bucket bounds beside them, exact fleet merges, window deltas.
//   - [github.com/whyslow/whyslow/diagnose] knows vLLM: the metric catalog
//     across versions, baseline and incident windows, fleet and per-replica
//     signals, symptoms, and reports.
//   - [github.com/whyslow/whyslow/rules] is the decision map as data, with
//     pure evaluation: facts in, ranked findings out.
//
// The whyslow command (cmd/whyslow) is a thin layer over these packages.
// Package whyslow itself holds no code; it documents the module.
package whyslow
