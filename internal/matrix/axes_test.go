package matrix

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/internal/fleetsim"
)

// TestAxisCells pins the axes: every axis has cells, names are unique,
// knobs come from the nearest fleet size, off-centre incidents start away
// from the middle and last 10-15 minutes, and only bursts under
// minute-apart scrapes are unresolvable.
func TestAxisCells(t *testing.T) {
	cells := AxisCells(fleetsim.MatrixSeeds)
	names := map[string]bool{}
	perAxis := map[string]int{}
	for _, c := range cells {
		require.False(t, names[c.Name()], "duplicate %s", c.Name())
		names[c.Name()] = true
		perAxis[c.Axis]++
		assert.Equal(t, c.Case == "queue-burst" && c.Axis == AxisScrape60s, c.Unresolvable, c.Name())
		if c.Incident() {
			table := map[string]int{AxisPods2: 3, AxisPods32: 16}[c.Axis]
			if table == 0 {
				table = axisPods
			}
			k, ok := fleetsim.MatrixKnob(c.Case, table, c.Severity)
			require.True(t, ok)
			assert.Equal(t, k, c.Knob, c.Name())
		}
		if c.Axis == AxisOffCentre {
			start, end := c.Variant.Span()
			assert.True(t, start <= 16*time.Minute || start >= 24*time.Minute, "%s starts at %v", c.Name(), start)
			assert.GreaterOrEqual(t, end-start, 10*time.Minute, c.Name())
			assert.LessOrEqual(t, end-start, 15*time.Minute, c.Name())
			assert.LessOrEqual(t, end, fleetsim.MatrixDuration, c.Name())
		}
	}
	for _, a := range Axes {
		assert.Positive(t, perAxis[a], a)
	}
	t.Logf("%d axis cells: %v", len(cells), perAxis)
	assert.Equal(t, []int{2, 32}, []int{nearestPods(cells, AxisPods2), nearestPods(cells, AxisPods32)})

	s1, s2 := Sample(cells, 12, 31), Sample(cells, 12, 31)
	assert.Equal(t, s1, s2, "the sample is fixed by its seed")
	assert.Len(t, s1, 12)
	assert.NotEqual(t, s1, Sample(cells, 12, 32))
}

func nearestPods(cells []Cell, axis string) int {
	for _, c := range cells {
		if c.Axis == axis {
			return c.Pods
		}
	}
	return 0
}

// TestAxisOutcome: an axis cell is held to the grade of its own ground
// truth, and an unresolvable one passes unless it names a wrong cause.
func TestAxisOutcome(t *testing.T) {
	c := Cell{Case: "queue-burst", Expect: "queue-burst", Severity: "moderate", Axis: AxisPods2}
	for _, tc := range []struct {
		ratio   float64
		verdict string
		ok      bool
	}{
		{1.3, "undetermined", true},  // graded mild by its truth
		{1.6, "undetermined", false}, // moderate
		{2.5, "queue-burst", true},
		{1.3, "queue-sustained", false},
	} {
		r := Result{Cell: c, Verdict: tc.verdict, Outcome: classify(c, tc.verdict)}
		r.Grade = grade(c, fleetsim.Change{Baseline: 1, Incident: tc.ratio})
		assert.Equal(t, tc.ok, r.OK(), "%.1fx %s", tc.ratio, tc.verdict)
	}
	u := Cell{Case: "queue-burst", Expect: "queue-burst", Severity: "severe", Axis: AxisScrape60s, Unresolvable: true}
	for verdict, ok := range map[string]bool{"undetermined": true, "no-incident": true, "queue-burst": true, "queue-sustained": false} {
		r := Result{Cell: u, Verdict: verdict, Outcome: classify(u, verdict), Grade: "severe"}
		assert.Equal(t, ok, r.OK(), verdict)
	}
}
