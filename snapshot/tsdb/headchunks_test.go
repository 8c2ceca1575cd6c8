package tsdb

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/snapshot"
)

// fixtureHeadChunks returns the m-mapped chunks of f's head and the
// first chunk file; the fixture's head holds full chunks.
func fixtureHeadChunks(t *testing.T, f *tsdbFix) (int, string) {
	t.Helper()
	dir := filepath.Join(f.dir, tsdbChunksHeadDir)
	mm, cor, err := readHeadChunks(dir, math.MinInt64)
	require.NoError(t, err)
	require.Nil(t, cor)
	n := 0
	for _, cs := range mm {
		n += len(cs)
	}
	require.Positive(t, n, "the fixture's head has m-mapped chunks")
	files, err := filepath.Glob(filepath.Join(dir, "0*"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	return n, files[0]
}

// The WAL lost most of its head's records (cut at a third of its last
// segment): the samples Prometheus m-mapped to chunks_head/ are still read,
// as Prometheus reads them on restart.
func TestReadTSDBHeadChunksOutliveTornWAL(t *testing.T) {
	f := writeTSDBFixture(t, filepath.Join(t.TempDir(), "data"))
	fixtureHeadChunks(t, f)
	// headLen returns the number of samples of each series in the head,
	// by its labels, replayed with the m-mapped chunks or without.
	headLen := func(withChunks bool) map[string]int {
		var mm map[chunks.HeadSeriesRef][]mmChunk
		if withChunks {
			var err error
			mm, _, err = readHeadChunks(filepath.Join(f.dir, tsdbChunksHeadDir), f.ts(f.nBlock))
			require.NoError(t, err)
		}
		h, _, err := replayWAL(filepath.Join(f.dir, tsdbWALDir), f.ts(f.nBlock), mm)
		require.NoError(t, err)
		n := map[string]int{}
		for _, e := range h.ir.(*memIndex).series {
			for _, c := range e.chks {
				chk, iter, err := h.cr.ChunkOrIterable(c)
				require.NoError(t, err)
				it := chunkenc.Iterator(nil)
				if iter != nil {
					it = iter.Iterator(nil)
				} else {
					it = chk.Iterator(nil)
				}
				for it.Next() != chunkenc.ValNone {
					n[e.lset.String()]++
				}
			}
		}
		return n
	}
	whole := headLen(false)
	tearWAL(t, f.dir, 1) // the page padding off
	segs, err := filepath.Glob(filepath.Join(f.dir, tsdbWALDir, "0*"))
	require.NoError(t, err)
	seg := segs[len(segs)-1]
	fi, err := os.Stat(seg)
	require.NoError(t, err)
	require.NoError(t, os.Truncate(seg, fi.Size()/3))
	walOnly, withChunks := headLen(false), headLen(true)

	ev, err := Read(context.Background(), f.dir, snapshot.Options{})
	require.NoError(t, err)
	gained := 0
	for _, pod := range f.pods {
		g := ev.Target(pod).Family("vllm:num_requests_waiting").Series[0]
		for k := range g.T {
			require.Equal(t, f.ts(k), g.T[k])
			require.Equal(t, tsdbGauge(k), g.V[k])
		}
		key := tsdbLabels(pod, "vllm:num_requests_waiting").String()
		assert.Less(t, walOnly[key], whole[key]/2, "%s: the cut loses most of the WAL's samples", pod)
		assert.GreaterOrEqual(t, withChunks[key], walOnly[key], pod)
		gained += withChunks[key] - walOnly[key]
		assert.Equal(t, f.nBlock+withChunks[key], g.Len(), "%s: the m-mapped chunks' samples are kept", pod)
	}
	// pod-b's gauge had its full chunk m-mapped when its stale marker cut
	// the next one.
	assert.Positive(t, gained, "chunks_head holds samples the WAL lost")
}

// A corrupt chunks_head/ file is read from the WAL instead, with a
// warning that names it: nothing is lost while the WAL is whole.
func TestReadTSDBCorruptHeadChunks(t *testing.T) {
	f := writeTSDBFixture(t, filepath.Join(t.TempDir(), "data"))
	_, file := fixtureHeadChunks(t, f)
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	b[40] ^= 0xff // inside the first chunk's data: its checksum fails
	require.NoError(t, os.WriteFile(file, b, 0o644))

	ev, err := Read(context.Background(), f.dir, snapshot.Options{})
	require.NoError(t, err)
	checkTSDBFixture(t, f, ev, 0, f.n)
	var warned bool
	for _, p := range ev.Problems {
		if p.File == file {
			warned = true
			assert.Equal(t, snapshot.SeverityWarning, p.Severity)
			assert.Contains(t, p.Error(), "corrupt head chunk file")
			assert.Contains(t, p.Error(), "checksum")
		}
	}
	assert.True(t, warned, "%v", ev.Problems)
}

func TestMergeMMChunks(t *testing.T) {
	c := func(minT, maxT int64) mmChunk { return mmChunk{minT: minT, maxT: maxT} }
	for _, tc := range []struct {
		name                    string
		existing, incoming, out []mmChunk
	}{
		{"none before", nil, []mmChunk{c(1, 2)}, []mmChunk{c(1, 2)}},
		{"none after", []mmChunk{c(1, 2)}, nil, []mmChunk{c(1, 2)}},
		{"interleaved", []mmChunk{c(1, 2), c(7, 8)}, []mmChunk{c(4, 5), c(10, 11)}, []mmChunk{c(1, 2), c(4, 5), c(7, 8), c(10, 11)}},
		{"overlap keeps the later record's", []mmChunk{c(1, 5)}, []mmChunk{c(4, 9)}, []mmChunk{c(4, 9)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.out, mergeMMChunks(tc.existing, tc.incoming))
		})
	}
}
