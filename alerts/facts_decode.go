package alerts

import (
	"fmt"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/rules"
)

// PromQL of the decode-side facts (rules/facts_decode.go).
func init() {
	ratio := func(num, den catalog.SignalID, numMatcher string) factExpr {
		return factExpr{expr: func(g *gen, off string) string {
			return fmt.Sprintf("%s / %s", g.rateSum(num, "", numMatcher, off), g.rateSum(den, "", "", off))
		}}
	}
	facts := map[rules.FactID]factExpr{
		rules.RepeatPreemptedShare: {expr: func(g *gen, off string) string {
			id := catalog.SignalRequestPreemptions
			n := g.rateSum(id, "_count", "", off)
			return fmt.Sprintf("(%s - %s) / %s", n, g.rateSum(id, "_bucket", `le="1"`, off), n)
		}},
		rules.RepeatPreemptionShare:     {note: "repeat_preemption_share weighs each bucket of vllm:request_num_preemptions by its preemption counts, which PromQL cannot do per bucket"},
		rules.PreemptedShare:            {note: "preempted_share weighs each bucket of vllm:request_num_preemptions by its preemption counts, which PromQL cannot do per bucket"},
		rules.PreemptedShareLower:       {note: "preempted_share_lower weighs each bucket of vllm:request_num_preemptions by its preemption counts, which PromQL cannot do per bucket"},
		rules.PreemptionsPerRequestMean: mean(catalog.SignalRequestPreemptions),
		rules.SpecAcceptanceRate:        ratio(catalog.SignalSpecAcceptedTokens, catalog.SignalSpecDraftTokens, ""),
		rules.SpecAcceptanceLength: {expr: func(g *gen, off string) string {
			return fmt.Sprintf("1 + %s / %s", g.rateSum(catalog.SignalSpecAcceptedTokens, "", "", off), g.rateSum(catalog.SignalSpecDrafts, "", "", off))
		}},
		rules.SpecPos0Acceptance: ratio(catalog.SignalSpecAcceptedTokensByPos, catalog.SignalSpecDrafts, `position="0"`),
		rules.KVTransferTimeMean: mean(catalog.SignalKVTransferTime),
		rules.KVTransferFailureShare: {expr: func(g *gen, off string) string {
			f := g.rateSum(catalog.SignalKVTransferFailures, "", "", off)
			return fmt.Sprintf("%s / (%s + %s)", f, f, g.rateSum(catalog.SignalKVTransferTime, "_count", "", off))
		}},
		rules.PDDecodeReplicas:   {note: "pd_decode_replicas tells instance roles from labels and the shape of their metrics, not from one series"},
		rules.PDPrefillReplicas:  {note: "pd_prefill_replicas tells instance roles from labels and the shape of their metrics, not from one series"},
		rules.TTFTMeanDecodeRole: {note: "ttft_mean_decode_role needs the decode instances told apart first (see pd_decode_replicas)"},
	}
	for id, fe := range facts {
		factTable[id] = fe
	}
}
