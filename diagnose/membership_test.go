package diagnose

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestMembershipChanged: a segment with a replica joining, leaving,
// away (scrape gap) or restarted (new process) is a membership change;
// replicas present throughout, and joins and leaves at the evidence's
// edges, are not.
func TestMembershipChanged(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	st := scrapeStats{first: at(0), last: at(40), interval: 15 * time.Second}
	whole := membership{first: at(0), last: at(40)}
	from, to := at(12), at(24)
	for _, tc := range []struct {
		name string
		ms   []membership
		want bool
	}{
		{"present throughout", []membership{whole, whole}, false},
		{"none", nil, false},
		{"joined at the start's scrape lag", []membership{whole, {first: at(0).Add(20 * time.Second), last: at(40)}}, false},
		{"joined inside", []membership{whole, {first: at(15), last: at(40)}}, true},
		{"joined before the segment", []membership{whole, {first: at(5), last: at(40)}}, false},
		{"left inside", []membership{whole, {first: at(0), last: at(20)}}, true},
		{"left after the segment", []membership{whole, {first: at(0), last: at(30)}}, false},
		{"gap inside", []membership{whole, {first: at(0), last: at(40), breaks: []time.Time{at(16), at(18)}}}, true},
		{"new process after the segment", []membership{whole, {first: at(0), last: at(40), breaks: []time.Time{at(30), at(31)}}}, false},
		{"gap spanning the segment's start", []membership{{first: at(0), last: at(40), breaks: []time.Time{at(11), at(13)}}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, membershipChanged(tc.ms, st, from, to))
		})
	}
}
