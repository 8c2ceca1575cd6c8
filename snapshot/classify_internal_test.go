package snapshot

import (
	"testing"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
)

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
