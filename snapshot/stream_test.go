package snapshot_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/internal/heappeak"
	"github.com/whyslow/whyslow/snapshot"
)

// gzipMembers returns head, then body repeated n times, as concatenated
// gzip members (as `cat a.gz b.gz` makes): a few KB that inflate to
// len(head)+n*len(body) bytes.
func gzipMembers(t testing.TB, head, body []byte, n int) []byte {
	var out bytes.Buffer
	out.Write(gz(t, head))
	member := gz(t, body)
	for range n {
		out.Write(member)
	}
	return out.Bytes()
}

// A gzip file whose first 64 KiB look like a /federate dump (so the
// larger per-file limit applies), followed by far more comment lines than
// the limit: inflation streams, the limit counts inflated bytes, and the
// comments are not kept, so the heap stays far below the limit while the
// read fails with a limit error naming the file and the limit.
func TestGzipBombStreams(t *testing.T) {
	const limit = 32 << 20
	head := federate(20, 50) // timestamped samples: a file of many scrapes
	body := bytes.Repeat([]byte("# padding padding padding padding padding padding padding padding\n"), (1<<20)/66)
	bomb := gzipMembers(t, head, body, 256) // ~256 MiB inflated
	require.Less(t, len(bomb), 2<<20, "the bomb itself is small")
	opts := snapshot.Options{Limits: snapshot.Limits{MaxBytesPerScrape: 1 << 20, MaxBytesPerFile: limit}}

	dir := t.TempDir()
	path := filepath.Join(dir, "federate.txt.gz")
	require.NoError(t, os.WriteFile(path, bomb, 0o644))
	before := treeHash(t, dir)

	for _, via := range []string{"file", "stdin", "memory"} {
		t.Run(via, func(t *testing.T) {
			stop := heappeak.Start(time.Millisecond)
			var (
				ev  *snapshot.Evidence
				err error
			)
			name := path
			switch via {
			case "file":
				ev, err = snapshot.Read(context.Background(), []string{path}, opts)
			case "stdin":
				o := opts
				o.Stdin = bytes.NewReader(bomb)
				name = "-"
				ev, err = snapshot.Read(context.Background(), []string{"-"}, o)
			case "memory":
				name = "federate.txt.gz"
				ev, err = snapshot.ParseDump(bomb, name, opts)
			}
			peak := stop().Above()
			t.Logf("%s: peak heap %.1f MiB reading a bomb inflating to %d MiB with a %d MiB limit", via, float64(peak)/(1<<20), (len(head)+256*len(body))>>20, limit>>20)
			require.Error(t, err)
			assert.True(t, errors.Is(err, snapshot.ErrLimit), "%v", err)
			require.NotNil(t, ev)
			require.Len(t, ev.Problems, 1)
			p := ev.Problems[0]
			assert.Equal(t, name, p.File)
			var le *snapshot.LimitError
			require.True(t, errors.As(p, &le), "%v", p)
			assert.Equal(t, "Limits.MaxBytesPerFile", le.Limit)
			assert.Contains(t, p.Error(), "gzip stream holds more than Limits.MaxBytesPerFile")
			assert.Less(t, peak, uint64(limit/4), "memory is bounded by what is kept, not by what is inflated")
		})
	}
	assert.Equal(t, before, treeHash(t, dir))
}

// A bomb of samples (all kept) costs about the limit, not a multiple.
func TestGzipSampleBombMemoryNearLimit(t *testing.T) {
	const limit = 16 << 20
	line := []byte("vllm:num_requests_waiting{engine=\"0\",pod=\"vllm-0\"} 1 1758535200000\n")
	bomb := gzipMembers(t, line, bytes.Repeat(line, (1<<20)/len(line)), 64)
	opts := snapshot.Options{Limits: snapshot.Limits{MaxBytesPerScrape: 1 << 20, MaxBytesPerFile: limit}}
	stop := heappeak.Start(time.Millisecond)
	_, err := snapshot.ParseDump(bomb, "f.txt.gz", opts)
	peak := stop().Above()
	t.Logf("peak heap %.1f MiB for a %d MiB limit", float64(peak)/(1<<20), limit>>20)
	require.ErrorIs(t, err, snapshot.ErrLimit)
	assert.Less(t, peak, uint64(limit*3/2), "never ~3x the limit")
}

// CRLF line endings and a UTF-8 byte order mark (a dump saved on
// Windows) are read as the original: the same model, one warning per
// file, and line numbers of the file itself.
func TestCRLFAndBOMVariantsOfRealCaptures(t *testing.T) {
	for _, path := range realFiles(t) {
		name := filepath.Base(path)
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		orig, err := snapshot.ParseDump(data, name, snapshot.Options{})
		require.NoError(t, err)
		crlf := bytes.ReplaceAll(data, []byte("\n"), []byte("\r\n"))
		variants := map[string][]byte{
			"crlf":        crlf,
			"bom":         append([]byte("\ufeff"), data...),
			"bom+crlf":    append([]byte("\ufeff"), crlf...),
			"crlf.gz":     gz(t, crlf),
			"bom+crlf.gz": gz(t, append([]byte("\ufeff"), crlf...)),
		}
		for v, vdata := range variants {
			t.Run(name+"/"+v, func(t *testing.T) {
				fname := name
				if strings.HasSuffix(v, ".gz") {
					fname += ".gz"
				}
				e, err := snapshot.ParseDump(vdata, fname, snapshot.Options{})
				require.NoError(t, err)
				require.NotEmpty(t, e.Problems)
				w := e.Problems[len(e.Problems)-1]
				var norm []snapshot.Problem
				var rest []snapshot.Problem
				for _, p := range e.Problems {
					if errors.Is(p, snapshot.ErrNormalized) {
						norm = append(norm, p)
					} else {
						rest = append(rest, p)
					}
				}
				require.Len(t, norm, 1, "one warning per file: %v", e.Problems)
				assert.Equal(t, snapshot.SeverityWarning, norm[0].Severity, "%v", w)
				e.Problems = rest
				for i := range e.Problems {
					e.Problems[i].File = name
				}
				assert.Equal(t, summary(orig), summary(e))
				assert.Equal(t, orig.Targets[0].Name, strings.TrimSuffix(e.Targets[0].Name, ".prom"))
				for _, fn := range orig.Targets[0].FamilyNames() {
					assert.Equal(t, familyText(orig.Targets[0].Families[fn]), familyText(e.Targets[0].Families[fn]), fn)
				}
				// Problems keep the file's own lines and offsets.
				for i, p := range orig.Problems {
					assert.Equal(t, p.Line, e.Problems[i].Line, "%v", p)
				}
			})
		}
	}
}

// Problems in a CRLF file, and in a gzip stream whose comments were not
// kept, name the line and offset of the file as written.
func TestNormalisedLinesAndOffsets(t *testing.T) {
	lines := []string{"# HELP vllm:a a gauge", "# TYPE vllm:a gauge", "# a comment, dropped", "", "# another", "vllm:a 1", "bad{a=\"1\" 3", "vllm:b 2"}
	for _, eol := range []string{"\n", "\r\n"} {
		for _, zip := range []bool{false, true} {
			text := strings.Join(lines, eol) + eol
			data := []byte(text)
			name := "d.prom"
			if zip {
				data, name = gz(t, data), "d.prom.gz"
			}
			e, err := snapshot.ParseDump(data, name, snapshot.Options{})
			require.NoError(t, err)
			var se *snapshot.SyntaxError
			found := false
			for _, p := range e.Problems {
				if errors.As(p, &se) {
					found = true
					assert.Equal(t, 7, p.Line, "%q gzip=%v: %v", eol, zip, p)
					assert.Equal(t, int64(strings.Index(text, "bad{")), p.Offset, "%q gzip=%v: %v", eol, zip, p)
				}
			}
			assert.True(t, found, "%v", e.Problems)
		}
	}
}

// What the input is, said in the message.
func TestSaysWhatTheInputIs(t *testing.T) {
	utf16 := func(s string, be bool) []byte {
		var out []byte
		if be {
			out = append(out, 0xfe, 0xff)
		} else {
			out = append(out, 0xff, 0xfe)
		}
		for _, c := range []byte(s) {
			if be {
				out = append(out, 0, c)
			} else {
				out = append(out, c, 0)
			}
		}
		return out
	}
	dump := "# TYPE vllm:a gauge\nvllm:a 1\n"
	tests := []struct {
		name, want string
		data       []byte
	}{
		{"json object", "JSON, not an exposition", []byte(`{"status":"success","data":{"resultType":"vector","result":[]}}`)},
		{"json array", "JSON, not an exposition", []byte("\n  [ {\"a\": 1} ]")},
		{"utf-16le", "UTF-16LE text, not UTF-8: convert it to UTF-8", utf16(dump, false)},
		{"utf-16be", "UTF-16BE text, not UTF-8: convert it to UTF-8", utf16(dump, true)},
		{"utf-16le without bom", "UTF-16LE text", utf16(dump, false)[2:]},
		{"html", "HTML page", []byte("<!doctype html><html><body>404</body></html>")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := snapshot.ParseDump(tt.data, "x.prom", snapshot.Options{})
			require.Error(t, err)
			require.ErrorIs(t, err, snapshot.ErrNotExposition)
			require.Len(t, e.Problems, 1)
			assert.Contains(t, e.Problems[0].Error(), tt.want)
			assert.Contains(t, e.Problems[0].Error(), "x.prom:")
		})
	}
	// A quoted UTF-8 metric name at the start of a line is not JSON.
	e, err := snapshot.ParseDump([]byte("{\"my.metric\",pod=\"a\"} 3\n"), "x.prom", snapshot.Options{})
	require.NoError(t, err, "%v", e.Problems)
}

// Messages quote at most a short excerpt of an offending line, with
// control characters escaped.
func TestMessagesQuoteAnExcerpt(t *testing.T) {
	secret := "root:x:0:0:root:/root:/bin/bash" + strings.Repeat("S", 10<<10) + "\x1b[31m"
	data := []byte("vllm:a 1\n" + secret + "\n")
	e, _ := snapshot.ParseDump(data, "x.prom", snapshot.Options{})
	require.NotEmpty(t, e.Problems)
	for _, p := range e.Problems {
		if !errors.Is(p, snapshot.ErrSyntax) {
			continue
		}
		msg := p.Error()
		assert.Less(t, len(msg), 400, msg)
		assert.NotContains(t, msg, "\x1b")
		assert.NotContains(t, msg, strings.Repeat("S", 100))
		assert.Equal(t, 2, p.Line)
	}

}

// familyText prints every value of a family (NaN included, which
// reflect.DeepEqual never finds equal).
func familyText(f *snapshot.Family) string {
	if f == nil {
		return "<nil>"
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s %s %v %q %q\n", f.Name, f.Type, f.TypeInferred, f.Help, f.Unit)
	for _, s := range f.Series {
		fmt.Fprintf(&sb, "%s%s %v %v %v\n", s.Name, s.Labels, s.T, s.V, s.StartT)
	}
	for _, h := range f.Histograms {
		fmt.Fprintf(&sb, "%s %v %v %v %v %v\n", h.Labels, h.Bounds, h.T, h.Counts, h.Sum, h.Count)
	}
	return sb.String()
}

// federate writes a /federate-style dump: scrapes x series samples, each
// with its timestamp.
func federate(scrapes, series int) []byte {
	var b strings.Builder
	for s := 0; s < scrapes; s++ {
		for i := 0; i < series; i++ {
			fmt.Fprintf(&b, "vllm:num_requests_waiting{engine=\"%d\",pod=\"vllm-0\"} %d %d\n", i, s, 1758535200000+int64(s)*15000)
		}
	}
	return []byte(b.String())
}

// Limits are per scrape: a file of many scrapes (samples with timestamps)
// may be larger than one scrape may be, up to MaxBytesPerFile, and holds
// MaxSeriesPerScrape samples per scrape time; a file of one scrape gets
// the per-scrape limits.
func TestLimitsPerScrapeInMultiScrapeFiles(t *testing.T) {
	many := federate(40, 8) // 320 samples, ~26 KB
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(many)
	require.NoError(t, zw.Close())
	one := []byte(strings.Repeat("vllm:x{i=\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"} 1\n", 400))

	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, data, 0o644))
		return p
	}
	lim := snapshot.Limits{MaxBytesPerScrape: 4 << 10, MaxSeriesPerScrape: 10}
	tests := []struct {
		name    string
		path    string
		lim     snapshot.Limits
		samples int
		err     string
	}{
		{"federate over the scrape limit", write("federate.txt", many), lim, 320, ""},
		{"gzip'ed federate over the scrape limit", write("federate.txt.gz", gz.Bytes()), lim, 320, ""},
		{"federate over the file limit", write("federate2.txt", many), snapshot.Limits{MaxBytesPerScrape: 4 << 10, MaxBytesPerFile: 8 << 10, MaxSeriesPerScrape: 10}, 0, "more than Limits.MaxBytesPerFile"},
		{"one scrape over the scrape limit", write("vllm-0_2026-09-22T10-00-00Z.prom", one), lim, 0, "more than Limits.MaxBytesPerScrape"},
		{"one scrape over the series limit", write("vllm-1_2026-09-22T10-00-00Z.prom", federate(1, 20)), lim, 0, "more than Limits.MaxSeriesPerScrape (10) samples per scrape"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, _ := snapshot.Read(context.Background(), []string{tt.path}, snapshot.Options{Limits: tt.lim})
			if tt.samples == 0 {
				// Nothing of a file stopped by a limit is kept, not even
				// its targets, unless asked for.
				assert.Empty(t, ev.Targets)
			}
			require.NotNil(t, ev)
			n := 0
			for _, tg := range ev.Targets {
				for _, f := range tg.Families {
					for _, s := range f.Series {
						n += s.Len()
					}
				}
			}
			assert.Equal(t, tt.samples, n)
			if tt.err == "" {
				assert.Empty(t, ev.Problems)
				return
			}
			require.NotEmpty(t, ev.Problems)
			assert.Contains(t, ev.Problems[0].Error(), tt.err)
			assert.Contains(t, ev.Problems[0].Error(), tt.path)
		})
	}
}
