package alerts

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/rules"

	"github.com/whyslow/whyslow/internal/golden"
	"github.com/whyslow/whyslow/internal/promserver"
)

// TestAlertsEveryFact: every fact the rules know has a PromQL expression
// or a note saying why it has none, which the exporter prints.
func TestAlertsEveryFact(t *testing.T) {
	for _, id := range rules.FactIDs() {
		fe, ok := factTable[id]
		if !assert.True(t, ok, "fact %s has no entry in factTable (expression or not-expressible note)", id) {
			continue
		}
		assert.True(t, (fe.expr != nil) != (fe.note != ""), "fact %s: want exactly one of expr and note", id)
		if info, _ := rules.Info(id); fe.expr != nil && (info.Kind == rules.KindQuantile || info.Kind == rules.KindMean) {
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
	nm, err := newNames(catalog.Default(), "")
	require.NoError(t, err)
	tr := &translator{th: rules.DefaultThresholds, need: newNeed(nm)}
	r := tr.leaf([]rules.FactID{"brand_new_fact"}, true, "x > 1", "x <= 1")
	assert.Equal(t, tri{}, r)
	assert.Contains(t, tr.need.notExpressible["brand_new_fact"], "no PromQL expression")
	assert.Empty(t, tr.need.order, "an unknown fact must not get a recording rule")
}

// TestAlertsExcluded: the hypotheses that cannot alert, and why. A change
// here is a change of what the alerts cover: update docs/alerts.md too.
func TestAlertsExcluded(t *testing.T) {
	rf, err := Generate(DefaultOptions)
	require.NoError(t, err)
	var ids []string
	for _, n := range rf.Excluded {
		ids = append(ids, n.ID)
	}
	// proxy-network needs client_ttft, which has no default metric;
	// replica-restarts needs restarts counted across scrapes
	// (process_start_time_seconds changes), which PromQL cannot;
	// engine-stall and stale-gauges need runs of scrapes per replica;
	// admission-deferral needs a signal the generator does not read yet,
	// admission-rejections one the default versions do not export (see
	// TestAlertsAdmissionRejections); preemption-thrash weighs histogram
	// buckets by their counts and pd-kv-transfer tells instance roles
	// apart, which PromQL cannot; engine-imbalance compares engines
	// beyond binomial noise.
	excluded := []string{string(rules.ProxyNetwork), string(rules.ReplicaRestarts),
		string(rules.EngineStall), string(rules.StaleGauges), string(rules.AdmissionDeferral), string(rules.AdmissionRejections),
		string(rules.PreemptionThrash), string(rules.PDKVTransfer), string(rules.EngineImbalance)}
	assert.Equal(t, excluded, ids)
	var names []string
	for _, r := range rf.Groups[1].Rules {
		names = append(names, r.Alert)
	}
	for _, h := range rules.Map() {
		if !slices.Contains(excluded, string(h.ID)) {
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

// TestAlertsScrapeResolution: the queue's shape is measured per scrape
// interval under new record names, which the alerts read; the earlier
// one-minute records keep their names and meaning.
func TestAlertsScrapeResolution(t *testing.T) {
	for _, scrape := range []time.Duration{15 * time.Second, time.Minute} {
		opts := DefaultOptions
		opts.ScrapeInterval = scrape
		rf, err := Generate(opts)
		require.NoError(t, err)
		recorded := map[string]string{}
		for _, r := range rf.Groups[0].Rules {
			recorded[r.Record] = r.Expr
		}
		step := fmt.Sprintf("[5m:%s]", dur(scrape))
		tests := []struct{ record, contains string }{
			{"whyslow:waiting_burst_scrape", "irate(vllm:request_success_total[" + dur(3*scrape) + "])"},
			{"whyslow:waiting_burst_scrape", step},
			{"whyslow:arrival_dispersion_scrape", "stdvar_over_time("},
			{"whyslow:arrival_dispersion_scrape", step},
			{"whyslow:arrival_dispersion_scrape:baseline", step + " offset 1d"},
			{"whyslow:waiting_busy_share_scrape", step},
			{"whyslow:waiting_mean_raw", "sum by (model_name) (avg_over_time(vllm:num_requests_waiting[5m]))"},
			// The earlier measures, unchanged.
			{"whyslow:waiting_burst", "[5m:1m]"},
			{"whyslow:arrival_dispersion", "[5m:1m]"},
			{"whyslow:waiting_busy_share", "[5m:1m]"},
			{"whyslow:waiting_mean", "avg_over_time((sum by (model_name) (vllm:num_requests_waiting))[5m:1m])"},
		}
		for _, tt := range tests {
			assert.Contains(t, recorded[tt.record], tt.contains, "%s at %v", tt.record, scrape)
		}
		burst := alertRule(t, rf, AlertName(string(rules.QueueBurst))).Expr
		assert.Contains(t, burst, "whyslow:waiting_burst_scrape >= 3")
		assert.Contains(t, burst, "whyslow:arrival_dispersion_scrape >= 2")
		assert.NotContains(t, burst, "whyslow:waiting_burst ", "the alert reads the scrape-resolution measure")
	}
}

// TestAlertsPrecedence: decode pressure needs TTFT normal, and a rise of
// the waiting mean needs a queue (queue_min) as well as 1.2x a baseline
// that may be 0.
func TestAlertsPrecedence(t *testing.T) {
	rf, err := Generate(DefaultOptions)
	require.NoError(t, err)
	dp := alertRule(t, rf, AlertName(string(rules.DecodePressure)))
	assert.Contains(t, dp.Expr, "(whyslow:symptom_ttft:absent)")
	assert.Contains(t, dp.Annotations["evidence"], "symptom ttft absent")
	qs := alertRule(t, rf, AlertName(string(rules.QueueSustained))).Expr
	assert.Contains(t, qs, "whyslow:waiting_mean_raw >= 1.2 * whyslow:waiting_mean_raw:baseline and whyslow:waiting_mean_raw > 0 and whyslow:waiting_mean_raw >= 1")
	// flat (the counter-evidence) is its negation.
	assert.Contains(t, qs, "whyslow:waiting_mean_raw < 1.2 * whyslow:waiting_mean_raw:baseline or whyslow:waiting_mean_raw <= 0 or whyslow:waiting_mean_raw < 1")
	excluded := excludedIDs(rf)
	for _, h := range rules.Map() {
		if h.ID != rules.DecodePressure && !excluded[string(h.ID)] {
			assert.NotContains(t, alertRule(t, rf, AlertName(string(h.ID))).Expr, "symptom_ttft:absent", h.ID)
		}
	}
}

// TestAlertsSLOGate: with an SLO, every hypothesis alert needs a target
// of its symptoms exceeded (else any target), so that nothing fires while
// the SLO holds; without one, no gate.
func TestAlertsSLOGate(t *testing.T) {
	opts := DefaultOptions
	opts.SLO = rules.SLO{TTFTP95: 2, TPOTP95: 0.1}
	rf, err := Generate(opts)
	require.NoError(t, err)
	plain, err := Generate(DefaultOptions)
	require.NoError(t, err)
	ttft, tpot := "whyslow:ttft_p95 > 2", "whyslow:tpot_p95 > 0.1"
	// Symptom alerts too: ttft and tpot on their own targets, the others
	// on any target.
	for _, s := range rules.SymptomIDs() {
		r := alertRule(t, rf, AlertName("symptom-"+string(s)))
		assert.Equal(t, "critical", r.Labels["severity"], s)
		assert.Equal(t, s != rules.SymptomTPOT, strings.Contains(r.Expr, ttft), "%s: ttft target", s)
		assert.Equal(t, s != rules.SymptomTTFT, strings.Contains(r.Expr, tpot), "%s: tpot target", s)
		assert.NotContains(t, alertRule(t, plain, AlertName("symptom-"+string(s))).Expr, ttft, s)
	}
	excluded := excludedIDs(rf)
	for _, h := range rules.Map() {
		if excluded[string(h.ID)] {
			continue
		}
		r := alertRule(t, rf, AlertName(string(h.ID)))
		assert.Equal(t, "critical", r.Labels["severity"], h.ID)
		assert.Contains(t, r.Annotations["evidence"], "an SLO target of its symptoms exceeded", h.ID)
		explains := func(s rules.SymptomID) bool { return slices.Contains(h.Explains, s) }
		switch {
		case explains(rules.SymptomTTFT) || explains(rules.SymptomTPOT):
			assert.Equal(t, explains(rules.SymptomTTFT), strings.Contains(r.Expr, ttft), "%s: ttft target", h.ID)
			assert.Equal(t, explains(rules.SymptomTPOT), strings.Contains(r.Expr, tpot), "%s: tpot target", h.ID)
		default:
			// No target of its own symptoms: any target.
			assert.Contains(t, r.Expr, ttft, h.ID)
			assert.Contains(t, r.Expr, tpot, h.ID)
		}
		p := alertRule(t, plain, AlertName(string(h.ID)))
		assert.Equal(t, "warning", p.Labels["severity"], h.ID)
		assert.NotContains(t, p.Expr, ttft, h.ID)
	}
}

// TestAlertsInhibit: a hypothesis alert inhibits the symptom alerts it
// explains, and a refined hypothesis only when that one names no other
// mitigation; amtool accepts the configuration (it fails rather than
// skips when CI=true).
func TestAlertsInhibit(t *testing.T) {
	rf, err := Generate(DefaultOptions)
	require.NoError(t, err)
	hyps := map[string]rules.Rule{}
	for _, h := range rules.Map() {
		hyps[AlertName(string(h.ID))] = h
	}
	quoted := regexp.MustCompile(`"([^"]*)"`)
	covered := map[string]bool{}
	for _, r := range rf.Inhibit {
		require.Len(t, r.SourceMatchers, 1)
		require.Len(t, r.TargetMatchers, 1)
		assert.Equal(t, DefaultOptions.By, r.Equal)
		src := quoted.FindStringSubmatch(r.SourceMatchers[0])[1]
		h, ok := hyps[src]
		require.True(t, ok, "source %s is a hypothesis alert", src)
		for _, dst := range strings.Split(quoted.FindStringSubmatch(r.TargetMatchers[0])[1], "|") {
			covered[src+">"+dst] = true
			if g, ok := hyps[dst]; ok {
				assert.Contains(t, h.Refines, g.ID, "%s inhibits %s, which it does not refine", src, dst)
				for _, m := range g.Mitigations {
					assert.Contains(t, h.Mitigations, m, "%s inhibits %s, which names another mitigation", src, dst)
				}
				continue
			}
			s := rules.SymptomID(strings.ToLower(strings.TrimPrefix(dst, "WhyslowSymptom")))
			assert.Contains(t, h.Explains, s, "%s inhibits %s, which it does not explain", src, dst)
		}
	}
	for name, h := range hyps {
		if alertRule := slices.IndexFunc(rf.Groups[1].Rules, func(r Rule) bool { return r.Alert == name }); alertRule < 0 {
			continue
		}
		for _, s := range h.Explains {
			assert.True(t, covered[name+">"+AlertName("symptom-"+string(s))], "%s does not inhibit its symptom %s", name, s)
		}
		for _, g := range h.Refines {
			if slices.IndexFunc(rf.Groups[1].Rules, func(r Rule) bool { return r.Alert == AlertName(string(g)) }) < 0 {
				continue // the general hypothesis has no alert to inhibit
			}
			if !covered[name+">"+AlertName(string(g))] && g != rules.ReplicaRestarts {
				assert.True(t, slices.ContainsFunc(rf.NotInhibited, func(n Note) bool {
					return n.ID == string(g)+" under "+string(h.ID)
				}), "%s refines %s: inhibited or listed as not inhibited", h.ID, g)
			}
		}
	}
	b, err := rf.AlertmanagerYAML()
	require.NoError(t, err)
	for _, n := range rf.NotInhibited {
		assert.Contains(t, string(b), "# "+n.ID+": "+n.Reason)
	}
	tool := promserver.Binary(t, "amtool")
	cfg := "route:\n  receiver: default\nreceivers:\n  - name: default\n" + string(b)
	p := filepath.Join(t.TempDir(), "alertmanager.yml")
	require.NoError(t, os.WriteFile(p, []byte(cfg), 0o644))
	out, err := exec.Command(tool, "check-config", p).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), " - "+strconv.Itoa(len(rf.Inhibit))+" inhibit rules")
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
		"60s":       func(o *Options) { o.ScrapeInterval = time.Minute },
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
		"scrape > window": func(o *Options) { o.ScrapeInterval = 3 * time.Minute },
		"negative scrape": func(o *Options) { o.ScrapeInterval = -time.Second },
	} {
		opts := DefaultOptions
		change(&opts)
		_, err := Generate(opts)
		assert.Error(t, err, name)
	}
}

// excludedIDs lists the hypotheses the rule file has no alert for.
func excludedIDs(rf RuleFile) map[string]bool {
	out := map[string]bool{}
	for _, n := range rf.Excluded {
		out[n.ID] = true
	}
	return out
}

// TestAlertsAdmissionRejections: the rejection share is a ratio of
// counter rates where the targeted vLLM exports
// vllm:admission_rejections_total, and not expressible (with the reason)
// where it does not.
func TestAlertsAdmissionRejections(t *testing.T) {
	opts := DefaultOptions
	opts.VLLMVersion = "0.32.0"
	rf, err := Generate(opts)
	require.NoError(t, err)
	var rec, alert string
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			switch {
			case r.Record == "whyslow:admission_rejection_share":
				rec = r.Expr
			case r.Alert == AlertName(string(rules.AdmissionRejections)):
				alert = r.Expr
			}
		}
	}
	assert.Equal(t, "sum by (model_name) (rate(vllm:admission_rejections_total[5m])) / "+
		"(sum by (model_name) (rate(vllm:admission_rejections_total[5m])) + sum by (model_name) (rate(vllm:request_success_total[5m])))", rec)
	assert.Contains(t, alert, "whyslow:admission_rejection_share >= 0.01")
	for _, n := range rf.Excluded {
		assert.NotEqual(t, string(rules.AdmissionRejections), n.ID)
	}

	rf, err = Generate(DefaultOptions)
	require.NoError(t, err)
	var why string
	for _, n := range rf.NotExpressible {
		if n.ID == string(rules.AdmissionRejectionShare) {
			why = n.Reason
		}
	}
	assert.Contains(t, why, "reads signal admission_rejections, which the vLLM versions these rules are generated for do not export")
}
