package snapshot_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/snapshot"
	_ "github.com/whyslow/whyslow/snapshot/tsdb" // Read reads the TSDB case
)

func TestProgress(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"vllm-0_2026-09-22T10-00-00Z.prom", "vllm-0_2026-09-22T10-00-15Z.prom", "vllm-0_2026-09-22T10-00-30Z.prom"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting 1\n"), 0o644))
	}
	tests := []struct {
		name string
		path string
		what string
	}{
		{"dump folder", dir, "dumps"},
		{"tsdb", "tsdb/testdata/tsdb-promtool", "tsdb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []snapshot.Progress
			_, err := snapshot.Read(context.Background(), []string{tt.path}, snapshot.Options{
				Progress: func(p snapshot.Progress) { got = append(got, p) },
			})
			require.NoError(t, err)
			require.NotEmpty(t, got)
			last := got[len(got)-1]
			assert.Equal(t, last.Total, last.Done, "the last call reports completion: %+v", got)
			assert.Contains(t, last.What, tt.what)
			for i := 1; i < len(got); i++ {
				assert.GreaterOrEqual(t, got[i].Done, got[i-1].Done, "progress never goes back: %+v", got)
			}
		})
	}
}
