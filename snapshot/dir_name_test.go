package snapshot

import (
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
)

func TestParsePathName(t *testing.T) {
	at := time.Date(2026, 9, 22, 10, 0, 15, 0, time.UTC)
	cases := []struct {
		path     string
		inSubdir bool
		target   string
		time     time.Time
	}{
		{"d/vllm-0/2026-09-22T10:00:15Z.prom", true, "vllm-0", at},
		{"d/vllm-0/2026-09-22T10-00-15Z.prom.gz", true, "vllm-0", at},
		{"d/vllm-0/dcgm-2026-09-22T10-00-15Z.prom", true, "vllm-0", at},
		{"d/vllm-0_2026-09-22T10-00-15Z.prom", false, "vllm-0", at},
		{"d/vllm-0_20260922T100015Z.txt", false, "vllm-0", at},
		{"d/vllm-0_20260922-100015.prom", false, "vllm-0", at},
		{"d/vllm-0-1758535215.prom", false, "vllm-0", time.Unix(1758535215, 0).UTC()},
		{"d/vllm-0_1758535215000.prom", false, "vllm-0", time.UnixMilli(1758535215000).UTC()},
		{"d/vllm-0_2026-09-22T12:00:15.250+02:00.om", false, "vllm-0", at.Add(250 * time.Millisecond)},
		{"d/2026-09-22T10-00-15Z_vllm-0.prom", false, "vllm-0", at},
		{"d/2026-09-22T10-00-15Z/vllm-0.prom", true, "vllm-0", at},
		{"vllm-0/2026-09-22T10-00-15Z.prom", false, "vllm-0", at},
		{"metrics.txt", false, "metrics", time.Time{}},
		{"d/vllm-0/metrics.prom", true, "vllm-0", time.Time{}},
		{"d/2026-13-45T99-00-15Z.prom", false, "2026-13-45T99-00-15Z", time.Time{}},
		{"-", false, "stdin", time.Time{}},
	}
	for _, c := range cases {
		ni := parsePathName(c.path, c.inSubdir)
		assert.Equal(t, c.target, ni.target, c.path)
		assert.True(t, c.time.Equal(ni.time), "%s: got %v want %v", c.path, ni.time, c.time)
	}
}

func TestClassifyName(t *testing.T) {
	ctx := func(name string, typ model.MetricType) *typeCtx { return &typeCtx{name: name, typ: typ} }
	cases := []struct {
		name   string
		ctx    *typeCtx
		family string
		typ    model.MetricType
		part   part
		drop   bool
		infer  bool
	}{
		{"vllm:num_preemptions_total", ctx("vllm:num_preemptions_total", model.MetricTypeCounter), "vllm:num_preemptions_total", model.MetricTypeCounter, partFloat, false, false},
		{"vllm:num_preemptions_total", ctx("vllm:num_preemptions", model.MetricTypeCounter), "vllm:num_preemptions_total", model.MetricTypeCounter, partFloat, false, false},
		{"vllm:num_preemptions_created", ctx("vllm:num_preemptions", model.MetricTypeCounter), "", "", partFloat, true, false},
		{"vllm:num_preemptions_created", ctx("vllm:num_preemptions_created", model.MetricTypeGauge), "vllm:num_preemptions_created", model.MetricTypeGauge, partFloat, false, false},
		{"vllm:iteration_tokens_total_bucket", ctx("vllm:iteration_tokens_total", model.MetricTypeHistogram), "vllm:iteration_tokens_total", model.MetricTypeHistogram, partBucket, false, false},
		{"vllm:iteration_tokens_total_sum", ctx("vllm:iteration_tokens_total", model.MetricTypeHistogram), "vllm:iteration_tokens_total", model.MetricTypeHistogram, partSum, false, false},
		{"h_count", ctx("h", model.MetricTypeHistogram), "h", model.MetricTypeHistogram, partCount, false, false},
		{"s_sum", ctx("s", model.MetricTypeSummary), "s", model.MetricTypeSummary, partFloat, false, false},
		{"s", ctx("s", model.MetricTypeSummary), "s", model.MetricTypeSummary, partFloat, false, false},
		{"c_info", ctx("c", model.MetricTypeInfo), "c_info", model.MetricTypeInfo, partFloat, false, false},
		{"x_bucket", nil, "x", model.MetricTypeHistogram, partBucket, false, true},
		{"x_bucket", ctx("x_bucket", model.MetricTypeUnknown), "x", model.MetricTypeHistogram, partBucket, false, true},
		{"r_total", ctx("other", model.MetricTypeGauge), "r_total", model.MetricTypeCounter, partFloat, false, true},
		{"g", ctx("g", model.MetricTypeUnknown), "g", model.MetricTypeUnknown, partFloat, false, false},
		{"g", nil, "g", model.MetricTypeUnknown, partFloat, false, true},
		{"gx", ctx("g", model.MetricTypeGauge), "gx", model.MetricTypeUnknown, partFloat, false, true},
	}
	for _, c := range cases {
		got := classifyName(c.name, c.ctx, false)
		assert.Equal(t, c.drop, got.drop, c.name)
		if c.drop {
			continue
		}
		assert.Equal(t, c.family, got.family, c.name)
		assert.Equal(t, c.typ, got.typ, c.name)
		assert.Equal(t, c.part, got.part, c.name)
		assert.Equal(t, c.infer, got.inferred, c.name)
	}
}
