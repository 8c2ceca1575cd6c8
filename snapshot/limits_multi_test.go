package snapshot_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/snapshot"
)

// federate writes a /federate-style dump: scrapes x series samples, each
// with its timestamp.
func federate(scrapes, series int) []byte {
	var b strings.Builder
	for s := 0; s < scrapes; s++ {
		for i := 0; i < series; i++ {
			fmt.Fprintf(&b, "vllm:num_requests_waiting{engine=\"%d\",pod=\"vllm-0\"} %d %d\n", i, s, 1758535200000+int64(s)*15000)
		}
	}
	return []byte(b.String())
}

// Limits are per scrape: a file of many scrapes (samples with timestamps)
// may be larger than one scrape may be, up to MaxBytesPerFile, and holds
// MaxSeriesPerScrape samples per scrape time; a file of one scrape gets
// the per-scrape limits.
func TestLimitsPerScrapeInMultiScrapeFiles(t *testing.T) {
	many := federate(40, 8) // 320 samples, ~26 KB
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(many)
	require.NoError(t, zw.Close())
	one := []byte(strings.Repeat("vllm:x{i=\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"} 1\n", 400))

	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, data, 0o644))
		return p
	}
	lim := snapshot.Limits{MaxBytesPerScrape: 4 << 10, MaxSeriesPerScrape: 10}
	tests := []struct {
		name    string
		path    string
		lim     snapshot.Limits
		samples int
		err     string
	}{
		{"federate over the scrape limit", write("federate.txt", many), lim, 320, ""},
		{"gzip'ed federate over the scrape limit", write("federate.txt.gz", gz.Bytes()), lim, 320, ""},
		{"federate over the file limit", write("federate2.txt", many), snapshot.Limits{MaxBytesPerScrape: 4 << 10, MaxBytesPerFile: 8 << 10, MaxSeriesPerScrape: 10}, 0, "more than Limits.MaxBytesPerFile"},
		{"one scrape over the scrape limit", write("vllm-0_2026-09-22T10-00-00Z.prom", one), lim, 0, "more than Limits.MaxBytesPerScrape"},
		{"one scrape over the series limit", write("vllm-1_2026-09-22T10-00-00Z.prom", federate(1, 20)), lim, 0, "more than Limits.MaxSeriesPerScrape (10) samples per scrape"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, _ := snapshot.Read(context.Background(), []string{tt.path}, snapshot.Options{Limits: tt.lim})
			if tt.samples == 0 {
				// Nothing of a file stopped by a limit is kept, not even
				// its targets, unless asked for.
				assert.Empty(t, ev.Targets)
			}
			require.NotNil(t, ev)
			n := 0
			for _, tg := range ev.Targets {
				for _, f := range tg.Families {
					for _, s := range f.Series {
						n += s.Len()
					}
				}
			}
			assert.Equal(t, tt.samples, n)
			if tt.err == "" {
				assert.Empty(t, ev.Problems)
				return
			}
			require.NotEmpty(t, ev.Problems)
			assert.Contains(t, ev.Problems[0].Error(), tt.err)
			assert.Contains(t, ev.Problems[0].Error(), tt.path)
		})
	}
}
