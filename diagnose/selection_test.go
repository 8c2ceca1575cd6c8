package diagnose_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/diagnose"
	"github.com/whyslow/whyslow/internal/fleetsim"
	"github.com/whyslow/whyslow/snapshot"
)

// TestSelectionSameDiagnosis checks that reading only what a diagnosis
// needs (Options.Selection: the catalog's metrics, and with given windows
// their range) changes nothing a diagnosis decides. Every fleetsim
// scenario is written as every kind of evidence; each is read twice, in
// full (snapshot.Read with no selection, the reference) and through the
// selection, and both are diagnosed.
//
// With the windows chosen by Diagnose (the change-point search over the
// whole history) the selection only drops families, and the reports must
// be identical, JSON for JSON. With given windows the selection also
// narrows the time range, and the verdict, hypotheses, symptoms, facts
// and signals must be identical; only the timelines and the change point
// shown beside the given windows cover the ranges read (see
// Options.Selection and Options.ReadRanges; the windows are read apart, as
// the command reads them), and so does the JSON writer's count of unknown
// numbers.
func TestSelectionSameDiagnosis(t *testing.T) {
	for _, spec := range fleetsim.Scenarios() {
		t.Run(spec.Name, func(t *testing.T) {
			t.Parallel()
			fleet := selectionFleet(t, spec)
			p := &preserved{fleet: fleet, dir: t.TempDir()}
			start := fleet.Config.Start
			given := diagnose.Options{
				Baseline: snapshot.Window{Start: start.Add(5 * time.Minute), End: start.Add(25 * time.Minute)},
				Incident: snapshot.Window{Start: start.Add(fleetsim.IncidentStart + 5*time.Minute), End: start.Add(55 * time.Minute)},
			}
			for _, format := range evidenceFormats {
				t.Run(format.name, func(t *testing.T) {
					if testing.Short() && !format.short {
						t.Skip("-short runs only the dump folder and the TSDB")
					}
					path := format.write(t, p, t.TempDir())
					full, err := snapshot.Read(context.Background(), []string{path}, snapshot.Options{SandboxDir: t.TempDir()})
					require.NoError(t, err)
					for i, opts := range []diagnose.Options{{}, given} {
						windows := []string{"chosen windows", "given windows"}[i]
						sel := opts.Selection()
						require.NotEmpty(t, sel.Metrics)
						require.Equal(t, i == 1, !sel.Start.IsZero(), windows)
						sel.SandboxDir = t.TempDir()
						ev, err := snapshot.Read(context.Background(), []string{path}, sel)
						require.NoError(t, err)
						if rs := opts.ReadRanges(); len(rs) > 1 {
							// As the command reads them: each window apart.
							var evs []*snapshot.Evidence
							for _, r := range rs {
								o := sel
								o.Start, o.End = r.Start, r.End
								e, err := snapshot.Read(context.Background(), []string{path}, o)
								require.NoError(t, err)
								evs = append(evs, e)
							}
							ev = snapshot.MergeRanges(evs...)
						}
						// The selection must have read less: the fleet's
						// exporters write families no diagnosis reads.
						require.Less(t, evidenceSamples(ev), evidenceSamples(full), windows)
						ref, err := diagnose.Diagnose(full, opts)
						require.NoError(t, err)
						got, err := diagnose.Diagnose(ev, opts)
						require.NoError(t, err)
						assert.Equal(t, spec.Expect, string(got.Verdict), "%s: %s", windows, got.Summary)
						a, b := reportJSON(t, ref, false), reportJSON(t, got, false)
						if i == 1 {
							for _, doc := range []any{a, b} {
								m := doc.(map[string]any)
								delete(m, "timelines")
								delete(m["windows"].(map[string]any), "change_point")
								// The JSON writer counts the unknown numbers it
								// wrote as null, the timelines' included.
								if ws, ok := m["warnings"].([]any); ok {
									m["warnings"] = slices.DeleteFunc(ws, func(w any) bool { return strings.Contains(w.(string), "unknown number(s)") })
								}
								if ws, ok := m["warning_details"].([]any); ok {
									m["warning_details"] = slices.DeleteFunc(ws, func(w any) bool {
										return strings.Contains(fmt.Sprint(w), "unknown number(s)")
									})
								}
							}
						}
						diffs := jsonDiff(a, b, "", nil)
						if n := len(diffs); n > 20 {
							diffs = append(diffs[:20], fmt.Sprintf("... and %d more", n-20))
						}
						if len(diffs) > 0 {
							t.Errorf("%s: the selective read diagnoses otherwise (JSON path: full read, selective read):\n%s", windows, strings.Join(diffs, "\n"))
						}
					}
				})
			}
		})
	}
}

// selectionFleet runs a scenario as formatFleet does (three of its eight
// pods, scraped every 30 s), or whole when its traffic has per-pod
// weights, which cannot be scaled to fewer pods.
func selectionFleet(t *testing.T, spec fleetsim.ScenarioSpec) *fleetsim.Fleet {
	t.Helper()
	for _, ph := range spec.Config.Workload.Phases {
		if ph.Weights != nil {
			cfg := spec.Config
			cfg.ScrapeInterval = 30 * time.Second
			fleet, err := fleetsim.Run(cfg)
			require.NoError(t, err)
			return fleet
		}
	}
	_, fleet := formatFleet(t, spec.Name)
	return fleet
}

// evidenceSamples counts the samples of ev (a histogram sample counts its
// buckets, _sum and _count).
func evidenceSamples(ev *snapshot.Evidence) int {
	n := 0
	for _, tg := range ev.Targets {
		for _, f := range tg.Families {
			for _, s := range f.Series {
				n += s.Len()
			}
			for _, h := range f.Histograms {
				n += h.Len() * (len(h.Bounds) + 2)
			}
		}
	}
	return n
}
