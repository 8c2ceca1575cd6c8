package matrix

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/internal/fleetsim"
)

var (
	calibration      = flag.Bool("calibration", false, "run TestCalibration's sweep")
	calibrationSeeds = flag.String("calibration.seeds", "9001", "the calibration sweep's seeds: a comma-separated list of seeds or ranges (9001-9003)")
	calibrationSizes = flag.String("calibration.sizes", "3,8", "the calibration sweep's fleet sizes (of fleetsim.MatrixSizes)")
)

// TestCalibration runs the calibration sweep (CalibrationCells: knobs
// between the knob table's grades, seeds no test uses) and prints how
// often the high, medium and low claims were right (Calibration). It
// only reports: it fails when a cell cannot be run, never on a wrong
// claim. Run it with
//
//	go test ./internal/matrix -run TestCalibration -v -count=1 -calibration
//	go test ./internal/matrix -run TestCalibration -v -count=1 -calibration -calibration.seeds=9001-9003 -calibration.sizes=3,8,16
func TestCalibration(t *testing.T) {
	if !*calibration {
		t.Skip("run with -calibration")
	}
	seeds, err := parseSeeds(*calibrationSeeds)
	require.NoError(t, err)
	var sizes []int
	for _, s := range strings.Split(*calibrationSizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		require.NoError(t, err, "-calibration.sizes")
		sizes = append(sizes, n)
	}
	cells := Filter(CalibrationCells(sizes, seeds), *only)
	require.NotEmpty(t, cells)
	t0 := time.Now()
	finished := 0
	results := RunEach(cells, *workers, func(r Result) {
		finished++
		h, conf := r.Claim()
		t.Logf("[%d/%d %3.0fs] %-48s verdict %s, claim %s %s, right %v (%.2fx)", finished, len(cells), time.Since(t0).Seconds(), r.Name(), r.Verdict, h, conf, r.ClaimRight(), r.Truth.Ratio())
	})
	for _, r := range results {
		assert.NoError(t, r.Err, r.Name())
	}
	t.Logf("calibration sweep: %d cells (seeds %s, sizes %s, severities %s and the counter-cases) in %v\n\n%s",
		len(cells), *calibrationSeeds, *calibrationSizes, strings.Join(CalibrationSeverities, ", "), time.Since(t0).Round(time.Second), Calibration(results))
}

// parseSeeds reads "9001,9005-9007".
func parseSeeds(s string) ([]uint64, error) {
	var out []uint64
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.ParseUint(lo, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("seed %q: %w", part, err)
		}
		b := a
		if isRange {
			if b, err = strconv.ParseUint(hi, 10, 64); err != nil || b < a {
				return nil, fmt.Errorf("seed range %q", part)
			}
		}
		for x := a; x <= b; x++ {
			out = append(out, x)
		}
	}
	return out, nil
}

// TestCalibrationTable pins the calibration's tally: a claim is right
// when it names the expected hypothesis, an undetermined verdict claims
// its leading candidate at low, a counter-case is right only without a
// claim, and wrong claims are listed.
func TestCalibrationTable(t *testing.T) {
	inc := Cell{Case: "kv-preemption", Expect: "kv-preemption", Pods: 3, Seed: 9001, Severity: "mild-moderate"}
	ctr := Cell{Case: "healthy", Expect: "no-incident", Pods: 3, Seed: 9001}
	top := func(id, conf string) []Hypothesis {
		return []Hypothesis{{ID: id, Status: "supported", Score: 0.6, Confidence: conf}}
	}
	results := []Result{
		{Cell: inc, Verdict: "kv-preemption", Confidence: "high"},
		{Cell: inc, Verdict: "decode-pressure", Confidence: "high"},
		{Cell: inc, Verdict: "kv-preemption", Confidence: "medium"},
		{Cell: inc, Verdict: "undetermined", Top: top("kv-preemption", "low")},
		{Cell: inc, Verdict: "undetermined", Top: top("queue-sustained", "low")},
		{Cell: inc, Verdict: "no-incident"},
		{Cell: ctr, Verdict: "no-incident"},
		{Cell: ctr, Verdict: "queue-sustained", Confidence: "medium"},
	}
	for i := range results {
		results[i].Outcome = classify(results[i].Cell, results[i].Verdict)
	}
	h, conf := results[3].Claim()
	assert.Equal(t, "kv-preemption", h)
	assert.Equal(t, "low", conf)
	got := Calibration(results)
	assert.Contains(t, got, "| high | 2 | 1 | 1 | 50% | 0 |")
	assert.Contains(t, got, "| medium | 2 | 1 | 1 | 50% | 1 |")
	assert.Contains(t, got, "| low (undetermined: its leading candidate) | 2 | 1 | 1 | 50% | 0 |")
	assert.Contains(t, got, "| no cause claimed (no-incident, or nothing graded) | 2 | 1 | 1 | 50% | 1 |")
	assert.Contains(t, got, "kv-preemption/3/mild-moderate/9001: claims decode-pressure (high), verdict decode-pressure, expected kv-preemption")
	assert.Contains(t, got, "healthy/3/-/9001: claims queue-sustained (medium)")
	seeds, err := parseSeeds("9001,9005-9007")
	require.NoError(t, err)
	assert.Equal(t, []uint64{9001, 9005, 9006, 9007}, seeds)
	_, err = parseSeeds("9003-9001")
	assert.Error(t, err)
	// The sweep's cells sit between the table's grades, on seeds the matrix does not use.
	cells := CalibrationCells([]int{3}, CalibrationSeeds)
	require.NotEmpty(t, cells)
	matrixSeeds := map[uint64]bool{}
	for _, m := range Cells(true) {
		matrixSeeds[m.Seed] = true
	}
	for _, c := range cells {
		assert.False(t, matrixSeeds[c.Seed], "%s: seed %d is the matrix'", c.Name(), c.Seed)
		if !c.Incident() {
			continue
		}
		lo, hi, _ := strings.Cut(c.Severity, "-")
		a, _ := fleetsim.MatrixKnob(c.Case, c.Pods, lo)
		b, _ := fleetsim.MatrixKnob(c.Case, c.Pods, hi)
		assert.InDelta(t, (a+b)/2, c.Knob, 1e-12, "%s: midway between %s and %s", c.Name(), lo, hi)
		assert.NotEqual(t, a, c.Knob, "%s: not the table's %s knob", c.Name(), lo)
	}
}
