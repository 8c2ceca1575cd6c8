package promapi

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/whyslow/whyslow/histogram"
	"github.com/whyslow/whyslow/snapshot"
	"github.com/whyslow/whyslow/snapshot/internal/store"
)

// Engine answers snapshot.Engine's questions with PromQL on a server:
// the increase of a histogram over each window of a grid is
//
//	sum by (le) (M_bucket{SEL} - M_bucket{SEL} offset STEP)
//
// (and the same of M_sum and M_count) evaluated by /api/v1/query_range at
// the windows' ends, where SEL holds the question's labels, the read's
// Options.Matchers and the targets' pod (or instance) values. Both edges
// are instant selectors: each series' last sample at or before the edge
// within the server's lookback delta (5m by default, snapshot.Lookback),
// so the difference is exact where no counter reset lies between them,
// and the same on Prometheus, Thanos, Mimir and VictoriaMetrics: none of
// them extrapolates it, as increase() would. Resets are found with
// resets() over the grid. Targets are asked for in batches of
// TargetsPerQuery x 10, halved while the server refuses a query as too
// large, and the batches' answers are added up. A few targets asked for
// one row each (the replicas a report shows, over hours) are read by
// remote read instead, where the server serves it, and their increases
// computed as a TSDB directory's are: the same numbers where the edge
// rule holds.
//
// An Engine is safe for concurrent use; it counts its queries, its
// remote reads and the bytes received (Cost).
type Engine struct {
	r   *reader
	ctx context.Context

	mu      sync.Mutex
	queries int
	// noAt is set once the server refused the @ modifier (noAtError):
	// Presence then asks for every edge's count.
	noAt bool
	// seen holds the answers of Presence, by question and target (the
	// label it is named by and its name), for batchIncreases.
	seen map[presenceKey]map[string]presence
}

// presenceKey names a Presence question but for its targets.
type presenceKey struct {
	metric, match string
	first         time.Time
	step          time.Duration
	n             int
}

func keyOf(q snapshot.HistogramQuery) presenceKey {
	var match []string
	for _, k := range slices.Sorted(maps.Keys(q.Match)) {
		match = append(match, k+"\xff"+q.Match[k])
	}
	k := presenceKey{metric: q.Metric, match: strings.Join(match, "\xff"), n: len(q.Grid)}
	if len(q.Grid) > 0 {
		k.first, k.step = q.Grid[0].Start, q.Grid[0].End.Sub(q.Grid[0].Start)
	}
	return k
}

// presence is a target's answer to Presence: its number of _count series
// over the grid (all), the grid's number of edges, and the edges at which
// it has fewer (short, ascending; nil where every edge has all: most
// targets).
type presence struct {
	all   int
	edges int
	short []edgeCount
}

// edgeCount is a target's number of _count series at an edge of a grid.
type edgeCount struct{ edge, count int }

// at returns the number of series at edge i.
func (p presence) at(i int) int {
	k, found := slices.BinarySearchFunc(p.short, i, func(e edgeCount, i int) int { return cmp.Compare(e.edge, i) })
	if found {
		return p.short[k].count
	}
	return p.all
}

// Engine returns the Engine of the server at address, under the
// Matchers and Limits of opts (Start and End are not used).
func (c Config) Engine(ctx context.Context, address string, opts snapshot.Options) (*Engine, error) {
	// A reader's range is not an engine's: each question carries its grid.
	opts.Start, opts.End = time.Unix(0, 0), time.Unix(0, 0)
	r, err := c.reader(address, opts)
	if err != nil {
		return nil, err
	}
	r.cancel = func() {}
	// Each sample read (samplesIncreases) names its own range.
	r.start, r.end = math.MinInt64, math.MaxInt64
	return &Engine{r: r, ctx: ctx}, nil
}

// Cost says what the engine's questions cost the server, as a note for
// the report's inputs: the queries, the remote reads, the HTTP requests
// and the bytes of the responses. Its text is written when it is read, so that a note
// taken before a diagnosis that asks the engine more (the replicas'
// timelines) counts those too.
func (e *Engine) Cost() snapshot.Problem {
	return snapshot.Problem{Severity: snapshot.SeverityInfo, File: e.r.red, Offset: -1, Err: engineCost{e}}
}

// engineCost is the error of Cost's note.
type engineCost struct{ e *Engine }

func (c engineCost) Error() string {
	c.e.mu.Lock()
	n, noAt := c.e.queries, c.e.noAt
	c.e.mu.Unlock()
	c.e.r.remote.mu.Lock()
	reads := c.e.r.remote.reads
	c.e.r.remote.mu.Unlock()
	what := fmt.Sprintf("%d queries", n)
	if reads > 0 {
		what += fmt.Sprintf(" and %d remote reads of the samples of the replicas shown", reads)
	}
	msg := fmt.Sprintf("aggregated in the server with %s: %d HTTP requests, %s of responses received",
		what, c.e.r.tr.requests.Load(), byteSize(c.e.r.tr.received.Load()))
	if noAt {
		msg += "; the server refused PromQL's @ modifier, so which pods had their series was asked at every edge of the grid"
	}
	return msg
}

// batch is targets asked for in one query: the label they are named by
// and its values.
type batch struct {
	label  string
	values []string
	index  []int // into the question's Targets
}

// batches groups q's targets by the label that names them, in batches.
func (e *Engine) batches(q snapshot.HistogramQuery) ([]batch, error) {
	n := e.r.cfg.TargetsPerQuery * 10
	byLabel := map[string]*batch{}
	var out []batch
	var order []string
	for i, t := range q.Targets {
		label := t.NameFrom
		if label != "pod" && label != "instance" && label != "exported_pod" {
			return nil, fmt.Errorf("target %q is named by %q, not a label", t.Name, label)
		}
		b := byLabel[label]
		if b == nil {
			b = &batch{label: label}
			byLabel[label] = b
			order = append(order, label)
		}
		b.values = append(b.values, t.Name)
		b.index = append(b.index, i)
		if len(b.values) == n {
			out = append(out, *b)
			delete(byLabel, label)
		}
	}
	for _, l := range order {
		if b := byLabel[l]; b != nil {
			out = append(out, *b)
		}
	}
	return out, nil
}

// selector is the selector of name's series of b under q.
func (e *Engine) selector(name string, q snapshot.HistogramQuery, b batch) string {
	ms := []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, model.MetricNameLabel, name)}
	keys := make([]string, 0, len(q.Match))
	for k := range q.Match {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		ms = append(ms, labels.MustNewMatcher(labels.MatchEqual, k, q.Match[k]))
	}
	ms = append(ms, e.r.opts.Matchers...)
	ms = append(ms, valuesMatcher(b.label, b.values))
	return matchersString(ms)
}

// HistogramIncreases implements snapshot.Engine.
func (e *Engine) HistogramIncreases(q snapshot.HistogramQuery) ([][]*histogram.Histogram, error) {
	if len(q.Grid) == 0 {
		return nil, nil
	}
	step := q.Grid[0].End.Sub(q.Grid[0].Start)
	for i, w := range q.Grid {
		if w.End.Sub(w.Start) != step || (i > 0 && !w.Start.Equal(q.Grid[i-1].End)) {
			return nil, fmt.Errorf("promapi: engine: the grid's windows are not adjacent and of one length")
		}
	}
	rows := 1
	if q.Each {
		rows = len(q.Targets)
	}
	acc := make([][]*histogram.Histogram, rows)
	for i := range acc {
		acc[i] = make([]*histogram.Histogram, len(q.Grid))
	}
	err := e.eachBatch(q, func(b batch) error {
		inc, ok := e.samplesIncreases(q, b)
		if !ok {
			var err error
			if inc, err = e.batchIncreases(q, b, step); err != nil {
				return err
			}
		}
		for k, row := range inc {
			r := 0
			if q.Each {
				r = b.index[k]
			}
			for i, h := range row {
				if err := addInto(&acc[r][i], h); err != nil {
					return fmt.Errorf("promapi: engine: %s: %w", q.Metric, err)
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return acc, nil
}

// A question asked one row per target (HistogramQuery.Each) is answered
// from the samples (samplesIncreases) when they are few: at most
// maxSamplePodHours of them (targets x hours of the grid), read
// samplePodHours at a time. A series has several samples per step of the
// grid where the sums have one point per bucket: the samples of a few
// pods over hours cost the server and whyslow less than the sums' JSON,
// those of a day cost as much time and more memory (the measurements are
// in snapshot/tsdb/TSDB_BENCHMARKS.md). A read's samples are held twice
// while they become a target: a few MB at samplePodHours.
const (
	maxSamplePodHours = 128
	samplePodHours    = 24
)

// samplesIncreases answers a question asked one row per target (the few
// replicas a report shows) from the samples of its histogram's series
// over the grid (from snapshot.Lookback before it), read by remote read
// samplePodHours at a time, with the increases snapshot computes from a
// dump or a TSDB directory (Family.HistogramIncreaseSteps): the server
// hands over its chunks instead of evaluating PromQL at every edge, and
// whyslow decodes far fewer bytes than the sums' JSON. Where the edge
// rule holds (no counter reset between two edges at which every series
// stands) the increases are the sums' to the bit: the bucket counts are
// whole numbers. ok is false, and the caller asks for the sums, for other
// questions, for more than maxSamplePodHours of samples, and when the
// server does not serve remote read, or a read failed or dropped samples.
func (e *Engine) samplesIncreases(q snapshot.HistogramQuery, b batch) (rows [][]*histogram.Histogram, ok bool) {
	first, last := q.Grid[0].Start, q.Grid[len(q.Grid)-1].End
	span := last.Sub(first) + snapshot.Lookback
	if !q.Each || e.r.cfg.QueryOnly || time.Duration(len(b.values))*span > maxSamplePodHours*time.Hour {
		return nil, false
	}
	per := max(1, int(samplePodHours*time.Hour/span))
	rows = make([][]*histogram.Histogram, len(b.values))
	opts := e.r.builderOptions()
	opts.Metrics, opts.LabelsOnly, opts.ForTarget = nil, nil, nil
	for lo := 0; lo < len(b.values); lo += per {
		names := b.values[lo:min(lo+per, len(b.values))]
		series := []string{q.Metric + "_bucket", q.Metric + "_count", q.Metric + "_sum"}
		if q.SkipSum {
			series = series[:2]
		}
		u := unit{family: q.Metric, names: series,
			label: b.label, targets: names, from: first.Add(-snapshot.Lookback).UnixMilli() - 1, to: last.UnixMilli()}
		res, served := e.r.doRemote(e.ctx, u)
		if !served || res.err != nil || res.split != nil || len(res.problems) > 0 {
			return nil, false
		}
		cols := store.NewColumns(e.r.red, opts)
		e.r.add(cols, res)
		ev := cols.Evidence()
		for k, name := range names {
			row := make([]*histogram.Histogram, len(q.Grid))
			rows[lo+k] = row
			i := slices.IndexFunc(ev.Targets, func(t *snapshot.Target) bool { return t.Name == name })
			if i < 0 {
				continue
			}
			fam := ev.Targets[i].Family(q.Metric)
			if fam == nil {
				continue
			}
			for j, st := range fam.HistogramIncreaseSteps(q.Grid, q.Match) {
				if st.Err == nil {
					h := st.Result.Histogram
					row[j] = &h
				}
			}
		}
	}
	return rows, true
}

// maxExact is how many intervals of a batch batchIncreases asks for one
// by one before it asks for all of them in one range query.
const maxExact = 16

// batchIncreases returns the increases of q's histogram over the targets
// of batch b, per interval of q.Grid: one row, or one per target of b
// when q.Each is set. It asks for the sums of the bucket and _count
// series at every edge of the grid (cheap for the server: an
// aggregation, no matching of series), and for the intervals at whose
// edges the set of series differs (a pod that appeared, left or missed a
// scrape: "count(C unless C offset STEP)", or from the answers of
// Presence where it was asked about every target: steady), whose
// difference of sums would count a series on one side only, for
// "sum(X - X offset STEP)" there, which leaves such a series out.
func (e *Engine) batchIncreases(q snapshot.HistogramQuery, b batch, step time.Duration) ([][]*histogram.Histogram, error) {
	n := len(q.Grid)
	by, grp := "le", ""
	if q.Each {
		by, grp = "le, "+b.label, b.label
	}
	rows := 1
	if q.Each {
		rows = len(b.values)
	}
	row := func(m model.Metric) int {
		if !q.Each {
			return 0
		}
		return slices.Index(b.values, string(m[model.LabelName(b.label)]))
	}
	first, last := q.Grid[0].Start, q.Grid[n-1].End
	index := func(origin time.Time, size int) func(model.Time) int {
		return func(ts model.Time) int {
			d := ts.Time().Sub(origin)
			if d < 0 || d%step != 0 || int(d/step) >= size {
				return -1
			}
			return int(d / step)
		}
	}
	sel := func(suffix string) string { return e.selector(q.Metric+suffix, q, b) }
	off := model.Duration(step).String()
	count := sel("_count")
	// The counts are integers, which add exactly in any order; the sums
	// of observed values are not, and a difference of two fleet totals
	// loses what the series' own differences keep: _sum is asked for as
	// those.
	exprs := []string{
		fmt.Sprintf("sum by (%s) (%s)", by, sel("_bucket")),
		fmt.Sprintf("sum by (%s) (%s - %s offset %s)", grp, sel("_sum"), sel("_sum"), off),
		fmt.Sprintf("sum by (%s) (%s)", grp, count),
		fmt.Sprintf("count by (%s) (%s unless %s offset %s) or count by (%s) (%s offset %s unless %s)", grp, count, count, off, grp, count, off, count),
	}
	// Where Presence told where each target's series stand, the
	// intervals whose set of series may differ follow from it.
	known, exact, steady := e.steady(q, b, rows)
	var res [4]model.Matrix
	var errs [4]error
	var wg sync.WaitGroup
	for k, expr := range exprs {
		if (k == 1 && q.SkipSum) || (k == 3 && steady) {
			continue // res[1] stays nil: Sum is NaN; res[3]: see known
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if k == 0 || k == 2 {
				res[k], errs[k] = e.queryRange(expr, first, last, step) // at the edges
			} else {
				res[k], errs[k] = e.queryRange(expr, q.Grid[0].End, last, step) // at the windows' ends
			}
		}()
	}
	wg.Wait()
	if err := cmp.Or(errs[:]...); err != nil {
		return nil, err
	}
	edges, err := assemble(res[0], nil, res[2], row, index(first, n+1), rows, n+1)
	if err != nil {
		return nil, err
	}
	sums, err := assemble(nil, res[1], nil, row, index(q.Grid[0].End, n), rows, n)
	if err != nil {
		return nil, err
	}
	out := make([][]*histogram.Histogram, rows)
	changed := known
	if !steady {
		changed = make([][]bool, rows)
	}
	for r := range out {
		out[r] = make([]*histogram.Histogram, n)
		if !steady {
			changed[r] = make([]bool, n)
		}
	}
	// exact holds the intervals where some row's series changed.
	at := index(q.Grid[0].End, n)
	for _, ss := range res[3] {
		r := row(ss.Metric)
		if r < 0 {
			continue
		}
		for _, sp := range ss.Values {
			if i := at(sp.Timestamp); i >= 0 {
				changed[r][i] = true
				if !slices.Contains(exact, i) {
					exact = append(exact, i)
				}
			}
		}
	}
	for r := range out {
		for i := range n {
			if changed[r][i] {
				continue
			}
			if out[r][i] = diff(edges[r][i+1], edges[r][i]); out[r][i] != nil {
				out[r][i].Sum = math.NaN()
				if h := sums[r][i]; h != nil {
					out[r][i].Sum = h.Sum
				}
			}
		}
	}
	if len(exact) == 0 {
		return out, nil
	}
	// The intervals whose series changed, from the differences per series.
	diffExprs := []string{
		fmt.Sprintf("sum by (%s) (%s - %s offset %s)", by, sel("_bucket"), sel("_bucket"), off),
		fmt.Sprintf("sum by (%s) (%s - %s offset %s)", grp, sel("_sum"), sel("_sum"), off),
		fmt.Sprintf("sum by (%s) (%s - %s offset %s)", grp, count, count, off),
	}
	slices.Sort(exact)
	spans := [][2]int{{exact[0], exact[len(exact)-1]}} // one range query over all of them
	if len(exact) <= maxExact {
		spans = spans[:0]
		for _, i := range exact {
			spans = append(spans, [2]int{i, i})
		}
	}
	for _, sp := range spans {
		var parts [3]model.Matrix
		for k, expr := range diffExprs {
			if k == 1 && q.SkipSum {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				parts[k], errs[k] = e.queryRange(expr, q.Grid[sp[0]].End, q.Grid[sp[1]].End, step)
			}()
		}
		wg.Wait()
		if err := cmp.Or(errs[:3]...); err != nil {
			return nil, err
		}
		incs, err := assemble(parts[0], parts[1], parts[2], row, index(q.Grid[sp[0]].End, sp[1]-sp[0]+1), rows, sp[1]-sp[0]+1)
		if err != nil {
			return nil, err
		}
		for r := range out {
			for k, h := range incs[r] {
				if i := sp[0] + k; changed[r][i] {
					out[r][i] = h
				}
			}
		}
	}
	return out, nil
}

// assemble builds histograms from the answers of the bucket, _sum and
// _count queries: per row (row of a series' labels; -1 drops it) and
// point (index of its time; -1 drops it), nil where no bucket answered.
// Count and Sum are NaN where _count or _sum did not answer. Without
// buckets (nil), it holds the values of _sum and _count alone.
func assemble(buckets, sums, counts model.Matrix, row func(model.Metric) int, index func(model.Time) int, rows, points int) ([][]*histogram.Histogram, error) {
	type key struct{ r, i int }
	byLe := map[key]map[float64]float64{}
	for _, ss := range buckets {
		r := row(ss.Metric)
		le, err := strconv.ParseFloat(string(ss.Metric["le"]), 64)
		if r < 0 || err != nil {
			continue
		}
		for _, sp := range ss.Values {
			if i := index(sp.Timestamp); i >= 0 {
				k := key{r, i}
				if byLe[k] == nil {
					byLe[k] = map[float64]float64{}
				}
				byLe[k][le] += float64(sp.Value)
			}
		}
	}
	out := make([][]*histogram.Histogram, rows)
	for r := range out {
		out[r] = make([]*histogram.Histogram, points)
	}
	var layouts [][]float64 // the bucket layouts met, shared by the histograms that have them
	for k, m := range byLe {
		bounds := slices.Sorted(maps.Keys(m))
		if i := slices.IndexFunc(layouts, func(l []float64) bool { return slices.Equal(l, bounds) }); i >= 0 {
			bounds = layouts[i]
		} else {
			layouts = append(layouts, bounds)
		}
		h := &histogram.Histogram{Bounds: bounds, Counts: make([]float64, len(bounds)), Count: math.NaN(), Sum: math.NaN()}
		for j, le := range bounds {
			h.Counts[j] = m[le]
		}
		out[k.r][k.i] = h
	}
	for k, m := range []model.Matrix{sums, counts} {
		for _, ss := range m {
			r := row(ss.Metric)
			if r < 0 {
				continue
			}
			for _, sp := range ss.Values {
				i := index(sp.Timestamp)
				if i >= 0 && out[r][i] == nil && buckets == nil {
					out[r][i] = &histogram.Histogram{Count: math.NaN(), Sum: math.NaN()} // a value alone
				}
				if i < 0 || out[r][i] == nil {
					continue
				}
				p := &out[r][i].Sum
				if k == 1 {
					p = &out[r][i].Count
				}
				if math.IsNaN(*p) {
					*p = 0
				}
				*p += float64(sp.Value)
			}
		}
	}
	return out, nil
}

// diff is the histogram of the observations between two cumulative
// ones, b before a; nil when either is missing or their bounds differ.
func diff(a, b *histogram.Histogram) *histogram.Histogram {
	if a == nil || b == nil || !slices.Equal(a.Bounds, b.Bounds) {
		return nil
	}
	d := &histogram.Histogram{Bounds: a.Bounds, Counts: make([]float64, len(a.Counts)), Count: a.Count - b.Count, Sum: a.Sum - b.Sum}
	for j := range a.Counts {
		d.Counts[j] = a.Counts[j] - b.Counts[j]
	}
	return d
}

// addInto adds h to *acc (a batch's increase to the batches' before).
func addInto(acc **histogram.Histogram, h *histogram.Histogram) error {
	if h == nil {
		return nil
	}
	if *acc == nil {
		c := *h
		c.Counts = slices.Clone(h.Counts)
		*acc = &c
		return nil
	}
	a := *acc
	if !slices.Equal(a.Bounds, h.Bounds) {
		return errors.New("the batches' bucket layouts differ")
	}
	for j := range a.Counts {
		a.Counts[j] += h.Counts[j]
	}
	for _, p := range [][2]*float64{{&a.Count, &h.Count}, {&a.Sum, &h.Sum}} {
		if math.IsNaN(*p[0]) {
			*p[0] = 0
		}
		*p[0] += *p[1]
	}
	return nil
}

// Resets implements snapshot.Engine.
func (e *Engine) Resets(q snapshot.HistogramQuery) ([]string, error) {
	if len(q.Grid) == 0 {
		return nil, nil
	}
	end := q.Grid[len(q.Grid)-1].End
	rng := model.Duration(end.Sub(q.Grid[0].Start) + snapshot.Lookback).String()
	var out []string
	err := e.eachBatch(q, func(b batch) error {
		expr := fmt.Sprintf("sum by (%s) (resets(%s[%s])) > 0", b.label, e.selector(q.Metric+"_count", q, b), rng)
		v, err := e.query(expr, end)
		if err != nil {
			return err
		}
		for _, s := range v {
			if name := string(s.Metric[model.LabelName(b.label)]); slices.Contains(b.values, name) {
				out = append(out, name)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(out)
	return out, nil
}

// Presence implements snapshot.Engine. Per batch it asks for the number
// of _count series each target has over the grid, D (an instant query
// over the grid and twice the lookback before it), and for the edges at
// which a target has fewer (a range query):
//
//	count by (pod) (C) < on (pod) D
//	or on (pod) (D unless on (pod) C) * 0 - 1
//
// where D is "count by (pod) (last_over_time(C[RANGE] @ END))", so the
// answer holds only the edges where a target's series are not all there
// (a count, or -1 for none), not one point per target and edge. A series
// standing for an edge has a sample in D's range, so every other edge
// has D series: the counts are those of "count by (pod) (C)" at every
// edge.
//
// A server that does not take PromQL's @ modifier (Prometheus before
// 2.33 without its feature flag) is asked for "count by (pod) (C)" at
// every edge instead, then and for every later question; Cost says so.
func (e *Engine) Presence(q snapshot.HistogramQuery) ([][]int, error) {
	if len(q.Grid) == 0 {
		return nil, nil
	}
	step := q.Grid[0].End.Sub(q.Grid[0].Start)
	first, last := q.Grid[0].Start, q.Grid[len(q.Grid)-1].End
	// D's range reaches further back than any server's lookback at the
	// first edge: a series it counts that stands for no edge only makes
	// the answer longer, never wrong.
	rng := model.Duration(last.Sub(first) + 2*snapshot.Lookback).String()
	at := strconv.FormatFloat(float64(last.UnixMilli())/1000, 'f', -1, 64)
	out := make([][]int, len(q.Targets))
	err := e.eachBatch(q, func(b batch) error {
		c := e.selector(q.Metric+"_count", q, b)
		if e.refusedAt() {
			return e.presenceEachEdge(q, b, c, out)
		}
		d := fmt.Sprintf("count by (%s) (last_over_time(%s[%s] @ %s))", b.label, c, rng, at)
		all, err := e.query(d, last)
		if _, ok := errors.AsType[*noAtError](err); ok {
			e.mu.Lock()
			e.noAt = true
			e.mu.Unlock()
			return e.presenceEachEdge(q, b, c, out)
		}
		if err != nil {
			return err
		}
		n := map[string]int{}
		for _, s := range all {
			n[string(s.Metric[model.LabelName(b.label)])] = int(s.Value)
		}
		for k, name := range b.values {
			row := make([]int, len(q.Grid)+1)
			for i := range row {
				row[i] = n[name]
			}
			out[b.index[k]] = row
		}
		if len(all) == 0 {
			e.remember(q, b, out, n)
			return nil
		}
		fewer := fmt.Sprintf("count by (%[1]s) (%[2]s) < on (%[1]s) %[3]s or on (%[1]s) (%[3]s unless on (%[1]s) %[2]s) * 0 - 1", b.label, c, d)
		m, err := e.queryRange(fewer, first, last, step)
		if err != nil {
			return err
		}
		edgeCounts(m, b, q.Grid, out)
		e.remember(q, b, out, n)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// presenceEachEdge answers Presence for batch b of q without the @
// modifier: "count by (pod) (c)" at every edge of the grid, one point
// per target and edge. It keeps nothing for steady: equal counts at two
// edges do not say that the series are the same (a restart that
// changed the instance label), where D's count over the grid does.
func (e *Engine) presenceEachEdge(q snapshot.HistogramQuery, b batch, c string, out [][]int) error {
	m, err := e.queryRange(fmt.Sprintf("count by (%s) (%s)", b.label, c), q.Grid[0].Start, q.Grid[len(q.Grid)-1].End, q.Grid[0].End.Sub(q.Grid[0].Start))
	if err != nil {
		return err
	}
	for _, i := range b.index {
		out[i] = make([]int, len(q.Grid)+1)
	}
	edgeCounts(m, b, q.Grid, out)
	return nil
}

// edgeCounts writes into out (rows by q.Targets' index) the counts of m,
// a range query's answer by batch b's label over grid's edges: a
// negative one as 0.
func edgeCounts(m model.Matrix, b batch, grid []snapshot.Window, out [][]int) {
	first, step := grid[0].Start, grid[0].End.Sub(grid[0].Start)
	for _, ss := range m {
		k := slices.Index(b.values, string(ss.Metric[model.LabelName(b.label)]))
		if k < 0 {
			continue
		}
		for _, sp := range ss.Values {
			d := sp.Timestamp.Time().Sub(first)
			if d >= 0 && d%step == 0 && int(d/step) <= len(grid) {
				out[b.index[k]][d/step] = max(int(sp.Value), 0)
			}
		}
	}
}

// refusedAt reports whether the server refused the @ modifier.
func (e *Engine) refusedAt() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.noAt
}

// remember keeps the Presence answers of batch b's targets (rows, by
// q.Targets' index; all, the number of series of each over the grid).
func (e *Engine) remember(q snapshot.HistogramQuery, b batch, rows [][]int, all map[string]int) {
	k := keyOf(q)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.seen == nil {
		e.seen = map[presenceKey]map[string]presence{}
	}
	if e.seen[k] == nil {
		e.seen[k] = map[string]presence{}
	}
	for i, name := range b.values {
		row := rows[b.index[i]]
		p := presence{all: all[name], edges: len(row)}
		for j, c := range row {
			if c != p.all {
				p.short = append(p.short, edgeCount{j, c})
			}
		}
		e.seen[k][b.label+"\xff"+name] = p
	}
}

// steady returns, per row of batch b's answer (one, or one per target
// when q.Each is set) and interval of q.Grid, whether the set of _count
// series may differ between the interval's edges, from the answers of
// Presence: not where a target has all its series at both edges, or none
// at either. ok is false where Presence was not asked about every target
// of b, or where more than maxExact intervals may differ (the set-change
// query may find fewer).
func (e *Engine) steady(q snapshot.HistogramQuery, b batch, rows int) (changed [][]bool, exact []int, ok bool) {
	k := keyOf(q)
	e.mu.Lock()
	defer e.mu.Unlock()
	seen := e.seen[k]
	if seen == nil {
		return nil, nil, false
	}
	changed = make([][]bool, rows)
	for r := range changed {
		changed[r] = make([]bool, len(q.Grid))
	}
	for t, name := range b.values {
		p, found := seen[b.label+"\xff"+name]
		switch {
		case !found || (p.short != nil && p.edges != len(q.Grid)+1):
			return nil, nil, false
		case p.short == nil:
			continue
		}
		r := 0
		if q.Each {
			r = t
		}
		// Only the intervals at an edge short of all can differ: the one
		// it ends and the one it starts, in ascending order.
		last := -1
		for _, sc := range p.short {
			for i := max(sc.edge-1, last+1); i <= sc.edge && i < len(q.Grid); i++ {
				last = i
				c0, c1 := p.at(i), p.at(i+1)
				if c0 == c1 && (c0 == 0 || c0 == p.all) {
					continue
				}
				changed[r][i] = true
				if !slices.Contains(exact, i) {
					if exact = append(exact, i); len(exact) > maxExact {
						return nil, nil, false
					}
				}
			}
		}
	}
	return changed, exact, true
}

// eachBatch calls fn with each batch of q's targets (batches), and with
// the halves of a batch whose query the server refused as too large
// (HTTP 422, a response over MaxResponseBytes), down to one target: one
// target too large is ErrTooLarge. fn must keep nothing of a batch it
// fails.
func (e *Engine) eachBatch(q snapshot.HistogramQuery, fn func(batch) error) error {
	bs, err := e.batches(q)
	if err != nil {
		return err
	}
	for len(bs) > 0 {
		b := bs[0]
		bs = bs[1:]
		err := fn(b)
		switch {
		case err == nil:
		case !errors.Is(err, errSplit):
			return err
		case len(b.values) < 2:
			return fmt.Errorf("%w: %s %s: %w", ErrTooLarge, b.label, b.values[0], err)
		default:
			h := len(b.values) / 2
			bs = append([]batch{
				{label: b.label, values: b.values[:h], index: b.index[:h]},
				{label: b.label, values: b.values[h:], index: b.index[h:]},
			}, bs...)
		}
	}
	return nil
}

// queryRange runs a range query with the reader's retries.
func (e *Engine) queryRange(expr string, start, end time.Time, step time.Duration) (model.Matrix, error) {
	var val model.Value
	err := e.r.retry(e.ctx, "query_range "+expr, func(ctx context.Context) (v1.Warnings, error) {
		var w v1.Warnings
		var err error
		val, w, _, err = e.r.api.QueryRange(ctx, expr, v1.Range{Start: start, End: end, Step: step})
		return w, err
	})
	e.count()
	if err != nil {
		return nil, e.wrap(err)
	}
	m, ok := val.(model.Matrix)
	if !ok {
		return nil, fmt.Errorf("%w: %s: the server answered a %s, not a range vector", ErrServer, expr, typeName(val))
	}
	return m, nil
}

// query runs an instant query with the reader's retries.
func (e *Engine) query(expr string, t time.Time) (model.Vector, error) {
	var val model.Value
	err := e.r.retry(e.ctx, "query "+expr, func(ctx context.Context) (v1.Warnings, error) {
		var w v1.Warnings
		var err error
		val, w, _, err = e.r.api.Query(ctx, expr, t)
		return w, err
	})
	e.count()
	if err != nil {
		return nil, e.wrap(err)
	}
	v, ok := val.(model.Vector)
	if !ok {
		return nil, fmt.Errorf("%w: %s: the server answered a %s, not an instant vector", ErrServer, expr, typeName(val))
	}
	return v, nil
}

// wrap names the server in an error of a query: a fatal one (a 4xx, a
// certificate) names it already.
func (e *Engine) wrap(err error) error {
	if f := e.r.fatalErr(); f != nil || errors.Is(err, errSplit) {
		return cmp.Or(f, err)
	}
	return fmt.Errorf("snapshot: server %s: %w", e.r.red, err)
}

func (e *Engine) count() {
	e.mu.Lock()
	e.queries++
	e.mu.Unlock()
}

// A Timeline is one series of a Timelines answer: its labels, and its
// value at the end of each window of the grid (NaN where it has none).
type Timeline struct {
	Labels labels.Labels
	Values []float64
}

// maxPoints is the most points a range query of Timelines asks for: under
// the 11,000 points a series that Prometheus answers.
const maxPoints = 10000

// Timelines evaluates expr at the end of each window of grid, whose
// windows must follow one another with one length (snapshot.Grid's), by
// range queries split by time where one would pass maxPoints, and returns
// one Timeline per series of the answers, in the order of their labels.
// A sample at a time that is no window's end is an error (ErrServer).
func (e *Engine) Timelines(expr string, grid []snapshot.Window) ([]Timeline, error) {
	if len(grid) == 0 {
		return nil, nil
	}
	step := grid[0].Duration()
	for i, w := range grid {
		if w.Duration() != step || step <= 0 || i > 0 && !w.Start.Equal(grid[i-1].End) {
			return nil, fmt.Errorf("promapi: Timelines: window %d (%v) breaks the grid of %v", i, w, step)
		}
	}
	first := grid[0].End
	byLabels := map[string]*Timeline{}
	for lo := 0; lo < len(grid); lo += maxPoints {
		hi := min(lo+maxPoints, len(grid)) - 1
		m, err := e.queryRange(expr, grid[lo].End, grid[hi].End, step)
		if err != nil {
			return nil, err
		}
		for _, ss := range m {
			tl := byLabels[ss.Metric.String()]
			if tl == nil {
				b := labels.NewScratchBuilder(len(ss.Metric))
				for k, v := range ss.Metric {
					b.Add(string(k), string(v))
				}
				b.Sort()
				tl = &Timeline{Labels: b.Labels(), Values: make([]float64, len(grid))}
				for i := range tl.Values {
					tl.Values[i] = math.NaN()
				}
				byLabels[ss.Metric.String()] = tl
			}
			for _, p := range ss.Values {
				d := p.Timestamp.Time().Sub(first)
				i := int(d / step)
				if d%step != 0 || i < lo || i > hi {
					return nil, fmt.Errorf("%w: %s: a sample at %s, which is no interval's end", ErrServer, expr, msTime(int64(p.Timestamp)))
				}
				tl.Values[i] = float64(p.Value)
			}
		}
	}
	out := make([]Timeline, 0, len(byLabels))
	for _, tl := range byLabels {
		out = append(out, *tl)
	}
	slices.SortFunc(out, func(a, b Timeline) int { return labels.Compare(a.Labels, b.Labels) })
	return out, nil
}
