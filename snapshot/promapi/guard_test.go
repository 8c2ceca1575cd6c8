package promapi

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/prometheus/common/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/snapshot"
)

// manyPods is a hook that lists 40 pods, so that a read over 6 h plans
// 12 queries of 20 pods (and one of the series without a pod) each.
func manyPods(w http.ResponseWriter, r *http.Request, _ int64) bool {
	if r.URL.Path != "/api/v1/label/pod/values" {
		return false
	}
	pods := make([]string, 40)
	for i := range pods {
		pods[i] = fmt.Sprintf("%q", fmt.Sprintf("pod-%02d", i))
	}
	fmt.Fprintf(w, `{"status":"success","data":[%s]}`, strings.Join(pods, ","))
	return true
}

// A server whose every answer is larger than the limit, streamed or
// announced: the splitting stops at one pod over Config.MinRange after a
// few queries, and the error names that query and why.
func TestOversizeEverything(t *testing.T) {
	for _, tc := range []struct {
		name   string
		max    int64
		answer func(w http.ResponseWriter, r *http.Request)
		why    string
	}{
		{"streamed", 1000, func(w http.ResponseWriter, r *http.Request) {
			// An endless body: only the limit ends it.
			chunk := []byte(strings.Repeat(`[1758535200,"1"],`, 64))
			fmt.Fprint(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"vllm:num_requests_waiting"},"values":[`)
			for r.Context().Err() == nil {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}, "response exceeds the size limit (Config.MaxResponseBytes, 1000 bytes)"},
		{"announced", 1 << 20, func(w http.ResponseWriter, r *http.Request) {
			// 500 MB announced, 10 bytes sent, then a stall: the body
			// must not be waited for.
			w.Header().Set("Content-Length", fmt.Sprint(500<<20))
			fmt.Fprint(w, `{"status":"`)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}, "524288000 bytes announced, more than Config.MaxResponseBytes (1048576 bytes)"},
		{"sample limit", 0, func(w http.ResponseWriter, r *http.Request) {
			sampleLimit(w)
		}, "execution: query processing would load too many samples"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var queries atomic.Int64
			srv := serve(t, func(w http.ResponseWriter, r *http.Request, n int64) bool {
				if manyPods(w, r, n) {
					return true
				}
				if r.URL.Path != "/api/v1/query" {
					return false
				}
				queries.Add(1)
				tc.answer(w, r)
				return true
			})
			cfg := fastConfig
			cfg.MaxRange = 2 * time.Hour
			cfg.Timeout = 3 * time.Second
			cfg.MaxResponseBytes = tc.max
			// Three chunks of 2 h, once the first starts Overfetch early.
			opts := snapshot.Options{Start: t0.Add(time.Minute), End: t0.Add(6 * time.Hour)}
			begin := time.Now()
			_, err := cfg.Read(context.Background(), srv.URL+"/?key=s3cret", opts)
			require.Error(t, err)
			assert.Less(t, time.Since(begin), 10*time.Second)
			assert.ErrorIs(t, err, ErrTooLarge)
			// One worker splits 20 pods to one in 5 queries, then 2 h to
			// 1m52.5s in 7: with 3 workers, well under 3 x 12 queries.
			assert.LessOrEqual(t, queries.Load(), int64(50), "queries made")
			msg := err.Error()
			t.Log(msg)
			assert.Contains(t, msg, "/api/v1/query {__name__=\"vllm:num_requests_waiting\",pod=")
			assert.Contains(t, msg, "still too large for one pod (pod-")
			assert.Contains(t, msg, "over 1m52s500ms, the smallest query made")
			assert.Contains(t, msg, tc.why)
			assert.NotContains(t, msg, "s3cret")
		})
	}
}

// A query that fits only at one pod over 2 minutes is split down to it
// (and no further) and read whole.
func TestSplitFloor(t *testing.T) {
	srv := serve(t, onQuery(func(w http.ResponseWriter, r *http.Request) bool {
		q := r.Form.Get("query")
		d, _ := time.ParseDuration(strings.TrimSuffix(q[strings.LastIndex(q, "[")+1:], "]"))
		if strings.Contains(q, "a|b") || d > 2*time.Minute {
			sampleLimit(w)
			return true
		}
		assert.GreaterOrEqual(t, d, time.Minute, "no query below Config.MinRange: %s", q)
		return false
	}))
	cfg := fastConfig
	cfg.MaxRange = 10 * time.Minute
	readWholeFleet(t, cfg, srv.URL)

	cfg.MinRange = 3 * time.Minute // 2 minutes are now too short to query
	_, err := cfg.Read(context.Background(), srv.URL, window())
	require.ErrorIs(t, err, ErrTooLarge)
	assert.Contains(t, err.Error(), "over 5m, the smallest query made")
}

// A server that sends half a body and stalls: the read ends at
// Config.Deadline, whatever the per-request timeout and retries would
// allow, and says what was done; a Retry-After longer than the deadline
// is cut short too.
func TestDeadline(t *testing.T) {
	halfBody := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":`)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}
	for _, tc := range []struct {
		name    string
		path    string // the endpoint that misbehaves
		answer  func(w http.ResponseWriter, r *http.Request)
		timeout time.Duration
		did     string
	}{
		{"half body", "/api/v1/query", halfBody, 200 * time.Millisecond, "queries done"},
		{"half body on a lookup", "/api/v1/label/pod/values", halfBody, 200 * time.Millisecond, "while listing metric names and targets (1 lookups done)"},
		{"retry after", "/api/v1/query", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "60")
			http.Error(w, "busy", http.StatusServiceUnavailable)
		}, 5 * time.Second, "queries done, 0 of them failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := serve(t, func(w http.ResponseWriter, r *http.Request, _ int64) bool {
				if r.URL.Path != tc.path {
					return false
				}
				tc.answer(w, r)
				return true
			})
			cfg := fastConfig
			cfg.MaxRange = time.Minute // 11 chunks x 2 batches: about 6 s of timeouts
			cfg.Timeout = tc.timeout
			cfg.MaxBackoff = time.Minute
			cfg.Deadline = time.Second
			cfg.Retries = 10
			begin := time.Now()
			_, err := cfg.Read(context.Background(), srv.URL, window())
			elapsed := time.Since(begin)
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrDeadline)
			assert.GreaterOrEqual(t, elapsed, 900*time.Millisecond)
			assert.Less(t, elapsed, 3*time.Second)
			assert.Contains(t, err.Error(), "deadline for reading the server passed (Config.Deadline 1s) after 1")
			assert.Contains(t, err.Error(), "HTTP requests sent")
			assert.Contains(t, err.Error(), tc.did)
		})
	}
}

// echoServer answers every request 400 with what it received: its
// headers, query and form, as a proxy that reflects the request does.
func echoServer(t *testing.T, jsonError bool) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		var b strings.Builder
		fmt.Fprintf(&b, "you sent %s %s\ntenant %s\n", r.Method, r.URL.RequestURI(), r.Header.Get("X-Scope-OrgID"))
		names := make([]string, 0, len(r.Header))
		for k := range r.Header {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			fmt.Fprintf(&b, "%s=%s\r\n", k, strings.Join(r.Header[k], ","))
		}
		if u, p, ok := r.BasicAuth(); ok {
			fmt.Fprintf(&b, "\x1b[31muser %s password %s\x1b[0m\n", u, p)
		}
		b.WriteString(strings.Repeat("padding ", 2000))
		if jsonError {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			msg, _ := json.Marshal(b.String())
			fmt.Fprintf(w, `{"status":"error","errorType":"bad_data","error":%s}`, msg)
			return
		}
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, b.String())
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A server's error message is shown on one short line with every secret
// the read holds redacted, however the server echoes them.
func TestErrorBodyRedacted(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tok, []byte("tok/en+s3cret=\n"), 0o600))
	pw := filepath.Join(dir, "pw")
	require.NoError(t, os.WriteFile(pw, []byte("pa55-word"), 0o600))
	apiKey := filepath.Join(dir, "apikey")
	require.NoError(t, os.WriteFile(apiKey, []byte("key-from-file"), 0o600))
	headers := &config.Headers{Headers: map[string]config.Header{
		"X-Scope-OrgID": {Values: []string{"team-a"}},
		"X-Api-Key":     {Values: []string{"inline-key"}},
		"X-Other":       {Secrets: []config.Secret{"secret-header"}, Files: []string{apiKey}},
	}}
	for _, tc := range []struct {
		name    string
		http    config.HTTPClientConfig
		user    string // userinfo of the address
		query   string
		secrets []string
	}{
		{"bearer token file", config.HTTPClientConfig{BearerTokenFile: tok, HTTPHeaders: headers}, "", "",
			[]string{"tok/en+s3cret=", "tok%2Fen%2Bs3cret%3D", "inline-key", "secret-header", "key-from-file"}},
		{"basic auth", config.HTTPClientConfig{BasicAuth: &config.BasicAuth{Username: "reader", PasswordFile: pw}}, "", "",
			[]string{"pa55-word", base64.StdEncoding.EncodeToString([]byte("reader:pa55-word"))}},
		{"inline bearer", config.HTTPClientConfig{BearerToken: "inline-bearer"}, "", "",
			[]string{"inline-bearer"}},
		{"address", config.HTTPClientConfig{}, "admin:hunter2@", "?api_key=qs-secret",
			[]string{"hunter2", base64.StdEncoding.EncodeToString([]byte("admin:hunter2")), "qs-secret"}},
	} {
		for _, jsonError := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s json=%v", tc.name, jsonError), func(t *testing.T) {
				srv := echoServer(t, jsonError)
				cfg := fastConfig
				cfg.HTTP = tc.http
				addr := strings.Replace(srv.URL, "http://", "http://"+tc.user, 1) + "/" + tc.query
				_, err := cfg.Read(context.Background(), addr, window())
				require.Error(t, err)
				msg := err.Error()
				t.Log(msg)
				if !jsonError {
					assert.Contains(t, msg, "400")
				}
				assert.Contains(t, msg, "you sent")
				assert.Contains(t, msg, "xxxxx")
				for _, s := range tc.secrets {
					assert.NotContains(t, msg, s)
				}
				assert.NotContains(t, msg, "\n")
				assert.NotContains(t, msg, "\x1b")
				assert.Less(t, utf8.RuneCountInString(msg), 600, msg)
				if tc.http.HTTPHeaders != nil {
					assert.Contains(t, msg, "tenant team-a", "a tenant is no secret")
				}
			})
		}
	}
}

// The round tripper notes what it sent as secrets, with the encodings a
// server may echo them in.
func TestSecretsLine(t *testing.T) {
	s := &secrets{}
	s.addAuthorization("Basic " + base64.StdEncoding.EncodeToString([]byte("u:p@ss w\"rd")))
	for _, tc := range []struct{ in, want string }{
		{`got p@ss w"rd`, "got xxxxx"},
		{`got "p@ss w\"rd"`, `got "xxxxx"`},
		{"got p%40ss+w%22rd", "got xxxxx"},
		{"got u:p@ss w\"rd", "got xxxxx"},
		{"a\n\tb\x00\x1b[0mc  d", "a b [0mc d"},
		{strings.Repeat("é", 400), strings.Repeat("é", maxMessage) + "…"},
		{"bad \xff utf8", "bad \uFFFD utf8"},
		{`remoteAddr: "127.0.0.1:35874"; requestURI: /api/v1/read; unsupported path requested: "/api/v1/read"` + "\n",
			`unsupported path requested: "/api/v1/read"`},
		{`remoteAddr: "10.0.0.1:4711, X-Forwarded-For: \"a\" 10.1.1.1"; requestURI: /api/v1/query_range?query=up; error when executing query`,
			`error when executing query`},
		{`a remoteAddr: "x"; requestURI: /; stays`, `a remoteAddr: "x"; requestURI: /; stays`},
	} {
		assert.Equal(t, tc.want, s.line(tc.in), "%q", tc.in)
	}
}

// recorder is a fake Prometheus that records the credentials it received.
type recorder struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string // Authorization, X-Api-Key, X-Scope-OrgID of each request
}

func newRecorder(t *testing.T, needAuth bool) *recorder {
	rec := &recorder{}
	rec.Server = serve(t, func(w http.ResponseWriter, r *http.Request, _ int64) bool {
		rec.mu.Lock()
		rec.seen = append(rec.seen, r.Header.Get("Authorization")+" "+r.Header.Get("X-Api-Key")+" "+r.Header.Get("X-Scope-OrgID"))
		rec.mu.Unlock()
		if needAuth && r.Header.Get("Authorization") == "" {
			http.Error(w, "who are you", http.StatusUnauthorized)
			return true
		}
		return false
	})
	return rec
}

func (rec *recorder) requests() []string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return slices.Clone(rec.seen)
}

// redirector answers every request with a 307 to target, path and query
// kept.
func redirector(t *testing.T, target string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// Credentials go only to the scheme, host and port of the address: a
// redirect to another port of the same host is followed without them
// (the tenant header kept); a redirect within the origin keeps them.
func TestRedirectCredentials(t *testing.T) {
	tok := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tok, []byte("s3cret-token"), 0o600))
	cfg := fastConfig
	cfg.HTTP = config.HTTPClientConfig{BearerTokenFile: tok, HTTPHeaders: &config.Headers{Headers: map[string]config.Header{
		"X-Scope-OrgID": {Values: []string{"team-a"}},
		"X-Api-Key":     {Values: []string{"api-key"}},
	}}}

	target := newRecorder(t, false)
	front := redirector(t, target.URL)
	ev, err := cfg.Read(context.Background(), front.URL, window())
	require.NoError(t, err)
	requireFleet(t, ev)
	seen := target.requests()
	require.NotEmpty(t, seen)
	for _, s := range seen {
		assert.Equal(t, "  team-a", s, "the redirect target got credentials")
	}

	// Basic authentication from the address's user information.
	target = newRecorder(t, false)
	front = redirector(t, target.URL)
	u, _ := url.Parse(front.URL)
	u.User = url.UserPassword("admin", "hunter2")
	ev, err = fastConfig.Read(context.Background(), u.String(), window())
	require.NoError(t, err)
	requireFleet(t, ev)
	for _, s := range target.requests() {
		assert.Equal(t, "  ", s, "the redirect target got credentials")
	}

	// The target wants credentials: the error says why it got none.
	target = newRecorder(t, true)
	front = redirector(t, target.URL)
	_, err = cfg.Read(context.Background(), front.URL, window())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "401")
	assert.Contains(t, err.Error(), "redirected to "+target.URL+"/api/v1/label/__name__/values, another origin: no credentials sent there")
	assert.NotContains(t, err.Error(), "s3cret-token")

	// Within the origin, credentials follow.
	same := newRecorder(t, true)
	mux := http.NewServeMux()
	mux.Handle("/prefix/", http.StripPrefix("/prefix", same.Config.Handler))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/prefix"+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	ev, err = cfg.Read(context.Background(), srv.URL, window())
	require.NoError(t, err)
	requireFleet(t, ev)
	for _, s := range same.requests() {
		assert.Equal(t, "Bearer s3cret-token api-key team-a", s)
	}
}

// Ten redirects are followed at most.
func TestRedirectLoop(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		http.Redirect(w, r, r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}))
	t.Cleanup(srv.Close)
	_, err := fastConfig.Read(context.Background(), srv.URL, window())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "stopped after 10 redirects")
	assert.True(t, errors.Is(err, ErrServer), "%v", err)
}

// errAfter is a reader of data that fails with err at its end.
type errAfter struct {
	data []byte
	err  error
}

func (e *errAfter) Read(p []byte) (int, error) {
	if len(e.data) == 0 {
		return 0, e.err
	}
	n := copy(p, e.data[:min(len(e.data), 1000)])
	e.data = e.data[n:]
	return n, nil
}

// readBody reads bodies of every size whole, of known or unknown length,
// and passes on a read error, a truncated body's included.
func TestReadBody(t *testing.T) {
	for _, size := range []int{0, 1, 16 << 10, 16<<10 + 1, 5<<20 + 3} {
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(i * 7)
		}
		for _, n := range []int64{-1, int64(size)} {
			got, err := readBody(&errAfter{data: slices.Clone(data), err: io.EOF}, n)
			require.NoError(t, err, "size %d n %d", size, n)
			assert.True(t, bytes.Equal(data, got), "size %d n %d", size, n)
		}
		if size > 0 {
			_, err := readBody(&errAfter{data: slices.Clone(data), err: io.ErrUnexpectedEOF}, -1)
			assert.ErrorIs(t, err, io.ErrUnexpectedEOF, "size %d", size)
			_, err = readBody(&errAfter{data: slices.Clone(data[:size-1]), err: io.EOF}, int64(size))
			assert.ErrorIs(t, err, io.ErrUnexpectedEOF, "size %d", size)
		}
	}
}
