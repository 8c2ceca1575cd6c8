package tsdb

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"

	promhistogram "github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"

	"github.com/whyslow/whyslow/snapshot"
)

// readSource reads the series of one block or head that match ms, with
// samples in [mint, maxt]; files are the block's (nil for the head);
// ahead is as for selectInto. Problems of the source are recorded; only a
// context error, or the error of exceeding opts.Memory, is returned.
func readSource(ctx context.Context, a *snapshot.Columns, src string, br tsdb.BlockReader, files *blockFiles, mint, maxt int64, ms []*labels.Matcher, ahead float64) (err error) {
	if a.Full() {
		return nil
	}
	if _, ok := br.(*tsdb.Block); ok && directDecode {
		if refs, ok := matchingRefs(ctx, br, ms); ok {
			return readRefs(ctx, a, src, br, files, refs, mint, maxt, ahead)
		}
	}
	q, err := tsdb.NewBlockQuerier(br, mint, maxt)
	if err != nil {
		a.Problem(snapshot.SeverityError, src, fmt.Errorf("%w: %w", ErrBadBlock, err))
		return nil
	}
	var lost lostSeries
	defer reportRead(a, src, &lost, q)
	return selectInto(ctx, a, src, q, mint, maxt, ms, ahead, &lost, func(sev snapshot.Severity, err error) { a.Problem(sev, src, err) })
}

// reportRead records in a what the read of source src found: the series
// whose samples were lost, and the querier q that would not close (nil:
// none was opened).
func reportRead(a *snapshot.Columns, src string, lost *lostSeries, q storage.Querier) {
	if p, ok := lost.problem(src); ok {
		a.ProblemAt(p)
	}
	if q == nil {
		return
	}
	if err := q.Close(); err != nil {
		a.Problem(snapshot.SeverityWarning, src, fmt.Errorf("closing querier: %w", err))
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

// populateErr matches the error of a block querier's series iterator
// when a chunk cannot be read. It names the chunk by its reference and
// the block by a ULID that is zero for a float Select.
var populateErr = regexp.MustCompile(`^cannot populate chunk (\d+) from block [0-9A-Za-z]+: `)

// chunkError rewrites err, a block querier's error reading a chunk of
// block bdir, to name the chunk's segment file and offset (a block chunk
// reference is the segment's position among the segments and the offset
// in it) instead of
// the block by its ULID; false when err is no such error.
func chunkError(bdir string, err error) (file string, off int64, _ error, ok bool) {
	m := populateErr.FindStringSubmatch(err.Error())
	inner := errors.Unwrap(err)
	if m == nil || inner == nil {
		return "", 0, nil, false
	}
	ref, perr := strconv.ParseUint(m[1], 10, 64)
	if perr != nil {
		return "", 0, nil, false
	}
	seq, at := chunks.BlockChunkRef(ref).Unpack()
	segs := chunkSegments(filepath.Join(bdir, tsdbChunksDir))
	if seq >= len(segs) {
		return "", 0, nil, false
	}
	file = segs[seq]
	return file, int64(at), fmt.Errorf("chunk at offset %d of %s (block %s): %w", at, filepath.Join(tsdbChunksDir, filepath.Base(file)), filepath.Base(bdir), inner), true
}

// selectInto reads the series of q that match ms into a. ahead is how
// many samples a series is expected to have in this source and the
// sources read after it into a, for one sample in this source (1: none
// after): a series' column is sized for them once, instead of regrowing
// at each source. Series whose samples could not all be read are counted
// in lost; problems of the whole selection go to srcProblem, those of
// single series to a.
func selectInto(ctx context.Context, a *snapshot.Columns, src string, q storage.Querier, mint, maxt int64, ms []*labels.Matcher,
	ahead float64, lost *lostSeries, srcProblem func(snapshot.Severity, error),
) error {
	if a.Full() {
		return nil
	}
	ss := q.Select(ctx, false, &storage.SelectHints{Start: mint, End: maxt}, ms...)
	var (
		it chunkenc.Iterator
		fh *promhistogram.FloatHistogram
		n  int
		// ts and vs hold one series' float samples of this source; like is
		// the column given float samples before, whose times the next may
		// share (Column.AppendFloats).
		ts   []int64
		vs   []float64
		like *snapshot.Column
	)
	for ss.Next() {
		if n++; n%512 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		s := ss.At()
		r := a.Series(src, s.Labels())
		if r == nil {
			continue
		}
		it = s.Iterator(it)
		ts, vs = ts[:0], vs[:0]
		for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
			switch vt {
			case chunkenc.ValFloat:
				t, v := it.At()
				if value.IsStaleNaN(v) {
					continue
				}
				ts, vs = append(ts, t), append(vs, v)
			case chunkenc.ValHistogram, chunkenc.ValFloatHistogram:
				var t int64
				t, fh = it.AtFloatHistogram(fh)
				if value.IsStaleNaN(fh.Sum) {
					continue
				}
				if err := r.AppendNHCB(t, fh); err != nil {
					a.Problem(snapshot.SeverityError, src, fmt.Errorf("series %s at %d: %w", s.Labels(), t, err))
				}
			}
		}
		if len(ts) > 0 {
			r.AppendFloats(ts, vs, like, growth(len(ts), ahead))
			like = r
		}
		if err := it.Err(); err != nil {
			lost.add(s.Labels(), err)
		}
		if err := a.Charge(src); err != nil || a.Full() {
			return err
		}
	}
	if err := ss.Err(); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		srcProblem(snapshot.SeverityError, fmt.Errorf("%w: %w", ErrBadBlock, err))
	}
	for _, w := range ss.Warnings() {
		srcProblem(snapshot.SeverityWarning, w)
	}
	return nil
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
