package alerts

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/rules"

	"github.com/whyslow/whyslow/internal/golden"
	"github.com/whyslow/whyslow/internal/promserver"
)

var update = golden.Update // the -update flag

// TestAlertsEveryFact: every fact the rules know has a PromQL expression
// or a note saying why it has none, which the exporter prints.
func TestAlertsEveryFact(t *testing.T) {
	for _, id := range rules.FactIDs() {
		fe, ok := factTable[id]
		if !assert.True(t, ok, "fact %s has no entry in factTable (expression or not-expressible note)", id) {
			continue
		}
		assert.True(t, (fe.expr != nil) != (fe.note != ""), "fact %s: want exactly one of expr and note", id)
		if info, _ := rules.Info(id); fe.expr != nil && (info.Kind == rules.Quantile || info.Kind == rules.Mean) {
			assert.NotNil(t, fe.count, "fact %s is a %v: its alerts need the observation count", id, info.Kind)
		}
	}
	for id := range factTable {
		_, ok := rules.Info(id)
		assert.True(t, ok, "factTable entry %s is not a fact of package rules", id)
	}
	rf, err := Generate(DefaultOptions)
	require.NoError(t, err)
	b, err := rf.YAML()
	require.NoError(t, err)
	for _, n := range rf.NotExpressible {
		assert.Contains(t, string(b), "# not expressible in PromQL: "+n.ID+": "+n.Reason)
	}
}

// TestAlertsUnknownFact: a fact the table does not know (a new hypothesis
// in the map) makes its condition unknown, with a note, never an error.
func TestAlertsUnknownFact(t *testing.T) {
	tr := &translator{th: rules.DefaultThresholds, need: newNeed()}
	r := tr.leaf([]rules.FactID{"brand_new_fact"}, true, "x > 1", "x <= 1")
	assert.Equal(t, tri{}, r)
	assert.Contains(t, tr.need.notExpressible["brand_new_fact"], "no PromQL expression")
	assert.Empty(t, tr.need.order, "an unknown fact must not get a recording rule")
}

// TestAlertsExcluded: the hypotheses that cannot alert, and why. A change
// here is a change of what the alerts cover: update README too.
func TestAlertsExcluded(t *testing.T) {
	rf, err := Generate(DefaultOptions)
	require.NoError(t, err)
	var ids []string
	for _, n := range rf.Excluded {
		ids = append(ids, n.ID)
	}
	// proxy-network needs client_ttft, which has no default metric;
	// replica-restarts needs restarts counted across scrapes
	// (process_start_time_seconds changes), which PromQL cannot.
	// engine-imbalance compares engines beyond binomial noise.
	assert.Equal(t, []string{string(rules.ProxyNetwork), string(rules.ReplicaRestarts), string(rules.EngineImbalance)}, ids)
	var names []string
	for _, r := range rf.Groups[1].Rules {
		names = append(names, r.Alert)
	}
	for _, h := range rules.Map() {
		if h.ID != rules.ProxyNetwork && h.ID != rules.ReplicaRestarts && h.ID != rules.EngineImbalance {
			assert.Contains(t, names, AlertName(string(h.ID)))
		}
	}
	for _, s := range rules.SymptomIDs() {
		assert.Contains(t, names, AlertName("symptom-"+string(s)))
	}
}

// TestAlertsShape: labels, annotations without templating, guards and
// baselines where the issue asks for them.
func TestAlertsShape(t *testing.T) {
	rf, err := Generate(DefaultOptions)
	require.NoError(t, err)
	recorded := map[string]string{}
	for _, r := range rf.Groups[0].Rules {
		require.NotEmpty(t, r.Record)
		recorded[r.Record] = r.Expr
	}
	for _, r := range rf.Groups[1].Rules {
		assert.Equal(t, "10m", r.For, r.Alert)
		assert.NotEmpty(t, r.Labels["severity"], r.Alert)
		assert.NotEmpty(t, r.Labels["symptom"], r.Alert)
		for k, v := range r.Annotations {
			assert.NotContains(t, v, "{{", "%s annotation %s is templated", r.Alert, k)
			assert.NotContains(t, v, "$value", "%s annotation %s is templated", r.Alert, k)
		}
		assert.Contains(t, r.Annotations["noise"], "beyond noise")
		assert.NotEmpty(t, r.Annotations["runbook"], r.Alert)
		if r.Labels["hypothesis"] != "" {
			for _, k := range []string{"summary", "evidence", "counter_evidence", "next_checks", "mitigation"} {
				assert.NotEmpty(t, r.Annotations[k], "%s annotation %s", r.Alert, k)
			}
		}
		// Every recording rule an alert reads exists.
		for _, name := range recordedNames(r.Expr) {
			assert.Contains(t, recorded, name, "%s reads %s", r.Alert, name)
		}
	}
	ttft := recorded["whyslow:ttft_p95"]
	assert.Contains(t, ttft, "histogram_quantile(0.95, sum by (le, model_name) (rate(vllm:time_to_first_token_seconds_bucket{le=~")
	assert.NotContains(t, ttft, "avg", "never an average of per-pod quantiles")
	assert.Contains(t, recorded["whyslow:ttft_p95:baseline"], "[5m] offset 1d")
	assert.Equal(t, "sum by (model_name) (increase(vllm:time_to_first_token_seconds_count[5m]))", recorded["whyslow:ttft_p95:count"])
	assert.Contains(t, recorded["whyslow:symptom_ttft:present"], "whyslow:ttft_p95:count >= 20")
	assert.Contains(t, recorded["whyslow:symptom_tail:present"], "whyslow:ttft_p99:count >= 100")
	assert.Contains(t, recorded["whyslow:itl_p95"], "or rate(vllm:time_per_output_token_seconds_bucket", "V0 name where it differs")
	assert.Contains(t, recorded["whyslow:waiting_burst"], "max_over_time(")
}

// recordedNames returns the whyslow: series an expression reads.
func recordedNames(expr string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(expr, func(r rune) bool {
		return !(r == ':' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	}) {
		if strings.HasPrefix(f, "whyslow:") {
			out = append(out, f)
		}
	}
	return out
}

// TestAlertsPromtoolCheck: promtool check rules accepts every generated
// file (it fails rather than skips when CI=true).
func TestAlertsPromtoolCheck(t *testing.T) {
	tool := promserver.Binary(t, "promtool")
	cases := map[string]func(*Options){
		"default": func(*Options) {},
		"slo": func(o *Options) {
			o.SLO = rules.SLO{TTFTP95: 2, TTFTP99: 5, TPOTP95: 0.08, ITLP95: 0.1, E2EP99: 30, ErrorShare: 0.01}
		},
		"v0": func(o *Options) { o.VLLMVersion = "V0"; o.By = []string{"model_name", "namespace"} },
		"v1": func(o *Options) { o.VLLMVersion = "V1"; o.For = 15 * time.Minute },
		"0.9.2": func(o *Options) {
			o.VLLMVersion = "0.9.2"
			o.RateWindow = 2 * time.Minute
			o.BaselineOffset = 7 * 24 * time.Hour
		},
		"namespace": func(o *Options) { o.By = []string{"namespace"} },
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			opts := DefaultOptions
			change(&opts)
			p, _ := writeRules(t, t.TempDir(), opts)
			out, err := exec.Command(tool, "check", "rules", p).CombinedOutput()
			require.NoError(t, err, "%s", out)
			assert.Contains(t, string(out), "SUCCESS")
		})
	}
}

// TestAlertsGolden: the rule file for the default options.
func TestAlertsGolden(t *testing.T) {
	rf, err := Generate(DefaultOptions)
	require.NoError(t, err)
	got, err := rf.YAML()
	require.NoError(t, err)
	golden.Check(t, filepath.Join("testdata", "default-rules.yml"), got)
}

// TestAlertsOptions: bad options are refused.
func TestAlertsOptions(t *testing.T) {
	for name, change := range map[string]func(*Options){
		"no by":           func(o *Options) { o.By = nil },
		"negative for":    func(o *Options) { o.For = -time.Minute },
		"offset < window": func(o *Options) { o.BaselineOffset = time.Minute },
		"bad version":     func(o *Options) { o.VLLMVersion = "banana" },
		"bad label":       func(o *Options) { o.By = []string{"model-name"} },
	} {
		opts := DefaultOptions
		change(&opts)
		_, err := Generate(opts)
		assert.Error(t, err, name)
	}
}
