package diagnose

import (
	"errors"
	"fmt"
	"slices"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/snapshot"
)

// A diagnosis reads a histogram's samples only to measure its increases
// over a few windows: the baseline and the incident, each replica's, and
// the fleet's over the intervals of both (the noise estimates' pieces).
// Survey.Reduce measures them target by target as the windows are read
// and drops the samples, so that a diagnosis of many replicas holds a few
// numbers per replica and window instead of every scrape's buckets; the
// scope takes the measures as its own (seedReduced), and the report is the
// one of the samples.

// Reduce measures the histograms of target t (joined by identity,
// snapshot.Target.JoinAddresses, as Diagnose joins it) over the windows
// of the survey, keeps the measures in the survey, and returns the joined
// target without the samples of the histograms measured. Diagnose with
// Options.Survey set to sv takes the measures instead of the samples, and
// returns the report of the targets as they were.
//
// Hand Reduce the targets of the windows' evidence in name order, each
// once; a read that starts over (snapshot.Options.Revisit) hands the first
// target again, which starts the reduction over. Every target of the
// evidence given to Diagnose with samples in the windows must have been
// reduced, or none. Where the survey's windows are lifetime values (a
// single scrape per replica), Reduce returns t as it is. Reduce is not
// safe for concurrent use.
func (sv *Survey) Reduce(t *snapshot.Target) (*snapshot.Target, error) {
	r := sv.reduction()
	if r == nil {
		return t, nil
	}
	switch {
	case r.n > 0 && t.Name == r.first:
		sv.red = nil // the read started over
		r = sv.reduction()
	case r.n > 0 && t.Name <= r.last:
		return nil, fmt.Errorf("diagnose: reduce: target %q after %q: targets must come in name order, each once", t.Name, r.last)
	}
	if r.n == 0 {
		r.first = t.Name
	}
	r.last, r.n = t.Name, r.n+1
	j := t.JoinAddresses()
	tr := r.cat.ResolveTarget(j)
	one := []replica{{t: j, res: &tr}}
	if len(servingReplicas(one, sv.group)) == 0 {
		return j, nil // not of the scope: no fleet measure counts it
	}
	set := sv.set
	set.catalog = r.cat
	sc := newScope(set, sv.group, one)
	strip := map[string]bool{}
	var seeds []histSeed
	for _, spec := range r.cat.Signals() {
		m := sc.match(0, spec.ID)
		if spec.Kind != catalog.KindHistogram || !m.Found() {
			continue
		}
		strip[m.Family.Name] = true
		for _, w := range r.windows {
			seeds = append(seeds, histSeed{id: spec.ID, w: w, res: sc.replicaHistOnce(spec.ID, 0, w)})
		}
		if len(r.pieces) == 0 {
			continue
		}
		f := r.folds[spec.ID]
		if f == nil {
			f = &signalFold{wins: make([]histFold, len(r.pieces))}
			r.folds[spec.ID] = f
		}
		f.names = append(f.names, t.Name)
		sc.replicaHistEach(spec.ID, 0, r.pieces, func(k int, inc snapshot.HistogramIncrease, err error) {
			if err != nil {
				f.wins[k].skip(t.Name)
			} else {
				f.wins[k].add(inc)
			}
		})
	}
	r.seeds[t.Name] = seeds
	if len(strip) == 0 {
		return j, nil
	}
	out := &snapshot.Target{Name: j.Name, NameFrom: j.NameFrom, Scrapes: j.Scrapes, Families: make(map[string]*snapshot.Family, len(j.Families))}
	for name, f := range j.Families {
		if strip[name] {
			g := *f
			g.Histograms = f.WithoutSamples().Histograms
			f = &g
		}
		out.Families[name] = f
	}
	return out, nil
}

// reduction is what Survey.Reduce has measured, by target and signal.
type reduction struct {
	cat     catalog.Catalog   // the catalog as Diagnose resolves it (ForEvidence)
	windows []snapshot.Window // the baseline's and the incident's, measured per replica
	pieces  []snapshot.Window // the intervals of both (pieceGrid), measured fleet-wide
	first   string            // the first target reduced
	last    string            // the last
	n       int               // how many
	seeds   map[string][]histSeed
	folds   map[catalog.SignalID]*signalFold
}

// histSeed is one replica's measure of a histogram signal over a window.
type histSeed struct {
	id  catalog.SignalID
	w   snapshot.Window
	res histResult
}

// signalFold is the fleet's measures of one histogram signal over the
// pieces: names lists the replicas folded (those whose increase failed
// too), in order.
type signalFold struct {
	names []string
	wins  []histFold
}

// histFold is fleetHist of one window folded replica by replica, for a
// caller that holds one replica's increase at a time (the survey's
// timelines, Survey.Reduce): mergeFleet of the first, snapshot.MergeInto
// of each next, which is mergeFleet of all to the bit. A failed merge (no
// common bounds) leaves the fold failed; skipped lists the replicas whose
// own increase failed.
type histFold struct {
	inc     *snapshot.HistogramIncrease
	err     error
	skipped map[string]bool
}

// add folds in a replica's increase.
func (f *histFold) add(inc snapshot.HistogramIncrease) {
	switch {
	case f.err != nil:
	case f.inc == nil:
		m, err := mergeFleet([]snapshot.HistogramIncrease{inc})
		if err != nil {
			f.err = err
			return
		}
		f.inc = &m
	default:
		if err := snapshot.MergeInto(f.inc, inc); err != nil {
			f.err, f.inc = err, nil
		}
	}
}

// skip records a replica whose increase failed.
func (f *histFold) skip(name string) {
	if f.skipped == nil {
		f.skipped = map[string]bool{}
	}
	f.skipped[name] = true
}

// reduction returns the survey's reduction, starting it; nil when the
// windows are lifetime values or missing (nothing to reduce).
func (sv *Survey) reduction() *reduction {
	if sv.red != nil {
		return sv.red
	}
	sc := newScope(sv.set, sv.group, nil)
	base, inc, _, _ := sc.chooseWindows(sv.st, sv.tl)
	if !inc.ok || inc.lifetime || (base.ok && base.lifetime) {
		return nil
	}
	r := &reduction{
		cat:     sv.set.catalog.ForEvidence(&snapshot.Evidence{Targets: sv.targets}),
		windows: []snapshot.Window{inc.w},
		seeds:   map[string][]histSeed{},
		folds:   map[catalog.SignalID]*signalFold{},
	}
	if base.ok {
		r.windows = append(r.windows, base.w)
		for _, w := range slices.Concat(pieceGrid(inc), pieceGrid(base)) {
			if !slices.Contains(r.windows, w) && !slices.Contains(r.pieces, w) {
				r.pieces = append(r.pieces, w)
			}
		}
	}
	sv.red = r
	return r
}

// errReduced is the error of a replica's histogram asked for over a
// window Survey.Reduce did not measure: its samples are gone.
var errReduced = errors.New("diagnose: the histogram's samples were dropped by Survey.Reduce, and this window was not measured")

// seedReduced takes the measures of Survey.Reduce as the scope's own:
// each reduced replica's increases over base and inc (seeded), and the
// fleet's over the pieces (cached). It checks that the scope resolves
// and selects as the reduction did, and that no replica of the scope
// with samples in a piece was left unreduced.
func (sc *scope) seedReduced(base, inc evalWindow) error {
	sv := sc.set.Survey
	if sv == nil || sv.red == nil || sv.red.n == 0 {
		return nil
	}
	r := sv.red
	want := []snapshot.Window{inc.w}
	if base.ok {
		want = append(want, base.w)
	}
	if !slices.Equal(want, r.windows) {
		return fmt.Errorf("diagnose: the windows %v are not those Survey.Reduce measured (%v)", want, r.windows)
	}
	sc.reduced, sc.seeds = make([]bool, len(sc.replicas)), r.seeds
	for i, rep := range sc.replicas {
		seeds, ok := r.seeds[rep.t.Name]
		if !ok {
			continue
		}
		sc.reduced[i] = true
		for _, s := range seeds {
			if m := sc.match(i, s.id); !m.Found() || m.Metric != s.res.metric {
				return fmt.Errorf("diagnose: %s: %s resolves to %q, Survey.Reduce measured %q", rep.t.Name, s.id, m.Metric, s.res.metric)
			}
		}
	}
	for id, f := range r.folds {
		var names []string
		for i, rep := range sc.replicas {
			if sc.reduced[i] && sc.match(i, id).Found() {
				names = append(names, rep.t.Name)
			}
		}
		if !slices.Equal(names, f.names) {
			return fmt.Errorf("diagnose: %s: the replicas measured by Survey.Reduce (%d) are not the scope's (%d)", id, len(f.names), len(names))
		}
		for k, w := range r.pieces {
			fw := &f.wins[k]
			var skipped []string
			for i, rep := range sc.replicas {
				if !sc.match(i, id).Found() {
					continue
				}
				if sc.reduced[i] {
					if fw.skipped[rep.t.Name] {
						skipped = append(skipped, rep.t.Name)
					}
					continue
				}
				if res := sc.replicaHistOnce(id, i, w); res.err == nil {
					return fmt.Errorf("diagnose: %s: replica %s has samples of %s over %v and was not reduced (Survey.Reduce)", id, rep.t.Name, id, w)
				}
				skipped = append(skipped, rep.t.Name)
			}
			var res histResult
			switch {
			case fw.inc != nil:
				res.inc = *fw.inc
			case fw.err != nil:
				res.err = fw.err
			default:
				res = fleetResult(id, w, nil)
			}
			res.skipped = skipped
			sc.histCache.add(histKey{id, -1, w}, res)
		}
	}
	return nil
}
