package snapshot_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/snapshot"
)

// FuzzDumpFolder: dump folders with any file and folder names, and
// samples with any timestamps (milliseconds, seconds, far away, negative),
// never make Read panic or change the folder; every problem names a path
// under it; the Evidence keeps its invariants; leaving time outliers out
// never adds a scrape.
func FuzzDumpFolder(f *testing.F) {
	f.Add("vllm-0/2026-09-22T10-00-00Z.prom\nvllm-0/2026-09-22T10-00-15Z.prom\nvllm-0/2027-09-22T10-00-15Z.prom", int64(1758535200000), int64(1758535215000), false)
	f.Add("pod_1758535200.prom\npod_1758535215000.prom\npod_2026-09-22 100015.txt.gz", int64(1758535200), int64(0), true)
	f.Add("a/b/c/20260922T100015Z.om\n\x01\x7f.prom\n..prom", int64(-1), int64(1<<62), false)
	f.Add("2026-09-22T10-00-00Z/vllm-0.prom\n2026-09-22T10-00-00Z/vllm-1.prom", int64(0), int64(9e15), false)
	f.Fuzz(func(t *testing.T, names string, ts1, ts2 int64, gauges bool) {
		root := t.TempDir()
		var made int
		for i, name := range strings.Split(names, "\n") {
			if made == 8 {
				break
			}
			var parts []string
			for _, p := range strings.Split(name, "/") {
				if p == "" || p == "." || p == ".." || strings.ContainsRune(p, 0) || len(p) > 100 {
					continue
				}
				parts = append(parts, p)
			}
			if len(parts) == 0 || len(parts) > 4 {
				continue
			}
			path := filepath.Join(append([]string{root}, parts...)...)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				continue
			}
			typ := "counter"
			if gauges {
				typ = "gauge"
			}
			body := fmt.Sprintf("# TYPE vllm:x_total %s\nvllm:x_total{pod=\"p\"} %d %d\nvllm:y %d\n", typ, 10-i, ts1+int64(i)*ts2, i)
			if i%2 == 1 {
				body = fmt.Sprintf("vllm:y %d\n", i) // no timestamp: the name's time
			}
			if os.WriteFile(path, []byte(body), 0o644) == nil {
				made++
			}
		}
		before := treeHash(t, root)
		for _, keep := range []bool{false, true} {
			e, err := snapshot.Read(context.Background(), []string{root}, snapshot.Options{KeepTimeOutliers: keep})
			if err != nil {
				require.NotEmpty(t, err.Error())
			}
			if e == nil {
				continue
			}
			for _, p := range e.Problems {
				require.NotNil(t, p.Err)
				if p.File != "" {
					require.True(t, strings.HasPrefix(p.File, root), "%v", p)
				}
				for _, r := range p.Error() {
					require.False(t, r < 0x20 && r != '\t', "a control character in %q", p.Error())
				}
			}
			for _, tg := range e.Targets {
				for i := 1; i < len(tg.Scrapes); i++ {
					require.True(t, tg.Scrapes[i-1].Time.Before(tg.Scrapes[i].Time))
				}
				for _, fam := range tg.Families {
					for _, s := range fam.Series {
						require.Len(t, s.V, len(s.T))
						for i := 1; i < len(s.T); i++ {
							require.Less(t, s.T[i-1], s.T[i])
						}
					}
				}
			}
		}
		require.Equal(t, before, treeHash(t, root))
	})
}
