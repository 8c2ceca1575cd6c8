package alerts

import (
	"fmt"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/rules"
)

// factExpr is how one fact of the decision map is computed in PromQL, or
// why it cannot be.
type factExpr struct {
	// expr returns the fleet value per group (the --by labels), reading
	// the raw series shifted by off ("" or " offset 1d").
	expr func(g *gen, off string) string
	// count returns the observations behind a quantile or mean (the
	// histogram's increase over the rate window); nil for other facts.
	count func(g *gen, off string) string
	// note says why the fact is not expressible in PromQL (expr nil).
	note string
	// signals are those expr reads that not every vLLM version exports:
	// when one has no metric name for the versions the rules are
	// generated for, the fact is not expressible there.
	signals []catalog.SignalID
	// record names the recording rule when it is not the fact id: a new
	// measure of the fact gets a new name, so that an existing record
	// keeps its meaning.
	record string
	// legacy is the earlier measure, still recorded under the fact id's
	// name, or legacyRecord when set (for readers of that record), when
	// the fact is needed; the alerts read record.
	legacy       func(g *gen, off string) string
	legacyRecord string
}

// factTableArrivalDispersion is the dispersion of arrivals per scrape
// interval, which ArrivalDispersion and ArrivalDispersionDetrended share.
var factTableArrivalDispersion = factExpr{
	// Arrivals per scrape interval: variance over mean.
	expr: func(g *gen, off string) string {
		per := fmt.Sprintf("(%s) * %g", g.arrivalsScrape(""), g.opt.ScrapeInterval.Seconds())
		return fmt.Sprintf("stdvar_over_time((%s)[%s:%s]%s) / avg_over_time((%s)[%s:%s]%s)", per, g.w, g.scrape, off, per, g.w, g.scrape, off)
	},
	record: "arrival_dispersion_scrape",
	legacy: func(g *gen, off string) string {
		// Arrivals per short interval at short-window steps.
		per := fmt.Sprintf("(%s) * %g", g.arrivals(g.short, ""), g.shortSeconds)
		return fmt.Sprintf("stdvar_over_time((%s)[%s:%s]%s) / avg_over_time((%s)[%s:%s]%s)", per, g.w, g.short, off, per, g.w, g.short, off)
	},
}

// factTable maps every fact the rules know to its PromQL, in one place.
// A fact without an entry is reported as not expressible (TestEveryFact
// keeps the table complete).
var factTable = map[rules.FactID]factExpr{
	rules.TTFTP50:          quantile(catalog.SignalTTFT, 0.5),
	rules.TTFTP95:          quantile(catalog.SignalTTFT, 0.95),
	rules.TTFTP99:          quantile(catalog.SignalTTFT, 0.99),
	rules.QueueTimeP50:     quantile(catalog.SignalQueueTime, 0.5),
	rules.QueueTimeP95:     quantile(catalog.SignalQueueTime, 0.95),
	rules.PrefillTimeP50:   quantile(catalog.SignalPrefillTime, 0.5),
	rules.PrefillTimeP95:   quantile(catalog.SignalPrefillTime, 0.95),
	rules.DecodeTimeP95:    quantile(catalog.SignalDecodeTime, 0.95),
	rules.TPOTP50:          quantile(catalog.SignalTPOT, 0.5),
	rules.TPOTP95:          quantile(catalog.SignalTPOT, 0.95),
	rules.ITLP95:           quantile(catalog.SignalITL, 0.95),
	rules.E2EP50:           quantile(catalog.SignalE2E, 0.5),
	rules.E2EP95:           quantile(catalog.SignalE2E, 0.95),
	rules.E2EP99:           quantile(catalog.SignalE2E, 0.99),
	rules.InferenceTimeP95: quantile(catalog.SignalInferenceTime, 0.95),
	rules.ClientTTFTP95: {note: "client_ttft has no default metric name (the caller names the gateway histogram); " +
		"write its alert by hand from ttft_p95's recording rule"},
	rules.PromptTokensP50:     quantile(catalog.SignalPromptTokens, 0.5),
	rules.PromptTokensP95:     quantile(catalog.SignalPromptTokens, 0.95),
	rules.PromptTokensP99:     quantile(catalog.SignalPromptTokens, 0.99),
	rules.GenerationTokensP50: quantile(catalog.SignalGenerationTokens, 0.5),
	rules.GenerationTokensP95: quantile(catalog.SignalGenerationTokens, 0.95),

	rules.QueueTimeMean:   mean(catalog.SignalQueueTime),
	rules.PrefillTimeMean: mean(catalog.SignalPrefillTime),
	rules.DecodeTimeMean:  mean(catalog.SignalDecodeTime),
	rules.TTFTMean:        mean(catalog.SignalTTFT),
	rules.E2EMean:         mean(catalog.SignalE2E),
	rules.TPOTMean: {
		expr: func(g *gen, off string) string {
			return fmt.Sprintf("%s / (%s - %s)",
				g.rateSum(catalog.SignalDecodeTime, "_sum", "", off),
				g.rateSum(catalog.SignalGenerationTokens, "_sum", "", off),
				g.rateSum(catalog.SignalGenerationTokens, "_count", "", off))
		},
		count: histCount(catalog.SignalDecodeTime),
	},

	rules.ArrivalRate: {expr: func(g *gen, off string) string { return g.arrivals("", off) }},
	rules.CompletionRate: {expr: func(g *gen, off string) string {
		return g.rateSum(catalog.SignalRequestSuccess, "", "", off)
	}},
	rules.ErrorShare:   share(catalog.SignalRequestSuccess, `finished_reason="error"`),
	rules.AbortShare:   share(catalog.SignalRequestSuccess, `finished_reason="abort"`),
	rules.HTTP5xxShare: share(catalog.SignalHTTPRequests, `status="5xx"`),
	rules.TimeoutShare: {note: "timeout_share comes from a gateway or client metric the caller names; no default name"},
	rules.HTTP429Share: share(catalog.SignalHTTPRequests, `status="429"`),
	// The facts of requests that do not complete need the
	// window's edges or its restarts; the notes say why.
	rules.AbandonShare:             {note: "abandon_share is estimated from counter gaps corrected for the requests in flight at both window edges (gauges sampled at the edges), which a rate over a sliding window cannot do"},
	rules.AbandonedPromptTokens:    {note: "abandoned_prompt_tokens is a counter gap corrected for the requests in flight at both window edges (gauges sampled at the edges), which a rate over a sliding window cannot do"},
	rules.AbandonedByTokens:        {note: "abandoned_by_tokens divides a counter gap corrected for the requests in flight at both window edges (gauges sampled at the edges), which a rate over a sliding window cannot do"},
	rules.AbandonedAfterFirstToken: {note: "abandoned_after_first_token is the TTFT count minus the E2E count corrected for the requests in flight at both window edges (gauges sampled at the edges), which a rate over a sliding window cannot do"},
	rules.AbandonedRequests:        {note: "abandoned_requests combines estimates corrected for the requests in flight at both window edges (gauges sampled at the edges), which a rate over a sliding window cannot do"},
	rules.QueueUnservedMin:         {note: "queue_unserved_min compares the backlog at the window's edges with its completions"},
	rules.GatewayUnserved:          {note: "gateway_unserved needs a gateway arrival counter the caller names; no default name"},
	rules.GatewayUnservedShare:     {note: "gateway_unserved_share needs a gateway arrival counter the caller names; no default name"},
	rules.Restarts:                 {note: "restarts are counted from process_start_time_seconds changes and counter resets between scrapes; PromQL's resets() sees only one counter at a time"},
	rules.RestartsReplicaMax:       {note: "restarts_replica_max counts restarts per replica from start-time changes between scrapes"},
	rules.RestartsPerHourMax:       {note: "restarts_per_hour_max counts restarts per replica from start-time changes between scrapes"},
	rules.RequestsLost:             {note: "requests_lost needs the requests in flight at the last scrape before each restart"},
	rules.LostShare:                {note: "lost_share needs the requests in flight at the last scrape before each restart"},
	rules.OOMKills:                 {note: "oom_kills reads kube-state-metrics' last terminated reason of the replica's own evidence, matched to the restart it explains"},
	rules.FBRiseRestarts:           {note: "fb_rise_restarts compares framebuffer use before each restart with the pod's own steady level"},
	rules.KVUsagePreempting:        {note: "kv_usage_preempting reads KV usage at the scrape intervals in which each replica's preemption counter rose, which a rate over a sliding window cannot single out"},
	rules.KVFullSharePreempting:    {note: "kv_full_share_preempting counts the scrapes at the KV ceiling of the replicas that preempted, which a rate over a sliding window cannot single out"},
	rules.TTFTP95WithoutHot:        {note: "ttft_p95_without_hot leaves out the replicas whose share of the arrivals is hot in the incident window, a choice made across windows"},
	rules.TTFTMeanWithoutHot:       {note: "ttft_mean_without_hot leaves out the replicas whose share of the arrivals is hot in the incident window, a choice made across windows"},
	rules.TPOTP95WithoutHot:        {note: "tpot_p95_without_hot leaves out the replicas whose share of the arrivals is hot in the incident window, a choice made across windows"},
	rules.TPOTMeanWithoutHot:       {note: "tpot_mean_without_hot leaves out the replicas whose share of the arrivals is hot in the incident window, a choice made across windows"},
	rules.HTTP5xxShareMax:          {note: "http_5xx_share_max is per replica with the replica named; the fleet http_5xx_share carries the alert"},
	rules.PromptTokenRate: {expr: func(g *gen, off string) string {
		return g.rateSum(catalog.SignalPromptTokensTotal, "", "", off)
	}},
	rules.GenerationTokenRate: {expr: func(g *gen, off string) string {
		return g.rateSum(catalog.SignalGenerationTokensTotal, "", "", off)
	}},
	rules.PreemptionRate: {expr: func(g *gen, off string) string {
		return g.rateSum(catalog.SignalPreemptions, "", "", off)
	}},
	rules.PreemptionShare: {expr: func(g *gen, off string) string {
		return fmt.Sprintf("%s / %s", g.rateSum(catalog.SignalPreemptions, "", "", off), g.rateSum(catalog.SignalRequestSuccess, "", "", off))
	}},
	rules.PrefixHitRatio: {expr: func(g *gen, off string) string {
		return fmt.Sprintf("%s / %s", g.rateSum(catalog.SignalPrefixCacheHits, "", "", off), g.rateSum(catalog.SignalPrefixCacheQueries, "", "", off))
	}},

	// The queue's shape at scrape resolution: a 10 s burst that drains
	// within a minute is invisible to gauges sampled once a minute.
	rules.WaitingMean: {
		// Each replica's mean over its raw samples, summed: the mean of
		// the fleet's waiting requests.
		expr: func(g *gen, off string) string {
			return fmt.Sprintf("sum by (%s) (%s)", g.by, g.rangeFn("avg_over_time", catalog.SignalWaiting, "", "", g.w, off))
		},
		record: "waiting_mean_raw",
		legacy: overTime("avg_over_time(", catalog.SignalWaiting, "sum").expr,
	},
	rules.WaitingMax: {
		expr:   scrapeStat("max_over_time(", catalog.SignalWaiting, "sum"),
		record: "waiting_max_scrape",
		legacy: overTime("max_over_time(", catalog.SignalWaiting, "sum").expr,
	},
	rules.WaitingMedian: {
		expr:   scrapeStat("quantile_over_time(0.5, ", catalog.SignalWaiting, "sum"),
		record: "waiting_median_scrape",
		legacy: overTime("quantile_over_time(0.5, ", catalog.SignalWaiting, "sum").expr,
	},
	rules.WaitingSlope: overTime("deriv(", catalog.SignalWaiting, "sum"),
	rules.WaitingBurst: {
		// The peak arrival rate of one scrape interval over the rate
		// window, over the window's mean (as whyslow diagnose measures it).
		expr: func(g *gen, off string) string {
			return fmt.Sprintf("max_over_time((%s)[%s:%s]%s) / %s", g.arrivalsScrape(""), g.w, g.scrape, off, g.arrivals("", off))
		},
		record: "waiting_burst_scrape",
		legacy: func(g *gen, off string) string {
			// The peak short-window arrival rate at one-minute steps.
			return fmt.Sprintf("max_over_time((%s)[%s:%s]%s) / %s", g.arrivals(g.short, ""), g.w, g.step, off, g.arrivals("", off))
		},
	},
	rules.WaitingBusyShare: {
		expr: func(g *gen, off string) string {
			return fmt.Sprintf("avg_over_time((%s > bool 0)[%s:%s]%s)", g.gaugeAgg("sum", catalog.SignalWaiting, ""), g.w, g.scrape, off)
		},
		record: "waiting_busy_share_scrape",
		legacy: func(g *gen, off string) string {
			return fmt.Sprintf("avg_over_time((%s > bool 0)[%s:%s]%s)", g.gaugeAgg("sum", catalog.SignalWaiting, ""), g.w, g.step, off)
		},
	},
	rules.ArrivalDispersion: factTableArrivalDispersion,
	rules.ArrivalDispersionDetrended: {
		// Arrivals per scrape interval, variance over mean, within the
		// rate window: diagnose measures around a running median centred
		// on each interval, which look-back subqueries cannot; over a
		// window of a few minutes a ramp's trend adds little, so the
		// window's own mean stands for it. The record and its 1-minute
		// predecessor keep the names and meanings ArrivalDispersion gave
		// them.
		expr:         factTableArrivalDispersion.expr,
		record:       "arrival_dispersion_scrape",
		legacy:       factTableArrivalDispersion.legacy,
		legacyRecord: "arrival_dispersion",
	},
	rules.BacklogSpike: {
		// The peak of waiting + running at scrape resolution over its
		// median in the rate window (diagnose: over a running median
		// centred on each interval); no median of zero (an idle fleet).
		expr: func(g *gen, off string) string {
			backlog := fmt.Sprintf("%s + %s", g.gaugeAgg("sum", catalog.SignalWaiting, ""), g.gaugeAgg("sum", catalog.SignalRunning, ""))
			return fmt.Sprintf("max_over_time((%s)[%s:%s]%s) / (quantile_over_time(0.5, (%s)[%s:%s]%s) > 0)", backlog, g.w, g.scrape, off, backlog, g.w, g.scrape, off)
		},
		record: "backlog_spike_scrape",
	},
	rules.OccupancySeen: {
		// waiting + running at the scrapes over the requests in flight
		// that the e2e latency's _sum implies (Little's law).
		expr: func(g *gen, off string) string {
			backlog := fmt.Sprintf("%s + %s", g.gaugeAgg("sum", catalog.SignalWaiting, ""), g.gaugeAgg("sum", catalog.SignalRunning, ""))
			return fmt.Sprintf("avg_over_time((%s)[%s:%s]%s) / (%s > 0)", backlog, g.w, g.scrape, off, g.rateSum(catalog.SignalE2E, "_sum", "", off))
		},
	},
	rules.WaitingDrainedShare: {
		// How far the queue fell from its peak in the window by the
		// window's end (diagnose: the share of waiting episodes that
		// drained within the window): near 1 after bursts that drain,
		// near 0 for a queue that builds.
		expr: func(g *gen, off string) string {
			w := g.gaugeAgg("sum", catalog.SignalWaiting, "")
			return fmt.Sprintf("1 - (%s)%s / (max_over_time((%s)[%s:%s]%s) > 0)", w, off, w, g.w, g.scrape, off)
		},
		record: "waiting_drained_share_scrape",
	},
	rules.RunningMean: overTime("avg_over_time(", catalog.SignalRunning, "sum"),
	rules.RunningMax:  overTime("max_over_time(", catalog.SignalRunning, "sum"),
	rules.MaxNumSeqs: {note: "vLLM exposes no max_num_seqs metric (supply it from a config exporter); " +
		"the near-capacity checks stay manual"},
	rules.KVUsageMean: overTime("avg_over_time(", catalog.SignalKVUsage, "avg"),
	rules.KVUsageMax:  overTime("max_over_time(", catalog.SignalKVUsage, "max"),
	rules.GPUUtilMean: {expr: func(g *gen, off string) string {
		return fmt.Sprintf("avg_over_time((%s)[%s:%s]%s)", g.gpu(), g.w, g.step, off)
	}},
	rules.GPUUtilWaiting: {expr: func(g *gen, off string) string {
		// The GPU of the replicas at the instants requests waited on them.
		perPod := fmt.Sprintf("avg by (%s) (%s) and on (%s) (%s > 0)",
			g.byReplica, g.gpuPerReplica(), g.byReplica, g.gaugeAggBy("sum", catalog.SignalWaiting, g.byReplica))
		return fmt.Sprintf("avg_over_time((avg by (%s) (%s))[%s:%s]%s)", g.by, perPod, g.w, g.step, off)
	}},
	rules.BacklogEnd: {expr: func(g *gen, off string) string {
		return fmt.Sprintf("%s + %s", g.gaugeAgg("sum", catalog.SignalWaiting, off), g.gaugeAgg("sum", catalog.SignalRunning, off))
	}},

	rules.ReplicaShareMax: {expr: func(g *gen, off string) string {
		per := g.rateSumBy(catalog.SignalRequestSuccess, "", "", off, g.byReplica)
		return fmt.Sprintf("max by (%s) (%s) / on (%s) (sum by (%s) (%s) / count by (%s) (%s))",
			g.by, per, g.by, g.by, per, g.by, per)
	}},
	rules.ReplicaLoadShareMax: {expr: func(g *gen, off string) string {
		return fmt.Sprintf("max by (%s) (%s)", g.by, g.loadShare(off))
	}},
	rules.ReplicaTTFTRatio: {expr: func(g *gen, off string) string {
		return fmt.Sprintf("max by (%s) (%s) / on (%s) %s", g.by, g.quantileBy(catalog.SignalTTFT, 0.95, off, g.byReplica), g.by,
			g.quantileBy(catalog.SignalTTFT, 0.95, off, g.by))
	}},
	rules.ReplicaTTFTMeanMedian: {expr: func(g *gen, off string) string {
		per := fmt.Sprintf("(%s / %s)", g.rateSumBy(catalog.SignalTTFT, "_sum", "", off, g.byReplica), g.rateSumBy(catalog.SignalTTFT, "_count", "", off, g.byReplica))
		// The slowest replica left out, as the fact leaves it out.
		return fmt.Sprintf("quantile by (%s) (0.5, %s unless on (%s) topk by (%s) (1, %s))", g.by, per, g.byReplica, g.by, per)
	}},
	rules.CorrRunningTPOT: {note: "PromQL has no correlation over time of two series; the decode-pressure alert reads running_mean instead"},
}

func quantile(id catalog.SignalID, q float64) factExpr {
	return factExpr{
		expr:  func(g *gen, off string) string { return g.quantileBy(id, q, off, g.by) },
		count: histCount(id),
	}
}

func mean(id catalog.SignalID) factExpr {
	return factExpr{
		expr: func(g *gen, off string) string {
			return fmt.Sprintf("%s / %s", g.rateSum(id, "_sum", "", off), g.rateSum(id, "_count", "", off))
		},
		count: histCount(id),
	}
}

func histCount(id catalog.SignalID) func(g *gen, off string) string {
	return func(g *gen, off string) string { return g.increaseSum(id, "_count", off) }
}

// share is the share of a counter's increase with the matcher, 0 when the
// counter exists but no series matches.
func share(id catalog.SignalID, matcher string) factExpr {
	return factExpr{expr: func(g *gen, off string) string {
		all := g.rateSum(id, "", "", off)
		return fmt.Sprintf("(%s or 0 * %s) / %s", g.rateSum(id, "", matcher, off), all, all)
	}}
}

// scrapeStat is a statistic (fn is the call up to its series argument)
// over the rate window of a gauge aggregated over the fleet, at every
// scrape interval.
func scrapeStat(fn string, id catalog.SignalID, agg string) func(g *gen, off string) string {
	return func(g *gen, off string) string {
		return fmt.Sprintf("%s(%s)[%s:%s]%s)", fn, g.gaugeAgg(agg, id, ""), g.w, g.scrape, off)
	}
}

// overTime is a statistic (fn is the call up to its series argument) over the rate window of a gauge aggregated over
// the fleet at each instant.
func overTime(fn string, id catalog.SignalID, agg string) factExpr {
	return factExpr{expr: func(g *gen, off string) string {
		return fmt.Sprintf("%s(%s)[%s:%s]%s)", fn, g.gaugeAgg(agg, id, ""), g.w, g.step, off)
	}}
}
