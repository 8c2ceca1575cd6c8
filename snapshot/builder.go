package snapshot

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/whyslow/whyslow/histogram"
	"github.com/whyslow/whyslow/snapshot/internal/dumpdir"
)

// A Builder accumulates dumps and Evidence into one Evidence: the
// samples of one target, whatever file they come from, form one timeline;
// samples of one target at one instant from several files (vLLM's dump and
// the GPU exporter's) form one Scrape; a series repeated at the same
// instant is a duplicate, reported and dropped.
//
// A Builder interns what it has seen: the text of a series met in an
// earlier dump is not parsed into labels again, so reading many dumps of
// one fleet costs little more than tokenising them.
//
// The zero Builder is not usable; call NewBuilder. A Builder is not safe
// for concurrent use.
type Builder struct {
	opts    Options
	lim     Limits
	metrics map[string]bool // Options.Metrics as a set; nil keeps all
	listed  map[string]bool // the sample names of Options.LabelsOnly: kept without samples
	// listedOwn: listed is the Builder's own, not shared (newBuilder).
	listedOwn bool
	minT      int64
	maxT      int64

	targets  map[string]*targetB
	sources  []string
	problems []Problem
	total    int64 // decompressed bytes read so far
	mem      int64 // bytes kept since the last reservation against opts.Memory

	// raw maps the exposed text of a series ("name{labels}") to what it
	// means; idents maps an identity key to the canonical identity, so
	// that two spellings of one series (other label order, le="1" and
	// le="1.0") share one Series.
	raw    map[string]*seriesInfo
	idents map[string]*ident
	ctxs   map[string][]*typeCtx
	names  map[string]string // interned metric names
	keyBuf []byte

	fs fileState // the file being parsed; reused
	// watch is the ReadWatch of Read's context, told each input read.
	watch *ReadWatch
	// readAt is when the stream being parsed was read, for a dump read
	// live from a pipe or FIFO; zero otherwise (see TimeFromReadTime).
	readAt time.Time

	seen    map[dumpdir.Key]string // regular files read (or listed), by identity -> first path
	fileSeq int                    // number of dump files parsed so far
	merging bool                   // Merge: no checks of time (see checkTimes)
	adopt   bool                   // AddEvidence may take the input's slices (addSource: the input is the builder's own)
	whole   *Evidence              // the first input, taken whole (takeWhole); nil once merged

	// perTarget: the Builder holds one target of a ReadEach; Evidence
	// leaves out the scrapes at dropAt (the target's time outliers, found
	// over the whole evidence) instead of searching outliers among its
	// own scrapes.
	perTarget bool
	dropAt    map[int64]bool
	checksAt  int // len(problems) when checkTimes began
}

// NewBuilder returns an empty Builder reading with opts.
func NewBuilder(opts Options) *Builder {
	b := newBuilder(opts, listedNames(opts), metricNames(opts))
	b.listedOwn = true
	return b
}

// listedNames returns the sample names of opts.LabelsOnly, which a
// Builder keeps without samples; nil when it lists none.
func listedNames(opts Options) map[string]bool {
	if len(opts.LabelsOnly) == 0 {
		return nil
	}
	listed := map[string]bool{}
	for _, n := range (Options{Metrics: opts.LabelsOnly}).MetricSampleNames() {
		listed[n] = true
	}
	return listed
}

// metricNames returns the names of opts.Metrics, which a Builder keeps;
// nil (every name) when it lists none.
func metricNames(opts Options) map[string]bool {
	if len(opts.Metrics) == 0 {
		return nil
	}
	metrics := make(map[string]bool, len(opts.Metrics))
	for _, m := range opts.Metrics {
		metrics[m] = true
	}
	return metrics
}

// newBuilder returns an empty Builder reading with opts whose listed and
// metrics sets are given (those of opts, made once for many Builders:
// neither is modified, see list).
func newBuilder(opts Options, listed, metrics map[string]bool) *Builder {
	lim := opts.Limits.withDefaults()
	if opts.Memory == nil {
		opts.Memory = NewMemoryBudget(lim.MaxMemory)
	}
	b := &Builder{
		opts:    opts,
		lim:     lim,
		minT:    math.MinInt64,
		maxT:    math.MaxInt64,
		targets: map[string]*targetB{},
		raw:     map[string]*seriesInfo{},
		idents:  map[string]*ident{},
		ctxs:    map[string][]*typeCtx{},
		names:   map[string]string{},
		listed:  listed,
		metrics: metrics,
	}
	if !opts.Start.IsZero() {
		b.minT = opts.Start.UnixMilli()
	}
	if !opts.End.IsZero() {
		b.maxT = opts.End.UnixMilli()
	}
	return b
}

// typeCtx is an interned "# TYPE name type" line; samples are classified
// under the last one met. Pointer identity stands for (name, type).
type typeCtx struct {
	name string
	typ  model.MetricType
}

func (b *Builder) typeCtx(name []byte, typ model.MetricType) *typeCtx {
	for _, c := range b.ctxs[string(name)] {
		if c.typ == typ {
			return c
		}
	}
	c := &typeCtx{name: string(name), typ: typ}
	b.ctxs[c.name] = append(b.ctxs[c.name], c)
	return c
}

// part says what a sample is within its family.
type part uint8

const (
	partFloat part = iota
	partBucket
	partSum
	partCount
)

// ident is the identity of a float series or of a classic histogram
// (labels without le), independent of the target.
type ident struct {
	family   string
	typ      model.MetricType
	inferred bool
	hist     bool
	name     string        // sample name; "" for histograms
	lset     labels.Labels // without __name__ (and le)
}

// seriesInfo is what the text of one series means under one TYPE context.
type seriesInfo struct {
	ctx      *typeCtx
	drop     bool // filtered out, or not data (_created)
	volatile bool // classification depends on the file; not cached
	id       *ident
	part     part
	le       float64
	needST   bool   // OpenMetrics counter, histogram or summary sample
	check    uint8  // value check of a float sample; 0 none
	target   string // from the pod or instance label; "" = from the path
	from     string // "pod" or "instance"

	// Cache of the target-level slot for the last target seen.
	lastTB *targetB
	lastS  *seriesB
	lastH  *histB
}

type targetB struct {
	name, from string
	firstFile  string
	scrapes    map[int64]*Scrape
	fams       map[string]*famB
	series     map[*ident]*seriesB
	hists      map[*ident]*histB
}

type famB struct {
	gen      int // Builder.fileSeq when created
	f        *Family
	series   []*seriesB
	hists    []*histB
	conflict bool
}

type seriesB struct {
	s        Series
	tb       *targetB
	unsorted bool
}

type histB struct {
	tb       *targetB
	fam      *famB
	lset     labels.Labels
	hs       []*HistogramSeries
	unsorted bool
}

// target returns the target named name, creating it.
func (b *Builder) target(name, from string) *targetB {
	b.mergeWhole()
	tb := b.targets[name]
	if tb == nil {
		tb = &targetB{
			name: name, from: from,
			scrapes: map[int64]*Scrape{},
			fams:    map[string]*famB{},
			series:  map[*ident]*seriesB{},
			hists:   map[*ident]*histB{},
		}
		b.targets[name] = tb
	} else if NameFromRank(from) < NameFromRank(tb.from) {
		tb.from = from
	}
	return tb
}

// family returns the family of id in tb, creating it, and reconciles
// declared and inferred types.
func (b *Builder) family(tb *targetB, name string, typ model.MetricType, inferred bool, file string) *famB {
	fb := tb.fams[name]
	if fb == nil {
		fb = &famB{f: &Family{Name: name, Type: typ, TypeInferred: inferred}, gen: b.fileSeq}
		tb.fams[name] = fb
		return fb
	}
	switch {
	case fb.f.Type == typ:
		if !inferred {
			fb.f.TypeInferred = false
		}
	case fb.f.TypeInferred && !inferred:
		fb.f.Type, fb.f.TypeInferred = typ, false
	case !fb.f.TypeInferred && inferred:
	case !fb.conflict:
		fb.conflict = true
		b.problems = append(b.problems, Problem{Severity: SeverityWarning, File: file, Offset: -1, Family: name,
			Err: fmt.Errorf("%w: %s and %s in target %s; keeping %s", ErrTypeConflict, fb.f.Type, typ, escapeName(tb.name), fb.f.Type)})
	}
	return fb
}

func (b *Builder) seriesSlot(tb *targetB, id *ident, file string) *seriesB {
	sb := tb.series[id]
	if sb == nil {
		fb := b.family(tb, id.family, id.typ, id.inferred, file)
		sb = &seriesB{s: Series{Name: id.name, Labels: id.lset}, tb: tb}
		tb.series[id] = sb
		fb.series = append(fb.series, sb)
	}
	return sb
}

func (b *Builder) histSlot(tb *targetB, id *ident, file string) *histB {
	hb := tb.hists[id]
	if hb == nil {
		fb := b.family(tb, id.family, id.typ, id.inferred, file)
		hb = &histB{tb: tb, fam: fb, lset: id.lset}
		tb.hists[id] = hb
		fb.hists = append(fb.hists, hb)
	}
	return hb
}

// internIdent returns the canonical identity for the fields of id, whose
// labels are given as ls: the labels as read, possibly with __name__, le
// (dropped for histograms) and empty values (dropped). id.lset is built
// from ls only when the identity is new.
func (b *Builder) internIdent(id ident, ls labels.Labels) *ident {
	key := b.keyBuf[:0]
	if id.hist {
		key = append(key, 'h')
	} else {
		key = append(key, 'f')
	}
	key = append(key, id.family...)
	key = append(key, 0xff)
	key = append(key, id.name...)
	dropped, hasName := false, false
	ls.Range(func(l labels.Label) {
		if l.Name == model.MetricNameLabel {
			hasName = true
			return
		}
		if l.Value == "" || (id.hist && l.Name == model.BucketLabel) {
			dropped = true
			return
		}
		key = append(key, 0xff)
		key = append(key, l.Name...)
		key = append(key, 0xfe)
		key = append(key, l.Value...)
	})
	b.keyBuf = key
	if c := b.idents[string(key)]; c != nil {
		return c
	}
	id.lset = ls
	switch {
	case hasName && !dropped:
		id.lset = ls.DropReserved(func(n string) bool { return n == model.MetricNameLabel }) // no copy
	case dropped:
		lb := labels.NewScratchBuilder(ls.Len())
		ls.Range(func(l labels.Label) {
			if l.Name == model.MetricNameLabel || l.Value == "" || (id.hist && l.Name == model.BucketLabel) {
				return
			}
			lb.Add(l.Name, l.Value)
		})
		id.lset = lb.Labels() // already sorted
	}
	c := &id
	b.idents[string(key)] = c
	b.mem += int64(len(key)) + 64 // the labels, the key and the series' headers
	return c
}

// placeAfter compares t with the last time of ts: dup when equal (a
// duplicate sample), early when before it (the samples need sorting).
func placeAfter(ts []int64, t int64) (dup, early bool) {
	if n := len(ts); n > 0 {
		return t == ts[n-1], t < ts[n-1]
	}
	return false, false
}

// append adds one float sample; it reports false for a duplicate (a
// sample at a time already held as the last one).
func (sb *seriesB) append(t int64, v float64, st int64) bool {
	s := &sb.s
	dup, early := placeAfter(s.T, t)
	if dup {
		return false
	}
	sb.unsorted = sb.unsorted || early
	if st != 0 && s.StartT == nil {
		s.StartT = make([]int64, len(s.T), cap(s.T))
	}
	s.T = append(s.T, t)
	s.V = append(s.V, v)
	if s.StartT != nil {
		s.StartT = append(s.StartT, st)
	}
	return true
}

// adopt takes the samples of s as the series' own, without copying, when
// the series holds none yet and s's times increase strictly: what append
// would build sample by sample. The slices are capped at their length, so
// a later append copies them. Only for inputs the builder owns
// (Builder.adopt).
func (sb *seriesB) adopt(s *Series) bool {
	if len(sb.s.T) > 0 || len(s.V) != len(s.T) || (s.StartT != nil && len(s.StartT) != len(s.T)) || !strictlyIncreasing(s.T) {
		return false
	}
	n := len(s.T)
	sb.s.T, sb.s.V = s.T[:n:n], s.V[:n:n]
	if slices.ContainsFunc(s.StartT, func(st int64) bool { return st != 0 }) {
		sb.s.StartT = s.StartT[:n:n]
	}
	return true
}

// adopt is seriesB.adopt for a histogram series: taken whole as the first
// segment when the series holds none yet.
func (hb *histB) adopt(h *HistogramSeries) bool {
	n := len(h.T)
	if len(hb.hs) > 0 || n == 0 || len(h.Counts) != n*len(h.Bounds) || len(h.Sum) != n || len(h.Count) != n || !strictlyIncreasing(h.T) {
		return false
	}
	c := n * len(h.Bounds)
	hb.hs = []*HistogramSeries{{Labels: hb.lset, Bounds: slices.Clone(h.Bounds),
		T: h.T[:n:n], Counts: h.Counts[:c:c], Sum: h.Sum[:n:n], Count: h.Count[:n:n]}}
	return true
}

// strictlyIncreasing reports whether every time is after the one before.
func strictlyIncreasing(t []int64) bool {
	for i := 1; i < len(t); i++ {
		if t[i] <= t[i-1] {
			return false
		}
	}
	return true
}

// append adds one histogram sample, starting a new HistogramSeries when
// the bucket layout differs from the current one. It reports false for a
// duplicate.
func (hb *histB) append(t int64, bounds, counts []float64, sum, count float64) bool {
	var hs *HistogramSeries
	if n := len(hb.hs); n > 0 && histogram.SameLayout(hb.hs[n-1].Bounds, bounds) {
		hs = hb.hs[n-1]
	} else {
		for _, o := range hb.hs {
			if len(o.T) > 0 && o.T[len(o.T)-1] == t {
				return false // same instant under another layout
			}
		}
		hs = &HistogramSeries{Labels: hb.lset, Bounds: slices.Clone(bounds)}
		hb.hs = append(hb.hs, hs)
	}
	dup, early := placeAfter(hs.T, t)
	if dup {
		return false
	}
	hb.unsorted = hb.unsorted || early
	hs.T = append(hs.T, t)
	hs.Counts = append(hs.Counts, counts...)
	hs.Sum = append(hs.Sum, sum)
	hs.Count = append(hs.Count, count)
	return true
}

// scrape records that tb was observed at t from file.
func (tb *targetB) scrape(t int64, from TimeSource, file string) {
	sc := tb.scrapes[t]
	if sc == nil {
		sc = &Scrape{Time: time.UnixMilli(t).UTC(), TimeFrom: from}
		tb.scrapes[t] = sc
	} else if from < sc.TimeFrom {
		sc.TimeFrom = from
	}
	if file != "" && (len(sc.Files) == 0 || sc.Files[len(sc.Files)-1] != file) && !slices.Contains(sc.Files, file) {
		sc.Files = append(sc.Files, file)
	}
	if tb.firstFile == "" {
		tb.firstFile = file
	}
}

// keep reports whether Options.Metrics keeps a family or sample name.
func (b *Builder) keep(family, name string) bool {
	return b.metrics == nil || b.metrics[family] || b.metrics[name]
}

// AddEvidence merges e into the Builder: its targets join the targets of
// the same name, its series the series with the same labels, and its
// sources and problems are kept. e is not modified; its sample slices are
// copied.
func (b *Builder) AddEvidence(e *Evidence) {
	if e == nil {
		return
	}
	if b.takeWhole(e) {
		return
	}
	b.sources = append(b.sources, e.Sources...)
	b.problems = append(b.problems, e.Problems...)
	b.addTargets(e.Targets)
}

// addTargets is AddEvidence's merge of targets.
func (b *Builder) addTargets(targets []*Target) {
	for _, t := range targets {
		tb := b.target(t.Name, t.NameFrom)
		for _, sc := range t.Scrapes {
			ms := sc.Time.UnixMilli()
			tb.scrape(ms, sc.TimeFrom, "")
			s := tb.scrapes[ms]
			for _, f := range sc.Files {
				if !slices.Contains(s.Files, f) {
					s.Files = append(s.Files, f)
				}
			}
			if tb.firstFile == "" && len(sc.Files) > 0 {
				tb.firstFile = sc.Files[0]
			}
		}
		for _, name := range t.FamilyNames() {
			f := t.Families[name]
			fb := b.family(tb, f.Name, f.Type, f.TypeInferred, "")
			if fb.f.Help == "" {
				fb.f.Help = f.Help
			}
			if fb.f.Unit == "" {
				fb.f.Unit = f.Unit
			}
			for _, s := range f.Series {
				id := b.internIdent(ident{family: f.Name, typ: f.Type, inferred: f.TypeInferred, name: s.Name}, s.Labels)
				sb := b.seriesSlot(tb, id, "")
				if b.adopt && sb.adopt(s) {
					continue
				}
				dups := 0
				for i, ts := range s.T {
					st := int64(0)
					if s.StartT != nil {
						st = s.StartT[i]
					}
					if !sb.append(ts, s.V[i], st) {
						dups++
					}
				}
				b.noteMergeDups(tb, f.Name, s.Name, s.Labels, dups)
			}
			for _, h := range f.Histograms {
				id := b.internIdent(ident{family: f.Name, typ: f.Type, inferred: f.TypeInferred, hist: true}, h.Labels)
				hb := b.histSlot(tb, id, "")
				if b.adopt && hb.adopt(h) {
					continue
				}
				n, dups := len(h.Bounds), 0
				for i, ts := range h.T {
					if !hb.append(ts, h.Bounds, h.Counts[i*n:(i+1)*n], h.Sum[i], h.Count[i]) {
						dups++
					}
				}
				b.noteMergeDups(tb, f.Name, f.Name, h.Labels, dups)
			}
		}
	}
}

func (b *Builder) noteMergeDups(tb *targetB, family, name string, lset labels.Labels, dups int) {
	if dups == 0 {
		return
	}
	b.problems = append(b.problems, Problem{Severity: SeverityWarning, File: tb.firstFile, Offset: -1, Family: family,
		Err: fmt.Errorf("%w: %s of target %s: %d samples at instants already held, dropped", ErrDuplicateSeries, seriesString(name, lset), escapeName(tb.name), dups)})
}

// Merge combines several Evidence values into one, as Builder.AddEvidence
// does: same target name, one timeline; samples of one instant from
// several inputs, one Scrape; a series repeated at one instant, a
// duplicate Problem. The inputs are not modified.
func Merge(evs ...*Evidence) *Evidence {
	b := NewBuilder(Options{})
	b.merging = true // each input was checked when it was read
	for _, e := range evs {
		b.AddEvidence(e)
	}
	return b.Evidence()
}

// Evidence returns everything added so far, sorted as Evidence documents.
// The Builder must not be used afterwards.
func (b *Builder) Evidence() *Evidence {
	e := &Evidence{Sources: b.sources}
	if w := b.whole; w != nil {
		// Taken whole (takeWhole): nothing else was added.
		e.Targets, b.whole = w.Targets, nil
	}
	names := slices.Sorted(maps.Keys(b.targets))
	for _, n := range names {
		tb := b.targets[n]
		t := &Target{Name: tb.name, NameFrom: tb.from, Families: make(map[string]*Family, len(tb.fams))}
		for _, sc := range tb.scrapes {
			t.Scrapes = append(t.Scrapes, *sc)
		}
		slices.SortFunc(t.Scrapes, func(a, c Scrape) int { return a.Time.Compare(c.Time) })
		for name, fb := range tb.fams {
			t.Families[name] = b.finishFamily(tb, fb)
		}
		e.Targets = append(e.Targets, t)
	}
	if !b.merging && !b.perTarget {
		e.Targets = b.joinScrapesOfOneTarget(e.Targets)
	}
	if !b.merging {
		b.checkTimes(e)
	}
	e.Problems = b.problems
	b.targets = nil
	return e
}

func (b *Builder) finishFamily(tb *targetB, fb *famB) *Family {
	f := fb.f
	f.Series = make([]*Series, 0, len(fb.series))
	for _, sb := range fb.series {
		if sb.unsorted {
			if d := sortSeries(&sb.s); d > 0 {
				b.noteMergeDups(tb, f.Name, sb.s.Name, sb.s.Labels, d)
			}
		}
		if len(sb.s.T) > 0 || (b.listed[sb.s.Name] && labelsOnly(&sb.s)) {
			f.Series = append(f.Series, &sb.s)
		}
	}
	slices.SortFunc(f.Series, func(x, y *Series) int {
		if c := cmp.Compare(x.Name, y.Name); c != 0 {
			return c
		}
		return labels.Compare(x.Labels, y.Labels)
	})
	for _, hb := range fb.hists {
		for _, hs := range hb.hs {
			if hb.unsorted {
				if d := sortHistSeries(hs); d > 0 {
					b.noteMergeDups(tb, f.Name, f.Name, hs.Labels, d)
				}
			}
			if len(hs.T) > 0 || (b.listed[f.Name] && labelsOnlyHist(hs)) {
				f.Histograms = append(f.Histograms, hs)
			}
		}
	}
	slices.SortFunc(f.Histograms, func(x, y *HistogramSeries) int {
		if c := labels.Compare(x.Labels, y.Labels); c != 0 {
			return c
		}
		if len(x.T) == 0 || len(y.T) == 0 {
			return cmp.Compare(len(x.T), len(y.T)) // read by labels alone
		}
		return cmp.Compare(x.T[0], y.T[0])
	})
	return f
}

// timeOrder returns the indexes of t in time order; equal times keep
// their order.
func timeOrder(t []int64) []int {
	idx := make([]int, len(t))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, c int) int { return cmp.Compare(t[a], t[c]) })
	return idx
}

// sortSeries sorts s by time and drops all but the first sample of each
// instant; it returns the number dropped.
func sortSeries(s *Series) (dups int) {
	idx := timeOrder(s.T)
	t := make([]int64, 0, len(idx))
	v := make([]float64, 0, len(idx))
	var st []int64
	if s.StartT != nil {
		st = make([]int64, 0, len(idx))
	}
	for _, i := range idx {
		if len(t) > 0 && t[len(t)-1] == s.T[i] {
			dups++
			continue
		}
		t = append(t, s.T[i])
		v = append(v, s.V[i])
		if st != nil {
			st = append(st, s.StartT[i])
		}
	}
	s.T, s.V, s.StartT = t, v, st
	return dups
}

// sortHistSeries is sortSeries for histograms.
func sortHistSeries(h *HistogramSeries) (dups int) {
	idx := timeOrder(h.T)
	n := len(h.Bounds)
	t := make([]int64, 0, len(idx))
	counts := make([]float64, 0, len(h.Counts))
	sum := make([]float64, 0, len(idx))
	count := make([]float64, 0, len(idx))
	for _, i := range idx {
		if len(t) > 0 && t[len(t)-1] == h.T[i] {
			dups++
			continue
		}
		t = append(t, h.T[i])
		counts = append(counts, h.Counts[i*n:(i+1)*n]...)
		sum = append(sum, h.Sum[i])
		count = append(count, h.Count[i])
	}
	h.T, h.Counts, h.Sum, h.Count = t, counts, sum, count
	return dups
}
