package rules

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gradeFinding is a supported finding of hypothesis id with the given
// score and a severe change in its evidence, taking its mitigations and
// experiment from the map (or from mit when given), as evalRule does.
func gradeFinding(id HypothesisID, score float64, mit ...string) Finding {
	f := Finding{ID: id, Status: Supported, Score: score,
		Evidence: []Evidence{{ID: TTFTP95, Effect: &Effect{Severity: SeveritySevere}}}}
	for _, r := range Map() {
		if r.ID == id {
			f.Mitigations, f.Experiment = r.Mitigations, r.Experiment
		}
	}
	if len(mit) > 0 {
		f.Mitigations, f.Experiment = mit, Plan{}
	}
	return f
}

// TestGrade pins the confidence rules: the margin over every supported
// rival with another mitigation, related through Refines or not; a tie
// within the lead is never high.
func TestGrade(t *testing.T) {
	th := DefaultThresholds // Lead 0.15
	// hot spot explains the queue, which explains decode pressure.
	refines := map[HypothesisID][]HypothesisID{
		ReplicaHotspot: {QueueSustained, DecodePressure},
		QueueSustained: {DecodePressure, ClientAbandonment},
	}
	tests := []struct {
		name     string
		fs       []Finding
		explains map[HypothesisID][]HypothesisID
		want     []Confidence // per finding, in order
		verdict  bool
		rivals   []HypothesisID // of the first finding
		reason   []string       // in the first finding's reason
	}{
		{
			name:    "clear winner",
			fs:      []Finding{gradeFinding(PrefixCacheLoss, 0.9), gradeFinding(ProxyNetwork, 0.55)},
			want:    []Confidence{High, Low},
			verdict: true,
			reason:  []string{"ahead of proxy-network (0.55) by 0.35"},
		},
		{
			name:    "alone",
			fs:      []Finding{gradeFinding(DecodePressure, 1)},
			want:    []Confidence{High},
			verdict: true,
			reason:  []string{"no competing supported hypothesis"},
		},
		{
			name:    "unrelated tie: low, no verdict",
			fs:      []Finding{gradeFinding(QueueBurst, 0.8), gradeFinding(PrefixCacheLoss, 0.75)},
			want:    []Confidence{Low, Low},
			rivals:  []HypothesisID{PrefixCacheLoss},
			reason:  []string{"tied with prefix-cache-loss (0.75)", "does not order them"},
			verdict: false,
		},
		{
			name:    "unrelated, exactly the lead ahead: medium",
			fs:      []Finding{gradeFinding(QueueBurst, 0.85), gradeFinding(PrefixCacheLoss, 0.7)},
			want:    []Confidence{Medium, Low},
			rivals:  []HypothesisID{PrefixCacheLoss},
			verdict: true,
			reason:  []string{"less than twice the lead"},
		},
		{
			name:     "refines a tied rival with another mitigation: medium, named",
			fs:       []Finding{gradeFinding(ReplicaHotspot, 0.82), gradeFinding(QueueSustained, 0.82)},
			explains: refines,
			want:     []Confidence{Medium, Medium},
			verdict:  true,
			rivals:   []HypothesisID{QueueSustained},
			reason:   []string{"tied with queue-sustained (0.82)", "evidence does not"},
		},
		{
			name: "every tied rival is named",
			fs: []Finding{gradeFinding(ReplicaHotspot, 0.82), gradeFinding(QueueSustained, 0.82),
				gradeFinding(DecodePressure, 0.7)},
			explains: refines,
			want:     []Confidence{Medium, Medium, Medium},
			verdict:  true,
			rivals:   []HypothesisID{QueueSustained, DecodePressure},
			reason:   []string{"queue-sustained (0.82)", "decode-pressure (0.70)"},
		},
		{
			name:     "refines a rival less than twice the lead behind: medium",
			fs:       []Finding{gradeFinding(ReplicaHotspot, 0.95), gradeFinding(QueueSustained, 0.7)},
			explains: refines,
			want:     []Confidence{Medium, Low},
			verdict:  true,
			rivals:   []HypothesisID{QueueSustained},
			reason:   []string{"ahead of queue-sustained (0.70) by 0.25"},
		},
		{
			name:     "refines a rival far behind: high",
			fs:       []Finding{gradeFinding(ReplicaHotspot, 1), gradeFinding(QueueSustained, 0.6)},
			explains: refines,
			want:     []Confidence{High, Low},
			verdict:  true,
		},
		{
			name: "refines a tied hypothesis with the same first mitigation: not a rival",
			fs: []Finding{gradeFinding(ReplicaHotspot, 0.82, "route to healthy replicas"),
				gradeFinding(QueueSustained, 0.82, "route to healthy replicas")},
			explains: refines,
			want:     []Confidence{High, High},
			verdict:  true,
			reason:   []string{"no competing supported hypothesis"},
		},
		{
			name: "unrelated, same experiment variable: not a rival",
			fs: []Finding{gradeFinding(QueueBurst, 0.8),
				func() Finding {
					f := gradeFinding(PrefixCacheLoss, 0.8)
					f.Experiment = gradeFinding(QueueBurst, 0).Experiment
					return f
				}()},
			want:    []Confidence{High, High},
			verdict: true,
		},
		{
			name:     "client abandonment defers to the queue's mitigation",
			fs:       []Finding{gradeFinding(QueueSustained, 1), gradeFinding(ClientAbandonment, 0.9)},
			explains: refines,
			want:     []Confidence{High, High},
			verdict:  true,
		},
		{
			name: "every change mild: not high, whatever the score",
			fs: []Finding{func() Finding {
				f := gradeFinding(DecodePressure, 0.83)
				f.Evidence = []Evidence{{ID: TPOTP95, Effect: &Effect{Severity: SeverityMild}}, {ID: CorrRunningTPOT}}
				return f
			}()},
			want:    []Confidence{Medium},
			verdict: true,
			reason:  []string{"every change in its evidence is mild"},
		},
		{
			name:    "weak evidence",
			fs:      []Finding{gradeFinding(QueueBurst, 0.5)},
			want:    []Confidence{Low},
			verdict: false,
			reason:  []string{"weak evidence"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := append([]Finding(nil), tt.fs...)
			got := grade(fs, tt.explains, th)
			assert.Equal(t, tt.verdict, got, "may be the verdict")
			require.Len(t, tt.want, len(fs))
			for i, f := range fs {
				assert.Equal(t, tt.want[i], f.Confidence, "%s: %s", f.ID, f.ConfidenceReason)
			}
			var rivals []HypothesisID
			for _, r := range fs[0].Rivals {
				rivals = append(rivals, r.ID)
			}
			assert.Equal(t, tt.rivals, rivals)
			for _, s := range tt.reason {
				assert.Contains(t, fs[0].ConfidenceReason, s)
			}
			// A tie is never high.
			for _, f := range fs {
				for _, r := range f.Rivals {
					if f.Score-r.Score < th.Lead-1e-9 {
						assert.NotEqual(t, High, f.Confidence, "%s tied with %s", f.ID, r.ID)
					}
				}
			}
		})
	}
}

// TestGradeRivalsRelated: a rival is marked related when either explains
// the other, transitively.
func TestGradeRivalsRelated(t *testing.T) {
	fs := []Finding{gradeFinding(ReplicaHotspot, 0.8), gradeFinding(DecodePressure, 0.8), gradeFinding(PrefixCacheLoss, 0.5)}
	grade(fs, map[HypothesisID][]HypothesisID{ReplicaHotspot: {QueueSustained}, QueueSustained: {DecodePressure}}, DefaultThresholds)
	require.Len(t, fs[0].Rivals, 1, "prefix-cache-loss is 0.30 behind: not a rival that keeps it from high")
	assert.Equal(t, Rival{ID: DecodePressure, Score: 0.8, Related: true}, fs[0].Rivals[0])
	require.Len(t, fs[2].Rivals, 2)
	assert.False(t, fs[2].Rivals[0].Related)
	assert.Equal(t, Low, fs[2].Confidence)
	assert.Contains(t, fs[2].ConfidenceReason, "weak evidence")
}
