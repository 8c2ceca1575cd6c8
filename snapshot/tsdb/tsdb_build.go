package tsdb

import (
	"context"
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
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/whyslow/whyslow/histogram"
	"github.com/whyslow/whyslow/snapshot"
)

// tsdbRaw is one TSDB series as read, before it is classified: labels
// once, samples columnar. Float samples and native histogram samples
// (converted to classic rows) are kept apart.
type tsdbRaw struct {
	lset labels.Labels // with __name__
	t    []int64
	v    []float64
	nh   *nhcbRows
	// exp counts native histogram samples with exponential buckets,
	// dropped.
	exp int
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

// tsdbSampleBytes is the memory a float sample costs in the model (T and V).
const tsdbSampleBytes = 16

// tsdbAccumulator collects the series of one TSDB directory over all its
// sources (blocks and head), then builds snapshot.Evidence.
type tsdbAccumulator struct {
	dir      string
	opts     snapshot.Options
	lim      snapshot.Limits
	series   map[uint64][]*tsdbRaw
	nseries  map[string]int // series per target name
	bytes    int64          // approximate memory held by samples and labels
	reserved int64          // bytes reserved against opts.Memory
	full     bool           // MaxTotalBytes reached: stop reading
	problems []snapshot.Problem
}

func newTSDBAccumulator(dir string, opts snapshot.Options, lim snapshot.Limits) *tsdbAccumulator {
	return &tsdbAccumulator{
		dir:     dir,
		opts:    opts,
		lim:     lim,
		series:  map[uint64][]*tsdbRaw{},
		nseries: map[string]int{},
	}
}

func (a *tsdbAccumulator) problem(sev snapshot.Severity, file string, err error) {
	a.problems = append(a.problems, snapshot.Problem{Severity: sev, File: file, Offset: -1, Err: err})
}

// get returns the raw series for lset, creating it unless a limit forbids.
func (a *tsdbAccumulator) get(src string, lset labels.Labels) *tsdbRaw {
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
	r := &tsdbRaw{lset: lset}
	a.series[h] = append(a.series[h], r)
	a.bytes += int64(lset.ByteSize()) + 64
	return r
}

// readSource reads the series of one block or head that match ms, with
// samples in [mint, maxt]. Problems of the source are recorded; only a
// context error, or the error of exceeding opts.Memory, is returned.
func (a *tsdbAccumulator) readSource(ctx context.Context, src string, br tsdb.BlockReader, mint, maxt int64, ms []*labels.Matcher) (err error) {
	if a.full {
		return nil
	}
	q, err := tsdb.NewBlockQuerier(br, mint, maxt)
	if err != nil {
		a.problem(snapshot.SeverityError, src, fmt.Errorf("%w: %w", ErrBadBlock, err))
		return nil
	}
	defer func() {
		if cerr := q.Close(); cerr != nil {
			a.problem(snapshot.SeverityWarning, src, fmt.Errorf("closing querier: %w", cerr))
		}
	}()
	ss := q.Select(ctx, false, &storage.SelectHints{Start: mint, End: maxt}, ms...)
	var (
		it       chunkenc.Iterator
		fh       *promhistogram.FloatHistogram
		n        int
		bad      int   // series whose samples could not all be read
		firstBad error // the first of their errors
		// hint is the sample count of the previous series: series scraped
		// together have the same, so sizing for it avoids regrowing.
		hint int
	)
	defer func() {
		if bad > 0 {
			a.problem(snapshot.SeverityError, src, fmt.Errorf("%w: samples of %d series lost, first: %w", ErrBadBlock, bad, firstBad))
		}
	}()
	for ss.Next() {
		if n++; n%512 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		s := ss.At()
		r := a.get(src, s.Labels())
		if r == nil {
			continue
		}
		it = s.Iterator(it)
		before := len(r.t)
		if r.nh == nil {
			r.t = slices.Grow(r.t, hint)
			r.v = slices.Grow(r.v, hint)
		}
		for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
			switch vt {
			case chunkenc.ValFloat:
				t, v := it.At()
				if value.IsStaleNaN(v) {
					continue
				}
				r.t = append(r.t, t)
				r.v = append(r.v, v)
				a.bytes += tsdbSampleBytes
			case chunkenc.ValHistogram, chunkenc.ValFloatHistogram:
				var t int64
				t, fh = it.AtFloatHistogram(fh)
				if value.IsStaleNaN(fh.Sum) {
					continue
				}
				if !fh.UsesCustomBuckets() {
					r.exp++
					continue
				}
				if err := r.addNHCB(t, fh); err != nil {
					a.problem(snapshot.SeverityError, src, fmt.Errorf("series %s at %d: %w", s.Labels(), t, err))
					continue
				}
				a.bytes += int64(len(fh.CustomValues)+4) * 8
			}
		}
		if n := len(r.t) - before; n > 0 {
			hint = n
		}
		if err := it.Err(); err != nil {
			if bad++; bad == 1 {
				firstBad = fmt.Errorf("series %s: %w", s.Labels(), err)
			}
		}
		if err := a.opts.Memory.Reserve(a.bytes-a.reserved, a.dir); err != nil {
			a.full = true
			return err
		}
		a.reserved = a.bytes
		if a.bytes > a.lim.MaxTotalBytes {
			a.full = true
			a.problem(snapshot.SeverityError, src, fmt.Errorf("%w: samples read exceed snapshot.Limits.MaxTotalBytes (%d bytes); reading stopped, result is partial", snapshot.ErrLimit, a.lim.MaxTotalBytes))
			return nil
		}
	}
	if err := ss.Err(); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		a.problem(snapshot.SeverityError, src, fmt.Errorf("%w: %w", ErrBadBlock, err))
	}
	for _, w := range ss.Warnings() {
		a.problem(snapshot.SeverityWarning, src, w)
	}
	return nil
}

// addNHCB appends an NHCB sample as a classic row, converted by
// histogram.FromNHCB.
func (r *tsdbRaw) addNHCB(t int64, fh *promhistogram.FloatHistogram) error {
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
func (a *tsdbAccumulator) targetName(lset labels.Labels) (name, from string) {
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
func (a *tsdbAccumulator) evidence() *snapshot.Evidence {
	ev := &snapshot.Evidence{Sources: []string{a.dir}}
	type tgt struct {
		from string
		raws []*tsdbRaw
	}
	targets := map[string]*tgt{}
	for _, rs := range a.series {
		for _, r := range rs {
			r.normalize()
			if len(r.t) == 0 && r.exp == 0 && (r.nh == nil || len(r.nh.t) == 0) {
				continue
			}
			name, from := a.targetName(r.lset)
			t := targets[name]
			if t == nil {
				t = &tgt{from: from}
				targets[name] = t
			}
			t.raws = append(t.raws, r)
		}
	}
	a.series = nil // let the raws go as they are converted
	keep := tsdbKeepFamily(a.opts.Metrics)
	for name, t := range targets {
		tg := &snapshot.Target{Name: name, NameFrom: t.from, Families: map[string]*snapshot.Family{}}
		a.buildFamilies(tg, t.raws)
		t.raws = nil // the bucket series are copied into rows: free them target by target
		for fname := range tg.Families {
			if !keep(tg.Families[fname]) {
				delete(tg.Families, fname)
			}
		}
		tg.Scrapes = tsdbScrapes(tg)
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
func (r *tsdbRaw) normalize() {
	if !sortedDistinct(r.t) {
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

// tsdbFamilyKind is how a sample name was classified.
type tsdbFamilyKind struct {
	family string
	typ    model.MetricType
	part   string // "bucket", "sum", "count" of a histogram, or ""
}

// buildFamilies classifies a target's raws by name and labels and fills
// tg.Families.
func (a *tsdbAccumulator) buildFamilies(tg *snapshot.Target, raws []*tsdbRaw) {
	byName := map[string][]*tsdbRaw{}
	histBase := map[string]bool{}
	summaryBase := map[string]bool{}
	for _, r := range raws {
		name := r.lset.Get(labels.MetricName)
		byName[name] = append(byName[name], r)
		if b, ok := strings.CutSuffix(name, "_bucket"); ok && b != "" && r.lset.Has("le") {
			histBase[b] = true
		}
		if r.lset.Has("quantile") {
			summaryBase[name] = true
		}
	}
	classify := func(name string) tsdbFamilyKind {
		if b, ok := strings.CutSuffix(name, "_bucket"); ok && histBase[b] {
			return tsdbFamilyKind{b, model.MetricTypeHistogram, "bucket"}
		}
		for _, suf := range []string{"_sum", "_count"} {
			if b, ok := strings.CutSuffix(name, suf); ok {
				if histBase[b] {
					return tsdbFamilyKind{b, model.MetricTypeHistogram, suf[1:]}
				}
				if summaryBase[b] {
					return tsdbFamilyKind{b, model.MetricTypeSummary, ""}
				}
			}
		}
		if summaryBase[name] {
			return tsdbFamilyKind{name, model.MetricTypeSummary, ""}
		}
		if strings.HasSuffix(name, "_total") {
			return tsdbFamilyKind{name, model.MetricTypeCounter, ""}
		}
		return tsdbFamilyKind{name, model.MetricTypeUnknown, ""}
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
	classic := map[string]map[uint64][]*tsdbHistParts{} // family -> hash -> groups

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
					Err: fmt.Errorf("%w: %d samples of %s dropped", ErrExponentialHistogram, r.exp, r.lset)})
			}
			if r.nh != nil && len(r.nh.t) > 0 {
				f := family(name, model.MetricTypeHistogram)
				if len(f.Series) == 0 && len(r.t) == 0 {
					f.Type = model.MetricTypeHistogram
				}
				f.Histograms = append(f.Histograms, nhcbSeries(r)...)
			}
			if len(r.t) == 0 {
				continue
			}
			if k.part != "" {
				ls := labels.NewBuilder(r.lset).Del(labels.MetricName, "le").Labels()
				h := ls.Hash()
				fam := classic[k.family]
				if fam == nil {
					fam = map[uint64][]*tsdbHistParts{}
					classic[k.family] = fam
				}
				var g *tsdbHistParts
				for _, c := range fam[h] {
					if labels.Equal(c.labels, ls) {
						g = c
						break
					}
				}
				if g == nil {
					g = &tsdbHistParts{labels: ls}
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
				Labels: labels.NewBuilder(r.lset).Del(labels.MetricName).Labels(),
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
			return hi.T[0] < hj.T[0]
		})
	}
}

// tsdbHistParts are the float series of one classic histogram: its
// buckets, _sum and _count, sharing labels (without __name__ and le).
type tsdbHistParts struct {
	labels     labels.Labels
	buckets    []*tsdbRaw
	sum, count *tsdbRaw
}

// assembleClassic assembles the parts of one classic histogram into
// snapshot.HistogramSeries, one per run of timestamps with the same set of buckets
// present: a layout change (other buckets after an upgrade) starts a new
// snapshot.HistogramSeries. Parts that cannot be assembled (a bad le, a _sum or
// _count without buckets) are returned as float snapshot.Series.
func (a *tsdbAccumulator) assembleClassic(family string, g *tsdbHistParts) (out []*snapshot.HistogramSeries, leftovers []*snapshot.Series) {
	asSeries := func(r *tsdbRaw) *snapshot.Series {
		return &snapshot.Series{
			Name:   r.lset.Get(labels.MetricName),
			Labels: labels.NewBuilder(r.lset).Del(labels.MetricName).Labels(),
			T:      r.t,
			V:      r.v,
		}
	}
	type bucket struct {
		le float64
		r  *tsdbRaw
		i  int
	}
	var bs []bucket
	for _, r := range g.buckets {
		le, err := strconv.ParseFloat(r.lset.Get("le"), 64)
		if err != nil {
			a.problems = append(a.problems, snapshot.Problem{Severity: snapshot.SeverityError, File: a.dir, Offset: -1, Family: family,
				Err: fmt.Errorf("series %s: bad le: %w", r.lset, err)})
			leftovers = append(leftovers, asSeries(r))
			continue
		}
		bs = append(bs, bucket{le: le, r: r})
	}
	if len(bs) == 0 {
		for _, r := range []*tsdbRaw{g.sum, g.count} {
			if r != nil {
				leftovers = append(leftovers, asSeries(r))
			}
		}
		return nil, leftovers
	}
	sort.SliceStable(bs, func(i, j int) bool { return bs[i].le < bs[j].le })

	var all []int64
	for _, b := range bs {
		all = unionSorted(all, b.r.t)
	}

	var (
		cur              *snapshot.HistogramSeries
		curMask, present []int
		vals             = make([]float64, 0, len(bs))
		si, ci           int
		matched          int
	)
	at := func(r *tsdbRaw, i *int, ts int64) float64 {
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
	total := 0
	for _, r := range []*tsdbRaw{g.sum, g.count} {
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

// nhcbSeries splits the NHCB rows of r into one snapshot.HistogramSeries per run of
// samples with the same bucket layout.
func nhcbSeries(r *tsdbRaw) []*snapshot.HistogramSeries {
	nh := r.nh
	ls := labels.NewBuilder(r.lset).Del(labels.MetricName).Labels()
	var out []*snapshot.HistogramSeries
	var cur *snapshot.HistogramSeries
	for i, t := range nh.t {
		b := nh.layouts[nh.lay[i]]
		if cur == nil || nh.lay[i] != nh.lay[i-1] {
			cur = &snapshot.HistogramSeries{Labels: ls, Bounds: b}
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

// tsdbScrapes returns one snapshot.Scrape per distinct sample timestamp of tg.
func tsdbScrapes(tg *snapshot.Target) []snapshot.Scrape {
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

// unionSorted returns the union of two ascending, distinct slices. It
// returns a itself when b adds nothing, and b itself when a is empty, so
// that series scraped together (the same timestamps) cost no allocation;
// the result must not be modified.
func unionSorted(a, b []int64) []int64 {
	if len(a) == 0 {
		return b
	}
	if slices.Equal(a, b) || len(b) == 0 {
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

// tsdbKeepFamily returns the filter of snapshot.Options.Metrics: a family is kept
// when its lookup name, one of its sample names, or the name of one of its
// histogram parts is listed. Nil metrics keep everything.
func tsdbKeepFamily(metrics []string) func(*snapshot.Family) bool {
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
