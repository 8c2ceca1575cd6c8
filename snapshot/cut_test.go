package snapshot_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/snapshot"
)

// A cardinality bomb cut by MaxSeriesPerScrape among good dumps adds no
// target, no family and no label value, and the dumps read after it are
// whole; the result is partial. KeepCutFiles keeps what was read.
func TestCutBombAmongGoodDumps(t *testing.T) {
	var bomb strings.Builder
	bomb.WriteString("# TYPE vllm:num_requests_running gauge\n")
	for i := range 500 {
		fmt.Fprintf(&bomb, "vllm:num_requests_running{engine=\"0\",model_name=\"fake-%d\"} 1\n", i)
		fmt.Fprintf(&bomb, "vllm:bomb{pod=\"ghost-%d\"} 1\n", i)
	}
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"vllm-0/2026-09-22T10-00-00Z.prom": vllmDump(3, 0, [3]float64{1, 2, 2}),
		"vllm-0/2026-09-22T10-00-15Z.prom": bomb.String(),
		"vllm-0/2026-09-22T10-00-30Z.prom": vllmDump(5, 1, [3]float64{1, 4, 5}),
	})
	before := treeHash(t, root)
	opts := snapshot.Options{Limits: snapshot.Limits{MaxSeriesPerScrape: 100}}
	e, err := snapshot.Read(context.Background(), []string{root}, opts)
	require.NoError(t, err)
	assert.Equal(t, before, treeHash(t, root))
	assert.True(t, e.Partial())
	require.Len(t, e.Targets, 1, summary(e))
	v0 := e.Targets[0]
	assert.Nil(t, v0.Family("vllm:bomb"))
	run := v0.Family("vllm:num_requests_running")
	require.Len(t, run.Series, 1, "no fake model_name")
	assert.Equal(t, []float64{3, 5}, run.Series[0].V, "the dump after the bomb is read whole")
	assert.Len(t, v0.Scrapes, 2)

	opts.KeepCutFiles = true
	e, err = snapshot.Read(context.Background(), []string{root}, opts)
	require.NoError(t, err)
	assert.Greater(t, len(e.Targets), 1, "kept on request: the ghost pods")
	assert.Greater(t, len(e.Target("vllm-0").Family("vllm:num_requests_running").Series), 1)
}
