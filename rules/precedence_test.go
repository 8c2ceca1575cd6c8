package rules_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/rules"
)

// longerAnswersKV is the fleet of issue 31: answers got longer on a small
// KV pool; every replica that preempted sat at its ceiling while the fleet
// mean stayed at 0.70; the preemptions delay first tokens and build a
// queue.
func longerAnswersKV() rules.Facts {
	return with(decodePressure(),
		rules.GenerationTokensP50, fact(480, 166),
		rules.GenerationTokensP95, fact(1900, 700),
		rules.KVUsageMean, fact(0.70, 0.23),
		rules.KVUsageMax, fact(1, 0.53),
		rules.KVUsagePreempting, fact(0.98, 0.98),
		rules.PreemptionRate, fact(2.37, 0),
		rules.PreemptionShare, fact(0.059, 0),
		rules.TTFTP95, fact(4.95, 0.239),
		rules.TTFTMean, fact(1.4, 0.07),
		rules.QueueTimeP95, fact(4.9, 0.285),
		rules.QueueTimeMean, fact(1.3, 0.006),
		rules.WaitingMean, fact(41, 0.4),
		rules.E2EP99, fact(60, 20),
	)
}

func hasEvidence(f rules.Finding, substr string) bool {
	for _, e := range f.Evidence {
		if strings.Contains(e.Text, substr) {
			return true
		}
	}
	return false
}

func checkOutcome(t *testing.T, f rules.Finding, prefix string) string {
	t.Helper()
	for _, c := range f.NextChecks {
		if strings.HasPrefix(c.Text, prefix) {
			return c.Outcome
		}
	}
	t.Fatalf("%s has no check %q", f.ID, prefix)
	return ""
}

// Article cases C and D: decode pressure needs a first token on time;
// material preemptions with a late first token or a growing queue are
// kv-preemption's, longer answers its driver.
func TestKVPreemptionOverDecodePressure(t *testing.T) {
	ttftNormal := func(fs rules.Facts) rules.Facts {
		return with(fs,
			rules.TTFTP95, fact(0.9, 0.9), rules.TTFTMean, fact(0.35, 0.35), rules.TTFTP50, fact(0.3, 0.3), rules.TTFTP99, fact(1.4, 1.4),
			rules.QueueTimeP95, fact(0.12, 0.12), rules.QueueTimeMean, fact(0.03, 0.03), rules.WaitingMean, fact(0.4, 0.4))
	}
	tests := []struct {
		name    string
		facts   rules.Facts
		verdict rules.Verdict
		decode  rules.Status
		driver  string // in kv-preemption's evidence when supported
	}{
		{"longer answers, 5.9% preempted, TTFT 21x (issue 31)", longerAnswersKV(), rules.Verdict(rules.KVPreemption), rules.Contradicted, "driver: longer answers"},
		{"longer answers, 3% preempted, TTFT up by less than TPOT, queue up", with(longerAnswersKV(),
			rules.PreemptionShare, fact(0.03, 0), rules.TTFTP95, fact(1.5, 0.9), rules.TTFTMean, fact(0.5, 0.35)),
			rules.Verdict(rules.KVPreemption), rules.Supported, "driver: longer answers"},
		{"longer answers, 0.5% preempted: a side effect of decode load", with(longerAnswersKV(),
			rules.PreemptionShare, fact(0.005, 0), rules.TTFTP95, fact(1.1, 0.9), rules.TTFTMean, fact(0.5, 0.35)),
			rules.Verdict(rules.DecodePressure), rules.Supported, ""},
		{"longer answers, 3% preempted, TTFT normal, no queue (case C)", ttftNormal(with(longerAnswersKV(), rules.PreemptionShare, fact(0.03, 0))),
			rules.Verdict(rules.DecodePressure), rules.Supported, ""},
		{"longer answers, 8% preempted (storm), TTFT normal", ttftNormal(with(longerAnswersKV(), rules.PreemptionShare, fact(0.08, 0))),
			rules.Verdict(rules.KVPreemption), rules.Supported, "driver: longer answers"},
		{"longer prompts on the same pool", with(longerAnswersKV(),
			rules.GenerationTokensP50, fact(166, 166), rules.GenerationTokensP95, fact(700, 700), rules.PromptTokensP95, fact(6000, 2400)),
			rules.Verdict(rules.KVPreemption), rules.Contradicted, "driver: longer prompts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rules.Evaluate(tt.facts, rules.SLO{}, rules.DefaultThresholds)
			assert.Equal(t, tt.verdict, r.Verdict)
			assert.Equal(t, tt.decode, finding(t, r, rules.DecodePressure).Status)
			kv := finding(t, r, rules.KVPreemption)
			require.Equal(t, rules.Supported, kv.Status)
			if tt.driver != "" {
				assert.True(t, hasEvidence(kv, tt.driver), "kv-preemption names its driver %q: %v", tt.driver, kv.Evidence)
			}
		})
	}
}

// "KV high" is judged on the replicas that preempted: a fleet mean of 0.70
// while each preempting replica sat at 98% is high.
func TestKVHighWherePreempted(t *testing.T) {
	const check = "Is KV usage high where requests were preempted"
	r := rules.Evaluate(longerAnswersKV(), rules.SLO{}, rules.DefaultThresholds)
	assert.Equal(t, rules.CheckHolds, checkOutcome(t, finding(t, r, rules.KVPreemption), check))
	r = rules.Evaluate(with(longerAnswersKV(), rules.KVUsagePreempting, fact(0.75, 0.75)), rules.SLO{}, rules.DefaultThresholds)
	assert.Equal(t, rules.CheckFails, checkOutcome(t, finding(t, r, rules.KVPreemption), check))
	// Without the new fact the old measure (the fleet mean) still decides.
	r = rules.Evaluate(without(with(longerAnswersKV(), rules.KVUsageMean, fact(0.93, 0.6)), rules.KVUsagePreempting), rules.SLO{}, rules.DefaultThresholds)
	assert.Equal(t, rules.CheckHolds, checkOutcome(t, finding(t, r, rules.KVPreemption), check))
}

// Case C: TTFT normal, or grown by no more than the time per token (every
// step is longer); a TTFT that grew far faster waited for something else.
func TestDecodePressureNeedsTTFTNormal(t *testing.T) {
	tests := []struct {
		name       string
		ttft, mean rules.Fact
		want       rules.Status
	}{
		{"TTFT unchanged", fact(0.9, 0.9), fact(0.35, 0.35), rules.Supported},
		{"TTFT up 1.5x while TPOT doubled", fact(1.35, 0.9), fact(0.5, 0.35), rules.Supported},
		{"TTFT up 20x while TPOT doubled", fact(18, 0.9), fact(6, 0.35), rules.Contradicted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rules.Evaluate(with(decodePressure(), rules.TTFTP95, tt.ttft, rules.TTFTMean, tt.mean), rules.SLO{}, rules.DefaultThresholds)
			assert.Equal(t, tt.want, finding(t, r, rules.DecodePressure).Status)
		})
	}
}

// inFirstBucket is a quantile fact whose incident and baseline values both
// sit in the histogram's lowest bucket [0, upper].
func inFirstBucket(v, base, upper float64) rules.Fact {
	f := fact(v, base).WithBounds(0, upper)
	f.Baseline.Lower, f.Baseline.Upper = 0, upper
	return f
}

// A quantile inside the lowest bucket in both windows is interpolation:
// comparisons of it with its baseline use the histogram's mean.
func TestUnresolvedQuantileUsesMean(t *testing.T) {
	const check = "Does the prefill-time increase explain the TTFT increase?"
	tests := []struct {
		name       string
		prefillP95 rules.Fact
		prefillAvg rules.Fact
		want       string
		unresolved bool
	}{
		// Issue 31: p95 0.13 -> 0.20 s inside [0, 0.3 s]; the mean carries
		// most of the TTFT mean's rise.
		{"both in the first bucket, the mean explains", inFirstBucket(0.20, 0.13, 0.3), fact(0.09, 0.05), rules.CheckHolds, true},
		{"both in the first bucket, the mean does not move", inFirstBucket(0.29, 0.13, 0.3), fact(0.052, 0.05), rules.CheckFails, true},
		{"resolved quantiles are compared as they are", fact(0.45, 0.4).WithBounds(0.3, 0.5), fact(0.052, 0.05), rules.CheckFails, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := with(longPrompts(),
				rules.PrefillTimeP95, tt.prefillP95, rules.PrefillTimeMean, tt.prefillAvg,
				rules.TTFTP95, fact(0.4, 0.239), rules.TTFTMean, fact(0.12, 0.07))
			r := rules.Evaluate(fs, rules.SLO{}, rules.DefaultThresholds)
			f := finding(t, r, rules.PrefillLongPrompts)
			assert.Equal(t, tt.want, checkOutcome(t, f, check))
			said := false
			for _, c := range f.NextChecks {
				for _, e := range c.Evidence {
					said = said || strings.Contains(e.Text, "where a quantile is unresolved")
				}
			}
			assert.Equal(t, tt.unresolved, said)
		})
	}
}

// A hot spot is the verdict when the fleet without it barely moved; when
// the rest moved too, a fleet-wide cause is the verdict and the hot spot is
// listed below it.
func TestHotspotExplainsTheFleet(t *testing.T) {
	compound := func(rest, restMean rules.Fact) rules.Facts {
		return with(longPrompts(),
			rules.ReplicaLoadShareMax, fact(1.34, 1.0), rules.ReplicaShareMax, fact(1.34, 1.0),
			rules.TTFTP95, fact(1.6, 0.9), rules.TTFTMean, fact(0.8, 0.35),
			rules.TTFTP95WithoutHot, rest, rules.TTFTMeanWithoutHot, restMean)
	}
	tests := []struct {
		name    string
		facts   rules.Facts
		verdict rules.Verdict
		second  rules.HypothesisID
	}{
		{"the rest moved with the fleet: long prompts, hot spot secondary", compound(fact(1.55, 0.9), fact(0.75, 0.35)), rules.Verdict(rules.PrefillLongPrompts), rules.ReplicaHotspot},
		{"only the mean says the rest moved", compound(fact(0.95, 0.9), fact(0.7, 0.35)), rules.Verdict(rules.PrefillLongPrompts), rules.ReplicaHotspot},
		{"hot spot alone: the rest is flat", with(hotspot(), rules.TTFTP95WithoutHot, fact(0.9, 0.9), rules.TTFTMeanWithoutHot, fact(0.35, 0.35)), rules.Verdict(rules.ReplicaHotspot), rules.QueueSustained},
		{"hot spot without the new facts", hotspot(), rules.Verdict(rules.ReplicaHotspot), rules.QueueSustained},
		// A decode pod hot in a prefill/decode fleet: only the decode side
		// moved, and the first tokens' small rise, which the rest shares,
		// says nothing. The rest's TPOT decides.
		{"decode hot spot: the rest's tokens are on time", decodeHot(fact(0.042, 0.042), fact(0.024, 0.024)), rules.Verdict(rules.ReplicaHotspot), rules.DecodePressure},
		{"decode load everywhere, one pod hotter", decodeHot(fact(0.085, 0.042), fact(0.047, 0.024)), rules.Verdict(rules.DecodePressure), rules.ReplicaHotspot},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rules.Evaluate(tt.facts, rules.SLO{}, rules.DefaultThresholds)
			require.Equal(t, tt.verdict, r.Verdict)
			require.GreaterOrEqual(t, len(r.Findings), 2)
			assert.Equal(t, tt.second, r.Findings[1].ID)
			assert.Equal(t, rules.Supported, r.Findings[1].Status)
		})
	}
}

// decodeHot is decode pressure whose load sits on one replica, with the
// TPOT p95 and mean of the rest of the fleet given: TTFT moved a little,
// and the rest carries that little.
func decodeHot(rest, restMean rules.Fact) rules.Facts {
	return with(decodePressure(),
		rules.ReplicaLoadShareMax, fact(2, 1), rules.ReplicaShareMax, fact(2, 1),
		rules.TTFTP95, fact(1.0, 0.9), rules.TTFTMean, fact(0.38, 0.35),
		rules.TTFTP95WithoutHot, fact(1.0, 0.9), rules.TTFTMeanWithoutHot, fact(0.38, 0.35),
		rules.TPOTP95WithoutHot, rest, rules.TPOTMeanWithoutHot, restMean)
}

// Prefix caching stores a shared prefix once: when reuse is lost the
// cache fills, and a few preemptions follow from the lost reuse rather
// than compete with it.
func TestFewPreemptionsFollowLostPrefixReuse(t *testing.T) {
	fs := with(prefixLoss(),
		rules.KVUsageMean, fact(0.64, 0.13), rules.KVUsageMax, fact(1, 0.25), rules.KVUsagePreempting, fact(0.97, 0.97),
		rules.PreemptionRate, fact(0.3, 0), rules.PreemptionShare, fact(0.005, 0))
	r := rules.Evaluate(fs, rules.SLO{}, rules.DefaultThresholds)
	assert.Equal(t, rules.Verdict(rules.PrefixCacheLoss), r.Verdict)
	assert.Equal(t, rules.Supported, finding(t, r, rules.KVPreemption).Status)

	// Material preemptions stay a rival cause.
	r = rules.Evaluate(with(fs, rules.PreemptionShare, fact(0.05, 0)), rules.SLO{}, rules.DefaultThresholds)
	assert.NotEqual(t, rules.Verdict(rules.PrefixCacheLoss), r.Verdict)
}
