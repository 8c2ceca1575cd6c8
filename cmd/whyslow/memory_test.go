package main

import (
	"bytes"
	"context"
	"errors"
	"runtime/debug"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/internal/fleetsim"
	"github.com/whyslow/whyslow/snapshot"
)

// A run whose evidence passes --max-memory stops with exit 1 and a
// message naming the budget, by how much it was passed and the flag.
func TestMaxMemoryExceeded(t *testing.T) {
	cfg := fleetsim.Scenario("healthy")
	cfg.NumPods = 2
	cfg.Duration = 20 * time.Minute
	fleet, err := fleetsim.Run(cfg)
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, fleet.WriteDumps(dir, fleetsim.DumpOptions{}))

	before := debug.SetMemoryLimit(-1)
	code, _, errs := whyslow(t, "", "diagnose", "--max-memory", "64MiB", dir)
	require.Equal(t, exitOK, code, errs)
	assert.Equal(t, before, debug.SetMemoryLimit(-1), "the soft limit is restored when run returns")

	// The guard sees the heap (with the test binary's) pass 1 MiB, or the
	// reader its quarter, 256 KiB, of evidence (about 400 KB here):
	// either way the run stops with the same kind of message.
	code, out, errs := whyslow(t, "", "diagnose", "--max-memory", "1MiB", dir)
	assert.Equal(t, exitInput, code, errs)
	assert.Empty(t, out)
	assert.Contains(t, errs, "memory budget exceeded")
	assert.Contains(t, errs, "more than")
	assert.Contains(t, errs, "--max-memory SIZE raises the budget")

	// Without the guard's polls, the reader's count stops the run.
	defer func(p time.Duration) { memoryPoll = p }(memoryPoll)
	memoryPoll = time.Hour
	code, out, errs = whyslow(t, "", "diagnose", "--max-memory", "1MiB", dir)
	assert.Equal(t, exitInput, code, errs)
	assert.Empty(t, out)
	assert.Regexp(t, `^whyslow diagnose: memory budget exceeded: limit exceeded: the evidence kept would take \S+ KiB, \S+ KiB more than Limits.MaxMemory \(256.0 KiB\), reading \S+\.prom; reading stopped \(the evidence kept may take 1/4 of --max-memory 1.0 MiB; --max-memory SIZE raises the budget\)\n$`, errs)

	code, _, errs = whyslow(t, "", "diagnose", "--max-memory", "10KiB", dir)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errs, "--max-memory \"10KiB\": want at least 1MiB")
}

// The guard exits with status 1 (the command) or cancels the run's
// context (in process) once the live heap passes the budget.
func TestGuardMemory(t *testing.T) {
	var stderr bytes.Buffer
	exited := make(chan int, 1)
	e := &env{stderr: &stderr, exit: func(code int) { exited <- code }}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	before := debug.SetMemoryLimit(-1)
	defer func(p time.Duration) { memoryPoll = p }(memoryPoll)
	memoryPoll = 200 * time.Millisecond // after the note below
	g := guardMemory(ctx, e, 1)         // any heap is more than one byte
	// The reader notes the input it reads in the guard's context.
	snapshot.NoteReading(g, "dumps/vllm-0/2026-09-22T10-00-00Z.prom")
	defer func() {
		for _, f := range e.cleanup {
			f()
		}
		assert.Equal(t, before, debug.SetMemoryLimit(-1), "the soft limit is restored")
	}()
	select {
	case code := <-exited:
		assert.Equal(t, exitInput, code)
	case <-time.After(10 * time.Second):
		t.Fatal("the guard did not fire")
	}
	<-g.Done()
	var me *memoryError
	require.True(t, errors.As(context.Cause(g), &me))
	assert.Contains(t, stderr.String(), "whyslow: memory budget exceeded: the live heap reached ")
	assert.Contains(t, stderr.String(), "more than --max-memory 1 B while reading dumps/vllm-0/2026-09-22T10-00-00Z.prom;")
	require.ErrorIs(t, memoryCause(g), me)
}
