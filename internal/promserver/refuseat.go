package promserver

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// RefusedAt is the answer of a Prometheus 2.25 to 2.32 started without
// --enable-feature=promql-at-modifier to a query that uses the @
// modifier (its API's invalidParamError of promql's
// ErrValidationAtModifierDisabled).
const RefusedAt = `{"status":"error","errorType":"bad_data","error":"invalid parameter \"query\": @ modifier is disabled, use --enable-feature=promql-at-modifier to enable it"}`

// RefusingAt serves the server at base as a Prometheus without the @
// modifier would: a query or range query whose expression holds an "@"
// gets HTTP 400 and RefusedAt; every other request is passed on. It
// returns the address and the number of queries refused so far.
func RefusingAt(t testing.TB, base string) (string, *atomic.Int64) {
	t.Helper()
	target, err := url.Parse(base)
	require.NoError(t, err)
	// Every other request is asked again of the server, each on a
	// connection of its own, and its answer passed on whole: a proxy
	// that streams (httputil.ReverseProxy) now and then broke a remote
	// read's answer off.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	refused := new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if strings.HasSuffix(r.URL.Path, "/api/v1/query") || strings.HasSuffix(r.URL.Path, "/api/v1/query_range") {
			form, _ := url.ParseQuery(string(body))
			if strings.Contains(r.URL.Query().Get("query")+form.Get("query"), "@") {
				refused.Add(1)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				_, _ = io.WriteString(w, RefusedAt)
				return
			}
		}
		u := *target
		u.Path, u.RawQuery = strings.TrimSuffix(target.Path, "/")+r.URL.Path, r.URL.RawQuery
		req, err := http.NewRequestWithContext(r.Context(), r.Method, u.String(), bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		req.Header = r.Header.Clone()
		resp, err := client.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		for k, vs := range resp.Header {
			if k != "Content-Length" && k != "Transfer-Encoding" {
				w.Header()[k] = vs
			}
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(data)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, refused
}
