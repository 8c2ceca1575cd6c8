// Package histogram is the arithmetic of classic Prometheus histograms
// (cumulative counts at "le" upper bounds) that whyslow's diagnoses stand
// on: validation, window deltas with counter-reset detection, fleet merge,
// quantiles identical to PromQL's histogram_quantile with the bucket that
// bounds them, fractions below a threshold (SLO attainment), and conversion
// from native histograms with custom buckets (NHCB).
//
// The package does no I/O, reads no clock and holds no state; its values
// print well (String methods) and never change the inputs they are given.
// It is the leaf of whyslow: it must not import any other whyslow package,
// and knows nothing of vLLM, files or time.
//
// # Quantiles
//
// Histogram.Quantile returns exactly what PromQL's histogram_quantile
// returns for classic buckets (promql.BucketQuantile in Prometheus 3),
// every edge case included, plus what PromQL does not say: the edges of the
// bucket that holds the rank (Estimate.Lower, Estimate.Upper; the true
// quantile lies there, the value only interpolates), the number of
// observations behind it, whether the counts had to be repaired, and a
// stability verdict.
//
// # Stability rule
//
// A q-quantile is called stable when at least MinTail (10) observations are
// expected on each side of its rank, i.e. count >= MinCount(q) =
// 10/min(q, 1-q): 20 for a p50, 200 for a p95, 1,000 for a p99. A p99 from
// 40 requests is reported, with its value, as unstable. Judge counts, not
// rates: take the quantile of an increase (Sub) rather than of a
// per-second rate, or scale the rate back by its window.
//
// # Fleet merge
//
// A fleet quantile is the quantile of the merged histogram: add the buckets
// of all replicas (Merge), then take the quantile. The average of
// per-replica p95s is not the p95 of anything; with one hot replica it is far
// off. Merge compares bounds as numbers (le="1", "1.0" and "1e0" are one
// bucket). Replicas with the same layout add exactly on every bucket. When
// layouts differ, for example one replica on a vLLM version with other
// buckets, Merge keeps only the bounds all replicas share, where cumulative
// counts still add exactly, and reports the others in Merged.Dropped. It
// refuses to do what PromQL's sum by (le) does silently over mixed layouts:
// add up a union of le values whose cumulative counts then no longer
// describe one distribution.
//
// # Windows and resets
//
// Sub(later, earlier) is the histogram of the observations made between two
// samples. If any count went down the process restarted: Sub reports
// ErrCounterReset and returns later, the increase since the restart,
// instead of negative counts.
//
// # Native histograms with custom buckets
//
// FromNHCB turns an NHCB (schema -53) into a Histogram, after which the
// classic semantics above apply: the answers PromQL gives for the same data
// as _bucket series. PromQL's own histogram_quantile on an NHCB
// (promql.HistogramQuantile) skips empty buckets while it searches for the
// rank: a rank exactly at the top of a bucket followed by empty buckets is
// answered with that top by the classic path and with the bottom of the next
// populated bucket by the native one, and q=0 over empty lowest buckets is
// NaN on the classic path but the first populated bucket's lower edge on the
// native one (both pinned in TestNHCBDiffersFromPromQLNative). Exponential
// native histograms are not supported (ErrNotCustomBuckets).
package histogram
