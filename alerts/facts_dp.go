package alerts

import "github.com/whyslow/whyslow/rules"

// The facts of data-parallel pods compare each engine with its pod's
// others beyond the binomial noise of a fair split (diagnose/facts_dp.go):
// not expressible as a rule, so engine-imbalance does not alert.
func init() {
	const why = " compares each data-parallel engine with its pod's others beyond the binomial noise of a fair split (a bound that depends on the pod's total), which the alerts do not express"
	for _, id := range []rules.FactID{rules.EngineLoadShareMax, rules.EngineInflightShareMax, rules.EngineInflightShareLast} {
		factTable[id] = factExpr{note: string(id) + why}
	}
}
