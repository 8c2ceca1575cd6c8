package histogram

import (
	"fmt"
	"math"

	promhistogram "github.com/prometheus/prometheus/model/histogram"
)

// FromNHCB converts a Prometheus native histogram with custom buckets
// (NHCB, schema -53, as Prometheus 3 stores classic histograms scraped with
// convert_classic_histograms_to_nhcb) into a classic Histogram with the same
// bounds plus +Inf, cumulative counts, Count and Sum. Convert an integer
// histogram with h.ToFloat(nil) first.
//
// After conversion Quantile and Fraction follow PromQL's classic-bucket
// semantics, the answers PromQL gives for the same data as _bucket series.
// PromQL's histogram_quantile on the NHCB itself (promql.HistogramQuantile)
// skips empty buckets while it looks for the rank, which changes two cases:
// a rank exactly at the top of a bucket followed by empty buckets (buckets
// (0,1]:5 (1,2]:0 (2,3]:0 (3,+Inf]:5 at q=0.5: classic 1, the top of the
// bucket that reaches the rank; native 3, the bottom of the next populated
// bucket), and q=0 with empty lowest buckets (classic NaN from 0/0, native
// the lower edge of the first populated bucket). It also searches from the
// top for q >= 0.5, which can change the last bits, and never needs the
// monotonicity repair.
//
// Exponential schemas give an error wrapping ErrNotCustomBuckets.
func FromNHCB(fh *promhistogram.FloatHistogram) (Histogram, error) {
	if fh == nil {
		return Histogram{}, fmt.Errorf("histogram: nil native histogram")
	}
	if !fh.UsesCustomBuckets() {
		return Histogram{}, fmt.Errorf("%w: schema %d (only custom buckets, schema %d, are)",
			ErrNotCustomBuckets, fh.Schema, promhistogram.CustomBucketsSchema)
	}
	n := len(fh.CustomValues) + 1
	h := Histogram{
		Bounds: make([]float64, n),
		Counts: make([]float64, n),
		Count:  fh.Count,
		Sum:    fh.Sum,
	}
	copy(h.Bounds, fh.CustomValues)
	h.Bounds[n-1] = math.Inf(+1)
	for it := fh.PositiveBucketIterator(); it.Next(); {
		b := it.At()
		if b.Index < 0 || int(b.Index) >= n {
			return Histogram{}, fmt.Errorf("histogram: NHCB bucket index %d outside its %d custom bounds", b.Index, n-1)
		}
		h.Counts[b.Index] += b.Count
	}
	for i := 1; i < n; i++ {
		h.Counts[i] += h.Counts[i-1]
	}
	return h, nil
}
