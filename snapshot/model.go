package snapshot

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/whyslow/whyslow/histogram"
)

// Evidence is everything read from one or more input paths: the targets
// (replicas) with their timelines, and the problems met on the way.
//
// Evidence is a plain value built once by a reader; its slices are sorted
// (targets by name, samples by time) and callers must not modify them:
// series read together from a TSDB or a server may share one slice of
// times (see Column.AppendFloats).
type Evidence struct {
	// Targets are sorted by Name.
	Targets []*Target
	// Sources lists every file or directory that contributed data, in the
	// order read.
	Sources []string
	// Problems are the non-fatal problems met while reading: a bad file
	// among many, an invalid histogram family, a dropped duplicate. A
	// reader that returns Evidence together with a nil error may still
	// have Problems; see Partial.
	Problems []Problem
}

// Partial reports whether some input was lost: a problem of severity
// SeverityError dropped a file, a family or samples.
func (e *Evidence) Partial() bool {
	for _, p := range e.Problems {
		if p.Severity == SeverityError {
			return true
		}
	}
	return false
}

// ProblemsOf returns the problems that wrap kind (errors.Is: a sentinel
// such as ErrLimit, or a reader's own), in order.
func (e *Evidence) ProblemsOf(kind error) []Problem {
	var out []Problem
	for _, p := range e.Problems {
		if errors.Is(p, kind) {
			out = append(out, p)
		}
	}
	return out
}

// Target returns the target with the given name, or nil.
func (e *Evidence) Target(name string) *Target {
	i := sort.Search(len(e.Targets), func(i int) bool { return e.Targets[i].Name >= name })
	if i < len(e.Targets) && e.Targets[i].Name == name {
		return e.Targets[i]
	}
	return nil
}

// Span returns the earliest and latest scrape time over all targets.
// Both are zero when there is no scrape.
func (e *Evidence) Span() (first, last time.Time) {
	for _, t := range e.Targets {
		if len(t.Scrapes) == 0 {
			continue
		}
		f, l := t.Scrapes[0].Time, t.Scrapes[len(t.Scrapes)-1].Time
		if first.IsZero() || f.Before(first) {
			first = f
		}
		if last.IsZero() || l.After(last) {
			last = l
		}
	}
	return first, last
}

// Target is one scraped replica (a vLLM pod, with the series of any
// exporter that belongs to it, such as the GPU exporter's) and its
// timeline.
type Target struct {
	// Name identifies the replica: the pod label, else the instance label,
	// else the path it was read from, else a name given by the caller.
	Name string
	// NameFrom says where Name came from: "pod", "instance", "path",
	// "override" or "tsdb".
	NameFrom string
	// Scrapes are the instants at which this target was observed,
	// ascending and distinct. Several files with the same time (vLLM's
	// dump and the GPU exporter's) are one Scrape.
	Scrapes []Scrape
	// Families maps a family's lookup name (see Family.Name) to the family.
	Families map[string]*Family
}

// Family returns the family with the given lookup name, or nil.
func (t *Target) Family(name string) *Family {
	if t == nil {
		return nil
	}
	return t.Families[name]
}

// FamilyNames returns the lookup names of the target's families, sorted.
func (t *Target) FamilyNames() []string {
	names := make([]string, 0, len(t.Families))
	for n := range t.Families {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// WithoutSamples returns a copy of t with its scrapes and, in each family,
// its series' labels (and histogram bucket layouts) but none of their
// samples: what tells where evidence lies and what it holds, for a
// fraction of its memory.
func (t *Target) WithoutSamples() *Target {
	out := &Target{Name: t.Name, NameFrom: t.NameFrom, Scrapes: t.Scrapes, Families: make(map[string]*Family, len(t.Families))}
	for name, f := range t.Families {
		out.Families[name] = f.WithoutSamples()
	}
	return out
}

// WithoutSamples returns a copy of f with its series' labels (and
// histogram bucket layouts) but none of their samples.
func (f *Family) WithoutSamples() *Family {
	g := *f
	g.Series = make([]*Series, len(f.Series))
	for i, s := range f.Series {
		g.Series[i] = &Series{Name: s.Name, Labels: s.Labels}
	}
	g.Histograms = make([]*HistogramSeries, len(f.Histograms))
	for i, h := range f.Histograms {
		g.Histograms[i] = &HistogramSeries{Labels: h.Labels, Bounds: h.Bounds}
	}
	return &g
}

// NameFromRank orders the sources of target names (Target.NameFrom), most
// specific first: "override", "pod", "instance", "tsdb", then the others.
// A target whose series name it from several sources takes the most
// specific one's.
func NameFromRank(from string) int {
	switch from {
	case "override":
		return 0
	case "pod":
		return 1
	case "instance":
		return 2
	case "tsdb":
		return 3
	}
	return 4
}

// Scrape is one instant at which a target was observed.
type Scrape struct {
	// Time of the scrape.
	Time time.Time
	// TimeFrom says how Time was established; see TimeSource.
	TimeFrom TimeSource
	// Files are the files this scrape was read from (empty for TSDB).
	Files []string
}

// TimeSource says how the time of a scrape was established, strongest
// first.
type TimeSource int

const (
	// TimeFromTSDB: the sample timestamps stored in a TSDB.
	TimeFromTSDB TimeSource = iota
	// TimeFromSamples: explicit timestamps on the samples of a dump
	// (federate dumps, OpenMetrics with timestamps).
	TimeFromSamples
	// TimeFromFileName: a timestamp in the file name (RFC 3339 and
	// variants, or Unix seconds).
	TimeFromFileName
	// TimeFromModTime: the file's modification time, a weak source:
	// copying a file changes it.
	TimeFromModTime
	// TimeFromReadTime: the time a dump read live from a stream (standard
	// input that is a pipe, a FIFO given as a path) was read, when its
	// samples carry no time: the scrape was taken as it was read
	// (whyslow diagnose <(curl -s pod:8000/metrics)). Reported once with
	// an ErrNoTime note of SeverityInfo.
	TimeFromReadTime
	// TimeUnknown: no source at all (a dump parsed from memory with a
	// name that holds no time and no mtime): the scrape is placed at the
	// Unix epoch, which only orders it; its values are lifetime values.
	TimeUnknown
)

// String returns a short description such as "file name".
func (s TimeSource) String() string {
	switch s {
	case TimeFromTSDB:
		return "tsdb"
	case TimeFromSamples:
		return "sample timestamps"
	case TimeFromFileName:
		return "file name"
	case TimeFromModTime:
		return "file mtime"
	case TimeFromReadTime:
		return "read time"
	case TimeUnknown:
		return "unknown"
	}
	return fmt.Sprintf("TimeSource(%d)", int(s))
}

// Family is a metric family of one target.
//
// Name is the lookup name, independent of the exposition format:
//   - counters: the sample name with its _total suffix
//     ("vllm:num_preemptions_total"), whether the TYPE line said
//     "vllm:num_preemptions" (OpenMetrics) or "vllm:num_preemptions_total"
//     (text 0.0.4);
//   - histograms: the base name without _bucket/_sum/_count
//     ("vllm:time_to_first_token_seconds");
//   - gauges, untyped, info and stateset: the sample name;
//   - summaries: the base name; their _sum, _count and quantile samples
//     are float Series whose Name carries the suffix.
//
// OpenMetrics _created samples are not data and are dropped (the start
// timestamp is kept on the series); text 0.0.4 "X_created" gauge families,
// as prometheus_client writes them, are ordinary gauge families.
type Family struct {
	Name string
	// Type is the declared type, or the type inferred from the name and
	// labels when none was declared (federate dumps, TSDB): "_bucket" with
	// "le" is a histogram part, "_total" a counter, else unknown.
	Type model.MetricType
	// TypeInferred is true when Type was inferred, not declared.
	TypeInferred bool
	Help         string
	Unit         string
	// Series holds float series: counters, gauges, untyped, info, and the
	// parts of summaries. Sorted by Name then labels.
	Series []*Series
	// Histograms holds classic histograms assembled from _bucket, _sum and
	// _count, and native histograms with custom buckets (NHCB) converted
	// to the classic form. Sorted by labels then first timestamp.
	Histograms []*HistogramSeries
}

// Series is one float time series: labels stored once, samples columnar.
type Series struct {
	// Name is the sample name ("vllm:num_requests_waiting",
	// "vllm:request_success_total", "http_request_size_bytes_sum").
	Name string
	// Labels are the series' labels without __name__.
	Labels labels.Labels
	// T holds sample times in milliseconds since the Unix epoch,
	// ascending and distinct.
	T []int64
	// V holds the sample values; len(V) == len(T). Dumps never yield NaN
	// or ±Inf in a counter, gauge or untyped sample, nor a negative
	// counter: such samples are left out with an ErrBadValue warning.
	// Summary quantiles may be NaN, and a TSDB may hold what it stored.
	V []float64
	// StartT holds the OpenMetrics start (_created) timestamp in ms per
	// sample, or nil when the source carries none.
	StartT []int64
}

// Len returns the number of samples.
func (s *Series) Len() int { return len(s.T) }

// HistogramSeries is one classic histogram over time. All its samples share
// one bucket layout (Bounds); when the layout changes (a replica upgraded to
// a vLLM version with other buckets), the family holds a further
// HistogramSeries with the same Labels and the new Bounds, later in time.
type HistogramSeries struct {
	// Labels are the series' labels without __name__ and le.
	Labels labels.Labels
	// Bounds are the upper bounds in ascending order (readers sort the
	// buckets by le, as PromQL does: /federate output orders them by label
	// text); they may lack +Inf in a broken capture, which
	// histogram.Histogram.Validate reports.
	Bounds []float64
	// T holds sample times in ms since the Unix epoch, ascending, distinct.
	T []int64
	// Counts holds the cumulative bucket counts of every sample, row-major:
	// sample i is Counts[i*len(Bounds) : (i+1)*len(Bounds)].
	Counts []float64
	// Sum and Count hold the _sum and _count samples (NaN where missing).
	Sum   []float64
	Count []float64
}

// Len returns the number of samples.
func (s *HistogramSeries) Len() int { return len(s.T) }

// At returns sample i as a histogram.Histogram that shares memory with s:
// do not modify it.
func (s *HistogramSeries) At(i int) histogram.Histogram {
	n := len(s.Bounds)
	return histogram.Histogram{
		Bounds: s.Bounds,
		Counts: s.Counts[i*n : (i+1)*n : (i+1)*n],
		Count:  s.Count[i],
		Sum:    s.Sum[i],
	}
}

// Severity grades a Problem.
type Severity int

const (
	// SeverityWarning: the data were read, but something is odd (a time
	// from a file's mtime, a capture that is not vLLM, a duplicate dropped).
	SeverityWarning Severity = iota
	// SeverityError: some data were lost (an unreadable file, an invalid
	// histogram family, a truncated dump).
	SeverityError
	// SeverityInfo: nothing is wrong; the reader says how it read
	// something the input left open (a dump from a pipe timed when it was
	// read).
	SeverityInfo
)

// String returns "warning", "error" or "info".
func (s Severity) String() string {
	switch s {
	case SeverityError:
		return "error"
	case SeverityInfo:
		return "info"
	}
	return "warning"
}

// MarshalText returns the severity's name (String): JSON holds
// "warning", "error" or "info".
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a name String returns.
func (s *Severity) UnmarshalText(b []byte) error {
	for _, v := range []Severity{SeverityWarning, SeverityError, SeverityInfo} {
		if string(b) == v.String() {
			*s = v
			return nil
		}
	}
	return fmt.Errorf("snapshot: severity %q is not warning, error or info", b)
}

// Problem is a non-fatal problem met while reading evidence. It names the
// place as precisely as the source allows.
type Problem struct {
	Severity Severity
	// File is the path of the file or directory concerned.
	File string
	// Line is the 1-based line number in the (decompressed) file, or 0.
	Line int
	// Offset is the byte offset in the (decompressed) file, or -1 when
	// unknown.
	Offset int64
	// Family is the metric family concerned, if any.
	Family string
	// Err is the reason; it wraps one of the sentinel errors of this
	// package where one applies, for errors.Is.
	Err error
}

// Error formats the problem as "file:line: family: reason".
func (p Problem) Error() string {
	s := escapeName(p.File)
	if p.Line > 0 {
		s += fmt.Sprintf(":%d", p.Line)
	} else if p.Offset >= 0 && p.File != "" {
		s += fmt.Sprintf(" (offset %d)", p.Offset)
	}
	if p.Family != "" {
		if s != "" {
			s += ": "
		}
		s += p.Family
	}
	if s != "" {
		s += ": "
	}
	return s + p.Err.Error()
}

// Unwrap returns the reason.
func (p Problem) Unwrap() error { return p.Err }

// String is Error prefixed with the severity.
func (p Problem) String() string { return p.Severity.String() + ": " + p.Error() }

// Window is a closed time range [Start, End]. The zero Window means "each
// target's first to last scrape".
type Window struct {
	Start, End time.Time
}

// IsZero reports whether w is the zero Window.
func (w Window) IsZero() bool { return w.Start.IsZero() && w.End.IsZero() }

// Duration returns End - Start.
func (w Window) Duration() time.Duration { return w.End.Sub(w.Start) }

// String formats w as an RFC 3339 interval "START/END" in UTC, or "whole"
// for the zero Window.
func (w Window) String() string {
	if w.IsZero() {
		return "whole"
	}
	return w.Start.UTC().Format(time.RFC3339) + "/" + w.End.UTC().Format(time.RFC3339)
}

// LostRangeError is the reason of a Problem that lost samples in a known
// range of time, say the records after the tear of a TSDB's write-ahead
// log: samples from From on (to To; a zero To is open-ended, a zero From
// means from the start) may be missing. The Problem may be only a
// warning, because a tear after every window read loses nothing a
// caller needs; a caller that knows its windows asks Evidence.LostIn.
type LostRangeError struct {
	From, To time.Time
	// Err is what was lost and why.
	Err error
}

// Error returns Err's message and the range.
func (e *LostRangeError) Error() string {
	s := e.Err.Error() + "; samples "
	switch {
	case e.From.IsZero() && e.To.IsZero():
		s += "at any time"
	case e.To.IsZero():
		s += "from " + e.From.UTC().Format(time.RFC3339Nano) + " on"
	case e.From.IsZero():
		s += "up to " + e.To.UTC().Format(time.RFC3339Nano)
	default:
		s += "from " + e.From.UTC().Format(time.RFC3339Nano) + " to " + e.To.UTC().Format(time.RFC3339Nano)
	}
	return s + " may be missing"
}

// Unwrap returns Err.
func (e *LostRangeError) Unwrap() error { return e.Err }

// Overlaps reports whether the lost range meets [start, end] (a zero
// bound is open).
func (e *LostRangeError) Overlaps(start, end time.Time) bool {
	if !end.IsZero() && !e.From.IsZero() && end.Before(e.From) {
		return false
	}
	if !start.IsZero() && !e.To.IsZero() && start.After(e.To) {
		return false
	}
	return true
}

// LostIn returns the problems whose lost range (a *LostRangeError)
// overlaps [start, end]: evidence read for that window is partial even
// when Partial says it is not.
func (e *Evidence) LostIn(start, end time.Time) []Problem {
	var out []Problem
	for _, p := range e.Problems {
		var lr *LostRangeError
		if errors.As(p.Err, &lr) && lr.Overlaps(start, end) {
			out = append(out, p)
		}
	}
	return out
}
