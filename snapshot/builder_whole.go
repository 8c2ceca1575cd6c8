package snapshot

import (
	"cmp"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/whyslow/whyslow/histogram"
)

// takeWhole keeps e, the input of an empty adopting Builder (a source's
// evidence, or one target of a ReadEach, read for it alone), to be returned by Evidence as it is, when e
// is already in the form that AddEvidence and Evidence would give it. It
// reports whether it did: a TSDB read is, and copying it target by target
// into maps and back costs as much as the rest of a windowed query. The
// next input merges it first (see target).
func (b *Builder) takeWhole(e *Evidence) bool {
	if !b.adopt || b.whole != nil || len(b.targets) > 0 || !canonical(e, b.listed) {
		return false
	}
	for _, t := range e.Targets {
		for _, f := range t.Families {
			if f.Series == nil {
				f.Series = []*Series{} // as finishFamily leaves it
			}
		}
	}
	b.whole = e
	b.sources = append(b.sources, e.Sources...)
	b.problems = append(b.problems, e.Problems...)
	return true
}

// mergeWhole moves the evidence kept by takeWhole into the Builder's own
// targets, before another input joins them.
func (b *Builder) mergeWhole() {
	w := b.whole
	if w == nil {
		return
	}
	b.whole = nil
	adopt := b.adopt
	b.adopt = true
	b.addTargets(w.Targets)
	b.adopt = adopt
}

// canonical reports whether e is what Builder.Evidence would return for
// it: targets sorted by distinct names; scrapes at distinct whole
// milliseconds in UTC, in time order, without files; in each family,
// series sorted by distinct (name, labels), with strictly
// increasing times and no start times, and histogram series sorted by
// (labels, first time), a layout change starting a new one strictly after
// the last; labels without __name__ (nor le for histograms) or empty
// values. A series (or histogram series) without samples is one only
// when listed holds its sample name (its family's, for a histogram):
// Options.LabelsOnly, read by its labels alone.
func canonical(e *Evidence, listed map[string]bool) bool {
	for i, t := range e.Targets {
		if t == nil || t.Families == nil || (i > 0 && e.Targets[i-1].Name >= t.Name) {
			return false
		}
		for j, sc := range t.Scrapes {
			// The Builder keeps a scrape as the UTC time of its
			// millisecond, no monotonic reading, no other location.
			if len(sc.Files) > 0 || sc.Time != time.UnixMilli(sc.Time.UnixMilli()).UTC() ||
				(j > 0 && !t.Scrapes[j-1].Time.Before(sc.Time)) {
				return false
			}
		}
		for name, f := range t.Families {
			if f == nil || f.Name != name || !canonicalFamily(f, listed) {
				return false
			}
		}
	}
	return true
}

func canonicalFamily(f *Family, listed map[string]bool) bool {
	for i, s := range f.Series {
		if (len(s.T) == 0 && !(listed[s.Name] && labelsOnly(s))) || len(s.V) != len(s.T) || s.StartT != nil || !canonicalLabels(s.Labels, "") || !strictlyIncreasing(s.T) {
			return false
		}
		if i > 0 {
			p := f.Series[i-1]
			if c := cmp.Compare(p.Name, s.Name); c > 0 || (c == 0 && labels.Compare(p.Labels, s.Labels) >= 0) {
				return false
			}
		}
	}
	for i, h := range f.Histograms {
		n := len(h.T)
		if (n == 0 && !(listed[f.Name] && labelsOnlyHist(h))) || len(h.Counts) != n*len(h.Bounds) || len(h.Sum) != n || len(h.Count) != n ||
			!canonicalLabels(h.Labels, model.BucketLabel) || !strictlyIncreasing(h.T) {
			return false
		}
		if i > 0 {
			p := f.Histograms[i-1]
			switch c := labels.Compare(p.Labels, h.Labels); {
			case c > 0:
				return false
			case c == 0 && (len(p.T) == 0 || n == 0 || histogram.SameLayout(p.Bounds, h.Bounds) || p.T[len(p.T)-1] >= h.T[0]):
				return false
			}
		}
	}
	return true
}

// listUnsampled adds to the names the Builder keeps without samples
// (Options.LabelsOnly's) those of the series of t that hold none: a
// source that honours Options.ForTarget lists them target by
// target, and hands over no other series without samples.
func (b *Builder) listUnsampled(t *Target) {
	for _, f := range t.Families {
		for _, s := range f.Series {
			if labelsOnly(s) {
				b.list(s.Name)
			}
		}
		for _, h := range f.Histograms {
			if labelsOnlyHist(h) {
				b.list(f.Name)
			}
		}
	}
}

// list keeps the series of name (a sample name, or a histogram's family)
// without samples. The set may be shared with other Builders
// (newBuilder): it is copied before it is changed.
func (b *Builder) list(name string) {
	if b.listed[name] {
		return
	}
	if !b.listedOwn {
		listed := make(map[string]bool, len(b.listed)+1)
		for n := range b.listed {
			listed[n] = true
		}
		b.listed, b.listedOwn = listed, true
	}
	b.listed[name] = true
}

// labelsOnly reports whether s has no samples at all, as a series read
// by its labels alone (Options.LabelsOnly).
func labelsOnly(s *Series) bool {
	return len(s.T) == 0 && len(s.V) == 0 && s.StartT == nil
}

// labelsOnlyHist is labelsOnly of a histogram series: its bounds, no
// rows.
func labelsOnlyHist(h *HistogramSeries) bool {
	return len(h.T) == 0 && len(h.Counts) == 0 && len(h.Sum) == 0 && len(h.Count) == 0
}

// canonicalLabels reports whether ls holds neither __name__, nor drop, nor
// an empty value.
func canonicalLabels(ls labels.Labels, drop string) bool {
	ok := true
	ls.Range(func(l labels.Label) {
		if l.Name == model.MetricNameLabel || l.Value == "" || (drop != "" && l.Name == drop) {
			ok = false
		}
	})
	return ok
}
