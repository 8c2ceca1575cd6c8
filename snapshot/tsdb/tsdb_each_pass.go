package tsdb

import (
	"context"
	"fmt"
	"runtime"
	"sync"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/index"

	"github.com/whyslow/whyslow/snapshot"
	"github.com/whyslow/whyslow/snapshot/internal/store"
)

// maxWorkers caps the targets ReadEach decodes at once.
const maxWorkers = 4

// parallelism is how many goroutines may decode targets at once
// (GOMAXPROCS; a variable for tests).
var parallelism = func() int { return runtime.GOMAXPROCS(0) }

// maxHeldBytes caps the samples (store.Columns.Bytes) of the targets
// ReadEach holds at once, at the largest size so far: those decoded in
// parallel (passB.workers), and with them, as many more decoded ahead
// while the caller visits (passB.ahead); one bound for both, since either
// way that many bytes are held. A target's samples over the range read
// are the only memory of ReadEach that grows with the history: small
// targets are decoded several at once and ahead, larger ones (a long
// history) fewer at once, the largest one at a time, so that the peak
// grows with one target's samples, not the fleet's. Sizes and timings are
// in TSDB_BENCHMARKS.md.
const maxHeldBytes = 48 << 20

// passB decodes the targets of ReadEach's second pass, several at once
// when the machine and the memory budget allow: each by one worker,
// through the worker's own querier of every source, into its own
// store.Columns. The targets are then delivered in name order, and what
// their reads found wrong in a source is recorded there as a reading of
// one target after the other records it.
type passB struct {
	dir        string
	opts       snapshot.Options
	srcs       []*eachSource
	mint, maxt int64
	largest    int64 // bytes of the largest target decoded so far
}

// decodedTarget is one target read by a worker.
type decodedTarget struct {
	name  string
	cols  *store.Columns
	tev   *snapshot.Evidence
	lost  []lostSeries  // by source
	probs [][]srcReport // by source, in the order reported
	// viaMaps counts, by source, the series read through the block's
	// own (mapped) readers rather than its files (see remap).
	viaMaps []int
	err     error
}

// srcReport is a problem of a whole source met while reading a target.
type srcReport struct {
	sev snapshot.Severity
	err error
}

// workers returns how many targets are decoded at once: one while no
// target's size is known; then GOMAXPROCS (at most maxWorkers), fewer
// when that many targets of the largest size so far exceed
// maxHeldBytes, or when the memory budget's free bytes do not hold them
// three times over (so that a budget that holds one target but not two
// is read one target at a time).
func (p *passB) workers() int {
	if p.largest == 0 {
		return 1
	}
	n := min(parallelism(), maxWorkers)
	for n > 1 && (int64(n)*p.largest > maxHeldBytes || p.opts.Memory.Free()/int64(n) < 3*p.largest) {
		n--
	}
	return n
}

// ahead reports whether n targets may be decoded while n more are held
// (being decoded or delivered, then handed to visit on the caller's
// goroutine): when 2n targets at the largest size so far stay under
// maxHeldBytes and the budget's free bytes hold n of them three times
// over. Decoding ahead keeps the machine's cores busy while the caller
// works on a target; it never changes which targets are delivered or in
// which order.
func (p *passB) ahead(n int) bool {
	return p.largest > 0 && 2*int64(n)*p.largest <= maxHeldBytes && p.opts.Memory.Free()/int64(n) >= 3*p.largest
}

// held is how many targets may be held at once from the one the caller
// takes next: workers(), or twice that when they may be decoded ahead.
func (p *passB) held() int {
	n := p.workers()
	if p.ahead(n) {
		return 2 * n
	}
	return n
}

// decodeJob is what a worker needs of one target: its name and, by
// source, its series and their chunks' span. They are taken from the
// sources' maps before the workers start, so that the caller may deliver
// a target (which edits the maps) while they run.
type decodeJob struct {
	name   string
	refs   [][]storage.SeriesRef
	lrefs  [][]storage.SeriesRef // of the metrics listed by labels (passB.listLabelsOnly)
	kinds  [][]int32             // beside refs, with snapshot.Options.ForTarget (eachSource.rkinds)
	lkinds [][]int32             // beside lrefs, likewise
	spans  [][2]int64
}

// relist asks snapshot.Options.ForTarget what to read of target j,
// showing it the target's sketch (one series of each kind pass A found,
// see seriesKind), and returns j without the series of the metrics to
// skip, and with those of the metrics to list by labels moved from refs
// to lrefs, in the index's order.
func (p *passB) relist(j decodeJob) decodeJob {
	seen := map[seriesKind]bool{}
	var lsets []labels.Labels
	for i, s := range p.srcs {
		for _, kinds := range [][]int32{j.kinds[i], j.lkinds[i]} {
			for _, k := range kinds {
				if kd := s.kinds[k]; !seen[kd] {
					seen[kd] = true
					lsets = append(lsets, kd.labels())
				}
			}
		}
	}
	sel := p.opts.ForTarget(store.Sketch(j.name, lsets))
	more := labelsOnlyNames(snapshot.Options{LabelsOnly: sel.LabelsOnly})
	skip := labelsOnlyNames(snapshot.Options{LabelsOnly: sel.Skip})
	if len(more) == 0 && len(skip) == 0 {
		return j
	}
	out := j
	out.refs, out.lrefs, out.kinds, out.lkinds = make([][]storage.SeriesRef, len(j.refs)), make([][]storage.SeriesRef, len(j.lrefs)), nil, nil
	for i, s := range p.srcs {
		var keep, list, listed []storage.SeriesRef
		for k, ref := range j.refs[i] {
			switch name := s.kinds[j.kinds[i][k]].name; {
			case skip[name]:
			case more[name]:
				list = append(list, ref)
			default:
				keep = append(keep, ref)
			}
		}
		for k, ref := range j.lrefs[i] {
			if !skip[s.kinds[j.lkinds[i][k]].name] {
				listed = append(listed, ref)
			}
		}
		out.refs[i] = keep
		out.lrefs[i] = mergeRefs(listed, list)
	}
	return out
}

// mergeRefs returns the refs of a and b (each ascending, as an index's
// postings) in one ascending slice; a itself when b is empty.
func mergeRefs(a, b []storage.SeriesRef) []storage.SeriesRef {
	if len(b) == 0 {
		return a
	}
	out := make([]storage.SeriesRef, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if a[0] < b[0] {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return append(append(out, a...), b...)
}

// A pool decodes the targets of pass B on its workers: a worker
// takes the next target in name order as soon as it is done with one,
// while the targets from the one the caller takes next (take) up to the
// limit it allows (allow: passB.held of them) are not all taken. Unlike
// batches of targets decoded together, no worker waits for another's
// target to end before it starts the next; the caller still gets the
// targets one by one in name order, and holds no more of them at once.
type pool struct {
	ctx  context.Context
	pb   *passB
	jobs []decodeJob
	wg   sync.WaitGroup

	mu      sync.Mutex
	cond    sync.Cond // a target done, the limit moved, or the pool stopping
	next    int       // the next target a worker takes
	limit   int       // workers take targets before this one only
	busy    int       // targets being decoded
	got     []*decodedTarget
	taken   int // targets the caller took
	stopped bool
	most    int // the most targets taken by workers and not yet by the caller
}

// poolDone, when set (by tests), is called as a pool stops with the most
// targets it held at once: taken by its workers and not yet by the
// caller.
var poolDone func(most int)

// newPool starts the workers of pb on the targets names, none allowed
// yet.
func newPool(ctx context.Context, pb *passB, names []string) *pool {
	n := min(parallelism(), maxWorkers, max(len(names), 1))
	p := &pool{ctx: ctx, pb: pb, jobs: make([]decodeJob, len(names)), got: make([]*decodedTarget, len(names))}
	p.cond.L = &p.mu
	for k, name := range names {
		j := decodeJob{name: name, refs: make([][]storage.SeriesRef, len(pb.srcs)), lrefs: make([][]storage.SeriesRef, len(pb.srcs)),
			kinds: make([][]int32, len(pb.srcs)), lkinds: make([][]int32, len(pb.srcs)), spans: make([][2]int64, len(pb.srcs))}
		for i, s := range pb.srcs {
			j.refs[i], j.lrefs[i], j.spans[i] = s.refs[name], s.lrefs[name], s.spans[name]
			j.kinds[i], j.lkinds[i] = s.rkinds[name], s.lkinds[name]
		}
		p.jobs[k] = j
	}
	for range n {
		p.wg.Go(p.work)
	}
	return p
}

// work is a worker's loop: the next target allowed, until none is left
// or the pool stops.
func (p *pool) work() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		for !p.stopped && p.next < len(p.jobs) && p.next >= p.limit {
			p.cond.Wait()
		}
		if p.stopped || p.next >= len(p.jobs) {
			return
		}
		k := p.next
		p.next++
		p.busy++
		p.most = max(p.most, p.next-p.taken)
		j := p.jobs[k]
		p.mu.Unlock()
		d := p.pb.decodeOne(p.ctx, j)
		p.mu.Lock()
		p.busy--
		if p.stopped {
			d.cols.Release() // the caller is gone
		} else {
			p.got[k] = d
		}
		p.cond.Broadcast()
	}
}

// allow lets the workers take the targets up to passB.held from i, the
// one the caller takes next (at least i itself).
func (p *pool) allow(i int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if l := i + max(p.pb.held(), 1); l != p.limit {
		p.limit = l
		p.cond.Broadcast()
	}
}

// take returns target i, decoded, once it is: the caller must have
// allowed it. The pool forgets it.
func (p *pool) take(i int) *decodedTarget {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.got[i] == nil {
		p.cond.Wait()
	}
	d := p.got[i]
	p.got[i], p.jobs[i] = nil, decodeJob{}
	p.taken = i + 1
	return d
}

// pause returns when no target is being decoded, and lets the workers take
// none until the caller allows more: the sources may then be remapped.
func (p *pool) pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.limit = min(p.limit, p.next)
	for p.busy > 0 {
		p.cond.Wait()
	}
}

// stop stops the workers, waits for them, and releases the targets
// decoded and not taken. It may be called more than once.
func (p *pool) stop() {
	p.mu.Lock()
	again := p.stopped
	p.stopped = true
	p.cond.Broadcast()
	p.mu.Unlock()
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, d := range p.got {
		if d != nil {
			d.cols.Release()
			p.got[k] = nil
		}
	}
	if poolDone != nil && !again {
		poolDone(p.most)
	}
}

// decodeOne reads target j's series of every source.
func (p *passB) decodeOne(ctx context.Context, j decodeJob) *decodedTarget {
	d := &decodedTarget{name: j.name, cols: store.NewColumns(p.dir, p.opts),
		lost: make([]lostSeries, len(p.srcs)), probs: make([][]srcReport, len(p.srcs)), viaMaps: make([]int, len(p.srcs))}
	if p.opts.ForTarget != nil {
		j = p.relist(j)
	}
	// later is the time the target's chunks span in the source read and
	// those after it, for sizing its columns once.
	var later float64
	for i := range p.srcs {
		if len(j.refs[i]) > 0 || len(j.lrefs[i]) > 0 {
			later += float64(j.spans[i][1] - j.spans[i][0] + 1)
		}
	}
	for i := range p.srcs {
		refs := j.refs[i]
		if len(refs) == 0 {
			continue
		}
		sp := j.spans[i]
		here := float64(sp[1] - sp[0] + 1)
		ahead := later / here
		later -= here
		d.lost[i].byLabels = true
		if err := p.decodeSource(ctx, i, refs, ahead, d); err != nil {
			d.err = err
			return d
		}
	}
	if err := p.listLabelsOnly(ctx, j, d); err != nil {
		d.err = err
		return d
	}
	d.tev = d.cols.Evidence()
	return d
}

// decodeSource reads the series refs of source i into d: chunk by chunk
// (decodeRefs), through selectSeries where decodeRefs hands over; ahead
// is as for selectSeries.
func (p *passB) decodeSource(ctx context.Context, i int, refs []storage.SeriesRef, ahead float64, d *decodedTarget) error {
	s := p.srcs[i]
	viaMaps := func(refs []storage.SeriesRef) error {
		d.viaMaps[i] += len(refs)
		return selectSeries(ctx, d.cols, s.name, s.br, index.NewListPostings(refs), p.mint, p.maxt, ahead, &d.lost[i],
			func(sev snapshot.Severity, err error) { d.probs[i] = append(d.probs[i], srcReport{sev, err}) })
	}
	if directDecode {
		return decodeRefs(ctx, d.cols, s.name, s.br, s.files(), refs, p.mint, p.maxt, ahead, viaMaps)
	}
	return viaMaps(refs)
}

// deliver records what reading d found wrong in each source, as reading
// it alone would have, forgets its series refs, and returns the bytes of
// block files it read through their maps (see remap).
func (p *passB) deliver(d *decodedTarget) (mapped int64) {
	for i, s := range p.srcs {
		for _, r := range d.probs[i] {
			s.problem(r.sev, r.err)
		}
		s.lost.merge(&d.lost[i])
		n := d.viaMaps[i]
		if s.blk != nil && !s.files().readable() {
			n = len(s.refs[d.name]) + len(s.lrefs[d.name])
		}
		mapped += s.mapped(n)
		delete(s.refs, d.name)
		delete(s.lrefs, d.name)
		delete(s.rkinds, d.name)
		delete(s.lkinds, d.name)
		delete(s.spans, d.name)
	}
	return mapped
}

// maxTotalProblem is the problem of a read stopped by MaxTotalBytes.
func maxTotalProblem(dir string, lim snapshot.Limits) snapshot.Problem {
	return snapshot.Problem{Severity: snapshot.SeverityError, File: dir, Offset: -1,
		Err: fmt.Errorf("%w: samples read exceed snapshot.Limits.MaxTotalBytes (%d bytes); reading stopped, result is partial", snapshot.ErrLimit, lim.MaxTotalBytes)}
}
