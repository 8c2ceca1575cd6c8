package promapi

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/snapshot"
)

// t0 is the start of the fake server's data: one sample every 15 s for
// 10 minutes, for two pods.
var t0 = time.Date(2026, 9, 22, 10, 0, 0, 0, time.UTC)

// fakeProm answers the three endpoints the reader uses from a fixed
// fleet: a gauge vllm:num_requests_waiting for pods a and b. hook, when
// set, may answer a query instead (returning true).
type fakeProm struct {
	queries atomic.Int64
	hook    hook
}

// hook may answer request r, the n-th, instead of fakeProm (returning true).
type hook func(w http.ResponseWriter, r *http.Request, n int64) bool

// serve starts a fakeProm with hook h (nil for none), closed at the end of
// the test.
func serve(t *testing.T, h hook) *httptest.Server {
	srv := httptest.NewServer(&fakeProm{hook: h})
	t.Cleanup(srv.Close)
	return srv
}

// onQuery is a hook that asks answer about the queries (/api/v1/query)
// only.
func onQuery(answer func(w http.ResponseWriter, r *http.Request) bool) hook {
	return func(w http.ResponseWriter, r *http.Request, _ int64) bool {
		return r.URL.Path == "/api/v1/query" && answer(w, r)
	}
}

// sampleLimit answers as Prometheus does a query that would load too many
// samples.
func sampleLimit(w http.ResponseWriter) {
	w.WriteHeader(http.StatusUnprocessableEntity)
	fmt.Fprint(w, `{"status":"error","errorType":"execution","error":"query processing would load too many samples into memory in query execution"}`)
}

func (f *fakeProm) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	if f.hook != nil && f.hook(w, r, f.queries.Add(1)) {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.URL.Path == "/api/v1/label/__name__/values":
		fmt.Fprint(w, `{"status":"success","data":["vllm:num_requests_waiting"]}`)
	case r.URL.Path == "/api/v1/label/pod/values":
		fmt.Fprint(w, `{"status":"success","data":["a","b"]}`)
	case strings.HasPrefix(r.URL.Path, "/api/v1/label/"):
		fmt.Fprint(w, `{"status":"success","data":[]}`)
	case r.URL.Path == "/api/v1/query":
		at, _ := time.Parse(time.RFC3339, "2000-01-01T00:00:00Z")
		if sec, err := parseSeconds(r.Form.Get("time")); err == nil {
			at = sec
		}
		q := r.Form.Get("query")
		name := "vllm:num_requests_waiting"
		if m := regexp.MustCompile(`__name__="([^"]+)"`).FindStringSubmatch(q); m != nil {
			name = m[1]
		}
		i := strings.LastIndex(q, "[")
		d, _ := time.ParseDuration(strings.TrimSuffix(q[i+1:], "]"))
		var res []map[string]any
		for _, pod := range []string{"a", "b"} {
			if !strings.Contains(q, `"`+pod+`"`) && !strings.Contains(q, pod+"|") && !strings.Contains(q, "|"+pod) {
				continue
			}
			var vals [][]any
			for k := 0; k <= 40; k++ {
				ts := t0.Add(time.Duration(k) * 15 * time.Second)
				if ts.After(at) || !ts.After(at.Add(-d)) {
					continue
				}
				vals = append(vals, []any{float64(ts.Unix()), fmt.Sprint(k)})
			}
			if len(vals) > 0 {
				res = append(res, map[string]any{"metric": map[string]string{"__name__": name, "pod": pod}, "values": vals})
			}
		}
		b, _ := json.Marshal(map[string]any{"status": "success", "data": map[string]any{"resultType": "matrix", "result": res}})
		w.Write(b)
	default:
		http.NotFound(w, r)
	}
}

func parseSeconds(s string) (time.Time, error) {
	var f float64
	if _, err := fmt.Sscanf(s, "%g", &f); err != nil {
		return time.Time{}, err
	}
	return time.UnixMilli(int64(f * 1000)).UTC(), nil
}

// fastConfig retries quickly.
var fastConfig = Config{Backoff: 10 * time.Millisecond, MaxBackoff: 2 * time.Second, Timeout: 5 * time.Second, MaxRange: 4 * time.Minute}

func window() snapshot.Options {
	return snapshot.Options{Start: t0, End: t0.Add(10 * time.Minute)}
}

// requireFleet checks the evidence holds both pods with all 41 samples.
func requireFleet(t *testing.T, ev *snapshot.Evidence) {
	t.Helper()
	require.Len(t, ev.Targets, 2)
	for _, tg := range ev.Targets {
		f := tg.Family("vllm:num_requests_waiting")
		require.NotNil(t, f, tg.Name)
		require.Len(t, f.Series, 1)
		s := f.Series[0]
		require.Len(t, s.T, 41, tg.Name)
		assert.Equal(t, t0.UnixMilli(), s.T[0], "the sample at Start is read")
		assert.Equal(t, 40.0, s.V[40])
		assert.Equal(t, snapshot.TimeFromTSDB, tg.Scrapes[0].TimeFrom)
	}
}

// readWholeFleet reads url with cfg over window() and requires both pods
// whole, with no problem that lost data.
func readWholeFleet(t *testing.T, cfg Config, url string) *snapshot.Evidence {
	t.Helper()
	ev, err := cfg.Read(context.Background(), url, window())
	require.NoError(t, err)
	assert.False(t, ev.Partial(), "%v", ev.Problems)
	requireFleet(t, ev)
	return ev
}

func TestReadFake(t *testing.T) {
	srv := serve(t, nil)
	ev := readWholeFleet(t, fastConfig, srv.URL)
	assert.Equal(t, []string{srv.URL}, ev.Sources)
}

// The read says what it cost: the queries, lookups and HTTP requests the
// server answered and the bytes it sent, as a note.
func TestReadCostNote(t *testing.T) {
	var requests, written atomic.Int64
	fake := &fakeProm{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		fake.ServeHTTP(countingWriter{w, &written}, r)
	}))
	t.Cleanup(srv.Close)
	ev := readWholeFleet(t, fastConfig, srv.URL)
	var notes []string
	for _, p := range ev.Problems {
		if p.Severity == snapshot.SeverityInfo {
			notes = append(notes, p.Err.Error())
		}
	}
	require.Len(t, notes, 1)
	// One family over 11 minutes in chunks of 4 (the first starts
	// Overfetch early), for the batch of pods and the series without a
	// pod; the metric names and the pods are listed first. The fake
	// serves neither remote read nor its configuration: the first read
	// asks for both (404), then the rest are queries.
	assert.Equal(t, fmt.Sprintf("read with 6 queries and 2 label lookups: 10 HTTP requests, %d bytes of responses received"+
		"; samples by /api/v1/query: HTTP 404 at /api/v1/read: 404 page not found", written.Load()), notes[0])
	assert.EqualValues(t, 10, requests.Load())
	assert.Equal(t, "12.3 MB", byteSize(12_345_678))
}

// countingWriter counts the bytes of a response body.
type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (w countingWriter) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	w.n.Add(int64(n))
	return n, err
}

// Registered: snapshot.Read reads a URL with the Config of the context.
func TestSnapshotReadURL(t *testing.T) {
	srv := serve(t, nil)
	var progress []snapshot.Progress
	opts := window()
	opts.Progress = func(p snapshot.Progress) { progress = append(progress, p) }
	ev, err := snapshot.Read(WithConfig(context.Background(), fastConfig), []string{srv.URL + "/?secret=1"}, opts)
	require.NoError(t, err)
	requireFleet(t, ev)
	assert.Equal(t, []string{srv.URL + "/?xxxxx"}, ev.Sources)
	require.NotEmpty(t, progress)
	last := progress[len(progress)-1]
	assert.Equal(t, last.Total, last.Done)
	assert.Equal(t, "server queries", last.What)
}

func TestConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	l.Close()
	_, err = fastConfig.Read(context.Background(), "http://user:hunter2@"+addr, window())
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrServer)
	assert.Contains(t, err.Error(), "refused")
	assert.Contains(t, err.Error(), "after 4 tries")
	assert.NotContains(t, err.Error(), "hunter2")
}

func TestServerErrorThenSuccess(t *testing.T) {
	var fails atomic.Int64
	srv := serve(t, onQuery(func(w http.ResponseWriter, r *http.Request) bool {
		if fails.Add(1) > 2 {
			return false
		}
		http.Error(w, "upstream hiccup", http.StatusInternalServerError)
		return true
	}))
	readWholeFleet(t, fastConfig, srv.URL)
}

// An answer cut short after its status (a proxy or a load balancer that
// drops the connection mid-body) is retried, as a refused connection is.
func TestAnswerCutShortThenSuccess(t *testing.T) {
	var cuts atomic.Int64
	srv := serve(t, onQuery(func(w http.ResponseWriter, r *http.Request) bool {
		if cuts.Add(1) > 2 {
			return false
		}
		// Fewer bytes than the length said: the server closes the
		// connection, and the client reads an unexpected EOF.
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "1000")
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"matrix","result":[`)
		return true
	}))
	readWholeFleet(t, fastConfig, srv.URL)
	assert.Greater(t, cuts.Load(), int64(2), "the cut answers were asked again")
}

func TestTooManyRequestsRetryAfter(t *testing.T) {
	var first atomic.Int64
	var firstAt, againAt atomic.Int64
	srv := serve(t, onQuery(func(w http.ResponseWriter, r *http.Request) bool {
		if first.Add(1) == 1 {
			firstAt.Store(time.Now().UnixNano())
			w.Header().Set("Retry-After", "1")
			http.Error(w, "slow down", http.StatusTooManyRequests)
			return true
		}
		againAt.CompareAndSwap(0, time.Now().UnixNano())
		return false
	}))
	cfg := fastConfig
	cfg.Concurrency = 1
	ev, err := cfg.Read(context.Background(), srv.URL, window())
	require.NoError(t, err)
	requireFleet(t, ev)
	assert.GreaterOrEqual(t, time.Duration(againAt.Load()-firstAt.Load()), 900*time.Millisecond, "Retry-After honoured")
}

func TestHangingServerTimesOut(t *testing.T) {
	stop := make(chan struct{})
	srv := serve(t, onQuery(func(w http.ResponseWriter, r *http.Request) bool {
		if !strings.Contains(r.Form.Get("query"), `"b"`) {
			return false
		}
		select {
		case <-stop:
		case <-r.Context().Done():
		}
		return true
	}))
	defer close(stop)
	cfg := fastConfig
	cfg.Timeout = 200 * time.Millisecond
	cfg.Retries = 1
	cfg.TargetsPerQuery = 1
	begin := time.Now()
	ev, err := cfg.Read(context.Background(), srv.URL, window())
	require.NoError(t, err, "pod a is read")
	assert.Less(t, time.Since(begin), 10*time.Second)
	require.True(t, ev.Partial())
	assert.NotNil(t, ev.Target("a"))
	assert.Nil(t, ev.Target("b"))
	var found bool
	for _, p := range ev.Problems {
		if errors.Is(p, ErrServer) && strings.Contains(p.Error(), "no answer within 200ms") {
			found = true
			assert.Contains(t, p.Error(), `pod="b"`, "the problem names the query")
		}
	}
	assert.True(t, found, "%v", ev.Problems)
}

// A 422 sample-limit answer splits the query until it passes.
func TestSampleLimitSplits(t *testing.T) {
	srv := serve(t, onQuery(func(w http.ResponseWriter, r *http.Request) bool {
		q := r.Form.Get("query")
		d, _ := time.ParseDuration(strings.TrimSuffix(q[strings.LastIndex(q, "[")+1:], "]"))
		if !strings.Contains(q, "a|b") && d <= 150*time.Second {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		sampleLimit(w)
		return true
	}))
	readWholeFleet(t, fastConfig, srv.URL)
}

// A query too large at any size ends in a clear problem, not a loop.
func TestSampleLimitAlways(t *testing.T) {
	srv := serve(t, onQuery(func(w http.ResponseWriter, r *http.Request) bool {
		sampleLimit(w)
		return true
	}))
	_, err := fastConfig.Read(context.Background(), srv.URL, window())
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrTooLarge)
	assert.Contains(t, err.Error(), "too many samples")
	assert.Contains(t, err.Error(), "vllm:num_requests_waiting")
}

func TestMalformedJSON(t *testing.T) {
	srv := serve(t, onQuery(func(w http.ResponseWriter, r *http.Request) bool {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":`)
		return true
	}))
	_, err := fastConfig.Read(context.Background(), srv.URL, window())
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrServer)
	assert.Contains(t, err.Error(), "bad_response")
	assert.Contains(t, err.Error(), srv.URL)
}

func TestWrongToken(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request, _ int64) bool {
		if r.Header.Get("Authorization") != "Bearer right" || r.Header.Get("X-Scope-OrgID") != "tenant-1" {
			http.Error(w, "invalid token", http.StatusUnauthorized)
			return true
		}
		return false
	})
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	cfg := fastConfig
	cfg.HTTP = config.HTTPClientConfig{BearerTokenFile: tok, HTTPHeaders: &config.Headers{Headers: map[string]config.Header{"X-Scope-OrgID": {Values: []string{"tenant-1"}}}}}

	require.NoError(t, os.WriteFile(tok, []byte("wrong-secret\n"), 0o600))
	_, err := cfg.Read(context.Background(), srv.URL, window())
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrServer)
	assert.Contains(t, err.Error(), "401")
	assert.Contains(t, err.Error(), "invalid token")
	assert.NotContains(t, err.Error(), "wrong-secret")

	require.NoError(t, os.WriteFile(tok, []byte("right\n"), 0o600))
	ev, err := cfg.Read(context.Background(), srv.URL, window())
	require.NoError(t, err)
	requireFleet(t, ev)
}

// A response larger than the limit splits the query; one that stays too
// large for one pod over a second is a clear error.
func TestResponseTooLarge(t *testing.T) {
	srv := serve(t, nil)
	cfg := fastConfig
	cfg.MaxResponseBytes = 1200 // one pod over 4 minutes fits, two do not
	readWholeFleet(t, cfg, srv.URL)

	cfg.MaxResponseBytes = 60
	_, err := cfg.Read(context.Background(), srv.URL, window())
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrTooLarge)
	assert.Contains(t, err.Error(), "exceeds the size limit")
}

func TestRedact(t *testing.T) {
	assert.Equal(t, "https://xxxxx@mimir.example/prometheus?xxxxx", Redact("https://u:pw@mimir.example/prometheus?token=s3cret#frag"))
	assert.Equal(t, "http://prom:9090", Redact("http://prom:9090"))
	assert.True(t, IsURL("HTTPS://x"))
	assert.False(t, IsURL("/data/http://x"))
}

// TLS with a CA file and basic authentication with a password file, as
// Prometheus tooling configures them; without the CA the certificate is
// refused with a clear error.
func TestTLSAndBasicAuth(t *testing.T) {
	f := &fakeProm{hook: func(w http.ResponseWriter, r *http.Request, n int64) bool {
		if u, p, ok := r.BasicAuth(); !ok || u != "reader" || p != "pa55" {
			http.Error(w, "bad credentials", http.StatusUnauthorized)
			return true
		}
		return false
	}}
	srv := httptest.NewTLSServer(f)
	defer srv.Close()
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	require.NoError(t, os.WriteFile(ca, pemCert(srv), 0o644))
	pw := filepath.Join(dir, "pw")
	require.NoError(t, os.WriteFile(pw, []byte("pa55"), 0o600))

	cfg := fastConfig
	_, err := cfg.Read(context.Background(), srv.URL, window())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "certificate")
	assert.NotContains(t, err.Error(), "tries", "a certificate error is not retried")

	cfg.HTTP = config.HTTPClientConfig{TLSConfig: config.TLSConfig{CAFile: ca}, BasicAuth: &config.BasicAuth{Username: "reader", PasswordFile: pw}}
	ev, err := cfg.Read(context.Background(), srv.URL, window())
	require.NoError(t, err)
	requireFleet(t, ev)

	cfg.HTTP = config.HTTPClientConfig{TLSConfig: config.TLSConfig{InsecureSkipVerify: true}}
	_, err = cfg.Read(context.Background(), srv.URL, window())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "401")
	assert.NotContains(t, err.Error(), "pa55")
}

func pemCert(srv *httptest.Server) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}

// Cancelling the context stops a read in progress promptly.
func TestCancel(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	srv := serve(t, onQuery(func(w http.ResponseWriter, r *http.Request) bool {
		select {
		case <-stop:
		case <-r.Context().Done():
		}
		return true
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	begin := time.Now()
	_, err := fastConfig.Read(ctx, srv.URL, window())
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(begin), 3*time.Second)
}

// The samples kept from a server count against Limits.MaxMemory: past it
// the read stops with an error naming the limit and the server.
func TestMaxMemory(t *testing.T) {
	srv := httptest.NewServer(&fakeProm{})
	defer srv.Close()
	m := snapshot.NewMemoryBudget(0)
	opts := window()
	opts.Memory = m
	_, err := fastConfig.Read(context.Background(), srv.URL, opts)
	require.NoError(t, err)
	require.GreaterOrEqual(t, m.Used(), int64(2*41*snapshot.FloatSampleBytes))

	opts = window()
	opts.Limits.MaxMemory = 41 * snapshot.FloatSampleBytes // one pod's samples
	ev, err := fastConfig.Read(context.Background(), srv.URL, opts)
	require.Error(t, err)
	assert.Nil(t, ev)
	var le *snapshot.LimitError
	require.True(t, errors.As(err, &le), "%v", err)
	assert.Equal(t, "Limits.MaxMemory", le.Limit)
	assert.Contains(t, err.Error(), "server "+srv.URL)
	assert.Contains(t, err.Error(), "more than Limits.MaxMemory (656 B)")
}
