package diagnose

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/whyslow/whyslow/snapshot"
)

func TestReadRanges(t *testing.T) {
	t0 := time.Date(2026, 9, 22, 10, 0, 0, 0, time.UTC)
	w := func(from, to time.Duration) snapshot.Window {
		return snapshot.Window{Start: t0.Add(from), End: t0.Add(to)}
	}
	widen := snapshot.Lookback + ReadMargin
	// Far apart, incident first: two ranges in time order.
	got := Options{Baseline: w(3*time.Hour, 4*time.Hour), Incident: w(0, time.Hour)}.ReadRanges()
	assert.Equal(t, []snapshot.Window{
		{Start: t0.Add(-widen), End: t0.Add(time.Hour + ReadMargin)},
		{Start: t0.Add(3*time.Hour - widen), End: t0.Add(4*time.Hour + ReadMargin)},
	}, got)
	// Closer than the widening: one range.
	got = Options{Baseline: w(0, time.Hour), Incident: w(time.Hour+2*time.Minute, 2*time.Hour)}.ReadRanges()
	assert.Equal(t, []snapshot.Window{{Start: t0.Add(-widen), End: t0.Add(2*time.Hour + ReadMargin)}}, got)
	// The incident alone: with the MaxWindow before it, its "preceding"
	// baseline; the whole evidence when MaxWindow is negative.
	got = Options{Incident: w(time.Hour, 2*time.Hour)}.ReadRanges()
	assert.Equal(t, []snapshot.Window{{Start: t0.Add(time.Hour - DefaultMaxWindow - widen), End: t0.Add(2*time.Hour + ReadMargin)}}, got)
	sel := Options{Incident: w(time.Hour, 2*time.Hour), MaxWindow: 10 * time.Minute}.Selection()
	assert.Equal(t, t0.Add(time.Hour-10*time.Minute-widen), sel.Start)
	assert.Equal(t, t0.Add(2*time.Hour+ReadMargin), sel.End)
	assert.Nil(t, Options{Incident: w(0, time.Hour), MaxWindow: -1}.ReadRanges())
	sel = Options{Incident: w(0, time.Hour), MaxWindow: -1}.Selection()
	assert.True(t, sel.Start.IsZero() && sel.End.IsZero())
	assert.NotEmpty(t, sel.Metrics)
	// The library reads as the command does: a negative queue length is
	// impossible, and the reader leaves it out with a problem.
	assert.Contains(t, sel.NonNegative, "vllm:num_requests_waiting")
	assert.NotContains(t, sel.NonNegative, "vllm:time_to_first_token_seconds", "histograms are checked as histograms")

	q := QuantileRequest{Metric: "ttft", Window: w(0, 30*time.Minute)}.Selection()
	assert.Contains(t, q.Metrics, "vllm:time_to_first_token_seconds")
	assert.Contains(t, q.Metrics, "ray_vllm:time_to_first_token_seconds")
	assert.Contains(t, q.Metrics, "process_start_time_seconds", "tells restarts from scrapes out of order")
	assert.Equal(t, t0.Add(-widen), q.Start)
	assert.Equal(t, t0.Add(30*time.Minute+ReadMargin), q.End)
	q = QuantileRequest{Metric: "vllm:e2e_request_latency_seconds_bucket"}.Selection()
	assert.Equal(t, []string{"vllm:e2e_request_latency_seconds", "process_start_time_seconds"}, q.Metrics)
	assert.True(t, q.Start.IsZero())
	assert.Contains(t, q.NonNegative, "vllm:kv_cache_usage_perc")
}
