package diagnose

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/whyslow/whyslow/snapshot"
)

// TestInstantsCount checks the compact scrape instants against a count
// of the instants themselves: targets scraped regularly, with jitter, in
// bursts and once, at nanosecond times, far apart and at the same
// instants.
func TestInstantsCount(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	base := time.Date(2026, 9, 22, 10, 0, 0, 0, time.UTC)
	var in instants
	var all []int64
	for target := range 200 {
		n := rng.IntN(50)
		if target%17 == 0 {
			n = 1
		}
		tm := base.Add(time.Duration(rng.Int64N(int64(time.Hour))))
		var scrapes []snapshot.Scrape
		for range n {
			scrapes = append(scrapes, snapshot.Scrape{Time: tm})
			all = append(all, tm.UnixNano())
			switch target % 4 {
			case 0: // regular
				tm = tm.Add(15 * time.Second)
			case 1: // jitter
				tm = tm.Add(15*time.Second + time.Duration(rng.Int64N(int64(20*time.Millisecond))) - 10*time.Millisecond)
			case 2: // bursts and gaps
				tm = tm.Add(time.Duration(1 + rng.Int64N(int64(10*time.Minute))))
			default: // the same instants as others
				tm = tm.Add(time.Minute)
			}
		}
		in.add(scrapes)
	}
	assert.Equal(t, len(all), in.len())
	naive := func(lo, hi int64) int {
		n := 0
		for _, t := range all {
			if t >= lo && t <= hi {
				n++
			}
		}
		return n
	}
	assert.Equal(t, naive(math.MinInt64, math.MaxInt64), in.count(math.MinInt64, math.MaxInt64))
	for range 500 {
		lo := base.Add(time.Duration(rng.Int64N(int64(3 * time.Hour)))).UnixNano()
		hi := lo + rng.Int64N(int64(time.Hour))
		if rng.IntN(4) == 0 {
			lo = all[rng.IntN(len(all))] // an instant at an edge
			hi = all[rng.IntN(len(all))]
		}
		assert.Equal(t, naive(lo, hi), in.count(lo, hi), "[%d, %d]", lo, hi)
	}
	var none *instants
	assert.Zero(t, none.len())
	assert.Zero(t, none.count(math.MinInt64, math.MaxInt64))
}
