package tsdb

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/tsdb/index"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/snapshot"
)

// writeManyPodsBlock writes one block of pods targets, each with a gauge,
// a counter and a histogram of buckets buckets, samples samples 15 s
// apart, and returns the block's directory.
func writeManyPodsBlock(t *testing.T, pods, buckets, samples int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	db, err := tsdb.Open(dir, slog.New(slog.DiscardHandler), nil, tsdb.DefaultOptions(), nil)
	require.NoError(t, err)
	t0 := time.Date(2026, 9, 22, 10, 0, 0, 0, time.UTC)
	for i := range samples {
		app := db.AppenderV2(context.Background())
		ts := t0.Add(time.Duration(i) * 15 * time.Second).UnixMilli()
		for p := range pods {
			pod := fmt.Sprintf("pod-%03d", p)
			add := func(ls labels.Labels, v float64) {
				_, err := app.Append(0, ls, 0, ts, v, nil, nil, storage.AOptions{})
				require.NoError(t, err)
			}
			add(tsdbLabels(pod, "vllm:num_requests_running"), float64((i*7+p)%11))
			add(tsdbLabels(pod, "vllm:request_success_total"), float64(i*(p+1)))
			for b := range buckets {
				add(tsdbLabels(pod, "vllm:time_to_first_token_seconds_bucket", "le", fmt.Sprint(b)), float64(i*(b+1)+p))
			}
		}
		require.NoError(t, app.Commit())
	}
	hd := db.Head()
	require.NoError(t, db.CompactHead(tsdb.NewRangeHead(hd, hd.MinTime(), hd.MaxTime())))
	require.NoError(t, db.Close())
	blocks := tsdbBlockDirs(t, dir)
	require.Len(t, blocks, 1)
	return filepath.Join(dir, blocks[0])
}

// TestBlockFilesAsBlockReaders: every series entry and chunk of a block
// read through its files is the one the block's own readers give, and the
// reads of one target's series come in runs, not one read a series.
func TestBlockFilesAsBlockReaders(t *testing.T) {
	const pods, buckets = 40, 40
	bdir := writeManyPodsBlock(t, pods, buckets, 480)
	ir, cr := openBlockReaders(t, bdir)
	files := newBlockFiles(bdir)
	defer func() { require.NoError(t, files.close()) }()
	all := allRefs(t, ir)
	require.Len(t, all, pods*(2+buckets))

	r := files.reader(ir, cr)
	defer r.release()
	require.NotNil(t, r.files, "the files are read")
	require.True(t, files.readable())

	// compare reads refs through r, as a batch does, against ir and cr.
	compare := func(t *testing.T, refs []storage.SeriesRef) (entryReads, chunkReads int) {
		r.iw.buf, r.cw.buf = r.iw.buf[:0], r.cw.buf[:0] // nothing held
		r.expectSeries(refs)
		i0, c0 := r.iw.reads, r.cw.reads
		var sb labels.ScratchBuilder
		var chks []chunks.Meta
		for k := 0; k < len(refs); {
			es, n := r.batch(refs[k:], math.MinInt64, math.MaxInt64)
			require.Positive(t, n)
			for j, e := range es {
				require.False(t, e.bad)
				require.NoError(t, ir.Series(refs[k+j], &sb, &chks))
				require.Equal(t, sb.Labels(), e.lset)
				require.Equal(t, chks, e.chks)
				for _, c := range e.chks {
					want, _, err := cr.ChunkOrIterable(c)
					require.NoError(t, err)
					got, iterable, err := r.ChunkOrIterable(c)
					require.NoError(t, err)
					require.Nil(t, iterable)
					require.Equal(t, want.Encoding(), got.Encoding())
					require.Equal(t, want.Bytes(), got.Bytes())
				}
			}
			k += n
		}
		return r.iw.reads - i0, r.cw.reads - c0
	}
	t.Run("all", func(t *testing.T) {
		compare(t, all)
	})
	t.Run("one target", func(t *testing.T) {
		p, err := tsdb.PostingsForMatchers(context.Background(), ir, labels.MustNewMatcher(labels.MatchEqual, "pod", "pod-017"))
		require.NoError(t, err)
		refs, err := index.ExpandPostings(p)
		require.NoError(t, err)
		require.Len(t, refs, 2+buckets)
		er, cReads := compare(t, refs)
		t.Logf("reads: %d of the index, %d of chunks", er, cReads)
		// The target's series lie in three runs (one a metric name) in
		// the index and in the chunks: a read a run, give or take one.
		assert.LessOrEqual(t, er, 4, "index reads")
		assert.LessOrEqual(t, cReads, 4, "chunk reads")
	})
	t.Run("symbols", func(t *testing.T) {
		_, err := r.lookupSymbol(context.Background(), uint32(len(files.symbols)))
		require.Error(t, err)
		var want []string
		it := ir.Symbols()
		for it.Next() {
			want = append(want, it.At())
		}
		require.NoError(t, it.Err())
		require.Equal(t, want, files.symbols)
	})
}

// TestBlockFilesFallBack: where the files cannot be read, the block's
// own readers are, with their results and errors.
func TestBlockFilesFallBack(t *testing.T) {
	bdir := writeManyPodsBlock(t, 3, 2, 20)
	ir, cr := openBlockReaders(t, bdir)
	all := allRefs(t, ir)

	for name, files := range map[string]*blockFiles{
		"nil":        nil,
		"no files":   newBlockFiles(t.TempDir()),
		"not format": func() *blockFiles { d := t.TempDir(); writeBadIndex(t, d); return newBlockFiles(d) }(),
	} {
		t.Run(name, func(t *testing.T) {
			r := files.reader(ir, cr)
			defer r.release()
			assert.Nil(t, r.files)
			assert.False(t, files.readable())
			var sb, wsb labels.ScratchBuilder
			var chks, wchks []chunks.Meta
			for _, ref := range all {
				require.NoError(t, r.Series(ref, &sb, &chks))
				require.NoError(t, ir.Series(ref, &wsb, &wchks))
				require.Equal(t, wsb.Labels(), sb.Labels())
				require.Equal(t, wchks, chks)
			}
			// A ref that is no series: the block's reader's error.
			werr := ir.Series(1<<40, &wsb, &wchks)
			require.Error(t, werr)
			require.EqualError(t, r.Series(1<<40, &sb, &chks), werr.Error())
		})
	}
	t.Run("bad ref through the files", func(t *testing.T) {
		files := newBlockFiles(bdir)
		defer files.close()
		r := files.reader(ir, cr)
		defer r.release()
		require.NotNil(t, r.files)
		werr := ir.Series(1<<40, &labels.ScratchBuilder{}, &[]chunks.Meta{})
		require.EqualError(t, r.Series(1<<40, &labels.ScratchBuilder{}, &[]chunks.Meta{}), werr.Error())
		_, _, err := r.ChunkOrIterable(chunks.Meta{Ref: chunks.ChunkRef(chunks.NewBlockChunkRef(7, 8))})
		require.ErrorContains(t, err, "segment index 7 out of range")
		_, _, err = r.ChunkOrIterable(chunks.Meta{Ref: chunks.ChunkRef(chunks.NewBlockChunkRef(0, 1<<31))})
		require.ErrorContains(t, err, "segment doesn't include enough bytes")
	})
}

// writeBadIndex writes, in block directory d, an index file of format 1
// and an empty chunks directory.
func writeBadIndex(t *testing.T, d string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(d, "index"), []byte{0xBA, 0xAA, 0xD7, 0x00, 1, 0, 0, 0}, 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(d, "chunks"), 0o755))
}

// openBlockReaders opens the block in bdir and its index and chunk
// readers, closed when t ends.
func openBlockReaders(t *testing.T, bdir string) (tsdb.IndexReader, tsdb.ChunkReader) {
	t.Helper()
	b, err := tsdb.OpenBlock(slog.New(slog.DiscardHandler), bdir, nil, nil)
	require.NoError(t, err)
	ir, err := b.Index()
	require.NoError(t, err)
	cr, err := b.Chunks()
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, ir.Close())
		require.NoError(t, cr.Close())
		require.NoError(t, b.Close())
	})
	return ir, cr
}

// allRefs returns every series of ir.
func allRefs(t *testing.T, ir tsdb.IndexReader) []storage.SeriesRef {
	t.Helper()
	k, v := index.AllPostingsKey()
	p, err := ir.Postings(context.Background(), k, v)
	require.NoError(t, err)
	refs, err := index.ExpandPostings(p)
	require.NoError(t, err)
	return refs
}

// TestBlockFilesManySymbols: a block whose symbols would take more than
// maxSymbolBytes has its series entries read by its own index reader and
// its chunks through the files, with the evidence and problems of the
// querier's path.
func TestBlockFilesManySymbols(t *testing.T) {
	defer func(n int) { maxSymbolBytes = n }(maxSymbolBytes)
	maxSymbolBytes = 64
	bdir := writeManyPodsBlock(t, 3, 2, 20)
	ir, cr := openBlockReaders(t, bdir)
	files := newBlockFiles(bdir)
	defer files.close()
	r := files.reader(ir, cr)
	defer r.release()
	require.NotNil(t, r.files, "chunks through the files")
	assert.False(t, r.entries, "entries through the index reader")
	assert.False(t, files.readable())
	var sb labels.ScratchBuilder
	var chks []chunks.Meta
	for _, ref := range allRefs(t, ir) {
		require.NoError(t, r.Series(ref, &sb, &chks))
		for _, c := range chks {
			want, _, err := cr.ChunkOrIterable(c)
			require.NoError(t, err)
			got, _, err := r.ChunkOrIterable(c)
			require.NoError(t, err)
			require.Equal(t, want.Bytes(), got.Bytes())
		}
	}
	assert.Positive(t, r.cw.reads)
	assert.Zero(t, r.iw.reads)

	f := writeTSDBFixture(t, filepath.Join(t.TempDir(), "data"))
	requireDirectAsQuerier(t, f.dir, snapshot.Options{})
}
