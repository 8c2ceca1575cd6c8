// Package rules holds the decision map of whyslow as data, with pure
// evaluation: facts in, findings out.
//
// The map follows the article "vLLM은 왜 느려졌을까?" (why did vLLM get
// slow?): symptoms -> metric combination -> bottleneck hypothesis ->
// controlled experiment -> adopt or reject. It is a map of what to check
// next, not a verdict table: no single metric names a root cause, and
// high KV-cache usage or low GPU utilisation is not an incident by
// itself.
//
// The input is a set of Facts, named by FactID (documented snake_case
// ids such as "ttft_p95" or "waiting_slope") and computed by package
// diagnose from preserved metrics. Each fact carries its incident and
// baseline values, bucket bounds, sample counts, windows and source
// metric, or the reason it is missing; a missing fact is "cannot
// evaluate", never zero.
//
// Symptoms judges the four user-visible symptoms (ttft, tpot, tail,
// reliability) against SLO targets or the baseline. Evaluate runs every
// rule of Map and returns ranked findings, each supported, contradicted
// (with named counter-evidence) or not-evaluable (with the missing
// facts), with next checks, mitigations apart from root-cause steps and
// prevention, and a proposed single-variable experiment (Plan). The
// verdict is the top supported hypothesis, "no-incident" when every
// symptom was evaluated and none shows, or "undetermined".
//
// Judge closes the loop: given a Plan and the facts of N >= 3 runs per
// arm (baseline and treatment, same workload, one variable changed), it
// decides adopt, reject, inconclusive or refused, the way benchstat
// compares benchmarks: per metric the centre and spread of each arm, the
// change, whether its direction held in every run, and a Mann-Whitney U
// p-value only where the run counts can reach significance.
//
// The package does no I/O, reads no clock and keeps no state; results
// are plain values with String methods. Of whyslow it may import only histogram:
// never snapshot, catalog, diagnose or report (which renders its findings).
package rules
