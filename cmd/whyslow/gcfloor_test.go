package main

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGCPercentFor(t *testing.T) {
	const mb = 1 << 20
	for _, tc := range []struct {
		live, floor uint64
		most, want  int
	}{
		{0, 128 * mb, 400, 100},        // no cycle yet: the default
		{16 * mb, 128 * mb, 400, 400},  // 700, capped
		{32 * mb, 128 * mb, 400, 300},  // just to the floor
		{50 * mb, 128 * mb, 400, 156},  // (128-50)/50
		{63 * mb, 128 * mb, 400, 103},  // just under half the floor
		{64 * mb, 128 * mb, 400, 100},  // twice the live heap is the floor
		{200 * mb, 128 * mb, 400, 100}, // above it
		{32 * mb, 128 * mb, 200, 200},  // another cap
		{16 * mb, 128 * mb, 50, 50},    // a cap below the default is the caller's
		{1 * mb, 0, 400, 100},          // no floor
		{1, 1 << 40, 400, 400},         // a tiny heap, a huge floor
	} {
		assert.Equal(t, tc.want, gcPercentFor(tc.live, tc.floor, tc.most), "live %d floor %d most %d", tc.live, tc.floor, tc.most)
	}
}

// TestRaiseGCFloor: while the floor is raised the percent follows the
// live heap, and stop restores the default; GOGC set otherwise is left
// alone.
func TestRaiseGCFloor(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	runtime.GC() // a small live heap
	stop := raiseGCFloor(1<<40, 400, time.Millisecond)
	require.Eventually(t, func() bool {
		p := debug.SetGCPercent(400) // what the tuner set (and sets again)
		return p == 400
	}, 5*time.Second, time.Millisecond)
	stop()
	assert.Equal(t, 100, debug.SetGCPercent(100), "restored")

	debug.SetGCPercent(50)
	stop = raiseGCFloor(1<<40, 400, time.Millisecond)
	time.Sleep(20 * time.Millisecond)
	assert.Equal(t, 50, debug.SetGCPercent(50), "a GOGC of the user's is kept")
	stop()
	assert.Equal(t, 50, debug.SetGCPercent(100))
}
