package snapshot

import (
	"cmp"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
)

// One target at two times. A flat folder of dumps named
// "<target>_t0_<time>.prom" and "<target>_t1_<time>.prom" holds scrapes of
// one target whose names differ in an ordinal token as well as in the
// time, so the path names two targets. Such targets are read as one
// when their contents confirm it: the same process_start_time_seconds in
// every file (one process) and no counter that falls from one file to
// the next. Equal label sets never suffice (plain /metrics dumps of
// different pods carry the same labels), and neither do the names alone.
// When the names match but the contents do not confirm (no
// process_start_time_seconds, a different one, a counter that falls),
// the targets stay apart with a warning: merging two pods would invent a
// restart or a counter reset, and hide a replica.

// reOrdinal matches a name token that numbers the scrapes of one target
// rather than naming it: t0, t1, scrape2, snap3, before, after, and the
// like. Bare numbers are not ordinals (vllm-0 and vllm-1 are two pods of
// a StatefulSet).
var reOrdinal = regexp.MustCompile(`(?i)^(?:t\d{1,4}|scrape\d{1,4}|snap(?:shot)?\d{1,4}|before|after|pre|post|baseline|incident|start|end|first|second|last)$`)

// reNameToken matches the tokens of a target name between separators.
var reNameToken = regexp.MustCompile(`[^_\-. ]+`)

// seriesKey returns name without its ordinal tokens (and the separator
// before each), and whether it had any. key is "" when nothing else is
// left.
func seriesKey(name string) (key string, had bool) {
	var sb strings.Builder
	prevEnd := 0
	for _, m := range reNameToken.FindAllStringIndex(name, -1) {
		tok := name[m[0]:m[1]]
		if reOrdinal.MatchString(tok) {
			had = true
			prevEnd = m[1]
			continue
		}
		if sb.Len() > 0 {
			sep := name[prevEnd:m[0]]
			if sep == "" {
				sep = "_"
			}
			sb.WriteString(sep)
		}
		sb.WriteString(tok)
		prevEnd = m[1]
	}
	return sb.String(), had
}

// joinScrapesOfOneTarget returns targets with the path-named targets that
// are scrapes of one target at successive times (see the comment above)
// joined into one target named by their common name, and notes each join
// (an info) and each group left apart (a warning).
func (b *Builder) joinScrapesOfOneTarget(targets []*Target) []*Target {
	groups := map[string][]*Target{}
	var keys []string
	for _, t := range targets {
		if t.NameFrom != "path" || len(t.Scrapes) == 0 {
			continue
		}
		key, _ := seriesKey(t.Name)
		if key == "" {
			continue
		}
		if groups[key] == nil {
			keys = append(keys, key)
		}
		groups[key] = append(groups[key], t)
	}
	joined := map[*Target]bool{}
	var out []*Target
	for _, key := range keys {
		g := groups[key]
		if len(g) < 2 || !slices.ContainsFunc(g, func(t *Target) bool { _, had := seriesKey(t.Name); return had }) {
			continue
		}
		slices.SortFunc(g, func(x, y *Target) int { return x.Scrapes[0].Time.Compare(y.Scrapes[0].Time) })
		overlap := false
		for i := 1; i < len(g); i++ {
			if !g[i-1].Scrapes[len(g[i-1].Scrapes)-1].Time.Before(g[i].Scrapes[0].Time) {
				overlap = true // observed at once: two targets
			}
		}
		if overlap {
			continue
		}
		names := make([]string, len(g))
		for i, t := range g {
			names[i] = escapeName(t.Name)
		}
		file := firstFileOf(g[0])
		why, pst := sameProcess(g)
		if why != "" {
			b.problems = append(b.problems, Problem{Severity: SeverityWarning, File: file, Offset: -1,
				Err: fmt.Errorf("%w: targets %s have names that differ only by the time and an ordinal (t0, before, ...), as scrapes of one target %s at %d times would, but %s: "+
					"read as %d targets, since joining two pods would invent a restart and hide a replica; if they are one target, put their files in one folder named after it (DIR/%s/)",
					ErrOneTarget, strings.Join(names, ", "), escapeName(key), len(g), why, len(g), escapeName(key))})
			continue
		}
		nb := NewBuilder(Options{})
		nb.merging = true
		for _, t := range g {
			c := *t
			c.Name = key
			nb.addTargets([]*Target{&c})
			joined[t] = true
		}
		j := nb.Evidence().Targets[0]
		j.NameFrom = "path"
		out = append(out, j)
		b.problems = append(b.problems, nb.problems...)
		b.problems = append(b.problems, Problem{Severity: SeverityInfo, File: file, Offset: -1,
			Err: fmt.Errorf("%w: targets %s read as one target %s at %d times: their names differ only by the time and an ordinal, and every file holds process_start_time_seconds %.3f with no counter falling",
				ErrOneTarget, strings.Join(names, ", "), escapeName(key), len(j.Scrapes), pst)})
	}
	if len(joined) == 0 {
		return targets
	}
	for _, t := range targets {
		if !joined[t] {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(x, y *Target) int { return cmp.Compare(x.Name, y.Name) })
	return out
}

// firstFileOf returns the first file a target was read from, or "".
func firstFileOf(t *Target) string {
	for _, sc := range t.Scrapes {
		if len(sc.Files) > 0 {
			return sc.Files[0]
		}
	}
	return ""
}

// sameProcess reports why targets g (in time order, not overlapping)
// are not confirmed as one process: "" and the common process start time
// when every target holds one process_start_time_seconds, all equal, and
// no counter (nor histogram count or bucket) of the same series falls
// from one target's last sample to the next's first.
func sameProcess(g []*Target) (why string, pst float64) {
	starts := make([]float64, len(g))
	for i, t := range g {
		v, ok := singleProcessStart(t)
		if !ok {
			return fmt.Sprintf("%s holds no single process_start_time_seconds to confirm it is the same process", escapeName(t.Name)), 0
		}
		starts[i] = v
		if i > 0 && math.Abs(v-starts[0]) > 1e-3 {
			return fmt.Sprintf("process_start_time_seconds differs (%.3f in %s, %.3f in %s: another process, a restart or another pod)",
				starts[0], escapeName(g[0].Name), v, escapeName(t.Name)), 0
		}
	}
	for i := 1; i < len(g); i++ {
		if s := fallingCounter(g[i-1], g[i]); s != "" {
			return fmt.Sprintf("%s falls from %s to %s under one process start time (two processes)", s, escapeName(g[i-1].Name), escapeName(g[i].Name)), 0
		}
	}
	return "", starts[0]
}

// singleProcessStart returns the target's process start time when all its
// samples of process_start_time_seconds agree.
func singleProcessStart(t *Target) (float64, bool) {
	f := t.Families[processStart]
	if f == nil {
		return 0, false
	}
	v, ok := math.NaN(), false
	for _, s := range f.Series {
		for _, x := range s.V {
			if !ok {
				v, ok = x, true
			} else if math.Abs(x-v) > 1e-3 {
				return 0, false
			}
		}
	}
	return v, ok
}

// fallingCounter names the first counter series (or histogram count or
// bucket) that falls from a's last sample to b's first, or "".
func fallingCounter(a, b *Target) string {
	for _, name := range a.FamilyNames() {
		fa, fb := a.Families[name], b.Families[name]
		if fb == nil {
			continue
		}
		if fa.Type == model.MetricTypeCounter {
			for _, sa := range fa.Series {
				for _, sb := range fb.Series {
					if sa.Name == sb.Name && labels.Equal(sa.Labels, sb.Labels) && len(sa.V) > 0 && len(sb.V) > 0 && sb.V[0] < sa.V[len(sa.V)-1] {
						return fmt.Sprintf("counter %s (%g -> %g)", seriesString(sa.Name, sa.Labels), sa.V[len(sa.V)-1], sb.V[0])
					}
				}
			}
		}
		for _, ha := range fa.Histograms {
			for _, hb := range fb.Histograms {
				if !labels.Equal(ha.Labels, hb.Labels) || len(ha.T) == 0 || len(hb.T) == 0 {
					continue
				}
				last, first := len(ha.T)-1, 0
				if hb.Count[first] < ha.Count[last] {
					return fmt.Sprintf("histogram count %s (%g -> %g)", seriesString(name+"_count", ha.Labels), ha.Count[last], hb.Count[first])
				}
				if slices.Equal(ha.Bounds, hb.Bounds) {
					n := len(ha.Bounds)
					for k := range n {
						if hb.Counts[first*n+k] < ha.Counts[last*n+k] {
							return fmt.Sprintf("histogram bucket %s le=%g", seriesString(name+"_bucket", ha.Labels), ha.Bounds[k])
						}
					}
				}
			}
		}
	}
	return ""
}
