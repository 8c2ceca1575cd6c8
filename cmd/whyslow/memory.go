package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"

	"github.com/whyslow/whyslow/snapshot"
)

// fallbackMaxMemory is the default of --max-memory where the machine's
// memory cannot be read.
const fallbackMaxMemory int64 = 4 << 30

// defaultMaxMemory is the default of --max-memory, the memory budget of a
// whole run: three quarters of the memory the process may use (the
// machine's MemTotal, or the cgroup's memory.max when lower), else
// fallbackMaxMemory.
func defaultMaxMemory() int64 {
	avail := int64(0)
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				if kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64); err == nil {
					avail = kb << 10
				}
			}
		}
	}
	for _, f := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		if data, err := os.ReadFile(f); err == nil {
			if n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64); err == nil && n > 0 && (avail == 0 || n < avail) {
				avail = n
			}
		}
	}
	if avail <= 0 {
		return fallbackMaxMemory
	}
	return avail / 4 * 3
}

// evidenceShare is the part of --max-memory the evidence kept may take
// (snapshot.Limits.MaxMemory): a diagnosis holds per-interval aggregates,
// timelines and facts besides, measured at 6-10x the samples kept (see
// snapshot/tsdb/TSDB_BENCHMARKS.md).
const evidenceShare = 4

// memoryPoll is how often the guard reads the live heap (a variable for
// tests).
var memoryPoll = 50 * time.Millisecond

// memoryError is the error of a run whose live heap passed --max-memory.
type memoryError struct {
	heap, budget uint64
	reading      string // the input being read then, if any
}

func (e *memoryError) Error() string {
	at := ""
	if e.reading != "" {
		at = " while reading " + e.reading
	}
	return fmt.Sprintf("memory budget exceeded: the live heap reached %s, %s more than --max-memory %s%s; stopped instead of running out of memory (--max-memory SIZE raises the budget)",
		fmtMem(int64(e.heap)), fmtMem(int64(e.heap-e.budget)), fmtMem(int64(e.budget)), at)
}

// memoryBudget returns the budget of --max-memory in bytes.
func (f *inputFlags) memoryBudget() (int64, error) {
	if f.maxMemory == "" {
		return defaultMaxMemory(), nil
	}
	n, err := parseSize(f.maxMemory)
	if err != nil {
		return 0, usagef("--max-memory %q: %v", f.maxMemory, err)
	}
	if n < 1<<20 {
		return 0, usagef("--max-memory %q: want at least 1MiB", f.maxMemory)
	}
	return n, nil
}

// guardMemory enforces a run's memory budget: it sets the runtime's soft
// memory limit to budget (the garbage collector works harder as the heap
// nears it) and watches the live heap until ctx is done. When the heap
// passes the budget it cancels the returned context with a *memoryError
// and, if e.exit is set (the real command), prints the error and exits
// with status 1 at once: a diagnosis under way does not watch ctx, and
// exiting cleanly beats the runtime's out-of-memory crash. When the
// command returns (run calls e.cleanup) the guard stops and the previous
// soft limit is restored. The error names the input being read then: the
// returned context carries a snapshot.ReadWatch that the reader keeps
// told.
func guardMemory(ctx context.Context, e *env, budget int64) context.Context {
	watch := &snapshot.ReadWatch{}
	ctx = snapshot.WithReadWatch(ctx, watch)
	ctx, cancel := context.WithCancelCause(ctx)
	prev := debug.SetMemoryLimit(budget)
	poll := memoryPoll
	done := make(chan struct{})
	// When the command returns, stop the guard and restore the soft limit
	// before run returns, so that in-process runs one after the other
	// (tests) never leave one's limit behind.
	e.cleanup = append(e.cleanup, func() {
		cancel(nil)
		<-done
		debug.SetMemoryLimit(prev)
	})
	go func() {
		defer close(done)
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		tick := time.NewTicker(poll)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			metrics.Read(s)
			if h := s[0].Value.Uint64(); h > uint64(budget) {
				err := &memoryError{heap: h, budget: uint64(budget), reading: watch.Reading()}
				cancel(err)
				if e.exit != nil {
					fmt.Fprintf(e.stderr, "whyslow: %v\n", err)
					e.exit(exitInput)
				}
				return
			}
		}
	}()
	return ctx
}

// memoryCause returns the *memoryError that cancelled ctx, or nil.
func memoryCause(ctx context.Context) error {
	var me *memoryError
	if c := context.Cause(ctx); ctx.Err() != nil && errors.As(c, &me) {
		return me
	}
	return nil
}

// evidenceBudgetErr explains an error of snapshot.Read for exceeding
// snapshot.Limits.MaxMemory in terms of --max-memory; nil for any other.
func evidenceBudgetErr(err error, budget int64) error {
	var le *snapshot.LimitError
	if !errors.As(err, &le) || le.Limit != "Limits.MaxMemory" {
		return nil
	}
	return fmt.Errorf("memory budget exceeded: %s (the evidence kept may take 1/%d of --max-memory %s; --max-memory SIZE raises the budget)",
		trimPackage(err.Error()), evidenceShare, fmtMem(budget))
}

// fmtMem formats a byte count with a binary unit and one decimal
// (2.2 MiB), as the reader's budget errors do.
func fmtMem(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n), -1
	for v >= 1024 && i < 4 {
		v /= 1024
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTP"[i])
}
