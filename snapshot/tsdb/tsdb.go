package tsdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/whyslow/whyslow/snapshot"
	"github.com/whyslow/whyslow/snapshot/internal/store"
)

// Errors of the TSDB reader, for errors.Is on a returned error or on a
// snapshot.Problem's Err.
var (
	// ErrNotTSDB: the directory holds no block, no wal/ and no chunks_head/.
	ErrNotTSDB = errors.New("not a Prometheus TSDB directory")
	// ErrBadBlock: a persisted block could not be read (missing or broken
	// meta.json, missing index, corrupt chunks).
	ErrBadBlock = errors.New("unreadable TSDB block")
	// ErrHeadNotRead: the head (wal/ and chunks_head/) could not be read, or
	// was read only up to a corruption.
	ErrHeadNotRead = errors.New("TSDB head not read")
	// ErrExponentialHistogram: native histograms with exponential buckets
	// have no classic (le) form; their samples are dropped. It is
	// snapshot.ErrExponentialHistogram.
	ErrExponentialHistogram = snapshot.ErrExponentialHistogram
)

// Directory names inside a TSDB data directory that are not blocks.
const (
	tsdbWALDir         = "wal"
	tsdbWBLDir         = "wbl"
	tsdbChunksHeadDir  = "chunks_head"
	tsdbMetaFile       = "meta.json"
	tsdbIndexFile      = "index"
	tsdbChunksDir      = "chunks"
	tsdbTombstonesFile = "tombstones"
)

func init() {
	snapshot.RegisterSource(snapshot.Source{Name: "tsdb", Match: snapshot.IsTSDB, Read: Read, ReadEach: ReadEach})
}

// Read reads a Prometheus TSDB data directory, or a snapshot directory
// written by /api/v1/admin/tsdb/snapshot, into snapshot.Evidence, without altering
// it.
//
// Persisted blocks are opened in place, read-only (memory-mapped, no lock
// taken). The head is replayed from wal/ into memory (at most
// opts.Limits.MaxWALBytes of it), reading its files only; a torn WAL
// tail, as a crash leaves it, ends the replay where Prometheus would cut
// it on restart. Nothing is copied or written: the evidence may be on a
// read-only mount and locked by a Prometheus that is still running.
//
// Only samples in [opts.Start, opts.End] (zero: unbounded) of series
// matching opts.Matchers are read; when opts.Metrics is non-empty, only the
// series of those families are selected from the index, so the cost grows
// with what is asked for, not with the size of the TSDB. A block's series
// are decoded chunk by chunk, without a querier's iterators; a querier
// reads the head, and a block's series where it does more than decode
// (tombstones, overlapping or non-float chunks, a read error), so the
// evidence and its problems are those a block querier would give.
//
// TSDB stores no metric type, so families are classified by name and
// labels (snapshot.Family.TypeInferred): a "_bucket" series with an "le" label is a
// part of a classic histogram, assembled with its "_sum" and "_count" per
// timestamp; a series with a "quantile" label makes a summary; a name
// ending in "_total" a counter; anything else is of unknown type. Native
// histograms with custom buckets (NHCB) become classic snapshot.HistogramSeries;
// native histograms with exponential buckets are dropped with a snapshot.Problem
// (ErrExponentialHistogram). Stale markers are not data and are dropped.
//
// A series belongs to the target named by its "pod" label, else its
// "instance" label, else its "job" label (opts.TargetName may override).
// Each target has one snapshot.Scrape per distinct sample timestamp among its series.
//
// A block, or the head, whose samples lie far from the rest (a block
// dated 2099 beside a day of 2026) is set apart whole, as scrapes far
// from the rest are: a warning wrapping snapshot.ErrTimeOutlier names it
// and its time range, and it is not read unless opts.KeepTimeOutliers
// (see blockOutliers, headOutlier).
//
// A bad block (missing index, broken meta.json, corrupt chunks, a file
// that is not a regular file: a named pipe is never opened, a symbolic
// link followed only with opts.FollowLinks) or a head that cannot be
// replayed is a snapshot.Problem of snapshot.SeverityError naming the
// file, the offset where known, and the reason, and the rest is still
// read: check snapshot.Evidence.Partial. Read
// returns an error only when dir is not a TSDB directory, when nothing at
// all could be read, when the samples kept would exceed
// opts.Limits.MaxMemory (an error wrapping a *snapshot.LimitError), or
// when ctx is done.
func Read(ctx context.Context, dir string, opts snapshot.Options) (ev *snapshot.Evidence, err error) {
	lim, mint, maxt, layout, matchers, err := prepareRead(dir, &opts)
	if err != nil {
		return nil, err
	}

	acc := store.NewColumns(dir, opts)
	var problems []snapshot.Problem
	read := 0 // sources read, at least in part

	blocks, bprobs := openTSDBBlocks(layout, mint, maxt, opts)
	problems = append(problems, bprobs...)
	defer func() { err = errors.Join(err, closeBlocks(blocks)) }()
	maxBlockTime := blocksMaxTime(blocks)
	units := len(blocks)
	if layout.hasHead() {
		units++
	}
	progress := func(what string, done int) {
		if opts.Progress != nil {
			opts.Progress(snapshot.Progress{Path: dir, What: what, Done: done, Total: units})
		}
	}
	// later is the time the blocks read and those after it span in the
	// range, for sizing each series' columns once: a series is not grown
	// again for the few samples a later block adds.
	var later float64
	for _, b := range blocks {
		if b.inRange {
			later += b.spanIn(mint, maxt)
		}
	}
	for i, b := range blocks {
		progress("tsdb block", i)
		if b.inRange {
			here := b.spanIn(mint, maxt)
			ahead := later / here
			later -= here
			if err := readSource(ctx, acc, b.dir, &b.block.blockReaders, b.files, mint, maxt, matchers, ahead); err != nil {
				return nil, readErr(dir, err)
			}
			read++
		}
	}

	// The head holds only samples at or after the end of the last block
	// (Prometheus's own rule for a read-only replay), so a range that ends
	// before skips the WAL altogether.
	if layout.hasHead() && maxt >= maxBlockTime {
		progress("tsdb head", len(blocks))
	}
	h, hprobs := openHeadFor(layout, opts, lim, blocks, mint, maxt)
	problems = append(problems, hprobs...)
	if h != nil {
		if err := readSource(ctx, acc, filepath.Join(dir, tsdbWALDir), &h.blockReaders, nil, mint, maxt, matchers, 1); err != nil {
			return nil, readErr(dir, err)
		}
		read++
	}

	progress("tsdb", units)
	ev = acc.Evidence()
	ev.Problems = append(problems, ev.Problems...)
	if read == 0 && ev.Partial() {
		return nil, nothingRead(dir, ev.Problems)
	}
	return ev, nil
}

// readRange returns the time range of opts in ms, both ends included
// (unbounded: the ends of int64).
func readRange(dir string, opts snapshot.Options) (mint, maxt int64, err error) {
	mint, maxt = int64(math.MinInt64), int64(math.MaxInt64)
	if !opts.Start.IsZero() {
		mint = opts.Start.UnixMilli()
	}
	if !opts.End.IsZero() {
		maxt = opts.End.UnixMilli()
	}
	if mint > maxt {
		return 0, 0, fmt.Errorf("snapshot: tsdb %s: start %s is after end %s", dir, opts.Start, opts.End)
	}
	return mint, maxt, nil
}

// readErr wraps an error of readSource: a context error as is, the
// memory budget's with the directory.
// prepareRead is the start of Read and ReadEach: the limits (and a
// memory budget in opts when it has none), the time range in ms, the
// directory's layout and the selection's matchers.
func prepareRead(dir string, opts *snapshot.Options) (lim snapshot.Limits, mint, maxt int64, layout *tsdbLayout, matchers []*labels.Matcher, err error) {
	lim = opts.Limits.WithDefaults()
	if opts.Memory == nil {
		opts.Memory = snapshot.NewMemoryBudget(lim.MaxMemory)
	}
	if mint, maxt, err = readRange(dir, *opts); err != nil {
		return lim, 0, 0, nil, nil, err
	}
	if layout, err = scanTSDBDir(dir); err != nil {
		return lim, 0, 0, nil, nil, err
	}
	if matchers, err = tsdbMatchers(*opts); err != nil {
		return lim, 0, 0, nil, nil, fmt.Errorf("snapshot: tsdb %s: %w", dir, err)
	}
	return lim, mint, maxt, layout, matchers, nil
}

// closeBlocks closes the blocks opened by openTSDBBlocks.
func closeBlocks(blocks []tsdbBlock) (err error) {
	for _, b := range blocks {
		if b.block != nil {
			err = errors.Join(err, b.block.Close(), b.files.close())
		}
	}
	return err
}

// openHeadFor replays the head from wal/ (openTSDBHead) when
// the range read, [mint, maxt], reaches the end of the last of blocks
// (those kept, see openTSDBBlocks): the head holds only samples at or
// after it (Prometheus's own rule for a read-only replay), so a range
// that ends before skips the WAL. It returns the head, nil when not
// needed, not readable or a time outlier (headOutlier; kept with
// Options.KeepTimeOutliers), and the problems of the replay and of the
// out-of-order samples in wbl/, which are never read.
func openHeadFor(layout *tsdbLayout, opts snapshot.Options, lim snapshot.Limits, blocks []tsdbBlock, mint, maxt int64) (*memHead, []snapshot.Problem) {
	var problems []snapshot.Problem
	var head *memHead
	maxBlockTime := blocksMaxTime(blocks)
	if layout.hasHead() && maxt >= maxBlockTime {
		h, hprobs, herr := openTSDBHead(layout, lim.MaxWALBytes, maxBlockTime)
		problems = append(problems, hprobs...)
		if herr != nil {
			problems = append(problems, snapshot.Problem{
				Severity: snapshot.SeverityError, File: layout.walOrChunksHead(), Offset: -1,
				Err: fmt.Errorf("%w: only persisted blocks were read: %w", ErrHeadNotRead, herr),
			})
		} else {
			head = h
		}
	}
	if head != nil {
		if p, ok := headOutlier(head, blocks, mint, maxt, filepath.Join(layout.dir, tsdbWALDir), opts.KeepTimeOutliers); ok {
			problems = append(problems, p)
			if !opts.KeepTimeOutliers {
				head = nil
			}
		}
	}
	if layout.hasWBL {
		problems = append(problems, snapshot.Problem{Severity: snapshot.SeverityWarning, File: filepath.Join(layout.dir, tsdbWBLDir), Offset: -1,
			Err: errors.New("out-of-order samples in wbl/ are not read")})
	}
	return head, problems
}

// blocksMaxTime is the latest MaxTime of the blocks (math.MinInt64 for
// none): where the head's samples begin to be read.
func blocksMaxTime(blocks []tsdbBlock) int64 {
	t := int64(math.MinInt64)
	for _, b := range blocks {
		t = max(t, b.maxT)
	}
	return t
}

func readErr(dir string, err error) error {
	if errors.Is(err, snapshot.ErrLimit) {
		return fmt.Errorf("snapshot: tsdb %s: %w", dir, err)
	}
	return err
}

// tsdbLayout is what a TSDB directory holds, from its directory entries.
type tsdbLayout struct {
	dir           string
	blockDirs     []string // candidate block directories, by name
	skipped       []string // incomplete blocks (*.tmp-for-*)
	hasWAL        bool
	hasChunksHead bool
	hasWBL        bool
}

func (l *tsdbLayout) hasHead() bool { return l.hasWAL || l.hasChunksHead }

func (l *tsdbLayout) walOrChunksHead() string {
	if l.hasWAL {
		return filepath.Join(l.dir, tsdbWALDir)
	}
	return filepath.Join(l.dir, tsdbChunksHeadDir)
}

// scanTSDBDir lists dir and classifies its entries. A subdirectory is a
// block candidate when its name is a ULID or it holds a meta.json.
func scanTSDBDir(dir string) (*tsdbLayout, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("snapshot: tsdb: %w", err)
	}
	l := &tsdbLayout{dir: dir}
	for _, e := range ents {
		name := e.Name()
		if !e.IsDir() {
			continue
		}
		switch {
		case name == tsdbWALDir:
			l.hasWAL = true
		case name == tsdbChunksHeadDir:
			l.hasChunksHead = true
		case name == tsdbWBLDir:
			l.hasWBL = nonEmptyDir(filepath.Join(dir, name))
		case strings.Contains(name, ".tmp-for-"):
			l.skipped = append(l.skipped, name)
		case isULID(name):
			l.blockDirs = append(l.blockDirs, name)
		default:
			if _, err := os.Stat(filepath.Join(dir, name, tsdbMetaFile)); err == nil {
				l.blockDirs = append(l.blockDirs, name)
			}
		}
	}
	if len(l.blockDirs) == 0 && !l.hasHead() {
		return nil, fmt.Errorf("snapshot: tsdb %s: %w: no block directories (ULID/meta.json), no wal/, no chunks_head/", dir, ErrNotTSDB)
	}
	return l, nil
}

func nonEmptyDir(dir string) bool {
	ents, err := os.ReadDir(dir)
	return err == nil && len(ents) > 0
}

// isULID reports whether s is spelled like a ULID (26 characters of
// Crockford's base32), the name Prometheus gives block directories.
func isULID(s string) bool {
	if len(s) != 26 {
		return false
	}
	for _, c := range strings.ToUpper(s) {
		if !strings.ContainsRune("0123456789ABCDEFGHJKMNPQRSTVWXYZ", c) {
			return false
		}
	}
	return true
}

// tsdbBlock is a persisted block, opened when it overlaps the range read.
type tsdbBlock struct {
	dir     string
	block   *diskBlock  // nil when not in range
	files   *blockFiles // its files, read without the block's maps; nil when not in range
	inRange bool        // overlaps the requested time range
	// minT and maxT are the block's time range by its meta (maxT
	// exclusive).
	minT, maxT int64
	// samples and series count the block's, by its meta.
	samples, series uint64
}

// spanIn is the time, in milliseconds, that b spans within [mint, maxt]
// (at least 1).
func (b tsdbBlock) spanIn(mint, maxt int64) float64 {
	from, to := max(mint, b.minT), min(maxt, b.maxT-1)
	return float64(max(to-from, 0)) + 1
}

// openTSDBBlocks lists every block candidate of l and opens those that
// overlap [mint, maxt]: a question about the last half hour of a week does
// not open the week's index files. Broken blocks (a bad meta, a missing
// index or chunks directory, a file that is not a regular file, and for
// those opened an index that does not open) become Problems; blocks
// superseded by a compacted block that is present too are skipped, as
// Prometheus does; time outliers (blockOutliers) are named and, unless
// opts.KeepTimeOutliers, left out. A symbolic link among a block's files
// is followed only with opts.FollowLinks.
func openTSDBBlocks(l *tsdbLayout, mint, maxt int64, opts snapshot.Options) (blocks []tsdbBlock, problems []snapshot.Problem) {
	for _, name := range l.skipped {
		problems = append(problems, snapshot.Problem{Severity: snapshot.SeverityWarning, File: filepath.Join(l.dir, name), Offset: -1,
			Err: errors.New("incomplete block (left by an interrupted compaction or deletion) skipped")})
	}
	var cands []blockCand
	parents := map[string]bool{}
	for _, name := range l.blockDirs {
		bdir := filepath.Join(l.dir, name)
		meta, p := readBlockMeta(bdir, opts.FollowLinks)
		if p != nil {
			problems = append(problems, *p)
			continue
		}
		cands = append(cands, blockCand{bdir, meta})
		for _, par := range meta.Compaction.Parents {
			parents[par.ULID.String()] = true
		}
	}
	cands = slices.DeleteFunc(cands, func(c blockCand) bool {
		return parents[c.meta.ULID.String()] // its data are in the compacted block
	})
	cands = slices.DeleteFunc(cands, func(c blockCand) bool {
		p := checkBlockFiles(c.dir, opts.FollowLinks)
		if p != nil {
			problems = append(problems, *p)
		}
		return p != nil
	})
	// Outliers within the range are named; those of the whole TSDB that
	// the range does not meet are not read anyway, but must not move the
	// end of the blocks, where the head is read from.
	outliers := blockOutliers(cands, mint, maxt, opts.KeepTimeOutliers)
	far := blockOutliers(cands, math.MinInt64, math.MaxInt64, opts.KeepTimeOutliers)
	for i, c := range cands {
		// MaxTime is exclusive.
		tb := tsdbBlock{dir: c.dir, inRange: c.meta.MinTime <= maxt && c.meta.MaxTime > mint, minT: c.meta.MinTime, maxT: c.meta.MaxTime,
			samples: c.meta.Stats.NumSamples, series: c.meta.Stats.NumSeries}
		if p, ok := outliers[i]; ok {
			problems = append(problems, p)
			if !opts.KeepTimeOutliers {
				continue
			}
		}
		if _, ok := far[i]; ok && !tb.inRange && !opts.KeepTimeOutliers {
			continue
		}
		if tb.inRange {
			b, p := openBlock(c.dir, c.meta)
			if p != nil {
				problems = append(problems, *p)
				continue
			}
			tb.block, tb.files = b, newBlockFiles(c.dir)
			tb.files.follow = opts.FollowLinks
		}
		blocks = append(blocks, tb)
	}
	sort.Slice(blocks, func(i, j int) bool { return blocks[i].minT < blocks[j].minT })
	return blocks, problems
}

// readBlockMeta reads and checks a block's meta.json, so that a broken one
// is reported with its path and reason before the block is opened.
func readBlockMeta(bdir string, follow bool) (blockMeta, *snapshot.Problem) {
	fn := filepath.Join(bdir, tsdbMetaFile)
	var meta blockMeta
	if p := checkFile(fn, false, false, follow); p != nil {
		return meta, p
	}
	b, err := readRegular(fn, follow)
	if err != nil {
		p := blockProblem(fn, err)
		return meta, &p
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		var se *json.SyntaxError
		p := blockProblem(fn, err)
		if errors.As(err, &se) {
			p.Offset = se.Offset
		}
		return meta, &p
	}
	switch {
	case meta.Version != 1:
		err = fmt.Errorf("unsupported block version %d", meta.Version)
	case meta.MinTime >= meta.MaxTime:
		err = fmt.Errorf("empty time range [%d, %d)", meta.MinTime, meta.MaxTime)
	}
	if err != nil {
		p := blockProblem(fn, err)
		return meta, &p
	}
	return meta, nil
}

func blockProblem(file string, err error) snapshot.Problem {
	if errors.Is(err, fs.ErrNotExist) {
		err = fmt.Errorf("%w: %s missing", ErrBadBlock, filepath.Base(file))
	} else {
		err = fmt.Errorf("%w: %w", ErrBadBlock, err)
	}
	return snapshot.Problem{Severity: snapshot.SeverityError, File: file, Offset: -1, Err: err}
}

// tsdbMatchers returns the matchers of a Select: opts.Matchers, plus a
// __name__ matcher for opts.Metrics (each name, and the _bucket, _sum and
// _count series of a histogram or summary of that name).
func tsdbMatchers(opts snapshot.Options) ([]*labels.Matcher, error) {
	ms := slices.Clone(opts.Matchers)
	if len(opts.Metrics) > 0 {
		var alts []string
		for _, name := range opts.MetricSampleNames() {
			alts = append(alts, regexp.QuoteMeta(name))
		}
		m, err := labels.NewMatcher(labels.MatchRegexp, model.MetricNameLabel, strings.Join(alts, "|"))
		if err != nil {
			return nil, fmt.Errorf("matcher for snapshot.Options.Metrics: %w", err)
		}
		ms = append(ms, m)
	}
	if len(ms) == 0 {
		ms = append(ms, labels.MustNewMatcher(labels.MatchRegexp, model.MetricNameLabel, ".+"))
	}
	return ms, nil
}

func tsdbLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
