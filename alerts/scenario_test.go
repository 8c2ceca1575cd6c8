package alerts

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/internal/fleetsim"
	"github.com/whyslow/whyslow/internal/promserver"
	"github.com/whyslow/whyslow/rules"
)

// alertCase is a simulated fleet the generated rules are run on.
type alertCase struct {
	name   string
	cfg    fleetsim.Config
	expect string // hypothesis id, or "no-incident"
	// start and end of the incident (minutes), which is also the
	// baseline offset: the first half is the baseline.
	start, end int
	// vllmVersion, when set, is the version the rules are generated for
	// (Options.VLLMVersion): an alert on a metric the default versions do
	// not export.
	vllmVersion string
}

func alertCases() []alertCase {
	var cs []alertCase
	for _, s := range fleetsim.Scenarios() {
		cs = append(cs, alertCase{s.Name, s.Config, s.Expect, int(fleetsim.IncidentStart / time.Minute), 60, ""})
	}
	// The matrix counter-cases the scenarios lack (40-minute runs).
	for _, name := range []string{"mixed-versions-steady", "traffic-growth-10"} {
		mc, ok := fleetsim.LookupMatrixCase(name)
		if !ok {
			panic("no matrix case " + name)
		}
		cs = append(cs, alertCase{"matrix/" + name, mc.Config(8, 1, 0), mc.Expect,
			int(fleetsim.MatrixIncidentStart / time.Minute), int(fleetsim.MatrixDuration / time.Minute), ""})
	}
	// Admission rejections, which only the rules for a vLLM that exports
	// vllm:admission_rejections_total can see.
	mc, ok := fleetsim.LookupMatrixCase("admission-rejections")
	if !ok {
		panic("no matrix case admission-rejections")
	}
	cs = append(cs, alertCase{"matrix/admission-rejections", mc.Config(8, 1, 0), mc.Expect,
		int(fleetsim.MatrixIncidentStart / time.Minute), int(fleetsim.MatrixDuration / time.Minute), "0.32.0"})
	return cs
}

// scenarioOptions are the default options with the baseline one incident
// half back, a short window of two grid steps and the scrape interval of
// the grid (the input series are on a 1-minute grid: a rate needs two
// samples).
func scenarioOptions(start int) Options {
	opts := DefaultOptions
	opts.BaselineOffset = time.Duration(start) * time.Minute
	opts.ShortWindow = 2 * time.Minute
	opts.ScrapeInterval = time.Minute
	return opts
}

var modelLabel = regexp.MustCompile(`model_name="([^"]+)"`)

// TestAlertsScenarios runs the generated rules with promtool test rules
// over fleetsim scenarios (their scrapes as input series on a 1-minute
// grid, every minute evaluated): each incident fires its hypothesis's
// alert and one of its symptoms' alerts within the incident window after
// `for:`, never before the incident; every counter-case fires no alert
// at any minute.
func TestAlertsScenarios(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates 15 fleets and runs promtool on each (minutes)")
	}
	tool := promserver.Binary(t, "promtool")
	type row struct{ name, expect, fired string }
	var table []row
	for _, c := range alertCases() {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := scenarioOptions(c.start)
			opts.VLLMVersion = c.vllmVersion
			_, rf := writeRules(t, dir, opts)
			f, err := fleetsim.Run(c.cfg)
			require.NoError(t, err)
			in := toInputSeriesOf(t, f, time.Minute, readBy(t, rf))
			fired, ok := firing(t, tool, dir, rf, in, c.end)
			table = append(table, row{c.name, c.expect, describeFired(fired)})
			if c.expect == "no-incident" {
				assert.True(t, ok, "promtool found alerts in a counter-case")
				assert.Empty(t, fired, "counter-case %s fires alerts", c.name)
				return
			}
			h := ruleOf(t, rules.HypothesisID(c.expect))
			name := AlertName(c.expect)
			forMin := int(opts.For / time.Minute)
			inWindow := func(ms []int) []int {
				var out []int
				for _, m := range ms {
					if m >= c.start+forMin && m <= c.end {
						out = append(out, m)
					}
				}
				return out
			}
			for alert, ms := range fired {
				assert.GreaterOrEqual(t, ms[0], c.start+forMin, "%s fires at minute %d, before the incident (%d) + for", alert, ms[0], c.start)
			}
			got := inWindow(fired[name])
			require.NotEmpty(t, got, "%s does not fire in the incident window; fired: %v", name, fired)
			var symFired bool
			for _, s := range h.Explains {
				symFired = symFired || len(inWindow(fired[AlertName("symptom-"+string(s))])) > 0
			}
			assert.True(t, symFired, "no symptom alert of %s (%v) fires; fired: %v", c.expect, h.Explains, fired)

			// Confirm with promtool itself: the alert fires at its first
			// minute with exactly the labels and annotations of the rule.
			rule := alertRule(t, rf, name)
			m := modelLabel.FindStringSubmatch(strings.Join(seriesNames(in), ""))
			require.NotNil(t, m, "no model_name in the input")
			labels := map[string]string{"model_name": m[1]}
			for k, v := range rule.Labels {
				labels[k] = v
			}
			out, pass := runPromtoolTest(t, tool, dir, "confirm_test.yml", testFile{
				RuleFiles: []string{"rules.yml"}, EvaluationInterval: "1m",
				GroupEvalOrder: []string{rf.Groups[0].Name, rf.Groups[1].Name},
				Tests: []testGroup{{Interval: "1m", InputSeries: in, AlertTests: []alertTest{{
					EvalTime: fmt.Sprintf("%dm", got[0]), Alertname: name,
					ExpAlerts: []expAlert{{ExpLabels: labels, ExpAnnotations: rule.Annotations}},
				}}}},
			})
			assert.True(t, pass, "promtool test rules:\n%s", out)
		})
	}
	var b strings.Builder
	for _, r := range table {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", r.name, r.expect, r.fired)
	}
	t.Logf("alerts fired (first minute):\n%s", b.String())
}

// seriesNames returns the first input series with a model_name label.
func seriesNames(in []inputSeries) []string {
	for _, s := range in {
		if strings.Contains(s.Series, "model_name=") {
			return []string{s.Series}
		}
	}
	return nil
}

func ruleOf(t *testing.T, id rules.HypothesisID) rules.Rule {
	t.Helper()
	for _, r := range rules.Map() {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("no hypothesis %s in the map", id)
	return rules.Rule{}
}

func alertRule(t *testing.T, rf RuleFile, name string) Rule {
	t.Helper()
	i := slices.IndexFunc(rf.Groups[1].Rules, func(r Rule) bool { return r.Alert == name })
	require.GreaterOrEqual(t, i, 0, "no alert %s", name)
	return rf.Groups[1].Rules[i]
}

func describeFired(fired map[string][]int) string {
	if len(fired) == 0 {
		return "none"
	}
	names := slices.Sorted(maps.Keys(fired))
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s@%d", strings.TrimPrefix(n, "Whyslow"), fired[n][0])
	}
	return strings.Join(parts, ", ")
}

// TestAlertsScenarioCoverage: every hypothesis alert is exercised by a
// scenario of TestAlertsScenarios, except those with no alert at all
// (RuleFile.Excluded: proxy-network, whose client TTFT no simulated
// fleet exposes by default).
func TestAlertsScenarioCoverage(t *testing.T) {
	rf, err := Generate(DefaultOptions)
	require.NoError(t, err)
	covered := map[string]bool{}
	versioned := map[string]bool{} // covered by rules for another vLLM version
	for _, c := range alertCases() {
		covered[c.expect] = true
		versioned[c.expect] = versioned[c.expect] || c.vllmVersion != ""
	}
	excluded := map[string]bool{}
	for _, n := range rf.Excluded {
		// Excluded by default, exercised with the version that exports
		// what it reads.
		excluded[n.ID] = !versioned[n.ID]
	}
	// Alerts generated but not yet exercised by a promtool scenario: the
	// named fleetsim scenarios have no client deadlines or 5xx responses
	// (those fleets live in diagnose/reliability_test.go). Asserted, so
	// that covering them removes them from this list.
	untested := map[string]string{
		string(rules.ClientAbandonment):    "no named fleetsim scenario with client deadlines yet",
		string(rules.ServerErrors):         "no named fleetsim scenario with 5xx responses yet",
		string(rules.SpecDecodeAcceptance): "no promtool scenario with speculative decoding yet",
	}
	for _, h := range rules.Map() {
		id := string(h.ID)
		if why, ok := untested[id]; ok {
			assert.False(t, covered[id] || excluded[id], "hypothesis %s is covered now (%s): drop it from untested", id, why)
			continue
		}
		assert.True(t, covered[id] != excluded[id], "hypothesis %s: want exactly one of a scenario (covered %v) and an exclusion (excluded %v)", id, covered[id], excluded[id])
	}
}
