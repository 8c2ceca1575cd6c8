package main

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/internal/fleetsim"
	"github.com/whyslow/whyslow/internal/promserver"
)

// TestDiagnoseURLAsTSDB runs "whyslow diagnose URL" against a real
// Prometheus serving a copy of a fleetsim TSDB and "whyslow diagnose DIR"
// on the directory: the JSON reports are the same but for their sources.
// The command reads only the catalog's metrics from the server, the whole
// directory from disk. Without prometheus the test skips, and fails in CI.
func TestDiagnoseURLAsTSDB(t *testing.T) {
	promserver.Binary(t, "prometheus") // skip before simulating
	spec, fleet := promserver.Fleet(t, "kv-preemption")
	dir := filepath.Join(t.TempDir(), "tsdb")
	require.NoError(t, fleet.WriteTSDB(dir, fleetsim.TSDBOptions{HeadSpan: -1}))
	url := promserver.Prometheus(t, dir)

	start := fleet.Config.Start
	if start.IsZero() {
		start = fleetsim.DefaultStart
	}
	rng := start.UTC().Format(time.RFC3339) + "/2h"
	report := func(path string) map[string]any {
		code, out, errs := whyslow(t, "", "diagnose", "--format", "json", "--range", rng, path)
		require.Equal(t, exitOK, code, errs)
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &m))
		in, _ := m["inputs"].(map[string]any)
		require.NotNil(t, in)
		sources := in["sources"]
		delete(in, "sources")
		assert.Equal(t, []any{path}, sources)
		return m
	}
	ref := report(dir)
	got := report(url)
	assert.Equal(t, spec.Expect, ref["verdict"])
	assert.Equal(t, ref, got)
}
