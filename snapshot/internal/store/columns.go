package store

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	promhistogram "github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/whyslow/whyslow/histogram"
	"github.com/whyslow/whyslow/snapshot"
)

// Columns collects float series read from a store that keeps no metric
// types (a TSDB's blocks and head, a Prometheus-compatible server's query
// API) and builds Evidence from them: samples columnar per series, labels
// once; then, in Evidence, series classified by name and labels (classic
// histograms from their _bucket, _sum and _count series, summaries from
// quantile, counters from _total, the rest untyped), grouped into targets
// (exported_pod, else pod, instance, job, else the source's name) and
// scrapes (one per distinct sample time). One path for every such
// reader, so that the same samples give the same Evidence from a
// directory and from a server.
//
// Samples of a series may be added in any order, over several calls (one
// block after another, time ranges answered apart): Evidence sorts them
// and keeps the first of repeated instants. Limits apply as they are
// added (Limits.MaxLabelBytes, MaxSeriesPerScrape per target, and after
// each series through Charge, MaxTotalBytes and the Options.Memory
// budget). A Columns is not safe for concurrent use.
type Columns struct {
	dir      string
	opts     snapshot.Options
	lim      snapshot.Limits
	series   map[uint64][]*Column
	nseries  map[string]int // series per target name
	bytes    int64          // approximate memory held by samples and labels
	reserved int64          // bytes reserved against opts.Memory
	full     bool           // a limit was reached: stop reading
	problems []snapshot.Problem
}

// NewColumns returns an empty Columns for the evidence of source (a
// directory or a redacted URL, named in problems and used as the target
// name of series with no target label), read with opts (Metrics filters
// families in Evidence; Limits and Memory bound what is kept; TargetName
// renames targets).
func NewColumns(source string, opts snapshot.Options) *Columns {
	lim := opts.Limits.WithDefaults()
	if opts.Memory == nil {
		opts.Memory = snapshot.NewMemoryBudget(lim.MaxMemory)
	}
	return &Columns{
		dir:     source,
		opts:    opts,
		lim:     lim,
		series:  map[uint64][]*Column{},
		nseries: map[string]int{},
	}
}

// Column is one series of a Columns as read, before it is classified:
// labels (with __name__) once, float samples columnar, native histogram
// samples with custom buckets (NHCB) as classic rows apart.
type Column struct {
	cols *Columns
	lset labels.Labels // with __name__
	t    []int64
	v    []float64
	// unordered: a sample appended at or before the one before it (blocks
	// that overlap); normalize sorts only then.
	unordered bool
	// run is where the samples of the last AppendFloats begin in t (-1
	// before the first): the column appended after it in the same source
	// may share t (see AppendFloats).
	run int
	nh  *nhcbRows
	// exp counts native histogram samples with exponential buckets,
	// dropped.
	exp int
	// labelsOnly: a series listed by its labels alone (KeepLabels).
	labelsOnly bool
}

// nhcbRows holds the NHCB samples of one series as classic rows.
type nhcbRows struct {
	layouts [][]float64 // distinct bucket layouts (upper bounds, +Inf last)
	t       []int64
	lay     []int32 // layout of each row
	off     []int32 // start of each row in counts
	counts  []float64
	sum     []float64
	count   []float64
}

// Problem records a problem of the source read, at file (a block, a
// segment, a URL).
func (a *Columns) Problem(sev snapshot.Severity, file string, err error) {
	a.problem(sev, file, err)
}

// ProblemAt records problem p of the source read, located by its File
// and Offset.
func (a *Columns) ProblemAt(p snapshot.Problem) { a.problems = append(a.problems, p) }

func (a *Columns) problem(sev snapshot.Severity, file string, err error) {
	a.problems = append(a.problems, snapshot.Problem{Severity: sev, File: file, Offset: -1, Err: err})
}

// Full reports whether a limit stopped the reading: further samples are
// not wanted.
func (a *Columns) Full() bool { return a.full }

// Charge accounts the samples added since the last call against
// Options.Memory and Limits.MaxTotalBytes. It returns the budget's error
// (*LimitError) when the memory budget is exceeded; past MaxTotalBytes it
// records a problem at src instead, and the result is partial. Either way
// Full is then true. Call it after each series, or after each batch.
func (a *Columns) Charge(src string) error {
	if err := a.opts.Memory.Reserve(a.bytes-a.reserved, a.dir); err != nil {
		a.full = true
		return err
	}
	a.reserved = a.bytes
	if a.bytes > a.lim.MaxTotalBytes {
		a.full = true
		a.problem(snapshot.SeverityError, src, fmt.Errorf("%w: samples read exceed snapshot.Limits.MaxTotalBytes (%d bytes); reading stopped, result is partial", snapshot.ErrLimit, a.lim.MaxTotalBytes))
	}
	return nil
}

// Bytes returns the approximate memory held by the samples and labels
// added so far, what Charge counts.
func (a *Columns) Bytes() int64 { return a.bytes }

// Release returns what Charge reserved against Options.Memory, for a
// reader that hands the Evidence over and lets it go (ReadEach, target by
// target).
func (a *Columns) Release() {
	a.opts.Memory.Release(a.reserved)
	a.reserved = 0
}

// TargetName returns the name of the target the series lset (with
// __name__) belongs to, and where the name comes from, as Evidence names
// it: exported_pod, else pod, instance, job, else the source's name; then
// Options.TargetName.
func (a *Columns) TargetName(lset labels.Labels) (name, from string) { return a.targetName(lset) }

// Series returns the column for the series lset (with __name__), creating
// it; nil when a limit forbids a new series (the problem is recorded at
// src): its samples are then not wanted.
func (a *Columns) Series(src string, lset labels.Labels) *Column {
	h := lset.Hash()
	for _, r := range a.series[h] {
		if labels.Equal(r.lset, lset) {
			return r
		}
	}
	if n := lset.ByteSize(); n > uint64(a.lim.MaxLabelBytes) {
		a.problem(snapshot.SeverityError, src, fmt.Errorf("%w: series %.200s: labels of %d bytes exceed snapshot.Limits.MaxLabelBytes (%d); dropped", snapshot.ErrLimit, lset.String(), n, a.lim.MaxLabelBytes))
		return nil
	}
	name, _ := a.targetName(lset)
	if a.nseries[name] == a.lim.MaxSeriesPerScrape {
		a.problem(snapshot.SeverityError, src, fmt.Errorf("%w: target %q: more than snapshot.Limits.MaxSeriesPerScrape (%d) series; further series dropped", snapshot.ErrLimit, name, a.lim.MaxSeriesPerScrape))
	}
	a.nseries[name]++
	if a.nseries[name] > a.lim.MaxSeriesPerScrape {
		return nil
	}
	r := &Column{cols: a, lset: lset, run: -1}
	a.series[h] = append(a.series[h], r)
	a.bytes += int64(lset.ByteSize()) + 64
	return r
}

// KeepLabels marks r as a series listed by its labels alone, its samples
// left out (Options.LabelsOnly): Evidence keeps it without samples where
// it leaves out a series that has none, and a classic histogram whose
// bucket series are all such comes with its Bounds and no rows. Samples
// added to r are kept as usual.
func (r *Column) KeepLabels() { r.labelsOnly = true }

// Append adds a float sample (AppendFloats of one).
func (r *Column) Append(t int64, v float64) {
	r.AppendFloats([]int64{t}, []float64{v}, nil, 1)
}

// AppendFloats adds float samples at the times ts with the values vs
// (len(vs) == len(ts)), as Append would one by one, with room made for
// grow samples in all (at least len(ts)): those of later sources too.
//
// like is the column given samples just before r in the same source, or
// nil. When like was given the same times ts, and r holds the times that
// like held before them (none, or a view of the same times), r shares
// like's times instead of a copy of them: series scraped together have the
// same timestamps, and they are half of a column's bytes. Shared times are
// never written in place: a column's times only grow, and those of a
// column that shares them are capped at their length, so that appending
// to it copies them first.
func (r *Column) AppendFloats(ts []int64, vs []float64, like *Column, grow int) {
	if len(ts) == 0 {
		return
	}
	before := len(r.t)
	r.cols.bytes += int64(len(ts)) * snapshot.FloatSampleBytes
	r.v = append(slices.Grow(r.v, max(grow, len(vs))), vs...)
	if r.sharesTimes(ts, like) {
		r.t, r.run = like.t[:len(like.t):len(like.t)], before
		return
	}
	ordered := before == 0 || ts[0] > r.t[before-1]
	for i := 1; ordered && i < len(ts); i++ {
		ordered = ts[i] > ts[i-1]
	}
	r.unordered = r.unordered || !ordered
	r.t = append(slices.Grow(r.t, max(grow, len(ts))), ts...)
	r.run = before
}

// sharesTimes reports whether r, given the times ts, may share like's
// times (see AppendFloats): like is ordered, was given exactly ts last,
// and r's times are those like held before them.
func (r *Column) sharesTimes(ts []int64, like *Column) bool {
	if like == nil || like == r || like.unordered || like.run != len(r.t) || len(ts) == 0 || len(like.t)-like.run != len(ts) {
		return false
	}
	if len(r.t) > 0 && (&r.t[0] != &like.t[0] || ts[0] <= r.t[len(r.t)-1]) {
		return false
	}
	return slices.Equal(like.t[like.run:], ts)
}

// AppendNHCB adds a native histogram sample with custom buckets as a
// classic row (histogram.FromNHCB); one with exponential buckets is
// counted and dropped (a problem, ErrExponentialHistogram, in Evidence).
func (r *Column) AppendNHCB(t int64, fh *promhistogram.FloatHistogram) error {
	if !fh.UsesCustomBuckets() {
		r.exp++
		return nil
	}
	if err := r.addNHCB(t, fh); err != nil {
		return err
	}
	r.cols.bytes += int64(len(fh.CustomValues)+4) * 8
	return nil
}

// Times returns the distinct times (ms, ascending) of the samples held,
// float and NHCB, of every target: those of which Evidence makes the
// targets' Scrapes. The result must not be modified.
func (a *Columns) Times() []int64 {
	var all []int64
	add := func(t []int64) {
		if !sortedDistinct(t) {
			t = slices.Clone(t)
			slices.Sort(t)
			t = slices.Compact(t)
		}
		all = unionSorted(all, t)
	}
	for _, rs := range a.series {
		for _, r := range rs {
			add(r.t)
			if r.nh != nil {
				add(r.nh.t)
			}
		}
	}
	return all
}

// Evidence classifies the series read into targets and families. The
// Columns must not be used after.
func (a *Columns) Evidence() *snapshot.Evidence { return a.evidence() }

// addNHCB appends an NHCB sample as a classic row, converted by
// histogram.FromNHCB.
func (r *Column) addNHCB(t int64, fh *promhistogram.FloatHistogram) error {
	h, err := histogram.FromNHCB(fh)
	if err != nil {
		return err
	}
	if r.nh == nil {
		r.nh = &nhcbRows{}
	}
	nh := r.nh
	lay := -1
	if k := len(nh.layouts) - 1; k >= 0 && slices.Equal(nh.layouts[k], h.Bounds) {
		lay = k
	} else {
		for i, l := range nh.layouts {
			if slices.Equal(l, h.Bounds) {
				lay = i
				break
			}
		}
	}
	if lay < 0 {
		nh.layouts = append(nh.layouts, h.Bounds)
		lay = len(nh.layouts) - 1
	}
	nh.t = append(nh.t, t)
	nh.lay = append(nh.lay, int32(lay))
	nh.off = append(nh.off, int32(len(nh.counts)))
	nh.counts = append(nh.counts, h.Counts...)
	nh.sum = append(nh.sum, h.Sum)
	nh.count = append(nh.count, h.Count)
	return nil
}

// targetName names the target of a series: exported_pod, else pod, else
// instance, else job, else the directory; then the caller's override.
// exported_pod comes first because a GPU exporter scraped through
// Kubernetes service discovery keeps the workload's pod there, while pod
// is the exporter's own.
func (a *Columns) targetName(lset labels.Labels) (name, from string) {
	switch {
	case lset.Get("exported_pod") != "":
		name, from = lset.Get("exported_pod"), "pod"
	case lset.Get("pod") != "":
		name, from = lset.Get("pod"), "pod"
	case lset.Get("instance") != "":
		name, from = lset.Get("instance"), "instance"
	case lset.Get("job") != "":
		name, from = lset.Get("job"), "tsdb"
	default:
		name, from = filepath.Base(a.dir), "tsdb"
	}
	if a.opts.TargetName != nil {
		if o := a.opts.TargetName(a.dir, name); o != name {
			name, from = o, "override"
		}
	}
	return name, from
}

// evidence classifies the series read into targets and families.
func (a *Columns) evidence() *snapshot.Evidence {
	ev := &snapshot.Evidence{Sources: []string{a.dir}}
	type tgt struct {
		from string
		raws []*Column
	}
	targets := map[string]*tgt{}
	for _, rs := range a.series {
		for _, r := range rs {
			r.normalize()
			if len(r.t) == 0 && r.exp == 0 && (r.nh == nil || len(r.nh.t) == 0) && !r.labelsOnly {
				continue
			}
			name, from := a.targetName(r.lset)
			t := targets[name]
			if t == nil {
				t = &tgt{from: from}
				targets[name] = t
			} else if snapshot.NameFromRank(from) < snapshot.NameFromRank(t.from) {
				t.from = from // as the snapshot.Builder names a target of several sources
			}
			t.raws = append(t.raws, r)
		}
	}
	a.series = nil // let the raws go as they are converted
	keep := columnKeepFamily(a.opts.Metrics)
	for name, t := range targets {
		tg := &snapshot.Target{Name: name, NameFrom: t.from, Families: map[string]*snapshot.Family{}}
		a.buildFamilies(tg, t.raws)
		t.raws = nil // the bucket series are copied into rows: free them target by target
		for fname := range tg.Families {
			if !keep(tg.Families[fname]) {
				delete(tg.Families, fname)
			}
		}
		tg.Scrapes = columnScrapes(tg)
		if len(tg.Scrapes) == 0 && len(tg.Families) == 0 {
			continue
		}
		ev.Targets = append(ev.Targets, tg)
	}
	sort.Slice(ev.Targets, func(i, j int) bool { return ev.Targets[i].Name < ev.Targets[j].Name })
	ev.Problems = a.problems
	return ev
}

// normalize sorts a raw's samples by time and drops repeated timestamps
// (the first wins), needed only when blocks overlap.
func (r *Column) normalize() {
	if r.unordered {
		r.unordered = false
		idx := make([]int, len(r.t))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(i, j int) bool { return r.t[idx[i]] < r.t[idx[j]] })
		t := make([]int64, 0, len(idx))
		v := make([]float64, 0, len(idx))
		for _, i := range idx {
			if len(t) > 0 && t[len(t)-1] == r.t[i] {
				continue
			}
			t = append(t, r.t[i])
			v = append(v, r.v[i])
		}
		r.t, r.v = t, v
	}
	if nh := r.nh; nh != nil && !sortedDistinct(nh.t) {
		idx := make([]int, len(nh.t))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(i, j int) bool { return nh.t[idx[i]] < nh.t[idx[j]] })
		out := &nhcbRows{layouts: nh.layouts}
		for _, i := range idx {
			if len(out.t) > 0 && out.t[len(out.t)-1] == nh.t[i] {
				continue
			}
			n := len(nh.layouts[nh.lay[i]])
			out.t = append(out.t, nh.t[i])
			out.lay = append(out.lay, nh.lay[i])
			out.off = append(out.off, int32(len(out.counts)))
			out.counts = append(out.counts, nh.counts[nh.off[i]:int(nh.off[i])+n]...)
			out.sum = append(out.sum, nh.sum[i])
			out.count = append(out.count, nh.count[i])
		}
		r.nh = out
	}
}

func sortedDistinct(t []int64) bool {
	for i := 1; i < len(t); i++ {
		if t[i] <= t[i-1] {
			return false
		}
	}
	return true
}

// columnKind is how a sample name was classified.
type columnKind struct {
	family string
	typ    model.MetricType
	part   string // "bucket", "sum", "count" of a histogram, or ""
}

// buildFamilies classifies a target's raws by name and labels and fills
// tg.Families.
func (a *Columns) buildFamilies(tg *snapshot.Target, raws []*Column) {
	byName := map[string][]*Column{}
	histBase := map[string]bool{}
	summaryBase := map[string]bool{}
	for _, r := range raws {
		name := r.lset.Get(model.MetricNameLabel)
		byName[name] = append(byName[name], r)
		if b, ok := strings.CutSuffix(name, "_bucket"); ok && b != "" && r.lset.Has("le") {
			histBase[b] = true
		}
		if r.lset.Has("quantile") {
			summaryBase[name] = true
		}
	}
	classify := func(name string) columnKind {
		if b, ok := strings.CutSuffix(name, "_bucket"); ok && histBase[b] {
			return columnKind{b, model.MetricTypeHistogram, "bucket"}
		}
		for _, suf := range []string{"_sum", "_count"} {
			if b, ok := strings.CutSuffix(name, suf); ok {
				if histBase[b] {
					return columnKind{b, model.MetricTypeHistogram, suf[1:]}
				}
				if summaryBase[b] {
					return columnKind{b, model.MetricTypeSummary, ""}
				}
			}
		}
		if summaryBase[name] {
			return columnKind{name, model.MetricTypeSummary, ""}
		}
		if strings.HasSuffix(name, "_total") {
			return columnKind{name, model.MetricTypeCounter, ""}
		}
		return columnKind{name, model.MetricTypeUnknown, ""}
	}
	family := func(name string, typ model.MetricType) *snapshot.Family {
		f := tg.Families[name]
		if f == nil {
			f = &snapshot.Family{Name: name, Type: typ, TypeInferred: true}
			tg.Families[name] = f
		}
		return f
	}

	// Classic histogram parts, grouped per family by labels without le.
	classic := map[string]map[uint64][]*columnHistParts{} // family -> hash -> groups
	var hbuf []byte

	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		k := classify(name)
		for _, r := range byName[name] {
			if r.exp > 0 {
				a.problems = append(a.problems, snapshot.Problem{Severity: snapshot.SeverityError, File: a.dir, Offset: -1, Family: name,
					Err: fmt.Errorf("%w: %d samples of %s dropped", snapshot.ErrExponentialHistogram, r.exp, r.lset)})
			}
			if r.nh != nil && len(r.nh.t) > 0 {
				f := family(name, model.MetricTypeHistogram)
				if len(f.Series) == 0 && len(r.t) == 0 {
					f.Type = model.MetricTypeHistogram
				}
				f.Histograms = append(f.Histograms, nhcbSeries(r)...)
			}
			if len(r.t) == 0 && !r.labelsOnly {
				continue
			}
			if k.part != "" {
				// Grouped by the labels without __name__ and le, built
				// once a group: a histogram has a series per bucket.
				var h uint64
				h, hbuf = r.lset.HashWithoutLabels(hbuf, labels.BucketLabel)
				fam := classic[k.family]
				if fam == nil {
					fam = map[uint64][]*columnHistParts{}
					classic[k.family] = fam
				}
				var g *columnHistParts
				for _, c := range fam[h] {
					if equalWithoutNameAndLe(r.lset, c.labels) {
						g = c
						break
					}
				}
				if g == nil {
					g = &columnHistParts{labels: labels.NewBuilder(r.lset).Del(model.MetricNameLabel, labels.BucketLabel).Labels()}
					fam[h] = append(fam[h], g)
				}
				switch k.part {
				case "bucket":
					g.buckets = append(g.buckets, r)
				case "sum":
					g.sum = r
				case "count":
					g.count = r
				}
				continue
			}
			f := family(k.family, k.typ)
			f.Series = append(f.Series, &snapshot.Series{
				Name:   name,
				Labels: r.lset.DropReserved(func(n string) bool { return n == model.MetricNameLabel }),
				T:      r.t,
				V:      r.v,
			})
		}
	}
	for fname, groups := range classic {
		f := family(fname, model.MetricTypeHistogram)
		f.Type = model.MetricTypeHistogram
		for _, gs := range groups {
			for _, g := range gs {
				hs, leftovers := a.assembleClassic(fname, g)
				f.Histograms = append(f.Histograms, hs...)
				f.Series = append(f.Series, leftovers...)
			}
		}
	}
	for _, f := range tg.Families {
		sort.Slice(f.Series, func(i, j int) bool {
			if f.Series[i].Name != f.Series[j].Name {
				return f.Series[i].Name < f.Series[j].Name
			}
			return labels.Compare(f.Series[i].Labels, f.Series[j].Labels) < 0
		})
		sort.Slice(f.Histograms, func(i, j int) bool {
			hi, hj := f.Histograms[i], f.Histograms[j]
			if c := labels.Compare(hi.Labels, hj.Labels); c != 0 {
				return c < 0
			}
			if len(hi.T) == 0 || len(hj.T) == 0 {
				return len(hi.T) < len(hj.T) // listed by labels alone (KeepLabels)
			}
			return hi.T[0] < hj.T[0]
		})
	}
}

// equalWithoutNameAndLe reports whether ls without __name__ and le is
// want (which holds neither), without building it.
func equalWithoutNameAndLe(ls, want labels.Labels) bool {
	n := ls.Len()
	if ls.Has(model.MetricNameLabel) {
		n--
	}
	if ls.Has(labels.BucketLabel) {
		n--
	}
	if n != want.Len() {
		return false
	}
	eq := true
	want.Range(func(l labels.Label) {
		if eq && ls.Get(l.Name) != l.Value {
			eq = false
		}
	})
	return eq
}

// columnHistParts are the float series of one classic histogram: its
// buckets, _sum and _count, sharing labels (without __name__ and le).
type columnHistParts struct {
	labels     labels.Labels
	buckets    []*Column
	sum, count *Column
}

// assembleClassic assembles the parts of one classic histogram into
// HistogramSeries, one per run of timestamps with the same set of buckets
// present: a layout change (other buckets after an upgrade) starts a new
// HistogramSeries. Parts that cannot be assembled (a bad le, a _sum or
// _count without buckets) are returned as float Series.
func (a *Columns) assembleClassic(family string, g *columnHistParts) (out []*snapshot.HistogramSeries, leftovers []*snapshot.Series) {
	asSeries := func(r *Column) *snapshot.Series {
		return &snapshot.Series{
			Name:   r.lset.Get(model.MetricNameLabel),
			Labels: labels.NewBuilder(r.lset).Del(model.MetricNameLabel).Labels(),
			T:      r.t,
			V:      r.v,
		}
	}
	var bs []classicBucket
	for _, r := range g.buckets {
		le, err := strconv.ParseFloat(r.lset.Get("le"), 64)
		if err != nil {
			a.problems = append(a.problems, snapshot.Problem{Severity: snapshot.SeverityError, File: a.dir, Offset: -1, Family: family,
				Err: fmt.Errorf("series %s: bad le: %w", r.lset, err)})
			leftovers = append(leftovers, asSeries(r))
			continue
		}
		bs = append(bs, classicBucket{le: le, r: r})
	}
	if len(bs) == 0 {
		for _, r := range []*Column{g.sum, g.count} {
			if r != nil {
				leftovers = append(leftovers, asSeries(r))
			}
		}
		return nil, leftovers
	}
	// Stable by le (a NaN bound compares as neither less nor more): the
	// order sort.SliceStable gave, by the same algorithm, without its
	// reflection.
	slices.SortStableFunc(bs, func(x, y classicBucket) int {
		switch {
		case x.le < y.le:
			return -1
		case y.le < x.le:
			return 1
		}
		return 0
	})

	var all []int64
	for _, b := range bs {
		all = unionSorted(all, b.r.t)
	}
	if len(all) == 0 && !slices.ContainsFunc(bs, func(b classicBucket) bool { return !b.r.labelsOnly }) {
		// Every bucket listed by its labels alone (KeepLabels): the
		// layout, no rows.
		hs := &snapshot.HistogramSeries{Labels: g.labels, Bounds: make([]float64, len(bs))}
		for j, b := range bs {
			hs.Bounds[j] = b.le
		}
		return []*snapshot.HistogramSeries{hs}, leftovers
	}
	if hs, ok := assembleAligned(g, bs, all); ok {
		return hs, leftovers
	}

	out, matched := assembleRows(g, bs, all)
	total := 0
	for _, r := range []*Column{g.sum, g.count} {
		if r != nil {
			total += len(r.t)
		}
	}
	if lost := total - matched; lost > 0 {
		a.problems = append(a.problems, snapshot.Problem{Severity: snapshot.SeverityWarning, File: a.dir, Offset: -1, Family: family,
			Err: fmt.Errorf("series %s: %d _sum/_count samples at timestamps without any bucket dropped", g.labels, lost)})
	}
	// The bucket raws are now copied; drop them early.
	for _, b := range bs {
		b.r.t, b.r.v = nil, nil
	}
	return out, leftovers
}

// assembleRows is assembleClassic's general case: row by row over the
// times all, a new HistogramSeries where the set of buckets present
// changes. It returns the series and how many _sum and _count samples
// found a row.
func assembleRows(g *columnHistParts, bs []classicBucket, all []int64) (out []*snapshot.HistogramSeries, matched int) {
	var (
		cur              *snapshot.HistogramSeries
		curMask, present []int
		vals             = make([]float64, 0, len(bs))
		si, ci           int
	)
	at := func(r *Column, i *int, ts int64) float64 {
		if r == nil {
			return math.NaN()
		}
		for *i < len(r.t) && r.t[*i] < ts {
			*i++
		}
		if *i < len(r.t) && r.t[*i] == ts {
			matched++
			return r.v[*i]
		}
		return math.NaN()
	}
	for row, ts := range all {
		present, vals = present[:0], vals[:0]
		for j := range bs {
			b := &bs[j]
			for b.i < len(b.r.t) && b.r.t[b.i] < ts {
				b.i++
			}
			if b.i < len(b.r.t) && b.r.t[b.i] == ts {
				present = append(present, j)
				vals = append(vals, b.r.v[b.i])
			}
		}
		if cur == nil || !slices.Equal(present, curMask) {
			curMask = slices.Clone(present)
			rows := len(all) - row
			cur = &snapshot.HistogramSeries{
				Labels: g.labels,
				Bounds: make([]float64, len(present)),
				T:      make([]int64, 0, rows),
				Counts: make([]float64, 0, rows*len(present)),
				Sum:    make([]float64, 0, rows),
				Count:  make([]float64, 0, rows),
			}
			for k, j := range present {
				cur.Bounds[k] = bs[j].le
			}
			out = append(out, cur)
		}
		cur.T = append(cur.T, ts)
		cur.Counts = append(cur.Counts, vals...)
		cur.Sum = append(cur.Sum, at(g.sum, &si, ts))
		cur.Count = append(cur.Count, at(g.count, &ci, ts))
	}
	return out, matched
}

// classicBucket is one bucket series of a classic histogram being
// assembled, and the next of its samples to place.
type classicBucket struct {
	le float64
	r  *Column
	i  int
}

// assembleAligned is assembleClassic's common case: every bucket (bs, by
// le), and the _sum and _count if any, sampled at each of the times all
// (the buckets' union), so that one HistogramSeries holds them all. The
// bucket columns are copied into rows, and _sum and _count are taken as
// they are. It reports false, doing nothing, when the
// parts are not aligned so.
func assembleAligned(g *columnHistParts, bs []classicBucket, all []int64) ([]*snapshot.HistogramSeries, bool) {
	n, nb := len(all), len(bs)
	if n == 0 {
		return nil, false
	}
	for _, b := range bs {
		if len(b.r.t) != n {
			return nil, false // b.r.t is a subset of all: equal lengths, equal times
		}
	}
	aligned := func(r *Column) bool { return r == nil || sameTimes(r.t, all) }
	if !aligned(g.sum) || !aligned(g.count) {
		return nil, false
	}
	hs := &snapshot.HistogramSeries{Labels: g.labels, Bounds: make([]float64, nb), T: all[:n:n]}
	vs := make([][]float64, nb)
	for j, b := range bs {
		hs.Bounds[j] = b.le
		vs[j] = b.r.v[:n]
	}
	// Row by row, so that the writes are sequential, into a local slice
	// (appending to hs.Counts would store its header at every value).
	counts := make([]float64, n*nb)
	for row := range n {
		dst := counts[row*nb : (row+1)*nb]
		for j, v := range vs {
			dst[j] = v[row]
		}
	}
	hs.Counts = counts
	for _, b := range bs {
		b.r.t, b.r.v = nil, nil // copied; drop it early
	}
	col := func(r *Column) []float64 {
		if r == nil {
			out := make([]float64, n)
			for i := range out {
				out[i] = math.NaN()
			}
			return out
		}
		return r.v[:n:n]
	}
	hs.Sum, hs.Count = col(g.sum), col(g.count)
	return []*snapshot.HistogramSeries{hs}, true
}

// nhcbSeries splits the NHCB rows of r into one HistogramSeries per run of
// samples with the same bucket layout.
func nhcbSeries(r *Column) []*snapshot.HistogramSeries {
	nh := r.nh
	ls := labels.NewBuilder(r.lset).Del(model.MetricNameLabel).Labels()
	var out []*snapshot.HistogramSeries
	var cur *snapshot.HistogramSeries
	for i, t := range nh.t {
		b := nh.layouts[nh.lay[i]]
		if cur == nil || nh.lay[i] != nh.lay[i-1] {
			cur = &snapshot.HistogramSeries{Labels: ls, Bounds: slices.Clone(b)} // each series owns its bounds
			out = append(out, cur)
		}
		cur.T = append(cur.T, t)
		cur.Counts = append(cur.Counts, nh.counts[nh.off[i]:int(nh.off[i])+len(b)]...)
		cur.Sum = append(cur.Sum, nh.sum[i])
		cur.Count = append(cur.Count, nh.count[i])
	}
	r.nh = nil
	return out
}

// columnScrapes returns one Scrape per distinct sample timestamp of tg.
func columnScrapes(tg *snapshot.Target) []snapshot.Scrape {
	var all []int64
	for _, f := range tg.Families {
		for _, s := range f.Series {
			all = unionSorted(all, s.T)
		}
		for _, h := range f.Histograms {
			all = unionSorted(all, h.T)
		}
	}
	out := make([]snapshot.Scrape, len(all))
	for i, t := range all {
		out[i] = snapshot.Scrape{Time: time.UnixMilli(t).UTC(), TimeFrom: snapshot.TimeFromTSDB}
	}
	return out
}

// sameTimes reports whether a and b hold the same times; columns that
// share their times (Column.AppendFloats) are told at once.
func sameTimes(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	return len(a) == 0 || &a[0] == &b[0] || slices.Equal(a, b)
}

// unionSorted returns the union of two ascending, distinct slices. It
// returns a itself when b adds nothing, and b itself when a is empty, so
// that series scraped together (the same timestamps) cost no allocation;
// the result must not be modified.
func unionSorted(a, b []int64) []int64 {
	if len(a) == 0 {
		return b
	}
	if sameTimes(a, b) || len(b) == 0 {
		return a
	}
	out := make([]int64, 0, max(len(a), len(b)))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			out = append(out, a[i])
			i++
		case a[i] > b[j]:
			out = append(out, b[j])
			j++
		default:
			out = append(out, a[i])
			i++
			j++
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}

// columnKeepFamily returns the filter of Options.Metrics: a family is kept
// when its lookup name, one of its sample names, or the name of one of its
// histogram parts is listed. Nil metrics keep everything.
func columnKeepFamily(metrics []string) func(*snapshot.Family) bool {
	if len(metrics) == 0 {
		return func(*snapshot.Family) bool { return true }
	}
	want := map[string]bool{}
	for _, m := range metrics {
		want[m] = true
	}
	return func(f *snapshot.Family) bool {
		if want[f.Name] {
			return true
		}
		if f.Type == model.MetricTypeHistogram || f.Type == model.MetricTypeSummary {
			for _, suf := range []string{"_bucket", "_sum", "_count"} {
				if want[f.Name+suf] {
					return true
				}
			}
		}
		for _, s := range f.Series {
			if want[s.Name] {
				return true
			}
		}
		return false
	}
}
