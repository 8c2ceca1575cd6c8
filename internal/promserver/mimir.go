package promserver

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// MimirEnv names the environment variable that gives the path of a mimir
// binary. Debian packages no Mimir, so CI does not install one: the tests
// that need it run where it is set and skip elsewhere, CI included.
const MimirEnv = "WHYSLOW_MIMIR"

// Mimir serves the blocks of the TSDB directory dir from a Grafana Mimir
// in monolithic mode (-target=all, one tenant, anonymous): the blocks
// are copied into its filesystem bucket as a backfill leaves them, and
// the store-gateway serves them (they are older than the querier's
// -querier.query-store-after). It waits until the querier lists the
// metrics between from and to, and returns the base URL of its
// Prometheus API (.../prometheus).
func Mimir(t testing.TB, dir string, from, to time.Time) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the tests that run mimir are in the full tier")
	}
	bin := os.Getenv(MimirEnv)
	if bin == "" {
		t.Skipf("%s is not set to a mimir binary (Debian packages none; go build ./cmd/mimir of github.com/grafana/mimir)", MimirEnv)
	}
	work := t.TempDir()
	bucket := filepath.Join(work, "bucket")
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range ents {
		if _, err := os.Stat(filepath.Join(dir, e.Name(), "meta.json")); err == nil {
			require.NoError(t, os.CopyFS(filepath.Join(bucket, "anonymous", e.Name()), os.DirFS(filepath.Join(dir, e.Name()))))
		}
	}
	httpAddr, grpcAddr, gossip := FreeAddr(t), FreeAddr(t), FreeAddr(t)
	port := func(addr string) string { _, p, _ := net.SplitHostPort(addr); return p }
	args := []string{
		"-target=all", "-auth.multitenancy-enabled=false",
		"-server.http-listen-address=127.0.0.1", "-server.http-listen-port=" + port(httpAddr),
		"-server.grpc-listen-address=127.0.0.1", "-server.grpc-listen-port=" + port(grpcAddr),
		"-memberlist.bind-addr=127.0.0.1", "-memberlist.bind-port=" + port(gossip),
		"-blocks-storage.backend=filesystem", "-blocks-storage.filesystem.dir=" + bucket,
		"-blocks-storage.tsdb.dir=" + filepath.Join(work, "tsdb"),
		"-blocks-storage.bucket-store.sync-dir=" + filepath.Join(work, "sync"),
		"-blocks-storage.bucket-store.sync-interval=5s",
		"-compactor.data-dir=" + filepath.Join(work, "compactor"), "-compactor.cleanup-interval=5s",
		"-ruler-storage.backend=filesystem", "-ruler-storage.filesystem.dir=" + filepath.Join(work, "rules"),
		"-alertmanager-storage.backend=filesystem", "-alertmanager-storage.filesystem.dir=" + filepath.Join(work, "alerts"),
		"-alertmanager.sharding-ring.instance-addr=127.0.0.1", "-alertmanager.web.external-url=http://" + httpAddr + "/alertmanager",
		"-activity-tracker.filepath=" + filepath.Join(work, "activity.log"),
		"-ingester.ring.replication-factor=1",
		"-ingester.ring.instance-addr=127.0.0.1", "-distributor.ring.instance-addr=127.0.0.1",
		"-store-gateway.sharding-ring.instance-addr=127.0.0.1", "-store-gateway.sharding-ring.replication-factor=1",
		"-compactor.ring.instance-addr=127.0.0.1", "-ruler.ring.instance-addr=127.0.0.1",
		"-query-scheduler.ring.instance-addr=127.0.0.1", "-overrides-exporter.ring.instance-addr=127.0.0.1",
		"-query-frontend.instance-addr=127.0.0.1", "-querier.ring.instance-addr=127.0.0.1",
	}
	Start(t, "http://"+httpAddr+"/ready", bin, args...)
	base := "http://" + httpAddr + "/prometheus"
	q := url.Values{"start": {strconv.FormatInt(from.Unix(), 10)}, "end": {strconv.FormatInt(to.Unix(), 10)}}
	deadline := time.Now().Add(3 * time.Minute)
	client := &http.Client{Timeout: 10 * time.Second}
	for {
		resp, err := client.Get(base + "/api/v1/label/__name__/values?" + q.Encode())
		if err == nil {
			var v struct{ Data []string }
			err = json.NewDecoder(resp.Body).Decode(&v)
			resp.Body.Close()
			if err == nil && len(v.Data) > 0 {
				return base
			}
			if err == nil {
				err = fmt.Errorf("HTTP %d, no metric yet", resp.StatusCode)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("mimir at %s lists no metric after 3 min: %v", base, err)
		}
		time.Sleep(time.Second)
	}
}
