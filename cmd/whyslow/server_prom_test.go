package main

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/internal/fleetsim"
)

// TestDiagnoseURLAsTSDB runs "whyslow diagnose URL" against a real
// Prometheus serving a copy of a fleetsim TSDB and "whyslow diagnose DIR"
// on the directory: the JSON reports are the same but for their sources.
// The command reads only the catalog's metrics from the server, the whole
// directory from disk. Without prometheus the test skips, and fails in CI.
func TestDiagnoseURLAsTSDB(t *testing.T) {
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("prometheus is required in CI: %v", err)
		}
		t.Skipf("prometheus not installed: %v", err)
	}
	spec, ok := fleetsim.LookupScenario("kv-preemption")
	require.True(t, ok)
	cfg := spec.Config
	cfg.NumPods = 3
	for i := range cfg.Workload.Phases {
		cfg.Workload.Phases[i].Rate *= 3.0 / 8
	}
	cfg.ScrapeInterval = 30 * time.Second
	fleet, err := fleetsim.Run(cfg)
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "tsdb")
	require.NoError(t, fleet.WriteTSDB(dir, fleetsim.TSDBOptions{HeadSpan: -1}))

	data := filepath.Join(t.TempDir(), "data")
	require.NoError(t, os.CopyFS(data, os.DirFS(dir)))
	conf := filepath.Join(t.TempDir(), "prometheus.yml")
	require.NoError(t, os.WriteFile(conf, []byte("scrape_configs: []\n"), 0o644))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	cmd := exec.Command(bin, "--config.file="+conf, "--storage.tsdb.path="+data, "--storage.tsdb.retention.time=100y", "--web.listen-address="+addr)
	require.NoError(t, cmd.Start())
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		if p, err := os.FindProcess(pid); err == nil {
			_ = p.Kill()
		}
		_ = cmd.Wait()
	})
	for deadline := time.Now().Add(90 * time.Second); ; {
		resp, err := http.Get("http://" + addr + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		require.True(t, time.Now().Before(deadline), "prometheus not ready: %v", err)
		time.Sleep(200 * time.Millisecond)
	}

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
	got := report("http://" + addr)
	assert.Equal(t, spec.Expect, ref["verdict"])
	assert.Equal(t, ref, got)
}
