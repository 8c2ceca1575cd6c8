package tsdb

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/tsdb/index"

	"github.com/whyslow/whyslow/snapshot"
	"github.com/whyslow/whyslow/snapshot/internal/store"
)

// ReadEach reads dir as Read does, but hands the targets to visit one at
// a time, in name order, each equal to the target of that name in Read's
// Evidence; it is the Source.ReadEach of the "tsdb" source (callers use
// snapshot.ReadEach). visit is called on the caller's goroutine, one
// target at a time; memory grows with one target's samples, not the
// fleet's. How it reads: docs/design-notes.md.
//
// The series of opts.LabelsOnly metrics come with their labels and no
// samples where the index and chunk headers show that their samples add
// nothing but themselves; the rest of each target is what Read gives.
// With opts.ForTarget, each target's sketch chooses more metrics to list
// so and metrics to leave out of that target (see passB.relist).
//
// span is called once, before the first visit, with the earliest and
// latest sample time (ms) of the chunks selected, within [opts.Start,
// opts.End]. An error returned by span or visit stops the read and is
// returned as is.
//
// The returned Evidence holds Sources and Problems and no Targets; its
// problems are Read's, those of one target coming with it. Limits apply
// per target as in Read (MaxSeriesPerScrape, MaxLabelBytes); opts.Memory
// is charged while a target is held and released after its visit; past
// Limits.MaxTotalBytes, counted over all targets, no further target is
// read. Where Read stops at a limit in the middle of the fleet, ReadEach
// may keep other samples; a corrupt series entry ends a block's series at
// the same series for both.
func ReadEach(ctx context.Context, dir string, opts snapshot.Options, span func(minT, maxT int64) error, visit func(*snapshot.Target) error) (ev *snapshot.Evidence, err error) {
	lim, mint, maxt, layout, matchers, err := prepareRead(dir, &opts)
	if err != nil {
		return nil, err
	}

	var problems []snapshot.Problem
	read := 0
	blocks, bprobs := openTSDBBlocks(layout, mint, maxt, opts)
	problems = append(problems, bprobs...)
	defer func() { err = errors.Join(err, closeBlocks(blocks)) }()

	var srcs []*eachSource
	for i, b := range blocks {
		if b.inRange {
			read++
			s := newEachSource(b.dir, &b.block.blockReaders, mint, maxt, b.minT, b.maxT-1)
			s.blk = &blocks[i]
			srcs = append(srcs, s)
		}
	}
	h, hprobs := openHeadFor(layout, opts, lim, blocks, mint, maxt)
	problems = append(problems, hprobs...)
	if h != nil {
		read++
		srcs = append(srcs, newEachSource(filepath.Join(dir, tsdbWALDir), &h.blockReaders, mint, maxt, h.minT, h.maxT))
	}
	if read == 0 {
		ev = &snapshot.Evidence{Sources: []string{dir}, Problems: problems}
		if ev.Partial() {
			return nil, nothingRead(dir, problems)
		}
		return ev, span(math.MaxInt64, math.MinInt64)
	}

	// Pass A: which targets, from the labels alone, and which series of
	// each source are theirs; the sources' indexes are read a few at once
	// (passA).
	targets, lo, hi, err := passA(ctx, dir, opts, srcs, matchers)
	if err != nil {
		return nil, err
	}
	if err := span(lo, hi); err != nil {
		return nil, err
	}
	var mapped int64 // bytes of block files read since the blocks were last opened
	for _, s := range srcs {
		for _, refs := range s.refs {
			s.series += len(refs)
		}
		for _, refs := range s.lrefs {
			s.series += len(refs)
		}
		mapped += s.mapped(s.series)
	}

	// Pass B: target by target, in name order, several decoded at once
	// (passB).
	names := make([]string, 0, len(targets))
	for n := range targets {
		names = append(names, n)
	}
	sort.Strings(names)
	progress := func(done int) {
		if opts.Progress != nil {
			opts.Progress(snapshot.Progress{Path: dir, What: "tsdb target", Done: done, Total: len(names)})
		}
	}
	pb := &passB{dir: dir, opts: opts, srcs: srcs, mint: mint, maxt: maxt}
	// Pass A read the index entries of the series selected: the blocks
	// are mapped afresh before the first target when that was much (see
	// remap), and again whenever enough was read since, with no target
	// decoding then.
	remap := func() {
		for _, s := range srcs {
			s.remap()
		}
		mapped = 0
	}
	if mapped > remapBytes {
		remap()
	}
	p := newPool(ctx, pb, names)
	defer p.stop()  // its workers must be done before the sources close
	var total int64 // bytes read over the targets so far
	for i := range names {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		progress(i)
		if total > lim.MaxTotalBytes {
			problems = append(problems, maxTotalProblem(dir, lim))
			break
		}
		if i > 0 && mapped > remapBytes {
			p.pause()
			remap()
		}
		p.allow(i)
		d := p.take(i)
		if d.err == nil {
			pb.largest = max(pb.largest, d.cols.Bytes())
		}
		// The size known, the workers go on while d is visited.
		p.allow(i)
		if d.err != nil {
			d.cols.Release()
			return nil, readErr(dir, d.err)
		}
		mapped += pb.deliver(d)
		problems = append(problems, d.tev.Problems...)
		total += d.cols.Bytes()
		for _, t := range d.tev.Targets {
			if err := visit(t); err != nil {
				d.cols.Release()
				return nil, err
			}
		}
		d.cols.Release()
	}
	p.stop()
	progress(len(names))
	for _, s := range srcs {
		problems = append(problems, s.problems...)
		if p, ok := s.lost.problem(s.name); ok {
			problems = append(problems, p)
		}
	}
	return &snapshot.Evidence{Sources: []string{dir}, Problems: problems}, nil
}

// passA surveys the index of every source (eachSource.survey), up to
// parallelism sources at once, each into its own refs and spans, and
// returns the names of the targets found and the earliest and latest
// chunk time. The first context error, in source order, is returned.
func passA(ctx context.Context, dir string, opts snapshot.Options, srcs []*eachSource, matchers []*labels.Matcher) (map[string]bool, int64, int64, error) {
	type found struct {
		targets map[string]bool
		lo, hi  int64
		err     error
	}
	out := make([]found, len(srcs))
	listed := labelsOnlyNames(opts)
	sketch := opts.ForTarget != nil
	sem := make(chan struct{}, min(parallelism(), maxWorkers))
	var wg sync.WaitGroup
	for i, s := range srcs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			namer := store.NewColumns(dir, opts)
			f := found{targets: map[string]bool{}, lo: math.MaxInt64, hi: math.MinInt64}
			f.err = s.survey(ctx, matchers, func(ref storage.SeriesRef, lset labels.Labels, minT, maxT int64) {
				f.lo, f.hi = min(f.lo, minT), max(f.hi, maxT)
				name, _ := namer.TargetName(lset)
				f.targets[name] = true
				if listed[lset.Get(model.MetricNameLabel)] {
					s.lrefs[name] = append(s.lrefs[name], ref)
					if sketch {
						s.lkinds[name] = append(s.lkinds[name], s.kindOf(lset))
					}
				} else {
					s.refs[name] = append(s.refs[name], ref)
					if sketch {
						s.rkinds[name] = append(s.rkinds[name], s.kindOf(lset))
					}
				}
				if sp, ok := s.spans[name]; ok {
					s.spans[name] = [2]int64{min(sp[0], minT), max(sp[1], maxT)}
				} else {
					s.spans[name] = [2]int64{minT, maxT}
				}
			})
			out[i] = f
		})
	}
	wg.Wait()
	targets := map[string]bool{}
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, f := range out {
		if f.err != nil {
			return nil, 0, 0, f.err
		}
		for n := range f.targets {
			targets[n] = true
		}
		lo, hi = min(lo, f.lo), max(hi, f.hi)
	}
	return targets, lo, hi, nil
}

// nothingRead is Read's error when no block or head could be read.
func nothingRead(dir string, problems []snapshot.Problem) error {
	errs := make([]error, 0, len(problems))
	for _, p := range problems {
		errs = append(errs, p)
	}
	return fmt.Errorf("snapshot: tsdb %s: nothing could be read: %w", dir, errors.Join(errs...))
}

// eachSource is a block or the head, opened once for ReadEach.
type eachSource struct {
	name       string        // the block's directory, or dir/wal
	br         *blockReaders // the block's or the head's
	mint, maxt int64         // the range read, within the source's own
	blk        *tsdbBlock    // the block br is, reopened by remap; nil for the head
	series     int           // the series pass A found
	lost       lostSeries
	problems   []snapshot.Problem // of the whole source, each once
	seen       map[string]bool
	// refs are the series of each target (by name) that pass A found,
	// in the index's order; a target's are dropped once it is read.
	refs map[string][]storage.SeriesRef
	// lrefs are, likewise, the series of each target of the metrics of
	// snapshot.Options.LabelsOnly (see passB.listLabelsOnly).
	lrefs map[string][]storage.SeriesRef
	// spans are the earliest and latest time of each target's chunks
	// (within the range read).
	spans map[string][2]int64
	// With snapshot.Options.ForTarget, rkinds and lkinds are, beside
	// refs and lrefs, the kind of each series (an index in kinds), from
	// which passB.relist sketches the target; kindIdx finds a kind in
	// kinds.
	rkinds  map[string][]int32
	lkinds  map[string][]int32
	kinds   []seriesKind
	kindIdx map[seriesKind]int32
}

// seriesKind is what a target's sketch (store.Sketch) takes of a
// series: its sample name, and whether it has an le or a quantile label,
// which decide its family's type.
type seriesKind struct {
	name         string
	le, quantile bool
}

// labels returns the labels of a series of kind k in a sketch.
func (k seriesKind) labels() labels.Labels {
	kv := []string{model.MetricNameLabel, k.name}
	if k.le {
		kv = append(kv, labels.BucketLabel, "+Inf")
	}
	if k.quantile {
		kv = append(kv, "quantile", "0.5")
	}
	return labels.FromStrings(kv...)
}

// kindOf returns the index in s.kinds of the kind of the series lset,
// adding it when new (its name copied: lset's memory is the index
// reader's).
func (s *eachSource) kindOf(lset labels.Labels) int32 {
	k := seriesKind{name: lset.Get(model.MetricNameLabel), le: lset.Has(labels.BucketLabel), quantile: lset.Has("quantile")}
	if i, ok := s.kindIdx[k]; ok {
		return i
	}
	k.name = strings.Clone(k.name)
	i := int32(len(s.kinds))
	s.kinds = append(s.kinds, k)
	s.kindIdx[k] = i
	return i
}

// files returns the block's files, nil for the head.
func (s *eachSource) files() *blockFiles {
	if s.blk == nil {
		return nil
	}
	return s.blk.files
}

// newEachSource returns the source of br, read over [mint, maxt]; its
// samples lie in [srcMin, srcMax].
func newEachSource(name string, br *blockReaders, mint, maxt, srcMin, srcMax int64) *eachSource {
	return &eachSource{name: name, br: br, mint: max(mint, srcMin), maxt: min(maxt, srcMax),
		lost: lostSeries{byLabels: true}, seen: map[string]bool{}, refs: map[string][]storage.SeriesRef{}, lrefs: map[string][]storage.SeriesRef{}, spans: map[string][2]int64{},
		rkinds: map[string][]int32{}, lkinds: map[string][]int32{}, kindIdx: map[seriesKind]int32{}}
}

// problem records a problem of the whole source once: every target's
// selection meets it again.
func (s *eachSource) problem(sev snapshot.Severity, err error) {
	p := snapshot.Problem{Severity: sev, File: s.name, Offset: -1, Err: err}
	if k := p.String(); !s.seen[k] {
		s.seen[k] = true
		s.problems = append(s.problems, p)
	}
}

// remapBytes bounds the bytes of block files that ReadEach reads through
// one mapping of the blocks (see eachSource.remap), estimated as each
// block's size times the share of its series read through the maps
// (eachSource.mapped): pass A's postings, and the series that the block's
// own readers read instead of its files (selectSeries' fallbacks, files
// that cannot be read). A variable for tests.
var remapBytes int64 = 2 << 20

// mapped estimates the bytes of the block's files that reading n of its
// series touches: its size times their share of the block's series (by
// its meta, or those pass A found when the meta says fewer). A question
// that reads a few metrics of a large block thus reopens it rarely. Zero
// for the head, which is not mapped.
func (s *eachSource) mapped(n int) int64 {
	if s.blk == nil {
		return 0
	}
	total := max(int64(s.blk.block.meta.Stats.NumSeries), int64(s.series))
	if total == 0 {
		return 0
	}
	return s.blk.block.size * int64(n) / total
}

// remap closes the block and opens it again, when the source is a
// block. A block's index and chunk files are mapped into memory, and
// every page read stays in the process's resident set while the block is
// open: over a long history, read target by target, the whole TSDB
// would. Closing unmaps it (the pages stay in the page cache, shared,
// not the reader's); series refs are offsets in the files and hold
// across. A block that cannot be opened again is read on as it was. No
// worker may be reading the source meanwhile.
func (s *eachSource) remap() {
	if s.blk == nil {
		return
	}
	nb, p := openBlock(s.blk.dir, s.blk.block.meta)
	if p != nil {
		return
	}
	if err := s.blk.block.Close(); err != nil {
		s.problem(snapshot.SeverityWarning, fmt.Errorf("closing block: %w", err))
	}
	s.blk.block, s.br = nb, &nb.blockReaders
}

// survey calls fn for every series of the source that matches ms and has
// a chunk in the range read, in the index's order, with its ref, labels and the time range of those
// chunks (within the range read), from the index alone: no sample is
// decoded. Problems of the index are recorded; only a context error is
// returned.
func (s *eachSource) survey(ctx context.Context, ms []*labels.Matcher, fn func(ref storage.SeriesRef, lset labels.Labels, minT, maxT int64)) error {
	ir := s.br.ir
	p, err := postingsForMatchers(ctx, ir, ms)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		s.problem(snapshot.SeverityError, fmt.Errorf("%w: %w", ErrBadBlock, err))
		return nil
	}
	// The refs first, so that their entries are read in runs (see
	// blockReader); a postings error is reported after the series before
	// it, as while iterating.
	refs, perr := index.ExpandPostings(p)
	r := s.files().reader(ir, nil)
	defer r.release()
	r.expectSeries(refs)
	var (
		sb   labels.ScratchBuilder
		chks []chunks.Meta
	)
	for n, ref := range refs {
		if n%4096 == 4095 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if err := r.Series(ref, &sb, &chks); err != nil {
			if errors.Is(err, storage.ErrNotFound) {
				continue
			}
			s.problem(snapshot.SeverityError, fmt.Errorf("%w: %w", ErrBadBlock, fmt.Errorf("get series %d: %w", ref, err)))
			return nil
		}
		lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
		for _, c := range chks {
			if c.MaxTime < s.mint || c.MinTime > s.maxt {
				continue
			}
			lo, hi = min(lo, max(c.MinTime, s.mint)), max(hi, min(c.MaxTime, s.maxt))
		}
		if lo > hi {
			continue // no chunk in the range: selectSeries skips it too
		}
		fn(ref, sb.Labels(), lo, hi)
	}
	if err := perr; err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		s.problem(snapshot.SeverityError, fmt.Errorf("%w: %w", ErrBadBlock, err))
	}
	return nil
}
