package diagnose_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/diagnose"
	"github.com/whyslow/whyslow/internal/fleetsim"
	"github.com/whyslow/whyslow/snapshot"
)

// vllmScrapesIn counts the scrape instants of the fleet's vLLM pods in
// [start, end], summed over the pods: what windows.*.scrapes means.
func vllmScrapesIn(fleet *fleetsim.Fleet, start, end time.Time) int {
	n := 0
	for _, p := range fleet.Pods {
		for _, sc := range p.Scrapes {
			if !sc.Time.Before(start) && !sc.Time.After(end) {
				n++
			}
		}
	}
	return n
}

// TestScrapesOneDefinition: windows.*.scrapes is the number of scrape
// instants of vLLM targets in the window, the same for a dump folder, its
// /federate dump and its TSDB, with the chosen windows and with given
// ones; a DCGM exporter scraped beside the pods (its series joined to the
// pods by their pod label, or as targets of its own) adds nothing to it,
// is no replica and draws no warning, and is listed once as the source it
// is.
func TestScrapesOneDefinition(t *testing.T) {
	spec, fleet := formatFleet(t, "kv-preemption")
	require.NotEqual(t, fleetsim.NoGPUExporter, fleet.Config.GPUExporter, "the scenario has DCGM targets")
	p := &preserved{fleet: fleet, dir: t.TempDir()}
	start := fleet.Config.Start
	given := diagnose.Options{
		Baseline: snapshot.Window{Start: start.Add(5 * time.Minute), End: start.Add(25 * time.Minute)},
		Incident: snapshot.Window{Start: start.Add(fleetsim.IncidentStart + 5*time.Minute), End: start.Add(55 * time.Minute)},
	}
	kinds := map[string]func(t *testing.T, dir string) string{}
	for _, f := range evidenceFormats {
		switch f.name {
		case "dump-dirs", "federate-gzip", "tsdb":
			write := f.write
			kinds[f.name] = func(t *testing.T, dir string) string { return write(t, p, dir) }
		}
	}
	require.Len(t, kinds, 3)
	// The dump folder again, with the DCGM pages as targets of their own
	// (an exporter dumped without Kubernetes' pod mapping).
	kinds["dump-dirs, DCGM apart"] = func(t *testing.T, dir string) string {
		noPod := regexp.MustCompile(`,?(container|namespace|pod)="[^"]*"`)
		for _, pod := range fleet.Pods {
			for _, sc := range pod.Scrapes {
				name := sc.Time.UTC().Format("2006-01-02T15-04-05Z") + ".prom"
				writeDump(t, filepath.Join(dir, pod.Name, name), sc.VLLM())
				writeDump(t, filepath.Join(dir, "nvidia-dcgm-exporter-"+pod.Name, name), noPod.ReplaceAll(sc.DCGM(), nil))
			}
		}
		return dir
	}

	type counts struct{ chosen, given [2]int }
	got := map[string]counts{}
	for name, write := range kinds {
		t.Run(name, func(t *testing.T) {
			path := write(t, t.TempDir())
			ev, err := snapshot.Read(context.Background(), []string{path}, snapshot.Options{})
			require.NoError(t, err)
			var c counts
			for i, opts := range []diagnose.Options{{}, given} {
				rep, err := diagnose.Diagnose(ev, opts)
				require.NoError(t, err)
				assert.Equal(t, spec.Expect, string(rep.Verdict))
				w := [2]int{rep.Windows.Baseline.Scrapes, rep.Windows.Incident.Scrapes}
				want := [2]int{
					vllmScrapesIn(fleet, rep.Windows.Baseline.Start, rep.Windows.Baseline.End),
					vllmScrapesIn(fleet, rep.Windows.Incident.Start, rep.Windows.Incident.End),
				}
				assert.Equal(t, want, w, "scrapes of the vLLM pods in the windows")
				if i == 0 {
					c.chosen = w
				} else {
					c.given = w
				}
				assert.Len(t, rep.Inputs.Replicas, len(fleet.Pods), "replicas: the vLLM pods only")
				for _, warn := range rep.Warnings {
					assert.NotContains(t, warn, "dcgm", "no warning per exporter target")
					assert.NotContains(t, warn, "no vllm: metric")
				}
				if name == "dump-dirs, DCGM apart" {
					require.Len(t, rep.Inputs.Exporters, 1, "listed once")
					ex := rep.Inputs.Exporters[0]
					assert.Equal(t, "DCGM exporter", ex.Kind)
					assert.Len(t, ex.Targets, len(fleet.Pods))
					assert.Contains(t, ex.Signals, "gpu_util")
					text := rep.String()
					assert.Contains(t, text, fmt.Sprintf("evidence: %d replicas, ", len(fleet.Pods)))
					assert.Contains(t, text, fmt.Sprintf("%d DCGM exporter targets (gpu_util", len(fleet.Pods)))
					assert.NotContains(t, text, "nvidia-dcgm-exporter-vllm-0   ", "not a row of the per-replica table")
				}
			}
			got[name] = c
		})
	}
	for name, c := range got {
		assert.Equal(t, got["dump-dirs"], c, "%s: the same scrapes as the dump folder", name)
	}
}

func writeDump(t *testing.T, name string, data []byte) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(name), 0o755))
	require.NoError(t, os.WriteFile(name, data, 0o644))
}
