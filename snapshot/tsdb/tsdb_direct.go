package tsdb

import (
	"context"

	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/tsdb/index"
	"github.com/prometheus/prometheus/tsdb/tombstones"

	"github.com/whyslow/whyslow/snapshot"
	"github.com/whyslow/whyslow/snapshot/internal/store"
)

// directDecode reports whether the series of a persisted block are
// decoded chunk by chunk (decodeRefs) rather than by selectSeries (a
// variable for tests, which compare both).
var directDecode = true

// decodeRefs reads the series refs of br (in the index's order) into a,
// as selectSeries reads them over [mint, maxt]: the same series, in the
// same order, with the same samples. It decodes each series' chunks in
// the range itself, without trimming every chunk to the range and the
// tombstones (that cost is measured in TSDB_BENCHMARKS.md). Where
// selectSeries does more than decode, decodeRefs hands over to fallback,
// which reads the refs given as selectSeries does, with its problems:
//
//   - a series with tombstones, chunks that overlap, a chunk that is not
//     float (XOR) or cannot be read: that series alone;
//   - a series entry that cannot be read: it and every later one (the
//     selection ends there).
//
// The chunks of br must be sorted and closed (a block's, or the head's
// as memHead cuts them). Its series entries and chunks are read through
// files, a block's files (see blockFiles), where they can be. An error
// is a context error, or that of a limit (store.Columns.Charge), as
// selectSeries's.
func decodeRefs(ctx context.Context, a *store.Columns, src string, br *blockReaders, files *blockFiles, refs []storage.SeriesRef, mint, maxt int64,
	ahead float64, fallback func([]storage.SeriesRef) error,
) error {
	if a.Full() || len(refs) == 0 {
		return nil
	}
	tr := br.tr
	r := files.reader(br.ir, br.cr)
	defer r.release()
	r.expectSeries(refs)
	var (
		it   chunkenc.Iterator
		ts   []int64
		vs   []float64
		like *store.Column
	)
	for k := 0; k < len(refs); {
		if err := ctx.Err(); err != nil {
			return err
		}
		es, n := r.batch(refs[k:], mint, maxt)
		for _, e := range es {
			if e.bad {
				return fallback(refs[k+n-1:])
			}
			if len(e.chks) == 0 {
				continue // selectSeries selects no series without a chunk in the range
			}
			var ok bool
			ts, vs, it, ok = decodeChunks(r, tr, e.ref, e.chks, mint, maxt, ts[:0], vs[:0], it)
			if !ok {
				if err := fallback([]storage.SeriesRef{e.ref}); err != nil || a.Full() {
					return err
				}
				continue
			}
			col := a.Series(src, e.lset)
			if col == nil {
				continue
			}
			if len(ts) > 0 {
				col.AppendFloats(ts, vs, like, growth(len(ts), ahead))
				like = col
			}
			if err := a.Charge(src); err != nil || a.Full() {
				return err
			}
		}
		k += n
	}
	return nil
}

// inRange returns the chunks of chks that overlap [mint, maxt], as
// selectSeries keeps them (chks is reused).
func inRange(chks []chunks.Meta, mint, maxt int64) []chunks.Meta {
	out := chks[:0]
	for _, c := range chks {
		if c.MaxTime >= mint && c.MinTime <= maxt {
			out = append(out, c)
		}
	}
	return out
}

// decodeChunks appends the float samples of series ref in the chunks in
// (those in range, in the index's order) within [mint, maxt] to ts and
// vs, leaving out staleness markers, as selectSeries keeps them; ok is false
// when selectSeries must read the series instead (see decodeRefs).
func decodeChunks(cr chunkReader, tr tombstones.Reader, ref storage.SeriesRef, in []chunks.Meta, mint, maxt int64,
	ts []int64, vs []float64, it chunkenc.Iterator,
) (_ []int64, _ []float64, _ chunkenc.Iterator, ok bool) {
	if ivs, err := tr.Get(ref); err != nil || len(ivs) > 0 {
		return ts, vs, it, false
	}
	for k, c := range in {
		if k > 0 && c.MinTime <= in[k-1].MaxTime {
			return ts, vs, it, false
		}
		chk, iterable, err := cr.ChunkOrIterable(c)
		if err != nil || iterable != nil || chk == nil || chk.Encoding() != chunkenc.EncXOR {
			return ts, vs, it, false
		}
		it = chk.Iterator(it)
		for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
			if vt != chunkenc.ValFloat {
				return ts, vs, it, false
			}
			t, v := it.At()
			if t < mint {
				continue
			}
			if t > maxt {
				break
			}
			if value.IsStaleNaN(v) {
				continue
			}
			ts, vs = append(ts, t), append(vs, v)
		}
		if it.Err() != nil {
			return ts, vs, it, false
		}
	}
	return ts, vs, it, true
}

// readRefs reads the series refs of br (with its files, nil for the
// head) into a (decodeRefs), the ones it hands over through selectSeries,
// and records the problems.
func readRefs(ctx context.Context, a *store.Columns, src string, br *blockReaders, files *blockFiles, refs []storage.SeriesRef, mint, maxt int64, ahead float64) error {
	var lost lostSeries
	defer reportLost(a, src, &lost)
	fallback := func(rs []storage.SeriesRef) error {
		return selectSeries(ctx, a, src, br, index.NewListPostings(rs), mint, maxt, ahead, &lost,
			func(sev snapshot.Severity, err error) { a.Problem(sev, src, err) })
	}
	return decodeRefs(ctx, a, src, br, files, refs, mint, maxt, ahead, fallback)
}
