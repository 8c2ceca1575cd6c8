package promapi

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"mime"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/golang/snappy"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"go.yaml.in/yaml/v2"

	"github.com/whyslow/whyslow/snapshot"
)

// The remote read protocol (POST /api/v1/read, a snappy-compressed
// prompb.ReadRequest) hands over a series' samples as the TSDB stores
// them, XOR-encoded chunks: far fewer bytes than a query's JSON, and
// cheaper for both sides (figures in docs/inputs.md). Where it is not
// served (VictoriaMetrics answers 400, Thanos Query 404), the reader
// falls back to queries for the rest of the read.

// remoteState is what a reader knows of the server's remote read
// endpoint. The first read through it decides (probes); reads made
// meanwhile wait for the decision.
type remoteState struct {
	mu      sync.Mutex
	state   int           // remoteUnknown, remoteProbing, remoteOn or remoteOff
	decided chan struct{} // closed when a probe ends
	why     string        // why remoteOff
	reads   int           // units read by remote read
}

const (
	remoteUnknown = iota
	remoteProbing
	remoteOn
	remoteOff
)

// use says whether the next unit is read by remote read, and whether
// this read is the probe that decides (then the caller must call done).
func (s *remoteState) use(ctx context.Context) (use, probe bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		switch s.state {
		case remoteOn:
			return true, false
		case remoteOff:
			return false, false
		case remoteUnknown:
			s.state, s.decided = remoteProbing, make(chan struct{})
			return true, true
		}
		ch := s.decided
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			s.mu.Lock()
			return false, false
		}
		s.mu.Lock()
	}
}

// done ends a probe: state is remoteOn, remoteOff (with why) or
// remoteUnknown (the probe failed on its own account: the next read
// probes again).
func (s *remoteState) done(state int, why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state, s.why = state, why
	close(s.decided)
}

// read counts a unit read by remote read.
func (s *remoteState) read() {
	s.mu.Lock()
	s.reads++
	s.mu.Unlock()
}

// note says how the samples were read, for the cost note: "" when no
// unit was read.
func (s *remoteState) note(units int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.reads > 0 && s.reads == units:
		return "; samples by remote read (/api/v1/read)"
	case s.reads > 0:
		return fmt.Sprintf("; samples by remote read (/api/v1/read) for %d of the queries", s.reads)
	case s.state == remoteOff && units > 0:
		return "; samples by /api/v1/query: " + s.why
	}
	return ""
}

// doRemote reads u by remote read, the first read deciding whether the
// server serves it (the probe); false when u must be read by query.
func (r *reader) doRemote(ctx context.Context, u unit) (result, bool) {
	use, probe := r.remote.use(ctx)
	if !use {
		return result{}, false
	}
	if probe {
		if why := r.externalLabels(ctx); why != "" {
			r.remote.done(remoteOff, why)
			return result{}, false
		}
	}
	res, notServed := r.readRemote(ctx, u, probe)
	if probe {
		switch {
		case notServed != "":
			r.remote.done(remoteOff, notServed)
		case res.err != nil && res.split == nil:
			r.remote.done(remoteUnknown, "") // failed on its own account: the next read probes again
		default:
			r.remote.done(remoteOn, "")
		}
	}
	if notServed != "" {
		return result{}, false
	}
	if res.err == nil && res.split == nil {
		r.remote.read()
	}
	return res, true
}

// externalLabels returns why remote read must not be used ("" when it
// may): the server's configuration (/api/v1/status/config) gives external
// labels, which Prometheus adds to every series it sends by remote read
// but not to query results, so that they cannot be told from a series'
// own; or the configuration could not be read. A server without that
// endpoint (404: Mimir, Cortex) adds none.
func (r *reader) externalLabels(ctx context.Context) string {
	info := &attempt{}
	ctx, cancel := context.WithTimeout(context.WithValue(ctx, attemptKey{}, info), r.cfg.Timeout)
	defer cancel()
	const unread = "its configuration (/api/v1/status/config), which says whether it adds external labels to remote-read series, could not be read: "
	cfg, err := r.api.Config(ctx)
	if status, _, _, _ := info.get(); status == http.StatusNotFound {
		return ""
	}
	if err != nil {
		return unread + r.serverMessage(err)
	}
	var c struct {
		Global struct {
			ExternalLabels map[string]string `yaml:"external_labels"`
		} `yaml:"global"`
	}
	if err := yaml.Unmarshal([]byte(cfg.YAML), &c); err != nil {
		return unread + r.tr.sec.line(err.Error())
	}
	if n := len(c.Global.ExternalLabels); n > 0 {
		return fmt.Sprintf("the server has %d external labels, which it adds to every remote-read series", n)
	}
	return ""
}

// readRemote reads u with one remote read request: the series of u's
// selector with their samples in (u.from, u.to] within the read's range,
// as streamed XOR chunks, or as samples from a server that sends only
// those. notServed, when not "", says why u must be read by query: the
// server does not serve remote read, or not as whyslow can read it.
func (r *reader) readRemote(ctx context.Context, u unit, probe bool) (res result, notServed string) {
	lo, hi := max(u.from+1, r.start), min(u.to, r.end)
	what := fmt.Sprintf("remote read (/api/v1/read) of %s over [%s, %s]", r.selector(u), msTime(lo), msTime(hi))
	q := &prompb.Query{StartTimestampMs: lo, EndTimestampMs: hi}
	for _, m := range r.matchers(u) {
		q.Matchers = append(q.Matchers, &prompb.LabelMatcher{Type: prompb.LabelMatcher_Type(m.Type), Name: m.Name, Value: m.Value})
	}
	req := &prompb.ReadRequest{Queries: []*prompb.Query{q},
		AcceptedResponseTypes: []prompb.ReadRequest_ResponseType{prompb.ReadRequest_STREAMED_XOR_CHUNKS, prompb.ReadRequest_SAMPLES}}
	data, err := req.Marshal()
	if err != nil {
		return result{unit: u, err: err}, ""
	}
	body := snappy.Encode(nil, data)
	res = result{unit: u}
	err = r.retry(ctx, what, func(ctx context.Context) (v1.Warnings, error) {
		ct, b, why, err := r.post(ctx, body, probe)
		notServed = why
		switch {
		case err != nil || notServed != "":
			return nil, err
		case ct == "application/x-streamed-protobuf":
			res.series, res.problems, err = r.chunkedSeries(b, lo, hi)
		case ct == "application/x-protobuf":
			res.series, res.problems, err = r.sampleSeries(b, lo, hi)
		default:
			notServed = fmt.Sprintf("/api/v1/read answered %q, not protocol buffers", ct)
			return nil, nil
		}
		return nil, err // retry names the server and the read
	})
	switch {
	case notServed != "":
		return result{}, notServed
	case errors.Is(err, errSplit):
		return r.splitOrFail(u, what, err), ""
	case err != nil:
		return result{unit: u, err: err}, ""
	}
	return res, ""
}

// post sends a remote read request (body, snappy-compressed) and returns
// the media type and body of a 2xx answer; notServed, when not "", says
// why the server must be read by query instead (servesNot); another
// error status is an error.
func (r *reader) post(ctx context.Context, body []byte, probe bool) (ct string, b []byte, notServed string, err error) {
	hr, err := http.NewRequest(http.MethodPost, r.client.URL("/api/v1/read", nil).String(), bytes.NewReader(body))
	if err != nil {
		return "", nil, "", err
	}
	hr.Header.Set("Content-Encoding", "snappy")
	hr.Header.Set("Content-Type", "application/x-protobuf")
	hr.Header.Set("X-Prometheus-Remote-Read-Version", "0.1.0")
	resp, b, err := r.client.Do(ctx, hr)
	if err != nil {
		return "", nil, "", err
	}
	switch {
	case resp.StatusCode/100 != 2 && servesNot(resp.StatusCode, probe):
		return "", nil, fmt.Sprintf("HTTP %d at /api/v1/read: %s", resp.StatusCode, r.tr.sec.line(string(b))), nil
	case resp.StatusCode/100 != 2:
		return "", nil, "", fmt.Errorf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(b)))
	}
	ct, _, _ = mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return ct, b, "", nil
}

// servesNot says whether an error status of /api/v1/read means that the
// server does not serve remote read: no such path (404, 405, 501), or a
// request it cannot take (400: VictoriaMetrics' "unsupported path", 406,
// 415); on the first read (probe), any 4xx but a request too large (413,
// 422) or too many (429): a proxy in front of the server may refuse the
// path (401, 403) and let queries through. A query then reads the unit,
// and says why if it too fails.
func servesNot(status int, probe bool) bool {
	switch status {
	case http.StatusBadRequest, http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusNotAcceptable,
		http.StatusUnsupportedMediaType, http.StatusNotImplemented:
		return true
	case http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity, http.StatusTooManyRequests:
		return false
	}
	return probe && status/100 == 4
}

// chunkedSeries reads a STREAMED_XOR_CHUNKS body: frames of a uvarint
// length, a big-endian CRC-32 (Castagnoli) of the message and a
// prompb.ChunkedReadResponse holding whole series or a part of one (a
// series' chunks may span frames, and end before the next series).
func (r *reader) chunkedSeries(body []byte, lo, hi int64) ([]series, []snapshot.Problem, error) {
	table := crc32.MakeTable(crc32.Castagnoli)
	var out []series
	native := map[string]int{} // native histogram samples dropped, by family
	var it chunkenc.Iterator
	var floats []chunkenc.Chunk
	var resp prompb.ChunkedReadResponse
	for off := 0; off < len(body); {
		size, n := binary.Uvarint(body[off:])
		if n <= 0 || size > uint64(len(body)-off-n) || len(body)-off-n-int(size) < 4 {
			return nil, nil, fmt.Errorf("byte %d: a frame cut short or of a bad length", off)
		}
		sum := binary.BigEndian.Uint32(body[off+n:])
		msg := body[off+n+4 : off+n+4+int(size)]
		if crc32.Checksum(msg, table) != sum {
			return nil, nil, fmt.Errorf("byte %d: frame checksum mismatch", off)
		}
		resp.Reset()
		if err := resp.Unmarshal(msg); err != nil {
			return nil, nil, fmt.Errorf("byte %d: %w", off, err)
		}
		off += n + 4 + int(size)
		for _, cs := range resp.ChunkedSeries {
			lset := protoLabels(cs.Labels)
			if len(out) == 0 || !labels.Equal(lset, out[len(out)-1].lset) {
				out = append(out, series{lset: lset})
			} // else the series goes on from the last frame
			s := &out[len(out)-1]
			floats, n := floats[:0], 0
			for _, c := range cs.Chunks {
				var enc chunkenc.Encoding
				switch c.Type {
				case prompb.Chunk_XOR:
					enc = chunkenc.EncXOR
				case prompb.Chunk_HISTOGRAM:
					enc = chunkenc.EncHistogram
				case prompb.Chunk_FLOAT_HISTOGRAM:
					enc = chunkenc.EncFloatHistogram
				default:
					return nil, nil, fmt.Errorf("series %s: chunk encoding %d unknown", lset, c.Type)
				}
				if len(c.Data) < 2 { // chunkenc reads a 2-byte header unchecked
					return nil, nil, fmt.Errorf("series %s: a chunk of %d bytes", lset, len(c.Data))
				}
				ch, err := chunkenc.FromData(enc, c.Data)
				if err != nil {
					return nil, nil, fmt.Errorf("series %s: %w", lset, err)
				}
				if enc != chunkenc.EncXOR {
					native[snapshot.FamilyBaseName(lset.Get(model.MetricNameLabel))] += ch.NumSamples()
					continue
				}
				// A sample takes at least one bit: a header claiming
				// more does not reserve memory for them.
				floats, n = append(floats, ch), n+min(ch.NumSamples(), 8*len(c.Data))
			}
			s.t, s.v = slices.Grow(s.t, n), slices.Grow(s.v, n)
			for _, ch := range floats {
				it = ch.Iterator(it)
				for it.Next() == chunkenc.ValFloat {
					s.add(it.At())
				}
				if err := it.Err(); err != nil {
					return nil, nil, fmt.Errorf("series %s: %w", lset, err)
				}
			}
		}
	}
	return r.kept(out, native, lo, hi)
}

// sampleSeries reads a SAMPLES body: a snappy-compressed
// prompb.ReadResponse.
func (r *reader) sampleSeries(body []byte, lo, hi int64) ([]series, []snapshot.Problem, error) {
	raw, err := snappy.Decode(nil, body)
	if err != nil {
		return nil, nil, err
	}
	var resp prompb.ReadResponse
	if err := resp.Unmarshal(raw); err != nil {
		return nil, nil, err
	}
	var out []series
	native := map[string]int{}
	for _, qr := range resp.Results {
		for _, ts := range qr.Timeseries {
			s := series{lset: protoLabels(ts.Labels)}
			for _, sp := range ts.Samples {
				s.add(sp.Timestamp, sp.Value)
			}
			if len(ts.Histograms) > 0 {
				native[snapshot.FamilyBaseName(s.lset.Get(model.MetricNameLabel))] += len(ts.Histograms)
			}
			out = append(out, s)
		}
	}
	return r.kept(out, native, lo, hi)
}

// kept keeps of out the samples in [lo, hi] but staleness markers, and
// the series with a name and samples left; the native histogram samples
// dropped, by family, are problems, as doQuery says them.
func (r *reader) kept(out []series, native map[string]int, lo, hi int64) ([]series, []snapshot.Problem, error) {
	for i := range out {
		out[i].keep(lo, hi)
	}
	out = slices.DeleteFunc(out, func(s series) bool { return len(s.t) == 0 || s.lset.Get(model.MetricNameLabel) == "" })
	var problems []snapshot.Problem
	for _, f := range slices.Sorted(maps.Keys(native)) {
		problems = append(problems, snapshot.Problem{Severity: snapshot.SeverityError, File: r.red, Offset: -1, Family: f,
			Err: fmt.Errorf("%w: %d samples of %s dropped", ErrNativeHistogram, native[f], f)})
	}
	return out, problems, nil
}

func protoLabels(ls []prompb.Label) labels.Labels {
	b := labels.NewScratchBuilder(len(ls))
	for _, l := range ls {
		b.Add(l.Name, l.Value)
	}
	b.Sort()
	return b.Labels()
}

// listRemote lists u's series with a sample in [lo, hi] by remote read,
// asking for their labels only: the hint "series", which Prometheus
// answers as /api/v1/series does, from the index without reading a
// chunk, as protocol buffers. ok is false where u must be listed with
// /api/v1/series: remote read is not used (Config.QueryOnly, a server
// that does not serve it, external labels), the read failed, the answer
// is empty, or the server sent samples, so ignores the hint (every later
// listing then goes by /api/v1/series too).
func (r *reader) listRemote(ctx context.Context, u unit, lo, hi int64) (ls []labels.Labels, ok bool) {
	if r.cfg.QueryOnly || r.noListRead.Load() {
		return nil, false
	}
	use, probe := r.remote.use(ctx)
	if !use {
		return nil, false
	}
	if probe {
		if why := r.externalLabels(ctx); why != "" {
			r.remote.done(remoteOff, why)
			return nil, false
		}
	}
	ls, notServed, err := r.listRead(ctx, u, lo, hi, probe)
	if probe {
		switch {
		case notServed != "":
			r.remote.done(remoteOff, notServed)
		case err != nil:
			r.remote.done(remoteUnknown, "") // the next read probes again
		default:
			r.remote.done(remoteOn, "")
		}
	}
	// An empty answer is asked again of /api/v1/series (cheap where the
	// listing is empty): a server might honour the hint and then drop the
	// series it holds no samples of.
	return ls, notServed == "" && err == nil && len(ls) > 0
}

// listRead is listRemote's request: the series' labels, nil where the
// server sent samples (or chunks); notServed says why remote read must
// not be used.
func (r *reader) listRead(ctx context.Context, u unit, lo, hi int64, probe bool) (ls []labels.Labels, notServed string, err error) {
	q := &prompb.Query{StartTimestampMs: lo, EndTimestampMs: hi, Hints: &prompb.ReadHints{Func: "series", StartMs: lo, EndMs: hi}}
	for _, m := range r.matchers(u) {
		q.Matchers = append(q.Matchers, &prompb.LabelMatcher{Type: prompb.LabelMatcher_Type(m.Type), Name: m.Name, Value: m.Value})
	}
	req := &prompb.ReadRequest{Queries: []*prompb.Query{q}, AcceptedResponseTypes: []prompb.ReadRequest_ResponseType{prompb.ReadRequest_SAMPLES}}
	data, err := req.Marshal()
	if err != nil {
		return nil, "", err
	}
	body := snappy.Encode(nil, data)
	what := fmt.Sprintf("remote read (/api/v1/read) of the labels of %s over [%s, %s]", r.selector(u), msTime(lo), msTime(hi))
	err = r.retry(ctx, what, func(ctx context.Context) (v1.Warnings, error) {
		ct, b, why, err := r.post(ctx, body, probe)
		notServed = why
		switch {
		case err != nil || notServed != "":
			return nil, err
		case ct == "application/x-streamed-protobuf": // samples, which were not asked for
			r.noListRead.Store(true)
			return nil, nil
		case ct != "application/x-protobuf":
			notServed = fmt.Sprintf("/api/v1/read answered %q, not protocol buffers", ct)
			return nil, nil
		}
		raw, err := snappy.Decode(nil, b)
		if err != nil {
			return nil, err
		}
		var rr prompb.ReadResponse
		if err := rr.Unmarshal(raw); err != nil {
			return nil, err
		}
		ls = []labels.Labels{}
		for _, qr := range rr.Results {
			for _, ts := range qr.Timeseries {
				if len(ts.Samples) > 0 || len(ts.Histograms) > 0 {
					r.noListRead.Store(true)
					ls = nil
					return nil, nil
				}
				ls = append(ls, protoLabels(ts.Labels))
			}
		}
		return nil, nil
	})
	return ls, notServed, err
}
