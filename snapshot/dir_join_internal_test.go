package snapshot

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSeriesKey(t *testing.T) {
	tests := []struct {
		name, key string
		had       bool
	}{
		{"SERVER_t0", "SERVER", true},
		{"SERVER_t1", "SERVER", true},
		{"SERVER", "SERVER", false},
		{"vllm-0", "vllm-0", false},
		{"vllm-1", "vllm-1", false},
		{"pod-a_before", "pod-a", true},
		{"pod-a_After", "pod-a", true},
		{"my-pod-t12-extra", "my-pod-extra", true},
		{"scrape3.vllm", "vllm", true},
		{"t0", "", true},
		{"test0", "test0", false},
	}
	for _, tt := range tests {
		key, had := seriesKey(tt.name)
		assert.Equal(t, tt.key, key, tt.name)
		assert.Equal(t, tt.had, had, tt.name)
	}
}
