package alerts

import (
	"fmt"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/rules"
)

// The engine progress and admission facts (rules/facts_engine.go): the
// share of requests rejected at admission is a ratio of counter rates;
// the others are judged from runs of scrapes per replica or from
// signals the generator does not read, and each says why.
func init() {
	factTable[rules.AdmissionRejectionShare] = factExpr{expr: func(g *gen, off string) string {
		// rejected / (rejected + finished), as the diagnosis measures it;
		// absent where vLLM does not export the counter (no limit set, or
		// a version before it), never read as zero.
		rej := g.rateSum(catalog.SignalAdmissionRejections, "", "", off)
		return fmt.Sprintf("%s / (%s + %s)", rej, rej, g.rateSum(catalog.SignalRequestSuccess, "", "", off))
	}, signals: []catalog.SignalID{catalog.SignalAdmissionRejections}}
	run := "compares each replica's consecutive scrapes (counters flat, gauges unchanged, arrivals) over a run of scrapes, which one range query over the fleet does not express"
	for id, why := range map[rules.FactID]string{
		rules.StalledReplicas:     "stalled_replicas " + run,
		rules.FrozenGaugeReplicas: "frozen_gauge_replicas " + run,
		rules.FrozenQuietReplicas: "frozen_quiet_replicas " + run,
		rules.FrozenGaugeShare:    "frozen_gauge_share weighs the frozen replicas found by runs of scrapes",
		rules.StallSuspected:      "stall_suspected reads one scrape per replica with its counters; an alert on waiting > 0 and running == 0 for 10m is its PromQL counterpart",
		rules.DeferredShare:       "deferred_share needs vllm:num_requests_waiting_by_reason, which the alert generator does not read yet",
		rules.OutageLoadFactor:    "outage_load_factor counts the replicas present at each scrape time from their scrape gaps and process restarts, which the alert generator does not track",
		rules.DeferralQueueShare:  "deferral_queue_share needs vllm:num_requests_waiting_by_reason, which the alert generator does not read yet",
	} {
		factTable[id] = factExpr{note: why}
	}
}
