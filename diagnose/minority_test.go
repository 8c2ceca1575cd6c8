package diagnose_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/internal/fleetsim"
	"github.com/whyslow/whyslow/internal/matrix"
)

// TestMinorityDelay: a deferral on 1 of 3 pods that scrapes a minute
// apart never catch (vLLM 0.11), or that vLLM V0 cannot show, puts the
// fleet's TTFT rise on that pod alone: the median replica's mean TTFT
// stays where it was. It read as queue-burst (high), and with bursts
// ruled out as decode-pressure or outside-gpu (high): causes that reach
// every replica. The report now names the deferral where a scrape saw
// it, and no cause where none did.
func TestMinorityDelay(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates five fleets")
	}
	cells := []matrix.Cell{
		{Seed: 1001, Severity: "moderate", Variant: fleetsim.Variant{ScrapeInterval: time.Minute}},
		{Seed: 1002, Severity: "moderate", Variant: fleetsim.Variant{ScrapeInterval: time.Minute}},
		{Seed: 1001, Severity: "severe", Variant: fleetsim.Variant{ScrapeInterval: time.Minute}},
		{Seed: 1002, Severity: "severe", Variant: fleetsim.Variant{ScrapeInterval: time.Minute}},
		{Seed: 1001, Severity: "moderate", Variant: fleetsim.Variant{Version: fleetsim.VersionV0}},
	}
	for _, c := range cells {
		c.Case, c.Expect, c.Pods = "admission-deferral", "admission-deferral", 3
		k, ok := fleetsim.MatrixKnob(c.Case, c.Pods, c.Severity)
		require.True(t, ok)
		c.Knob = k
		r := matrix.RunCell(c)
		require.NoError(t, r.Err, r.Name())
		assert.Contains(t, []string{"admission-deferral", "undetermined"}, r.Verdict, "%s %v: %s (%v)", r.Name(), c.Variant, r.Summary, r.Top)
	}
}
