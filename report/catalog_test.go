package report_test

import (
	"bytes"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/report"
	"github.com/whyslow/whyslow/snapshot"
)

// TestCatalogDocumentSaysWhatCannotBeSeen: a vLLM target without process
// start time, http_* and _created (the Rust frontend) gets a "Cannot see"
// section.
func TestCatalogDocumentSaysWhatCannotBeSeen(t *testing.T) {
	f := &snapshot.Family{Name: "vllm:kv_cache_usage_perc", Type: model.MetricTypeGauge, Series: []*snapshot.Series{
		{Name: "vllm:kv_cache_usage_perc", Labels: labels.FromStrings("engine", "0", "model_name", "m"), T: []int64{0}, V: []float64{0.5}},
	}}
	ev := &snapshot.Evidence{Targets: []*snapshot.Target{{Name: "rust-0", Families: map[string]*snapshot.Family{f.Name: f}}}}
	var b bytes.Buffer
	require.NoError(t, report.CatalogDocument(catalog.Default().Resolve(ev)).WriteText(&b))
	assert.Contains(t, b.String(), "Cannot see")
	assert.Contains(t, b.String(), "rust-0: "+catalog.UnseenProcessStart)
}
