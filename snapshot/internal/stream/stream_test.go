package stream_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/snapshot/internal/stream"
)

// Read keeps what the parser needs and Map.Orig maps a kept line back to
// the file's line number and offset.
func TestRead(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		drop     bool
		kept     string
		// line is the kept line holding "b 2", and where it is in the
		// file: its line number and offset.
		line     int
		origLine int
		origOff  int64
		bom      bool
		crLines  int64
		dropped  bool
	}{
		{name: "as is", in: "a 1\nb 2\n", drop: true, kept: "a 1\nb 2\n", line: 2, origLine: 2, origOff: 4},
		{name: "comments dropped", in: "# a comment\na 1\n\n# HELP b x\nb 2\n", drop: true,
			kept: "a 1\n# HELP b x\nb 2\n", line: 3, origLine: 5, origOff: 28, dropped: true},
		{name: "comments kept (OpenMetrics)", in: "# a comment\na 1\nb 2\n", kept: "# a comment\na 1\nb 2\n", line: 3, origLine: 3, origOff: 16},
		{name: "CRLF", in: "a 1\r\nb 2\r\n", drop: true, kept: "a 1\nb 2\n", line: 2, origLine: 2, origOff: 5, crLines: 2},
		{name: "byte order mark", in: "\ufeffa 1\nb 2\n", drop: true, kept: "a 1\nb 2\n", line: 2, origLine: 2, origOff: 7, bom: true, dropped: true},
		{name: "no newline at the end", in: "a 1\nb 2", drop: true, kept: "a 1\nb 2\n", line: 2, origLine: 2, origOff: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m stream.Map
			kept, total, err := stream.Read(strings.NewReader(tc.in), &m, int64(len(tc.in)), 64<<10, func([]byte) (int64, int64, bool) {
				return 1 << 20, 1 << 20, tc.drop
			})
			require.NoError(t, err)
			assert.Equal(t, int64(len(tc.in)), total)
			assert.Equal(t, tc.kept, string(kept))
			start := int64(bytes.Index(kept, []byte("b 2")))
			line, off := m.Orig(tc.line, start)
			assert.Equal(t, tc.origLine, line)
			assert.Equal(t, tc.origOff, off)
			assert.Equal(t, tc.in[off:off+3], "b 2")
			assert.Equal(t, tc.bom, m.BOM)
			assert.Equal(t, tc.crLines, m.CRLines)
			assert.Equal(t, tc.dropped, m.Dropped())
		})
	}
}

// Past its limit a read stops and keeps nothing; binary data stop it
// where they are met.
func TestReadStops(t *testing.T) {
	big := strings.Repeat("a 1\n", 1<<18) // 1 MiB
	var m stream.Map
	kept, total, err := stream.Read(strings.NewReader(big), &m, 0, 64<<10, func([]byte) (int64, int64, bool) { return 100 << 10, 1 << 30, true })
	require.NoError(t, err)
	assert.Nil(t, kept)
	assert.Greater(t, total, int64(100<<10))
	assert.Less(t, total, int64(len(big)))

	zeros := "a 1\n" + strings.Repeat("\x00", 1<<20)
	kept, total, err = stream.Read(strings.NewReader(zeros), &stream.Map{}, 0, 64<<10, func([]byte) (int64, int64, bool) { return 1 << 30, 1 << 30, true })
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(kept), "a 1\n"))
	assert.Less(t, total, int64(len(zeros)))
}

func TestWhatBytesAre(t *testing.T) {
	assert.Equal(t, "UTF-16LE", stream.UTF16([]byte("\xff\xfea\x00")))
	assert.Equal(t, "UTF-16BE", stream.UTF16([]byte("\x00a\x00b\x00c\x00d\x00e")))
	assert.Equal(t, "", stream.UTF16([]byte("vllm:num_requests_running 1\n")))
	assert.True(t, stream.LooksLikeJSON([]byte(`{"status":"success"}`)))
	assert.False(t, stream.LooksLikeJSON([]byte(`{"my.metric",le="1"} 3`)))
	assert.Equal(t, 2, stream.BinaryHead([]byte("ab\xffcdefgh")))
	assert.Equal(t, -1, stream.BinaryHead([]byte("ab\xe2\x82"))) // a rune cut at the end
	assert.True(t, stream.NeedsNormalising([]byte("a 1\r\n")))
}
