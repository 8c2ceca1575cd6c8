// Package heappeak measures the peak of the live heap while a test or a
// benchmark runs an operation: the memory bounds of the readers (a gzip
// bomb, a large TSDB, a fleet of dumps) are asserted or reported with it.
// It is for tests only; no library package imports it.
package heappeak

import (
	"runtime"
	"runtime/metrics"
	"sync"
	"time"
)

// heapObjects is the runtime metric sampled: the bytes of heap objects,
// live or not yet swept.
const heapObjects = "/memory/classes/heap/objects:bytes"

// Peak is what a sampling saw.
type Peak struct {
	// Max is the highest heap seen while sampling, in bytes, the
	// process's own baseline included (as a run of the binary would
	// have it).
	Max uint64
	// Base is the heap at the start, just after a GC.
	Base uint64
}

// Above is the peak above the heap at the start (0 if the heap never grew
// past it).
func (p Peak) Above() uint64 {
	if p.Max < p.Base {
		return 0
	}
	return p.Max - p.Base
}

// read returns the current value of heapObjects.
func read() uint64 {
	s := []metrics.Sample{{Name: heapObjects}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// Start runs a GC, reads the baseline, then samples the heap at once and
// every tick until stop is called; stop returns what it saw.
func Start(tick time.Duration) (stop func() Peak) {
	runtime.GC()
	base := read()
	var (
		peak uint64
		done = make(chan struct{})
		wg   sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			peak = max(peak, read())
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() Peak {
		close(done)
		wg.Wait() // the sampler has stopped: peak is ours to read
		return Peak{Max: peak, Base: base}
	}
}
