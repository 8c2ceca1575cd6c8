package fleetsim

import (
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSleepState: a pod's engine reports vllm:engine_sleep_state awake 0
// and weights_offloaded 1 while a Sleep holds and awake 1 otherwise; the
// other pods of the fleet export the family too (awake), and a fleet
// without a Sleep does not export it.
func TestSleepState(t *testing.T) {
	ph := DefaultPhase
	ph.Rate = 8
	idle := ph
	idle.Start, idle.Weights, idle.Rate = 4*time.Minute, []float64{0, 1}, 4
	cfg := Config{Seed: 3, Duration: 10 * time.Minute, Pods: []PodConfig{
		{Sleeps: []Sleep{{From: 5 * time.Minute, To: 8 * time.Minute}}}, {},
	}, Workload: Workload{Phases: []Phase{ph, idle}}}
	f, err := Run(cfg)
	require.NoError(t, err)
	state := func(sc *Scrape, s string) string {
		m := regexp.MustCompile(`vllm:engine_sleep_state\{engine="0",model_name="[^"]+",sleep_state="` + s + `"\} (\S+)`).FindSubmatch(sc.VLLM())
		if m == nil {
			return "absent"
		}
		return string(m[1])
	}
	for _, sc := range f.Pods[0].Scrapes {
		asleep := sc.Offset >= 5*time.Minute && sc.Offset < 8*time.Minute
		want := map[bool][2]string{false: {"1.0", "0.0"}, true: {"0.0", "1.0"}}[asleep]
		assert.Equal(t, want[0], state(sc, "awake"), "awake at %v", sc.Offset)
		assert.Equal(t, want[1], state(sc, "weights_offloaded"), "weights_offloaded at %v", sc.Offset)
		assert.Equal(t, "0.0", state(sc, "discard_all"), "discard_all at %v", sc.Offset)
		if asleep {
			assert.Zero(t, sc.Engines[0].Running+sc.Engines[0].Waiting, "a sleeping pod out of rotation holds nothing at %v", sc.Offset)
		}
	}
	for _, sc := range f.Pods[1].Scrapes {
		assert.Equal(t, "1.0", state(sc, "awake"), "the other pod at %v", sc.Offset)
	}

	cfg.Pods[0].Sleeps = nil
	f, err = Run(cfg)
	require.NoError(t, err)
	assert.Equal(t, "absent", state(f.Pods[0].Scrapes[30], "awake"), "no Sleep in the fleet: no family")
}
