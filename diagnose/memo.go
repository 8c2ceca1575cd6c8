package diagnose

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// memo is a cache of values computed once per key, safe for concurrent
// use: the facts of a scope are measured on several goroutines (see
// computeFacts) and share the scope's caches. A value is computed by the
// first caller that asks for its key, outside the memo's lock; a caller
// asking for the same key meanwhile waits for that value instead of
// computing it again, so that every caller gets the same value (the same
// pointer, for a series) as one caller after another would. The values
// computed are functions of the evidence alone, so the order in which the
// goroutines ask changes nothing.
type memo[K comparable, V any] struct {
	mu sync.Mutex
	m  map[K]*memoEntry[V]
}

type memoEntry[V any] struct {
	once sync.Once
	done bool // set under memo.mu once v is final
	v    V
}

// get returns the value of k, computing it with f when no caller has.
func (m *memo[K, V]) get(k K, f func() V) V {
	e := m.entry(k)
	e.once.Do(func() {
		v := f()
		m.mu.Lock()
		e.v, e.done = v, true
		m.mu.Unlock()
	})
	return e.v
}

// peek returns the value of k when it has been computed, without
// computing it.
func (m *memo[K, V]) peek(k K) (V, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.m[k]; e != nil && e.done {
		return e.v, true
	}
	var zero V
	return zero, false
}

// add records v as the value of k unless k has one; when k is being
// computed, it waits for that value and keeps it.
func (m *memo[K, V]) add(k K, v V) {
	m.get(k, func() V { return v })
}

func (m *memo[K, V]) entry(k K) *memoEntry[V] {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = map[K]*memoEntry[V]{}
	}
	e := m.m[k]
	if e == nil {
		e = &memoEntry[V]{}
		m.m[k] = e
	}
	return e
}

// runParallel runs the tasks on up to GOMAXPROCS goroutines, taking them
// in order, and returns when all are done.
func runParallel(tasks []func()) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(tasks)) {
		wg.Go(func() {
			for k := int(next.Add(1) - 1); k < len(tasks); k = int(next.Add(1) - 1) {
				tasks[k]()
			}
		})
	}
	wg.Wait()
}
