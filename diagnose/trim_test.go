package diagnose_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/diagnose"
)

// TestTrimmer: a trimmed target keeps the samples of the families its
// signals match and the labels and layouts of the others; the target
// given is left as it was; a diagnosis of the trimmed evidence is the
// diagnosis of the whole (TestSelectionSameDiagnosis checks this on every
// scenario and evidence kind).
func TestTrimmer(t *testing.T) {
	ev := modelFleet(t, "kv-preemption", "m", "vllm", 2)
	trim, err := diagnose.Options{}.Trimmer()
	require.NoError(t, err)
	want, err := diagnose.Diagnose(ev, diagnose.Options{})
	require.NoError(t, err)
	before := evidenceSamples(ev)

	trimmed := *ev
	trimmed.Targets = nil
	emptied := 0
	for _, tg := range ev.Targets {
		tt := trim(tg)
		trimmed.Targets = append(trimmed.Targets, tt)
		assert.Equal(t, tg.Scrapes, tt.Scrapes)
		require.Equal(t, len(tg.Families), len(tt.Families))
		for name, f := range tg.Families {
			g := tt.Families[name]
			require.NotNil(t, g, name)
			if g == f {
				continue // measured: kept as it is
			}
			emptied++
			require.Len(t, g.Series, len(f.Series), name)
			for i, s := range g.Series {
				assert.Equal(t, f.Series[i].Labels, s.Labels)
				assert.Zero(t, s.Len())
			}
			require.Len(t, g.Histograms, len(f.Histograms), name)
			for i, h := range g.Histograms {
				assert.Equal(t, f.Histograms[i].Labels, h.Labels)
				assert.Equal(t, f.Histograms[i].Bounds, h.Bounds)
				assert.Zero(t, h.Len())
			}
		}
	}
	assert.Positive(t, emptied, "vLLM exposes families no signal measures")
	assert.Equal(t, before, evidenceSamples(ev), "the targets given are not modified")
	assert.Less(t, evidenceSamples(&trimmed), before)

	got, err := diagnose.Diagnose(&trimmed, diagnose.Options{})
	require.NoError(t, err)
	assert.Equal(t, reportJSON(t, want, false), reportJSON(t, got, false))
}
