package fleetsim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEngineSkew: inside a skew the pod's requests go to its engines in
// proportion to the weights (none to a zero weight); outside it the
// engines take turns, and other pods are untouched.
func TestEngineSkew(t *testing.T) {
	cfg := Config{Seed: 7, Duration: 20 * time.Minute, Pods: []PodConfig{
		{DataParallel: 4, EngineSkews: []EngineSkew{{From: 10 * time.Minute, To: time.Hour, Weights: []float64{6, 1, 1, 0}}}},
		{DataParallel: 4},
	}}
	cfg.Workload.Phases = []Phase{DefaultPhase}
	f, err := Run(cfg)
	require.NoError(t, err)
	var before, during, other [4]float64
	for _, r := range f.Requests {
		switch {
		case r.Pod == 1:
			other[r.Engine]++
		case r.Pod == 0 && r.Arrival < 10*time.Minute:
			before[r.Engine]++
		case r.Pod == 0:
			during[r.Engine]++
		}
	}
	share := func(c [4]float64, e int) float64 { return c[e] / (c[0] + c[1] + c[2] + c[3]) }
	for e := range 4 {
		assert.InDelta(t, 0.25, share(before, e), 0.01, "engine %d before the skew", e)
		assert.InDelta(t, 0.25, share(other, e), 0.01, "engine %d of the other pod", e)
	}
	assert.InDelta(t, 6.0/8, share(during, 0), 0.01)
	assert.InDelta(t, 1.0/8, share(during, 1), 0.01)
	assert.Zero(t, during[3], "a zero weight takes no request")

	bad := cfg
	bad.Pods = []PodConfig{{DataParallel: 2, EngineSkews: []EngineSkew{{From: 0, To: time.Hour, Weights: []float64{1, 1, 1}}}}}
	_, err = Run(bad)
	assert.ErrorContains(t, err, "3 weights for 2 engines")
}
