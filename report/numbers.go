package report

import (
	"math"
	"strings"

	"github.com/whyslow/whyslow/internal/textfmt"
	"github.com/whyslow/whyslow/rules"
)

// Counts say what they count; the numbers themselves are written by
// internal/textfmt (Number for tables, Prose for sentences).

// countNoun says what the count behind a fact counts: "requests" for
// latencies and shares of finished requests, "token gaps" for the
// inter-token latency, "samples" for gauges (the samples of the series
// summarised: a fleet gauge's are the instants of its fleet sum, not the
// window's scrapes), "intervals" for statistics over the timeline's
// intervals, "replicas", "preemptions"; "" when the fact does not say.
func countNoun(id rules.FactID) string {
	switch {
	case strings.HasPrefix(string(id), "itl_"):
		return "token gaps"
	}
	switch id {
	case rules.PrefixHitRatio:
		return "tokens queried"
	case rules.WaitingBurst, rules.CorrRunningTPOT:
		return "intervals"
	case rules.Restarts, rules.RestartsReplicaMax, rules.RestartsPerHourMax:
		return "replicas"
	case rules.PreemptionRate:
		return "preemptions"
	case rules.ReplicaLoadShareMax, rules.ReplicaShareMax, rules.ArrivalRate:
		return "requests"
	}
	info, ok := rules.Info(id)
	if !ok {
		return ""
	}
	switch info.Kind {
	case rules.KindQuantile, rules.KindMean:
		return "requests"
	case rules.KindGauge:
		return "samples"
	case rules.KindRate:
		if info.Unit == "ratio" || info.Unit == "s" {
			return "requests"
		}
	}
	return ""
}

// fmtCountOf formats a count with what it counts: "n=55,477 requests",
// "n=121 samples", or "n=?" when unknown.
func fmtCountOf(c rules.Number, noun string) string {
	if !finiteFloat(c) {
		return "n=?"
	}
	v := float64(c)
	s := "n=" + textfmt.Integer(v)
	if v != math.Round(v) {
		s = "n=" + textfmt.Number(math.Round(v*100)/100)
	}
	if noun != "" {
		s += " " + noun
	}
	return s
}
