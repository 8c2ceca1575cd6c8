package tsdb

import (
	"context"
	"fmt"

	promhistogram "github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/whyslow/whyslow/snapshot"
)

// readSource reads the series of one block or head that match ms, with
// samples in [mint, maxt]. Problems of the source are recorded; only a
// context error, or the error of exceeding opts.Memory, is returned.
func readSource(ctx context.Context, a *snapshot.Columns, src string, br tsdb.BlockReader, mint, maxt int64, ms []*labels.Matcher) (err error) {
	if a.Full() {
		return nil
	}
	q, err := tsdb.NewBlockQuerier(br, mint, maxt)
	if err != nil {
		a.Problem(snapshot.SeverityError, src, fmt.Errorf("%w: %w", ErrBadBlock, err))
		return nil
	}
	defer func() {
		if cerr := q.Close(); cerr != nil {
			a.Problem(snapshot.SeverityWarning, src, fmt.Errorf("closing querier: %w", cerr))
		}
	}()
	ss := q.Select(ctx, false, &storage.SelectHints{Start: mint, End: maxt}, ms...)
	var (
		it       chunkenc.Iterator
		fh       *promhistogram.FloatHistogram
		n        int
		bad      int   // series whose samples could not all be read
		firstBad error // the first of their errors
		// hint is the sample count of the previous series: series scraped
		// together have the same, so sizing for it avoids regrowing.
		hint int
	)
	defer func() {
		if bad > 0 {
			a.Problem(snapshot.SeverityError, src, fmt.Errorf("%w: samples of %d series lost, first: %w", ErrBadBlock, bad, firstBad))
		}
	}()
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
		before := r.Len()
		r.Grow(hint)
		for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
			switch vt {
			case chunkenc.ValFloat:
				t, v := it.At()
				if value.IsStaleNaN(v) {
					continue
				}
				r.Append(t, v)
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
		if n := r.Len() - before; n > 0 {
			hint = n
		}
		if err := it.Err(); err != nil {
			if bad++; bad == 1 {
				firstBad = fmt.Errorf("series %s: %w", s.Labels(), err)
			}
		}
		if err := a.Charge(src); err != nil || a.Full() {
			return err
		}
	}
	if err := ss.Err(); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		a.Problem(snapshot.SeverityError, src, fmt.Errorf("%w: %w", ErrBadBlock, err))
	}
	for _, w := range ss.Warnings() {
		a.Problem(snapshot.SeverityWarning, src, w)
	}
	return nil
}
