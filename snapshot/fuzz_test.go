package snapshot_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/snapshot"
)

// FuzzParseDump: no input makes ParseDump panic, every problem names the
// file, and the Evidence keeps its invariants (sorted distinct times,
// columns of equal length).
func FuzzParseDump(f *testing.F) {
	files, _ := filepath.Glob("../testdata/realdata/vllm/*.prom")
	for _, p := range files {
		data, err := os.ReadFile(p)
		require.NoError(f, err)
		if len(data) > 4096 {
			data = data[:4096]
		}
		f.Add(data, false)
	}
	f.Add([]byte(federateDump), false)
	f.Add([]byte("# TYPE a counter\na_total 1 # {x=\"1\"} 2\n# EOF\n"), true)
	f.Add([]byte("# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 1\nh_count 1\nh_sum 1\n"), false)
	f.Add([]byte("a{b=\"\\\"\"} NaN 123\n\x00"), false)
	f.Fuzz(func(t *testing.T, data []byte, om bool) {
		opts := snapshot.Options{Limits: snapshot.Limits{MaxSeriesPerScrape: 1000, MaxLabelBytes: 1024}}
		if om {
			opts.Format = "openmetrics"
		}
		const name = "fuzz/pod_2026-09-22T10-00-15Z.prom"
		e, err := snapshot.ParseDump(data, name, opts)
		if err != nil {
			require.Contains(t, err.Error(), name)
		}
		require.NotNil(t, e)
		for _, p := range e.Problems {
			require.Equal(t, name, p.File, "%v", p)
			require.NotEmpty(t, p.Error())
		}
		for _, tg := range e.Targets {
			for _, fam := range tg.Families {
				for _, s := range fam.Series {
					require.Len(t, s.V, len(s.T))
					require.True(t, s.StartT == nil || len(s.StartT) == len(s.T))
					for i := 1; i < len(s.T); i++ {
						require.Less(t, s.T[i-1], s.T[i])
					}
				}
				for _, h := range fam.Histograms {
					require.Len(t, h.Counts, len(h.T)*len(h.Bounds))
					require.Len(t, h.Sum, len(h.T))
					require.Len(t, h.Count, len(h.T))
					for i := 1; i < len(h.T); i++ {
						require.Less(t, h.T[i-1], h.T[i])
					}
				}
			}
		}
	})
}
