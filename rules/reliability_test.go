package rules_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/rules"
)

// The reliability rows: what each share or restart count makes present,
// and which hypothesis it supports.
func TestReliabilityRows(t *testing.T) {
	quiet := with(healthy(),
		rules.AbandonShare, fact(0.001, 0.001), rules.LostShare, fact(0, 0), rules.HTTP5xxShare, fact(0, 0),
		rules.HTTP429Share, fact(0, 0), rules.RestartsReplicaMax, fact(0, 0), rules.Restarts, fact(0, 0),
		rules.AbandonedAfterFirstToken, fact(5, 5))
	tests := []struct {
		name    string
		facts   rules.Facts
		present bool
		names   string // the "not completing" item
		verdict rules.Verdict
		support rules.HypothesisID
	}{
		{"quiet", quiet, false, "", rules.NoIncident, ""},
		{"abandonment under a sustained queue", with(queueSustained(),
			rules.AbandonShare, fact(0.03, 0.001), rules.AbandonedAfterFirstToken, fact(1500, 5)),
			true, "not completing: abandon_share", "queue-sustained", rules.ClientAbandonment},
		{"abandonment without a queue", with(quiet, rules.AbandonShare, fact(0.05, 0.001)),
			true, "not completing: abandon_share", "client-abandonment", rules.ClientAbandonment},
		{"abandonment from lifetime counters (one scrape): how many, not when", with(quiet, rules.AbandonShare, lifetime(0.27)),
			true, "not completing: abandon_share", rules.Undetermined, rules.ClientAbandonment},
		{"a single planned restart", with(quiet, rules.RestartsReplicaMax, fact(1, 0), rules.Restarts, fact(1, 0), rules.LostShare, fact(0.0007, 0)),
			false, "", rules.NoIncident, ""},
		{"a crash loop", with(quiet, rules.RestartsReplicaMax, fact(4, 0), rules.Restarts, fact(4, 0), rules.LostShare, fact(0.004, 0)),
			true, "not completing: restarts_replica_max", "replica-restarts", rules.ReplicaRestarts},
		{"a crash loop already in the baseline is not new", with(quiet, rules.RestartsReplicaMax, fact(4, 4), rules.Restarts, fact(4, 4)),
			false, "", rules.NoIncident, ""},
		{"5xx from one replica", with(quiet, rules.HTTP5xxShare, fact(0.03, 0), rules.HTTP5xxShareMax, fact(0.24, 0)),
			true, "not completing: http_5xx_share", "server-errors", rules.ServerErrors},
		{"429 at the gateway", with(quiet, rules.HTTP429Share, fact(0.2, 0)),
			true, "not completing: http_429_share", "server-errors", rules.ServerErrors},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rules.Evaluate(tt.facts, rules.SLO{}, rules.DefaultThresholds)
			s := symptom(t, r.Symptoms, rules.SymptomReliability)
			require.True(t, s.Evaluable)
			assert.Equal(t, tt.present, s.Present, "%s", s)
			if tt.names != "" {
				assert.Contains(t, s.String(), tt.names)
			}
			assert.Equal(t, tt.verdict, r.Verdict, "%s", r)
			if tt.support != "" {
				f := finding(t, r, tt.support)
				assert.Equal(t, rules.Supported, f.Status, "%s", f)
				assert.Contains(t, f.Explains, rules.SymptomReliability)
			}
			if !tt.present {
				for _, id := range []rules.HypothesisID{rules.ClientAbandonment, rules.ReplicaRestarts, rules.ServerErrors} {
					assert.NotEqual(t, rules.Supported, finding(t, r, id).Status, "%s", id)
				}
			}
		})
	}
}

// Under a sustained queue, client abandonment is explained by it: the
// queue ranks first, and abandonment is not its rival.
func TestQueueExplainsAbandonment(t *testing.T) {
	fs := with(queueSustained(), rules.AbandonShare, fact(0.03, 0.001), rules.AbandonedAfterFirstToken, fact(1500, 5))
	r := rules.Evaluate(fs, rules.SLO{}, rules.DefaultThresholds)
	require.Equal(t, rules.Verdict(rules.QueueSustained), r.Verdict, "%s", r)
	assert.Equal(t, rules.QueueSustained, r.Findings[0].ID)
	assert.Contains(t, r.Findings[0].Explains, rules.SymptomReliability)
	for _, m := range rules.Map() {
		if m.ID == rules.QueueSustained || m.ID == rules.QueueBurst {
			assert.Contains(t, m.Refines, rules.ClientAbandonment, "%s explains client abandonment", m.ID)
		}
	}
	assert.NotContains(t, r.Findings[0].ConfidenceReason, string(rules.ClientAbandonment), "not a rival")
	assert.True(t, strings.Contains(r.String(), "client-abandonment [supported"), "%s", r)
}

// lifetime is a fact from lifetime counters: no baseline, no window.
func lifetime(v float64) rules.Fact {
	f := rules.Measured(v)
	f.Lifetime = true
	return f
}
