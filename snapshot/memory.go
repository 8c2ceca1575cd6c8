package snapshot

import (
	"context"
	"fmt"
	"math"
	"sync"
)

// DefaultMaxMemory is the default of Limits.MaxMemory: 1 GiB of evidence
// kept, a quarter of the command's default --max-memory of 4 GiB (a
// diagnosis needs the rest for its per-interval aggregates).
const DefaultMaxMemory int64 = 1 << 30

// Bytes a reader counts against Limits.MaxMemory for what it keeps: a
// float sample is a time and a value; a histogram row is a time, a sum, a
// count and one count per bucket; a series adds its label bytes.
const (
	FloatSampleBytes = 16
	HistRowBytes     = 24
	BucketBytes      = 8
)

// MemoryBudget counts the bytes of evidence kept over one Read, every
// input together (dump files, TSDB directories, servers), against
// Limits.MaxMemory. Read creates one when Options.Memory is nil and passes
// it to every Source through Options; a Source calls Reserve where it
// keeps samples, and stops when it fails. It is safe for concurrent use.
type MemoryBudget struct {
	mu   sync.Mutex
	max  int64
	used int64
	err  error
}

// NewMemoryBudget returns a budget of max bytes (DefaultMaxMemory when
// max <= 0).
func NewMemoryBudget(max int64) *MemoryBudget {
	if max <= 0 {
		max = DefaultMaxMemory
	}
	return &MemoryBudget{max: max}
}

// Reserve counts n more bytes kept by what (a file, a TSDB, a server;
// named in the error). Once the total exceeds the budget it returns a
// *LimitError for "Limits.MaxMemory" saying by how much, and so does every
// later call: the first error is sticky (see Err). A nil budget accepts
// everything.
func (m *MemoryBudget) Reserve(n int64, what string) error {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return m.err
	}
	m.used += n
	if m.used > m.max {
		m.err = limitErr("Limits.MaxMemory", m.max, fmt.Sprintf(
			"the evidence kept would take %s, %s more than Limits.MaxMemory (%s), reading %s; reading stopped",
			fmtSize(m.used), fmtSize(m.used-m.max), fmtSize(m.max), escapeName(what)))
	}
	return m.err
}

// Release returns n bytes reserved earlier by what is no longer kept (a
// target handed to ReadEach's visitor and dropped). The error of an
// exceeded budget stays. A nil budget ignores it.
func (m *MemoryBudget) Release(n int64) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.used = max(m.used-n, 0)
}

// Used returns the bytes reserved so far (less those released).
func (m *MemoryBudget) Used() int64 {
	if m == nil {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.used
}

// Free returns the bytes that can still be reserved within the budget
// (none once it is exceeded); math.MaxInt64 for a nil budget.
func (m *MemoryBudget) Free() int64 {
	if m == nil {
		return math.MaxInt64
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return 0
	}
	return max(m.max-m.used, 0)
}

// Err returns the error of the reservation that exceeded the budget, or
// nil.
func (m *MemoryBudget) Err() error {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

// fmtSize formats a byte count with a binary unit (1.5 GiB).
func fmtSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n), -1
	for v >= unit && i < 4 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTP"[i])
}

// A ReadWatch tells which input a Read is reading at the moment, so that
// a program that stops a run for its memory (a guard on the live heap, as
// the whyslow command's --max-memory) can name it. Read, ReadEach and the
// sources note each file, stream, TSDB or server they start on in the
// ReadWatch of their context (see WithReadWatch and NoteReading), and
// clear it when they return. It is safe for concurrent use; the zero
// ReadWatch is ready to use.
type ReadWatch struct {
	mu   sync.Mutex
	what string
}

// Reading returns the input being read, as problems name it (a URL
// redacted, control characters escaped), or "" when no read is under way.
func (w *ReadWatch) Reading() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.what
}

type readWatchKey struct{}

// WithReadWatch returns a context under which Read, ReadEach and the
// sources note in w the input they read.
func WithReadWatch(ctx context.Context, w *ReadWatch) context.Context {
	return context.WithValue(ctx, readWatchKey{}, w)
}

// NoteReading notes in the ReadWatch of ctx, when it has one, that what
// (a path or URL as problems show it; "" when the read is over) is being
// read. A Source may call it for the parts of its input.
func NoteReading(ctx context.Context, what string) {
	readWatchOf(ctx).note(what)
}

func readWatchOf(ctx context.Context) *ReadWatch {
	w, _ := ctx.Value(readWatchKey{}).(*ReadWatch)
	return w
}

// note is NoteReading on w; a nil w ignores it.
func (w *ReadWatch) note(what string) {
	if w == nil {
		return
	}
	if what != "" {
		what = escapeName(what)
	}
	w.mu.Lock()
	w.what = what
	w.mu.Unlock()
}
