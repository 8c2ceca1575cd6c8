package alerts

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/internal/fleetsim"
	"github.com/whyslow/whyslow/internal/promserver"
	"github.com/whyslow/whyslow/rules"
)

// resolutionCase is a 60-minute fleet whose incident (if any) starts at
// minute 30 and lasts 30 minutes.
type resolutionCase struct {
	name   string
	cfg    fleetsim.Config
	expect string // hypothesis id, or "no-incident"
	// resolvable is false where the scrape interval cannot show the
	// cause (10 s bursts under 60 s scrapes): the case then only must
	// fire no wrong alert.
	resolvable func(scrape time.Duration) bool
	slo        rules.SLO
}

// burstEachMinute is the matrix's queue-burst fleet (one 10 s burst a
// minute, moderate severity on 8 pods) stretched to a 30-minute baseline
// and a 30-minute incident, each burst 20 s into its minute (a periodic
// job): measured at one-minute steps, the bursts read as a sustained
// queue (issue 36).
func burstEachMinute(t *testing.T) fleetsim.Config {
	mc, ok := fleetsim.LookupMatrixCase("queue-burst")
	require.True(t, ok)
	k, ok := fleetsim.MatrixKnob("queue-burst", 8, "moderate")
	require.True(t, ok)
	cfg := mc.Config(8, fleetsim.MatrixSeeds[0], k)
	shift := fleetsim.IncidentStart - fleetsim.MatrixIncidentStart
	bs := cfg.Workload.Bursts
	require.NotEmpty(t, bs)
	var out []fleetsim.Burst
	for _, b := range bs {
		b.At += shift
		out = append(out, b)
	}
	for _, b := range bs {
		if b.At += shift + (fleetsim.MatrixDuration - fleetsim.MatrixIncidentStart); b.At+b.Length <= time.Hour {
			out = append(out, b)
		}
	}
	// A periodic job: the burst starts 20 s into every minute, so that
	// one-minute windows each hold exactly one burst and gauges sampled
	// once a minute see the queue drained.
	for i := range out {
		out[i].At = out[i].At.Truncate(time.Minute) + 20*time.Second
	}
	cfg.Workload.Bursts = out
	cfg.Duration = time.Hour
	return cfg
}

func resolutionCases(t *testing.T) []resolutionCase {
	always := func(time.Duration) bool { return true }
	var cs []resolutionCase
	for _, name := range []string{"sustained-overload", "long-prompts", "prefix-cache-loss", "decode-pressure",
		"kv-preemption", "outside-gpu", "hot-replica", "healthy", "high-kv-healthy", "restart"} {
		s, ok := fleetsim.LookupScenario(name)
		require.True(t, ok, name)
		cs = append(cs, resolutionCase{name: name, cfg: s.Config, expect: s.Expect, resolvable: always})
	}
	cs = append(cs, resolutionCase{name: "burst-10s-each-minute", cfg: burstEachMinute(t), expect: string(rules.QueueBurst),
		resolvable: func(scrape time.Duration) bool { return scrape <= 15*time.Second }})
	// The held SLO: the prefix-cache loss keeps TTFT p95 under
	// 2 s and TPOT p95 under 100 ms, so nothing may fire.
	s, _ := fleetsim.LookupScenario("prefix-cache-loss")
	cs = append(cs, resolutionCase{name: "prefix-cache-loss-slo-held", cfg: s.Config, expect: "no-incident", resolvable: always,
		slo: rules.SLO{TTFTP95: 2, TPOTP95: 0.1}})
	return cs
}

// besides are the general hypotheses whose alerts may fire beside a
// case's hypothesis: consequences it explains (Refines), a queue that
// grows because capacity fell (and preempted requests prefilled again),
// notified beside it because they name other mitigations (see
// TestAlertsInhibit). decode-pressure is in no list: it needs TTFT
// normal, which none of these incidents leaves.
var besides = map[string][]rules.HypothesisID{
	"kv-preemption": {rules.QueueSustained, rules.PrefillLongPrompts},
	"outside-gpu":   {rules.QueueSustained},
	"hot-replica":   {rules.QueueSustained},
}

// TestAlertsAtScrapeResolution runs the generated rules with promtool
// test rules on fleets at the scrape interval they were simulated with
// (15 s and 60 s; input series at that resolution), the default `for:`,
// the baseline 30 minutes back and every minute evaluated. Each incident
// fires its hypothesis alert within 15 minutes of its start (where the
// scrape interval can show the cause), and no hypothesis alert of another
// mitigation fires at any minute; counter-cases fire nothing at any
// minute. -short runs the 15 s fleets of a few cases.
func TestAlertsAtScrapeResolution(t *testing.T) {
	tool := promserver.Binary(t, "promtool")
	start := int(fleetsim.IncidentStart / time.Minute)
	short := map[string]bool{"burst-10s-each-minute": true, "decode-pressure": true, "kv-preemption": true, "prefix-cache-loss-slo-held": true}
	type row struct{ name, expect, fired string }
	var (
		mu    sync.Mutex
		table []row
	)
	// The fleets run in parallel (-parallel, GOMAXPROCS by default):
	// promtool is the cost.
	t.Run("fleets", func(t *testing.T) {
		for _, scrape := range []time.Duration{15 * time.Second, time.Minute} {
			for _, c := range resolutionCases(t) {
				name := fmt.Sprintf("%s/%v", c.name, scrape)
				t.Run(name, func(t *testing.T) {
					if testing.Short() && (!short[c.name] || scrape != 15*time.Second) {
						t.Skip("-short: a few 15 s fleets")
					}
					t.Parallel()
					dir := t.TempDir()
					opts := DefaultOptions
					opts.BaselineOffset = fleetsim.IncidentStart
					opts.ScrapeInterval = scrape
					opts.SLO = c.slo
					_, rf := writeRules(t, dir, opts)
					cfg := c.cfg
					cfg.ScrapeInterval = scrape
					f, err := fleetsim.Run(cfg)
					require.NoError(t, err)
					in := toInputSeriesOf(t, f, scrape, readBy(t, rf))
					fired, _ := firingAt(t, tool, dir, rf, in, scrape, int(f.Config.Duration/time.Minute))
					mu.Lock()
					table = append(table, row{name, c.expect, describeFired(fired)})
					mu.Unlock()
					hyps := map[string]rules.Rule{}
					for _, h := range rules.Map() {
						hyps[AlertName(string(h.ID))] = h
					}
					if c.expect == "no-incident" {
						for alert, ms := range fired {
							if _, ok := hyps[alert]; ok || c.slo != (rules.SLO{}) {
								t.Errorf("counter-case fires %s at minutes %v", alert, ms)
							}
						}
						return
					}
					want := AlertName(c.expect)
					exp := hyps[want]
					for alert, ms := range fired {
						h, ok := hyps[alert]
						if !ok || alert == want {
							continue
						}
						if slices.Contains(besides[c.name], h.ID) {
							require.True(t, refines(hyps, exp.ID, h.ID), "%s is listed beside %s, which does not refine it", h.ID, exp.ID)
							t.Logf("%s fires at minutes %v beside %s, which refines it", alert, ms, want)
							continue
						}
						var other []string
						for _, m := range h.Mitigations {
							if !slices.Contains(exp.Mitigations, m) {
								other = append(other, m)
							}
						}
						assert.Empty(t, other, "%s fires at minutes %v beside %s, with other mitigations", alert, ms, want)
					}
					if !c.resolvable(scrape) {
						return
					}
					ms := fired[want]
					require.NotEmpty(t, ms, "%s does not fire; fired: %v", want, fired)
					assert.GreaterOrEqual(t, ms[0], start, "%s fires before the incident", want)
					assert.LessOrEqual(t, ms[0], start+15, "%s fires later than 15 minutes into the incident", want)
				})
			}
		}
	})
	slices.SortFunc(table, func(a, b row) int { return strings.Compare(a.name, b.name) })
	var b strings.Builder
	for _, r := range table {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", r.name, r.expect, r.fired)
	}
	t.Logf("alerts fired (first minute):\n%s", b.String())
}

// refines reports whether hypothesis a refines b in the map, directly or
// through a chain of Refines.
func refines(hyps map[string]rules.Rule, a, b rules.HypothesisID) bool {
	seen := map[rules.HypothesisID]bool{}
	var walk func(rules.HypothesisID) bool
	walk = func(x rules.HypothesisID) bool {
		if seen[x] {
			return false
		}
		seen[x] = true
		for _, y := range hyps[AlertName(string(x))].Refines {
			if y == b || walk(y) {
				return true
			}
		}
		return false
	}
	return walk(a)
}
