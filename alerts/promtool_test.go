package alerts

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/whyslow/whyslow/internal/fleetsim"
)

// writeRules generates the rule file for opts into dir and returns its path.
func writeRules(t *testing.T, dir string, opts Options) (string, RuleFile) {
	t.Helper()
	f, err := Generate(opts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.YAML()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "rules.yml")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p, f
}

// inputSeries is one series of a promtool test: selector and values.
type inputSeries struct {
	Series string `yaml:"series"`
	Values string `yaml:"values"`
}

// readBy returns whether the rules of rf read a metric name: the input
// series of the others are left out (promtool's cost grows with them).
func readBy(t *testing.T, rf RuleFile) func(name string) bool {
	t.Helper()
	b, err := rf.YAML()
	require.NoError(t, err)
	return func(name string) bool { return strings.Contains(string(b), name) }
}

// toInputSeriesOf is toInputSeries for the metrics keep accepts (nil:
// every metric).
func toInputSeriesOf(t *testing.T, f *fleetsim.Fleet, step time.Duration, keep func(name string) bool) []inputSeries {
	t.Helper()
	start := f.Config.Start.UnixMilli()
	n := int(f.Config.Duration/step) + 1
	type pt struct {
		ts int64
		v  float64
	}
	series := map[string][]pt{}
	kept := map[string]bool{}
	f.EachStoredSample(func(name string) bool {
		k, ok := kept[name]
		if !ok && keep != nil {
			k = keep(name)
		}
		kept[name] = k || keep == nil
		return kept[name]
	}, func(s string, at time.Time, v float64) {
		series[s] = append(series[s], pt{at.UnixMilli(), v})
	})
	keys := slices.Sorted(maps.Keys(series))
	out := make([]inputSeries, 0, len(keys))
	stepMs := step.Milliseconds()
	for _, k := range keys {
		pts := series[k]
		sort.Slice(pts, func(i, j int) bool { return pts[i].ts < pts[j].ts })
		vals := make([]string, n)
		j := -1
		for i := range vals {
			at := start + int64(i)*stepMs
			for j+1 < len(pts) && pts[j+1].ts <= at {
				j++
			}
			vals[i] = "_"
			if j >= 0 && at-pts[j].ts < stepMs {
				vals[i] = strconv.FormatFloat(pts[j].v, 'g', -1, 64)
			}
		}
		out = append(out, inputSeries{Series: k, Values: strings.Join(vals, " ")})
	}
	return out
}

type alertTest struct {
	EvalTime  string     `yaml:"eval_time"`
	Alertname string     `yaml:"alertname"`
	ExpAlerts []expAlert `yaml:"exp_alerts"`
}

type expAlert struct {
	ExpLabels      map[string]string `yaml:"exp_labels"`
	ExpAnnotations map[string]string `yaml:"exp_annotations"`
}

type testGroup struct {
	Interval    string        `yaml:"interval"`
	InputSeries []inputSeries `yaml:"input_series"`
	AlertTests  []alertTest   `yaml:"alert_rule_test"`
}

type testFile struct {
	RuleFiles          []string    `yaml:"rule_files"`
	EvaluationInterval string      `yaml:"evaluation_interval"`
	GroupEvalOrder     []string    `yaml:"group_eval_order"`
	Tests              []testGroup `yaml:"tests"`
}

// runPromtoolTest writes the test file and runs promtool test rules,
// returning its output and whether it passed.
func runPromtoolTest(t *testing.T, tool, dir, name string, tf testFile) (string, bool) {
	t.Helper()
	b, err := yaml.Marshal(tf)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(tool, "test", "rules", p).CombinedOutput()
	return string(out), err == nil
}

// gotAlert matches promtool's report of a failed expectation:
// "alertname: X, time: 41m," followed by the alerts it got.
var gotAlert = regexp.MustCompile(`alertname: (\w+), time: (\w+),\s*\n\s*exp:\[\],\s*\n\s*got:\[`)

// firing returns, for each alert, the minutes at which promtool found it
// firing: every minute of the run is asserted to have no alert, and the
// failures are the firings.
func firing(t *testing.T, tool, dir string, rf RuleFile, input []inputSeries, minutes int) (map[string][]int, bool) {
	t.Helper()
	return firingAt(t, tool, dir, rf, input, time.Minute, minutes)
}

// firingAt is firing with input series at the given interval.
func firingAt(t *testing.T, tool, dir string, rf RuleFile, input []inputSeries, interval time.Duration, minutes int) (map[string][]int, bool) {
	t.Helper()
	var tests []alertTest
	for m := 0; m <= minutes; m++ {
		for _, r := range rf.Groups[1].Rules {
			tests = append(tests, alertTest{EvalTime: fmt.Sprintf("%dm", m), Alertname: r.Alert})
		}
	}
	out, ok := runPromtoolTest(t, tool, dir, "discover_test.yml", testFile{
		RuleFiles: []string{"rules.yml"}, EvaluationInterval: "1m",
		GroupEvalOrder: []string{rf.Groups[0].Name, rf.Groups[1].Name},
		Tests:          []testGroup{{Interval: dur(interval), InputSeries: input, AlertTests: tests}},
	})
	fired := map[string][]int{}
	for _, m := range gotAlert.FindAllStringSubmatch(out, -1) {
		d, err := time.ParseDuration(m[2])
		if err != nil {
			t.Fatalf("promtool time %q: %v", m[2], err)
		}
		fired[m[1]] = append(fired[m[1]], int(d/time.Minute))
	}
	if !ok && len(fired) == 0 {
		t.Fatalf("promtool test rules failed without alert mismatches:\n%s", out)
	}
	for k := range fired {
		sort.Ints(fired[k])
	}
	return fired, ok
}
