package promserver

import (
	"net"
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
	bin := optionalBinary(t, MimirEnv, "mimir", "go build ./cmd/mimir of github.com/grafana/mimir")
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
	// The store-gateway serves the blocks some seconds after it is ready.
	waitForMetrics(t, base, url.Values{"start": {strconv.FormatInt(from.Unix(), 10)}, "end": {strconv.FormatInt(to.Unix(), 10)}}, 3*time.Minute)
	return base
}
