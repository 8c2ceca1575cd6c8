package promapi

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"

	"github.com/whyslow/whyslow/snapshot"
	"github.com/whyslow/whyslow/snapshot/internal/store"
)

// Read reads the series that opts selects from the server at address (a
// base URL such as http://prometheus:9090, a Thanos Query, a Mimir
// .../prometheus prefix or a VictoriaMetrics :8428), over
// [opts.Start, opts.End], into snapshot.Evidence.
//
// What is read: the families of opts.Metrics (each name, and the _bucket,
// _sum and _count series of a histogram of that name), or, when it is
// empty, every metric name the server holds for opts.Matchers (narrowed by
// c.KeepName); only series matching opts.Matchers. The families of
// opts.LabelsOnly are listed by their labels, without samples (by remote
// read asking for labels only where the server serves it, else
// /api/v1/series). An open opts.End is
// now; an open opts.Start is c.DefaultRange before the end, with a
// warning saying so.
//
// How: the metric names and the pods (else instances) are listed first
// (/api/v1/label/.../values); then each family is read in chunks of at
// most c.MaxRange and batches of c.TargetsPerQuery pods, c.Concurrency at
// a time, by remote read where the server serves it (see
// Config.QueryOnly), else with one range-vector selector each
// ({__name__=~"...",pod=~"..."}[RANGE] at the chunk's end). Chunks are half-open (start,
// end], so a sample on a chunk edge is read once whatever the server's
// edge rule; the first chunk starts c.Overfetch early, and samples outside
// [opts.Start, opts.End] are dropped, as the TSDB reader drops them.
//
// Limits: a query the server rejects as too large (HTTP 422, such as
// "query processing would load too many samples") or whose response
// exceeds c.MaxResponseBytes is split in two (pods first, then time, not
// below c.MinRange) and retried, the halves before the queries not yet
// made; one still too large for one pod over c.MinRange stops the read
// with ErrTooLarge naming it. 5xx, 429 (after its Retry-After), timeouts
// and refused connections are retried c.Retries times with backoff. A
// query that still fails is a snapshot.Problem of snapshot.SeverityError
// naming the query and the server's message, and the rest is read (check
// Evidence.Partial). Any other 4xx (401, 403, bad_data) stops the read
// with an error naming the URL, the query and the server's message. The
// whole read, retries included, stops with ErrDeadline after c.Deadline.
//
// Samples are classified by name and labels as snapshot classifies a
// /federate dump, and belong to the target of their exported_pod, pod or
// instance label. Native histogram samples are dropped with a problem
// (ErrNativeHistogram). The address appears redacted (see Redact) in
// Evidence.Sources, problems and errors.
func (c Config) Read(ctx context.Context, address string, opts snapshot.Options) (*snapshot.Evidence, error) {
	r, err := c.reader(address, opts)
	if err != nil {
		return nil, err
	}
	return r.read(ctx)
}

// reader is one Read of one server.
type reader struct {
	cfg    Config
	red    string // the redacted address: source, problem file
	opts   snapshot.Options
	lim    snapshot.Limits
	api    v1.API
	client api.Client // for what v1.API does not ask (remote read)
	tr     *transport
	remote remoteState
	// noListRead says that the server answers a remote read asking for
	// labels only with samples (listRemote).
	noListRead atomic.Bool
	start      int64 // ms, inclusive
	end        int64 // ms, inclusive
	problem    []snapshot.Problem

	mu       sync.Mutex
	done     int
	total    int
	failed   int
	lookups  int    // label value lookups done
	pending  []int  // per batch, the queries not yet answered (ReadEach)
	queue    *queue // the queries of the read under way
	fatal    error
	cancel   context.CancelFunc
	progress func(snapshot.Progress)
}

// reader returns the reader of the server at address under c's
// settings (defaults for its zero fields) and opts (a memory budget of
// Limits.MaxMemory when it has none).
func (c Config) reader(address string, opts snapshot.Options) (*reader, error) {
	lim := opts.Limits.WithDefaults()
	if opts.Memory == nil {
		opts.Memory = snapshot.NewMemoryBudget(lim.MaxMemory)
	}
	c = c.withDefaults(lim)
	red := Redact(address)
	u, err := url.Parse(address)
	if err != nil || u.Host == "" {
		return nil, errorf(address, "not a server address")
	}
	if err := c.HTTP.Validate(); err != nil {
		return nil, errorf(address, "%v", err)
	}
	tr, err := newTransport(c.HTTP, u, c.MaxResponseBytes)
	if err != nil {
		return nil, errorf(address, "%v", err)
	}
	hc := &http.Client{Transport: tr, CheckRedirect: checkRedirect}
	cl, err := api.NewClient(api.Config{Address: address, Client: hc})
	if err != nil {
		return nil, errorf(address, "not a server address")
	}
	client := bodyClient{Client: cl, hc: hc}
	r := &reader{cfg: c, red: red, opts: opts, lim: lim, api: v1.NewAPI(client), client: client, tr: tr, progress: opts.Progress}
	end := opts.End
	if end.IsZero() {
		end = c.Now()
	}
	start := opts.Start
	if start.IsZero() {
		start = end.Add(-c.DefaultRange)
		r.problem = append(r.problem, snapshot.Problem{Severity: snapshot.SeverityWarning, File: red, Offset: -1,
			Err: fmt.Errorf("no start of the time range given: read the %s up to %s", model.Duration(c.DefaultRange), end.UTC().Format(time.RFC3339))})
	}
	if start.After(end) {
		return nil, errorf(address, "start %s is after end %s", start.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339))
	}
	r.start, r.end = start.UnixMilli(), end.UnixMilli()
	return r, nil
}

// unit is one query: the sample names of one family (or of several, see
// parts), a batch of target label values (nil: no split), over the
// half-open range (from, to] in ms.
type unit struct {
	family string
	names  []string
	// parts are the families of a unit that reads several at once (by
	// remote read; a query reads one family, see do), family their names
	// joined.
	parts   []family
	label   string   // "pod", "instance" or ""
	targets []string // values of label; [""] selects series without it
	from    int64
	to      int64
	batch   int // index of the plan's batch of targets
}

// joined is the unit of the families fs read at once.
func joined(fs []family, label string) unit {
	if len(fs) == 1 {
		return unit{family: fs[0].name, names: fs[0].names, label: label}
	}
	u := unit{label: label, parts: fs}
	var names []string
	for _, f := range fs {
		u.names, names = append(u.names, f.names...), append(names, f.name)
	}
	u.family = strings.Join(names, ", ")
	return u
}

// families are the names of u's families.
func (u unit) families() []string {
	if len(u.parts) == 0 {
		return []string{u.family}
	}
	out := make([]string, len(u.parts))
	for i, f := range u.parts {
		out[i] = f.name
	}
	return out
}

// matchers select u's series.
func (r *reader) matchers(u unit) []*labels.Matcher {
	ms := []*labels.Matcher{nameMatcher(u.names)}
	ms = append(ms, r.opts.Matchers...)
	if u.label != "" {
		ms = append(ms, valuesMatcher(u.label, u.targets))
	}
	return ms
}

// selector returns the PromQL selector of u, without range.
func (r *reader) selector(u unit) string { return matchersString(r.matchers(u)) }

func nameMatcher(names []string) *labels.Matcher {
	if len(names) == 1 {
		return labels.MustNewMatcher(labels.MatchEqual, model.MetricNameLabel, names[0])
	}
	return valuesMatcher(model.MetricNameLabel, names)
}

// valuesMatcher matches label to any of values exactly.
func valuesMatcher(label string, values []string) *labels.Matcher {
	if len(values) == 1 {
		return labels.MustNewMatcher(labels.MatchEqual, label, values[0])
	}
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = regexp.QuoteMeta(v)
	}
	return labels.MustNewMatcher(labels.MatchRegexp, label, strings.Join(q, "|"))
}

func matchersString(ms []*labels.Matcher) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = m.String()
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// query returns the instant query of u and its evaluation time.
func (r *reader) query(u unit) (string, time.Time) {
	d := model.Duration(time.Duration(u.to-u.from) * time.Millisecond)
	return r.selector(u) + "[" + d.String() + "]", time.UnixMilli(u.to)
}

// errDeadlineCause is the cause of the context of a read whose
// Config.Deadline passed.
var errDeadlineCause = errors.New("Config.Deadline passed")

// read reads the server whole within r.cfg.Deadline.
func (r *reader) read(parent context.Context) (*snapshot.Evidence, error) {
	return r.within(parent, func(ctx context.Context) (*snapshot.Evidence, error) { return r.readGroups(ctx, true, nil, nil) })
}

// within runs read under r.cfg.Deadline.
func (r *reader) within(parent context.Context, read func(context.Context) (*snapshot.Evidence, error)) (*snapshot.Evidence, error) {
	begin := time.Now()
	ctx, cancel := context.WithTimeoutCause(parent, r.cfg.Deadline, errDeadlineCause)
	defer cancel()
	ev, err := read(ctx)
	if err != nil && r.fatalErr() == nil && parent.Err() == nil && context.Cause(ctx) == errDeadlineCause {
		return nil, r.deadlineError(time.Since(begin))
	}
	return ev, err
}

// deadlineError says that r.cfg.Deadline passed after elapsed, and what
// was done by then.
func (r *reader) deadlineError(elapsed time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var did string
	if r.total == 0 {
		did = fmt.Sprintf("while listing metric names and targets (%d lookups done)", r.lookups)
	} else {
		did = fmt.Sprintf("%d of %d queries done, %d of them failed", r.done, r.total, r.failed)
	}
	return fmt.Errorf("snapshot: server %s: %w (Config.Deadline %s) after %s: %d HTTP requests sent, %s",
		r.red, ErrDeadline, r.cfg.Deadline, elapsed.Round(time.Millisecond), r.tr.requests.Load(), did)
}

// plan is what a read asks for: the label the series are batched by
// (pod, else instance; "" for none), its values in batches, the units
// of samples (batch-major: every chunk of a batch, then the next batch)
// and the units of series listed by their labels.
type plan struct {
	label   string
	names   []string // the sample names read
	batches [][]string
	units   []unit
	listed  []unit
}

// plan lists the metric names and the targets, and makes the units that
// read them; listedPer is how many batches' targets one listing covers.
func (r *reader) plan(ctx context.Context, listedPer int) (plan, error) {
	qfrom := r.start - r.cfg.Overfetch.Milliseconds()
	families, err := r.families(ctx, qfrom)
	if err != nil {
		return plan{}, err
	}
	label, targets, err := r.targets(ctx, families, qfrom)
	if err != nil {
		return plan{}, err
	}
	p := plan{label: label, batches: batches(targets, r.cfg.TargetsPerQuery)}
	for _, f := range families {
		p.names = append(p.names, f.names...)
	}
	step := r.cfg.MaxRange.Milliseconds()
	var only, sampled []family // only: listed by their labels, listFamilies at a time
	for _, f := range families {
		if slices.Contains(r.opts.LabelsOnly, f.name) {
			only = append(only, f)
		} else {
			sampled = append(sampled, f)
		}
	}
	// One unit reads every family of a batch and chunk: a remote read
	// at once, queries one family each (see do).
	if len(sampled) > 0 {
		u := joined(sampled, label)
		for i, batch := range p.batches {
			for from := qfrom; from < r.end; from += step {
				u.targets, u.from, u.to, u.batch = batch, from, min(from+step, r.end), i
				p.units = append(p.units, u)
			}
		}
	}
	for fs := range slices.Chunk(only, listFamilies) {
		u := joined(fs, label)
		for _, batch := range batches(targets, r.cfg.TargetsPerQuery*listedPer) {
			u.targets = batch
			p.listed = append(p.listed, u)
		}
	}
	return p, nil
}

// launch makes the queries of units, Concurrency at a time (see run),
// and returns their results as they come.
func (r *reader) launch(ctx context.Context, units []unit) <-chan result {
	r.mu.Lock()
	r.total = len(units)
	r.mu.Unlock()
	r.report(0)
	results := make(chan result, r.cfg.Concurrency)
	q := newQueue(units)
	r.queue = q
	go r.run(ctx, q, results)
	return results
}

// take counts the result res (read or failed, and the progress) and
// records its problems; it reports whether res holds series to add.
func (r *reader) take(res result, read, failed *int) bool {
	r.mu.Lock()
	r.done++
	done := r.done
	if res.err != nil {
		r.failed++
	}
	r.mu.Unlock()
	r.report(done)
	if res.err != nil {
		*failed++
		for _, f := range res.unit.families() {
			r.problem = append(r.problem, snapshot.Problem{Severity: snapshot.SeverityError, File: r.red, Offset: -1, Family: f, Err: res.err})
		}
		return false
	}
	*read++
	r.problem = append(r.problem, res.problems...)
	return true
}

// add appends the series of res to cols.
func (r *reader) add(cols *store.Columns, res result) {
	var like *store.Column // series of one answer share their times where they can
	for _, s := range res.series {
		c := cols.Series(r.red, s.lset)
		if c == nil {
			continue // a limit forbids the series: the problem is recorded
		}
		if len(s.t) > 0 {
			c.AppendFloats(s.t, s.v, like, len(s.t))
			like = c
		}
	}
}

// charge charges the samples of cols against Options.Memory and, with
// the bytes of the batches read before (earlier), Limits.MaxTotalBytes;
// past either, the read stops with the limit's error.
func (r *reader) charge(cols *store.Columns, earlier int64) {
	if err := cols.Charge(r.red); err != nil {
		// The samples kept exceed Limits.MaxMemory: stop asking.
		r.setFatal(fmt.Errorf("snapshot: server %s: %w", r.red, err))
	} else if cols.Full() || earlier+cols.Bytes() > r.lim.MaxTotalBytes {
		r.setFatal(fmt.Errorf("snapshot: server %s: %w", r.red, &snapshot.LimitError{Limit: "Limits.MaxTotalBytes", Max: r.lim.MaxTotalBytes,
			Msg: fmt.Sprintf("samples read from the server exceed %d bytes", r.lim.MaxTotalBytes)}))
	}
}

// nothingRead is the error of a read none of whose queries succeeded
// while some failed, joining the error problems; nil otherwise.
func (r *reader) nothingRead(read, failed int, problems []snapshot.Problem) error {
	if read > 0 || failed == 0 {
		return nil
	}
	errs := make([]error, 0, len(problems))
	for _, p := range problems {
		if p.Severity == snapshot.SeverityError {
			errs = append(errs, p)
		}
	}
	return fmt.Errorf("snapshot: server %s: nothing could be read: %w", r.red, errors.Join(errs...))
}

// listSeries lists the series of the units by their labels, without
// samples (Options.LabelsOnly), Concurrency at a time, and returns them in
// the units' order: by remote read asking for labels only (listRemote)
// where the server serves it, else with /api/v1/series.
func (r *reader) listSeries(ctx context.Context, units []unit) ([][]labels.Labels, error) {
	qfrom := r.start - r.cfg.Overfetch.Milliseconds()
	sets := make([][]labels.Labels, len(units))
	errs := make([]error, len(units))
	sem := make(chan struct{}, r.cfg.Concurrency)
	var wg sync.WaitGroup
	for i, u := range units {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			ls, ok := r.listRemote(ctx, u, qfrom, r.end)
			if !ok {
				sel := r.selector(u)
				errs[i] = r.retry(ctx, "series "+sel, func(ctx context.Context) (v1.Warnings, error) {
					set, w, _, err := r.api.Series(ctx, []string{sel}, time.UnixMilli(qfrom), time.UnixMilli(r.end))
					ls = make([]labels.Labels, len(set))
					for k, l := range set {
						ls[k] = labelsOf(l)
					}
					return w, err
				})
			}
			sets[i] = ls
			if errs[i] == nil {
				r.mu.Lock()
				r.lookups++
				r.mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for i, u := range units {
		if errs[i] != nil {
			return nil, fmt.Errorf("snapshot: server %s: listing %s: %w", r.red, u.what(), errs[i])
		}
	}
	return sets, nil
}

// addListed adds the series listed by their labels (ls) to cols, without
// samples.
func addListed(cols *store.Columns, src string, ls []labels.Labels) {
	for _, l := range ls {
		if c := cols.Series(src, l); c != nil {
			c.KeepLabels()
		}
	}
}

// labelsOf converts a label set to sorted labels.
func labelsOf(ls model.LabelSet) labels.Labels {
	b := labels.NewScratchBuilder(len(ls))
	for k, v := range ls {
		b.Add(string(k), string(v))
	}
	b.Sort()
	return b.Labels()
}

// listFamilies is how many families one listing of series by their
// labels asks for.
const listFamilies = 16

// costNote says what the read cost the server: the queries made, the
// HTTP requests sent (lookups and retries included) and the bytes of the
// responses received (as the HTTP client hands them over, after
// decompression), as a note (snapshot.SeverityInfo) that reports list
// with the inputs.
func (r *reader) costNote() snapshot.Problem {
	r.mu.Lock()
	queries, lookups := r.done, r.lookups
	r.mu.Unlock()
	return snapshot.Problem{Severity: snapshot.SeverityInfo, File: r.red, Offset: -1,
		Err: fmt.Errorf("read with %d queries and %d label lookups: %d HTTP requests, %s of responses received%s",
			queries, lookups, r.tr.requests.Load(), byteSize(r.tr.received.Load()), r.remote.note(queries))}
}

// byteSize writes n bytes for a note: "934 bytes", "12.3 MB".
func byteSize(n int64) string {
	if n < 1e6 {
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/1e6)
}

// run makes the queries of units with r.cfg.Concurrency workers and sends
// their results on results, which it closes at the end. The halves of a
// query split are made before the queries not yet made (depth first), so
// that a query that cannot be made small enough is found after a few
// splits, not after every other query has been split too.
func (r *reader) run(ctx context.Context, q *queue, results chan<- result) {
	stop := context.AfterFunc(ctx, q.close)
	defer stop()
	var wg sync.WaitGroup
	for range r.cfg.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				u, ok := q.pop()
				if !ok {
					return
				}
				res := r.do(ctx, u)
				if res.split != nil {
					r.mu.Lock()
					r.total += len(res.split) - 1
					if r.pending != nil {
						r.pending[u.batch] += len(res.split) - 1
					}
					r.mu.Unlock()
					q.finish(res.split)
					continue
				}
				if ctx.Err() == nil { // else the read is abandoned: no result
					select {
					case results <- res:
					case <-ctx.Done():
					}
				}
				q.finish(nil)
			}
		}()
	}
	wg.Wait()
	close(results)
}

// queue is the stack of queries to make: the last pushed is made first.
// Units are pushed in the order of their batches, and a query's halves
// are in its batch, so the top is always of the earliest batch left.
type queue struct {
	mu     sync.Mutex
	cond   *sync.Cond
	stack  []unit
	busy   int // queries being made
	closed bool
	// limit is the last batch whose queries may start (ReadEach, which
	// holds the batches answered until their turn comes).
	limit int
}

// newQueue returns a queue of units, all of which may start.
func newQueue(units []unit) *queue {
	q := &queue{limit: math.MaxInt}
	q.cond = sync.NewCond(&q.mu)
	q.push(units)
	return q
}

// allow lets the queries of the batches up to last start.
func (q *queue) allow(last int) {
	q.mu.Lock()
	q.limit = last
	q.mu.Unlock()
	q.cond.Broadcast()
}

// push puts us on top of the stack, us[0] on the very top. The caller
// holds no lock.
func (q *queue) push(us []unit) {
	q.mu.Lock()
	for i := len(us) - 1; i >= 0; i-- {
		q.stack = append(q.stack, us[i])
	}
	q.mu.Unlock()
}

// pop takes the query on top, waiting while the stack is empty and
// queries being made may still add to it; false when all is done or the
// queue is closed.
func (q *queue) pop() (unit, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for !q.closed && (len(q.stack) == 0 && q.busy > 0 || len(q.stack) > 0 && q.stack[len(q.stack)-1].batch > q.limit) {
		q.cond.Wait()
	}
	if q.closed || len(q.stack) == 0 {
		return unit{}, false
	}
	u := q.stack[len(q.stack)-1]
	q.stack = q.stack[:len(q.stack)-1]
	q.busy++
	return u, true
}

// finish ends a query popped, pushing its halves if it was split.
func (q *queue) finish(split []unit) {
	q.push(split)
	q.mu.Lock()
	q.busy--
	q.mu.Unlock()
	q.cond.Broadcast()
}

// close makes every pop return false.
func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.cond.Broadcast()
}

// builderOptions are opts for the Columns that classify the samples
// (named after the redacted address, which TargetName is given).
func (r *reader) builderOptions() snapshot.Options {
	o := r.opts
	o.Progress = nil
	return o
}

func (r *reader) report(done int) {
	if r.progress == nil {
		return
	}
	r.mu.Lock()
	total := r.total
	r.mu.Unlock()
	r.progress(snapshot.Progress{Path: r.red, What: "server queries", Done: done, Total: total})
}

func (r *reader) setFatal(err error) {
	r.mu.Lock()
	if r.fatal == nil {
		r.fatal = err
	}
	r.mu.Unlock()
	r.cancel()
}

func (r *reader) fatalErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fatal
}

// family is the sample names read together: a histogram's _bucket, _sum
// and _count must be in one response to be assembled.
type family struct {
	name  string
	names []string
}

// families lists the metric names to read, grouped by family.
func (r *reader) families(ctx context.Context, qfrom int64) ([]family, error) {
	var match []*labels.Matcher
	if len(r.opts.Metrics) > 0 {
		match = append(match, nameMatcher(r.opts.MetricSampleNames()))
	}
	match = append(match, r.opts.Matchers...)
	if len(match) == 0 {
		match = append(match, labels.MustNewMatcher(labels.MatchRegexp, model.MetricNameLabel, ".+"))
	}
	sel := matchersString(match)
	vals, err := r.labelValues(ctx, model.MetricNameLabel, sel, qfrom)
	if err != nil {
		return nil, err
	}
	groups := map[string][]string{}
	var order []string
	for _, v := range vals {
		name := string(v)
		if len(r.opts.Metrics) == 0 && r.cfg.KeepName != nil && !r.cfg.KeepName(name) {
			continue
		}
		base := snapshot.FamilyBaseName(name)
		if groups[base] == nil {
			order = append(order, base)
		}
		groups[base] = append(groups[base], name)
	}
	slices.Sort(order)
	out := make([]family, 0, len(order))
	for _, base := range order {
		out = append(out, family{name: base, names: groups[base]})
	}
	if len(out) == 0 {
		r.problem = append(r.problem, snapshot.Problem{Severity: snapshot.SeverityWarning, File: r.red, Offset: -1,
			Err: fmt.Errorf("no series of the metrics asked for between %s and %s", time.UnixMilli(qfrom).UTC().Format(time.RFC3339), time.UnixMilli(r.end).UTC().Format(time.RFC3339))})
	}
	return out, nil
}

// targets chooses the label to batch series by (pod, else instance) and
// lists its values; series without it are read by the batch [""].
func (r *reader) targets(ctx context.Context, fams []family, qfrom int64) (string, []string, error) {
	if len(fams) == 0 {
		return "", nil, nil
	}
	var names []string
	for _, f := range fams {
		names = append(names, f.names...)
	}
	sel := matchersString(append([]*labels.Matcher{nameMatcher(names)}, r.opts.Matchers...))
	for _, label := range []string{"pod", "instance"} {
		vals, err := r.labelValues(ctx, label, sel, qfrom)
		if err != nil {
			return "", nil, err
		}
		if len(vals) > 0 {
			out := make([]string, 0, len(vals)+1)
			for _, v := range vals {
				out = append(out, string(v))
			}
			slices.Sort(out)
			return label, append(out, ""), nil
		}
	}
	return "", nil, nil
}

// batches splits targets into batches of n; no targets is one batch.
func batches(targets []string, n int) [][]string {
	if len(targets) == 0 {
		return [][]string{nil}
	}
	var out [][]string
	for len(targets) > 0 {
		k := min(n, len(targets))
		// The "" batch (series without the label) stays alone: a regex
		// alternative "" would match every series.
		if i := slices.Index(targets[:k], ""); i >= 0 {
			if i == 0 {
				k = 1
			} else {
				k = i
			}
		}
		out = append(out, targets[:k])
		targets = targets[k:]
	}
	return out
}

// labelValues lists the values of label on series matching sel in the
// range, with retries; a failure is fatal for the read.
func (r *reader) labelValues(ctx context.Context, label, sel string, qfrom int64) (model.LabelValues, error) {
	what := fmt.Sprintf("label values of %s for %s", label, sel)
	var vals model.LabelValues
	err := r.retry(ctx, what, func(ctx context.Context) (v1.Warnings, error) {
		var w v1.Warnings
		var err error
		vals, w, _, err = r.api.LabelValues(ctx, label, []string{sel}, time.UnixMilli(qfrom), time.UnixMilli(r.end))
		return w, err
	})
	if errors.Is(err, errSplit) {
		return nil, fmt.Errorf("snapshot: server %s: %w: /api/v1/label/%s/values: %s: %w", r.red, ErrTooLarge, label, what, err)
	}
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.lookups++
	r.mu.Unlock()
	return vals, nil
}

// result is the outcome of one unit.
type result struct {
	unit     unit
	series   []series
	problems []snapshot.Problem
	split    []unit
	err      error
}

// series is one series of an answer: labels with __name__, samples in
// the unit's range.
type series struct {
	lset labels.Labels
	t    []int64
	v    []float64
}

func (s *series) add(t int64, v float64) { s.t, s.v = append(s.t, t), append(s.v, v) }

// keep keeps the samples in [lo, hi] but staleness markers.
func (s *series) keep(lo, hi int64) {
	n := 0
	for i, t := range s.t {
		if t >= lo && t <= hi && !value.IsStaleNaN(s.v[i]) {
			s.t[n], s.v[n] = t, s.v[i]
			n++
		}
	}
	s.t, s.v = s.t[:n], s.v[:n]
}

// noAtError: the server refused PromQL's @ modifier (Prometheus before
// 2.33 without --enable-feature=promql-at-modifier, before 2.25 at all;
// Cortex and old Mimir unless the querier enables it).
type noAtError struct{ why string }

func (e *noAtError) Error() string { return e.why }

// refusesAt reports whether a server's message for a bad query says it
// does not take the @ modifier: "@ modifier is disabled" (Prometheus
// 2.25 to 2.32, Cortex, Mimir), or a parse error at the "@" (before 2.25).
func refusesAt(msg string) bool {
	return strings.Contains(msg, "@ modifier is disabled") || strings.Contains(msg, "unexpected character: '@'")
}

// errSplit: the query was too large for the server; split it.
var errSplit = errors.New("too large")

// splitError is errSplit with the reason given by the server or the
// size limit.
type splitError struct{ why string }

func (e *splitError) Error() string        { return e.why }
func (e *splitError) Is(target error) bool { return target == errSplit }

// do reads one unit: by remote read while the server serves it (see
// Config.QueryOnly), else by query.
func (r *reader) do(ctx context.Context, u unit) result {
	if !r.cfg.QueryOnly {
		if res, ok := r.doRemote(ctx, u); ok {
			return res
		}
	}
	if len(u.parts) > 1 { // a query reads one family
		out := make([]unit, len(u.parts))
		for i, f := range u.parts {
			out[i] = u
			out[i].family, out[i].names, out[i].parts = f.name, f.names, nil
		}
		return result{unit: u, split: out}
	}
	return r.doQuery(ctx, u)
}

// doQuery reads one unit with a range-vector query.
func (r *reader) doQuery(ctx context.Context, u unit) result {
	q, ts := r.query(u)
	var val model.Value
	var warns v1.Warnings
	err := r.retry(ctx, "query "+q, func(ctx context.Context) (v1.Warnings, error) {
		var err error
		val, warns, _, err = r.api.Query(ctx, q, ts)
		return warns, err
	})
	if errors.Is(err, errSplit) {
		return r.splitOrFail(u, fmt.Sprintf("/api/v1/query %s at %s", q, ts.UTC().Format(time.RFC3339)), err)
	}
	if err != nil {
		return result{unit: u, err: err}
	}
	res := result{unit: u}
	for _, w := range warns {
		res.problems = append(res.problems, snapshot.Problem{Severity: snapshot.SeverityWarning, File: r.red, Offset: -1, Family: u.family,
			Err: fmt.Errorf("server warning for %s: %s", q, r.tr.sec.line(w))})
	}
	m, ok := val.(model.Matrix)
	if !ok {
		res.err = fmt.Errorf("%w: %s: the server answered a %s, not a range vector", ErrServer, q, typeName(val))
		return res
	}
	lo := max(u.from+1, r.start) // (from, to] within [start, end]
	hi := min(u.to, r.end)
	native := 0
	for _, ss := range m {
		native += len(ss.Histograms)
		if ss.Metric[model.MetricNameLabel] == "" {
			continue
		}
		var s series
		for _, sp := range ss.Values {
			s.add(int64(sp.Timestamp), float64(sp.Value))
		}
		if s.keep(lo, hi); len(s.t) == 0 {
			continue
		}
		b := labels.NewScratchBuilder(len(ss.Metric))
		for k, v := range ss.Metric {
			b.Add(string(k), string(v))
		}
		b.Sort()
		s.lset = b.Labels()
		res.series = append(res.series, s)
	}
	if native > 0 {
		res.problems = append(res.problems, snapshot.Problem{Severity: snapshot.SeverityError, File: r.red, Offset: -1, Family: u.family,
			Err: fmt.Errorf("%w: %d samples of %s dropped", ErrNativeHistogram, native, q)})
	}
	return res
}

// splitOrFail is the result of u, which the server refused as too large
// (err, made as what says): its halves, or, when it cannot be split,
// ErrTooLarge, which stops the read.
func (r *reader) splitOrFail(u unit, what string, err error) result {
	if s := split(u, r.cfg.MinRange.Milliseconds()); s != nil {
		return result{unit: u, split: s}
	}
	ferr := fmt.Errorf("snapshot: server %s: %w: %s is still too large for %s over %s, the smallest query made: %w",
		r.red, ErrTooLarge, what, u.what(), model.Duration(time.Duration(u.to-u.from)*time.Millisecond), err)
	r.setFatal(ferr)
	return result{unit: u, err: ferr}
}

// msTime formats a time in ms for a message.
func msTime(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano) }

// what names the series u selects, for a message.
func (u unit) what() string {
	switch {
	case u.label == "":
		return "the family " + u.family
	case len(u.targets) == 1 && u.targets[0] == "":
		return fmt.Sprintf("the series of %s without %s", u.family, u.label)
	case len(u.targets) == 1:
		return fmt.Sprintf("one %s (%s) of %s", u.label, u.targets[0], u.family)
	}
	return fmt.Sprintf("%d %ss of %s", len(u.targets), u.label, u.family)
}

// split halves u: its targets first, then its families, then its time
// range, into halves no shorter than minRange ms; nil when u cannot be
// split.
func split(u unit, minRange int64) []unit {
	if len(u.targets) > 1 {
		a, b := u, u
		h := len(u.targets) / 2
		a.targets, b.targets = u.targets[:h], u.targets[h:]
		return []unit{a, b}
	}
	if len(u.parts) > 1 {
		h := len(u.parts) / 2
		a, b := joined(u.parts[:h], u.label), joined(u.parts[h:], u.label)
		a.targets, a.from, a.to, a.batch = u.targets, u.from, u.to, u.batch
		b.targets, b.from, b.to, b.batch = u.targets, u.from, u.to, u.batch
		return []unit{a, b}
	}
	if u.to-u.from >= 2*max(minRange, 1) {
		a, b := u, u
		mid := u.from + (u.to-u.from)/2
		a.to, b.from = mid, mid
		return []unit{a, b}
	}
	return nil
}

func typeName(v model.Value) string {
	if v == nil {
		return "nothing"
	}
	return v.Type().String()
}

// retry runs f with a per-request timeout, retrying what may pass on a
// second try. A permanent 4xx is fatal for the whole read. It returns
// errSplit (wrapped) when the server rejects the query as too large.
func (r *reader) retry(ctx context.Context, what string, f func(context.Context) (v1.Warnings, error)) error {
	backoff := r.cfg.Backoff
	for try := 0; ; try++ {
		info := &attempt{}
		rctx, cancel := context.WithTimeout(context.WithValue(ctx, attemptKey{}, info), r.cfg.Timeout)
		_, err := f(rctx)
		timedOut := rctx.Err() == context.DeadlineExceeded
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		status, retryAfter, tooLarge, redirect := info.get()
		msg := r.serverMessage(err)
		if redirect != "" {
			msg += " (redirected to " + redirect + ", another origin: no credentials sent there)"
		}
		var cert *tls.CertificateVerificationError
		switch {
		case errors.As(err, &cert):
			ferr := fmt.Errorf("snapshot: server %s: %w: %s: %s (see Config.HTTP.TLSConfig.CAFile)", r.red, ErrServer, what, msg)
			r.setFatal(ferr)
			return ferr
		case tooLarge || status == http.StatusUnprocessableEntity:
			return &splitError{why: msg}
		case status == http.StatusBadRequest && refusesAt(msg):
			// Only Presence asks with @, and it asks otherwise: the
			// read goes on.
			return &noAtError{why: msg}
		case status == http.StatusTooManyRequests || status >= 500 || timedOut || (status == 0 || status/100 == 2) && isNetErr(err):
			// A network error before an answer, or in the body of one
			// (a connection dropped mid-answer), is asked again.
			if try >= r.cfg.Retries {
				why := msg
				if timedOut {
					why = fmt.Sprintf("no answer within %s", r.cfg.Timeout)
				}
				return fmt.Errorf("%w: %s: %s (after %d tries)", ErrServer, what, why, try+1)
			}
			wait := backoff
			if retryAfter > 0 {
				wait = retryAfter
			}
			wait = min(wait, r.cfg.MaxBackoff)
			backoff *= 2
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			}
		default:
			ferr := fmt.Errorf("snapshot: server %s: %w: %s: %s", r.red, ErrServer, what, msg)
			r.setFatal(ferr)
			return ferr
		}
	}
}

// serverMessage describes err without the request URL (which may hold
// credentials), with the server's own message where it sent one, on one
// line of bounded length with every secret of the read redacted.
func (r *reader) serverMessage(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var ae *v1.Error
	if errors.As(err, &ae) {
		s := string(ae.Type) + ": " + ae.Msg
		if d := strings.TrimSpace(ae.Detail); d != "" {
			s += ": " + d
		}
		return r.tr.sec.line(s)
	}
	return r.tr.sec.line(err.Error())
}

func isNetErr(err error) bool {
	var ne net.Error
	var oe *net.OpError
	var ue *url.Error
	return errors.As(err, &ne) || errors.As(err, &oe) || errors.As(err, &ue) || errors.Is(err, io.ErrUnexpectedEOF)
}
