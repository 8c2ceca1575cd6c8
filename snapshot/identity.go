package snapshot

import (
	"net"
	"slices"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
)

// A replica's identity is its pod: the labels of its series without the
// labels that say where it was reached or placed, which change when a
// pod is rescheduled or restarted (a StatefulSet pod keeps its name and
// gets a new IP; Prometheus then stores every series again under a new
// instance label). AddressLabels lists those labels; instance counts
// only when its value is an address (host:port or an IP), since a
// relabelled instance that holds a name is the identity itself.
var AddressLabels = []string{"instance", "__address__", "pod_ip", "host_ip", "node", "node_name"}

// isAddressLabel reports whether label name with value v says where a
// replica was reached rather than which replica it is.
func isAddressLabel(name, v string) bool {
	if name == "instance" {
		return isAddress(v)
	}
	return slices.Contains(AddressLabels, name)
}

// isAddress reports whether v is an IP address or host:port.
func isAddress(v string) bool {
	if net.ParseIP(strings.Trim(v, "[]")) != nil {
		return true
	}
	host, port, err := net.SplitHostPort(v)
	return err == nil && host != "" && port != ""
}

// identity returns ls without its address labels, and whether it had one.
func identity(ls labels.Labels) (labels.Labels, bool) {
	had := false
	ls.Range(func(l labels.Label) {
		if isAddressLabel(l.Name, l.Value) {
			had = true
		}
	})
	if !had {
		return ls, false
	}
	b := labels.NewBuilder(ls)
	ls.Range(func(l labels.Label) {
		if isAddressLabel(l.Name, l.Value) {
			b.Del(l.Name)
		}
	})
	return b.Labels(), true
}

// JoinAddresses returns the evidence with every target's series joined by
// identity (see Target.JoinAddresses); e itself when nothing is joined.
func (e *Evidence) JoinAddresses() *Evidence {
	if e == nil {
		return nil
	}
	var out *Evidence
	for i, t := range e.Targets {
		j := t.JoinAddresses()
		if j == t {
			continue
		}
		if out == nil {
			c := *e
			c.Targets = slices.Clone(e.Targets)
			out = &c
		}
		out.Targets[i] = j
	}
	if out == nil {
		return e
	}
	return out
}

// JoinAddresses returns t with the series of each family that have the
// same identity (their labels without AddressLabels) and follow one
// another in time joined into one series, in time order, without the
// address labels: the process that served a pod before a restart and
// the one after it, scraped at two addresses, make one timeline, so a
// restart reads as a counter reset and a process start change there, as
// it does when both are scraped at one address. Series with the same
// identity that overlap in time are two processes at once (two servers
// of one pod on two ports) and stay apart, as do histograms whose bucket
// layouts differ. t is not modified; t itself is returned when nothing
// is joined.
func (t *Target) JoinAddresses() *Target {
	if t == nil {
		return nil
	}
	var out *Target
	for name, f := range t.Families {
		j := f.joinAddresses()
		if j == f {
			continue
		}
		if out == nil {
			out = &Target{Name: t.Name, NameFrom: t.NameFrom, Scrapes: t.Scrapes, Families: make(map[string]*Family, len(t.Families))}
			for n, g := range t.Families {
				out.Families[n] = g
			}
		}
		out.Families[name] = j
	}
	if out == nil {
		return t
	}
	return out
}

// joinAddresses is Target.JoinAddresses for one family; f itself when
// nothing is joined.
func (f *Family) joinAddresses() *Family {
	series := joinGroups(f.Series, func(s *Series) (string, labels.Labels, bool) {
		id, had := identity(s.Labels)
		return s.Name + "\xff" + id.String(), id, had
	}, func(a, b *Series) bool { return true }, joinSeries)
	hists := joinGroups(f.Histograms, func(h *HistogramSeries) (string, labels.Labels, bool) {
		id, had := identity(h.Labels)
		return id.String(), id, had
	}, func(a, b *HistogramSeries) bool { return slices.Equal(a.Bounds, b.Bounds) }, joinHistograms)
	if series == nil && hists == nil {
		return f
	}
	g := *f
	if series != nil {
		g.Series = series
		slices.SortStableFunc(g.Series, func(a, b *Series) int {
			if c := strings.Compare(a.Name, b.Name); c != 0 {
				return c
			}
			return labels.Compare(a.Labels, b.Labels)
		})
	}
	if hists != nil {
		g.Histograms = hists
		slices.SortStableFunc(g.Histograms, func(a, b *HistogramSeries) int {
			if c := labels.Compare(a.Labels, b.Labels); c != 0 {
				return c
			}
			return compareFirst(a.T, b.T)
		})
	}
	return &g
}

func compareFirst(a, b []int64) int {
	switch {
	case len(a) == 0 || len(b) == 0:
		return len(a) - len(b)
	case a[0] < b[0]:
		return -1
	case a[0] > b[0]:
		return 1
	}
	return 0
}

// joinGroups rewrites the members of ss that share a key (an identity),
// carry an address label and follow one another in time: under the
// identity's labels, the runs of consecutive members that join allows
// (one bucket layout) joined into one; nil when no key has two such
// members.
func joinGroups[S timed](ss []S, key func(S) (string, labels.Labels, bool), joins func(a, b S) bool, join func(id labels.Labels, parts []S) S) []S {
	if sameAddresses(ss) {
		return nil // the common case, without building an identity
	}
	type group struct {
		id      labels.Labels
		members []int
	}
	var groups map[string]*group
	var order []string
	candidates := 0
	for i, s := range ss {
		if len(s.times()) == 0 {
			continue
		}
		k, id, had := key(s)
		if !had {
			continue
		}
		if groups == nil {
			groups = map[string]*group{}
		}
		g := groups[k]
		if g == nil {
			g = &group{id: id}
			groups[k] = g
			order = append(order, k)
		}
		g.members = append(g.members, i)
		if len(g.members) == 2 {
			candidates++
		}
	}
	if candidates == 0 {
		return nil
	}
	drop := map[int]bool{}
	var joined []S
	for _, k := range order {
		g := groups[k]
		if len(g.members) < 2 {
			continue
		}
		parts := make([]S, len(g.members))
		for i, m := range g.members {
			parts[i] = ss[m]
		}
		slices.SortStableFunc(parts, func(a, b S) int { return compareFirst(a.times(), b.times()) })
		sequential := true
		for i := 1; i < len(parts); i++ {
			prev := parts[i-1].times()
			if parts[i].times()[0] <= prev[len(prev)-1] {
				sequential = false
				break
			}
		}
		if !sequential {
			continue
		}
		for _, m := range g.members {
			drop[m] = true
		}
		from := 0
		for i := 1; i <= len(parts); i++ {
			if i == len(parts) || !joins(parts[i-1], parts[i]) {
				joined = append(joined, join(g.id, parts[from:i]))
				from = i
			}
		}
	}
	if len(joined) == 0 {
		return nil
	}
	out := make([]S, 0, len(ss)-len(drop)+len(joined))
	for i, s := range ss {
		if !drop[i] {
			out = append(out, s)
		}
	}
	return append(out, joined...)
}

// timed is a series of either kind, by its labels and sample times.
type timed interface {
	times() []int64
	lbls() labels.Labels
}

func (s *Series) times() []int64               { return s.T }
func (h *HistogramSeries) times() []int64      { return h.T }
func (s *Series) lbls() labels.Labels          { return s.Labels }
func (h *HistogramSeries) lbls() labels.Labels { return h.Labels }

// sameAddresses reports whether every member of ss has the values of the
// first in every address label: then no two can be joined.
func sameAddresses[S timed](ss []S) bool {
	if len(ss) < 2 {
		return true
	}
	first := ss[0].lbls()
	for _, s := range ss[1:] {
		ls := s.lbls()
		for _, n := range AddressLabels {
			if ls.Get(n) != first.Get(n) {
				return false
			}
		}
	}
	return true
}

// joinSeries concatenates parts, in time order, under labels id.
func joinSeries(id labels.Labels, parts []*Series) *Series {
	out := &Series{Name: parts[0].Name, Labels: id}
	withStart := true
	for _, p := range parts {
		out.T = append(out.T, p.T...)
		out.V = append(out.V, p.V...)
		withStart = withStart && p.StartT != nil
	}
	if withStart {
		for _, p := range parts {
			out.StartT = append(out.StartT, p.StartT...)
		}
	}
	return out
}

// joinHistograms concatenates parts (one bucket layout), in time order,
// under labels id.
func joinHistograms(id labels.Labels, parts []*HistogramSeries) *HistogramSeries {
	out := &HistogramSeries{Labels: id, Bounds: parts[0].Bounds}
	for _, p := range parts {
		out.T = append(out.T, p.T...)
		out.Counts = append(out.Counts, p.Counts...)
		out.Sum = append(out.Sum, p.Sum...)
		out.Count = append(out.Count, p.Count...)
	}
	return out
}
