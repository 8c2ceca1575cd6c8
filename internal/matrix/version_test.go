package matrix

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/internal/fleetsim"
)

// Fleets of vLLM V0 pods, which show some causes otherwise than V1's:
//   - prefix-cache-loss: the hit rate only as a gauge of every lookup since
//     the process started, whose mean over a window hardly moves when the
//     cache stops hitting; the diagnosis recovers the window's rate
//     (weighted by prompt tokens), where the gauge's mean named
//     decode-pressure at high confidence;
//   - spec-decode-acceptance: the draft and accepted token counters beside
//     V0's acceptance-rate and efficiency gauges (fleetsim exposed none
//     on V0, and the same cause read as decode-pressure).
func TestV0Causes(t *testing.T) {
	smallest := slices.Min(fleetsim.MatrixSizes)
	for _, name := range []string{"prefix-cache-loss", "spec-decode-acceptance"} {
		t.Run(name, func(t *testing.T) {
			k, ok := fleetsim.MatrixKnob(name, smallest, "moderate")
			require.True(t, ok)
			c := Cell{Case: name, Expect: name, Pods: smallest, Seed: fleetsim.MatrixSeeds[0],
				Severity: "moderate", Knob: k, Variant: fleetsim.Variant{Version: fleetsim.VersionV0}}
			r := RunCell(c)
			require.NoError(t, r.Err)
			assert.Equal(t, name, r.Verdict, "%s", r.Outcome)
			assert.True(t, r.OK(), "%s: %s", r.Outcome, r.Verdict)
		})
	}
}
