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
// it, and no cause where none did. On two pods (the other one's mean
// TTFT speaks) a deferral and a short stall at 1 m read as queue-burst,
// high, too.
func TestMinorityDelay(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates seven fleets")
	}
	cells := []matrix.Cell{
		{Seed: 1001, Severity: "moderate", Variant: fleetsim.Variant{ScrapeInterval: time.Minute}},
		{Seed: 1002, Severity: "moderate", Variant: fleetsim.Variant{ScrapeInterval: time.Minute}},
		{Seed: 1001, Severity: "severe", Variant: fleetsim.Variant{ScrapeInterval: time.Minute}},
		{Seed: 1002, Severity: "severe", Variant: fleetsim.Variant{ScrapeInterval: time.Minute}},
		{Seed: 1001, Severity: "moderate", Variant: fleetsim.Variant{Version: fleetsim.VersionV0}},
		{Seed: 1001, Severity: "moderate", Pods: 2, Variant: fleetsim.Variant{ScrapeInterval: time.Minute}},
		{Seed: 1001, Severity: "mild", Pods: 2, Case: "engine-stall", Variant: fleetsim.Variant{ScrapeInterval: time.Minute}},
	}
	for _, c := range cells {
		if c.Case == "" {
			c.Case = "admission-deferral"
		}
		if c.Pods == 0 {
			c.Pods = 3
		}
		c.Expect = c.Case
		// Two pods take the 3-pod knob, as the matrix' pods-2 axis does.
		k, ok := fleetsim.MatrixKnob(c.Case, max(c.Pods, 3), c.Severity)
		require.True(t, ok)
		c.Knob = k
		r := matrix.RunCell(c)
		require.NoError(t, r.Err, r.Name())
		assert.Contains(t, []string{c.Case, "undetermined"}, r.Verdict, "%s %v: %s (%v)", r.Name(), c.Variant, r.Summary, r.Top)
	}
}
