package promserver

import (
	"testing"
	"time"
)

// ThanosEnv names the environment variable that gives the path of a
// thanos binary. Debian packages no Thanos, so CI does not install one:
// the tests that need it run where it is set and skip elsewhere, CI
// included.
const ThanosEnv = "WHYSLOW_THANOS"

// Thanos serves a copy of the TSDB directory dir the way a Thanos
// deployment does: a Prometheus (with the external label replica="a",
// which a sidecar requires), a Thanos sidecar in front of it, and a
// Thanos Query over the sidecar that deduplicates on replica (so that
// its answers carry no external label). It returns the base URL of the
// Thanos Query.
func Thanos(t testing.TB, dir string) string {
	t.Helper()
	bin := optionalBinary(t, ThanosEnv, "thanos", "go build ./cmd/thanos of github.com/thanos-io/thanos")
	promAddr, data := prometheus(t, dir, "global:\n  external_labels:\n    replica: a\nscrape_configs: []\n",
		"--storage.tsdb.min-block-duration=2h", "--storage.tsdb.max-block-duration=2h")
	sideGRPC, sideHTTP := FreeAddr(t), FreeAddr(t)
	Start(t, "http://"+sideHTTP+"/-/ready", bin, "sidecar",
		"--prometheus.url=http://"+promAddr, "--tsdb.path="+data,
		"--grpc-address="+sideGRPC, "--http-address="+sideHTTP)
	queryGRPC, queryHTTP := FreeAddr(t), FreeAddr(t)
	Start(t, "http://"+queryHTTP+"/-/ready", bin, "query",
		"--endpoint="+sideGRPC, "--query.replica-label=replica",
		"--grpc-address="+queryGRPC, "--http-address="+queryHTTP)
	// The query learns of the sidecar a few seconds after it is ready.
	base := "http://" + queryHTTP
	waitForMetrics(t, base, nil, 90*time.Second)
	return base
}
