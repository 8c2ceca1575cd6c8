package diagnose

import (
	"math"
	"slices"
	"time"

	"github.com/whyslow/whyslow/catalog"
)

// membership is when one replica joined the evidence, left it, and was
// away from it in between: a scrape gap (more than twice its usual
// scrape interval) or a new process (process_start_time_seconds changed).
// A planned restart, a rollout and a scale-up show as such breaks; the
// fleet's capacity changes at them whatever the workload does.
type membership struct {
	first, last time.Time
	// breaks are the scrape times either side of each gap or new process.
	breaks []time.Time
}

// membership reads replica r's scrape times and process start times.
func (sc *scope) membership(r int) membership {
	scrapes := sc.replicas[r].t.Scrapes // ascending
	var m membership
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
	if s := sc.replicaGauge(catalog.SignalProcessStart, r); s != nil {
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
