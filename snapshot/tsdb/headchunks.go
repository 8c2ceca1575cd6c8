package tsdb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
)

// mmChunk is a head chunk that Prometheus m-mapped to chunks_head/ when
// it was full: the samples [minT, maxT] of one series, which the WAL
// replay then skips (Prometheus's Head.Init does the same).
type mmChunk struct {
	minT, maxT int64
	chk        chunkenc.Chunk
}

// headChunksCorruption is where chunks_head/ stopped being readable: a
// file, the offset in it and why.
type headChunksCorruption struct {
	file   string
	offset int
	err    error
}

// readHeadChunks reads the m-mapped head chunks of dir (a chunks_head/
// directory) by the series ref they were written for, keeping those of
// in-order samples that end at or after minValidTime, as Prometheus's
// head loads them on restart. chunks.ChunkDiskMapper is not used: it
// creates the directory and repairs (deletes) files, and nothing under
// an input path may change. Its on-disk format (tsdb/docs/format/
// head_chunks.md) is read with the chunks package's constants.
//
// A file that is corrupt (a bad header, checksum or length, a chunk out
// of time order for its series) ends the read: that file's chunks and
// those of later files are dropped, as Prometheus deletes them before it
// replays the WAL, which still holds their samples unless a checkpoint
// truncated them. cor says where; err is a directory or file that could
// not be read at all.
func readHeadChunks(dir string, minValidTime int64) (byRef map[chunks.HeadSeriesRef][]mmChunk, cor *headChunksCorruption, err error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	var seqs []int
	for _, e := range ents {
		if seq, err := strconv.ParseUint(e.Name(), 10, 31); err == nil {
			seqs = append(seqs, int(seq))
		}
	}
	slices.Sort(seqs)
	byRef = map[chunks.HeadSeriesRef][]mmChunk{}
	for _, seq := range seqs {
		fn := filepath.Join(dir, fmt.Sprintf("%06d", seq))
		b, err := readRegular(fn, false)
		if err != nil {
			return nil, nil, err
		}
		fileChunks := map[chunks.HeadSeriesRef][]mmChunk{}
		if off, err := decodeHeadChunkFile(b, minValidTime, byRef, fileChunks); err != nil {
			return byRef, &headChunksCorruption{file: fn, offset: off, err: err}, nil
		}
		for ref, cs := range fileChunks {
			byRef[ref] = append(byRef[ref], cs...)
		}
	}
	return byRef, nil, nil
}

// decodeHeadChunkFile decodes the head chunk file b into out, checking
// each chunk's time order against the chunks of its series in prev and
// out; on error it returns the offset of the chunk that failed.
func decodeHeadChunkFile(b []byte, minValidTime int64, prev, out map[chunks.HeadSeriesRef][]mmChunk) (int, error) {
	if len(b) < chunks.HeadChunkFileHeaderSize {
		return 0, fmt.Errorf("head chunk file of %d bytes, shorter than its header", len(b))
	}
	if m := binary.BigEndian.Uint32(b); m != chunks.MagicHeadChunks {
		return 0, fmt.Errorf("invalid magic number %x", m)
	}
	if v := b[chunks.MagicChunksSize]; v != 1 {
		return chunks.MagicChunksSize, fmt.Errorf("invalid head chunk format version %d", v)
	}
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	const metaSize = chunks.SeriesRefSize + 2*chunks.MintMaxtSize
	for idx := chunks.HeadChunkFileHeaderSize; idx < len(b); {
		start := idx
		if len(b)-idx < chunks.MaxHeadChunkMetaSize {
			if allZero(b[idx:]) {
				break // the end of the file's content
			}
			return start, fmt.Errorf("%d bytes left, too few for a chunk's header", len(b)-idx)
		}
		ref := chunks.HeadSeriesRef(binary.BigEndian.Uint64(b[idx:]))
		mint := int64(binary.BigEndian.Uint64(b[idx+chunks.SeriesRefSize:]))
		maxt := int64(binary.BigEndian.Uint64(b[idx+chunks.SeriesRefSize+chunks.MintMaxtSize:]))
		if ref == 0 && mint == 0 && maxt == 0 {
			break // preallocated space: series refs start at 1
		}
		idx += metaSize
		enc := b[idx]
		idx += chunks.ChunkEncodingSize
		n, w := binary.Uvarint(b[idx:min(len(b), idx+chunks.MaxChunkLengthFieldSize)])
		if w <= 0 || n > uint64(len(b)) {
			return start, errors.New("invalid chunk data length")
		}
		idx += w
		data := idx
		idx += int(n)
		if idx+chunks.CRCSize > len(b) {
			return start, fmt.Errorf("chunk data of %d bytes runs past the end of the file", n)
		}
		if got, want := crc32.Checksum(b[start:idx], castagnoli), binary.BigEndian.Uint32(b[idx:]); got != want {
			return start, fmt.Errorf("checksum mismatch: computed %08x, stored %08x", got, want)
		}
		idx += chunks.CRCSize
		if enc&chunks.OutOfOrderMask != 0 || !chunkenc.IsValidEncoding(chunkenc.Encoding(enc)) || maxt < minValidTime {
			// Out-of-order chunks are not read (no out-of-order window,
			// as for the WAL); an unknown encoding is skipped, as
			// Prometheus does; a chunk that ends before minValidTime is in
			// a block or was truncated.
			continue
		}
		last := out[ref]
		if len(last) == 0 {
			last = prev[ref]
		}
		if k := len(last); k > 0 && last[k-1].maxT >= mint {
			return start, fmt.Errorf("out of sequence chunk for series ref %d: last chunk [%d, %d], new [%d, %d]", ref, last[k-1].minT, last[k-1].maxT, mint, maxt)
		}
		chk, err := chunkenc.FromData(chunkenc.Encoding(enc), b[data:data+int(n)])
		if err != nil {
			return start, err
		}
		out[ref] = append(out[ref], mmChunk{minT: mint, maxT: maxt, chk: chk})
	}
	return 0, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// mmMaxTime is the last time of cs, math.MinInt64 for none.
func mmMaxTime(cs []mmChunk) int64 {
	if len(cs) == 0 {
		return math.MinInt64
	}
	return cs[len(cs)-1].maxT
}
