package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/internal/fleetsim"
)

// Two bad dumps among a fleet's good ones, as every command that reads
// dumps meets them: one with HELP and TYPE lines and no sample (a warning
// naming it; --strict fails), and a 3 GiB sparse file of zeros behind a
// timestamped first line (its binary data named by file and offset, after
// reading a few MB of it).
func TestBadDumpsAmongGoodOnes(t *testing.T) {
	cfg := fleetsim.Scenario("healthy")
	cfg.NumPods = 2
	cfg.Duration = 20 * time.Minute
	fleet, err := fleetsim.Run(cfg)
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, fleet.WriteDumps(dir, fleetsim.DumpOptions{}))
	pods, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.NotEmpty(t, pods)
	podDir := filepath.Join(dir, pods[0].Name())
	dumps, err := filepath.Glob(filepath.Join(podDir, "2*.prom"))
	require.NoError(t, err)
	require.Greater(t, len(dumps), 10)
	slices.Sort(dumps)

	// Replace two scrapes in the middle, keeping their names (and times).
	empty, sparse := dumps[4], dumps[6]
	require.NoError(t, os.WriteFile(empty, []byte("# HELP vllm:num_requests_running Number of requests.\n"+
		"# TYPE vllm:num_requests_running gauge\n# TYPE vllm:e2e_request_latency_seconds histogram\n"), 0o644))
	at, err := time.Parse("2006-01-02T15-04-05Z.prom", filepath.Base(sparse))
	require.NoError(t, err)
	first := fmt.Sprintf("vllm:num_requests_running{pod=%q} 1 %d\n", pods[0].Name(), at.UnixMilli())
	require.NoError(t, os.WriteFile(sparse, []byte(first), 0o644))
	require.NoError(t, os.Truncate(sparse, 3<<30))

	for _, args := range [][]string{
		{"catalog"},
		{"quantile", "--metric", "vllm:e2e_request_latency_seconds"},
		{"diagnose"},
	} {
		t.Run(args[0], func(t *testing.T) {
			code, _, errs := whyslow(t, "", append(args, dir)...)
			assert.Equal(t, exitOK, code, errs)
			assert.Contains(t, errs, "warning: "+empty+": no data: no samples, only the HELP and TYPE lines of 2 families")
			assert.Contains(t, errs, fmt.Sprintf("warning: %s:2: binary data (byte 0x00 at offset %d)\n", sparse, len(first)))
			assert.NotContains(t, errs, "error: ")

			code, _, errs = whyslow(t, "", append(append(args[:1:1], "--strict"), append(args[1:], dir)...)...)
			assert.Equal(t, exitInput, code, errs)
			assert.Contains(t, errs, empty+": no data: no samples")
			assert.Contains(t, errs, "partial result (--strict)")
		})
	}
}
