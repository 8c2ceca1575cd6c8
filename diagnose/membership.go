package diagnose

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/rules"
	"github.com/whyslow/whyslow/snapshot"
)

// membership is when one replica joined the evidence, left it, and was
// away from it in between: a scrape gap (more than twice its usual
// scrape interval) or a new process (process_start_time_seconds changed).
// A planned restart, a rollout and a scale-up show as such breaks; the
// fleet's capacity changes at them whatever the workload does.
type membership struct {
	name        string
	first, last time.Time
	// breaks are the scrape times either side of each gap or new process.
	breaks []time.Time
	// resetsBreak says that a reset of the replica's request histograms
	// marks a new process too (withResets): it exposes no
	// process_start_time_seconds (vLLM V0, multiprocess mode), where
	// only its counters dropping together show a restart.
	resetsBreak bool
}

// withResets returns m with a break over each interval of grid (by
// index, in resets) in which its request histograms were reset, when
// m.resetsBreak; m itself otherwise.
func (m membership) withResets(resets []int, grid []snapshot.Window) membership {
	if !m.resetsBreak || len(resets) == 0 {
		return m
	}
	m.breaks = slices.Clone(m.breaks)
	for _, i := range resets {
		m.breaks = append(m.breaks, grid[i].Start, grid[i].End)
	}
	return m
}

// membership reads replica r's scrape times and process start times.
func (sc *scope) membership(r int) membership {
	scrapes := sc.replicas[r].t.Scrapes // ascending
	m := membership{name: sc.replicas[r].t.Name}
	if len(scrapes) == 0 {
		return m
	}
	m.first, m.last = scrapes[0].Time, scrapes[len(scrapes)-1].Time
	if len(scrapes) > 2 {
		d := make([]time.Duration, len(scrapes)-1)
		for i := 1; i < len(scrapes); i++ {
			d[i-1] = scrapes[i].Time.Sub(scrapes[i-1].Time)
		}
		med := slices.Clone(d)
		slices.Sort(med)
		usual := med[len(med)/2]
		for i, g := range d {
			if usual > 0 && g > 2*usual {
				m.breaks = append(m.breaks, scrapes[i].Time, scrapes[i+1].Time)
			}
		}
	}
	s := sc.replicaGauge(catalog.SignalProcessStart, r)
	m.resetsBreak = s == nil
	if s != nil {
		prev, prevT := math.NaN(), int64(0)
		for i, v := range s.V {
			if math.IsNaN(v) {
				continue
			}
			if !math.IsNaN(prev) && v != prev {
				m.breaks = append(m.breaks, time.UnixMilli(prevT), time.UnixMilli(s.T[i]))
			}
			prev, prevT = v, s.T[i]
		}
	}
	return m
}

// membershipChanged reports whether a replica joined, left or was away
// between from and to: a replica's first scrape after the evidence's
// first interval, its last before the evidence's last interval, or a
// break.
func membershipChanged(ms []membership, st scrapeStats, from, to time.Time) bool {
	in := func(t time.Time) bool { return !t.Before(from) && !t.After(to) }
	for _, m := range ms {
		if m.first.IsZero() {
			continue
		}
		if m.first.Sub(st.first) > 2*st.interval && in(m.first) {
			return true
		}
		if st.last.Sub(m.last) > 2*st.interval && in(m.last) {
			return true
		}
		if slices.ContainsFunc(m.breaks, in) {
			return true
		}
	}
	return false
}

// outageLoadFactor is the load the replicas that stayed took on while
// others were away in w (a restart, a scrape gap, a replica gone or not
// yet joined): the fleet's usual number of replicas present (the median
// over the scrape times in w) over the fewest present at one of them.
// 1 when none was away; 2 when one of two restarted.
func (c *factCtx) outageLoadFactor(w evalWindow) rules.Fact {
	n := len(c.sc.replicas)
	if n == 0 {
		return rules.MissingFact(rules.TooLittle("no replica"))
	}
	ms := make([]membership, n)
	var times []time.Time
	for r := range c.sc.replicas {
		ms[r] = c.sc.membership(r)
		for _, s := range c.sc.replicas[r].t.Scrapes {
			if !s.Time.Before(w.w.Start) && !s.Time.After(w.w.End) {
				times = append(times, s.Time)
			}
		}
	}
	if len(times) == 0 {
		return rules.MissingFact(rules.TooLittle("no scrape in the window"))
	}
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	times = slices.CompactFunc(times, func(a, b time.Time) bool { return a.Equal(b) })
	st := c.st
	present := func(m membership, t time.Time) bool {
		if m.first.IsZero() {
			return false
		}
		// A replica first or last scraped within two intervals of the
		// evidence's edges was there all along (scrapes are skewed).
		if m.first.Sub(st.first) > 2*st.interval && t.Before(m.first) {
			return false
		}
		if st.last.Sub(m.last) > 2*st.interval && t.After(m.last) {
			return false
		}
		for i := 0; i+1 < len(m.breaks); i += 2 {
			if t.After(m.breaks[i]) && t.Before(m.breaks[i+1]) {
				return false
			}
		}
		return true
	}
	counts := make([]float64, 0, len(times))
	for _, t := range times {
		k := 0
		for _, m := range ms {
			if present(m, t) {
				k++
			}
		}
		if k > 0 {
			counts = append(counts, float64(k))
		}
	}
	if len(counts) == 0 {
		return rules.MissingFact(rules.TooLittle("no replica present in the window"))
	}
	usual := slices.Clone(counts)
	slices.Sort(usual)
	f := rules.Measured(usual[len(usual)/2] / usual[0]).WithSource(fmt.Sprintf("replicas present at the scrape times (median %v, fewest %v): restarts, scrape gaps, replicas gone or joining", usual[len(usual)/2], usual[0]))
	f.Incident.Count = float64(len(counts))
	return f
}
