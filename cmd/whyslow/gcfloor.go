package main

import (
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// The survey of a long history (diagnose without --incident, on a TSDB)
// allocates much and holds little, so that the collector, which starts a
// cycle each time the heap doubles, runs many cycles and takes a large
// share of the survey's CPU (figures in snapshot/tsdb/TSDB_BENCHMARKS.md).
// While it surveys, the command
// lets the heap grow to surveyHeapFloor before a cycle (or to twice the
// live heap above that; GOGC at most surveyMaxGOGC): the survey's heap is
// then the size of what the diagnosis holds afterwards, which sets the
// run's peak, and the peak does not grow. The live heap is read every
// gcPoll.
const (
	surveyHeapFloor = 128 << 20
	surveyMaxGOGC   = 400
	gcPoll          = 10 * time.Millisecond
)

// gcPercentFor is the GOGC percent that lets a heap whose live part is
// live grow to floor before a collection: (floor - live) / live, at most
// most, and 100 (the default: a heap of twice its live part) where that
// is more.
func gcPercentFor(live, floor uint64, most int) int {
	if live == 0 || live >= floor/2 {
		return 100
	}
	p := (floor - live) * 100 / live
	return int(min(p, uint64(most)))
}

// raiseGCFloor sets GOGC from the live heap every poll (gcPercentFor)
// until the returned stop is called, which restores the default (100). It
// does nothing where GOGC is set otherwise (by the environment or a
// caller). The live heap is the runtime's count at the end of the last
// cycle (/gc/heap/live:bytes).
func raiseGCFloor(floor uint64, most int, poll time.Duration) (stop func()) {
	prev := debug.SetGCPercent(100)
	if prev != 100 {
		debug.SetGCPercent(prev)
		return func() {} // GOGC set otherwise: the user's choice
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		set := prev
		tick := time.NewTicker(poll)
		defer tick.Stop()
		for {
			metrics.Read(s)
			if p := gcPercentFor(s[0].Value.Uint64(), floor, most); p != set {
				debug.SetGCPercent(p)
				set = p
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() {
		close(done)
		<-finished
		debug.SetGCPercent(prev)
	}
}

// A server's answers are JSON decoded into short-lived values, several
// times the size of the samples kept, and the diagnosis of the windows
// read allocates as much again: while the command diagnoses a server
// with --pushdown, a collection starts when the heap grows by half
// (serverReadGOGC) rather than doubles, which lowers the peak at about
// the same time (the server answers slower than the collector works;
// figures in snapshot/tsdb/TSDB_BENCHMARKS.md).
const serverReadGOGC = 50

// lowerGC sets GOGC to percent until the returned stop is called, which
// restores the default (100). It does nothing where GOGC is set
// otherwise (by the environment or a caller).
func lowerGC(percent int) (stop func()) {
	prev := debug.SetGCPercent(percent)
	if prev != 100 {
		debug.SetGCPercent(prev)
		return func() {}
	}
	return func() { debug.SetGCPercent(prev) }
}
