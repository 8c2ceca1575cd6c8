package snapshot

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/snapshot/internal/dumpdir"
)

// gaugeDump is a one-gauge dump whose metric is name.
func gaugeDump(name string, v int) string {
	return fmt.Sprintf("# TYPE %s gauge\n%s %d\n", name, name, v)
}

// Read notes in the ReadWatch of its context each dump it opens, and
// clears it when it returns.
func TestReadWatchNamesTheFileRead(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for _, name := range []string{"vllm-0_2026-09-22T10-00-00Z.prom", "vllm-0_2026-09-22T10-00-15Z.prom"} {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(gaugeDump("vllm:num_requests_running", 1)), 0o644))
		paths = append(paths, p)
	}
	var w ReadWatch
	var seen []string
	dumpdir.BeforeOpen = func(string) { seen = append(seen, w.Reading()) }
	t.Cleanup(func() { dumpdir.BeforeOpen = nil })
	_, err := Read(WithReadWatch(context.Background(), &w), []string{dir}, Options{})
	require.NoError(t, err)
	assert.Equal(t, paths, seen)
	assert.Empty(t, w.Reading(), "cleared when Read returns")

	NoteReading(context.Background(), "x") // no watch: ignored
	NoteReading(WithReadWatch(context.Background(), &w), "a\x1b[2Jb.prom")
	assert.Equal(t, `"a\x1b[2Jb.prom"`, w.Reading(), "escaped as problems show it")
}
