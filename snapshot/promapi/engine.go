package promapi

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
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
// large, and the batches' answers are added up.
//
// An Engine is safe for concurrent use; it counts its queries and the
// bytes received (Cost).
type Engine struct {
	r   *reader
	ctx context.Context

	mu      sync.Mutex
	queries int
}

// Engine returns the Engine of the server at address, under the
// Matchers and Limits of opts (Start and End are not used).
func (c Config) Engine(ctx context.Context, address string, opts snapshot.Options) (*Engine, error) {
	lim := opts.Limits.WithDefaults()
	c = c.withDefaults(lim)
	u, err := url.Parse(address)
	if err != nil || u.Host == "" {
		return nil, errorf(address, "not a server address")
	}
	opts.Start, opts.End = time.Unix(0, 0), time.Unix(0, 0)
	r, err := newReader(c, address, Redact(address), opts, lim)
	if err != nil {
		return nil, err
	}
	r.cancel = func() {}
	return &Engine{r: r, ctx: ctx}, nil
}

// Cost says what the engine's questions cost the server, as a note for
// the report's inputs: the queries, the HTTP requests and the bytes of
// the responses. Its text is written when it is read, so that a note
// taken before a diagnosis that asks the engine more (the replicas'
// timelines) counts those too.
func (e *Engine) Cost() snapshot.Problem {
	return snapshot.Problem{Severity: snapshot.SeverityInfo, File: e.r.red, Offset: -1, Err: engineCost{e}}
}

// engineCost is the error of Cost's note.
type engineCost struct{ e *Engine }

func (c engineCost) Error() string {
	c.e.mu.Lock()
	n := c.e.queries
	c.e.mu.Unlock()
	return fmt.Sprintf("aggregated in the server with %d queries: %d HTTP requests, %s of responses received",
		n, c.e.r.tr.requests.Load(), byteSize(c.e.r.tr.received.Load()))
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
	bs, err := e.batches(q)
	if err != nil {
		return nil, err
	}
	rows := 1
	if q.Each {
		rows = len(q.Targets)
	}
	acc := make([][]*histogram.Histogram, rows)
	for i := range acc {
		acc[i] = make([]*histogram.Histogram, len(q.Grid))
	}
	off := model.Duration(step).String()
	for len(bs) > 0 {
		b := bs[0]
		bs = bs[1:]
		by := "le"
		if q.Each {
			by += ", " + b.label
		}
		var parts [3]model.Matrix
		var errs [3]error
		var wg sync.WaitGroup
		for k, suffix := range []string{"_bucket", "_sum", "_count"} {
			sel := e.selector(q.Metric+suffix, q, b)
			grp := by
			if suffix != "_bucket" {
				grp = strings.TrimPrefix(strings.TrimPrefix(by, "le"), ", ")
			}
			expr := fmt.Sprintf("sum by (%s) (%s - %s offset %s)", grp, sel, sel, off)
			wg.Add(1)
			go func() {
				defer wg.Done()
				parts[k], errs[k] = e.queryRange(expr, q.Grid[0].End, q.Grid[len(q.Grid)-1].End, step)
			}()
		}
		wg.Wait()
		if halves, err := splitOnTooLarge(b, errs[:]...); err != nil {
			return nil, err
		} else if halves != nil {
			bs = append(halves, bs...)
			continue
		}
		row := func(m model.Metric) int {
			if !q.Each {
				return 0
			}
			v := string(m[model.LabelName(b.label)])
			if k := slices.Index(b.values, v); k >= 0 {
				return b.index[k]
			}
			return -1
		}
		at := func(ts model.Time) int {
			d := ts.Time().Sub(q.Grid[0].End)
			if d < 0 || d%step != 0 {
				return -1
			}
			if i := int(d / step); i < len(q.Grid) {
				return i
			}
			return -1
		}
		// The buckets: counts per row, interval and bound.
		type key struct{ row, i int }
		counts := map[key]map[float64]float64{}
		for _, ss := range parts[0] {
			r := row(ss.Metric)
			le, err := strconv.ParseFloat(string(ss.Metric["le"]), 64)
			if r < 0 || err != nil {
				continue
			}
			for _, sp := range ss.Values {
				if i := at(sp.Timestamp); i >= 0 {
					k := key{r, i}
					if counts[k] == nil {
						counts[k] = map[float64]float64{}
					}
					counts[k][le] += float64(sp.Value)
				}
			}
		}
		for k, byLe := range counts {
			bounds := make([]float64, 0, len(byLe))
			for le := range byLe {
				bounds = append(bounds, le)
			}
			slices.Sort(bounds)
			h := acc[k.row][k.i]
			if h == nil {
				h = &histogram.Histogram{Bounds: bounds, Counts: make([]float64, len(bounds)), Count: math.NaN(), Sum: math.NaN()}
				acc[k.row][k.i] = h
			} else if !slices.Equal(h.Bounds, bounds) {
				return nil, fmt.Errorf("promapi: engine: %s: the batches' bucket layouts differ", q.Metric)
			}
			for j, le := range bounds {
				h.Counts[j] += byLe[le]
			}
		}
		for k, m := range []model.Matrix{parts[1], parts[2]} {
			for _, ss := range m {
				r := row(ss.Metric)
				if r < 0 {
					continue
				}
				for _, sp := range ss.Values {
					i := at(sp.Timestamp)
					if i < 0 || acc[r][i] == nil {
						continue
					}
					p := &acc[r][i].Sum
					if k == 1 {
						p = &acc[r][i].Count
					}
					if math.IsNaN(*p) {
						*p = 0
					}
					*p += float64(sp.Value)
				}
			}
		}
	}
	return acc, nil
}

// Resets implements snapshot.Engine.
func (e *Engine) Resets(q snapshot.HistogramQuery) ([]string, error) {
	if len(q.Grid) == 0 {
		return nil, nil
	}
	bs, err := e.batches(q)
	if err != nil {
		return nil, err
	}
	end := q.Grid[len(q.Grid)-1].End
	rng := model.Duration(end.Sub(q.Grid[0].Start) + snapshot.Lookback).String()
	var out []string
	for len(bs) > 0 {
		b := bs[0]
		bs = bs[1:]
		expr := fmt.Sprintf("sum by (%s) (resets(%s[%s])) > 0", b.label, e.selector(q.Metric+"_count", q, b), rng)
		v, err := e.query(expr, end)
		if halves, err := splitOnTooLarge(b, err); err != nil {
			return nil, err
		} else if halves != nil {
			bs = append(halves, bs...)
			continue
		}
		for _, s := range v {
			if name := string(s.Metric[model.LabelName(b.label)]); slices.Contains(b.values, name) {
				out = append(out, name)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// splitOnTooLarge returns the first of errs, or, when it is a server's
// refusal of a query too large (HTTP 422, a response over
// MaxResponseBytes) and b has several targets, b in halves to ask for
// instead. One target too large is ErrTooLarge.
func splitOnTooLarge(b batch, errs ...error) ([]batch, error) {
	for _, err := range errs {
		if err == nil {
			continue
		}
		if !errors.Is(err, errSplit) {
			return nil, err
		}
		if len(b.values) < 2 {
			return nil, fmt.Errorf("%w: %s %s: %w", ErrTooLarge, b.label, b.values[0], err)
		}
		h := len(b.values) / 2
		return []batch{
			{label: b.label, values: b.values[:h], index: b.index[:h]},
			{label: b.label, values: b.values[h:], index: b.index[h:]},
		}, nil
	}
	return nil, nil
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
