package dumpdir

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestParseName(t *testing.T) {
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
		ni := ParseName(c.path, c.inSubdir)
		assert.Equal(t, c.target, ni.Target, c.path)
		assert.True(t, c.time.Equal(ni.Time), "%s: got %v want %v", c.path, ni.Time, c.time)
	}
}
