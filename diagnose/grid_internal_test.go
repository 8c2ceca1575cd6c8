package diagnose

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTimelineGrid(t *testing.T) {
	t0 := time.Date(2026, 9, 22, 10, 0, 7, 0, time.UTC) // scrapes a few seconds past the minute
	for _, tc := range []struct {
		name            string
		span, interval  time.Duration
		given           time.Duration
		step            time.Duration
		start, end      time.Time
		intervals       int
		stagger         time.Duration // another replica's first scrape, earlier in the same minute
		sameWhenStagger bool
	}{
		{name: "15s scrapes, 1h", span: time.Hour, interval: 15 * time.Second, step: time.Minute,
			start: t0.Truncate(time.Minute), end: t0.Add(time.Hour).Truncate(time.Minute).Add(time.Minute), intervals: 61,
			stagger: 5 * time.Second, sameWhenStagger: true},
		{name: "90s scrapes round up to 2m", span: time.Hour, interval: 90 * time.Second, step: 2 * time.Minute, intervals: 31},
		{name: "24h at 15s: 720 intervals at most", span: 24 * time.Hour, interval: 15 * time.Second, step: 3 * time.Minute, intervals: 481},
		{name: "6h at 15s: one minute", span: 6 * time.Hour, interval: 15 * time.Second, step: time.Minute, intervals: 361},
		{name: "a week: 15m", span: 7 * 24 * time.Hour, interval: 15 * time.Second, step: 15 * time.Minute, intervals: 673},
		{name: "given step kept", span: time.Hour, interval: 15 * time.Second, given: 30 * time.Second, step: 30 * time.Second, intervals: 121},
		{name: "given step too fine for the span", span: 24 * time.Hour, interval: 15 * time.Second, given: 30 * time.Second, step: 3 * time.Minute, intervals: 481},
	} {
		t.Run(tc.name, func(t *testing.T) {
			grid, step := timelineGrid(t0, t0.Add(tc.span), tc.interval, tc.given)
			require.NotEmpty(t, grid)
			assert.Equal(t, tc.step, step)
			assert.Len(t, grid, tc.intervals)
			assert.LessOrEqual(t, len(grid), MaxIntervals+1)
			assert.False(t, grid[0].Start.After(t0))
			assert.False(t, grid[len(grid)-1].End.Before(t0.Add(tc.span)))
			if !tc.start.IsZero() {
				assert.Equal(t, tc.start, grid[0].Start)
				assert.Equal(t, tc.end, grid[len(grid)-1].End)
			}
			if tc.stagger > 0 {
				g2, s2 := timelineGrid(t0.Add(-tc.stagger), t0.Add(tc.span), tc.interval, tc.given)
				assert.Equal(t, tc.sameWhenStagger, s2 == step && len(g2) == len(grid) && g2[0] == grid[0])
			}
		})
	}
	grid, step := timelineGrid(t0, t0, time.Minute, 0)
	assert.Nil(t, grid)
	assert.Zero(t, step)
}
