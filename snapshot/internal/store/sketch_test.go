package store_test

import (
	"math"
	"testing"

	pmodel "github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/snapshot/internal/store"
)

// TestSketch checks that a sketch classifies families from their series'
// names and labels as a read with samples does, and holds no sample.
func TestSketch(t *testing.T) {
	sk := store.Sketch("pod-a", []labels.Labels{
		labels.FromStrings("__name__", "ttft_bucket", "le", "+Inf"),
		labels.FromStrings("__name__", "ttft_sum"),
		labels.FromStrings("__name__", "ttft_count"),
		labels.FromStrings("__name__", "lat", "quantile", "0.5"),
		labels.FromStrings("__name__", "lat_sum"),
		labels.FromStrings("__name__", "requests_total"),
		labels.FromStrings("__name__", "running"),
		labels.FromStrings("__name__", "orphan_bucket"), // no le: not a histogram
		labels.FromStrings("__name__", "orphan_count"),
	})
	require.NotNil(t, sk)
	assert.Equal(t, "pod-a", sk.Name)
	assert.Empty(t, sk.Scrapes)
	assert.Equal(t, []string{"lat", "orphan_bucket", "orphan_count", "requests_total", "running", "ttft"}, sk.FamilyNames())
	for name, typ := range map[string]pmodel.MetricType{
		"ttft":           pmodel.MetricTypeHistogram,
		"lat":            pmodel.MetricTypeSummary,
		"requests_total": pmodel.MetricTypeCounter,
		"running":        pmodel.MetricTypeUnknown,
		"orphan_bucket":  pmodel.MetricTypeUnknown,
	} {
		assert.Equal(t, typ, sk.Family(name).Type, name)
	}
	h := sk.Family("ttft").Histograms
	require.Len(t, h, 1)
	assert.Equal(t, []float64{math.Inf(1)}, h[0].Bounds)
	assert.Zero(t, h[0].Len())
	for _, f := range sk.Families {
		for _, s := range f.Series {
			assert.Empty(t, s.T, "%s: no samples", s.Name)
		}
	}

	empty := store.Sketch("pod-b", nil)
	assert.Equal(t, "pod-b", empty.Name)
	assert.Empty(t, empty.Families)
}
