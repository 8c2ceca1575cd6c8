package rules_test

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/whyslow/whyslow/rules"
)

// sectionTen returns the facts of the article's section 10: prompt p50
// flat, p95 up; queue and TPOT stable; prefill and TTFT up together; no
// prefix-cache counters in the evidence.
func sectionTen() rules.Facts {
	f := func(incident, baseline float64) rules.Fact {
		return rules.Measured(incident).WithBaseline(baseline).WithCount(4000, 4000)
	}
	return rules.Facts{
		rules.PromptTokensP50: f(870, 850),
		rules.PromptTokensP95: f(6100, 2400),
		rules.QueueTimeP95:    f(0.13, 0.12),
		rules.PrefillTimeP95:  f(1.9, 0.64),
		rules.TTFTP95:         f(2.2, 0.9),
		rules.TPOTP95:         f(0.043, 0.042),
		rules.PrefixHitRatio:  rules.MissingFact(rules.NoSource("no prefix-cache counters in the evidence")),
	}
}

// The article's section 10 (sectionTen): long prompts make prefill, and
// so TTFT, slow.
func ExampleEvaluate() {
	r := rules.Evaluate(sectionTen(), rules.SLO{}, rules.DefaultThresholds)
	fmt.Println("verdict:", r.Verdict)
	top := r.Findings[0]
	for _, e := range top.Evidence {
		fmt.Println("  ", e.Text)
	}
	for _, c := range top.NextChecks[:3] {
		fmt.Printf("  [%s] %s\n", c.Outcome, c.Text)
	}
	for _, fd := range r.Findings {
		if fd.ID == rules.PrefixCacheLoss {
			fmt.Println(fd.ID, fd.Status)
			fmt.Println("  ", fd.CounterEvidence[0].Text)
		}
	}
	// Output:
	// verdict: prefill-long-prompts
	//    ttft_p95 2.2s vs baseline 900ms: 2.44x, severe; noise unknown (up: >= 1.2x)
	//    prompt_tokens_p95 6,100 tokens vs baseline 2,400 tokens: 2.54x, severe; noise unknown (rises: >= 1.2x)
	//    prefill_time_p95 1.9s vs baseline 640ms: 2.97x, severe; noise unknown (rises: >= 1.2x)
	//   [holds] Is prompt tokens p50 unchanged while p95/p99 grew (a group of long requests)?
	//   [holds] Does the prefill-time increase explain the TTFT increase?
	//   [holds] Is TPOT stable (decode unaffected)?
	// prefix-cache-loss contradicted
	//    prompt_tokens_p95 6,100 tokens vs baseline 2,400 tokens: 2.54x, severe; noise unknown (changed: outside 1.2x)
}

// High KV usage with no preemption and every SLO met is not an incident.
func ExampleEvaluate_highKVHealthy() {
	facts := rules.Facts{
		rules.TTFTP95:        rules.Measured(0.8),
		rules.TTFTP99:        rules.Measured(1.2),
		rules.E2EP99:         rules.Measured(18),
		rules.TPOTP95:        rules.Measured(0.04),
		rules.ErrorShare:     rules.Measured(0),
		rules.KVUsageMax:     rules.Measured(0.92),
		rules.PreemptionRate: rules.Measured(0),
	}
	slo := rules.SLO{TTFTP95: 2, TTFTP99: 4, E2EP99: 30, TPOTP95: 0.1}
	r := rules.Evaluate(facts, slo, rules.DefaultThresholds)
	fmt.Println(r.Verdict)
	for _, n := range r.Notes {
		fmt.Println(n.ID)
	}
	// Output:
	// no-incident
	// kv-high-healthy
}

func ExampleSymptoms() {
	facts := rules.Facts{
		rules.TTFTP95: rules.Measured(2.5),
		rules.TPOTP95: rules.Measured(0.09).WithBaseline(0.04),
	}
	for _, s := range rules.Symptoms(facts, rules.SLO{TTFTP95: 2}, rules.DefaultThresholds) {
		fmt.Print(s)
	}
	// Output:
	// symptom ttft: PRESENT (mild)
	//   ttft_p95 2.5s > SLO 2s
	// symptom tpot: PRESENT (severe)
	//   tpot_p95 90ms vs baseline 40ms: 2.25x, severe; noise unknown (up: >= 1.2x)
	//   missing itl_p95: not computed
	// symptom tail: not evaluable
	//   missing ttft_p99: not computed
	//   missing e2e_p99: not computed
	// symptom reliability: not evaluable
	//   missing error_share: not computed
}

// A plan round-trips through the JSON file the CLI reads.
func ExamplePlan() {
	p := rules.Plan{
		Hypothesis: "decode-pressure",
		Change:     rules.Change{Name: "max_num_seqs", From: "256", To: "128"},
		Expect:     []rules.Expectation{{Metric: rules.TPOTP95, Direction: rules.Lower, MinEffect: 0.1}},
		Guards:     []rules.Guard{{Metric: rules.TTFTP95, Better: rules.Lower, Tolerance: 0.1}},
		Falsification: []rules.Falsifier{
			{Kind: rules.NoImprovement, Metric: rules.TPOTP95, Text: "TPOT did not improve"},
		},
		Runs: 3,
	}
	b, _ := json.Marshal(p)
	fmt.Println(string(b))
	fmt.Println(p.Validate())
	fmt.Print(p)
	// Output:
	// {"hypothesis":"decode-pressure","change":{"name":"max_num_seqs","from":"256","to":"128"},"expect":[{"metric":"tpot_p95","direction":"lower","min_effect":0.1}],"guards":[{"metric":"ttft_p95","better":"lower","tolerance":0.1}],"falsification":[{"kind":"no-improvement","metric":"tpot_p95","text":"TPOT did not improve"}],"runs":3,"warm_up_seconds":0}
	// <nil>
	// experiment for decode-pressure: change max_num_seqs from 256 to 128; 3 runs per arm after 0s warm-up
	//   expect: tpot_p95 lower by >= 10%
	//   guard: ttft_p95 no worse than 10% (lower is better)
	//   reject if: TPOT did not improve
}

// Evidence carries its data: the fact with its two measurements, and the
// condition of the map it was put to, with the limit that decided it. A
// missing fact's reason is an error whose kind errors.Is tells.
func ExampleEvidence() {
	facts := sectionTen()
	r := rules.Evaluate(facts, rules.SLO{}, rules.DefaultThresholds)
	for _, e := range r.Findings[0].Evidence {
		if e.Cond == nil {
			continue // a symptom's signal: no condition of the map
		}
		lim, name := e.Cond.Limit(rules.DefaultThresholds)
		fmt.Printf("%s: %g -> %g (n=%g); %q held=%t (Thresholds.%s = %g)\n",
			e.ID, e.Fact.Baseline.Value, e.Fact.Incident.Value, e.Fact.Incident.Count, e.Cond, e.Holds, name, lim)
	}
	hit := facts[rules.PrefixHitRatio]
	fmt.Println(rules.PrefixHitRatio, "missing, no source:", errors.Is(hit.Missing, rules.ErrNoSource))
	// Output:
	// prompt_tokens_p95: 2400 -> 6100 (n=4000); "prompt_tokens_p95 >= 1.2x baseline, beyond noise" held=true (Thresholds.Rise = 1.2)
	// prefill_time_p95: 0.64 -> 1.9 (n=4000); "prefill_time_p95 >= 1.2x baseline, beyond noise" held=true (Thresholds.Rise = 1.2)
	// prefix_hit_ratio missing, no source: true
}
