package tsdb

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/oklog/ulid/v2"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/tsdb/index"
	"github.com/prometheus/prometheus/tsdb/tombstones"

	"github.com/whyslow/whyslow/snapshot"
)

// A TSDB is read through Prometheus's own decoders (tsdb/index,
// tsdb/chunks, tsdb/tombstones, tsdb/wlog, tsdb/record), not through its
// tsdb package, whose dependencies (its configuration and, through it,
// every service discovery and cloud SDK) a reader does not need. A
// persisted block and the head replayed from the WAL are both a
// blockReaders: an index, chunks and tombstones.

// indexReader is what the reader asks of an index: Prometheus's
// index.Reader for a persisted block, memIndex for the head.
type indexReader interface {
	Symbols() index.StringIter
	Series(ref storage.SeriesRef, sb *labels.ScratchBuilder, chks *[]chunks.Meta) error
	Postings(ctx context.Context, name string, values ...string) (index.Postings, error)
	PostingsForLabelMatching(ctx context.Context, name string, match func(string) bool) index.Postings
}

// chunkReader reads a chunk by its meta: Prometheus's chunks.Reader for
// a persisted block, memChunks for the head.
type chunkReader interface {
	ChunkOrIterable(meta chunks.Meta) (chunkenc.Chunk, chunkenc.Iterable, error)
}

// blockReaders are the readers of a block or of the head, safe for
// concurrent use.
type blockReaders struct {
	ir indexReader
	cr chunkReader
	tr tombstones.Reader
}

// blockMeta is a block's meta.json, the fields the reader uses (as
// Prometheus's tsdb.BlockMeta spells them).
type blockMeta struct {
	ULID    ulid.ULID `json:"ulid"`
	MinTime int64     `json:"minTime"` // inclusive
	MaxTime int64     `json:"maxTime"` // exclusive
	Stats   struct {
		NumSamples uint64 `json:"numSamples,omitempty"`
		NumSeries  uint64 `json:"numSeries,omitempty"`
	} `json:"stats,omitempty"`
	Compaction struct {
		Parents []struct {
			ULID ulid.ULID `json:"ulid"`
		} `json:"parents,omitempty"`
	} `json:"compaction"`
	Version int `json:"version"`
}

// diskBlock is a persisted block opened read-only: its index and chunk
// segments memory-mapped, its tombstones read. Nothing is locked or
// written.
type diskBlock struct {
	dir  string
	meta blockMeta
	blockReaders
	size    int64 // bytes of its files, as tsdb.Block.Size counts them
	closers []interface{ Close() error }
}

// openBlock opens the block in dir, whose meta.json is meta (read before,
// see readBlockMeta), opening its parts in the order tsdb.OpenBlock does:
// chunk segments, index, tombstones. The problem of a part that does not
// open names its file and, where the decoder's error places it, the
// offset.
func openBlock(dir string, meta blockMeta) (*diskBlock, *snapshot.Problem) {
	b := &diskBlock{dir: dir, meta: meta}
	fail := func(file string, off int64, err error) (*diskBlock, *snapshot.Problem) {
		_ = b.Close()
		p := blockProblem(dir, err)
		p.File, p.Offset = file, off
		return nil, &p
	}
	cdir := filepath.Join(dir, tsdbChunksDir)
	cr, err := chunks.NewDirReader(cdir, nil)
	if err != nil {
		file, off := cdir, int64(-1)
		if f, o, ok := badSegment(cdir); ok {
			file, off = f, o
		}
		return fail(file, off, err)
	}
	b.closers = append(b.closers, cr)
	ifile := filepath.Join(dir, tsdbIndexFile)
	ir, err := index.NewFileReader(ifile, index.DecodePostingsRaw)
	if err != nil {
		return fail(ifile, indexOffset(ifile, err), err)
	}
	b.closers = append(b.closers, ir)
	tr, tsize, err := tombstones.ReadTombstones(dir)
	if err != nil {
		tfile := filepath.Join(dir, tsdbTombstonesFile)
		return fail(tfile, tombstonesOffset(tfile, err), err)
	}
	b.closers = append(b.closers, tr)
	b.blockReaders = blockReaders{ir: ir, cr: cr, tr: tr}
	b.size = cr.Size() + ir.Size() + tsize
	if fi, err := os.Stat(filepath.Join(dir, tsdbMetaFile)); err == nil {
		b.size += fi.Size()
	}
	return b, nil
}

// Close closes the block's files (unmapping them).
func (b *diskBlock) Close() error {
	var errs []error
	for _, c := range b.closers {
		errs = append(errs, c.Close())
	}
	b.closers = nil
	return errors.Join(errs...)
}
