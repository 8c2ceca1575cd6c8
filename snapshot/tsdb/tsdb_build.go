package tsdb

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	promhistogram "github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/tsdb/index"
	"github.com/prometheus/prometheus/tsdb/tombstones"

	"github.com/whyslow/whyslow/snapshot"
	"github.com/whyslow/whyslow/snapshot/internal/store"
)

// readSource reads the series of one block or the head (br) that match
// ms, with samples in [mint, maxt]; files are the block's (nil for the
// head); ahead is as for selectSeries. Problems of the source are
// recorded; only a context error, or the error of exceeding opts.Memory,
// is returned.
func readSource(ctx context.Context, a *store.Columns, src string, br *blockReaders, files *blockFiles, mint, maxt int64, ms []*labels.Matcher, ahead float64) (err error) {
	if a.Full() {
		return nil
	}
	p, err := postingsForMatchers(ctx, br.ir, ms)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		a.Problem(snapshot.SeverityError, src, fmt.Errorf("%w: %w", ErrBadBlock, err))
		return nil
	}
	if directDecode {
		refs, err := index.ExpandPostings(p)
		if err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return cerr
			}
			a.Problem(snapshot.SeverityError, src, fmt.Errorf("%w: %w", ErrBadBlock, err))
			return nil
		}
		return readRefs(ctx, a, src, br, files, refs, mint, maxt, ahead)
	}
	var lost lostSeries
	defer reportLost(a, src, &lost)
	return selectSeries(ctx, a, src, br, p, mint, maxt, ahead, &lost, func(sev snapshot.Severity, err error) { a.Problem(sev, src, err) })
}

// reportLost records in a the series of source src whose samples were
// lost.
func reportLost(a *store.Columns, src string, lost *lostSeries) {
	if p, ok := lost.problem(src); ok {
		a.ProblemAt(p)
	}
}

// lostSeries counts the series of one source whose samples could not all
// be read, and keeps the error of the first.
type lostSeries struct {
	n        int
	first    error // the iterator's error
	firstSet labels.Labels
	// byLabels keeps the first by label order (the order of a block's
	// series) instead of the first added: ReadEach adds the series of one
	// source target by target.
	byLabels bool
}

func (l *lostSeries) add(lset labels.Labels, err error) {
	if l.n++; l.n == 1 || (l.byLabels && labels.Compare(lset, l.firstSet) < 0) {
		l.first, l.firstSet = err, lset
	}
}

// merge adds the lost series counted in o (byLabels: the first by label
// order of both is kept).
func (l *lostSeries) merge(o *lostSeries) {
	if o.n == 0 {
		return
	}
	if l.n == 0 || (l.byLabels && labels.Compare(o.firstSet, l.firstSet) < 0) {
		l.first, l.firstSet = o.first, o.firstSet
	}
	l.n += o.n
}

// problem returns the problem of the lost series at src (a block
// directory, or the head's wal/), if any. Where a block's chunk could not
// be read, it names the chunk's segment file and offset.
func (l *lostSeries) problem(src string) (snapshot.Problem, bool) {
	if l.n == 0 {
		return snapshot.Problem{}, false
	}
	p := snapshot.Problem{Severity: snapshot.SeverityError, File: src, Offset: -1}
	err := l.first
	if filepath.Base(src) != tsdbWALDir {
		if file, off, cerr, ok := chunkError(src, l.first); ok {
			p.File, p.Offset, err = file, off, cerr
		}
	}
	p.Err = fmt.Errorf("%w: samples of %d series lost, first: series %s: %w", ErrBadBlock, l.n, l.firstSet, err)
	return p, true
}

// chunkErr is the error of a chunk of a series that could not be read.
type chunkErr struct {
	ref chunks.ChunkRef
	err error
}

func (e *chunkErr) Error() string { return fmt.Sprintf("cannot read chunk %d: %v", e.ref, e.err) }
func (e *chunkErr) Unwrap() error { return e.err }

// chunkError rewrites err, the error of a chunk of block bdir that could
// not be read (a chunkErr), to name the chunk's segment file and offset
// (a block chunk reference is the segment's position among the segments
// and the offset in it); false when err is no such error.
func chunkError(bdir string, err error) (file string, off int64, _ error, ok bool) {
	var ce *chunkErr
	if !errors.As(err, &ce) {
		return "", 0, nil, false
	}
	seq, at := chunks.BlockChunkRef(ce.ref).Unpack()
	segs := chunkSegments(filepath.Join(bdir, tsdbChunksDir))
	if seq >= len(segs) {
		return "", 0, nil, false
	}
	file = segs[seq]
	return file, int64(at), fmt.Errorf("chunk at offset %d of %s (block %s): %w", at, filepath.Join(tsdbChunksDir, filepath.Base(file)), filepath.Base(bdir), ce.err), true
}

// selectSeries reads the series p of br into a, with their samples in
// [mint, maxt], as a block querier over that range selects them
// (Prometheus's tsdb.NewBlockQuerier): a series entry that is gone is
// skipped, one that cannot be read ends the selection; only the chunks
// that overlap the range and are not wholly deleted are read, a series
// left without any is skipped; samples outside the range or inside a
// tombstone's interval are dropped, and so are staleness markers. ahead
// is how many samples a series is expected to have in this source and
// the sources read after it into a, for one sample in this source (1:
// none after): a series' column is sized for them once, instead of
// regrowing at each source. Series whose samples could not all be read
// are counted in lost; problems of the whole selection go to srcProblem,
// those of single series to a.
func selectSeries(ctx context.Context, a *store.Columns, src string, br *blockReaders, p index.Postings, mint, maxt int64,
	ahead float64, lost *lostSeries, srcProblem func(snapshot.Severity, error),
) error {
	if a.Full() {
		return nil
	}
	var (
		sb   labels.ScratchBuilder
		all  []chunks.Meta
		chks []chunks.Meta
		it   chunkenc.Iterator
		fh   *promhistogram.FloatHistogram
		n    int
		// ts and vs hold one series' float samples of this source; like is
		// the column given float samples before, whose times the next may
		// share (Column.AppendFloats).
		ts   []int64
		vs   []float64
		like *store.Column
	)
	for p.Next() {
		if n++; n%512 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		ref := p.At()
		if err := br.ir.Series(ref, &sb, &all); err != nil {
			if errors.Is(err, storage.ErrNotFound) {
				continue
			}
			srcProblem(snapshot.SeverityError, fmt.Errorf("%w: get series %d: %w", ErrBadBlock, ref, err))
			return nil
		}
		ivs, err := br.tr.Get(ref)
		if err != nil {
			srcProblem(snapshot.SeverityError, fmt.Errorf("%w: get tombstones: %w", ErrBadBlock, err))
			return nil
		}
		chks = chks[:0]
		for _, c := range all {
			if c.MaxTime < mint || c.MinTime > maxt || (tombstones.Interval{Mint: c.MinTime, Maxt: c.MaxTime}).IsSubrange(ivs) {
				continue
			}
			chks = append(chks, c)
		}
		if len(chks) == 0 {
			continue
		}
		lset := sb.Labels()
		r := a.Series(src, lset)
		if r == nil {
			continue
		}
		ts, vs = ts[:0], vs[:0]
		keep := func(t int64) bool {
			return t >= mint && t <= maxt && !deleted(ivs, t)
		}
	chunks:
		for _, c := range chks {
			chk, iterable, err := br.cr.ChunkOrIterable(c)
			if err != nil {
				lost.add(lset, &chunkErr{ref: c.Ref, err: err})
				break
			}
			if iterable != nil {
				it = iterable.Iterator(it)
			} else {
				it = chk.Iterator(it)
			}
			for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
				switch vt {
				case chunkenc.ValFloat:
					t, v := it.At()
					if !keep(t) || value.IsStaleNaN(v) {
						continue
					}
					ts, vs = append(ts, t), append(vs, v)
				case chunkenc.ValHistogram, chunkenc.ValFloatHistogram:
					if !keep(it.AtT()) {
						continue
					}
					var t int64
					t, fh = it.AtFloatHistogram(fh)
					if value.IsStaleNaN(fh.Sum) {
						continue
					}
					if err := r.AppendNHCB(t, fh); err != nil {
						a.Problem(snapshot.SeverityError, src, fmt.Errorf("series %s at %d: %w", lset, t, err))
					}
				}
			}
			if err := it.Err(); err != nil {
				lost.add(lset, err)
				break chunks
			}
		}
		if len(ts) > 0 {
			r.AppendFloats(ts, vs, like, growth(len(ts), ahead))
			like = r
		}
		if err := a.Charge(src); err != nil || a.Full() {
			return err
		}
	}
	if err := p.Err(); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		srcProblem(snapshot.SeverityError, fmt.Errorf("%w: %w", ErrBadBlock, err))
	}
	return nil
}

// deleted reports whether t lies in one of the intervals ivs.
func deleted(ivs tombstones.Intervals, t int64) bool {
	for _, iv := range ivs {
		if iv.InBounds(t) {
			return true
		}
	}
	return false
}

// growth is the room to make in a column for the n samples of this
// source and those expected, ahead of it, in later sources: with a 1/32
// margin, since series scraped together differ by a sample or two between
// blocks and one sample short regrows the column.
func growth(n int, ahead float64) int {
	if ahead <= 1 || n == 0 {
		return n
	}
	f := float64(n) * ahead
	return int(f+f/32) + 1
}
