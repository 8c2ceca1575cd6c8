package html

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/report"
)

// A numeric cell wraps between a value and what qualifies it, never
// inside either.
func TestSplitCell(t *testing.T) {
	tests := []struct {
		cell string
		want []string
	}{
		{"2.2s", []string{"2.2s"}},
		{"870 tokens", []string{"870 tokens"}},
		{"58.5ms [40ms–60ms]", []string{"58.5ms", "[40ms–60ms]"}},
		{"2628 tokens [2000–5000]", []string{"2628 tokens", "[2000–5000]"}},
		{"4.86s n=17,144", []string{"4.86s", "n=17,144"}},
		{"10.9 req (max 72 req)", []string{"10.9 req", "(max 72 req)"}},
		{"69ms, p99 245ms", []string{"69ms,", "p99 245ms"}},
		{"<= 300ms", []string{"<= 300ms"}},
		{"12,359,981", []string{"12,359,981"}},
	}
	for _, tt := range tests {
		var got []string
		for _, p := range splitCell(tt.cell) {
			got = append(got, p.Text)
		}
		assert.Equal(t, tt.want, got, tt.cell)
	}
	assert.True(t, splitCell("58.5ms [40ms–60ms]")[1].Bucket)
	assert.False(t, splitCell("10.9 req (max 72 req)")[1].Bucket)
}

// A tagged row carries its tag as a class and beside its first cell; a
// marked row keeps its mark.
func TestTableRowTags(t *testing.T) {
	tab := &report.Table{
		Head:  []string{"replica", "TTFT p95"},
		Right: []bool{false, true},
		Rows:  [][]string{{"vllm-0", "4.86s n=17,144"}, {"vllm-1", "202ms"}},
		Marks: []bool{true, false},
		Tags:  []string{report.TagCulprit, ""},
	}
	var b bytes.Buffer
	require.NoError(t, htmlTemplate.ExecuteTemplate(&b, "table", report.Block{Kind: report.BlockTable, Class: "replicas", Table: tab}))
	got := b.String()
	assert.Contains(t, got, `<table class="replicas">`)
	assert.Contains(t, got, `<tr class="mark culprit"><td>vllm-0 <span class="tag">culprit</span></td><td class="num q"><span>4.86s</span> <span>n=17,144</span></td></tr>`)
	assert.Contains(t, got, `<tr><td>vllm-1</td><td class="num">202ms</td></tr>`)
}
