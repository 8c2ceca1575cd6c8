package promapi

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/whyslow/whyslow/snapshot"
	"github.com/whyslow/whyslow/snapshot/internal/store"
)

// ReadEach reads the server at address with the Config carried by ctx,
// handing the targets over one at a time; it is the Source.ReadEach of
// the source registered for http(s):// paths (callers use
// snapshot.ReadEach). See Config.ReadEach.
func ReadEach(ctx context.Context, address string, opts snapshot.Options, span func(minT, maxT int64) error, visit func(*snapshot.Target) error) (*snapshot.Evidence, error) {
	return ConfigFrom(ctx).ReadEach(ctx, address, opts, span, visit)
}

// ReadEach reads the server at address as Read does, but hands the
// targets to visit one at a time, in name order, each equal to the
// target of that name in Read's Evidence, and returns the rest of that
// Evidence (Sources and Problems, no Targets).
//
// The queries are Read's: batches of Config.TargetsPerQuery pods (else
// instances), Concurrency at a time. A batch's targets are built and
// visited once all of its queries are answered, while the next batches'
// queries run, so that memory grows with a few batches' samples, not
// the fleet's. opts.Memory is charged while a batch is held and released
// after its visit; Limits.MaxTotalBytes counts every batch.
//
// A target whose series would fall in several batches cannot be built
// batch by batch: where a series names its target by exported_pod (a GPU
// exporter's), where opts.TargetName renames targets, or where series
// without the batching label name a target that a pod names too, the
// server is read whole, as Read reads it, and the targets are handed
// over from that Evidence.
//
// span is called once, before the first visit, with the bounds of the
// range read. An error returned by span or visit stops the read and is
// returned as is.
func (c Config) ReadEach(ctx context.Context, address string, opts snapshot.Options, span func(minT, maxT int64) error, visit func(*snapshot.Target) error) (*snapshot.Evidence, error) {
	r, err := c.reader(address, opts)
	if err != nil {
		return nil, err
	}
	kept := len(r.problem) // the reader's own (an open start)
	ev, err := r.within(ctx, func(ctx context.Context) (*snapshot.Evidence, error) {
		ev, err := r.readGroups(ctx, false, span, visit)
		if errors.Is(err, errWhole) {
			r.problem, r.pending = r.problem[:kept], nil
			ev, err = r.readGroups(ctx, true, span, visit)
		}
		return ev, err
	})
	if ce, ok := errors.AsType[callerError](err); ok {
		return nil, ce.err
	}
	return ev, err
}

// errWhole: the targets cannot be built batch by batch (see
// Config.ReadEach); the server is read whole instead.
var errWhole = errors.New("the targets cannot be read batch by batch")

// callerError is what span or visit returned.
type callerError struct{ err error }

func (e callerError) Error() string { return e.err.Error() }
func (e callerError) Unwrap() error { return e.err }

// readGroups reads the server and builds its targets in groups: one
// (whole: the Evidence Read returns, its targets handed to visit when it
// is not nil), or one per batch of the plan, each visited once its
// queries are answered (errWhole when a target could span batches).
func (r *reader) readGroups(ctx context.Context, whole bool, span func(minT, maxT int64) error, visit func(*snapshot.Target) error) (*snapshot.Evidence, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r.cancel = cancel
	if !whole && r.opts.TargetName != nil {
		return nil, errWhole
	}
	p, err := r.plan(ctx, 10)
	if err != nil {
		return nil, err
	}
	if !whole && len(p.names) > 0 { // no family in the range: nothing to read
		qfrom := r.start - r.cfg.Overfetch.Milliseconds()
		exported, err := r.labelValues(ctx, "exported_pod", matchersString(append([]*labels.Matcher{nameMatcher(p.names)}, r.opts.Matchers...)), qfrom)
		if err != nil {
			return nil, err
		}
		if len(exported) > 0 {
			return nil, errWhole
		}
	}

	// The batches are read in order, the batch [""] of the series
	// without the label first: its targets are named otherwise, are held,
	// and go between the others by name. A unit's batch is its place in
	// that order, and only the queries of the batch awaited and of the
	// next few start (queue.allow): the answers of later batches are held
	// until their turn.
	var perm []int // a place -> the plan's batch there
	empty := -1
	for i, b := range p.batches {
		if !whole && p.label != "" && len(b) == 1 && b[0] == "" {
			perm, empty = append([]int{i}, perm...), 0
		} else {
			perm = append(perm, i)
		}
	}
	if whole {
		perm = perm[:1] // every batch in the first group
	}
	nb := len(perm)
	place := make([]int, len(p.batches)) // the plan's batch -> its place (group)
	batchOf := map[string]int{}
	for k, i := range perm {
		place[i] = k
		for _, v := range p.batches[i] {
			batchOf[v] = k
		}
	}
	r.pending = make([]int, nb)
	units := make([]unit, len(p.units))
	for i, u := range p.units {
		u.batch = place[u.batch]
		units[i] = u
		r.pending[u.batch]++
	}
	slices.SortStableFunc(units, func(a, b unit) int { return a.batch - b.batch })
	perBatch := len(units)/max(nb, 1) + 1
	ahead := (r.cfg.Concurrency + perBatch - 1) / perBatch // batches beyond the awaited one whose queries may run

	// The series listed by their labels wait, by batch, for their
	// batch's first answer.
	sets, err := r.listSeries(ctx, p.listed)
	if err != nil {
		return nil, err
	}
	listed := make([][]labels.Labels, nb)
	for _, ss := range sets {
		for _, ls := range ss {
			if b, ok := batchOf[ls.Get(p.label)]; ok || whole {
				listed[b] = append(listed[b], ls)
			} // else a label value that appeared after the targets were listed
		}
	}
	sets = nil
	cols := make([]*store.Columns, nb)
	colsOf := func(b int) *store.Columns {
		if cols[b] == nil {
			cols[b] = store.NewColumns(r.red, r.builderOptions())
			addListed(cols[b], r.red, listed[b])
			listed[b] = nil
		}
		return cols[b]
	}

	out := &snapshot.Evidence{Sources: []string{r.red}}
	var problems []snapshot.Problem
	seen := map[string]bool{}
	var held []*snapshot.Target // the targets of the batch [""]
	var readBytes int64
	next, spanned := 0, false
	hand := func(t *snapshot.Target) error {
		if visit == nil {
			out.Targets = append(out.Targets, t)
			return nil
		}
		if !spanned {
			spanned = true
			if err := span(r.start, r.end); err != nil {
				return callerError{err}
			}
		}
		if err := visit(t); err != nil {
			return callerError{err}
		}
		return nil
	}
	// flush builds and visits the batches, in order, whose queries are
	// all answered.
	flush := func() error {
		defer func() { r.queue.allow(next + ahead) }()
		for next < nb {
			b := next
			r.mu.Lock()
			left := r.pending[b]
			r.mu.Unlock()
			if left > 0 {
				return nil
			}
			next++
			c := colsOf(b)
			cols[b] = nil
			ev := c.Evidence() // scrapes at the samples' times (TimeFromTSDB)
			for _, pr := range ev.Problems {
				// Each batch's: a problem of a family, once.
				if k := pr.String(); whole || !seen[k] {
					seen[k] = true
					problems = append(problems, pr)
				}
			}
			if b == empty {
				c.Release()
				held = ev.Targets
				for _, t := range held {
					if _, ok := batchOf[t.Name]; ok && t.Name != "" {
						return errWhole
					}
				}
				continue
			}
			for _, t := range ev.Targets {
				for len(held) > 0 && held[0].Name < t.Name {
					if err := hand(held[0]); err != nil {
						return err
					}
					held = held[1:]
				}
				if err := hand(t); err != nil {
					return err
				}
			}
			if visit != nil {
				c.Release() // the Evidence returned by Read holds it
			}
		}
		return nil
	}

	read, failed := 0, 0
	results := r.launch(ctx, units)
	if err := flush(); err != nil { // batches without queries
		return nil, err
	}
	for res := range results {
		ok := r.take(res, &read, &failed)
		r.mu.Lock()
		r.pending[res.unit.batch]--
		r.mu.Unlock()
		if ok {
			c := colsOf(res.unit.batch)
			before := c.Bytes()
			r.add(c, res)
			readBytes += c.Bytes() - before
			r.charge(c, readBytes-c.Bytes())
		}
		if r.fatalErr() != nil {
			break
		}
		if err := flush(); err != nil {
			return nil, err
		}
	}
	if err := r.fatalErr(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := flush(); err != nil {
		return nil, err
	}
	if next < nb {
		return nil, fmt.Errorf("snapshot: server %s: %d batches of targets left unanswered", r.red, nb-next)
	}
	for _, t := range held {
		if err := hand(t); err != nil {
			return nil, err
		}
	}
	out.Problems = append(append(r.problem, problems...), r.costNote())
	if err := r.nothingRead(read, failed, out.Problems); err != nil {
		return nil, err
	}
	if visit != nil && !spanned {
		if err := span(r.start, r.end); err != nil {
			return nil, callerError{err}
		}
	}
	return out, nil
}
