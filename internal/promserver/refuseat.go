package promserver

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
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
	proxy := httputil.NewSingleHostReverseProxy(target)
	refused := new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/api/v1/query") || strings.HasSuffix(r.URL.Path, "/api/v1/query_range") {
			// The client posts the form: read it, and give the proxy
			// the same body.
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			form, _ := url.ParseQuery(string(body))
			if strings.Contains(r.URL.Query().Get("query")+form.Get("query"), "@") {
				refused.Add(1)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				_, _ = io.WriteString(w, RefusedAt)
				return
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, refused
}
