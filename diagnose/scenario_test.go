package diagnose_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/diagnose"
	"github.com/whyslow/whyslow/internal/fleetsim"
	"github.com/whyslow/whyslow/snapshot"
)

// simulate runs cfg, writes its dumps to a temporary directory and reads
// them back through snapshot, as a user's evidence would be.
func simulate(t testing.TB, cfg fleetsim.Config) *snapshot.Evidence {
	t.Helper()
	_, ev := simulateFleet(t, cfg)
	return ev
}

// simulateFleet is simulate, also returning the fleet's ground truth.
func simulateFleet(t testing.TB, cfg fleetsim.Config) (*fleetsim.Fleet, *snapshot.Evidence) {
	t.Helper()
	fleet, err := fleetsim.Run(cfg)
	require.NoError(t, err)
	return fleet, readBack(t, func(dir string) error { return fleet.WriteDumps(dir, fleetsim.DumpOptions{}) })
}

// readBack lets write fill a temporary directory (dumps, a TSDB) and reads
// it back through snapshot.
func readBack(t testing.TB, write func(dir string) error) *snapshot.Evidence {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, write(dir))
	ev, err := snapshot.Read(context.Background(), []string{dir}, snapshot.Options{})
	require.NoError(t, err)
	return ev
}

// factsTable prints the facts of a report, for failure messages.
func factsTable(rep *diagnose.Report) string {
	var b strings.Builder
	ids := make([]string, 0, len(rep.Facts))
	for id := range rep.Facts {
		ids = append(ids, string(id))
	}
	sort.Strings(ids)
	fmt.Fprintf(&b, "verdict %s: %s\nwindows: baseline %v–%v (%s) incident %v–%v (%s)\n", rep.Verdict, rep.Summary,
		rep.Windows.Baseline.Start.Format(time.TimeOnly), rep.Windows.Baseline.End.Format(time.TimeOnly), rep.Windows.Baseline.From,
		rep.Windows.Incident.Start.Format(time.TimeOnly), rep.Windows.Incident.End.Format(time.TimeOnly), rep.Windows.Incident.From)
	if cp := rep.Windows.ChangePoint; cp != nil {
		fmt.Fprintf(&b, "change point %v score %.2f used %v\n", cp.Time.Format(time.TimeOnly), cp.Score, cp.Used)
	}
	for _, id := range ids {
		f := rep.Facts[diagnose.FactIDForTest(id)]
		if f.Missing != "" {
			fmt.Fprintf(&b, "  %-22s missing: %s\n", id, f.Missing)
			continue
		}
		fmt.Fprintf(&b, "  %-22s %10.4g (n=%g)   baseline %10.4g (n=%g)\n", id, float64(f.Value), float64(f.Count), float64(f.Baseline), float64(f.BaselineCount))
	}
	for _, s := range rep.Symptoms {
		fmt.Fprintf(&b, "symptom %s present=%v evaluable=%v\n", s.ID, s.Present, s.Evaluable)
	}
	for _, h := range rep.Hypotheses {
		fmt.Fprintf(&b, "hypothesis %-22s %-14s %.2f\n", h.ID, h.Status, h.Score)
		for _, c := range h.CounterEvidence {
			fmt.Fprintf(&b, "     counter: %s\n", c.Text)
		}
		for _, m := range h.Missing {
			fmt.Fprintf(&b, "     missing: %s\n", m)
		}
	}
	for _, w := range rep.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", w)
	}
	return b.String()
}

// shortScenarios run under -short: one per kind of outcome.
var shortScenarios = map[string]bool{"healthy": true, "burst": true, "hot-replica": true, "restart": true}

// TestScenarios diagnoses every named fleetsim scenario from dumps written
// by the simulator and read back through snapshot, with default options:
// the verdict must be the scenario's expected hypothesis (or no-incident),
// every other hypothesis must rank below it, and the counter-cases must
// not read as incidents.
func TestScenarios(t *testing.T) {
	for _, spec := range fleetsim.Scenarios() {
		if testing.Short() && !shortScenarios[spec.Name] {
			continue
		}
		t.Run(spec.Name, func(t *testing.T) {
			t.Parallel()
			ev := simulate(t, spec.Config)
			rep, err := diagnose.Diagnose(ev, diagnose.Options{})
			require.NoError(t, err)
			table := factsTable(rep)
			require.Equal(t, spec.Expect, string(rep.Verdict), "%s: %s\n%s", spec.Name, spec.Description, table)
			if spec.Expect == "no-incident" {
				for _, h := range rep.Hypotheses {
					assert.NotEqual(t, "supported", string(h.Status), "%s supported in a healthy fleet\n%s", h.ID, table)
				}
			} else {
				require.NotEmpty(t, rep.Hypotheses)
				assert.Equal(t, spec.Expect, string(rep.Hypotheses[0].ID), "the primary hypothesis ranks first\n%s", table)
				for _, h := range rep.Hypotheses[1:] {
					assert.NotEqual(t, spec.Expect, string(h.ID))
				}
			}
			if spec.Expect != "no-incident" {
				// The incident starts at fleetsim.IncidentStart; a level
				// shift is found by the change-point search, bursts fall
				// back to halves, which start there too.
				start := spec.Config.Start
				if start.IsZero() {
					start = fleetsim.DefaultStart
				}
				assert.WithinDuration(t, start.Add(fleetsim.IncidentStart), rep.Windows.Incident.Start, 4*time.Minute, "%s", table)
			}
			checkSummary(t, "scenario-"+spec.Name, rep)
			switch spec.Name {
			case "restart":
				assert.True(t, hasWarning(rep, "counter reset"), "a restart inside the window is warned about\n%s", table)
			case "mixed-versions":
				assert.True(t, hasWarning(rep, "version skew"), "mixed versions are warned about\n%s", table)
			}
		})
	}
}

func hasWarning(rep *diagnose.Report, substr string) bool {
	for _, w := range rep.Warnings {
		if strings.Contains(w, substr) {
			return true
		}
	}
	return false
}
