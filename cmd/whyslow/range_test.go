package main

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/internal/fleetsim"
	"github.com/whyslow/whyslow/internal/fleetsim/simtsdb"
	"github.com/whyslow/whyslow/internal/jsondiff"
	"github.com/whyslow/whyslow/internal/promserver"
)

// A --range that starts and ends amid the samples bounds every read: the
// windows' reads, widened for the samples at their edges, read nothing
// before its start or after its end, so that the fleet's dumps and its
// TSDB give one report (the TSDB's windows read the minutes before the
// range when they were widened past it).
func TestRangeBoundsEveryRead(t *testing.T) {
	_, fleet := promserver.FleetOf(t, "kv-preemption", 3, 15*time.Second)
	tsdb := filepath.Join(t.TempDir(), "tsdb")
	require.NoError(t, simtsdb.Write(fleet, tsdb, fleetsim.TSDBOptions{HeadSpan: -1}))
	dumps := filepath.Join(t.TempDir(), "dumps")
	require.NoError(t, fleet.WriteDumps(dumps, fleetsim.DumpOptions{}))
	start := fleet.Config.Start
	if start.IsZero() {
		start = fleetsim.DefaultStart
	}
	rng := start.Add(23*time.Minute).UTC().Format(time.RFC3339) + "/37m"
	report := func(path string) map[string]any {
		code, out, errs := whyslow(t, "", "diagnose", "--format", "json", "--range", rng, path)
		require.Equal(t, exitOK, code, errs)
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &m))
		in := m["inputs"].(map[string]any)
		delete(in, "sources")
		delete(in, "notes")
		return m
	}
	assert.Empty(t, jsondiff.Diff(report(dumps), report(tsdb), nil), "report differences (dumps, TSDB)")
}
