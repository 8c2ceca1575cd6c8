package rules_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/rules"

	"github.com/whyslow/whyslow/internal/golden"
)

// TestDescribeGolden compares the printed decision map with
// testdata/map.golden; run with -update to rewrite it.
func TestDescribeGolden(t *testing.T) {
	got := rules.Describe(rules.DefaultThresholds)
	golden.Check(t, filepath.Join("testdata", "map.golden"), []byte(got))
	// Thresholds reach the printed conditions.
	th := rules.DefaultThresholds
	th.KVHigh = 0.95
	assert.Contains(t, rules.Describe(th), "kv_usage_max >= 95%")
}

func TestMapInvariants(t *testing.T) {
	m := rules.Map()
	want := []rules.HypothesisID{"queue-sustained", "queue-burst", "prefill-long-prompts", "prefix-cache-loss",
		"decode-pressure", "kv-preemption", "outside-gpu", "replica-hotspot", "proxy-network",
		"client-abandonment", "replica-restarts", "server-errors",
		"engine-stall", "stale-gauges", "admission-deferral", "admission-rejections",
		"preemption-thrash", "spec-decode-acceptance", "pd-kv-transfer", "engine-imbalance"}
	var ids []rules.HypothesisID
	for _, r := range m {
		ids = append(ids, r.ID)
	}
	require.Equal(t, want, ids)

	known := func(id rules.FactID) bool { _, ok := rules.Info(id); return ok }
	byID := map[rules.HypothesisID]rules.Rule{}
	for _, r := range m {
		byID[r.ID] = r
	}
	for _, r := range m {
		t.Run(string(r.ID), func(t *testing.T) {
			assert.NotEmpty(t, r.Title)
			assert.NotEmpty(t, r.Observed)
			assert.NotEmpty(t, r.Explains)
			assert.NotEmpty(t, r.Support)
			assert.NotEmpty(t, r.Counter, "every row names its counter-evidence")
			assert.NotEmpty(t, r.Mitigations)
			assert.NotEmpty(t, r.RootCause)
			assert.NotEmpty(t, r.Prevention)
			var conds []rules.Cond
			conds = append(conds, r.Support...)
			for _, c := range r.Counter {
				conds = append(conds, c.When)
			}
			for _, c := range r.Checks {
				if c.When != nil {
					conds = append(conds, *c.When)
				}
			}
			for _, c := range conds {
				for _, f := range c.Facts() {
					assert.True(t, known(f), "%s uses unknown fact %s", c, f)
				}
			}
			p := r.Experiment
			require.NoError(t, p.Validate())
			assert.Equal(t, string(r.ID), p.Hypothesis)
			for _, e := range p.Expect {
				assert.True(t, known(e.Metric), "%s", e.Metric)
				info, _ := rules.Info(e.Metric)
				if info.Better != "" {
					assert.Equal(t, info.Better, e.Direction, "%s expected to move the wrong way", e.Metric)
				}
			}
			for _, g := range p.Guards {
				assert.True(t, known(g.Metric), "%s", g.Metric)
				info, _ := rules.Info(g.Metric)
				assert.Equal(t, info.Better, g.Better, "%s", g.Metric)
			}
			for _, g := range r.Refines {
				_, ok := byID[g]
				assert.True(t, ok, "refines unknown %s", g)
				for _, back := range byID[g].Refines {
					assert.NotEqual(t, r.ID, back, "refinement cycle")
				}
			}
		})
	}
	// Map returns a fresh copy.
	m[0].Mitigations[0] = "changed"
	m[0].Experiment.Hold[0] = "changed"
	assert.NotEqual(t, "changed", rules.Map()[0].Mitigations[0])
	assert.NotEqual(t, "changed", rules.Map()[0].Experiment.Hold[0])
}

func TestFactCatalog(t *testing.T) {
	ids := rules.FactIDs()
	require.NotEmpty(t, ids)
	for i, id := range ids {
		if i > 0 {
			require.Less(t, ids[i-1], id, "catalog must be sorted and unique")
		}
		info, ok := rules.Info(id)
		require.True(t, ok)
		assert.Equal(t, id, info.ID)
		assert.NotEmpty(t, info.Unit)
		assert.NotEmpty(t, info.Doc)
		assert.Equal(t, strings.ToLower(string(id)), string(id))
		assert.NotContains(t, string(id), "-")
	}
	_, ok := rules.Info("nope")
	assert.False(t, ok)
}

func TestPlanJSON(t *testing.T) {
	p := rules.Map()[4].Experiment // decode-pressure, the article's example
	p.Duration = 15 * time.Minute
	b, err := json.Marshal(p)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"warm_up_seconds":300`)
	assert.Contains(t, string(b), `"duration_seconds":900`)
	assert.Contains(t, string(b), `"change":{"name":"max_num_seqs","from":"current","to":"one step lower"}`)
	assert.NotContains(t, string(b), "WarmUp")
	var q rules.Plan
	require.NoError(t, json.Unmarshal(b, &q))
	assert.Equal(t, p, q)

	// A hand-written plan file.
	src := `{"hypothesis":"decode-pressure","change":{"name":"max_num_seqs","from":"256","to":"128"},
	  "expect":[{"metric":"tpot_p95","direction":"lower","min_effect":0.1}],
	  "guards":[{"metric":"ttft_p95","better":"lower","tolerance":0.1}],
	  "falsification":[{"kind":"no-improvement","metric":"tpot_p95","text":"TPOT did not improve"}],
	  "runs":3,"warm_up_seconds":120.5}`
	require.NoError(t, json.Unmarshal([]byte(src), &q))
	require.NoError(t, q.Validate())
	assert.Equal(t, 120500*time.Millisecond, q.WarmUp)
	assert.Error(t, json.Unmarshal([]byte(`{"warm_up_seconds":-1}`), &q))
}

func TestPlanValidate(t *testing.T) {
	good := func() rules.Plan { return rules.Map()[4].Experiment }
	tests := []struct {
		name  string
		edit  func(*rules.Plan)
		error string
	}{
		{"ok", func(*rules.Plan) {}, ""},
		{"two runs", func(p *rules.Plan) { p.Runs = 2 }, "runs = 2, need >= 3"},
		{"no hypothesis", func(p *rules.Plan) { p.Hypothesis = "" }, "no hypothesis"},
		{"no variable", func(p *rules.Plan) { p.Change.Name = "" }, "no variable to change"},
		{"same value", func(p *rules.Plan) { p.Change.To = p.Change.From }, "changes nothing"},
		{"bad direction", func(p *rules.Plan) { p.Expect[0].Direction = "down" }, `direction "down"`},
		{"negative effect", func(p *rules.Plan) { p.Expect[0].MinEffect = -0.1 }, "min_effect -0.1"},
		{"bad guard", func(p *rules.Plan) { p.Guards[0].Better = "" }, `better ""`},
		{"no expectation", func(p *rules.Plan) { p.Expect = nil }, "no expected improvement"},
		{"no falsifier", func(p *rules.Plan) { p.Falsification = nil }, "no falsification condition"},
		{"unknown kind", func(p *rules.Plan) { p.Falsification[0].Kind = "vibes" }, `unknown kind "vibes"`},
		{"tradeoff without versus", func(p *rules.Plan) { p.Falsification[1].Versus = nil }, "needs metric and versus"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := good()
			tt.edit(&p)
			err := p.Validate()
			if tt.error == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.error)
		})
	}
}
