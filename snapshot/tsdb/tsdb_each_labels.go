package tsdb

import (
	"context"
	"sort"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/whyslow/whyslow/snapshot"
	"github.com/whyslow/whyslow/snapshot/internal/store"
)

// labelsOnlyNames returns the sample names of opts.LabelsOnly (each
// metric with and without _bucket, _sum and _count, as Options.Metrics
// selects them), nil when it lists none.
func labelsOnlyNames(opts snapshot.Options) map[string]bool {
	if len(opts.LabelsOnly) == 0 {
		return nil
	}
	out := map[string]bool{}
	for _, n := range (snapshot.Options{Metrics: opts.LabelsOnly}).MetricSampleNames() {
		out[n] = true
	}
	return out
}

// listedSeries is a series of snapshot.Options.LabelsOnly while
// passB.listLabelsOnly decides whether its samples may be left out.
type listedSeries struct {
	col   *store.Column
	group string              // its histogram's key: base name, labels without __name__ and le
	refs  []storage.SeriesRef // by source; has tells which are set
	has   []bool              // by source
	spans [][]chunkSpan       // by source, its chunks in the range read
	n     int                 // its samples over all sources
	bad   bool                // the index cannot show that its samples change nothing
}

// chunkSpan is a chunk's first and last sample time and its sample count,
// from the index and the chunk's header.
type chunkSpan struct {
	min, max int64
	n        int
}

// listLabelsOnly adds to d the series of target j of the metrics of
// snapshot.Options.LabelsOnly, after the target's other series are
// decoded into d: by their labels alone where the index and the chunks'
// headers show that their samples add nothing to the Evidence but
// themselves, else decoded as the others.
//
// A series' samples are left out when, in every source, each of its
// chunks in the range lies wholly inside the range, is a float (XOR)
// chunk with no deletion (tombstone) on the series, starts and ends at
// times of the target's decoded samples and holds as many samples as
// those times between its ends; when it holds two samples or more in
// all (a staleness marker is never followed by another, so one of them
// is a value: a full read keeps the series too); and when every other
// series of its histogram (the same base name and labels but le) is so
// too, with the same chunks. The head's open chunk, whose end the index
// does not give, is decoded, and its times must all be the target's.
// Its times are then those of the target's
// scrapes already known: the Scrapes are the same without them, and a
// histogram's buckets are present at the same times, so its bucket
// layout is one, as a full read assembles it. Series that fail are
// decoded, with every series of their histogram, in every source.
// The check trusts a chunk whose ends and count match to hold those
// times, which a series scraped with its target does; a series of
// another scrape that starts and ends at the target's scrape times with
// as many samples in between would pass it wrongly.
func (p *passB) listLabelsOnly(ctx context.Context, j decodeJob, d *decodedTarget) error {
	if d.cols.Full() {
		return nil // a limit stopped the read, as selectSeries stops
	}
	var listed []*listedSeries
	byCol := map[*store.Column]*listedSeries{}
	decode := make([][]storage.SeriesRef, len(p.srcs)) // by source, in the index's order
	for i, s := range p.srcs {
		if len(j.lrefs[i]) == 0 {
			continue
		}
		ok, err := p.listSource(ctx, i, s, j.lrefs[i], d, byCol, &listed)
		if err != nil {
			return err
		}
		if !ok {
			decode[i] = append(decode[i], j.lrefs[i]...)
		}
		// The labels kept count against the budget as a decoded
		// series' do.
		if err := d.cols.Charge(s.name); err != nil {
			return err
		}
		if d.cols.Full() {
			return nil
		}
	}
	if len(listed) == 0 && !anyRefs(decode) {
		return nil
	}
	times := d.cols.Times()
	badGroup := map[string]bool{}
	first := map[string]*listedSeries{}
	for _, e := range listed {
		if !e.bad {
			e.bad = e.n < 2 || !e.covered(times)
		}
		f := first[e.group]
		switch {
		case f == nil:
			first[e.group] = e
		case !sameSpans(f, e):
			badGroup[e.group] = true
		}
		if e.bad {
			badGroup[e.group] = true
		}
	}
	for _, e := range listed {
		if !badGroup[e.group] {
			e.col.KeepLabels()
			continue
		}
		for i, ok := range e.has {
			if ok {
				decode[i] = append(decode[i], e.refs[i])
			}
		}
	}
	for i, refs := range decode {
		if len(refs) == 0 {
			continue
		}
		// A source that could not be listed gave all its refs, in order;
		// the others' failures come series by series.
		sort.Slice(refs, func(a, b int) bool { return refs[a] < refs[b] })
		if err := p.decodeSource(ctx, i, refs, 1, d); err != nil {
			return err
		}
	}
	return nil
}

func anyRefs(refs [][]storage.SeriesRef) bool {
	for _, r := range refs {
		if len(r) > 0 {
			return true
		}
	}
	return false
}

// listSource lists the series refs of source i (s) into byCol and
// listed, from its index, chunk headers and tombstones. It reports false
// when the source cannot be listed so (a reader fails to open): its refs
// are then all decoded. Only a context error is returned.
func (p *passB) listSource(ctx context.Context, i int, s *eachSource, refs []storage.SeriesRef, d *decodedTarget,
	byCol map[*store.Column]*listedSeries, listed *[]*listedSeries,
) (bool, error) {
	tr := s.br.tr
	r := s.files().reader(s.br.ir, s.br.cr)
	defer r.release()
	r.expectSeries(refs)
	var (
		es []seriesEntry
		lb = labels.NewBuilder(labels.EmptyLabels())
	)
	for k := 0; k < len(es) || len(refs) > 0; k++ {
		if k == len(es) {
			if err := ctx.Err(); err != nil {
				return false, err
			}
			var n int
			es, n = r.batch(refs, p.mint, p.maxt)
			refs, k = refs[n:], 0
		}
		ref, chks := es[k].ref, es[k].chks
		if es[k].bad {
			// Decoded, the read reports it as it would.
			e := &listedSeries{bad: true, refs: make([]storage.SeriesRef, len(p.srcs)), has: make([]bool, len(p.srcs)), spans: make([][]chunkSpan, len(p.srcs))}
			e.refs[i], e.has[i] = ref, true
			e.group = "\xffunread"
			*listed = append(*listed, e)
			continue
		}
		lset := es[k].lset
		col := d.cols.Series(s.name, lset)
		if col == nil {
			continue // a limit: its samples are not wanted
		}
		e := byCol[col]
		if e == nil {
			lb.Reset(lset)
			lb.Del(model.MetricNameLabel, labels.BucketLabel)
			e = &listedSeries{col: col, group: snapshot.FamilyBaseName(lset.Get(model.MetricNameLabel)) + "\xff" + lb.Labels().String(),
				refs: make([]storage.SeriesRef, len(p.srcs)), has: make([]bool, len(p.srcs)), spans: make([][]chunkSpan, len(p.srcs))}
			byCol[col] = e
			*listed = append(*listed, e)
		}
		e.refs[i], e.has[i] = ref, true
		if ivs, err := tr.Get(ref); err != nil || len(ivs) > 0 {
			e.bad = true
			continue
		}
		for _, c := range chks {
			if c.MaxTime < p.mint || c.MinTime > p.maxt {
				continue // selectSeries skips it too
			}
			if c.MinTime < p.mint || c.MaxTime > p.maxt {
				e.bad = true // trimmed to the range: its count is not the range's
				break
			}
			chk, _, err := r.ChunkOrIterable(c)
			if err != nil || chk == nil || chk.Encoding() != chunkenc.EncXOR {
				e.bad = true
				break
			}
			n := chk.NumSamples()
			e.spans[i] = append(e.spans[i], chunkSpan{c.MinTime, c.MaxTime, n})
			e.n += n
		}
	}
	return true, nil
}

// covered reports whether every chunk of e starts and ends at one of
// times (ascending, distinct) and holds as many samples as times has
// between its ends.
func (e *listedSeries) covered(times []int64) bool {
	for _, spans := range e.spans {
		for _, c := range spans {
			lo := sort.Search(len(times), func(k int) bool { return times[k] >= c.min })
			hi := sort.Search(len(times), func(k int) bool { return times[k] >= c.max })
			if lo == len(times) || times[lo] != c.min || hi == len(times) || times[hi] != c.max || hi-lo+1 != c.n {
				return false
			}
		}
	}
	return true
}

// sameSpans reports whether a and b have the same chunks in every source.
func sameSpans(a, b *listedSeries) bool {
	for i := range a.spans {
		if a.has[i] != b.has[i] || len(a.spans[i]) != len(b.spans[i]) {
			return false
		}
		for k := range a.spans[i] {
			if a.spans[i][k] != b.spans[i][k] {
				return false
			}
		}
	}
	return true
}
