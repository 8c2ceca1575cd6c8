package tsdb

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	promhistogram "github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/tsdb/index"
	"github.com/prometheus/prometheus/tsdb/record"
	"github.com/prometheus/prometheus/tsdb/tombstones"
	"github.com/prometheus/prometheus/tsdb/wlog"

	"github.com/whyslow/whyslow/snapshot"
)

// memHead is a TSDB's head, replayed read-only from its WAL into memory
// (replayWAL). Its readers serve it as a block: an index of its series,
// float samples in XOR chunks of samplesPerChunk, histogram samples as
// iterables, and the WAL's tombstones.
type memHead struct {
	blockReaders
	minT, maxT int64 // of its samples, both included; minT > maxT when it has none
	numSeries  int
}

// samplesPerChunk is how many float samples a head chunk holds, as in
// Prometheus's head.
const samplesPerChunk = 120

// openTSDBHead reads l's head as Prometheus does on restart: the full
// chunks it m-mapped to chunks_head/ (readHeadChunks), then the WAL
// (replayWAL) for the samples after them, keeping the samples at or
// after minValidTime (the end of the last persisted block, or the time
// the last checkpoint truncated the WAL at, if later). The files are
// only read: nothing is copied, written or locked, and a WAL that
// Prometheus is still writing reads up to its last whole record.
//
// A torn or corrupt record ends the replay, as Prometheus's own repair
// on restart would cut the WAL there: the records before it are kept,
// and the returned Problems say what may be missing from when. A corrupt
// chunks_head/ file is read from the WAL instead, as Prometheus does.
// The head is read into memory: more than maxBytes of wal/ and
// chunks_head/ together is an error.
func openTSDBHead(l *tsdbLayout, maxBytes, minValidTime int64) (_ *memHead, problems []snapshot.Problem, err error) {
	if !l.hasWAL {
		// Without the WAL's series records, m-mapped head chunks belong to
		// no series.
		return nil, nil, fmt.Errorf("chunks_head/ without wal/ cannot be attributed to series")
	}
	walDir := filepath.Join(l.dir, tsdbWALDir)
	chunksDir := filepath.Join(l.dir, tsdbChunksHeadDir)
	var size int64
	for _, d := range []string{walDir, chunksDir} {
		n, err := treeSize(d)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, nil, err
		}
		size += n
	}
	if size > maxBytes {
		return nil, nil, fmt.Errorf("%w: wal/ and chunks_head/ hold %d bytes, more than snapshot.Limits.MaxWALBytes (%d)", snapshot.ErrLimit, size, maxBytes)
	}
	// A checkpoint records how far Prometheus truncated the WAL; never keep
	// samples from before it (they are in blocks, or deliberately dropped).
	if t, ok, err := wlog.ReadMinValidTime(walDir); err == nil && ok && t > minValidTime {
		minValidTime = t
	}
	mm, cor, err := readHeadChunks(chunksDir, minValidTime)
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", tsdbChunksHeadDir, err)
	}
	if cor != nil {
		problems = append(problems, snapshot.Problem{
			Severity: snapshot.SeverityWarning, File: cor.file, Offset: int64(cor.offset),
			Err: fmt.Errorf("corrupt head chunk file (%w): its chunks and those of later files are read from the WAL instead, as Prometheus does on restart", cor.err),
		})
	}
	h, cerr, err := replayWAL(walDir, minValidTime, mm)
	if err != nil {
		return nil, nil, fmt.Errorf("replaying WAL: %w", err)
	}
	if cerr == nil {
		return h, problems, nil
	}
	lost := fmt.Errorf("%w beyond this offset: torn or corrupt WAL record (%v); read up to there, as Prometheus cuts the WAL there on restart",
		ErrHeadNotRead, cerr.Err)
	p := snapshot.Problem{
		Severity: snapshot.SeverityWarning,
		File:     wlog.SegmentName(walDir, cerr.Segment),
		Offset:   cerr.Offset,
	}
	if later := laterWALSegments(walDir, cerr.Segment); later > 0 {
		// Not a torn tail: whole segments are lost.
		p.Severity = snapshot.SeverityError
		lost = fmt.Errorf("%w; %d later segments dropped", lost, later)
	}
	// What the cut records held is unknown, but not when: records are
	// written in commit order, so they come after the last intact one.
	// From its oldest sample on, samples may be missing (a commit is one
	// scrape of one target in Prometheus, so other targets' scrapes of
	// that time may be in the lost records). A caller whose windows meet
	// that range has partial evidence (snapshot.Evidence.LostIn).
	lr := &snapshot.LostRangeError{Err: lost}
	if t, ok := lastRecordTime(walDir, cerr.Segment); ok {
		lr.From = time.UnixMilli(t).UTC()
	} else if minValidTime > math.MinInt64 {
		lr.From = time.UnixMilli(minValidTime).UTC()
	}
	p.Err = lr
	return h, append(problems, p), nil
}

// replayWAL reads the WAL in dir, its last checkpoint first and then the
// segments after it, as Prometheus's head replays it (Head.Init) with no
// out-of-order window: a series record creates a series, with the
// m-mapped chunks mm holds for its ref, or names again one of the same
// labels (addSeries; its samples go to the first); a sample before minValidTime,
// of an unknown series, or at or before the last sample kept of its
// series (in a chunk or the WAL), is dropped; a tombstone deletes its intervals, and
// one over all time deletes the series so far. cerr is the corruption
// that ended the replay early (nil: none); err, a WAL that could not be
// read at all.
func replayWAL(dir string, minValidTime int64, mm map[chunks.HeadSeriesRef][]mmChunk) (h *memHead, cerr *wlog.CorruptionErr, err error) {
	r := newReplay(minValidTime)
	r.mm = mm
	cpDir, cpIdx, err := wlog.LastCheckpoint(dir)
	start := 0
	switch {
	case err == nil:
		// A corrupt checkpoint is an error, as for Prometheus.
		if cerr, err := r.loadSegments(cpDir, 0); err != nil || cerr != nil {
			return nil, nil, fmt.Errorf("read checkpoint %s: %w", cpDir, errors.Join(err, errOf(cerr)))
		}
		start = cpIdx + 1
	case !errors.Is(err, record.ErrNotFound):
		return nil, nil, fmt.Errorf("find last checkpoint: %w", err)
	}
	if cerr, err = r.loadSegments(dir, start); err != nil {
		return nil, nil, err
	}
	return r.head(), cerr, nil
}

// errOf is cerr as an error (nil for nil).
func errOf(cerr *wlog.CorruptionErr) error {
	if cerr == nil {
		return nil
	}
	return cerr
}

// loadSegments replays the segments of dir from segment start on, in
// order; cerr is the corruption that ended it early (no segment is read
// past one), err a segment that could not be listed or opened.
func (r *replay) loadSegments(dir string, start int) (cerr *wlog.CorruptionErr, err error) {
	first, last, err := wlog.Segments(dir)
	if err != nil {
		return nil, fmt.Errorf("find WAL segments: %w", err)
	}
	for i := max(start, first); first >= 0 && i <= last; i++ {
		wr, f, err := segmentReader(wlog.SegmentName(dir, i))
		if err != nil {
			return nil, fmt.Errorf("open WAL segment %d: %w", i, err)
		}
		rerr := r.load(wr)
		_ = f.Close()
		if rerr != nil {
			return &wlog.CorruptionErr{Dir: dir, Segment: i, Offset: wr.Offset(), Err: rerr}, nil
		}
	}
	return nil, nil
}

// segmentReader opens the WAL segment file fn as openRegular does (a
// named pipe or a symbolic link in its place is refused, not waited on
// nor followed) and returns a record reader over it, and the file to
// close.
func segmentReader(fn string) (*wlog.Reader, *os.File, error) {
	f, _, err := openRegular(fn, false)
	if err != nil {
		return nil, nil, err
	}
	return wlog.NewReader(bufio.NewReaderSize(f, 128<<10)), f, nil
}

// replay is the state of a WAL replay: the series by their first ref.
type replay struct {
	minValid int64
	series   map[chunks.HeadSeriesRef]*memSeries
	refs     map[chunks.HeadSeriesRef]chunks.HeadSeriesRef // a ref to its series' first
	byHash   map[uint64][]chunks.HeadSeriesRef             // series refs by label hash, for a series record's labels
	stones   *tombstones.MemTombstones
	mm       map[chunks.HeadSeriesRef][]mmChunk // m-mapped chunks by the series ref they were written for
	dec      record.Decoder
	// Buffers of decoded records.
	rs []record.RefSeries
	ss []record.RefSample
	hs []record.RefHistogramSample
	fs []record.RefFloatHistogramSample
}

// memSeries is a series of the head: its labels, its m-mapped chunks
// and, after them, its samples from the WAL in time order; fhs, when not
// nil, holds a histogram for each sample that is one (nil for a float
// sample).
type memSeries struct {
	lset labels.Labels
	mm   []mmChunk
	ts   []int64
	vs   []float64
	fhs  []*promhistogram.FloatHistogram
}

func newReplay(minValid int64) *replay {
	return &replay{minValid: minValid, series: map[chunks.HeadSeriesRef]*memSeries{}, refs: map[chunks.HeadSeriesRef]chunks.HeadSeriesRef{},
		byHash: map[uint64][]chunks.HeadSeriesRef{}, stones: tombstones.NewMemTombstones(), dec: record.NewDecoder(nil, tsdbLogger())}
}

// load replays the records of wr; an error is the reader's or that of a
// record that does not decode.
func (r *replay) load(wr *wlog.Reader) error {
	for wr.Next() {
		rec := wr.Record()
		var err error
		switch r.dec.Type(rec) {
		case record.Series:
			if r.rs, err = r.dec.Series(rec, r.rs[:0]); err == nil {
				for _, s := range r.rs {
					r.addSeries(s.Ref, s.Labels)
				}
			}
		case record.Samples, record.SamplesV2:
			if r.ss, err = r.dec.Samples(rec, r.ss[:0]); err == nil {
				for _, s := range r.ss {
					r.add(s.Ref, s.T, s.V, nil)
				}
			}
		case record.HistogramSamples, record.HistogramSamplesV2, record.CustomBucketsHistogramSamples:
			if r.hs, err = r.dec.HistogramSamples(rec, r.hs[:0]); err == nil {
				for _, s := range r.hs {
					r.add(s.Ref, s.T, 0, s.H.ToFloat(nil))
				}
			}
		case record.FloatHistogramSamples, record.FloatHistogramSamplesV2, record.CustomBucketsFloatHistogramSamples:
			if r.fs, err = r.dec.FloatHistogramSamples(rec, r.fs[:0]); err == nil {
				for _, s := range r.fs {
					r.add(s.Ref, s.T, 0, s.FH.Copy())
				}
			}
		case record.Tombstones:
			var stones []tombstones.Stone
			if stones, err = r.dec.Tombstones(rec, nil); err == nil {
				for _, s := range stones {
					r.delete(chunks.HeadSeriesRef(s.Ref), s.Intervals)
				}
			}
		}
		if err != nil {
			return fmt.Errorf("decode record: %w", err)
		}
	}
	return wr.Err()
}

// addSeries replays a series record. A record that names again the
// labels of a series (Prometheus wrote it when the series came back after
// its head garbage-collected it) adds the m-mapped chunks of its ref to
// the series' and, as Prometheus's replay does, drops the samples
// replayed into the series so far, which a compaction persisted.
func (r *replay) addSeries(ref chunks.HeadSeriesRef, lset labels.Labels) {
	h := lset.Hash()
	for _, o := range r.byHash[h] {
		if s := r.series[o]; labels.Equal(s.lset, lset) {
			r.refs[ref] = o
			s.mm = mergeMMChunks(s.mm, r.mm[ref])
			s.ts, s.vs, s.fhs = nil, nil, nil
			return
		}
	}
	r.series[ref] = &memSeries{lset: lset, mm: r.mm[ref]}
	r.refs[ref] = ref
	r.byHash[h] = append(r.byHash[h], ref)
}

// mergeMMChunks merges the m-mapped chunks of a series and those of a
// later series record of the same labels in time order; where two
// overlap, the later record's chunk is kept, as in Prometheus.
func mergeMMChunks(existing, incoming []mmChunk) []mmChunk {
	if len(existing) == 0 {
		return incoming
	}
	merged := make([]mmChunk, 0, len(existing)+len(incoming))
	for _, c := range existing {
		for len(incoming) > 0 && incoming[0].maxT < c.minT {
			merged, incoming = append(merged, incoming[0]), incoming[1:]
		}
		if len(incoming) > 0 && c.maxT >= incoming[0].minT {
			continue
		}
		merged = append(merged, c)
	}
	return append(merged, incoming...)
}

func (r *replay) add(ref chunks.HeadSeriesRef, t int64, v float64, fh *promhistogram.FloatHistogram) {
	if t < r.minValid {
		return
	}
	s := r.series[r.refs[ref]]
	if s == nil || (len(s.ts) > 0 && t <= s.ts[len(s.ts)-1]) || t <= mmMaxTime(s.mm) {
		return
	}
	if fh != nil && s.fhs == nil {
		s.fhs = make([]*promhistogram.FloatHistogram, len(s.ts), cap(s.ts))
	}
	s.ts, s.vs = append(s.ts, t), append(s.vs, v)
	if s.fhs != nil {
		s.fhs = append(s.fhs, fh)
	}
}

// delete applies a tombstone of series ref: its intervals (those that
// end before minValid are of no sample kept), or, for one over all time,
// the series' samples so far and its labels, so that a later series
// record of the same labels starts a series afresh.
func (r *replay) delete(ref chunks.HeadSeriesRef, ivs tombstones.Intervals) {
	first, ok := r.refs[ref]
	s := r.series[first]
	if !ok || s == nil {
		return
	}
	if len(ivs) == 1 && ivs[0].Mint == math.MinInt64 && ivs[0].Maxt == math.MaxInt64 {
		s.mm, s.ts, s.vs, s.fhs = nil, nil, nil, nil
		h := s.lset.Hash()
		r.byHash[h] = slices.DeleteFunc(r.byHash[h], func(o chunks.HeadSeriesRef) bool { return o == first })
		return
	}
	for _, iv := range ivs {
		if iv.Maxt >= r.minValid {
			r.stones.AddInterval(storage.SeriesRef(first), iv)
		}
	}
}

// head builds the head's readers from the series replayed.
func (r *replay) head() *memHead {
	ix := &memIndex{series: map[storage.SeriesRef]*memEntry{}, postings: map[string]map[string][]storage.SeriesRef{}}
	cs := &memChunks{}
	h := &memHead{minT: math.MaxInt64, maxT: math.MinInt64, numSeries: len(r.series)}
	for ref, s := range r.series {
		sref := storage.SeriesRef(ref)
		e := &memEntry{lset: s.lset, chks: cs.cut(s, r.minValid)}
		ix.series[sref] = e
		ix.all = append(ix.all, sref)
		s.lset.Range(func(l labels.Label) {
			vals := ix.postings[l.Name]
			if vals == nil {
				vals = map[string][]storage.SeriesRef{}
				ix.postings[l.Name] = vals
			}
			vals[l.Value] = append(vals[l.Value], sref)
		})
		if n := len(e.chks); n > 0 {
			h.minT, h.maxT = min(h.minT, e.chks[0].MinTime), max(h.maxT, e.chks[n-1].MaxTime)
		}
	}
	slices.Sort(ix.all)
	for _, vals := range ix.postings {
		for _, refs := range vals {
			slices.Sort(refs)
		}
	}
	h.blockReaders = blockReaders{ir: ix, cr: cs, tr: r.stones}
	return h
}

// memIndex is the head's index.
type memIndex struct {
	series   map[storage.SeriesRef]*memEntry
	all      []storage.SeriesRef                       // ascending
	postings map[string]map[string][]storage.SeriesRef // by label name and value, ascending
}

// memEntry is a series entry of the head's index.
type memEntry struct {
	lset labels.Labels
	chks []chunks.Meta
}

// Symbols returns the label names and values of the head, sorted.
func (ix *memIndex) Symbols() index.StringIter {
	var syms []string
	for name, vals := range ix.postings {
		syms = append(syms, name)
		for v := range vals {
			syms = append(syms, v)
		}
	}
	slices.Sort(syms)
	return index.NewStringListIter(slices.Compact(syms))
}

// Series returns the labels and chunks of series ref, or
// storage.ErrNotFound.
func (ix *memIndex) Series(ref storage.SeriesRef, sb *labels.ScratchBuilder, chks *[]chunks.Meta) error {
	e := ix.series[ref]
	if e == nil {
		return storage.ErrNotFound
	}
	sb.Assign(e.lset)
	*chks = append((*chks)[:0], e.chks...)
	return nil
}

// Postings returns the series with label name set to one of values; of
// index.AllPostingsKey, every series.
func (ix *memIndex) Postings(ctx context.Context, name string, values ...string) (index.Postings, error) {
	if k, v := index.AllPostingsKey(); name == k && len(values) == 1 && values[0] == v {
		return index.NewListPostings(ix.all), nil
	}
	var its []index.Postings
	for _, v := range values {
		if refs := ix.postings[name][v]; len(refs) > 0 {
			its = append(its, index.NewListPostings(refs))
		}
	}
	return index.Merge(ctx, its...), nil
}

// PostingsForLabelMatching returns the series with a value of label name
// that match accepts.
func (ix *memIndex) PostingsForLabelMatching(ctx context.Context, name string, match func(string) bool) index.Postings {
	vals := ix.postings[name]
	keys := make([]string, 0, len(vals))
	for v := range vals {
		if match(v) {
			keys = append(keys, v)
		}
	}
	sort.Strings(keys)
	its := make([]index.Postings, 0, len(keys))
	for _, v := range keys {
		its = append(its, index.NewListPostings(vals[v]))
	}
	return index.Merge(ctx, its...)
}

// memChunks holds the head's chunks, a chunk's ref its position.
type memChunks struct {
	chunks []memChunk
}

// memChunk is a float chunk, or the histograms of an iterable.
type memChunk struct {
	chk  chunkenc.Chunk
	hist *histIterable
}

// ChunkOrIterable returns the chunk of meta.
func (c *memChunks) ChunkOrIterable(meta chunks.Meta) (chunkenc.Chunk, chunkenc.Iterable, error) {
	if int(meta.Ref) >= len(c.chunks) {
		return nil, nil, fmt.Errorf("head chunk %d not found", meta.Ref)
	}
	m := c.chunks[meta.Ref]
	if m.hist != nil {
		return nil, m.hist, nil
	}
	return m.chk, nil, nil
}

// cut stores the chunks of s in time order: its m-mapped chunks (the
// part at or after minValid of one that begins before), then its
// samples from the WAL, runs of float samples in XOR chunks of at most
// samplesPerChunk and runs of histograms as iterables; it returns their
// metas.
func (c *memChunks) cut(s *memSeries, minValid int64) []chunks.Meta {
	var metas []chunks.Meta
	for _, m := range s.mm {
		mc := memChunk{chk: m.chk}
		if m.minT < minValid {
			if mc, m.minT = clipChunk(m.chk, minValid); m.minT > m.maxT {
				continue
			}
		}
		metas = append(metas, chunks.Meta{Ref: chunks.ChunkRef(len(c.chunks)), MinTime: m.minT, MaxTime: m.maxT})
		c.chunks = append(c.chunks, mc)
	}
	isHist := func(i int) bool { return s.fhs != nil && s.fhs[i] != nil }
	for i := 0; i < len(s.ts); {
		j := i + 1
		for j < len(s.ts) && isHist(j) == isHist(i) && (isHist(i) || j-i < samplesPerChunk) {
			j++
		}
		var m memChunk
		if isHist(i) {
			m.hist = &histIterable{ts: s.ts[i:j], fhs: s.fhs[i:j]}
		} else {
			chk := chunkenc.NewXORChunk()
			app, _ := chk.Appender() // a new chunk's appender never fails
			for k := i; k < j; k++ {
				app.Append(0, s.ts[k], s.vs[k])
			}
			m.chk = chk
		}
		metas = append(metas, chunks.Meta{Ref: chunks.ChunkRef(len(c.chunks)), MinTime: s.ts[i], MaxTime: s.ts[j-1]})
		c.chunks = append(c.chunks, m)
		i = j
	}
	return metas
}

// clipChunk returns the samples of chk at or after minValid as a head
// chunk (an XOR chunk of its floats or an iterable of its histograms),
// and the time of the first (math.MaxInt64 for none). The part of an
// m-mapped chunk before minValid is in a block: Prometheus's querier
// would merge it away, as duplicates, with the block's.
func clipChunk(chk chunkenc.Chunk, minValid int64) (memChunk, int64) {
	var (
		out  memChunk
		app  chunkenc.Appender
		hist histIterable
	)
	first := int64(math.MaxInt64)
	it := chk.Iterator(nil)
	for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
		t := it.AtT()
		if t < minValid {
			continue
		}
		first = min(first, t)
		if vt == chunkenc.ValFloat {
			if app == nil {
				out.chk = chunkenc.NewXORChunk()
				app, _ = out.chk.Appender() // a new chunk's appender never fails
			}
			_, v := it.At()
			app.Append(0, t, v)
			continue
		}
		_, fh := it.AtFloatHistogram(nil)
		hist.ts, hist.fhs = append(hist.ts, t), append(hist.fhs, fh)
	}
	if len(hist.ts) > 0 {
		out = memChunk{hist: &hist}
	}
	return out, first
}

// histIterable is a run of a head series' histogram samples, iterated
// by storage.NewListSeriesIterator.
type histIterable struct {
	ts  []int64
	fhs []*promhistogram.FloatHistogram
}

func (h *histIterable) Iterator(chunkenc.Iterator) chunkenc.Iterator {
	return storage.NewListSeriesIterator(h)
}

func (h *histIterable) Len() int { return len(h.ts) }

func (h *histIterable) Get(i int) chunks.Sample { return histSample{t: h.ts[i], fh: h.fhs[i]} }

// histSample is a float histogram sample of the head.
type histSample struct {
	t  int64
	fh *promhistogram.FloatHistogram
}

func (s histSample) T() int64                          { return s.t }
func (s histSample) ST() int64                         { return 0 }
func (s histSample) F() float64                        { return 0 }
func (s histSample) H() *promhistogram.Histogram       { return nil }
func (s histSample) FH() *promhistogram.FloatHistogram { return s.fh }
func (s histSample) Type() chunkenc.ValueType          { return chunkenc.ValFloatHistogram }
func (s histSample) Copy() chunks.Sample               { return histSample{t: s.t, fh: s.fh.Copy()} }

// lastRecordTime returns the oldest sample time of the last samples
// record (floats or histograms) in the WAL segments of dir up to seg,
// searching back from seg; false when there is none.
func lastRecordTime(dir string, seg int) (int64, bool) {
	first, _, err := wlog.Segments(dir)
	if err != nil {
		return 0, false
	}
	dec := record.NewDecoder(nil, tsdbLogger())
	var (
		fs []record.RefSample
		hs []record.RefHistogramSample
		fh []record.RefFloatHistogramSample
	)
	for s := seg; s >= first; s-- {
		r, sr, err := segmentReader(wlog.SegmentName(dir, s))
		if err != nil {
			continue
		}
		t, found := int64(0), false
		for r.Next() {
			rec := r.Record()
			var ts []int64
			switch dec.Type(rec) {
			case record.Samples, record.SamplesV2:
				if fs, err = dec.Samples(rec, fs[:0]); err == nil {
					for _, x := range fs {
						ts = append(ts, x.T)
					}
				}
			case record.HistogramSamples, record.HistogramSamplesV2, record.CustomBucketsHistogramSamples:
				if hs, err = dec.HistogramSamples(rec, hs[:0]); err == nil {
					for _, x := range hs {
						ts = append(ts, x.T)
					}
				}
			case record.FloatHistogramSamples, record.FloatHistogramSamplesV2, record.CustomBucketsFloatHistogramSamples:
				if fh, err = dec.FloatHistogramSamples(rec, fh[:0]); err == nil {
					for _, x := range fh {
						ts = append(ts, x.T)
					}
				}
			}
			if len(ts) > 0 {
				t, found = slices.Min(ts), true
			}
		}
		sr.Close()
		if found {
			return t, true
		}
	}
	return 0, false
}

// laterWALSegments returns how many WAL segments in dir follow segment
// seg and hold something: an empty newest segment (Prometheus creates the
// next one when it closes or rotates the WAL) loses nothing.
func laterWALSegments(dir string, seg int) int {
	_, last, err := wlog.Segments(dir)
	if err != nil || last < seg {
		return 0
	}
	n := 0
	for s := seg + 1; s <= last; s++ {
		if fi, err := os.Stat(wlog.SegmentName(dir, s)); err != nil || fi.Size() > 0 {
			n++
		}
	}
	return n
}

// treeSize sums the sizes of the regular files under dir.
func treeSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			n += fi.Size()
		}
		return nil
	})
	return n, err
}
