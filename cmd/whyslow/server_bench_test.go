package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/whyslow/whyslow/internal/promserver"
)

// BenchmarkServer runs the command's own code path (run, as main calls
// it) on the 100-pod x 6 h fleet of BenchmarkScale twice: read from a
// local Prometheus serving a copy of the TSDB directory (empty scrape
// configuration, 100 y retention, on a free 127.0.0.1 port, stopped by its
// PID), and read from the directory itself:
//
//   - quantile: fleet TTFT p50/p95/p99 over the last hour;
//   - diagnose: --baseline the hour before, --incident the last hour.
//
// Besides time and the peak live heap (as BenchmarkScale), it reports the
// peak RSS of the benchmark process during an op ("peak-RSS-MB", VmHWM
// after resetting it through /proc/self/clear_refs; the test binary's own
// baseline included) and, for the server runs, the peak RSS of the
// Prometheus process during the op ("prom-RSS-MB", its VmHWM reset the same
// way). Without prometheus on PATH the benchmark skips. Where
// WHYSLOW_THANOS and WHYSLOW_MIMIR name their binaries, the same
// questions are also asked of a Thanos Query over a sidecar ("thanos")
// and of a monolithic Mimir serving the blocks ("mimir"; neither
// server's RSS is measured). See snapshot/tsdb/TSDB_BENCHMARKS.md for
// figures.
func BenchmarkServer(b *testing.B) {
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		b.Skipf("prometheus not installed: %v", err)
	}
	const span = 6 * time.Hour
	dir, end := scaleFixture(b, span)
	url, promPID := startBenchPrometheus(b, bin, dir)

	const ttft = "vllm:time_to_first_token_seconds"
	rfc := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	incident := rfc(end.Add(-time.Hour)) + "/" + rfc(end)
	baseline := rfc(end.Add(-2*time.Hour)) + "/" + rfc(end.Add(-time.Hour))

	type source struct{ name, path string }
	sources := []source{{"url", url}}
	// Thanos Query over a sidecar, and Mimir's store-gateway, where their
	// binaries are given (promserver.ThanosEnv, promserver.MimirEnv).
	if os.Getenv(promserver.ThanosEnv) != "" {
		sources = append(sources, source{"thanos", promserver.Thanos(b, dir)})
	}
	if os.Getenv(promserver.MimirEnv) != "" {
		sources = append(sources, source{"mimir", promserver.Mimir(b, dir, end.Add(-span), end)})
	}
	for _, src := range append(sources, source{"dir", dir}) {
		pid := 0
		if src.name == "url" {
			pid = promPID
		}
		server := src.name != "dir"
		b.Run("quantile-1h/"+src.name, func(b *testing.B) {
			measureRSS(b, pid, func(b *testing.B) {
				runCommand(b, "quantile", "--metric", ttft, "--q", "0.5,0.95,0.99", "--window", incident, "--format", "json", src.path)
			})
		})
		b.Run("diagnose-1h+1h/"+src.name, func(b *testing.B) {
			measureRSS(b, pid, func(b *testing.B) {
				runCommand(b, "diagnose", "--baseline", baseline, "--incident", incident, "--format", "json", src.path)
			})
		})
		// The whole range, windows chosen by the diagnosis: a server's
		// read aggregated in the server (--pushdown, the default) and
		// pulled raw, side by side with the directory. A server's reads
		// report the bytes of the responses received (notes in inputs).
		for _, push := range []bool{true, false} {
			name := "diagnose-6h/" + src.name
			if server && !push {
				name += "-raw"
			} else if !push {
				continue
			}
			b.Run(name, func(b *testing.B) {
				var received float64
				measureRSS(b, pid, func(b *testing.B) {
					out := runCommandOutput(b, "diagnose", "--range", rfc(end.Add(-span))+"/"+rfc(end), "--format", "json", fmt.Sprintf("--pushdown=%v", push), src.path)
					received = receivedIn(out)
				})
				if server {
					if received == 0 {
						b.Fatal("no read-cost note in the report")
					}
					b.ReportMetric(received, "MB-received")
				}
			})
		}
	}
}

// receivedMB finds what a server read received in a report's note: a
// number and its unit, MB or bytes.
var receivedMB = regexp.MustCompile(`HTTP requests, ([0-9.]+) (MB|bytes) of responses received`)

// receivedIn is what the server reads of a report received, in MB: the
// sum over its notes.
func receivedIn(report []byte) (mb float64) {
	for _, m := range receivedMB.FindAllSubmatch(report, -1) {
		v, _ := strconv.ParseFloat(string(m[1]), 64)
		if string(m[2]) == "bytes" {
			v /= 1e6
		}
		mb += v
	}
	return mb
}

// runCommandOutput is runCommand, returning what the command wrote.
func runCommandOutput(b *testing.B, args ...string) []byte {
	b.Helper()
	var stdout, stderr bytes.Buffer
	e := &env{stdin: bytes.NewReader(nil), stdout: &stdout, stderr: &stderr}
	if code := run(context.Background(), e, args); code != exitOK {
		b.Fatalf("whyslow %v: exit %d: %s", args, code, stderr.String())
	}
	return stdout.Bytes()
}

// startBenchPrometheus serves a copy of the blocks of dirs (the fixtures
// are never written) and returns its URL and PID; the process is killed
// by its PID when the benchmark ends. Blocks of several dirs that overlap
// in time are compacted by Prometheus as it starts: it returns once the
// blocks loaded stop changing, so that the compaction is not measured.
func startBenchPrometheus(b *testing.B, bin string, dirs ...string) (string, int) {
	b.Helper()
	data := filepath.Join(b.TempDir(), "data")
	if err := os.CopyFS(data, os.DirFS(dirs[0])); err != nil {
		b.Fatal(err)
	}
	for _, dir := range dirs[1:] { // their blocks
		ents, err := os.ReadDir(dir)
		if err != nil {
			b.Fatal(err)
		}
		for _, e := range ents {
			if e.IsDir() {
				if err := os.CopyFS(filepath.Join(data, e.Name()), os.DirFS(filepath.Join(dir, e.Name()))); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	_ = os.Remove(filepath.Join(data, "complete"))
	conf := filepath.Join(b.TempDir(), "prometheus.yml")
	if err := os.WriteFile(conf, []byte("scrape_configs: []\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	var log bytes.Buffer
	// --storage.tsdb.max-block-duration=2h: the fixture's 2 h blocks are
	// not compacted into larger ones while the command is measured on the
	// same cores.
	cmd := exec.Command(bin, "--config.file="+conf, "--storage.tsdb.path="+data,
		"--storage.tsdb.retention.time=100y", "--storage.tsdb.max-block-duration=2h", "--web.listen-address="+addr)
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	pid := cmd.Process.Pid
	b.Cleanup(func() {
		if p, err := os.FindProcess(pid); err == nil {
			_ = p.Kill()
		}
		_ = cmd.Wait()
	})
	for deadline := time.Now().Add(3 * time.Minute); ; {
		resp, err := http.Get("http://" + addr + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("prometheus not ready: %v\n%s", err, log.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(dirs) > 1 {
		waitCompacted(b, "http://"+addr)
	}
	b.Logf("prometheus pid %d on %s, ready with VmRSS %.0f MB", pid, addr, procMB(pid, "VmRSS"))
	return "http://" + addr, pid
}

// waitCompacted waits until the Prometheus at url has loaded the same
// number of blocks for 30 s (prometheus_tsdb_blocks_loaded), at most 30
// minutes.
func waitCompacted(b *testing.B, url string) {
	b.Helper()
	loaded := func() string {
		resp, err := http.Get(url + "/metrics")
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			b.Fatal(err)
		}
		for _, line := range strings.Split(string(body), "\n") {
			if strings.HasPrefix(line, "prometheus_tsdb_blocks_loaded ") {
				return line
			}
		}
		return ""
	}
	last, same := loaded(), 0
	for deadline := time.Now().Add(30 * time.Minute); same < 6; {
		if time.Now().After(deadline) {
			b.Fatalf("prometheus still compacting after 30 minutes (%s)", last)
		}
		time.Sleep(5 * time.Second)
		if now := loaded(); now == last {
			same++
		} else {
			last, same = now, 0
		}
	}
}

// measureRSS is measure with the peak RSS of this process and, when pid
// is not 0, of process pid, over the ops.
func measureRSS(b *testing.B, pid int, op func(b *testing.B)) {
	b.Helper()
	var peakRSS, peakProm float64
	measure(b, func(b *testing.B) {
		b.StopTimer()
		runtime.GC()
		debug.FreeOSMemory()
		resetHWM(0)
		if pid != 0 {
			resetHWM(pid)
		}
		b.StartTimer()
		op(b)
		b.StopTimer()
		peakRSS = max(peakRSS, procMB(0, "VmHWM"))
		if pid != 0 {
			peakProm = max(peakProm, procMB(pid, "VmHWM"))
		}
		b.StartTimer()
	})
	if peakRSS > 0 {
		b.ReportMetric(peakRSS, "peak-RSS-MB")
	}
	if peakProm > 0 {
		b.ReportMetric(peakProm, "prom-RSS-MB")
	}
}

// procFile is /proc/self/name, or /proc/PID/name.
func procFile(pid int, name string) string {
	if pid == 0 {
		return "/proc/self/" + name
	}
	return "/proc/" + strconv.Itoa(pid) + "/" + name
}

// resetHWM resets the peak RSS (VmHWM) of a process to its current RSS
// (Linux; elsewhere nothing happens).
func resetHWM(pid int) { _ = os.WriteFile(procFile(pid, "clear_refs"), []byte("5"), 0) }

// procMB reads a kB field of /proc/PID/status in MB (0 if unreadable).
func procMB(pid int, field string) float64 {
	data, err := os.ReadFile(procFile(pid, "status"))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			var kb float64
			if _, err := fmt.Sscanf(strings.TrimSpace(v), "%f kB", &kb); err == nil {
				return kb / 1024
			}
		}
	}
	return 0
}

// BenchmarkServerFleet runs diagnose over the whole range of a larger
// fleet served by a local Prometheus, windows chosen by the diagnosis
// (--pushdown, the default): $WHYSLOW_SERVER_FLEET pods x span, e.g.
// "1000x24h", or "100x168h@120h" for two hours of overload from 120 h on
// (fleetFixture: the 8 pods of fleetsim's healthy scenario,
// 15 s scrapes, replicated). Skipped without the variable: the 1,000-pod
// x 24 h fleet is 2.3 billion samples, some 5 GB of blocks built in tens
// of minutes, copied once for the server. It reports the command's peak
// RSS and the bytes it received. With $WHYSLOW_SERVER_FLEET_RAW set it
// also reports, as "raw-MB", what reading every pod's samples over the
// range receives (--pushdown=false; by query when the variable is
// "query", else by remote read), measured by the command itself on
// groups of rawGroup pods (--match), one after the other: one process
// cannot hold the whole fleet's samples. With
// $WHYSLOW_SERVER_FLEET_RECORDS set it then serves the fleet with the
// recording rules the diagnosis reads (--records; backfilled once with
// promtool, kept beside the fixture) and runs url-records: the change
// point found in the records, the 6 h around it surveyed.
func BenchmarkServerFleet(b *testing.B) {
	spec := os.Getenv("WHYSLOW_SERVER_FLEET")
	if spec == "" {
		b.Skip("WHYSLOW_SERVER_FLEET (e.g. 1000x24h) not set")
	}
	fleet, over, _ := strings.Cut(spec, "@")
	ps, sp, ok := strings.Cut(fleet, "x")
	pods, err := strconv.Atoi(ps)
	span, err2 := time.ParseDuration(sp)
	var overloadAt time.Duration
	var err3 error
	if over != "" {
		overloadAt, err3 = time.ParseDuration(over)
	}
	if !ok || err != nil || err2 != nil || err3 != nil || pods < 1 || overloadAt < 0 {
		b.Fatalf("WHYSLOW_SERVER_FLEET=%q: want PODSxSPAN[@OVERLOAD], e.g. 1000x24h or 100x168h@120h", spec)
	}
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		b.Fatalf("prometheus not installed: %v", err)
	}
	dir, end := fleetFixture(b, pods, span, overloadAt)
	url, promPID := startBenchPrometheus(b, bin, dir)
	rfc := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	rng := rfc(end.Add(-span)) + "/" + rfc(end)
	b.Run(fmt.Sprintf("diagnose-%s/url", sp), func(b *testing.B) {
		var got float64
		measureRSS(b, promPID, func(b *testing.B) {
			got = receivedIn(runCommandOutput(b, "diagnose", "--range", rng, "--format", "json", url))
		})
		b.ReportMetric(got, "MB-received")
		rawBy := os.Getenv("WHYSLOW_SERVER_FLEET_RAW")
		if rawBy == "" {
			return
		}
		const rawGroup = 50
		raw := 0.0
		for g := 0; g < pods; g += rawGroup {
			var names []string
			for p := g; p < min(g+rawGroup, pods); p++ {
				names = append(names, fmt.Sprintf("vllm-%03d", p))
			}
			out := runCommandOutput(b, "diagnose", "--range", rng, "--format", "json", "--pushdown=false",
				fmt.Sprintf("--remote-read=%v", rawBy != "query"), "--match", `{pod=~"`+strings.Join(names, "|")+`"}`, url)
			raw += receivedIn(out)
		}
		b.ReportMetric(raw, "raw-MB")
	})
	if os.Getenv("WHYSLOW_SERVER_FLEET_RECORDS") == "" {
		return
	}
	// The recording rules whyslow diagnose reads (changeRecords),
	// backfilled once by promtool from the server and kept beside the
	// fixture.
	recs := dir + "-records"
	if _, err := os.Stat(filepath.Join(recs, "complete")); err != nil {
		t0 := time.Now()
		blocks := backfillRecords(b, url, end.Add(-span), end)
		if err := os.RemoveAll(recs); err != nil {
			b.Fatal(err)
		}
		if err := os.CopyFS(recs, os.DirFS(blocks)); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(recs, "complete"), nil, 0o644); err != nil {
			b.Fatal(err)
		}
		b.Logf("records backfilled in %v", time.Since(t0).Round(time.Second))
	}
	url, promPID = startBenchPrometheus(b, bin, dir, recs)
	b.Run(fmt.Sprintf("diagnose-%s/url-records", sp), func(b *testing.B) {
		var got float64
		measureRSS(b, promPID, func(b *testing.B) {
			got = receivedIn(runCommandOutput(b, "diagnose", "--range", rng, "--format", "json", url))
		})
		b.ReportMetric(got, "MB-received")
	})
}
