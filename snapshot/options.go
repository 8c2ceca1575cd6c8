package snapshot

import (
	"cmp"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

// Options control how evidence is read. The zero value is usable: it reads
// everything with DefaultLimits. Options is a struct so that it can grow
// without breaking callers.
type Options struct {
	// Format forces the exposition format of dump files: "" (detect from
	// content and name), "text" (Prometheus text 0.0.4) or "openmetrics"
	// (OpenMetrics 1.0).
	Format string
	// TargetName, when non-nil, overrides the name of the target a dump
	// file's samples belong to. It receives the file path and the name
	// whyslow would use (from the pod label, the instance label or the
	// path); its result is used as is. It may be called from several
	// goroutines at once (a TSDB's targets are read a few at a time).
	TargetName func(path, name string) string
	// Start and End limit TSDB reads (and dump samples) to [Start, End];
	// zero means unbounded.
	Start, End time.Time
	// Matchers keep only the series they match (like a PromQL selector);
	// nil keeps all. They see the labels as stored: a TSDB or a /federate
	// dump carries the target labels Prometheus added (pod, namespace,
	// job), a /metrics dump only the labels the server exposed, so a
	// matcher on pod drops every series of a plain dump.
	Matchers []*labels.Matcher
	// Metrics, when non-empty, keeps only families whose lookup name (see
	// Family.Name) or sample name is listed; readers skip the rest as early
	// as they can (on raw bytes, before labels are built).
	Metrics []string
	// LabelsOnly lists metrics (named as in Metrics) whose series a reader
	// may list with their labels and none of their samples, where it can
	// tell from its index that leaving the samples out changes nothing
	// else: ReadEach of a TSDB (its blocks and head; see tsdb.ReadEach).
	// A server's read (package promapi) cannot tell, and lists them
	// always: there a target's Scrapes are the times of the other
	// families' samples.
	// Their families then come with Series and Histograms that hold no
	// samples (as Family.WithoutSamples leaves them), and the rest of the
	// Evidence (the targets, their Scrapes, the other families, a
	// histogram's bucket layouts) is the one a full read gives. A series
	// whose chunks do not show that (its first and last times and its
	// sample count per chunk match the scrape times of its target's
	// decoded series, with its histogram's other series alike) is decoded
	// after all; Read and the other sources read every sample. What only
	// decoding finds is not reported for the series left undecoded (a
	// corrupt chunk, a negative gauge). For a caller that needs a family's
	// labels over a long range and its samples only elsewhere, such as a
	// survey that measures a few families and resolves the catalog on the
	// rest.
	LabelsOnly []string
	// ForTarget, when set, narrows Metrics and LabelsOnly target by
	// target (see TargetSelection). A reader that honours LabelsOnly
	// calls it once for each target, before the target's samples are
	// read, with a sketch of it: the families its series'
	// names and labels make, without samples. It may be called from
	// several goroutines at once. Read and the sources that do not
	// honour LabelsOnly never call it, and read every metric of Metrics.
	ForTarget func(sketch *Target) TargetSelection
	// Limits bound what one input may cost; the zero value means
	// DefaultLimits.
	Limits Limits
	// Stdin is what the path "-" reads; nil means os.Stdin.
	Stdin io.Reader
	// FollowLinks lets a dump directory's symbolic links lead out of it.
	// By default a link whose target lies outside the directory given as
	// a path is not followed (a Problem wrapping ErrSkipped names it): a
	// service that reads uploaded dump folders must not read its own
	// files into a report. Links to /proc, /sys and /dev, and anything
	// but regular files and directories, are never read inside a
	// directory.
	FollowLinks bool
	// KeepTimeOutliers keeps scrapes whose times lie far outside the bulk
	// of the evidence (see ErrTimeOutlier), and TSDB blocks (or a head)
	// that lie so, which are otherwise left out.
	KeepTimeOutliers bool
	// KeepCutFiles keeps the samples read from a file that a limit
	// stopped in the middle (see Limits.MaxSeriesPerScrape). By default
	// such a file contributes nothing but its Problem: a cut cardinality
	// bomb must not become the fleet's largest group.
	KeepCutFiles bool
	// NonNegative lists sample names whose values cannot be negative
	// although their type is gauge (queue lengths, running requests). A
	// negative sample of one is left out like a NaN (see ErrBadValue).
	// The reader knows no metric's meaning: the caller, which does (the
	// catalog), lists them.
	NonNegative []string
	// Memory counts the evidence kept against Limits.MaxMemory over a
	// whole Read; nil makes Read create one. Read passes it to every
	// Source, and a caller that reads in several calls may share one.
	Memory *MemoryBudget
	// Progress, when non-nil, is called as reading advances: after each
	// dump file of a directory, and before each TSDB block and the head
	// replay. It is called from the reading goroutine and must be cheap;
	// the command draws its progress bar from it.
	Progress func(Progress)
	// Revisit, when non-nil, lets ReadEach of a source that streams skip
	// the read of every target's scrape times that the check of time
	// outliers (ErrTimeOutlier) otherwise needs first when the history
	// spans more than 6 h. The targets are then visited as they are read
	// and the check is made at the end, on the scrape times of all; only
	// when it finds a scrape to leave out is Revisit called, and every
	// target is read (its scrape times first) and visited again, as
	// without Revisit. A caller that can start over, such as a survey that
	// keeps a few numbers a target, saves a read of the whole source where
	// no scrape is an outlier, the usual case. Read ignores it. An error
	// from Revisit stops ReadEach and is returned as is.
	Revisit func() error
}

// Progress reports how far a read has come within one input.
type Progress struct {
	// Path is the directory (or file) being read.
	Path string
	// What is being read: "dumps", "tsdb block" or "tsdb head"; with
	// ReadEach, "tsdb target" (Done and Total count targets).
	What string
	// Done of Total units (files or blocks) are read. The head replay
	// counts as one unit after the blocks.
	Done, Total int
}

// Limits bound the cost of reading untrusted evidence. A limit of 0 takes
// the default. Exceeding a limit is a Problem (or an error when nothing
// could be read), never a crash or a silent truncation.
type Limits struct {
	// MaxBytesPerScrape bounds the decompressed size of one dump file
	// (a gzip bomb stops here).
	MaxBytesPerScrape int64
	// MaxBytesPerFile bounds the decompressed size of a file that holds
	// many scrapes: a /federate dump or an OpenMetrics file whose samples
	// carry timestamps (known from its first 64 KiB). A file of one
	// scrape is bounded by MaxBytesPerScrape.
	MaxBytesPerFile int64
	// MaxSeriesPerScrape bounds the number of samples in one dump file
	// (a cardinality bomb stops here).
	MaxSeriesPerScrape int
	// MaxLabelBytes bounds the size of one label value, and of a whole
	// label set.
	MaxLabelBytes int
	// MaxTotalBytes bounds the decompressed bytes read over all inputs.
	MaxTotalBytes int64
	// MaxWALBytes bounds the bytes of a TSDB's head (its wal/ and
	// chunks_head/ together) that are read into memory.
	MaxWALBytes int64
	// MaxMemory bounds the estimated bytes of the evidence kept over one
	// Read, every input together: FloatSampleBytes per float sample,
	// HistRowBytes plus BucketBytes per bucket per histogram row, and the
	// label bytes of each series. Exceeding it stops the read with an
	// error wrapping a *LimitError (Limit "Limits.MaxMemory") that says
	// by how much: the run fails cleanly (the command exits 1) instead of
	// growing until the runtime's out-of-memory crash.
	MaxMemory int64
}

// DefaultLimits are at least 100x what a real vLLM dump needs (about
// 100 KB and 1,000 samples per scrape).
var DefaultLimits = Limits{
	MaxBytesPerScrape:  64 << 20,
	MaxBytesPerFile:    4 << 30,
	MaxSeriesPerScrape: 200_000,
	MaxLabelBytes:      64 << 10,
	MaxTotalBytes:      16 << 30,
	MaxWALBytes:        4 << 30,
	MaxMemory:          DefaultMaxMemory,
}

// MetricSampleNames expands Options.Metrics, family or sample names, to
// the sample names that may belong to their families (the name, and the
// base name with and without _bucket, _sum and _count), sorted and
// distinct: what a reader that selects series by name asks a TSDB or a
// server for.
func (o Options) MetricSampleNames() []string {
	var out []string
	for _, m := range o.Metrics {
		base := FamilyBaseName(m)
		out = append(out, m, base, base+"_bucket", base+"_sum", base+"_count")
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// FamilyBaseName returns the sample name without a _bucket, _sum or
// _count suffix (the name of the histogram or summary family it may belong
// to), or the name itself when it has none or is only that suffix.
func FamilyBaseName(name string) string {
	base := name
	for _, suf := range []string{"_bucket", "_sum", "_count"} {
		if b, ok := strings.CutSuffix(name, suf); ok && b != "" {
			base = b
		}
	}
	return base
}

// withDefaults returns l with each zero (or negative) field replaced by
// its default.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	l.MaxBytesPerScrape = positiveOr(l.MaxBytesPerScrape, d.MaxBytesPerScrape)
	l.MaxBytesPerFile = positiveOr(l.MaxBytesPerFile, d.MaxBytesPerFile)
	l.MaxSeriesPerScrape = positiveOr(l.MaxSeriesPerScrape, d.MaxSeriesPerScrape)
	l.MaxLabelBytes = positiveOr(l.MaxLabelBytes, d.MaxLabelBytes)
	l.MaxTotalBytes = positiveOr(l.MaxTotalBytes, d.MaxTotalBytes)
	l.MaxWALBytes = positiveOr(l.MaxWALBytes, d.MaxWALBytes)
	l.MaxMemory = positiveOr(l.MaxMemory, d.MaxMemory)
	return l
}

// positiveOr returns v when it is positive, else def.
func positiveOr[T cmp.Ordered](v, def T) T {
	var zero T
	if v > zero {
		return v
	}
	return def
}

// TargetSelection is what Options.ForTarget chooses for one target,
// beside Options.Metrics and Options.LabelsOnly (metrics named as in
// Metrics).
type TargetSelection struct {
	// LabelsOnly are more metrics to list by their labels, as
	// Options.LabelsOnly lists its own, with the same guarantee: where the
	// index cannot show that leaving their samples out changes nothing
	// else, they are decoded after all. For a caller that measures, of
	// the candidate families of a signal, only the one a catalog matches
	// on each target, which the family names alone decide.
	LabelsOnly []string
	// Skip are metrics left out of the target altogether, as if Metrics
	// did not list them for it: neither samples nor labels. A target's
	// Scrapes are the times of its samples, so leaving a family out may
	// change them unless every sample of it lies at a time of the
	// target's other samples read: a caller skips only what it knows to
	// share its times so, such as a family that a survey of the same
	// history listed by its labels (see LabelsOnly), read beside the
	// families the survey decoded.
	Skip []string
}
