package main

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A TSDB of another application (no vllm: metric) is refused with the
// message of a dump without a vLLM target, naming the data directory.
func TestDiagnoseNoVLLMTargetTSDB(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "node-exporter-data")
	w, err := tsdb.NewBlockWriter(slog.New(slog.DiscardHandler), dir, (2 * time.Hour).Milliseconds())
	require.NoError(t, err)
	app := w.AppenderV2(context.Background())
	t0 := time.Date(2026, 9, 22, 10, 0, 0, 0, time.UTC)
	for i := range 120 {
		lset := labels.FromStrings(model.MetricNameLabel, "node_load1", "instance", "host-1:9100", "job", "node")
		_, err := app.Append(0, lset, 0, t0.Add(time.Duration(i)*30*time.Second).UnixMilli(), 0.5, nil, nil, storage.AOptions{})
		require.NoError(t, err)
	}
	require.NoError(t, app.Commit())
	_, err = w.Flush(context.Background())
	require.NoError(t, err)
	require.NoError(t, w.Close())

	code, out, errOut := whyslow(t, "", "diagnose", dir)
	assert.Equal(t, exitInput, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "whyslow diagnose: no vLLM target in "+dir+": 1 target read (host-1:9100), none with a vllm: metric")
}
