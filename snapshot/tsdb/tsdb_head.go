package tsdb

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/record"
	"github.com/prometheus/prometheus/tsdb/wlog"
	"github.com/prometheus/prometheus/util/compression"
	"github.com/whyslow/whyslow/snapshot"
)

// tsdbHead is a head replayed from a sandbox copy of wal/ and chunks_head/.
type tsdbHead struct {
	head    *tsdb.Head
	sandbox string
}

// Close closes the head and removes the sandbox.
func (h *tsdbHead) Close() error {
	return errors.Join(h.head.Close(), os.RemoveAll(h.sandbox))
}

// openTSDBHead copies l's wal/ and chunks_head/ (at most maxBytes in all)
// into a new sandbox under sandboxRoot and replays the copy, keeping the
// samples at or after minValidTime (the end of the last persisted block).
//
// Why a copy, when tsdb.OpenDBReadOnly exists: its replay hard-links
// chunks_head/ files into the sandbox, which fails across filesystems and
// changes the files' ctime, and it gives up on a torn WAL tail, the normal
// state of a WAL after a crash. Replaying a copy lets the repair that
// Prometheus itself does on restart happen in the copy.
//
// The returned Problems report a repaired WAL. On error the sandbox is
// already removed.
func openTSDBHead(l *tsdbLayout, sandboxRoot string, maxBytes, minValidTime int64) (_ *tsdbHead, problems []snapshot.Problem, err error) {
	if !l.hasWAL {
		// Without the WAL's series records, m-mapped head chunks belong to
		// no series.
		return nil, nil, fmt.Errorf("chunks_head/ without wal/ cannot be attributed to series")
	}
	sandbox, err := makeSandbox(l.dir, sandboxRoot)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, os.RemoveAll(sandbox))
		}
	}()

	var size int64
	for _, d := range []string{tsdbWALDir, tsdbChunksHeadDir} {
		n, err := treeSize(filepath.Join(l.dir, d))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, nil, err
		}
		size += n
	}
	if size > maxBytes {
		return nil, nil, fmt.Errorf("%w: wal/ and chunks_head/ hold %d bytes, more than snapshot.Limits.MaxWALBytes (%d)", snapshot.ErrLimit, size, maxBytes)
	}
	for _, d := range []string{tsdbWALDir, tsdbChunksHeadDir} {
		if err := copyTree(filepath.Join(l.dir, d), filepath.Join(sandbox, d)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("copying into sandbox: %w", err)
		}
	}

	walDir := filepath.Join(sandbox, tsdbWALDir)
	// A checkpoint records how far Prometheus truncated the WAL; never keep
	// samples from before it (they are in blocks, or deliberately dropped).
	if t, ok, err := wlog.ReadMinValidTime(walDir); err == nil && ok && t > minValidTime {
		minValidTime = t
	}
	h, initErr := replayHead(sandbox, minValidTime)
	if initErr == nil {
		return &tsdbHead{head: h, sandbox: sandbox}, nil, nil
	}
	var cerr *wlog.CorruptionErr
	if !errors.As(initErr, &cerr) || cerr.Segment < 0 {
		return nil, nil, fmt.Errorf("replaying WAL: %w", initErr)
	}

	// Repair the copy as Prometheus does on start: drop the corrupt record
	// and everything after it, then replay again.
	later := laterWALSegments(walDir, cerr.Segment)
	// Repair needs a writable WAL (wlog.Open gives a read-only one).
	w, err := wlog.New(tsdbLogger(), nil, walDir, compression.None)
	if err != nil {
		return nil, nil, fmt.Errorf("reopening WAL copy for repair: %w", err)
	}
	if err := w.Repair(initErr); err != nil {
		return nil, nil, errors.Join(fmt.Errorf("repairing WAL copy after %w", initErr), err, w.Close())
	}
	if err := w.Close(); err != nil {
		return nil, nil, fmt.Errorf("closing repaired WAL copy: %w", err)
	}
	lost := fmt.Errorf("%w beyond this offset: torn or corrupt WAL record (%v); the sandbox copy was cut there, as Prometheus does on restart",
		ErrHeadNotRead, cerr.Err)
	p := snapshot.Problem{
		Severity: snapshot.SeverityWarning,
		File:     wlog.SegmentName(filepath.Join(l.dir, tsdbWALDir), cerr.Segment),
		Offset:   cerr.Offset,
	}
	if later > 0 {
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
	problems = append(problems, p)
	h, err = replayHead(sandbox, minValidTime)
	if err != nil {
		return nil, problems, fmt.Errorf("replaying repaired WAL copy: %w", err)
	}
	return &tsdbHead{head: h, sandbox: sandbox}, problems, nil
}

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
		sr, err := wlog.OpenReadSegment(wlog.SegmentName(dir, s))
		if err != nil {
			continue
		}
		t, found := int64(0), false
		r := wlog.NewReader(sr)
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

// replayHead opens a head over the WAL and chunks_head in sandbox. The
// WAL is opened for reading only (wlog.Open), as tsdb.DBReadOnly does.
func replayHead(sandbox string, minValidTime int64) (*tsdb.Head, error) {
	w, err := wlog.Open(tsdbLogger(), filepath.Join(sandbox, tsdbWALDir))
	if err != nil {
		return nil, err
	}
	opts := tsdb.DefaultHeadOptions()
	opts.ChunkDirRoot = sandbox
	h, err := tsdb.NewHead(nil, tsdbLogger(), w, nil, opts, tsdb.NewHeadStats())
	if err != nil {
		return nil, errors.Join(err, w.Close())
	}
	if err := h.Init(minValidTime); err != nil {
		return nil, errors.Join(err, h.Close())
	}
	return h, nil
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

// makeSandbox creates a fresh directory under root (os.TempDir() when
// empty), refusing a root inside the evidence directory.
func makeSandbox(evidence, root string) (string, error) {
	if root == "" {
		root = os.TempDir()
	}
	if inside, err := isInside(root, evidence); err != nil {
		return "", fmt.Errorf("sandbox: %w", err)
	} else if inside {
		return "", fmt.Errorf("sandbox directory %s is inside the evidence %s", root, evidence)
	}
	dir, err := os.MkdirTemp(root, "whyslow-tsdb-")
	if err != nil {
		return "", fmt.Errorf("sandbox: %w", err)
	}
	return dir, nil
}

// isInside reports whether path is dir or below it, after resolving
// symbolic links.
func isInside(path, dir string) (bool, error) {
	p, err := realPath(path)
	if err != nil {
		return false, err
	}
	d, err := realPath(dir)
	if err != nil {
		return false, err
	}
	rel, err := filepath.Rel(d, p)
	if err != nil {
		return false, nil
	}
	return rel == "." || !(rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator))), nil
}

func realPath(p string) (string, error) {
	p, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(p)
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

// copyTree copies the directories and regular files under src to dst,
// opening src files read-only. Other file types are skipped.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o700)
		case d.Type().IsRegular():
			return copyFile(path, target)
		}
		return nil
	})
}

// copyFile copies the regular file src to a new file dst. src is opened
// as openRegular opens it: a named pipe or a symbolic link put in its
// place since the walk is refused, not waited on nor followed.
func copyFile(src, dst string) (err error) {
	in, _, err := openRegular(src, false)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, out.Close()) }()
	_, err = io.Copy(out, in)
	return err
}
