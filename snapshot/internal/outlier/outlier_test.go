package outlier

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestBounds(t *testing.T) {
	hour := time.Hour.Milliseconds()
	for _, tc := range []struct {
		name              string
		times             []int64
		lo, hi, low, high int64
		ok                bool
	}{
		{name: "too few", times: []int64{0, hour}},
		// A one-hour capture: the margin is its floor, six hours.
		{name: "one hour", times: []int64{0, hour / 2, hour}, lo: hour / 2, hi: hour / 2, low: hour/2 - 6*hour, high: hour/2 + 6*hour, ok: true},
		// Eleven days: the bulk is days 1 to 9, the margin four times it.
		{name: "days", times: func() []int64 {
			var ts []int64
			for d := range int64(11) {
				ts = append(ts, d*24*hour)
			}
			return ts
		}(), lo: 24 * hour, hi: 9 * 24 * hour, low: 24*hour - 4*8*24*hour, high: 9*24*hour + 4*8*24*hour, ok: true},
		{name: "near the end of int64", times: []int64{1 << 62, 1<<62 + 1, 1<<62 + 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lo, hi, low, high, ok := Bounds(len(tc.times), func(i int) int64 { return tc.times[i] })
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, []int64{tc.lo, tc.hi, tc.low, tc.high}, []int64{lo, hi, low, high})
		})
	}
}

func TestFormatSpan(t *testing.T) {
	for ms, want := range map[int64]string{
		90 * 1000:              "1m30s",
		90 * 60 * 1000:         "1h30m0s",
		5 * 3600 * 1000:        "5 hours",
		3 * 24 * 3600 * 1000:   "3 days",
		-24 * 3600 * 1000:      "-1 days",
		365 * 24 * 3600 * 1000: "365 days",
		2*3600*1000 - 1:        "2h0m0s",
	} {
		assert.Equal(t, want, FormatSpan(ms), "%d ms", ms)
	}
}
