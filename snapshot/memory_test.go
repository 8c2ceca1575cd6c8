package snapshot

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// memoryFolder writes a dump folder of one pod: files scrapes of n gauges.
func memoryFolder(t *testing.T, files, n int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "dumps")
	pod := filepath.Join(dir, "pod-a")
	require.NoError(t, os.MkdirAll(pod, 0o755))
	var sb strings.Builder
	sb.WriteString("# TYPE vllm:num_requests_waiting gauge\n")
	for i := range n {
		fmt.Fprintf(&sb, "vllm:num_requests_waiting{model_name=\"m\",slot=\"%d\"} %d\n", i, i)
	}
	for k := range files {
		name := fmt.Sprintf("2026-09-22T10-%02d-00Z.prom", k)
		require.NoError(t, os.WriteFile(filepath.Join(pod, name), []byte(sb.String()), 0o644))
	}
	return dir
}

// TestReadMaxMemory: the evidence kept over a whole Read is counted
// against Limits.MaxMemory; past it, Read stops with an error that names
// the limit, by how much it was exceeded, and what was being read.
func TestReadMaxMemory(t *testing.T) {
	dir := memoryFolder(t, 10, 1000) // 10,000 samples: about 160 KB kept

	ev, err := Read(context.Background(), []string{dir}, Options{})
	require.NoError(t, err)
	require.NotNil(t, ev)

	budget := NewMemoryBudget(0)
	_, err = Read(context.Background(), []string{dir}, Options{Memory: budget})
	require.NoError(t, err)
	used := budget.Used()
	assert.GreaterOrEqual(t, used, int64(10_000*FloatSampleBytes), "every sample is counted")
	assert.Less(t, used, int64(10_000*FloatSampleBytes+1000*200), "labels once per series")

	ev, err = Read(context.Background(), []string{dir}, Options{Limits: Limits{MaxMemory: 64 << 10}})
	require.Error(t, err)
	assert.Nil(t, ev)
	var le *LimitError
	require.True(t, errors.As(err, &le), "%v", err)
	assert.True(t, errors.Is(err, ErrLimit))
	assert.Equal(t, "Limits.MaxMemory", le.Limit)
	assert.Equal(t, int64(64<<10), le.Max)
	assert.Contains(t, err.Error(), "more than Limits.MaxMemory (64.0 KiB)")
	assert.Contains(t, err.Error(), "pod-a", "names the file being read")

	// Two inputs share one budget: each fits alone, both do not.
	_, err = Read(context.Background(), []string{dir}, Options{Limits: Limits{MaxMemory: used + used/2}})
	require.NoError(t, err)
	other := memoryFolder(t, 10, 1000)
	_, err = Read(context.Background(), []string{dir, other}, Options{Limits: Limits{MaxMemory: used + used/2}})
	require.ErrorIs(t, err, ErrLimit)
}

func TestMemoryBudgetSticky(t *testing.T) {
	m := NewMemoryBudget(100)
	require.NoError(t, m.Reserve(60, "a"))
	err := m.Reserve(60, "b")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "120 B, 20 B more than Limits.MaxMemory (100 B), reading b")
	assert.Equal(t, err, m.Reserve(0, "c"), "the first error stays")
	assert.Equal(t, err, m.Err())
	var nilBudget *MemoryBudget
	assert.NoError(t, nilBudget.Reserve(1<<40, "x"))
}
