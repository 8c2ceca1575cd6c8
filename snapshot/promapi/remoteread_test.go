package promapi

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/common/config"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/snapshot"
)

// remoteRead is a hook that serves /api/v1/read as Prometheus does, from
// fakeProm's fleet: each pod's series in streamed XOR chunks of 16
// samples, a series' chunks over two frames, a staleness marker after
// the last sample. It counts the reads in reads and fails the test on a
// query (/api/v1/query), which a read by remote read makes none of.
func remoteRead(t *testing.T, reads *atomic.Int64, config string, names ...string) hook {
	if len(names) == 0 {
		names = []string{"vllm:num_requests_waiting"}
	}
	return func(w http.ResponseWriter, r *http.Request, _ int64) bool {
		switch r.URL.Path {
		case "/api/v1/label/__name__/values":
			serveNames(w, names)
			return true
		case "/api/v1/query":
			t.Errorf("a query was made: %s", r.Form.Get("query"))
		case "/api/v1/status/config":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"status":"success","data":{"yaml":%q}}`, config)
			return true
		case "/api/v1/read":
			reads.Add(1)
			q := readRequest(t, r).Queries[0]
			w.Header().Set("Content-Type", "application/x-streamed-protobuf; proto=prometheus.ChunkedReadResponse")
			for _, name := range names {
				for _, pod := range []string{"a", "b"} {
					if !matches(q.Matchers, map[string]string{"__name__": name, "pod": pod}) {
						continue
					}
					lbls := []prompb.Label{{Name: "__name__", Value: name}, {Name: "pod", Value: pod}}
					var chunks []prompb.Chunk
					c := chunkenc.NewXORChunk()
					app, err := c.Appender()
					require.NoError(t, err)
					for k := 0; k <= 41; k++ {
						ts := t0.Add(time.Duration(k) * 15 * time.Second).UnixMilli()
						v := float64(k)
						if k == 41 {
							v = math.Float64frombits(value.StaleNaN)
						}
						app.Append(0, ts, v)
						if c.NumSamples() == 16 || k == 41 {
							chunks = append(chunks, prompb.Chunk{Type: prompb.Chunk_XOR, Data: c.Bytes()})
							c = chunkenc.NewXORChunk()
							app, _ = c.Appender()
						}
					}
					// Prometheus sends whole chunks that overlap the range:
					// the reader trims them.
					writeFrame(t, w, prompb.ChunkedSeries{Labels: lbls, Chunks: chunks[:1]})
					writeFrame(t, w, prompb.ChunkedSeries{Labels: lbls, Chunks: chunks[1:]})
				}
			}
			return true
		}
		return false
	}
}

// serveNames answers a listing of metric names with names.
func serveNames(w http.ResponseWriter, names []string) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"status":"success","data":["%s"]}`, strings.Join(names, `","`))
}

func readRequest(t *testing.T, r *http.Request) *prompb.ReadRequest {
	b, err := io.ReadAll(r.Body)
	require.NoError(t, err)
	raw, err := snappy.Decode(nil, b)
	require.NoError(t, err)
	var req prompb.ReadRequest
	require.NoError(t, req.Unmarshal(raw))
	require.Len(t, req.Queries, 1)
	return &req
}

// matches reports whether the matchers select a series of labels ls (=
// and =~ only, as the reader sends).
func matches(ms []*prompb.LabelMatcher, ls map[string]string) bool {
	for _, m := range ms {
		switch m.Type {
		case prompb.LabelMatcher_EQ:
			if ls[m.Name] != m.Value {
				return false
			}
		case prompb.LabelMatcher_RE:
			if !regexp.MustCompile("^(?:" + m.Value + ")$").MatchString(ls[m.Name]) {
				return false
			}
		}
	}
	return true
}

func writeFrame(t *testing.T, w io.Writer, s prompb.ChunkedSeries) {
	msg, err := (&prompb.ChunkedReadResponse{ChunkedSeries: []*prompb.ChunkedSeries{&s}}).Marshal()
	require.NoError(t, err)
	head := binary.AppendUvarint(nil, uint64(len(msg)))
	head = binary.BigEndian.AppendUint32(head, crc32.Checksum(msg, crc32.MakeTable(crc32.Castagnoli)))
	_, err = w.Write(append(head, msg...))
	require.NoError(t, err)
}

// A server that serves remote read is read by it: the same samples as
// by query (requireFleet), staleness markers and samples outside the
// range left out, no query made, and the cost note says so.
func TestRemoteRead(t *testing.T) {
	var reads atomic.Int64
	srv := serve(t, remoteRead(t, &reads, "global:\n  scrape_interval: 15s\n"))
	ev := readWholeFleet(t, fastConfig, srv.URL)
	assert.EqualValues(t, 6, reads.Load())
	assert.Contains(t, costNote(t, ev), "; samples by remote read (/api/v1/read)")
}

// A remote read asks for every family at once; where the server does
// not serve it, each family is queried apart.
func TestRemoteReadFamilies(t *testing.T) {
	names := []string{"vllm:num_requests_running", "vllm:num_requests_waiting"}
	check := func(t *testing.T, ev *snapshot.Evidence) {
		require.Len(t, ev.Targets, 2)
		for _, tg := range ev.Targets {
			for _, name := range names {
				f := tg.Family(name)
				require.NotNil(t, f, "%s %s", tg.Name, name)
				require.Len(t, f.Series, 1)
				assert.Len(t, f.Series[0].T, 41, "%s %s", tg.Name, name)
			}
		}
	}
	t.Run("remote read", func(t *testing.T) {
		var reads atomic.Int64
		srv := serve(t, remoteRead(t, &reads, "", names...))
		ev, err := fastConfig.Read(context.Background(), srv.URL, window())
		require.NoError(t, err)
		check(t, ev)
		assert.EqualValues(t, 6, reads.Load(), "both families in each read")
	})
	t.Run("by query", func(t *testing.T) {
		var queries atomic.Int64
		srv := serve(t, func(w http.ResponseWriter, r *http.Request, _ int64) bool {
			switch r.URL.Path {
			case "/api/v1/label/__name__/values":
				serveNames(w, names)
				return true
			case "/api/v1/query":
				queries.Add(1)
			}
			return false
		})
		ev, err := fastConfig.Read(context.Background(), srv.URL, window())
		require.NoError(t, err)
		check(t, ev)
		assert.EqualValues(t, 12, queries.Load(), "one family a query")
	})
}

// The reader falls back to queries, for the whole read, where remote
// read is not served or would not give the series as queries do; the
// cost note says why.
func TestRemoteReadFallback(t *testing.T) {
	for _, tc := range []struct {
		name   string
		config string
		read   func(w http.ResponseWriter)
		why    string
	}{
		{name: "not found", why: "HTTP 404 at /api/v1/read: 404 page not found"},
		{name: "VictoriaMetrics", why: `HTTP 400 at /api/v1/read: unsupported path requested: "/api/v1/read"`,
			read: func(w http.ResponseWriter) {
				http.Error(w, `unsupported path requested: "/api/v1/read"`, http.StatusBadRequest)
			}},
		{name: "a proxy", why: "HTTP 403 at /api/v1/read: only queries here",
			read: func(w http.ResponseWriter) {
				http.Error(w, "only queries here", http.StatusForbidden)
			}},
		{name: "a page", why: `/api/v1/read answered "text/html", not protocol buffers`,
			read: func(w http.ResponseWriter) {
				w.Header().Set("Content-Type", "text/html")
				fmt.Fprint(w, "<html>login</html>")
			}},
		{name: "external labels", config: "global:\n  external_labels:\n    cluster: eu\n",
			why: "the server has 1 external labels, which it adds to every remote-read series"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var reads, queries atomic.Int64
			srv := serve(t, func(w http.ResponseWriter, r *http.Request, _ int64) bool {
				switch r.URL.Path {
				case "/api/v1/query":
					queries.Add(1)
				case "/api/v1/status/config":
					if tc.config == "" {
						return false // 404
					}
					w.Header().Set("Content-Type", "application/json")
					fmt.Fprintf(w, `{"status":"success","data":{"yaml":%q}}`, tc.config)
					return true
				case "/api/v1/read":
					reads.Add(1)
					if tc.read == nil {
						return false
					}
					tc.read(w)
					return true
				}
				return false
			})
			ev := readWholeFleet(t, fastConfig, srv.URL)
			assert.LessOrEqual(t, reads.Load(), int64(1), "only the first read asks for remote read")
			assert.EqualValues(t, 6, queries.Load())
			assert.True(t, strings.HasSuffix(costNote(t, ev), "; samples by /api/v1/query: "+tc.why), costNote(t, ev))
		})
	}
}

// A remote read carries the read's credentials and tenant, as a query
// does.
func TestRemoteReadCredentials(t *testing.T) {
	var reads atomic.Int64
	serveRead := remoteRead(t, &reads, "")
	srv := serve(t, func(w http.ResponseWriter, r *http.Request, n int64) bool {
		if r.Header.Get("Authorization") != "Bearer right" || r.Header.Get("X-Scope-OrgID") != "tenant-1" {
			http.Error(w, "invalid token", http.StatusUnauthorized)
			return true
		}
		return serveRead(w, r, n)
	})
	tok := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tok, []byte("right\n"), 0o600))
	cfg := fastConfig
	cfg.HTTP = config.HTTPClientConfig{BearerTokenFile: tok, HTTPHeaders: &config.Headers{Headers: map[string]config.Header{"X-Scope-OrgID": {Values: []string{"tenant-1"}}}}}
	ev := readWholeFleet(t, cfg, srv.URL)
	assert.EqualValues(t, 6, reads.Load())
	assert.Contains(t, costNote(t, ev), "; samples by remote read (/api/v1/read)")
}

// QueryOnly never asks for remote read.
func TestQueryOnly(t *testing.T) {
	var reads atomic.Int64
	srv := serve(t, func(w http.ResponseWriter, r *http.Request, _ int64) bool {
		if r.URL.Path == "/api/v1/read" || r.URL.Path == "/api/v1/status/config" {
			reads.Add(1)
		}
		return false
	})
	cfg := fastConfig
	cfg.QueryOnly = true
	ev := readWholeFleet(t, cfg, srv.URL)
	assert.Zero(t, reads.Load())
	assert.NotContains(t, costNote(t, ev), "samples by")
}

// A remote read is retried and split as a query is: a 503 is asked
// again, a 422 in halves (pods first).
func TestRemoteReadRetryAndSplit(t *testing.T) {
	var reads, failed atomic.Int64
	serveRead := remoteRead(t, &reads, "")
	srv := serve(t, func(w http.ResponseWriter, r *http.Request, n int64) bool {
		if r.URL.Path != "/api/v1/read" {
			return serveRead(w, r, n)
		}
		if k := failed.Add(1); k <= 2 {
			if k == 1 {
				http.Error(w, "busy", http.StatusServiceUnavailable)
			} else {
				http.Error(w, "too many samples", http.StatusUnprocessableEntity)
			}
			return true
		}
		return serveRead(w, r, n)
	})
	ev := readWholeFleet(t, fastConfig, srv.URL)
	assert.Contains(t, costNote(t, ev), "; samples by remote read (/api/v1/read)")
}

// A body that is not the protocol's stops the read with an error naming
// the server, the read and where in the body.
func TestRemoteReadCorrupt(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request, _ int64) bool {
		if r.URL.Path != "/api/v1/read" {
			return false
		}
		w.Header().Set("Content-Type", "application/x-streamed-protobuf; proto=prometheus.ChunkedReadResponse")
		w.Write([]byte{3, 0, 0, 0, 0, 1, 2, 3}) // a frame whose checksum is wrong
		return true
	})
	_, err := fastConfig.Read(context.Background(), srv.URL, window())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "snapshot: server "+srv.URL)
	assert.Contains(t, err.Error(), "remote read (/api/v1/read) of {")
	assert.Contains(t, err.Error(), "byte 0: frame checksum mismatch")
}

func costNote(t *testing.T, ev *snapshot.Evidence) string {
	t.Helper()
	for _, p := range ev.Problems {
		if p.Severity == snapshot.SeverityInfo {
			return p.Err.Error()
		}
	}
	t.Fatal("no cost note")
	return ""
}

// FuzzChunkedSeries: any body is read or refused with an error, never a
// panic. The fuzzer's message is framed with its true length and
// checksum (frame), or given as the whole body.
func FuzzChunkedSeries(f *testing.F) {
	c := chunkenc.NewXORChunk()
	app, _ := c.Appender()
	app.Append(0, 1000, 1)
	app.Append(0, 2000, 2)
	msg, _ := (&prompb.ChunkedReadResponse{ChunkedSeries: []*prompb.ChunkedSeries{{
		Labels: []prompb.Label{{Name: "__name__", Value: "x"}},
		Chunks: []prompb.Chunk{{Type: prompb.Chunk_XOR, Data: c.Bytes()}, {Type: prompb.Chunk_HISTOGRAM, Data: []byte{0}}},
	}}}).Marshal()
	f.Add(msg, true)
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, false)
	r := &reader{red: "http://x"}
	f.Fuzz(func(t *testing.T, msg []byte, frame bool) {
		body := msg
		if frame {
			body = binary.AppendUvarint(nil, uint64(len(msg)))
			body = binary.BigEndian.AppendUint32(body, crc32.Checksum(msg, crc32.MakeTable(crc32.Castagnoli)))
			body = append(body, msg...)
		}
		series, _, err := r.chunkedSeries(body, 0, math.MaxInt64)
		if err == nil {
			for _, s := range series {
				assert.Equal(t, len(s.t), len(s.v))
			}
		}
	})
}

// Series listed by their labels (Options.LabelsOnly) are asked for by
// remote read with the hint "series", labels only; a server that answers
// it with samples or chunks (it ignores the hint), or with no series, is
// asked with /api/v1/series instead, and the evidence is the same.
func TestListByRemoteRead(t *testing.T) {
	names := []string{"vllm:num_requests_running", "vllm:num_requests_waiting"}
	listed := func(t *testing.T, ev *snapshot.Evidence) {
		t.Helper()
		require.Len(t, ev.Targets, 2)
		for _, tg := range ev.Targets {
			f := tg.Family("vllm:num_requests_running")
			require.NotNil(t, f, tg.Name)
			require.Len(t, f.Series, 1)
			assert.Empty(t, f.Series[0].T, "listed by its labels")
			assert.Equal(t, tg.Name, f.Series[0].Labels.Get("pod"))
		}
	}
	var want *snapshot.Evidence
	for _, mode := range []string{"labels", "samples", "chunks", "empty"} {
		t.Run(mode, func(t *testing.T) {
			var reads, hinted, series atomic.Int64
			samples := remoteRead(t, &reads, "", names...)
			srv := serve(t, func(w http.ResponseWriter, r *http.Request, n int64) bool {
				switch r.URL.Path {
				case "/api/v1/series":
					w.Header().Set("Content-Type", "application/json")
					if strings.Contains(r.Form.Get("match[]"), `pod=""`) { // the series without a pod label: none
						fmt.Fprint(w, `{"status":"success","data":[]}`)
						return true
					}
					series.Add(1)
					fmt.Fprint(w, `{"status":"success","data":[{"__name__":"vllm:num_requests_running","pod":"a"},{"__name__":"vllm:num_requests_running","pod":"b"}]}`)
					return true
				case "/api/v1/read":
					b, err := io.ReadAll(r.Body)
					require.NoError(t, err)
					r.Body = io.NopCloser(bytes.NewReader(b))
					req := readRequest(t, r)
					q := req.Queries[0]
					if q.Hints == nil || q.Hints.Func != "series" {
						r.Body = io.NopCloser(bytes.NewReader(b))
						return samples(w, r, n)
					}
					hinted.Add(1)
					assert.Equal(t, []prompb.ReadRequest_ResponseType{prompb.ReadRequest_SAMPLES}, req.AcceptedResponseTypes)
					if mode == "chunks" {
						r.Body = io.NopCloser(bytes.NewReader(b))
						return samples(w, r, n)
					}
					var resp prompb.QueryResult
					for _, pod := range []string{"a", "b"} {
						if mode == "empty" { // the hint honoured, the series without samples dropped
							break
						}
						ls := map[string]string{"__name__": "vllm:num_requests_running", "pod": pod}
						if !matches(q.Matchers, ls) {
							continue
						}
						ts := &prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: ls["__name__"]}, {Name: "pod", Value: pod}}}
						if mode == "samples" {
							ts.Samples = []prompb.Sample{{Timestamp: t0.UnixMilli(), Value: 1}}
						}
						resp.Timeseries = append(resp.Timeseries, ts)
					}
					out, err := (&prompb.ReadResponse{Results: []*prompb.QueryResult{&resp}}).Marshal()
					require.NoError(t, err)
					w.Header().Set("Content-Type", "application/x-protobuf")
					_, err = w.Write(snappy.Encode(nil, out))
					require.NoError(t, err)
					return true
				}
				return samples(w, r, n)
			})
			opts := window()
			opts.LabelsOnly = []string{"vllm:num_requests_running"}
			ev, err := fastConfig.Read(context.Background(), srv.URL, opts)
			require.NoError(t, err)
			listed(t, ev)
			assert.Positive(t, reads.Load(), "the samples by remote read")
			assert.Positive(t, hinted.Load(), "the labels asked for by remote read")
			if mode == "labels" {
				assert.Zero(t, series.Load(), "no /api/v1/series")
				want = ev
				return
			}
			assert.Positive(t, series.Load(), "a listing answered with samples is asked again")
			require.NotNil(t, want)
			assert.Equal(t, want.Targets, ev.Targets)
		})
	}
}
