package snapshot_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/internal/fleetsim"
	"github.com/whyslow/whyslow/snapshot"
)

var fleetStart = time.Date(2026, 9, 22, 10, 0, 0, 0, time.UTC)

// writeFleet writes a small simulated fleet as flat dumps under a new
// directory and returns it.
func writeFleet(t *testing.T, pods []fleetsim.PodConfig, d time.Duration) string {
	t.Helper()
	f, err := fleetsim.Run(fleetsim.Config{Seed: 1, TraceSeed: 2, Start: fleetStart, Duration: d, Pods: pods})
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, f.WriteDumps(dir, fleetsim.DumpOptions{Layout: fleetsim.LayoutFlat}))
	return dir
}

// resets sums the resets every counter of the evidence shows over its
// whole span.
func resets(t *testing.T, e *snapshot.Evidence) int {
	n := 0
	for _, tg := range e.Targets {
		for _, f := range tg.Families {
			if f.Type != "counter" {
				continue
			}
			for _, s := range f.Series {
				inc, err := s.Increase(snapshot.Window{})
				if err == nil {
					n += inc.Resets
				}
			}
		}
	}
	return n
}

// Scrape contents in the reverse order of their file names: counters go
// down at every scrape while process_start_time_seconds stays the same.
// That is inconsistent evidence, named with both files, and no decrease is
// read as a reset. A real restart (the start time changes) still is one.
func TestReversedScrapesAreNotRestarts(t *testing.T) {
	dir := writeFleet(t, []fleetsim.PodConfig{{Name: "vllm-0"}}, 5*time.Minute)
	files, err := filepath.Glob(filepath.Join(dir, "vllm-0_*.prom"))
	require.NoError(t, err)
	sort.Strings(files)
	require.Greater(t, len(files), 10)
	rev := t.TempDir()
	for i, f := range files {
		data, err := os.ReadFile(files[len(files)-1-i])
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(rev, filepath.Base(f)), data, 0o644))
	}
	before := treeHash(t, rev)

	orig, err := snapshot.Read(context.Background(), []string{dir}, snapshot.Options{})
	require.NoError(t, err)
	assert.Empty(t, orig.ProblemsOf(snapshot.ErrInconsistent))

	e, err := snapshot.Read(context.Background(), []string{rev}, snapshot.Options{})
	require.NoError(t, err)
	assert.Equal(t, before, treeHash(t, rev))
	inc := e.ProblemsOf(snapshot.ErrInconsistent)
	require.Len(t, inc, 1, "one problem for the target: %v", e.Problems)
	msg := inc[0].Error()
	assert.Contains(t, msg, "process_start_time_seconds does not change")
	assert.Contains(t, msg, filepath.Base(files[0]), "names the file before the decrease")
	assert.Contains(t, msg, filepath.Base(files[1]), "and the file of the decrease")
	assert.True(t, e.Partial())
	assert.Equal(t, 0, resets(t, e), "no decrease is read as a reset")

	// A fleet with a real restart keeps its reset.
	restarted := writeFleet(t, []fleetsim.PodConfig{{Name: "vllm-0", Restarts: []fleetsim.Restart{{At: 150 * time.Second}}}}, 5*time.Minute)
	e, err = snapshot.Read(context.Background(), []string{restarted}, snapshot.Options{})
	require.NoError(t, err)
	assert.Empty(t, e.ProblemsOf(snapshot.ErrInconsistent), "%v", e.Problems)
	assert.Greater(t, resets(t, e), 0)
}

// A V0 pod exposes no process_start_time_seconds: a restart is every
// counter dropping at once; one counter dropping alone is inconsistent.
func TestV0RestartIsEveryCounterDropping(t *testing.T) {
	dump := func(a, b float64) string {
		return fmt.Sprintf("# TYPE vllm:a_total counter\nvllm:a_total %g\n# TYPE vllm:b_total counter\nvllm:b_total %g\n", a, b)
	}
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"vllm-0/2026-09-22T10-00-00Z.prom": dump(10, 20),
		"vllm-0/2026-09-22T10-00-15Z.prom": dump(12, 25),
		"vllm-0/2026-09-22T10-00-30Z.prom": dump(1, 2), // restart: both drop
		"vllm-0/2026-09-22T10-00-45Z.prom": dump(3, 4),
		"vllm-1/2026-09-22T10-00-00Z.prom": dump(10, 20),
		"vllm-1/2026-09-22T10-00-15Z.prom": dump(12, 25),
		"vllm-1/2026-09-22T10-00-30Z.prom": dump(5, 30), // a drops alone
		"vllm-1/2026-09-22T10-00-45Z.prom": dump(14, 31),
	})
	e, err := snapshot.Read(context.Background(), []string{root}, snapshot.Options{})
	require.NoError(t, err)
	inc := e.ProblemsOf(snapshot.ErrInconsistent)
	require.Len(t, inc, 1, "%v", e.Problems)
	assert.Contains(t, inc[0].Error(), "target vllm-1")
	assert.Contains(t, inc[0].Error(), "only some of its counters drop")
	assert.Contains(t, inc[0].File, filepath.Join("vllm-1", "2026-09-22T10-00-30Z.prom"))
	a0 := e.Target("vllm-0").Family("vllm:a_total").Series[0]
	assert.Equal(t, []float64{10, 12, 1, 3}, a0.V, "a restart is kept")
	inc0, err := a0.Increase(snapshot.Window{})
	require.NoError(t, err)
	assert.Equal(t, 1, inc0.Resets)
	a1 := e.Target("vllm-1").Family("vllm:a_total").Series[0]
	assert.Equal(t, []float64{10, 12, 14}, a1.V, "the inconsistent sample is left out")
}

// A V0 counter with a label is created at its first increment: after a
// restart it is absent until then, and its next sample, scrapes later, is
// below its last before the restart. The restart the other counters show
// in between is its reset too, not inconsistent evidence.
func TestV0RestartResetsACounterThatComesBackLater(t *testing.T) {
	dump := func(a float64, length string) string {
		out := fmt.Sprintf("# TYPE vllm:a_total counter\nvllm:a_total %g\n", a)
		if length != "" {
			out += "# TYPE vllm:request_success_total counter\nvllm:request_success_total{finished_reason=\"length\"} " + length + "\n"
		}
		return out
	}
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"vllm-0/2026-09-22T10-00-00Z.prom": dump(10, "5"),
		"vllm-0/2026-09-22T10-00-15Z.prom": dump(12, "7"),
		"vllm-0/2026-09-22T10-00-30Z.prom": dump(1, ""), // restart: a drops, length not yet created
		"vllm-0/2026-09-22T10-00-45Z.prom": dump(3, ""),
		"vllm-0/2026-09-22T10-01-00Z.prom": dump(5, "1"), // created again
		"vllm-0/2026-09-22T10-01-15Z.prom": dump(8, "2"),
	})
	e, err := snapshot.Read(context.Background(), []string{root}, snapshot.Options{})
	require.NoError(t, err)
	assert.Empty(t, e.ProblemsOf(snapshot.ErrInconsistent), "%v", e.Problems)
	length := e.Target("vllm-0").Family("vllm:request_success_total").Series[0]
	assert.Equal(t, []float64{5, 7, 1, 2}, length.V, "every sample is kept")
	inc, err := length.Increase(snapshot.Window{})
	require.NoError(t, err)
	assert.Equal(t, 1, inc.Resets)
	assert.Equal(t, 2+2.0, inc.Value, "2 before the restart, 1 and 1 after")
}

// A dump named a year ahead, one named a month ahead, and one whose sample
// timestamps are seconds, among a fleet's dumps: each is named and left
// out, the evidence spans only the fleet's capture, reading stays quick;
// KeepTimeOutliers keeps them.
func TestTimeOutliersAreNamedAndLeftOut(t *testing.T) {
	dir := writeFleet(t, []fleetsim.PodConfig{{Name: "vllm-0"}, {Name: "vllm-1"}}, 10*time.Minute)
	clean, err := snapshot.Read(context.Background(), []string{dir}, snapshot.Options{})
	require.NoError(t, err)
	first, last := clean.Span()

	files, err := filepath.Glob(filepath.Join(dir, "vllm-0_*.prom"))
	require.NoError(t, err)
	sort.Strings(files)
	data, err := os.ReadFile(files[len(files)-1])
	require.NoError(t, err)
	year := filepath.Join(dir, "vllm-0_2027-09-22T10-05-00Z.prom")
	month := filepath.Join(dir, "vllm-1_2026-10-22T10-05-00Z.prom")
	secs := filepath.Join(dir, "vllm-1_federate.txt")
	require.NoError(t, os.WriteFile(year, data, 0o644))
	require.NoError(t, os.WriteFile(month, data, 0o644))
	ts := fleetStart.Add(5 * time.Minute).Unix()
	require.NoError(t, os.WriteFile(secs, []byte(fmt.Sprintf("vllm:num_requests_waiting{pod=\"vllm-1\"} 3 %d\nvllm:num_requests_waiting{pod=\"vllm-1\"} 4 %d\n", ts, ts+15)), 0o644))
	before := treeHash(t, dir)

	start := time.Now()
	e, err := snapshot.Read(context.Background(), []string{dir}, snapshot.Options{})
	took := time.Since(start)
	require.NoError(t, err)
	assert.Less(t, took, 2*time.Second)
	assert.Equal(t, before, treeHash(t, dir))
	out := e.ProblemsOf(snapshot.ErrTimeOutlier)
	var msgs []string
	for _, p := range out {
		assert.Equal(t, snapshot.SeverityWarning, p.Severity)
		msgs = append(msgs, p.Error())
	}
	all := strings.Join(msgs, "\n")
	assert.Contains(t, all, year)
	assert.Contains(t, all, month)
	assert.Contains(t, all, secs)
	assert.Contains(t, all, "look like seconds, not milliseconds")
	assert.Contains(t, all, "365 days after")
	f, l := e.Span()
	assert.Equal(t, first, f)
	assert.Equal(t, last, l)
	// The same model as without the outliers (the seconds file names its
	// pod by label).
	got := strings.ReplaceAll(summary(e), "vllm-1 (from pod)", "vllm-1 (from path)")
	assert.Equal(t, summary(clean), strings.Join(strings.SplitAfter(got, "\n")[:strings.Count(summary(clean), "\n")], ""))

	kept, err := snapshot.Read(context.Background(), []string{dir}, snapshot.Options{KeepTimeOutliers: true})
	require.NoError(t, err)
	_, l = kept.Span()
	assert.True(t, l.After(last.Add(300*24*time.Hour)))
	keptMsgs := ""
	for _, p := range kept.ProblemsOf(snapshot.ErrTimeOutlier) {
		keptMsgs += p.Error() + "\n"
	}
	assert.Equal(t, 3, strings.Count(keptMsgs, "kept (Options.KeepTimeOutliers)"), keptMsgs)
}

// A file named at one time whose samples carry another: a warning naming
// both; the sample timestamps are used.
func TestFileNameAndSampleTimesDisagree(t *testing.T) {
	ts := fleetStart.Add(time.Hour).UnixMilli()
	e, err := snapshot.ParseDump([]byte(fmt.Sprintf("vllm:num_requests_waiting 3 %d\n", ts)), "vllm-0_2026-09-22T10-00-00Z.prom", snapshot.Options{})
	require.NoError(t, err)
	c := e.ProblemsOf(snapshot.ErrTimeConflict)
	require.Len(t, c, 1, "%v", e.Problems)
	assert.Contains(t, c[0].Error(), "the file name says 2026-09-22T10:00:00Z, the newest sample timestamp 2026-09-22T11:00:00Z (1h0m0s after)")
	assert.Equal(t, ts, e.Targets[0].Scrapes[0].Time.UnixMilli())
}
