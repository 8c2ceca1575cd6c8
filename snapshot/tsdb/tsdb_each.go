package tsdb

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/tsdb/index"

	"github.com/whyslow/whyslow/snapshot"
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
	defer func() {
		for _, s := range srcs {
			s.close()
		}
	}()
	for i, b := range blocks {
		if b.inRange {
			read++
			if s, err := openEachSource(b.dir, b.block, mint, maxt, b.block.MaxTime()-1); err == nil {
				s.blk = &blocks[i]
				srcs = append(srcs, s)
			} else {
				problems = append(problems, querierProblem(b.dir, err))
			}
		}
	}
	var head *tsdbHead
	defer func() {
		if head != nil {
			err = errors.Join(err, head.Close())
		}
	}()
	h, hprobs := openHeadFor(layout, opts, lim, blocks, mint, maxt)
	problems = append(problems, hprobs...)
	if h != nil {
		head = h
		read++
		rh := tsdb.NewRangeHead(h.head, mint, maxt)
		name := filepath.Join(dir, tsdbWALDir)
		if s, err := openEachSource(name, rh, mint, maxt, h.head.MaxTime()); err == nil {
			srcs = append(srcs, s)
		} else {
			problems = append(problems, querierProblem(name, err))
		}
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
		if p, ok := s.close(); ok {
			problems = append(problems, p)
		}
	}
	if head != nil {
		if p, ok := sandboxProblem(head, head.Close()); ok {
			problems = append(problems, p)
		}
		head = nil
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
			namer := snapshot.NewColumns(dir, opts)
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
	name       string // the block's directory, or dir/wal
	br         tsdb.BlockReader
	qs         []refQuerier // on br, one a worker of pass B
	qmin, qmax int64        // their range (the range read)
	mint, maxt int64        // the range read, within the source's own
	blk        *tsdbBlock   // the block br is, reopened by remap; nil for the head
	series     int          // the series pass A found
	closed     bool
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

// seriesKind is what a target's sketch (snapshot.Sketch) takes of a
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

// openEachSource opens a querier on br for [mint, maxt]; srcMax is the
// latest sample time br may hold.
func openEachSource(name string, br tsdb.BlockReader, mint, maxt, srcMax int64) (*eachSource, error) {
	rq, err := newRefQuerier(br, mint, maxt)
	if err != nil {
		return nil, err
	}
	return &eachSource{name: name, br: br, qs: []refQuerier{rq}, qmin: mint, qmax: maxt, mint: max(mint, br.Meta().MinTime), maxt: min(maxt, srcMax),
		lost: lostSeries{byLabels: true}, seen: map[string]bool{}, refs: map[string][]storage.SeriesRef{}, lrefs: map[string][]storage.SeriesRef{}, spans: map[string][2]int64{},
		rkinds: map[string][]int32{}, lkinds: map[string][]int32{}, kindIdx: map[seriesKind]int32{}}, nil
}

// allSeries is the matcher of every series of an index
// (tsdb.PostingsForMatchers asks the index for its index.AllPostingsKey):
// through a refIndex, every series of one target.
var allSeries = &labels.Matcher{Type: labels.MatchEqual, Name: "", Value: ""}

// refBlock is a block or the head whose index is seen through a
// refIndex: a querier on it selects, with allSeries, exactly the series
// refs set, and reads them (labels, chunks, tombstones, trimming to the
// querier's range) as a Select of those series on the block itself.
type refBlock struct {
	tsdb.BlockReader
	index *refIndex
}

// Index returns the block's index reader seen through a refIndex.
func (b *refBlock) Index() (tsdb.IndexReader, error) {
	ir, err := b.BlockReader.Index()
	if err != nil {
		return nil, err
	}
	b.index = &refIndex{IndexReader: ir}
	return b.index, nil
}

// refIndex is an index reader whose postings are restricted to refs:
// ReadEach sets refs to the series of one target, found by pass A, so
// that a target's selection costs no matcher and no postings merge.
type refIndex struct {
	tsdb.IndexReader
	refs []storage.SeriesRef // sorted as the index gave them
}

// Postings returns the postings of name and values among refs; of
// index.AllPostingsKey, refs themselves.
func (ix *refIndex) Postings(ctx context.Context, name string, values ...string) (index.Postings, error) {
	if k, v := index.AllPostingsKey(); name == k && len(values) == 1 && values[0] == v {
		return index.NewListPostings(ix.refs), nil
	}
	p, err := ix.IndexReader.Postings(ctx, name, values...)
	if err != nil {
		return nil, err
	}
	return index.Intersect(p, index.NewListPostings(ix.refs)), nil
}

// PostingsForLabelMatching returns the postings of the underlying index
// among refs.
func (ix *refIndex) PostingsForLabelMatching(ctx context.Context, name string, match func(string) bool) index.Postings {
	return index.Intersect(ix.IndexReader.PostingsForLabelMatching(ctx, name, match), index.NewListPostings(ix.refs))
}

// PostingsForAllLabelValues returns the postings of the underlying index
// among refs.
func (ix *refIndex) PostingsForAllLabelValues(ctx context.Context, name string) index.Postings {
	return index.Intersect(ix.IndexReader.PostingsForAllLabelValues(ctx, name), index.NewListPostings(ix.refs))
}

// querierProblem is the problem of a source whose querier cannot be
// opened, as readSource records it.
func querierProblem(name string, err error) snapshot.Problem {
	return snapshot.Problem{Severity: snapshot.SeverityError, File: name, Offset: -1, Err: fmt.Errorf("%w: %w", ErrBadBlock, err)}
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
// own readers read instead of its files (a querier's fallbacks, files
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
	total := max(int64(s.blk.block.Meta().Stats.NumSeries), int64(s.series))
	if total == 0 {
		return 0
	}
	return s.blk.block.Size() * int64(n) / total
}

// remap closes the block and opens it again, with a new querier, when
// the source is a block. Prometheus maps a block's index and chunk files
// into memory, and every page read stays in the process's resident set
// while the block is open: over a long history, read target by target, the
// whole TSDB would. Closing unmaps it (the pages stay in the page cache,
// shared, not the reader's); series refs are offsets in the files and
// hold across. A block that cannot be opened again is read on as it was.
func (s *eachSource) remap() {
	if s.blk == nil || s.closed {
		return
	}
	nb, err := tsdb.OpenBlock(tsdbLogger(), s.blk.dir, nil, nil)
	if err != nil {
		return
	}
	qs := make([]refQuerier, len(s.qs))
	for i := range qs {
		if qs[i], err = newRefQuerier(nb, s.qmin, s.qmax); err != nil {
			for _, q := range qs[:i] {
				q.q.Close()
			}
			nb.Close()
			return
		}
	}
	s.closeQueriers()
	if err := s.blk.block.Close(); err != nil {
		s.problem(snapshot.SeverityWarning, fmt.Errorf("closing block: %w", err))
	}
	s.blk.block, s.br, s.qs = nb, nb, qs
}

// closeQueriers closes the source's queriers, recording a failure.
func (s *eachSource) closeQueriers() {
	for _, q := range s.qs {
		if err := q.q.Close(); err != nil {
			s.problem(snapshot.SeverityWarning, fmt.Errorf("closing querier: %w", err))
		}
	}
	s.qs = nil
}

// refQuerier is a querier on a refBlock, and the block's refIndex, whose
// refs choose the series a Select with allSeries reads.
type refQuerier struct {
	q     storage.Querier
	index *refIndex
}

func newRefQuerier(br tsdb.BlockReader, mint, maxt int64) (refQuerier, error) {
	rb := &refBlock{BlockReader: br}
	q, err := tsdb.NewBlockQuerier(rb, mint, maxt)
	if err != nil {
		return refQuerier{}, err
	}
	return refQuerier{q: q, index: rb.index}, nil
}

// close closes the querier once, returning the problem of a failure.
func (s *eachSource) close() (snapshot.Problem, bool) {
	if s.closed {
		return snapshot.Problem{}, false
	}
	s.closed = true
	var errs []error
	for _, q := range s.qs {
		if err := q.q.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	s.qs = nil
	if err := errors.Join(errs...); err != nil {
		return snapshot.Problem{Severity: snapshot.SeverityWarning, File: s.name, Offset: -1, Err: fmt.Errorf("closing querier: %w", err)}, true
	}
	return snapshot.Problem{}, false
}

// survey calls fn for every series of the source that matches ms and has
// a chunk in the range read, in the index's order, with its ref, labels and the time range of those
// chunks (within the range read), from the index alone: no sample is
// decoded. Problems of the index are recorded; only a context error is
// returned.
func (s *eachSource) survey(ctx context.Context, ms []*labels.Matcher, fn func(ref storage.SeriesRef, lset labels.Labels, minT, maxT int64)) error {
	ir, err := s.br.Index()
	if err != nil {
		s.problem(snapshot.SeverityError, fmt.Errorf("%w: %w", ErrBadBlock, err))
		return nil
	}
	defer ir.Close()
	p, err := tsdb.PostingsForMatchers(ctx, ir, slices.Clone(ms)...)
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
			continue // no chunk in the range: the querier skips it too
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
