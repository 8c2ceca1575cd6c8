package alerts

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/whyslow/whyslow/catalog"
)

// gen holds what every expression needs: the grouping, the windows and
// the metric names.
type gen struct {
	opt       Options
	names     names
	by        string // "model_name"
	byReplica string // "model_name, pod"
	w         string // rate window, "5m"
	short     string // short window, "1m"
	step      string // subquery resolution
	scrape    string // the scrape interval: the resolution of the queue's shape
	off       string // " offset 1d"
	// shortSeconds is the short window in seconds.
	shortSeconds float64
}

func dur(d time.Duration) string { return model.Duration(d).String() }

// sel returns the selector of metric m with the matchers (comma-joined).
func sel(m, suffix string, matchers ...string) string {
	var ms []string
	for _, x := range matchers {
		if x != "" {
			ms = append(ms, x)
		}
	}
	s := m + suffix
	if len(ms) > 0 {
		s += "{" + strings.Join(ms, ", ") + "}"
	}
	return s
}

// each applies f to every name of signal id and joins the results with
// "or" (vLLM renames: the newer name first), in parentheses when more
// than one.
func (g *gen) each(id catalog.SignalID, f func(name string) string) string {
	ns := g.names.of(id)
	if len(ns) == 0 {
		return "absent_signal_" + string(id)
	}
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = f(n)
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return "(" + strings.Join(parts, " or ") + ")"
}

// rangeFn returns fn(metric{matchers}[win] off) over the names of id.
func (g *gen) rangeFn(fn string, id catalog.SignalID, suffix, matcher, win, off string) string {
	return g.each(id, func(n string) string {
		return fmt.Sprintf("%s(%s[%s]%s)", fn, sel(n, suffix, matcher), win, off)
	})
}

// rateSum is sum by (group) (rate(...[w])).
func (g *gen) rateSum(id catalog.SignalID, suffix, matcher, off string) string {
	return g.rateSumBy(id, suffix, matcher, off, g.by)
}

func (g *gen) rateSumBy(id catalog.SignalID, suffix, matcher, off, by string) string {
	r := g.rangeFn("rate", id, suffix, matcher, g.w, off)
	if id == catalog.SignalHTTPRequests {
		r = g.labelledByTarget(r, off)
	}
	return fmt.Sprintf("sum by (%s) (%s)", by, r)
}

// labelledByTarget gives the series of expr, which come from the vLLM
// targets but do not carry the group labels (the API server's
// http_requests_total has no model_name), the group labels of the vLLM
// series of their target (the same instance and job), so that they
// aggregate and match per model as the engine's series do.
func (g *gen) labelledByTarget(expr, off string) string {
	return g.withGroupLabels(expr, []string{"instance", "job"}, off)
}

// withGroupLabels joins the series of expr on the labels join with the
// vLLM series (num_requests_running, at offset off) that carry the same
// values, and gives them those series' group labels (Options.By).
func (g *gen) withGroupLabels(expr string, join []string, off string) string {
	var left []string
	for _, l := range g.opt.By {
		if !slices.Contains(join, l) {
			left = append(left, l)
		}
	}
	return fmt.Sprintf("(%s) * on (%s) group_left (%s) group by (%s) (%s)",
		expr, strings.Join(join, ", "), strings.Join(left, ", "), strings.Join(append(slices.Clone(join), left...), ", "),
		g.each(catalog.SignalRunning, func(n string) string { return n + off }))
}

func (g *gen) increaseSum(id catalog.SignalID, suffix, off string) string {
	return fmt.Sprintf("sum by (%s) (%s)", g.by, g.rangeFn("increase", id, suffix, "", g.w, off))
}

// quantileBy is the fleet (or per-replica) quantile: buckets summed over
// the series of each group, then histogram_quantile; never an average of
// per-pod quantiles. Mixed versions sum only the shared bounds.
func (g *gen) quantileBy(id catalog.SignalID, q float64, off, by string) string {
	le := g.names.leMatcher(id)
	return fmt.Sprintf("histogram_quantile(%g, sum by (le, %s) (%s))", q, by, g.rangeFn("rate", id, "_bucket", le, g.w, off))
}

// gaugeAgg aggregates a gauge over the fleet at one instant.
func (g *gen) gaugeAgg(agg string, id catalog.SignalID, off string) string {
	return g.gaugeAggBy(agg, id, g.by, off)
}

func (g *gen) gaugeAggBy(agg string, id catalog.SignalID, by string, off ...string) string {
	o := strings.Join(off, "")
	return fmt.Sprintf("%s by (%s) (%s)", agg, by, g.each(id, func(n string) string { return n + o }))
}

// arrivalsBy estimates arrivals per second over win: completions plus the
// growth of waiting and running (http_requests_total counts responses
// when they end, so it is no arrival count).
func (g *gen) arrivalsBy(by, win, off string) string {
	if win == "" {
		win = g.w
	}
	secs := g.opt.RateWindow.Seconds()
	if win == g.short {
		secs = g.shortSeconds
	}
	return fmt.Sprintf("(sum by (%s) (%s) + (sum by (%s) (%s) + sum by (%s) (%s)) / %g)",
		by, g.rangeFn("rate", catalog.SignalRequestSuccess, "", "", win, off),
		by, g.rangeFn("delta", catalog.SignalWaiting, "", "", win, off),
		by, g.rangeFn("delta", catalog.SignalRunning, "", "", win, off), secs)
}

func (g *gen) arrivals(win, off string) string { return g.arrivalsBy(g.by, win, off) }

// arrivalsScrape estimates the arrivals per second of each replica's last
// scrape interval (irate and idelta read the last two samples), summed
// per group: completions plus the growth of waiting and running.
func (g *gen) arrivalsScrape(off string) string {
	win := dur(3 * g.opt.ScrapeInterval)
	return fmt.Sprintf("(sum by (%s) (%s) + (sum by (%s) (%s) + sum by (%s) (%s)) / %g)",
		g.by, g.rangeFn("irate", catalog.SignalRequestSuccess, "", "", win, off),
		g.by, g.rangeFn("idelta", catalog.SignalWaiting, "", "", win, off),
		g.by, g.rangeFn("idelta", catalog.SignalRunning, "", "", win, off), g.opt.ScrapeInterval.Seconds())
}

// loadShare is each replica's share of the arrivals over its fair share
// (its engines over the fleet's).
func (g *gen) loadShare(off string) string {
	engines := func(by string) string {
		return fmt.Sprintf("count by (%s) (%s)", by, g.each(catalog.SignalRunning, func(n string) string { return n + off }))
	}
	return fmt.Sprintf("(%s / on (%s) group_left () %s) / (%s / on (%s) group_left () %s)",
		g.arrivalsBy(g.byReplica, "", off), g.by, g.arrivals("", off),
		engines(g.byReplica), g.by, engines(g.by))
}

// gpuPerReplica is the GPU busy ratio (0..1) of each GPU, labelled with
// the group labels of the vLLM pod it serves (DCGM series carry pod and
// namespace, not model_name).
func (g *gen) gpuPerReplica() string {
	spec, _ := g.names.cat.Signal(catalog.SignalGPUUtil)
	var parts []string
	for _, c := range spec.Candidates {
		if c.Confidence != catalog.Documented {
			continue
		}
		if c.Scale != 1 {
			parts = append(parts, fmt.Sprintf("%s * %g", c.Metric, c.Scale))
		} else {
			parts = append(parts, c.Metric)
		}
	}
	// DCGM's pod attribution is namespace and pod, whatever the replica
	// label of the vLLM targets is.
	return g.withGroupLabels(strings.Join(parts, " or "), []string{"namespace", "pod"}, "")
}

// gpu is the mean GPU busy ratio per group at one instant.
func (g *gen) gpu() string {
	return fmt.Sprintf("avg by (%s) (%s)", g.by, g.gpuPerReplica())
}
