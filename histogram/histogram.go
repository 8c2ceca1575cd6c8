package histogram

// Histogram is a classic Prometheus histogram: cumulative counts at
// ascending upper bounds ("le"), plus the sum and count of all
// observations.
//
// The layout is struct-of-arrays so that a series of histograms sharing one
// set of bounds can be stored as one Bounds slice and one flat Counts slice,
// and each sample viewed as a Histogram without copying.
//
// A Histogram read from real evidence may be invalid (no +Inf bucket, bounds
// out of order, counts that go down); Validate says what is wrong.
// Functions in this package never modify the Histograms they are given.
type Histogram struct {
	// Bounds are the upper bounds of the buckets, ascending; the last one
	// must be +Inf for a valid histogram.
	Bounds []float64
	// Counts are cumulative: Counts[i] is the number of observations
	// less than or equal to Bounds[i]. len(Counts) == len(Bounds).
	Counts []float64
	// Count is the total number of observations (the _count sample);
	// NaN when unknown.
	Count float64
	// Sum is the sum of all observed values (the _sum sample); NaN when
	// unknown.
	Sum float64
}
