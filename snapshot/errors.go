package snapshot

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/whyslow/whyslow/snapshot/internal/dumpdir"
)

// Sentinel errors. Problems and errors returned by this package wrap them
// (with the file, the line or offset and the details), so that callers can
// test for a kind of problem with errors.Is.
var (
	// ErrSyntax: the exposition does not parse; the Problem names the
	// line. Errors wrapping ErrSyntax also wrap a *SyntaxError.
	ErrSyntax = errors.New("syntax error")
	// ErrTruncated: the input stops early: a dump cut in the middle of a
	// line (the pod died during curl), an OpenMetrics dump without its
	// "# EOF" line, a gzip stream cut short.
	ErrTruncated = errors.New("truncated input")
	// ErrNotExposition: the input is not a metrics exposition at all: an
	// HTML error page saved as .prom, binary data.
	ErrNotExposition = errors.New("not a Prometheus exposition")
	// ErrLimit: a limit of Options.Limits was exceeded (bytes, series or
	// label size per scrape, or the total budget).
	ErrLimit = errors.New("limit exceeded")
	// ErrExponentialHistogram: native histograms with exponential buckets
	// (from a TSDB or a server) have no classic (le) form; their samples
	// are dropped.
	ErrExponentialHistogram = errors.New("native histogram with exponential buckets not supported")
	// ErrDuplicateSeries: a series appeared twice at the same timestamp;
	// the first sample is kept.
	ErrDuplicateSeries = errors.New("duplicate series")
	// ErrInvalidHistogram: a classic histogram assembled from _bucket,
	// _sum and _count is invalid (no +Inf bucket, bounds out of order,
	// counts that decrease, _count different from the +Inf bucket). The
	// Problem also wraps the histogram package's error.
	ErrInvalidHistogram = errors.New("invalid histogram")
	// ErrUnorderedBuckets is a warning: a declared histogram exposed its
	// buckets out of ascending order of le. They were sorted, as PromQL
	// sorts them.
	ErrUnorderedBuckets = errors.New("histogram buckets out of order")
	// ErrNoTime is a warning: no timestamp in the file name and none on
	// the samples; the time comes from the file's mtime, or, when there is
	// none either, the scrape is placed at the Unix epoch. For a dump read
	// live from a pipe or a FIFO it is an info note instead: the scrape is
	// timed when it was read (TimeFromReadTime).
	ErrNoTime = errors.New("no scrape time")
	// ErrEmpty: an input holds no data: an empty file, a dump with no
	// sample, a directory with no dump.
	ErrEmpty = errors.New("no data")
	// ErrTypeConflict is a warning: two inputs declare different types
	// for one family; the first type is kept.
	ErrTypeConflict = errors.New("conflicting metric types")
	// ErrNormalized is a warning: a dump had CRLF line endings or a UTF-8
	// byte order mark (a file saved on Windows); they were normalised
	// before parsing. Line numbers in problems are those of the file.
	ErrNormalized = errors.New("input normalised")
	// ErrBadValue is a warning: samples whose value is impossible for
	// their type (NaN or ±Inf in a counter or gauge, a negative counter,
	// a negative value of a series listed in Options.NonNegative) were
	// left out of the evidence, so that no statistic sees them. The
	// Problem names the file and line of the first.
	ErrBadValue = errors.New("impossible sample value")
	// ErrSkipped is a warning: an entry of a dump directory was not read
	// for the reason given (a link that leads out of the directory, a
	// loop of links, a named pipe, a device, a file already read through
	// another path).
	ErrSkipped = errors.New("not read")
	// ErrTimeOutlier is a warning: scrapes whose times lie far outside
	// the bulk of the evidence (a file named a year ahead, sample
	// timestamps in seconds instead of milliseconds), or a whole TSDB
	// block or head (a block dated 2099 beside a day of 2026), were left
	// out of the evidence; Options.KeepTimeOutliers keeps them.
	ErrTimeOutlier = errors.New("scrape time far outside the evidence")
	// ErrTimeConflict is a warning: the time in a file's name and the
	// timestamps of its samples disagree; the sample timestamps are used.
	ErrTimeConflict = errors.New("file name and sample times disagree")
	// ErrInconsistent: counters of a target decrease although the
	// process did not restart (process_start_time_seconds unchanged, or,
	// without it, only some counters drop): scrapes out of order, or two
	// processes mixed under one name. The decreasing samples were left out
	// instead of being read as counter resets.
	ErrInconsistent = errors.New("inconsistent evidence")
	// ErrChanged: a dump file changed between the listing of its folder
	// (or the stat of the path given) and its opening: it became a
	// symbolic link, a named pipe or another file. It was not read.
	ErrChanged = dumpdir.ErrChanged
	// ErrOneTarget: dumps whose names differ only by the time and an
	// ordinal token (t0/t1, before/after) were read as one target at
	// several times (an info: the same process_start_time_seconds, no
	// counter falling), or left apart (a warning saying why).
	ErrOneTarget = errors.New("scrapes of one target by name")
)

// SyntaxError is an error in an exposition, located by file and line
// (like golang.org/x/perf/benchfmt's SyntaxError). Line is 1-based;
// Offset is the byte offset of the start of that line in the
// decompressed input.
type SyntaxError struct {
	File   string
	Line   int
	Offset int64
	Msg    string
	// Err is the sentinel the error belongs to (ErrSyntax, ErrTruncated,
	// ErrNotExposition, ErrLimit), or nil.
	Err error
}

// Error formats the error as "file:line: msg".
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
}

// Unwrap returns the sentinel error.
func (e *SyntaxError) Unwrap() error { return e.Err }

// reason is the Err of a Problem built from a SyntaxError: its message is
// the bare reason (the Problem prints the file and line) while errors.As
// still finds the *SyntaxError.
type reason struct{ se *SyntaxError }

func (r reason) Error() string { return r.se.Msg }
func (r reason) Unwrap() error { return r.se }

// lineAt returns the 1-based line number holding byte off of data and the
// offset of that line's first byte. An off at or beyond the end is
// placed on the last line.
func lineAt(data []byte, off int64) (line int, start int64) {
	if off < 0 {
		off = 0
	}
	if off >= int64(len(data)) {
		off = int64(len(data))
		if off > 0 && data[off-1] == '\n' {
			off-- // the empty "line" after a final newline is not a line
		}
	}
	line = bytes.Count(data[:off], []byte{'\n'}) + 1
	start = int64(bytes.LastIndexByte(data[:off], '\n') + 1)
	return line, start
}

// offsetIn returns the offset of sub in data when sub is a subslice of
// data (textparse returns subslices of its input), else -1.
func offsetIn(data, sub []byte) int64 {
	if len(sub) == 0 || len(data) == 0 {
		return -1
	}
	d := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
	s := uintptr(unsafe.Pointer(unsafe.SliceData(sub)))
	if s < d || s >= d+uintptr(len(data)) {
		return -1
	}
	return int64(s - d)
}

// nextLine returns the offset of the first non-blank line after the line
// holding off (or of the first non-blank line when off < 0): where the
// parser stopped when the entry at off was the last good one.
func nextLine(data []byte, off int64) int64 {
	i := int64(0)
	if off >= 0 {
		nl := bytes.IndexByte(data[off:], '\n')
		if nl < 0 {
			return off // the last good entry is on the last line
		}
		i = off + int64(nl) + 1
	}
	for i < int64(len(data)) {
		j := i
		for j < int64(len(data)) && (data[j] == ' ' || data[j] == '\t' || data[j] == '\r') {
			j++
		}
		if j < int64(len(data)) && data[j] == '\n' {
			i = j + 1
			continue
		}
		break
	}
	return i
}

// LimitError is the reason of a Problem for an exceeded limit of
// Options.Limits. It wraps ErrLimit and names the limit, so that a caller
// can say what raises it (the command maps Limit to its flag, or says
// that no flag does).
type LimitError struct {
	// Limit is the limit's name: "Limits.MaxBytesPerScrape",
	// "Limits.MaxBytesPerFile", "Limits.MaxSeriesPerScrape",
	// "Limits.MaxLabelBytes", "Limits.MaxTotalBytes",
	// "Limits.MaxWALBytes" or "Limits.MaxMemory".
	Limit string
	// Max is the limit's value (bytes or samples).
	Max int64
	// Msg says what exceeded it and what was lost.
	Msg string
}

// Error returns "limit exceeded: " followed by Msg.
func (e *LimitError) Error() string { return ErrLimit.Error() + ": " + e.Msg }

// Unwrap returns ErrLimit.
func (e *LimitError) Unwrap() error { return ErrLimit }

func limitErr(limit string, max int64, msg string) error {
	return &LimitError{Limit: limit, Max: max, Msg: msg}
}

// NoTimeError is the reason of a Problem for a dump whose scrape time
// was taken from the file's mtime, or from the instant a dump read live
// was read. It wraps ErrNoTime and carries that time, so that a caller
// can say the times of many such files at once (the command gives their
// range).
type NoTimeError struct {
	// At is the time the scrape was placed at.
	At time.Time
	// Live is set for a dump read live (Builder's read time), unset for
	// a file's mtime.
	Live bool
}

// Error says where the time came from, with At in RFC 3339 (UTC).
func (e *NoTimeError) Error() string { return e.Reason(e.At.UTC().Format(time.RFC3339)) }

// Reason is Error with at in place of At (a range of times, "first –
// last").
func (e *NoTimeError) Reason(at string) string {
	if e.Live {
		return ErrNoTime.Error() + " on the samples: a dump read live, taken as scraped when it was read, at " + at
	}
	return ErrNoTime.Error() + ": no time in the file name or on the samples; using the file's mtime " + at
}

// Unwrap returns ErrNoTime.
func (e *NoTimeError) Unwrap() error { return ErrNoTime }

// maxExcerpt is the most bytes of an input line a message quotes.
const maxExcerpt = 80

// excerpt returns s quoted for a message: control characters and
// invalid UTF-8 escaped, at most maxExcerpt bytes of s, "..." marking a
// cut. Messages quote the offending line so that the reader can find it,
// never a whole line: a line may be 10 MB, or a secret.
func excerpt(s string) string {
	cut := false
	if len(s) > maxExcerpt {
		s, cut = s[:maxExcerpt], true
		for len(s) > 0 && !utf8.RuneStart(s[len(s)-1]) {
			s = s[:len(s)-1]
		}
		if len(s) > 0 {
			if r, _ := utf8.DecodeLastRuneInString(s); r == utf8.RuneError {
				s = s[:len(s)-1]
			}
		}
	}
	q := strconv.Quote(s)
	if cut {
		q = q[:len(q)-1] + `..."`
	}
	return q
}

// shortenQuotes rewrites every Go-quoted string in msg (textparse quotes
// the input it failed on, up to the whole line) as an excerpt.
func shortenQuotes(msg string) string {
	var sb strings.Builder
	for {
		i := strings.IndexByte(msg, '"')
		if i < 0 {
			sb.WriteString(msg)
			return sb.String()
		}
		sb.WriteString(msg[:i])
		q, err := strconv.QuotedPrefix(msg[i:])
		if err != nil {
			sb.WriteByte('"')
			msg = msg[i+1:]
			continue
		}
		u, _ := strconv.Unquote(q)
		sb.WriteString(excerpt(u))
		msg = msg[i+len(q):]
	}
}

// escapeName returns a file name as a message prints it: quoted when it
// holds control characters, which would break a line of output.
func escapeName(name string) string {
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return strconv.Quote(name)
		}
	}
	return name
}
