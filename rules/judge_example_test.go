package rules_test

import (
	"fmt"
	"time"

	"github.com/whyslow/whyslow/rules"
)

// Three repeats per arm of "lower max_num_seqs": TPOT p95 improves in
// every run, but the queue grows far more than TPOT improves, so the
// plan's falsification condition fires and the change is rejected. With
// three runs per arm no p-value can reach 0.05, and the judgement says
// so instead of pretending.
func ExampleJudge() {
	plan := rules.Plan{
		Hypothesis: string(rules.DecodePressure),
		Change:     rules.Change{Name: "max_num_seqs", From: "128", To: "96"},
		Expect:     []rules.Expectation{{Metric: rules.TPOTP95, Direction: rules.Lower, MinEffect: 0.1}},
		Falsification: []rules.Falsifier{
			{Kind: rules.WorseThanGain, Metric: rules.TPOTP95, Versus: []rules.FactID{rules.QueueTimeP95},
				Text: "queue got worse by more than TPOT improved"},
		},
		Runs: 3,
	}
	run := func(name string, tpot, queue float64) rules.RunFacts {
		q := func(v float64) rules.Fact { return rules.Measured(v).WithCount(2000, 0) }
		return rules.RunFacts{Name: name, Duration: 15 * time.Minute, Facts: rules.Facts{
			rules.TPOTP95: q(tpot), rules.QueueTimeP95: q(queue), rules.ArrivalRate: rules.Measured(12),
		}}
	}
	baseline := []rules.RunFacts{run("b1", 0.058, 19), run("b2", 0.061, 14), run("b3", 0.050, 24)}
	treatment := []rules.RunFacts{run("t1", 0.044, 58), run("t2", 0.044, 56), run("t3", 0.043, 95)}

	j := rules.Judge(plan, baseline, treatment, rules.DefaultJudgeOptions)
	fmt.Println("verdict:", j.Verdict)
	for _, r := range j.Reasons {
		fmt.Println(" ", r)
	}
	fmt.Println(j.Metrics[0].Notes[0])
	// Output:
	// verdict: reject
	//   held: tpot_p95 lower by >= 10%: held, -24.1%; every treatment run beat every baseline run by >= 10% (p=0.100 n=3+3, cannot reach p < 0.05)
	//   fired: queue got worse by more than TPOT improved: queue_time_p95 +205.3% got worse by more than tpot_p95 improved (-24.1%)
	// n=3 per arm cannot reach p < 0.05 (smallest attainable p = 0.100)
}
