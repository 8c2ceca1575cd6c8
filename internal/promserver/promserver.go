// Package promserver runs real Prometheus-compatible servers for the
// tests that read evidence over the HTTP API (snapshot/promapi's and the
// command's): it finds the binary, starts the process on a free port,
// waits until it is ready and kills it when the test ends, and builds
// the small fleets those tests serve. It is for tests only; no library
// package imports it.
package promserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/internal/fleetsim"
)

// Binary returns the path of a server binary: a missing one fails the
// test in CI (CI=true) and skips it elsewhere. With -short the test
// skips: the quick tier needs no external program.
func Binary(t testing.TB, name string) string {
	t.Helper()
	if testing.Short() {
		t.Skipf("-short: the tests that run %s are in the full tier", name)
	}
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required in CI: %v", name, err)
		}
		t.Skipf("%s not installed: %v", name, err)
	}
	return p
}

// optionalBinary returns the path the environment variable env gives of
// a server binary that Debian does not package, so that CI has none: the
// test skips where env is not set (CI included) and with -short. build
// says how to build one.
func optionalBinary(t testing.TB, env, name, build string) string {
	t.Helper()
	if testing.Short() {
		t.Skipf("-short: the tests that run %s are in the full tier", name)
	}
	bin := os.Getenv(env)
	if bin == "" {
		t.Skipf("%s is not set to a %s binary (Debian packages none; %s)", env, name, build)
	}
	return bin
}

// waitForMetrics waits until the Prometheus API at base lists a metric
// name (/api/v1/label/__name__/values with the parameters q), for at
// most wait, polling each second; it fails the test after that.
func waitForMetrics(t testing.TB, base string, q url.Values, wait time.Duration) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	deadline := time.Now().Add(wait)
	for {
		resp, err := client.Get(base + "/api/v1/label/__name__/values?" + q.Encode())
		if err == nil {
			var v struct{ Data []string }
			err = json.NewDecoder(resp.Body).Decode(&v)
			resp.Body.Close()
			if err == nil && len(v.Data) > 0 {
				return
			}
			if err == nil {
				err = fmt.Errorf("HTTP %d, no metric yet", resp.StatusCode)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s lists no metric after %v: %v", base, wait, err)
		}
		time.Sleep(time.Second)
	}
}

// FreeAddr returns a free 127.0.0.1 address.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// Start starts a server process and waits until ready answers 200; the
// process is killed by its PID when the test ends.
func Start(t testing.TB, ready string, bin string, args ...string) {
	t.Helper()
	var log bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &log, &log
	require.NoError(t, cmd.Start())
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		if p, err := os.FindProcess(pid); err == nil {
			_ = p.Kill()
		}
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(90 * time.Second)
	for {
		resp, err := http.Get(ready)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready after 90s: %v\n%s", bin, err, log.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Prometheus serves a copy of the TSDB directory dir with the prometheus
// binary and returns its base URL.
func Prometheus(t testing.TB, dir string) string {
	t.Helper()
	addr, _ := prometheus(t, dir, "scrape_configs: []\n")
	return "http://" + addr
}

// prometheus serves a copy of dir with the configuration config and the
// extra flags, and returns its address and data directory.
func prometheus(t testing.TB, dir, config string, flags ...string) (addr, data string) {
	t.Helper()
	bin := Binary(t, "prometheus")
	data = filepath.Join(t.TempDir(), "data")
	require.NoError(t, os.CopyFS(data, os.DirFS(dir)))
	cfg := filepath.Join(t.TempDir(), "prometheus.yml")
	require.NoError(t, os.WriteFile(cfg, []byte(config), 0o644))
	addr = FreeAddr(t)
	Start(t, "http://"+addr+"/-/ready", bin, append([]string{
		"--config.file=" + cfg, "--storage.tsdb.path=" + data, "--storage.tsdb.retention.time=100y",
		"--web.listen-address=" + addr}, flags...)...)
	return addr, data
}

// Fleet simulates a small fleet of a scenario: three pods, with the load
// scaled to them, at a 30 s scrape interval (a scenario that lists its
// pods keeps them).
func Fleet(t testing.TB, scenario string) (fleetsim.ScenarioSpec, *fleetsim.Fleet) {
	t.Helper()
	return FleetOf(t, scenario, 3, 30*time.Second)
}

// FleetOf simulates a fleet of a scenario of pods pods (0: the scenario's
// own number), with the load scaled to them, scraped every interval (a
// scenario that lists its pods keeps them).
func FleetOf(t testing.TB, scenario string, pods int, interval time.Duration) (fleetsim.ScenarioSpec, *fleetsim.Fleet) {
	t.Helper()
	spec, ok := fleetsim.LookupScenario(scenario)
	require.True(t, ok, scenario)
	cfg := spec.Config
	if len(cfg.Pods) == 0 && pods > 0 {
		cfg.NumPods = pods
		cfg.Workload.Phases = slices.Clone(cfg.Workload.Phases)
		for i := range cfg.Workload.Phases {
			cfg.Workload.Phases[i].Rate *= float64(pods) / 8
		}
	}
	cfg.ScrapeInterval = interval
	fleet, err := fleetsim.Run(cfg)
	require.NoError(t, err)
	return spec, fleet
}
