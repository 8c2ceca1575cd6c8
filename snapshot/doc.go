// Package snapshot reads preserved Prometheus evidence (what an SRE saved
// before the pods restarted) into one model: targets (replicas), each with
// a timeline of scrapes and metric families of series. It does not
// interpret what the metrics mean (no vLLM knowledge: that is package
// catalog's) and imports no other whyslow package but histogram and its
// internal packages, one job each: dumpdir (the files of dump
// directories), stream (a dump's bytes as the parser gets them, and what
// bytes are that are no exposition) and outlier (times far from the
// rest); heavier readers live in subpackages that register themselves
// (snapshot/tsdb), so a program that reads text dumps links no TSDB code.
//
// # Sources
//
// Read takes any mix of paths:
//
//   - /metrics dumps in Prometheus text 0.0.4 or OpenMetrics 1.0, parsed
//     by github.com/prometheus/prometheus/model/textparse. The format comes
//     from the content ("# EOF" at the end or a "# UNIT" line means
//     OpenMetrics), else from the name (.om, .openmetrics), else text;
//     Options.Format overrides. Gzip is detected from the magic bytes.
//   - Dump directories: DIR/<pod>/<timestamp>.prom[.gz], flat
//     DIR/<pod>_<timestamp>.prom, DIR/<timestamp>/<pod>.prom, and other
//     exporters of a pod saved beside vLLM's dump (DIR/<pod>/dcgm-<ts>.prom)
//     which join that pod's timeline. Files are read in the order of the
//     times in their names; hidden files are skipped, and so (with a
//     warning) are files without a dump extension.
//   - Prometheus /federate dumps: many targets and timestamps in one file.
//   - Any path a registered Source reads (RegisterSource): TSDB data and
//     snapshot directories once the program imports snapshot/tsdb, for
//     its side effect or for tsdb.Read. Without it a TSDB directory is a
//     problem (ErrNoReader) that names the import.
//
// ParseDump parses one exposition held in memory; a Builder accumulates
// any number of dumps and Evidence values into one Evidence, and Merge
// combines Evidence values.
//
// # Time and targets
//
// A sample's time is its own timestamp when it has one. Otherwise it is
// the time in the file name (RFC 3339 and variants such as
// 2026-09-22T10-00-15Z, 20260922T100015Z, Unix seconds or milliseconds;
// UTC when no zone is given), else the latest sample timestamp of the
// file, else the file's mtime, reported with an ErrNoTime warning because
// copying a file changes it. A dump read live from a stream (standard
// input that is a pipe, a FIFO) has no mtime: it is a scrape taken when it
// was read, said in an ErrNoTime note of SeverityInfo; standard input
// redirected from a file is that file. Scrape.TimeFrom says which.
//
// A sample belongs to the target named by its pod label, else its
// instance label, else the path: the directory of DIR/<pod>/<file>, the
// prefix of <pod>_<timestamp>.prom, or the file name. The pod label wins
// over instance so that a GPU exporter's series (whose instance is the
// exporter) join the vLLM pod they serve. Options.TargetName overrides
// the result. Labels with empty values are dropped, as Prometheus does on
// ingestion; every other label, vLLM V1's engine included, is kept.
//
// # Families
//
// textparse does not map samples to families. A sample belongs to the
// family of the last TYPE line when its name is that name plus a suffix
// the type allows (counter: _total; histogram: _bucket, _sum, _count;
// summary: _sum, _count; info: _info); text 0.0.4 "X_created" gauge
// families, as prometheus_client writes them, stay gauges, while
// OpenMetrics _created samples are dropped and become Series.StartT.
// Where no TYPE applies (federate dumps expose everything untyped), the
// type is inferred and Family.TypeInferred set: _bucket with le is a
// histogram part, _sum and _count are too when the file holds the
// base's buckets, _total is a counter, the rest is unknown.
//
// Classic histograms are assembled from their parts in any order (vLLM V0
// writes _sum first), comparing le values as numbers, keeping buckets in
// the order read. Each assembled sample is checked with
// histogram.Histogram.Validate; an invalid one (no +Inf bucket, bounds out
// of order, counts that decrease, _count unlike the +Inf bucket) is kept as
// read and reported once per family and file as an ErrInvalidHistogram
// Problem of SeverityError. Exemplars are never read. Values impossible for
// their type (NaN or ±Inf in a counter, gauge or untyped sample, a negative
// counter, a negative value of a series in Options.NonNegative) are left
// out with one ErrBadValue warning per file, so that no statistic sees
// them; a summary's NaN quantiles are kept.
//
// # Bad input
//
// Nothing under an input path is written, renamed, locked or changed;
// files are opened read-only. A problem with one file does not stop the
// others: it becomes a Problem naming the file, the line (or byte offset)
// and the reason, wrapping a sentinel error (ErrSyntax, ErrTruncated,
// ErrNotExposition, ErrLimit, ...). textparse's errors carry no position;
// the line is derived from the last entry textparse returned, which is a
// subslice of the input. What a file held before a syntax error is kept.
// Options.Limits bound bytes, samples and label sizes per file and the
// total bytes read; a *LimitError names the limit hit. A file a limit
// stops in the middle is left out whole (Options.KeepCutFiles keeps its
// first part), so that a cut cardinality bomb adds no series.
//
// Gzip files and streams (standard input, a FIFO given as a path, as the
// shell's <(curl ...) gives) are inflated in chunks: every inflated byte
// counts against the limit as it streams, and the comment lines of a text
// exposition are not kept, so that a gzip bomb costs its limit in time,
// not in memory. CRLF line endings and a UTF-8 byte order mark are
// normalised (one ErrNormalized warning per file); line numbers and
// offsets in problems stay those of the file. Messages say what an input
// is when it is not an exposition (HTML, JSON, UTF-16 text) and quote at
// most 80 bytes of an offending line, control characters escaped, and
// nothing of a file whose first line does not parse. Binary data (a NUL
// byte, invalid UTF-8 near the start) stop a file's read where they are
// met, so that a file of zeros behind one good line costs a few MB, not
// its size. A dump with HELP and TYPE lines and no sample names its
// target, with an ErrEmpty problem of error severity: its scrape is lost.
//
// In a dump directory only regular files and directories are opened: a
// link that leads out of the directory is not followed unless
// Options.FollowLinks, links into /proc, /sys and /dev never are, and
// FIFOs, devices, sockets and loops of links are skipped, each named in an
// ErrSkipped warning. A path that is a link to a directory is read as the
// directory, and a file reached twice (the same folder given twice, a hard
// link) is read once. Each dump is opened once, without following a link
// in its place and without blocking on a FIFO, and read only if the
// descriptor is the regular file listed (same device and inode): a dump
// replaced by a link, a FIFO or another file while Read runs is named in
// an ErrChanged problem, never read. A file given as a path may be a link.
//
// # Time
//
// Once everything is read, scrape times far outside the bulk of the
// evidence (a file named a year ahead, timestamps in seconds) are named
// (ErrTimeOutlier) and left out unless Options.KeepTimeOutliers, so that
// nothing downstream spans a year; the TSDB reader sets a block (or the
// head) that lies so apart whole, before reading it. A counter that decreases while
// process_start_time_seconds stays the same (or, for a target without it,
// while other counters do not drop) is inconsistent evidence
// (ErrInconsistent): the decreasing samples are left out instead of being
// read as resets. A file whose name and sample timestamps disagree gets an
// ErrTimeConflict warning; the sample timestamps are used.
//
// # Cost
//
// The text of every series is interned: a series met in an earlier dump is
// neither parsed into labels nor classified again, and samples are stored
// in columns with labels once per series. Options.Metrics filters on the
// raw text, before labels are built. See BENCHMARKS.md.
package snapshot
