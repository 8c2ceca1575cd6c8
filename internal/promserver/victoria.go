package promserver

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/internal/fleetsim"
)

// VictoriaMetrics starts a VictoriaMetrics (see Binary) holding the
// fleet, imported as text exposition with timestamps, checks that no row
// was ignored and returns its URL.
func VictoriaMetrics(t testing.TB, fleet *fleetsim.Fleet) string {
	t.Helper()
	bin := Binary(t, "victoria-metrics")
	addr := FreeAddr(t)
	Start(t, "http://"+addr+"/health", bin,
		"-storageDataPath="+filepath.Join(t.TempDir(), "vm"), "-retentionPeriod=100y", "-httpListenAddr="+addr,
		"-search.disableCache") // backfilled data: no response cache
	base := "http://" + addr
	var buf bytes.Buffer
	require.NoError(t, fleet.WriteFederate(&buf))
	want := federateSeries(buf.String())
	resp, err := http.Post(base+"/api/v1/import/prometheus", "text/plain", &buf)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Less(t, resp.StatusCode, 300, "import: %s", body)
	resp, err = http.Get(base + "/internal/force_flush")
	require.NoError(t, err)
	resp.Body.Close()
	// New series become searchable some time after the flush, the later
	// the busier the machine: wait until every one is (the count may
	// exceed the dump's, as a series is counted once a day).
	deadline := time.Now().Add(60 * time.Second)
	for n := -1; n < want; time.Sleep(200 * time.Millisecond) {
		require.True(t, time.Now().Before(deadline), "VictoriaMetrics holds %d of the %d series imported", n, want)
		resp, err = http.Get(base + "/api/v1/series/count")
		require.NoError(t, err)
		var count struct{ Data []int }
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&count))
		resp.Body.Close()
		if len(count.Data) == 1 {
			n = count.Data[0]
		}
	}
	resp, err = http.Get(base + "/metrics")
	require.NoError(t, err)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	ignored := regexp.MustCompile(`(?m)^vm_rows_ignored_total\{[^}]*\} (\S+)$`).FindAllSubmatch(body, -1)
	require.NotEmpty(t, ignored, "vm_rows_ignored_total is exposed")
	for _, m := range ignored {
		assert.Equal(t, "0", string(m[1]), "rows ignored by VictoriaMetrics: %s", m[0])
	}
	return base
}

// federateSeries counts the distinct series of a federate dump, whose
// sample lines end in a value and a timestamp.
func federateSeries(dump string) int {
	seen := map[string]bool{}
	for _, line := range strings.Split(dump, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		for range 2 {
			line = line[:max(strings.LastIndexByte(line, ' '), 0)]
		}
		seen[line] = true
	}
	return len(seen)
}
