package snapshot

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"

	"github.com/whyslow/whyslow/histogram"
	"github.com/whyslow/whyslow/snapshot/internal/dumpdir"
	"github.com/whyslow/whyslow/snapshot/internal/outlier"
	"github.com/whyslow/whyslow/snapshot/internal/stream"
)

// Content types handed to textparse.
const (
	ctText        = "text/plain; version=0.0.4"
	ctOpenMetrics = "application/openmetrics-text; version=1.0.0"
)

// ParseDump parses one exposition held in memory, Prometheus text 0.0.4 or
// OpenMetrics 1.0 (detected from the content, then from name, unless
// opts.Format says), possibly gzip-compressed. name names the dump in
// problems and gives the target name and time, as a file path would (see
// Read); a name with a directory part ("vllm-0/2026-09-22T10-00-15Z.prom")
// is read as DIR/<pod>/<file>.
//
// Problems in the dump (a syntax error after some samples, an invalid
// histogram family) are returned in Evidence.Problems with a nil error;
// the error is non-nil only when nothing usable was read.
func ParseDump(data []byte, name string, opts Options) (*Evidence, error) {
	if err := checkFormat(opts.Format); err != nil {
		return nil, err
	}
	b := NewBuilder(opts)
	err := b.AddDump(name, data, time.Time{})
	e := b.Evidence()
	if err != nil {
		return e, err
	}
	return e, nil
}

func checkFormat(f string) error {
	switch f {
	case "", "text", "openmetrics":
		return nil
	}
	return fmt.Errorf("snapshot: unknown Options.Format %q (want \"\", \"text\" or \"openmetrics\")", f)
}

// AddDump parses one exposition (see ParseDump) into the Builder. modTime,
// when not zero, is the time of the dump if neither its name nor its
// samples carry one. Problems are kept for Evidence; the returned error is
// the problem that made the whole dump unusable, or nil.
func (b *Builder) AddDump(name string, data []byte, modTime time.Time) error {
	return b.addDump(name, data, modTime, strings.ContainsAny(name, `/\`))
}

func (b *Builder) addDump(name string, data []byte, modTime time.Time, inSubdir bool) error {
	return b.addPrepared(name, data, nil, modTime, inSubdir)
}

// addPrepared is addDump for data that inflow may already have read:
// lm is then its line map, and data is not decompressed again.
func (b *Builder) addPrepared(name string, data []byte, lm *stream.Map, modTime time.Time, inSubdir bool) error {
	n0 := len(b.problems)
	used := b.parseFile(name, data, lm, modTime, inSubdir)
	b.sources = append(b.sources, name)
	if used {
		return nil
	}
	for _, p := range b.problems[n0:] {
		if p.Severity == SeverityError {
			return p
		}
	}
	if len(b.problems) > n0 {
		return b.problems[n0]
	}
	return nil
}

// fileState is the state of the file being parsed.
type fileState struct {
	name    string
	data    []byte
	om      bool
	defName string // target name from the path
	defFrom string
	tbs     map[string]*targetB // target name as found -> target
	defTB   *targetB

	floats []floatRec
	pend   []pendingHist
	pidx   map[pendKey]int
	cur    int // index of the pending histogram last added to, or -1

	maxTS    int64 // latest explicit sample timestamp
	hasTS    bool
	declared []declared
	help     map[string]string // family name -> HELP text, from this file
	unit     map[string]string
	buckets  map[string]bool // histogram base -> "base_bucket" occurs in the file
	// created holds the OpenMetrics family names with at least one
	// "<family>_created" sample in the file. The parser's StartTimestamp
	// scans ahead to the end of the family when there is none, so calling
	// it for every sample of a family without _created is quadratic.
	created map[string]bool
	samples int
	// times holds the distinct explicit sample timestamps seen: a file
	// of many scrapes (a /federate dump) gets MaxSeriesPerScrape samples
	// per scrape, not per file.
	times  map[int64]struct{}
	lastTS int64
	// The input did not end with a newline: a line cut short is then
	// the last line.
	noNewline bool

	// lm maps offsets in data to the original file.
	lm stream.Map
	// cut: a limit stopped the file in the middle.
	cut bool

	// Counted problems, reported once per file.
	badValues  int
	badValueAt int64
	badValue   string
	bigLabels  int
	bigLabelAt int64
	badLabels  int
	badLabelAt int64
	badLabel   string
}

type floatRec struct {
	sb   *seriesB
	t    int64
	hasT bool
	v    float64
	st   int64
	off  int64
}

type pendKey struct {
	hb   *histB
	t    int64
	hasT bool
}

// pendingHist collects the parts of one histogram sample, in any order.
type pendingHist struct {
	pendKey
	bounds, counts []float64
	sum, count     float64
	hasSum         bool
	hasCount       bool
	dups           int
	dupOff         int64 // offset of the first repeated part
	off            int64 // offset of the first part
}

type declared struct {
	ctx *typeCtx
	off int64
}

func (fs *fileState) reset(name string, data []byte) {
	*fs = fileState{
		name:    name,
		data:    data,
		tbs:     fs.tbs,
		floats:  fs.floats[:0],
		pend:    fs.pend[:0],
		pidx:    fs.pidx,
		cur:     -1,
		maxTS:   math.MinInt64,
		help:    fs.help,
		unit:    fs.unit,
		buckets: fs.buckets,
	}
	if fs.tbs == nil {
		fs.tbs, fs.pidx = map[string]*targetB{}, map[pendKey]int{}
		fs.help, fs.unit, fs.buckets = map[string]string{}, map[string]string{}, map[string]bool{}
	}
	clear(fs.tbs)
	clear(fs.pidx)
	clear(fs.help)
	clear(fs.unit)
	clear(fs.buckets)
}

// problem records a problem of the current file located at byte off.
func (b *Builder) problem(sev Severity, off int64, family string, err error) {
	fs := &b.fs
	p := Problem{Severity: sev, File: fs.name, Offset: -1, Family: family, Err: err}
	if off >= 0 {
		p.Line, p.Offset = fs.locate(off)
	}
	b.problems = append(b.problems, p)
}

// locate returns the original line number and line start offset of byte
// off of the current file's kept data.
func (fs *fileState) locate(off int64) (int, int64) {
	return fs.lm.Orig(lineAt(fs.data, off))
}

// syntaxProblem builds an error-severity Problem for the current file
// located at the line holding byte off of its kept data.
func (b *Builder) syntaxProblem(off int64, sentinel error, msg string) Problem {
	fs := &b.fs
	line, start := fs.locate(off)
	se := &SyntaxError{File: fs.name, Line: line, Offset: start, Msg: msg, Err: sentinel}
	return Problem{Severity: SeverityError, File: fs.name, Line: line, Offset: start, Err: reason{se}}
}

// parseFile parses one dump into the Builder and reports whether any
// sample or family was kept. lm is nil for data as found (perhaps
// compressed), else the line map of data that inflow prepared.
func (b *Builder) parseFile(name string, data []byte, lm *stream.Map, modTime time.Time, inSubdir bool) bool {
	fs := &b.fs
	fs.reset(name, data)
	b.fileSeq++
	defer func() { fs.data = nil }()

	if lm == nil {
		var ok bool
		if data, ok = b.prepare(name, data); !ok {
			return false
		}
	} else {
		fs.lm = *lm
	}
	fs.data = data
	if len(bytes.TrimSpace(data)) == 0 {
		msg := "empty file"
		if fs.lm.Dropped() {
			msg = "no samples, only comments"
		}
		b.problems = append(b.problems, Problem{Severity: SeverityError, File: name, Offset: -1,
			Err: fmt.Errorf("%w: %s", ErrEmpty, msg)})
		return false
	}
	if !b.checkContent(data) {
		return false
	}
	data = fs.data // checkContent may cut binary garbage off the end
	if fs.lm.BOM || fs.lm.CRLines > 0 {
		var what []string
		if fs.lm.BOM {
			what = append(what, "a UTF-8 byte order mark removed")
		}
		if fs.lm.CRLines > 0 {
			what = append(what, fmt.Sprintf("CRLF line endings of %d lines read as LF", fs.lm.CRLines))
		}
		b.problems = append(b.problems, Problem{Severity: SeverityWarning, File: name, Offset: -1,
			Err: fmt.Errorf("%w: %s (a file saved on Windows?)", ErrNormalized, strings.Join(what, "; "))})
	}
	fs.noNewline = fs.lm.NoNewline

	ni := dumpdir.ParseName(name, inSubdir)
	fs.defName, fs.defFrom = ni.Target, "path"
	fs.om = b.isOpenMetrics(name, data)
	if fs.om {
		fs.created = createdFamilies(data)
	}
	if data[len(data)-1] != '\n' {
		// textparse appends the missing newline itself, to a copy when the
		// input has no spare capacity: then its subslices would not point
		// into data, and errors could not be located. Copy here instead of
		// writing into the caller's spare capacity.
		data = append(append(make([]byte, 0, len(data)+1), data...), '\n')
		fs.data, fs.noNewline = data, true
	}
	b.tokenize(data)
	return b.finishFile(ni, modTime)
}

// checkContent rejects what is not an exposition, saying what it is
// when it can tell: HTML or XML, JSON, UTF-16 text. Binary data after
// some good lines is cut off (and reported), so that the good part is
// read.
func (b *Builder) checkContent(data []byte) bool {
	fs := &b.fs
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	off := int64(len(data) - len(trimmed))
	if what := stream.UTF16(data); what != "" {
		b.problems = append(b.problems, b.syntaxProblem(0, ErrNotExposition, "file is "+what+" text, not UTF-8: convert it to UTF-8 (iconv -f UTF-16 -t UTF-8)"))
		return false
	}
	if len(trimmed) > 0 && trimmed[0] == '<' {
		what := "an HTML or XML document"
		head := strings.ToLower(string(trimmed[:min(len(trimmed), 512)]))
		if strings.Contains(head, "<html") || strings.Contains(head, "<!doctype html") {
			what = "an HTML page (an error page saved as a dump?)"
		}
		b.problems = append(b.problems, b.syntaxProblem(off, ErrNotExposition, "file is "+what+", not metrics"))
		return false
	}
	if stream.LooksLikeJSON(trimmed) {
		b.problems = append(b.problems, b.syntaxProblem(off, ErrNotExposition, "file is JSON, not an exposition (a Prometheus API response? save /metrics or /federate output instead)"))
		return false
	}
	bad := bytes.IndexByte(data, 0)
	if i := stream.BinaryHead(data[:min(len(data), stream.UTF8Head)]); i >= 0 && (bad < 0 || i < bad) {
		bad = i
	}
	if bad < 0 {
		return true
	}
	line, start := lineAt(data, int64(bad))
	_, origBad := fs.lm.Orig(line, int64(bad)) // offset of the byte itself
	b.problems = append(b.problems, b.syntaxProblem(int64(bad), ErrNotExposition,
		fmt.Sprintf("binary data (byte 0x%02x at offset %d)", data[bad], origBad)))
	if start == 0 {
		return false
	}
	fs.data = data[:start]
	return true
}

// isOpenMetrics decides the format of a dump: Options.Format, else
// "# EOF" at the end or a "# UNIT" line, else a .om / .openmetrics name
// (headIsOpenMetrics, with the end seen).
func (b *Builder) isOpenMetrics(name string, data []byte) bool {
	if b.opts.Format != "text" && b.opts.Format != "openmetrics" && bytes.HasSuffix(bytes.TrimRight(data, " \t\r\n"), []byte("# EOF")) {
		return true // the line that ends an OpenMetrics exposition
	}
	return b.headIsOpenMetrics(name, data)
}

// tokenize runs textparse over data and classifies every sample.
func (b *Builder) tokenize(data []byte) {
	fs := &b.fs
	ct := ctText
	if fs.om {
		ct = ctOpenMetrics
	}
	p, err := textparse.New(data, ct, nil, textparse.ParserOptions{OpenMetricsSkipSTSeries: true})
	if p == nil {
		b.problems = append(b.problems, Problem{Severity: SeverityError, File: fs.name, Offset: -1, Err: err})
		return
	}
	var (
		ctx      *typeCtx
		lastGood int64 = -1
		ls       labels.Labels
		maxLabel = b.lim.MaxLabelBytes
		maxSer   = b.lim.MaxSeriesPerScrape
	)
	for {
		et, err := p.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				b.parseError(data, lastGood, err)
			}
			break
		}
		switch et {
		case textparse.EntryType:
			name, typ := p.Type()
			lastGood = offsetIn(data, name)
			ctx = b.typeCtx(name, typ)
			fs.declared = append(fs.declared, declared{ctx: ctx, off: lastGood})
		case textparse.EntryHelp:
			name, help := p.Help()
			lastGood = offsetIn(data, name)
			fs.help[string(name)] = string(help)
		case textparse.EntryUnit:
			name, unit := p.Unit()
			lastGood = offsetIn(data, name)
			fs.unit[string(name)] = string(unit)
		case textparse.EntryComment:
			if off := offsetIn(data, p.Comment()); off >= 0 {
				lastGood = off
			}
		case textparse.EntryHistogram:
			raw, _, _, _ := p.Histogram()
			lastGood = offsetIn(data, raw)
			b.problem(SeverityError, lastGood, "", fmt.Errorf("%w: native histogram sample in a text exposition", ErrSyntax))
		case textparse.EntrySeries:
			raw, tsp, v := p.Series()
			off := offsetIn(data, raw)
			lastGood = off
			if tsp != nil && (len(fs.times) == 0 || *tsp != fs.lastTS) {
				if fs.times == nil {
					fs.times = map[int64]struct{}{}
				}
				fs.times[*tsp], fs.lastTS = struct{}{}, *tsp
			}
			if fs.samples++; fs.samples > maxSer*max(1, len(fs.times)) {
				fs.cut = true
				b.problem(SeverityError, off, "", limitErr("Limits.MaxSeriesPerScrape", int64(maxSer), fmt.Sprintf("more than Limits.MaxSeriesPerScrape (%d) samples per scrape (%d scrape times so far); %s", maxSer, max(1, len(fs.times)), b.cutWhat())))
				return
			}
			if len(raw) > maxLabel {
				if fs.bigLabels++; fs.bigLabels == 1 {
					fs.bigLabelAt = off
				}
				continue
			}
			info := b.raw[string(raw)]
			if info == nil || info.ctx != ctx || info.volatile {
				info = b.classify(raw, ctx, p, &ls, off)
			}
			if info.drop {
				continue
			}
			t, hasT := int64(0), tsp != nil
			if hasT {
				t = *tsp
				if t < b.minT || t > b.maxT {
					continue
				}
				if t > fs.maxTS {
					fs.maxTS = t
				}
				fs.hasTS = true
			}
			tb := fs.defTB
			if info.target != "" {
				tb = fs.tbs[info.target]
			}
			if tb == nil {
				tb = b.fileTarget(info.target, info.from)
			}
			if info.part == partFloat {
				if info.check != 0 && badValue(info.check, v) {
					if fs.badValues++; fs.badValues == 1 {
						fs.badValueAt, fs.badValue = off, badValueWhat(info.check, v, raw)
					}
					continue
				}
				sb := info.lastS
				if info.lastTB != tb || sb == nil {
					sb = b.seriesSlot(tb, info.id, fs.name)
					info.lastTB, info.lastS, info.lastH = tb, sb, nil
				}
				st := int64(0)
				if info.needST && info.ctx != nil && fs.created[info.ctx.name] {
					st = p.StartTimestamp()
				}
				fs.floats = append(fs.floats, floatRec{sb: sb, t: t, hasT: hasT, v: v, st: st, off: off})
				continue
			}
			hb := info.lastH
			if info.lastTB != tb || hb == nil {
				hb = b.histSlot(tb, info.id, fs.name)
				info.lastTB, info.lastS, info.lastH = tb, nil, hb
			}
			b.addHistPart(pendKey{hb: hb, t: t, hasT: hasT}, info.part, info.le, v, off)
		}
	}
}

// Value checks of float samples (seriesInfo.check).
const (
	checkFinite  uint8 = 1 + iota // a gauge, or an untyped sample: no NaN or ±Inf
	checkCounter                  // a counter: finite and not negative
	checkNonNeg                   // Options.NonNegative: finite and not negative
)

// valueCheck returns the check the values of a float sample get. A
// summary's quantiles are NaN when nothing was observed, and untyped
// samples with a quantile label are such quantiles: not checked.
func (b *Builder) valueCheck(name string, typ model.MetricType, ls *labels.Labels) uint8 {
	switch typ {
	case model.MetricTypeCounter:
		return checkCounter
	case model.MetricTypeGauge, model.MetricTypeUnknown:
		if typ == model.MetricTypeUnknown && ls.Has(model.QuantileLabel) {
			return 0
		}
		if slices.Contains(b.opts.NonNegative, name) {
			return checkNonNeg
		}
		return checkFinite
	}
	return 0
}

// badValue reports whether v fails check.
func badValue(check uint8, v float64) bool {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return true
	}
	return check != checkFinite && v < 0
}

// badValueWhat says why a sample fails its check, quoting an excerpt of
// its series.
func badValueWhat(check uint8, v float64, raw []byte) string {
	what := "a gauge or untyped sample cannot be NaN or infinite"
	switch {
	case check == checkCounter && v < 0:
		what = "a counter cannot be negative"
	case check == checkCounter:
		what = "a counter cannot be NaN or infinite"
	case check == checkNonNeg && v < 0:
		what = "this series cannot be negative (Options.NonNegative)"
	}
	return fmt.Sprintf("%s = %v: %s", excerpt(string(raw)), v, what)
}

// cutWhat says what becomes of a file a limit stopped.
func (b *Builder) cutWhat() string {
	if b.opts.KeepCutFiles {
		return "the rest of the file is not read (Options.KeepCutFiles keeps what was read)"
	}
	return "the file is left out (Options.KeepCutFiles keeps what was read before the limit)"
}

// fileTarget returns the target of the current file for a name from the
// labels ("" = the name from the path), applying Options.TargetName.
func (b *Builder) fileTarget(name, from string) *targetB {
	fs := &b.fs
	key := name
	if name == "" {
		name, from = fs.defName, fs.defFrom
	}
	if b.opts.TargetName != nil {
		if n := b.opts.TargetName(fs.name, name); n != name {
			name, from = n, "override"
		}
	}
	tb := b.target(name, from)
	fs.tbs[key] = tb
	if key == "" {
		fs.defTB = tb
	}
	return tb
}

func (b *Builder) addHistPart(k pendKey, pt part, le, v float64, off int64) {
	fs := &b.fs
	i := fs.cur
	if i < 0 || fs.pend[i].pendKey != k {
		var ok bool
		if i, ok = fs.pidx[k]; !ok {
			i = len(fs.pend)
			if i < cap(fs.pend) {
				fs.pend = fs.pend[:i+1]
				ph := &fs.pend[i]
				*ph = pendingHist{pendKey: k, bounds: ph.bounds[:0], counts: ph.counts[:0], off: off}
			} else {
				fs.pend = append(fs.pend, pendingHist{pendKey: k, off: off})
			}
			fs.pidx[k] = i
		}
		fs.cur = i
	}
	ph := &fs.pend[i]
	dup := false
	switch pt {
	case partBucket:
		for _, bd := range ph.bounds {
			if bd == le {
				dup = true
				break
			}
		}
		if !dup {
			ph.bounds = append(ph.bounds, le)
			ph.counts = append(ph.counts, v)
		}
	case partSum:
		dup = ph.hasSum
		if !dup {
			ph.sum, ph.hasSum = v, true
		}
	case partCount:
		dup = ph.hasCount
		if !dup {
			ph.count, ph.hasCount = v, true
		}
	}
	if dup {
		if ph.dups++; ph.dups == 1 {
			ph.dupOff = off
		}
	}
}

// parseError records a textparse error, located at the line after the
// last good entry.
func (b *Builder) parseError(data []byte, lastGood int64, err error) {
	fs := &b.fs
	off := nextLine(data, lastGood)
	msg := err.Error()
	sentinel := ErrSyntax
	switch {
	case strings.Contains(msg, "does not end with # EOF"):
		sentinel = ErrTruncated
		msg = "OpenMetrics dump without its final \"# EOF\" line (truncated?): " + msg
		off = int64(len(data))
	case fs.noNewline && bytes.IndexByte(data[min(off, int64(len(data))):], '\n') == len(data)-1-int(min(off, int64(len(data)))):
		sentinel = ErrTruncated
		msg = "dump ends in the middle of a line (truncated?): " + msg
	case lastGood < 0 && fs.samples == 0 && len(fs.declared) == 0:
		// Not one good line: this is likely not an exposition at all, and
		// perhaps a file that must not be quoted (a link to a secret):
		// the parser's message, which quotes the line, is left out.
		msg = "not a Prometheus or OpenMetrics exposition (the first line does not parse as one)"
	}
	b.problems = append(b.problems, b.syntaxProblem(off, sentinel, shortenQuotes(msg)))
}

// metricName returns the metric name at the start of a raw series, or ""
// when the name is quoted inside the braces (UTF-8 names). Names are
// interned: a dump repeats each histogram's name for every bucket.
func (b *Builder) metricName(raw []byte) string {
	if i := bytes.IndexByte(raw, '{'); i >= 0 {
		raw = raw[:i]
	}
	if n, ok := b.names[string(raw)]; ok {
		return n
	}
	n := string(raw)
	b.names[n] = n
	return n
}

// classify works out what a series text means under the TYPE context ctx,
// calling Labels only for samples that are kept, and caches the result.
func (b *Builder) classify(raw []byte, ctx *typeCtx, p textparse.Parser, ls *labels.Labels, off int64) *seriesInfo {
	fs := &b.fs
	info := &seriesInfo{ctx: ctx}
	name := b.metricName(raw)
	haveLabels := false
	if name == "" {
		p.Labels(ls)
		haveLabels = true
		name = ls.Get(model.MetricNameLabel)
	}
	c := classifyName(name, ctx, fs.om)
	if c.maybeHistPart {
		// An untyped _sum or _count: part of a histogram when the file
		// also holds the base's buckets.
		info.volatile = true
		has, ok := fs.buckets[c.family]
		if !ok {
			has = bytes.Contains(fs.data, []byte(c.family+"_bucket"))
			fs.buckets[c.family] = has
		}
		if has {
			c.typ, c.hist = model.MetricTypeHistogram, true
		} else {
			c.family, c.part = name, partFloat
		}
	}
	if c.drop || !b.keep(c.family, name) {
		info.drop = true
		b.cache(raw, info)
		return info
	}
	if !haveLabels {
		p.Labels(ls)
	}
	if !utf8.Valid(raw) {
		if fs.badLabels++; fs.badLabels == 1 {
			fs.badLabelAt, fs.badLabel = off, "label value is not valid UTF-8"
		}
		info.drop = true
		return info
	}
	for _, m := range b.opts.Matchers {
		if !m.Matches(ls.Get(m.Name)) {
			info.drop = true
			b.cache(raw, info)
			return info
		}
	}
	if c.part == partBucket {
		les := ls.Get(model.BucketLabel)
		if les == "" && c.inferred {
			c.family, c.part, c.hist, c.typ = name, partFloat, false, model.MetricTypeUnknown
		} else {
			le, err := strconv.ParseFloat(les, 64)
			if err != nil {
				if fs.badLabels++; fs.badLabels == 1 {
					fs.badLabelAt, fs.badLabel = off, fmt.Sprintf("bucket of %s with le=%q, not a number", c.family, les)
				}
				info.drop = true
				return info
			}
			info.le = le
		}
	}
	info.part = c.part
	if c.part == partFloat {
		info.check = b.valueCheck(name, c.typ, ls)
	}
	info.needST = fs.om && (c.typ == model.MetricTypeCounter || c.typ == model.MetricTypeHistogram || c.typ == model.MetricTypeSummary)
	// exported_pod first: a GPU exporter scraped through Kubernetes
	// service discovery (a /federate dump) keeps the workload's pod there,
	// while pod is the exporter's own.
	if v := ls.Get("exported_pod"); v != "" {
		info.target, info.from = v, "pod"
	} else if v := ls.Get("pod"); v != "" {
		info.target, info.from = v, "pod"
	} else if v := ls.Get("instance"); v != "" {
		info.target, info.from = v, "instance"
	}
	id := ident{family: c.family, typ: c.typ, inferred: c.inferred, hist: c.hist}
	if !c.hist {
		id.name = name
	}
	info.id = b.internIdent(id, *ls)
	if !info.volatile {
		b.cache(raw, info)
	}
	return info
}

func (b *Builder) cache(raw []byte, info *seriesInfo) {
	b.raw[string(raw)] = info
}

// class is the classification of a sample name.
type class struct {
	family        string
	typ           model.MetricType
	inferred      bool
	hist          bool
	part          part
	drop          bool // an OpenMetrics-style _created sample: not data
	maybeHistPart bool // untyped x_sum / x_count: family = x if x has buckets
}

// classifyName assigns a sample to its family, following the last TYPE
// line when the sample belongs to it (sample == TYPE name + a suffix the
// type allows), else inferring from the name: "_bucket" is a histogram
// part (when it has le), "_total" a counter, anything else unknown.
func classifyName(name string, ctx *typeCtx, om bool) class {
	if ctx != nil && ctx.typ != model.MetricTypeUnknown && strings.HasPrefix(name, ctx.name) {
		base, suffix := ctx.name, name[len(ctx.name):]
		switch ctx.typ {
		case model.MetricTypeCounter:
			switch suffix {
			case "", "_total":
				return class{family: name, typ: ctx.typ}
			case "_created":
				return class{drop: true}
			}
		case model.MetricTypeHistogram, model.MetricTypeGaugeHistogram:
			switch suffix {
			case "_bucket":
				return class{family: base, typ: ctx.typ, hist: true, part: partBucket}
			case "_sum", "_gsum":
				return class{family: base, typ: ctx.typ, hist: true, part: partSum}
			case "_count", "_gcount":
				return class{family: base, typ: ctx.typ, hist: true, part: partCount}
			case "_created":
				return class{drop: true}
			}
		case model.MetricTypeSummary:
			switch suffix {
			case "", "_sum", "_count":
				return class{family: base, typ: ctx.typ}
			case "_created":
				return class{drop: true}
			}
		case model.MetricTypeInfo:
			if suffix == "" || suffix == "_info" {
				return class{family: name, typ: ctx.typ}
			}
		default: // gauge, stateset
			if suffix == "" {
				return class{family: name, typ: ctx.typ}
			}
		}
	}
	// No TYPE for this sample, or "untyped": infer.
	switch {
	case strings.HasSuffix(name, "_bucket"):
		return class{family: strings.TrimSuffix(name, "_bucket"), typ: model.MetricTypeHistogram, inferred: true, hist: true, part: partBucket}
	case strings.HasSuffix(name, "_total"):
		return class{family: name, typ: model.MetricTypeCounter, inferred: true}
	case strings.HasSuffix(name, "_sum"):
		return class{family: strings.TrimSuffix(name, "_sum"), typ: model.MetricTypeUnknown, inferred: true, part: partSum, maybeHistPart: true}
	case strings.HasSuffix(name, "_count"):
		return class{family: strings.TrimSuffix(name, "_count"), typ: model.MetricTypeUnknown, inferred: true, part: partCount, maybeHistPart: true}
	}
	declaredUntyped := ctx != nil && ctx.typ == model.MetricTypeUnknown && ctx.name == name
	return class{family: name, typ: model.MetricTypeUnknown, inferred: !declaredUntyped}
}

// declaredName is the lookup name of a family known only from its TYPE
// line.
func declaredName(c *typeCtx, om bool) string {
	switch c.typ {
	case model.MetricTypeCounter:
		if om && !strings.HasSuffix(c.name, "_total") {
			return c.name + "_total"
		}
	case model.MetricTypeInfo:
		if om {
			return c.name + "_info"
		}
	}
	return c.name
}

// finishFile resolves the times of the file's samples, appends them,
// assembles and validates its histograms and reports its problems. It
// reports whether anything was kept.
func (b *Builder) finishFile(ni dumpdir.Name, modTime time.Time) bool {
	fs := &b.fs
	ft, from := ni.Time.UnixMilli(), TimeFromFileName
	switch {
	case !ni.Time.IsZero():
		if fs.hasTS {
			b.timeConflict(ni.Time)
		}
	case fs.hasTS:
		ft, from = fs.maxTS, TimeFromSamples
	case !modTime.IsZero():
		ft, from = modTime.UnixMilli(), TimeFromModTime
		if len(fs.floats)+len(fs.pend) > 0 {
			b.problem(SeverityWarning, -1, "", &NoTimeError{At: modTime})
		}
	case !b.readAt.IsZero():
		ft, from = b.readAt.UnixMilli(), TimeFromReadTime
		if len(fs.floats)+len(fs.pend) > 0 {
			b.problem(SeverityInfo, -1, "", &NoTimeError{At: b.readAt, Live: true})
		}
	default:
		ft, from = 0, TimeUnknown
		if len(fs.floats)+len(fs.pend) > 0 {
			b.problem(SeverityWarning, -1, "", fmt.Errorf("%w: no time in the name or on the samples, and no mtime; scrape placed at the Unix epoch", ErrNoTime))
		}
	}
	if fs.cut && !b.opts.KeepCutFiles {
		b.dropCutFile()
		return false
	}
	if len(fs.tbs) == 0 && ft >= b.minT && ft <= b.maxT {
		// A dump with families but no samples still names its target.
		b.fileTarget("", "")
	}

	kept := 0
	var lastTB *targetB
	lastT := int64(math.MinInt64)
	note := func(tb *targetB, t int64, src TimeSource) {
		if tb != lastTB || t != lastT {
			tb.scrape(t, src, fs.name)
			lastTB, lastT = tb, t
		}
	}
	// sampleTime is a sample's own timestamp t when it has one, else the
	// file's time, which is kept only inside the window asked for.
	sampleTime := func(hasT bool, t int64) (int64, TimeSource, bool) {
		if hasT {
			return t, TimeFromSamples, true
		}
		return ft, from, ft >= b.minT && ft <= b.maxT
	}
	var dups int
	var dupAt int64 = -1
	var dupName string
	for i := range fs.floats {
		r := &fs.floats[i]
		t, src, ok := sampleTime(r.hasT, r.t)
		if !ok {
			continue
		}
		if !r.sb.append(t, r.v, r.st) {
			if dups++; dups == 1 {
				dupAt, dupName = r.off, seriesString(r.sb.s.Name, r.sb.s.Labels)
			}
			continue
		}
		kept++
		b.mem += FloatSampleBytes
		note(r.sb.tb, t, src)
	}

	type famErr struct {
		err error
		n   int
		off int64
	}
	var (
		unordered     int
		unorderedAt   int64
		unorderedName string
		unorderedFam  string
	)
	var invalid map[*famB]*famErr
	for i := range fs.pend {
		ph := &fs.pend[i]
		t, src, ok := sampleTime(ph.hasT, ph.t)
		if !ok {
			continue
		}
		sum, count := math.NaN(), math.NaN()
		if ph.hasSum {
			sum = ph.sum
		}
		if ph.hasCount {
			count = ph.count
		}
		if ph.dups > 0 {
			if dups += ph.dups; dups == ph.dups {
				dupAt, dupName = ph.dupOff, seriesString(ph.hb.fam.f.Name, ph.hb.lset)
			}
		}
		// Buckets are put in numerical order of le, as PromQL does: a
		// /federate dump (untyped) orders series by label text, so
		// le="+Inf" comes first there. A declared histogram exposed out of
		// order is worth a warning.
		if sortBuckets(ph.bounds, ph.counts) && !ph.hb.fam.f.TypeInferred {
			if unordered++; unordered == 1 {
				unorderedAt, unorderedName, unorderedFam = ph.off, seriesString(ph.hb.fam.f.Name, ph.hb.lset), ph.hb.fam.f.Name
			}
		}
		h := histogram.Histogram{Bounds: ph.bounds, Counts: ph.counts, Sum: sum, Count: count}
		if err := h.Validate(); err != nil {
			if invalid == nil {
				invalid = map[*famB]*famErr{}
			}
			fe := invalid[ph.hb.fam]
			if fe == nil {
				fe = &famErr{err: fmt.Errorf("%s: %w", seriesString("", ph.hb.lset), err), off: ph.off}
				invalid[ph.hb.fam] = fe
			}
			fe.n++
		}
		if !ph.hb.append(t, ph.bounds, ph.counts, sum, count) {
			if dups++; dups == 1 {
				dupAt, dupName = ph.off, seriesString(ph.hb.fam.f.Name, ph.hb.lset)
			}
			continue
		}
		kept++
		b.mem += HistRowBytes + BucketBytes*int64(len(ph.counts))
		note(ph.hb.tb, t, src)
	}
	for fb, fe := range invalid {
		msg := "%w: %w"
		if fe.n > 1 {
			msg = fmt.Sprintf("%%w (%d samples): %%w", fe.n)
		}
		b.problem(SeverityError, fe.off, fb.f.Name, fmt.Errorf(msg, ErrInvalidHistogram, fe.err))
	}
	if dups > 0 {
		b.problem(SeverityWarning, dupAt, "", fmt.Errorf("%w: %s repeated at the same instant (%d samples dropped in this file)", ErrDuplicateSeries, dupName, dups))
	}
	if unordered > 0 {
		b.problem(SeverityWarning, unorderedAt, unorderedFam, fmt.Errorf("%w: buckets of %s (and %d more histogram samples in this file) not in ascending order of le; sorted", ErrUnorderedBuckets, unorderedName, unordered-1))
	}
	if fs.bigLabels > 0 {
		b.problem(SeverityError, fs.bigLabelAt, "", limitErr("Limits.MaxLabelBytes", int64(b.lim.MaxLabelBytes), fmt.Sprintf("series text longer than Limits.MaxLabelBytes (%d bytes); %d samples dropped", b.lim.MaxLabelBytes, fs.bigLabels)))
	}
	if fs.badValues > 0 {
		more := ""
		if fs.badValues > 1 {
			more = fmt.Sprintf(" (and %d more samples in this file)", fs.badValues-1)
		}
		b.problem(SeverityWarning, fs.badValueAt, "", fmt.Errorf("%w: %s%s; left out of the evidence", ErrBadValue, fs.badValue, more))
	}
	if fs.badLabels > 0 {
		b.problem(SeverityError, fs.badLabelAt, "", fmt.Errorf("%w: %s; %d samples dropped", ErrSyntax, fs.badLabel, fs.badLabels))
	}
	b.declare(ft, from)
	// A failed reservation stops Read (see Read and addDir): the budget
	// is for the whole run, not a problem of this file.
	_ = b.opts.Memory.Reserve(b.mem, fs.name)
	b.mem = 0
	if fs.samples == 0 && len(fs.declared) > 0 && ft >= b.minT && ft <= b.maxT && !b.fileFailed() {
		// A scrape that exposed families and no sample (the process had
		// nothing to report yet, or the exporter failed) still names its
		// target, but the scrape is lost: an error, so that the evidence is
		// partial.
		b.problem(SeverityError, -1, "", fmt.Errorf("%w: no samples, only the HELP and TYPE lines of %d families", ErrEmpty, len(fs.declared)))
	}
	if kept == 0 && len(fs.declared) == 0 {
		if fs.samples == 0 {
			b.problem(SeverityError, -1, "", fmt.Errorf("%w: no samples", ErrEmpty))
		}
		return false
	}
	return true
}

// fileFailed reports whether an error-severity problem of the current
// file was recorded (a syntax error that stopped its parse).
func (b *Builder) fileFailed() bool {
	for i := len(b.problems) - 1; i >= 0 && b.problems[i].File == b.fs.name; i-- {
		if b.problems[i].Severity == SeverityError {
			return true
		}
	}
	return false
}

// timeConflictTolerance is how far the newest sample timestamp of a file
// may lie from the time in its name before they disagree: more than the
// time a dump takes to be saved, less than any scrape interval's multiple
// that matters.
const timeConflictTolerance = 5 * time.Minute

// timeConflict warns when the sample timestamps of the current file
// disagree with the time in its name.
func (b *Builder) timeConflict(named time.Time) {
	fs := &b.fs
	newest := time.UnixMilli(fs.maxTS).UTC()
	d := newest.Sub(named)
	if d.Abs() <= timeConflictTolerance {
		return
	}
	side := "after"
	if d < 0 {
		side, d = "before", -d
	}
	b.problem(SeverityWarning, -1, "", fmt.Errorf("%w: the file name says %s, the newest sample timestamp %s (%s %s); the sample timestamps are used",
		ErrTimeConflict, named.UTC().Format(time.RFC3339), newest.Format(time.RFC3339), outlier.FormatSpan(d.Milliseconds()), side))
}

// dropCutFile undoes what a file stopped by a limit added while it was
// tokenised: the series, families and targets only it created. Its
// samples were never appended. A cut cardinality bomb thus adds no
// series, no label value and no target.
func (b *Builder) dropCutFile() {
	fs := &b.fs
	for _, tb := range fs.tbs {
		for id, sb := range tb.series {
			if len(sb.s.T) == 0 {
				delete(tb.series, id)
			}
		}
		for id, hb := range tb.hists {
			if len(hb.hs) == 0 {
				delete(tb.hists, id)
			}
		}
		for name, fb := range tb.fams {
			fb.series = slices.DeleteFunc(fb.series, func(sb *seriesB) bool { return len(sb.s.T) == 0 })
			fb.hists = slices.DeleteFunc(fb.hists, func(hb *histB) bool { return len(hb.hs) == 0 })
			if fb.gen == b.fileSeq && len(fb.series) == 0 && len(fb.hists) == 0 {
				delete(tb.fams, name)
			}
		}
		if len(tb.scrapes) == 0 && b.targets[tb.name] == tb {
			delete(b.targets, tb.name)
		}
	}
	// The cache of series slots may point at what was dropped.
	for _, info := range b.raw {
		info.lastTB, info.lastS, info.lastH = nil, nil, nil
	}
}

// declare sets HELP, UNIT and declared types on the families of the
// file's TYPE lines, and adds the families declared without samples to
// the file's target when the file has one target.
func (b *Builder) declare(ft int64, from TimeSource) {
	fs := &b.fs
	single := len(fs.tbs) == 1
	for _, d := range fs.declared {
		name := declaredName(d.ctx, fs.om)
		help, unit := fs.help[d.ctx.name], fs.unit[d.ctx.name]
		if b.metrics != nil && !b.keep(name, d.ctx.name) {
			continue
		}
		for _, tb := range fs.tbs {
			fb := tb.fams[name]
			if fb == nil {
				if !single || d.ctx.typ == model.MetricTypeUnknown {
					continue
				}
				fb = b.family(tb, name, d.ctx.typ, false, fs.name)
				tb.scrape(ft, from, fs.name)
			} else if fb.f.TypeInferred && d.ctx.typ != model.MetricTypeUnknown {
				b.family(tb, name, d.ctx.typ, false, fs.name)
			}
			if fb.f.Help == "" {
				fb.f.Help = help
			}
			if fb.f.Unit == "" {
				fb.f.Unit = unit
			}
		}
	}
}

// prepare readies in-memory data for the parser: gzip data and data
// to normalise (CRLF, a byte order mark) go through inflow; other data is
// used in place. It reports false, with a problem, when the file cannot
// be read at all.
func (b *Builder) prepare(name string, data []byte) ([]byte, bool) {
	fs := &b.fs
	var r io.Reader
	switch {
	case len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b:
		zr, err := openGzip(bytes.NewReader(data))
		if err != nil {
			b.problems = append(b.problems, Problem{Severity: SeverityError, File: name, Offset: 0, Err: err})
			return nil, false
		}
		defer zr.Close()
		r = zr
	case stream.NeedsNormalising(data):
		r = bytes.NewReader(data)
	default:
		if max, what := b.byteLimit(data); int64(len(data)) > max {
			b.problems = append(b.problems, Problem{Severity: SeverityError, File: name, Offset: -1,
				Err: limitErr(what, max, fmt.Sprintf("%d bytes, more than %s (%d); file not read", len(data), what, max))})
			return nil, false
		}
		if b.total += int64(len(data)); b.total > b.lim.MaxTotalBytes {
			b.problems = append(b.problems, Problem{Severity: SeverityError, File: name, Offset: -1,
				Err: limitErr("Limits.MaxTotalBytes", b.lim.MaxTotalBytes, fmt.Sprintf("total input exceeds Limits.MaxTotalBytes (%d bytes); file not read", b.lim.MaxTotalBytes))})
			return nil, false
		}
		return data, true
	}
	out, err := b.inflow(name, r, &fs.lm, int64(len(data)))
	if err != nil {
		b.problems = append(b.problems, Problem{Severity: SeverityError, File: name, Offset: -1, Err: err})
		if errors.Is(err, ErrTruncated) && len(out) > 0 {
			return out, true // read what the cut stream holds
		}
		return nil, false
	}
	return out, true
}

// seriesString formats a series as name{labels}, without braces when there
// is no label, and labels alone when name is empty.
func seriesString(name string, lset labels.Labels) string {
	if lset.IsEmpty() {
		if name == "" {
			return "{}"
		}
		return name
	}
	return name + lset.String()
}

// sortBuckets sorts the (bound, count) pairs by bound, in place, and
// reports whether they were out of order. Histograms have a few dozen
// buckets: insertion sort, no allocation.
func sortBuckets(bounds, counts []float64) bool {
	moved := false
	for i := 1; i < len(bounds); i++ {
		for j := i; j > 0 && bounds[j] < bounds[j-1]; j-- {
			bounds[j], bounds[j-1] = bounds[j-1], bounds[j]
			counts[j], counts[j-1] = counts[j-1], counts[j]
			moved = true
		}
	}
	return moved
}

// createdFamilies returns the names X of the samples "X_created" in an
// OpenMetrics exposition, in one pass over data.
func createdFamilies(data []byte) map[string]bool {
	const suffix = "_created"
	fams := map[string]bool{}
	for pos := 0; ; {
		i := bytes.Index(data[pos:], []byte(suffix))
		if i < 0 {
			return fams
		}
		end := pos + i
		pos = end + len(suffix)
		if pos < len(data) && data[pos] != '{' && data[pos] != ' ' {
			continue // inside a longer name or a label value
		}
		start := bytes.LastIndexByte(data[:end], '\n') + 1
		if start < end && data[start] != '#' && !bytes.ContainsAny(data[start:end], " {\"") {
			fams[string(data[start:end])] = true
		}
	}
}

// byteLimit returns the size limit of a file that begins with head (its
// first bytes, decompressed), and the limit's name for errors: a file
// whose samples carry timestamps holds many scrapes (a /federate dump, an
// OpenMetrics backfill file) and gets MaxBytesPerFile; any other file is
// one scrape and gets MaxBytesPerScrape.
func (b *Builder) byteLimit(head []byte) (int64, string) {
	if hasTimestamps(head) {
		return max(b.lim.MaxBytesPerFile, b.lim.MaxBytesPerScrape), "Limits.MaxBytesPerFile"
	}
	return b.lim.MaxBytesPerScrape, "Limits.MaxBytesPerScrape"
}

// headSize is how much of a file byteLimit looks at.
const headSize = 64 << 10

// hasTimestamps reports whether the first complete sample line of head
// carries a timestamp after its value.
func hasTimestamps(head []byte) bool {
	if len(head) > headSize {
		head = head[:headSize]
	}
	for len(head) > 0 {
		nl := bytes.IndexByte(head, '\n')
		if nl < 0 {
			return false // an incomplete last line says nothing
		}
		line := bytes.TrimSpace(head[:nl])
		head = head[nl+1:]
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		rest := line
		if i := bytes.LastIndexByte(line, '}'); i >= 0 {
			rest = line[i+1:]
		} else if i := bytes.IndexByte(line, ' '); i >= 0 {
			rest = line[i:]
		} else {
			return false
		}
		if i := bytes.Index(rest, []byte(" # ")); i >= 0 {
			rest = rest[:i] // an OpenMetrics exemplar
		}
		return len(bytes.Fields(rest)) >= 2
	}
	return false
}
