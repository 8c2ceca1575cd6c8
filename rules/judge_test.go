package rules

import (
	"encoding/json"
	"errors"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/internal/golden"
)

// judgePlan is the decode-pressure plan with a known variable.
func judgePlan() Plan {
	return Plan{
		Hypothesis: string(DecodePressure),
		Change:     Change{Name: "max_num_seqs", From: "128", To: "96"},
		Expect:     []Expectation{{Metric: TPOTP95, Direction: Lower, MinEffect: 0.1}},
		Guards:     []Guard{{Metric: TTFTP95, Better: Lower, Tolerance: 0.1}},
		Falsification: []Falsifier{
			{Kind: NoImprovement, Metric: TPOTP95, Text: "TPOT did not improve"},
			{Kind: WorseThanGain, Metric: TPOTP95, Versus: []FactID{QueueTimeP95, TTFTP95}, Text: "queue and TTFT got worse by more than TPOT improved"},
			{Kind: Inconsistent, Metric: TPOTP95, Text: "directions inconsistent across repeats"},
		},
		Runs: 3, WarmUp: 5 * time.Minute,
	}
}

// arm builds runs from per-run values of TPOT p95, TTFT p95 and queue
// time p95, with a fixed workload.
func arm(prefix string, tpot, ttft, queue []float64) []RunFacts {
	runs := make([]RunFacts, len(tpot))
	for i := range tpot {
		q := func(v float64) Fact { return Measured(v).WithCount(400, math.NaN()) }
		runs[i] = RunFacts{
			Name: prefix + string(rune('1'+i)), Window: "10:05-10:20Z", Duration: 15 * time.Minute,
			Facts: Facts{
				TPOTP95: q(tpot[i]), TTFTP95: q(ttft[i]), QueueTimeP95: q(queue[i]),
				ArrivalRate: Measured(10), PromptTokensP50: q(800), PromptTokensP95: q(2500),
				GenerationTokensP50: q(400), GenerationTokensP95: q(950),
				ErrorShare: MissingFact(errors.New("no finished_reason=\"error\" series")),
			},
		}
	}
	return runs
}

func rep(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func outcomes(j Judgement) map[string]string {
	m := map[string]string{}
	for _, r := range j.Reasons {
		key := r.Kind + ":" + string(r.Metric)
		if r.Kind == "falsifier" {
			key = "falsifier:" + strings.SplitN(r.Text, ":", 2)[0]
		}
		m[key] = r.Outcome
	}
	return m
}

func TestJudgeVerdicts(t *testing.T) {
	base := arm("b", []float64{0.050, 0.052, 0.049}, []float64{0.50, 0.52, 0.49}, []float64{0.20, 0.21, 0.19})
	tests := []struct {
		name      string
		plan      func(*Plan)
		baseline  []RunFacts
		treatment []RunFacts
		opts      JudgeOptions
		want      Decision
		reasons   map[string]string // subset of outcomes()
	}{
		{
			name: "adopt: every treatment run beats every baseline run by 10%", baseline: base,
			treatment: arm("t", []float64{0.040, 0.041, 0.039}, []float64{0.50, 0.51, 0.50}, []float64{0.21, 0.20, 0.22}),
			want:      Adopt,
			reasons: map[string]string{"expect:tpot_p95": "held", "guard:ttft_p95": "ok",
				"falsifier:TPOT did not improve": "not-fired", "falsifier:directions inconsistent across repeats": "not-fired"},
		},
		{
			name: "inconclusive: improvement of 15% but the runs overlap", baseline: base,
			treatment: arm("t", []float64{0.040, 0.044, 0.0475}, rep(0.5, 3), rep(0.2, 3)),
			want:      Inconclusive, reasons: map[string]string{"expect:tpot_p95": "not-held"},
		},
		{
			name: "reject: TPOT did not improve", baseline: base,
			treatment: arm("t", []float64{0.049, 0.050, 0.051}, rep(0.5, 3), rep(0.2, 3)),
			want:      Reject, reasons: map[string]string{"falsifier:TPOT did not improve": "fired"},
		},
		{
			name: "reject: queue and TTFT got worse by more than TPOT improved", baseline: base,
			treatment: arm("t", []float64{0.040, 0.041, 0.039}, []float64{0.52, 0.53, 0.5}, []float64{0.5, 0.6, 0.7}),
			want:      Reject,
			reasons:   map[string]string{"expect:tpot_p95": "held", "falsifier:queue and TTFT got worse by more than TPOT improved": "fired"},
		},
		{
			name: "reject: directions inconsistent across repeats", baseline: base,
			plan:      func(p *Plan) { p.Falsification = p.Falsification[2:] },
			treatment: arm("t", []float64{0.030, 0.054, 0.040}, rep(0.5, 3), rep(0.2, 3)),
			want:      Reject, reasons: map[string]string{"falsifier:directions inconsistent across repeats": "fired", "expect:tpot_p95": "not-held"},
		},
		{
			name: "reject: guard broke", baseline: base,
			treatment: arm("t", []float64{0.040, 0.041, 0.039}, []float64{0.6, 0.61, 0.62}, rep(0.2, 3)),
			want:      Reject, reasons: map[string]string{"guard:ttft_p95": "broke", "expect:tpot_p95": "held"},
		},
		{
			name: "reject: the expected improvement went the wrong way in every run", baseline: base,
			plan:      func(p *Plan) { p.Falsification = []Falsifier{{Kind: Manual, Text: "look at DCGM"}} },
			treatment: arm("t", []float64{0.060, 0.061, 0.062}, rep(0.5, 3), rep(0.2, 3)),
			want:      Reject, reasons: map[string]string{"expect:tpot_p95": "wrong-way", "falsifier:look at DCGM (to be judged by a person)": "manual"},
		},
		{
			name: "inconclusive: mixed directions without an inconsistency falsifier", baseline: base,
			plan:      func(p *Plan) { p.Falsification = p.Falsification[1:2] },
			treatment: arm("t", []float64{0.030, 0.054, 0.040}, rep(0.5, 3), rep(0.2, 3)),
			want:      Inconclusive, reasons: map[string]string{"expect:tpot_p95": "not-held"},
		},
		{
			name:      "adopt needs p < 0.05 from 4 runs: separated 4+4 gives p=0.029",
			baseline:  arm("b", []float64{0.050, 0.052, 0.049, 0.051}, rep(0.5, 4), rep(0.2, 4)),
			treatment: arm("t", []float64{0.040, 0.041, 0.039, 0.042}, rep(0.5, 4), rep(0.2, 4)),
			want:      Adopt,
		},
		{
			name:      "from 4 runs significance is required: alpha 0.01 is not reached",
			baseline:  arm("b", []float64{0.050, 0.052, 0.049, 0.051}, rep(0.5, 4), rep(0.2, 4)),
			treatment: arm("t", []float64{0.040, 0.041, 0.039, 0.042}, rep(0.5, 4), rep(0.2, 4)),
			opts:      JudgeOptions{Alpha: 0.01},
			want:      Inconclusive, reasons: map[string]string{"expect:tpot_p95": "not-held"},
		},
		{
			name: "inconclusive: a falsifier's metric is missing", baseline: base,
			plan: func(p *Plan) {
				p.Falsification = append(p.Falsification, Falsifier{Kind: NoImprovement, Metric: PreemptionRate, Text: "preemptions did not fall"})
			},
			treatment: arm("t", []float64{0.040, 0.041, 0.039}, rep(0.5, 3), rep(0.2, 3)),
			want:      Inconclusive, reasons: map[string]string{"falsifier:preemptions did not fall": "unknown"},
		},
		{
			name: "a guard no run carries is skipped, not read as zero", baseline: base,
			plan:      func(p *Plan) { p.Guards = append(p.Guards, Guard{Metric: ErrorShare, Better: Lower, Tolerance: 0.1}) },
			treatment: arm("t", []float64{0.040, 0.041, 0.039}, rep(0.5, 3), rep(0.2, 3)),
			want:      Adopt, reasons: map[string]string{"guard:error_share": "skipped"},
		},
		{
			name: "refused: invalid plan", baseline: base,
			plan:      func(p *Plan) { p.Expect = nil },
			treatment: arm("t", []float64{0.040, 0.041, 0.039}, rep(0.5, 3), rep(0.2, 3)),
			want:      Refused, reasons: map[string]string{"plan:": "refused"},
		},
		{
			name: "refused: too few runs", baseline: base[:2],
			treatment: arm("t", []float64{0.040, 0.041, 0.039}, rep(0.5, 3), rep(0.2, 3)),
			want:      Refused, reasons: map[string]string{"runs:": "refused"},
		},
		{
			name: "refused: fewer runs than the plan asks", baseline: base,
			plan:      func(p *Plan) { p.Runs = 5 },
			treatment: arm("t", []float64{0.040, 0.041, 0.039}, rep(0.5, 3), rep(0.2, 3)),
			want:      Refused, reasons: map[string]string{"runs:": "refused"},
		},
		{
			name: "refused: the workloads differ", baseline: base,
			treatment: func() []RunFacts {
				rs := arm("t", []float64{0.040, 0.041, 0.039}, rep(0.5, 3), rep(0.2, 3))
				for _, r := range rs {
					r.Facts[PromptTokensP95] = Measured(4000).WithCount(400, math.NaN())
				}
				return rs
			}(),
			want: Refused, reasons: map[string]string{"workload:prompt_tokens_p95": "refused"},
		},
		{
			name: "refused: an expected quantile rests on too few requests", baseline: base,
			treatment: func() []RunFacts {
				rs := arm("t", []float64{0.040, 0.041, 0.039}, rep(0.5, 3), rep(0.2, 3))
				rs[0].Facts[TPOTP95] = Measured(0.04).WithCount(12, math.NaN())
				return rs
			}(),
			want: Refused, reasons: map[string]string{"runs:tpot_p95": "refused"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := judgePlan()
			if tt.plan != nil {
				tt.plan(&p)
			}
			j := Judge(p, tt.baseline, tt.treatment, tt.opts)
			assert.Equal(t, tt.want, j.Verdict, j.String())
			got := outcomes(j)
			for k, v := range tt.reasons {
				assert.Equal(t, v, got[k], "reason %s in\n%s", k, j)
			}
		})
	}
}

func TestJudgeComparison(t *testing.T) {
	b := arm("b", []float64{0.050, 0.052, 0.049}, rep(0.5, 3), rep(0.2, 3))
	tr := arm("t", []float64{0.040, 0.041, 0.039}, rep(0.5, 3), rep(0.2, 3))
	before := slices.Clone(b[0].Facts.Sorted())
	j := Judge(judgePlan(), b, tr, JudgeOptions{})
	require.NotEmpty(t, j.Metrics)
	c := j.Metrics[0]
	assert.Equal(t, TPOTP95, c.Metric)
	assert.Equal(t, "expect", c.Role)
	assert.Equal(t, []float64{0.050, 0.052, 0.049}, c.Baseline.Values, "run order is kept")
	assert.InDelta(t, 0.050, c.Baseline.Center, 1e-12)
	assert.InDelta(t, 0.049, c.Baseline.Min, 1e-12)
	assert.InDelta(t, 0.052, c.Baseline.Max, 1e-12)
	assert.InDelta(t, 0.04, c.Baseline.Spread(), 1e-9)
	assert.InDelta(t, -0.2, c.Change, 1e-9)
	assert.Equal(t, 3, c.Down)
	assert.True(t, c.Consistent)
	assert.InDelta(t, 0.1, c.P, 1e-9, "fully separated 3+3: the smallest two-sided p")
	assert.InDelta(t, 0.1, c.MinP, 1e-12)
	assert.Contains(t, c.Notes, "n=3 per arm cannot reach p < 0.05 (smallest attainable p = 0.100)")
	assert.Equal(t, before, b[0].Facts.Sorted(), "inputs are not modified")
	assert.Equal(t, 0.050, b[0].Facts[TPOTP95].Incident.Value)

	// Metrics the plan does not name are reported when some run has them.
	for _, c := range j.Metrics {
		assert.NotEqual(t, ErrorShare, c.Metric, "absent from every run and not in the plan")
	}
	// Workload: all same, with request count and duration.
	var names []string
	for _, w := range j.Workload {
		names = append(names, w.Name)
		assert.Equal(t, "same", w.Outcome)
	}
	assert.Equal(t, []string{"arrival_rate", "prompt_tokens_p50", "prompt_tokens_p95", "generation_tokens_p50", "generation_tokens_p95", "requests", "duration"}, names)
}

// minUTestP agrees with benchmath's table of the smallest U-test p-value
// (uTestMinP in x/perf/benchmath/anone.go).
func TestMinUTestP(t *testing.T) {
	want := []float64{1: 1, 2: 0.3333333333333333, 3: 0.1, 4: 0.02857142857142857, 5: 0.007936507936507936,
		6: 0.0021645021645021645, 7: 0.0005827505827505828, 8: 0.0001554001554001554, 9: 4.113533525298231e-05}
	for n := 1; n < len(want); n++ {
		assert.InDelta(t, want[n], minUTestP(n, n), 1e-15, "n=%d", n)
		// and the exact test attains it on fully separated samples
		if n >= 2 {
			xs, ys := make([]float64, n), make([]float64, n)
			for i := range n {
				xs[i], ys[i] = float64(i), float64(n+i)
			}
			assert.InDelta(t, want[n], uTest(xs, ys, 0.05), 1e-9, "n=%d", n)
		}
	}
	assert.InDelta(t, 2.0/10, minUTestP(2, 3), 1e-15)
	assert.InDelta(t, 2.0/10, minUTestP(3, 2), 1e-15)
}

func TestJudgeJSON(t *testing.T) {
	b := arm("b", []float64{0.050, 0.052, 0.049}, rep(0.5, 3), rep(0.2, 3))
	tr := arm("t", []float64{0.040, 0.041, 0.039}, rep(0.5, 3), rep(0.2, 3))
	tr[1].Facts[TPOTP95] = MissingFact(errors.New("no TPOT histogram"))
	j := Judge(judgePlan(), b, tr, JudgeOptions{})
	out, err := json.Marshal(j)
	require.NoError(t, err)
	var v struct {
		Verdict string `json:"verdict"`
		Plan    Plan   `json:"plan"`
		Metrics []struct {
			Metric    string `json:"metric"`
			Treatment struct {
				Values []*float64 `json:"values"`
				N      int        `json:"n"`
			} `json:"treatment"`
			P *float64 `json:"p"`
		} `json:"metrics"`
	}
	require.NoError(t, json.Unmarshal(out, &v))
	assert.Equal(t, "refused", v.Verdict, "two usable treatment runs of an expected metric")
	assert.Equal(t, judgePlan().Change, v.Plan.Change, "the plan round-trips")
	assert.Equal(t, 5*time.Minute, v.Plan.WarmUp)
	require.NotEmpty(t, v.Metrics)
	assert.Nil(t, v.Metrics[0].Treatment.Values[1], "a missing value is null, never zero")
	assert.Equal(t, 2, v.Metrics[0].Treatment.N)
	assert.NotContains(t, string(out), "NaN")
	assert.Contains(t, string(out), `"baseline_runs"`)
}

// TestJudgeGolden pins the text form (package report pins the laid-out
// text and Markdown of the same tables).
func TestJudgeGolden(t *testing.T) {
	b := arm("run-b", []float64{0.050, 0.052, 0.049}, []float64{0.50, 0.52, 0.49}, []float64{0.20, 0.21, 0.19})
	tr := arm("run-t", []float64{0.040, 0.041, 0.039}, []float64{0.50, 0.51, 0.50}, []float64{0.21, 0.20, 0.22})
	j := Judge(judgePlan(), b, tr, JudgeOptions{})
	for _, g := range []struct{ file, got string }{
		{"judge_adopt.golden", j.String()},
	} {
		golden.Check(t, filepath.Join("testdata", g.file), []byte(g.got))
	}
}

// FuzzJudge checks invariants on arbitrary values: a valid verdict, no
// panic, valid JSON (encoding/json fails on NaN), inputs unchanged, and adopt only when every
// expected metric separates.
func FuzzJudge(f *testing.F) {
	f.Add(0.05, 0.052, 0.049, 0.04, 0.041, 0.039, 0.5)
	f.Add(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
	f.Add(1.0, math.Inf(1), math.NaN(), -1.0, 2.0, 3.0, 1e300)
	f.Fuzz(func(t *testing.T, b1, b2, b3, t1, t2, t3, ttft float64) {
		b := arm("b", []float64{b1, b2, b3}, rep(0.5, 3), rep(0.2, 3))
		tr := arm("t", []float64{t1, t2, t3}, rep(ttft, 3), rep(0.2, 3))
		j := Judge(judgePlan(), b, tr, JudgeOptions{})
		switch j.Verdict {
		case Adopt, Reject, Inconclusive, Refused:
		default:
			t.Fatalf("verdict %q", j.Verdict)
		}
		if j.Verdict == Adopt {
			c := j.Metrics[0]
			if !(c.Treatment.Max <= 0.9*c.Baseline.Min) {
				t.Fatalf("adopt without separation: %v", j)
			}
		}
		out, err := json.Marshal(j)
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(out) {
			t.Fatalf("invalid JSON: %s", out)
		}
		if got := b[0].Facts[TPOTP95].Incident.Value; got != b1 && !(math.IsNaN(got) && math.IsNaN(b1)) {
			t.Fatal("input modified")
		}
		_ = j.String()
	})
}

func TestRelChange(t *testing.T) {
	inf := math.Inf(1)
	for _, tc := range []struct{ from, to, want float64 }{
		{2, 3, 0.5}, {4, 2, -0.5}, {0, 0, 0}, {0, 3, inf}, {0, -3, -inf}, {inf, inf, 0}, {1, inf, inf},
	} {
		assert.Equal(t, tc.want, RelChange(tc.from, tc.to), "%g -> %g", tc.from, tc.to)
	}
	assert.True(t, math.IsNaN(RelChange(math.NaN(), 1)))
	assert.True(t, math.IsNaN(RelChange(1, math.NaN())))
}

func TestOutsideSteady(t *testing.T) {
	assert.False(t, OutsideSteady(0.2, 1.2), "the band's edge is inside")
	assert.True(t, OutsideSteady(0.21, 1.2))
	assert.True(t, OutsideSteady(-0.2, 1.2), "1/1.2 = 0.833: a fall to 0.8 leaves the band")
	assert.False(t, OutsideSteady(-0.1, 1.2))
	assert.True(t, OutsideSteady(math.Inf(1), 1.2))
	assert.False(t, OutsideSteady(math.NaN(), 1.2))
}
