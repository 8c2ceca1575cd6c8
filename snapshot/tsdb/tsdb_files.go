package tsdb

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/tsdb/encoding"
	"github.com/prometheus/prometheus/tsdb/index"
)

// blockFiles reads a persisted block's series entries and chunks with
// positioned reads (os.File.ReadAt) into small buffers of the reader's
// own, rather than through the memory maps of Prometheus's index and
// chunk readers, and looks the index's symbols up in a table of its own.
// Two reasons (measured in TSDB_BENCHMARKS.md):
//
//   - Resident memory. A mapped page that is read stays in the process's
//     resident set until the block is closed, and where the page cache
//     holds files in large folios (ext4 since Linux 6.16) one fault maps
//     a whole folio, up to 2 MB. The series of one target lie in a few
//     hundred short runs across each block's files, so reading one target
//     of a large fleet mapped nearly all of them, and the resident set
//     grew with the blocks read. A positioned read copies what it reads
//     and maps nothing.
//   - Symbol lookups. For every label name and value of a series entry,
//     Prometheus's index reader walks up to 31 symbols from the nearest
//     32nd and copies the string, a large share of a whole-range survey's
//     CPU time. blockFiles keeps the block's symbol table as a slice.
//
// The bytes are decoded by Prometheus's own decoders (encoding.Decbuf,
// index.Decoder, the chunk pool); blockFiles only finds them, the chunk's
// framing (length, encoding, data, CRC32) being the one chunks.Reader
// reads. Whatever it cannot read (a file that does not open, an index not
// in format 2, a short read, a bad checksum) is read by the block's own
// readers instead, or reported as they report it, so that errors are
// theirs. Files are opened read-only and never locked.
type blockFiles struct {
	dir    string
	follow bool // symbolic links are followed (Options.FollowLinks)

	openOnce sync.Once
	ok       bool // the files are open and the index is in format 2
	index    fileBytes
	segs     []fileBytes // chunk segments, in chunks.Reader's order

	symOnce sync.Once
	symbols []string    // by symbol reference (index format 2); nil: not read
	symRead atomic.Bool // symbols were read
}

// readFiles reports whether blocks are read through their files (a
// variable for tests, which compare with the block's own readers).
var readFiles = true

// readers keeps released blockReaders, with their buffers, for any block.
var readers sync.Pool

// fileBytes is an open file and its size.
type fileBytes struct {
	f    *os.File
	size int
}

// newBlockFiles returns the files of the block in dir, opened when
// first read.
func newBlockFiles(dir string) *blockFiles { return &blockFiles{dir: dir} }

// open opens the index and chunk segment files once; false when any
// cannot be opened or the index is not in format 2.
func (f *blockFiles) open() bool {
	f.openOnce.Do(func() {
		idx, err := openFileBytes(filepath.Join(f.dir, "index"), f.follow)
		if err != nil {
			return
		}
		f.index = idx
		var hdr [5]byte
		if _, err := idx.f.ReadAt(hdr[:], 0); err != nil || binary.BigEndian.Uint32(hdr[:4]) != index.MagicIndex || hdr[4] != index.FormatV2 {
			return
		}
		// The segments as chunks.NewDirReader lists them: every entry
		// whose name is a number, in name order; a chunk ref's sequence
		// is the position in that list.
		cdir := filepath.Join(f.dir, "chunks")
		ents, err := os.ReadDir(cdir)
		if err != nil {
			return
		}
		for _, e := range ents {
			if _, err := strconv.ParseUint(e.Name(), 10, 64); err != nil {
				continue
			}
			sb, err := openFileBytes(filepath.Join(cdir, e.Name()), f.follow)
			if err != nil {
				return
			}
			f.segs = append(f.segs, sb)
		}
		f.ok = true
	})
	return f.ok
}

// openFileBytes opens the regular file path (openRegular: never
// blocking, a symbolic link followed only when follow).
func openFileBytes(path string, follow bool) (fileBytes, error) {
	fh, st, err := openRegular(path, follow)
	if err != nil {
		return fileBytes{}, err
	}
	return fileBytes{f: fh, size: int(st.Size())}, nil
}

// close closes the files; f may be nil.
func (f *blockFiles) close() error {
	if f == nil {
		return nil
	}
	var errs []error
	for _, fb := range append([]fileBytes{f.index}, f.segs...) {
		if fb.f != nil {
			errs = append(errs, fb.f.Close())
		}
	}
	f.index, f.segs, f.ok = fileBytes{}, nil, false
	return errors.Join(errs...)
}

// maxSymbolBytes bounds the bytes of a block's symbols that blockFiles
// keeps (a variable for tests). A block of a vLLM fleet has a few thousand
// symbols (100 pods: ~100 KB); a server's block of a million unrelated
// series may have hundreds of thousands, whose table would cost more
// memory than its lookups cost time: its series entries are then read by
// the block's own index reader (its chunks still through the files).
var maxSymbolBytes = 4 << 20

// loadSymbols reads the block's symbol table through ir once; false when
// it cannot, or when it holds more than maxSymbolBytes (the block's reader
// then reads the series entries).
func (f *blockFiles) loadSymbols(ir indexReader) bool {
	f.symOnce.Do(func() {
		var syms []string
		size := 0
		it := ir.Symbols()
		for it.Next() {
			// The iterator's strings are the mapped file's bytes.
			syms = append(syms, strings.Clone(it.At()))
			if size += len(it.At()) + 16; size > maxSymbolBytes {
				return
			}
		}
		if it.Err() == nil && syms != nil {
			f.symbols = syms
			f.symRead.Store(true)
		}
	})
	return f.symRead.Load()
}

// readable reports whether series entries are read through the files
// (after a first read): false for nil, for files that did not open or
// whose index is not in format 2, and for a symbol table too large to
// keep (see maxSymbolBytes).
func (f *blockFiles) readable() bool {
	return f != nil && readFiles && f.open() && f.symRead.Load()
}

// reader returns a reader of the series entries and chunks of the block,
// through f where it can and else through ir and cr, the block's own
// readers (cr may be nil where no chunk is read). f nil reads through them
// alone. Release it when done.
func (f *blockFiles) reader(ir indexReader, cr chunkReader) *blockReader {
	if f == nil || !readFiles || !f.open() {
		return &blockReader{ir: ir, cr: cr}
	}
	r, _ := readers.Get().(*blockReader)
	if r == nil {
		r = &blockReader{pool: chunkenc.NewPool()}
		r.dec.LookupSymbol = r.lookupSymbol
		r.iw.base, r.cw.base = noFile, noFile
	}
	r.files, r.ir, r.cr = f, ir, cr
	r.entries = f.loadSymbols(ir)
	r.iw.use(f.index, 0)
	return r
}

// blockReader reads one block's series entries and chunks, on one
// goroutine (see blockFiles.reader).
type blockReader struct {
	files   *blockFiles // nil: through ir and cr alone
	entries bool        // series entries through files too (its symbols are kept)
	ir      indexReader
	cr      chunkReader
	dec     index.Decoder
	iw, cw  window
	plan    []int      // iw's plan
	eb      entryBatch // the last batch
	pool    chunkenc.Pool
	last    chunkenc.Chunk // handed out by the last ChunkOrIterable
}

// Bytes a read takes past the last entry or chunk of a run (see window):
// a series entry is about a hundred bytes, a float chunk a few hundred.
const (
	entryTail = 512
	chunkTail = 1 << 10
)

// expectSeries tells r the series entries it will read, refs in the
// index's order.
func (r *blockReader) expectSeries(refs []storage.SeriesRef) {
	if !r.entries {
		return
	}
	r.plan = r.plan[:0]
	for _, ref := range refs {
		r.plan = append(r.plan, int(ref)*16)
	}
	r.iw.expect(r.plan, entryTail)
}

// seriesEntry is a series entry read in a batch (see blockReader.batch).
type seriesEntry struct {
	ref  storage.SeriesRef
	lset labels.Labels
	chks []chunks.Meta // its chunks that overlap the range read, in the index's order
	bad  bool          // the entry could not be read (lset and chks are empty)
}

// entryBatch holds the entries of a batch, and buffers reused by the
// next.
type entryBatch struct {
	es    []seriesEntry
	metas []chunks.Meta
	plan  []int
	sb    labels.ScratchBuilder
	chks  []chunks.Meta
}

// batchSeries is the most series entries a batch reads.
const batchSeries = 256

// batch reads the series entries of refs[:n], n at most batchSeries, in
// order, and stops after the first one that cannot be read (then the
// last, marked bad). Each entry keeps its chunks that overlap [mint,
// maxt] (inRange), and r is told where they lie, so that the chunks of
// the batch are read in runs (see window). The entries are valid until
// the next batch.
func (r *blockReader) batch(refs []storage.SeriesRef, mint, maxt int64) (es []seriesEntry, n int) {
	b := &r.eb
	clear(b.es)
	b.es, b.metas = b.es[:0], b.metas[:0]
	type span struct{ from, to int }
	var spans [batchSeries]span
	for _, ref := range refs[:min(len(refs), batchSeries)] {
		n++
		if err := r.Series(ref, &b.sb, &b.chks); err != nil {
			b.es = append(b.es, seriesEntry{ref: ref, bad: true})
			break
		}
		in := inRange(b.chks, mint, maxt)
		spans[len(b.es)] = span{len(b.metas), len(b.metas) + len(in)}
		b.es = append(b.es, seriesEntry{ref: ref, lset: b.sb.Labels()})
		b.metas = append(b.metas, in...)
	}
	for k := range b.es {
		b.es[k].chks = b.metas[spans[k].from:spans[k].to:spans[k].to]
	}
	if r.files != nil {
		b.plan = b.plan[:0]
		for _, c := range b.metas {
			b.plan = append(b.plan, int(c.Ref))
		}
		r.cw.expect(b.plan, chunkTail)
	}
	return b.es, n
}

// release returns r's buffers for reuse; r is not used after.
func (r *blockReader) release() {
	if r.files == nil {
		return
	}
	if r.last != nil {
		_ = r.pool.Put(r.last)
		r.last = nil
	}
	r.files, r.entries, r.ir, r.cr = nil, false, nil, nil
	clear(r.eb.es) // no labels kept alive
	r.iw.use(fileBytes{}, noFile)
	r.cw.use(fileBytes{}, noFile)
	readers.Put(r)
}

func (r *blockReader) lookupSymbol(_ context.Context, o uint32) (string, error) {
	if int(o) >= len(r.files.symbols) {
		return "", fmt.Errorf("unknown symbol offset %d", o)
	}
	return r.files.symbols[o], nil
}

// castagnoli is the CRC32 table of Prometheus's index and chunk files.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Series reads the labels and chunk metas of series ref into sb and chks,
// as the block's index reader's Series does (the same results; an error
// is always that reader's).
func (r *blockReader) Series(ref storage.SeriesRef, sb *labels.ScratchBuilder, chks *[]chunks.Meta) error {
	if r.entries {
		// Index format 2: a series is 16-byte aligned and its ref is its
		// offset / 16.
		r.iw.err = nil
		d := encoding.NewDecbufUvarintAt(&r.iw, int(ref)*16, castagnoli)
		if d.Err() == nil && r.iw.err == nil && r.dec.Series(d.Get(), sb, chks) == nil {
			return nil
		}
	}
	return r.ir.Series(ref, sb, chks)
}

// ChunkOrIterable reads the chunk of meta as the block's chunk reader
// does. The chunk returned is valid until the next call.
func (r *blockReader) ChunkOrIterable(meta chunks.Meta) (chunkenc.Chunk, chunkenc.Iterable, error) {
	if r.files == nil {
		return r.cr.ChunkOrIterable(meta)
	}
	if r.last != nil {
		_ = r.pool.Put(r.last)
		r.last = nil
	}
	seq, off := chunks.BlockChunkRef(meta.Ref).Unpack()
	if seq >= len(r.files.segs) {
		return nil, nil, fmt.Errorf("segment index %d out of range", seq)
	}
	r.cw.use(r.files.segs[seq], seq<<32)
	r.cw.err = nil
	if off+chunks.MaxChunkLengthFieldSize > r.cw.size {
		return nil, nil, fmt.Errorf("segment doesn't include enough bytes to read the chunk size data field - required:%v, available:%v", off+chunks.MaxChunkLengthFieldSize, r.cw.size)
	}
	// As chunks.Reader: the data's length, the encoding, the data, and a
	// CRC32 of the encoding and data.
	n0, n := binary.Uvarint(r.cw.Range(off, off+chunks.MaxChunkLengthFieldSize))
	if r.cw.err != nil {
		return nil, nil, fmt.Errorf("reading chunk: %w", r.cw.err)
	}
	if n <= 0 {
		return nil, nil, fmt.Errorf("reading chunk length failed with %d", n)
	}
	encStart := off + n
	end := encStart + chunks.ChunkEncodingSize + int(n0) + crc32.Size
	if n0 > uint64(r.cw.size) || end > r.cw.size {
		return nil, nil, fmt.Errorf("segment doesn't include enough bytes to read the chunk - required:%v, available:%v", end, r.cw.size)
	}
	b := r.cw.Range(encStart, end)
	if r.cw.err != nil {
		return nil, nil, fmt.Errorf("reading chunk: %w", r.cw.err)
	}
	body, sum := b[:len(b)-crc32.Size], b[len(b)-crc32.Size:]
	if got, want := crc32.Checksum(body, castagnoli), binary.BigEndian.Uint32(sum); got != want {
		return nil, nil, fmt.Errorf("checksum mismatch expected:%x, actual:%x", want, got)
	}
	chk, err := r.pool.Get(chunkenc.Encoding(body[0]), body[chunks.ChunkEncodingSize:])
	if err != nil {
		return nil, nil, err
	}
	r.last = chk
	return chk, nil, nil
}

// window is an encoding.ByteSlice over a file read with positioned reads:
// it holds a window of the file, read anew when a range asked falls
// outside it. A slice returned is valid until the next call. A read that
// fails gives zeros and is kept in err.
//
// Where the reader knows which offsets it will read next (expect), a
// read takes the run of them that lie close together (gaps of at most
// maxGap, maxRead bytes in all) and tail bytes past the last: the series
// of one target lie in a few hundred runs of a few KB across a block's
// files, and a read per run, of that run, copies little beyond what is
// decoded and makes few system calls.
type window struct {
	fileBytes
	base int    // plan's position of the file's offset 0 (a chunk segment's sequence << 32)
	buf  []byte // the file's bytes [off, off+len(buf))
	off  int
	plan []int // ascending positions of the reads to come (base + offset)
	at   int   // plan[:at] lie before the last read
	tail int   // bytes read past the last position of a run
	err  error
	// reads counts the file's reads (for tests).
	reads int
}

const (
	maxGap  = 4 << 10   // bytes between planned reads read rather than skipped
	maxRead = 256 << 10 // bytes one read takes at most (unless a range needs more)
	minRead = 512       // bytes one read takes at least
	noFile  = -1 << 62  // base of a window on no file
)

// use points w at fb, whose offset 0 is plan position base, forgetting
// the bytes held when that is another file.
func (w *window) use(fb fileBytes, base int) {
	if w.base == base && w.f == fb.f {
		return
	}
	w.fileBytes, w.base = fb, base
	w.buf, w.off = w.buf[:0], 0
}

// expect tells w the positions (base + offset, ascending) of the reads to
// come, and how many bytes one may take past its position.
func (w *window) expect(plan []int, tail int) {
	w.plan, w.at, w.tail = plan, 0, tail
}

// Len is the file's size.
func (w *window) Len() int { return w.size }

// Range returns the file's bytes [start, end).
func (w *window) Range(start, end int) []byte {
	if start < 0 || end > w.size || start > end {
		w.err = fmt.Errorf("range [%d, %d) outside %d bytes", start, end, w.size)
		return make([]byte, max(0, end-start))
	}
	if (start < w.off || end > w.off+len(w.buf)) && !w.fill(start, end) {
		return make([]byte, end-start)
	}
	return w.buf[start-w.off : end-w.off]
}

// fill reads a window that holds [start, end); false when the read fails
// (w.err).
func (w *window) fill(start, end int) bool {
	stop := end
	pos := w.base + start
	i := w.at
	for i < len(w.plan) && w.plan[i] < pos {
		i++
	}
	w.at = i
	if i < len(w.plan) && w.plan[i]-pos <= maxGap {
		j := i
		for j+1 < len(w.plan) && w.plan[j+1]-w.plan[j] <= maxGap && w.plan[j+1]+w.tail-pos <= maxRead {
			j++
		}
		stop = max(stop, w.plan[j]-w.base+w.tail)
	}
	stop = min(max(stop, start+minRead), w.size)
	n := stop - start
	if cap(w.buf) < n {
		w.buf = make([]byte, n, max(n, 2*cap(w.buf)))
	}
	w.buf, w.off = w.buf[:n], start
	w.reads++
	if _, err := w.f.ReadAt(w.buf, int64(start)); err != nil {
		w.err = fmt.Errorf("%s: %w", w.f.Name(), err)
		w.buf = w.buf[:0] // read again next time
		return false
	}
	return true
}
