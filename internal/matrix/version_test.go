package matrix

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/internal/fleetsim"
)

// A fleet of vLLM V0 pods shows its prefix-cache hit rate only as a gauge
// of every lookup since the process started: a cache that stops hitting
// moves its mean over a window by a few points. The diagnosis recovers
// the window's rate (weighted by prompt tokens) and names the cause; the
// gauge's mean alone named decode-pressure, at high confidence.
func TestV0PrefixCacheLoss(t *testing.T) {
	smallest := slices.Min(fleetsim.MatrixSizes)
	k, ok := fleetsim.MatrixKnob("prefix-cache-loss", smallest, "moderate")
	require.True(t, ok)
	c := Cell{Case: "prefix-cache-loss", Expect: "prefix-cache-loss", Pods: smallest, Seed: fleetsim.MatrixSeeds[0],
		Severity: "moderate", Knob: k, Variant: fleetsim.Variant{Version: fleetsim.VersionV0}}
	r := RunCell(c)
	require.NoError(t, r.Err)
	assert.Equal(t, "prefix-cache-loss", r.Verdict, "%s", r.Outcome)
	assert.True(t, r.OK(), "%s: %s", r.Outcome, r.Verdict)
}
