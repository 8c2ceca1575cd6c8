package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/internal/fleetsim"
)

// One pod's scrapes in reverse time order: quantile, like diagnose, reads
// the decreasing counters as inconsistent evidence, not as resets, and
// does not count each scrape as a restart.
func TestQuantileReversedScrapes(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates a fleet")
	}
	dir := twoPodDumps(t)

	count := func() (float64, []string) {
		t.Helper()
		code, out, errOut := whyslow(t, "", "quantile", "--metric", "ttft", "--format", "json", dir)
		require.Equal(t, exitOK, code, errOut)
		var q struct {
			Fleet []struct {
				Count float64 `json:"count"`
			} `json:"fleet"`
			Warnings []string `json:"warnings"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &q))
		require.NotEmpty(t, q.Fleet)
		return q.Fleet[0].Count, append(q.Warnings, strings.Split(errOut, "\n")...)
	}
	truth, _ := count()

	pods, err := filepath.Glob(filepath.Join(dir, "*"))
	require.NoError(t, err)
	sort.Strings(pods)
	dumps, err := filepath.Glob(filepath.Join(pods[0], "2*.prom"))
	require.NoError(t, err)
	sort.Strings(dumps)
	tmp := t.TempDir()
	for i, d := range dumps {
		require.NoError(t, os.Rename(d, filepath.Join(tmp, filepath.Base(dumps[len(dumps)-1-i]))))
	}
	for _, d := range dumps {
		require.NoError(t, os.Rename(filepath.Join(tmp, filepath.Base(d)), d))
	}
	got, warnings := count()
	// The decreasing samples are left out: the pod keeps its first file's
	// lifetime count, not one reset per scrape (30x the truth before).
	assert.Less(t, got, 1.5*truth, "reversed scrapes do not multiply the count")
	joined := strings.Join(warnings, "\n")
	assert.Contains(t, joined, "inconsistent evidence")
	assert.NotContains(t, joined, "counter reset")
}

// twoPodDumps writes 20 minutes of a two-pod fleet (from 10:00:02Z on
// fleetsim's default day, scraped every 15 s) as dump folders.
func twoPodDumps(t *testing.T) string {
	t.Helper()
	spec, ok := fleetsim.LookupScenario("sustained-overload")
	require.True(t, ok)
	cfg := spec.Config
	cfg.NumPods = 2
	cfg.Duration = 20 * time.Minute
	fleet, err := fleetsim.Run(cfg)
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, fleet.WriteDumps(dir, fleetsim.DumpOptions{}))
	return dir
}

// A window that ends too long after the last scrape says where the
// samples end; --max-samples takes positive counts only, 0 included.
func TestQuantileWindowPastData(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates a fleet")
	}
	dir := twoPodDumps(t)
	code, _, errOut := whyslow(t, "", "quantile", "--metric", "ttft", "--window", "2026-09-22T10:10:00Z/2026-09-22T10:30:00Z", dir)
	assert.Equal(t, exitInput, code, errOut)
	assert.Contains(t, errOut, "its samples end at 2026-09-22T10:19:47Z")
	assert.Contains(t, errOut, "end the window by 2026-09-22T10:24:47Z")
	code, _, errOut = whyslow(t, "", "quantile", "--metric", "ttft", "--window", "2026-09-22T10:10:00Z/2026-09-22T10:24:00Z", dir)
	assert.Equal(t, exitOK, code, errOut)

	for _, v := range []string{"0", "-1", "x"} {
		code, _, errOut := whyslow(t, "", "catalog", "--max-samples", v, dir)
		assert.Equal(t, exitUsage, code, v)
		assert.Contains(t, errOut, "want a positive count", v)
	}
}
