package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/diagnose"
	"github.com/whyslow/whyslow/internal/fleetsim"
	"github.com/whyslow/whyslow/internal/fleetsim/simtsdb"
	"github.com/whyslow/whyslow/internal/jsondiff"
	"github.com/whyslow/whyslow/internal/promserver"
)

// tenantServer is a Prometheus API that wants a bearer token and a Mimir
// tenant header, and holds vllm:num_requests_waiting of one pod.
func tenantServer(t *testing.T) *httptest.Server {
	start := time.Date(2026, 9, 22, 10, 0, 0, 0, time.UTC)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" || r.Header.Get("X-Scope-OrgID") != "team-a" {
			http.Error(w, "no such tenant or token", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/v1/label/__name__/values":
			fmt.Fprint(w, `{"status":"success","data":["vllm:num_requests_waiting","node_load1"]}`)
		case "/api/v1/label/pod/values":
			fmt.Fprint(w, `{"status":"success","data":["vllm-0"]}`)
		case "/api/v1/query":
			if strings.Contains(r.FormValue("query"), "node_load1") {
				t.Errorf("a metric outside the catalog was queried: %s", r.FormValue("query"))
			}
			var vals []string
			for k := 0; k <= 20; k++ {
				vals = append(vals, fmt.Sprintf(`[%d,"%d"]`, start.Add(time.Duration(k)*15*time.Second).Unix(), k%4))
			}
			fmt.Fprintf(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"vllm:num_requests_waiting","pod":"vllm-0"},"values":[%s]}]}}`, strings.Join(vals, ","))
		default:
			fmt.Fprint(w, `{"status":"success","data":[]}`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestServerURL(t *testing.T) {
	srv := tenantServer(t)
	tok := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tok, []byte("s3cret\n"), 0o600))
	url := srv.URL + "/?key=abc"
	args := []string{"catalog", url, "--range", "2026-09-22T10:00:00Z/5m", "--bearer-token-file", tok, "--header", "X-Scope-OrgID=team-a", "--server-concurrency", "2"}
	code, out, errs := whyslow(t, "", args...)
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "vllm:num_requests_waiting")

	// A wrong tenant: a clear error, no secret printed.
	args[1] = strings.Replace(srv.URL, "http://", "http://reader:pw@", 1) + "/?key=abc"
	args[len(args)-3] = "X-Scope-OrgID=team-b"
	code, out, errs = whyslow(t, "", args...)
	assert.Equal(t, 1, code)
	assert.Contains(t, errs, "401")
	assert.Contains(t, errs, "no such tenant or token")
	for _, secret := range []string{"s3cret", ":pw@", "key=abc"} {
		assert.NotContains(t, out+errs, secret)
	}

	code, _, errs = whyslow(t, "", "catalog", srv.URL, "--header", "novalue")
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "NAME=VALUE")
}

// TestDiagnoseURLAsTSDB runs "whyslow diagnose URL" against a real
// Prometheus serving a copy of a fleetsim TSDB, and a VictoriaMetrics the
// fleet is imported into, and "whyslow diagnose DIR" on the directory:
// the JSON reports are the same but for their sources and the notes of
// what the server's reads cost, with the server summing the histograms
// (--pushdown, the default) and without. Prometheus's reports are equal
// to the bit; VictoriaMetrics keeps about 12 significant digits of a
// float, so its numbers agree to 1e-9 relative. The restart fleet takes
// the survey's sample reads (a pod that restarted is read whole); the
// mixed-versions fleet's pods name a signal differently (one question to
// the server per name). The
// command reads only the catalog's metrics from the server, the whole
// directory from disk. Without the servers the test skips, and fails in
// CI. Where WHYSLOW_THANOS names a thanos binary (promserver.Thanos),
// the Prometheus is also read through a Thanos sidecar and Thanos Query,
// which serves no remote read (samples by query); where WHYSLOW_MIMIR
// names a mimir binary (promserver.Mimir), the blocks are served by a
// monolithic Mimir's store-gateway (its own query engine; remote read).
func TestDiagnoseURLAsTSDB(t *testing.T) {
	promserver.Binary(t, "prometheus") // skip before simulating
	for _, tc := range []struct {
		scenario, server string
		pods             int           // 0: 3
		interval         time.Duration // 0: 30 s
		from, span       time.Duration // the range: from the fleet's start (0: 2 h)
		// version, when set, makes scenario a matrix case (fleetsim.
		// MatrixCases, the first seed, its moderate knob) of that vLLM
		// generation.
		version fleetsim.Version
	}{
		{"kv-preemption", "prometheus", 0, 0, 0, 0, 0},
		// The other scenarios, on fleets of 3 to 12 pods scraped every
		// 10 s to 2 min, through both servers.
		{"hot-replica", "prometheus", 8, 15 * time.Second, 0, 0, 0},
		{"sustained-overload", "prometheus", 5, 10 * time.Second, 0, 0, 0},
		{"burst", "victoria-metrics", 6, time.Minute, 0, 0, 0},
		{"decode-pressure", "prometheus", 4, 20 * time.Second, 17 * time.Minute, 73 * time.Minute, 0},
		{"prefix-cache-loss", "victoria-metrics", 0, 0, 0, 0, 0},
		{"outside-gpu", "prometheus", 10, 45 * time.Second, 0, 0, 0},
		{"low-traffic", "prometheus", 0, 0, 0, 0, 0},
		{"long-prompts", "victoria-metrics", 7, 15 * time.Second, 0, 0, 0},
		{"high-kv-healthy", "prometheus-without-@", 5, 0, 0, 0, 0},
		{"restart", "prometheus", 12, 10 * time.Second, 0, 0, 0},
		{"kv-preemption", "victoria-metrics", 9, 2 * time.Minute, 0, 0, 0},
		// Every hypothesis of the matrix and its counter-cases, some on
		// vLLM V0 or an early V1.
		{"engine-stall", "prometheus", 8, 15 * time.Second, 0, 0, fleetsim.VersionV1},
		{"admission-deferral", "prometheus", 0, 0, 0, 0, fleetsim.VersionV1},
		{"engine-imbalance", "victoria-metrics", 8, 0, 0, 0, fleetsim.VersionV1},
		{"spec-decode-acceptance", "prometheus", 0, 20 * time.Second, 0, 0, fleetsim.VersionV1},
		{"pd-kv-transfer", "prometheus", 8, 0, 0, 0, fleetsim.VersionV1},
		{"preemption-thrash", "victoria-metrics", 0, 0, 0, 0, fleetsim.VersionV1},
		{"stale-gauges", "prometheus", 8, 0, 0, 0, fleetsim.VersionV1},
		{"queue-ramp", "prometheus", 0, time.Minute, 0, 0, fleetsim.VersionV1Early},
		{"admission-rejections", "prometheus", 0, 0, 0, 0, fleetsim.VersionV1},
		{"sleeping-pod", "prometheus", 8, 0, 0, 0, fleetsim.VersionV1},
		{"rolling-restart-deployment", "prometheus", 8, 0, 0, 0, fleetsim.VersionV1},
		{"traffic-growth-10", "victoria-metrics", 0, 0, 0, 0, fleetsim.VersionV1},
		{"healthy-dp", "prometheus", 0, 0, 0, 0, fleetsim.VersionV1},
		{"pd-decode-hotspot", "prometheus", 8, 0, 0, 0, fleetsim.VersionV1},
		{"queue-sustained", "prometheus", 0, 0, 0, 0, fleetsim.VersionV0},
		{"replica-hotspot", "prometheus-without-@", 0, 0, 0, 0, fleetsim.VersionV1Early},
		{"idle-pod", "victoria-metrics", 0, 0, 0, 0, fleetsim.VersionV1},
		// Eight pods scraped every 2 minutes: Prometheus adds the pods'
		// _sum differences in another order than the directory's read,
		// and the change-point search's fleet means move in the last
		// digit (see exactServer below).
		{"kv-preemption", "prometheus", 8, 2 * time.Minute, 0, 0, 0},
		// Ranges that start and end amid the samples: the server holds
		// samples before and after them, which a read of the range does
		// not, at the edges of the grid's first and last intervals.
		{"kv-preemption", "prometheus", 0, 15 * time.Second, 23 * time.Minute, 37 * time.Minute, 0},
		{"kv-preemption", "victoria-metrics", 0, 15 * time.Second, 23 * time.Minute, 37 * time.Minute, 0},
		{"restart", "prometheus", 0, time.Minute, 7*time.Minute + 13*time.Second, 91 * time.Minute, 0},
		{"restart", "prometheus", 0, 0, 0, 0, 0},
		// A StatefulSet's rolling restart on vLLM V0, which exposes no
		// process start time: a pod comes back under a new instance
		// label, which the server keeps as a second series; the pods'
		// samples join the two into one timeline with a reset.
		{"rolling-restart-statefulset", "prometheus", 8, 0, 0, 0, fleetsim.VersionV0},
		{"rolling-restart-statefulset", "victoria-metrics", 8, 0, 0, 0, fleetsim.VersionV0},
		{"mixed-versions", "prometheus", 0, 0, 0, 0, 0},
		{"healthy", "prometheus", 0, 0, 0, 0, 0},
		{"kv-preemption", "victoria-metrics", 0, 0, 0, 0, 0},
		{"restart", "victoria-metrics", 0, 0, 0, 0, 0},
		{"mixed-versions", "victoria-metrics", 0, 0, 0, 0, 0},
		// A Prometheus before 2.33, which refuses the @ modifier: the
		// engine asks for which pods have their series at every edge,
		// and the V0 restart under a new instance label is still found.
		{"restart", "prometheus-without-@", 0, 0, 0, 0, 0},
		{"rolling-restart-statefulset", "prometheus-without-@", 8, 0, 0, 0, fleetsim.VersionV0},
		{"kv-preemption", "thanos", 0, 0, 0, 0, 0},
		{"restart", "thanos", 0, 0, 0, 0, 0},
		{"kv-preemption", "mimir", 0, 0, 0, 0, 0},
		{"restart", "mimir", 0, 0, 0, 0, 0},
	} {
		name := tc.scenario + "/" + tc.server
		if tc.pods > 0 || tc.interval > 0 {
			name += fmt.Sprintf("/%d-pods-%s", cmp.Or(tc.pods, 3), cmp.Or(tc.interval, 30*time.Second))
		}
		if tc.span > 0 {
			name += fmt.Sprintf("/from-%s-for-%s", tc.from, tc.span)
		}
		if tc.version != 0 {
			name += "/" + tc.version.String()
		}
		t.Run(name, func(t *testing.T) {
			var expect string
			var fleet *fleetsim.Fleet
			if tc.version != 0 {
				mc, ok := fleetsim.LookupMatrixCase(tc.scenario)
				require.True(t, ok, tc.scenario)
				knob := 0.0 // a counter-case has none
				if mc.Incident() {
					knob, ok = fleetsim.MatrixKnob(tc.scenario, cmp.Or(tc.pods, 3), "moderate")
					require.True(t, ok, "no moderate knob of %s on %d pods", tc.scenario, cmp.Or(tc.pods, 3))
				}
				var err error
				fleet, err = fleetsim.Run(mc.VariantConfig(cmp.Or(tc.pods, 3), fleetsim.MatrixSeeds[0], knob,
					fleetsim.Variant{ScrapeInterval: cmp.Or(tc.interval, 30*time.Second), Version: tc.version}))
				require.NoError(t, err)
				expect = mc.Expect
			} else {
				var spec fleetsim.ScenarioSpec
				spec, fleet = promserver.FleetOf(t, tc.scenario, cmp.Or(tc.pods, 3), cmp.Or(tc.interval, 30*time.Second))
				expect = spec.Expect
			}
			dir := filepath.Join(t.TempDir(), "tsdb")
			require.NoError(t, simtsdb.Write(fleet, dir, fleetsim.TSDBOptions{HeadSpan: -1}))
			var url string
			// A server that sums what the directory's read sums gives its
			// report to the bit, but for the change-point search's fleet
			// means (ttft_mean, itl_mean), whose _sum differences the
			// server adds in its own order: those, and the scores from
			// them, may move in the last digits.
			exactServer := true
			switch tc.server {
			case "prometheus":
				url = promserver.Prometheus(t, dir)
			case "prometheus-without-@":
				url, _ = promserver.RefusingAt(t, promserver.Prometheus(t, dir))
			case "thanos":
				url = promserver.Thanos(t, dir)
			case "mimir":
				start := cmp.Or(fleet.Config.Start, fleetsim.DefaultStart)
				url = promserver.Mimir(t, dir, start, start.Add(2*time.Hour))
			default:
				url = promserver.VictoriaMetrics(t, fleet)
				exactServer = false
			}
			start := fleet.Config.Start
			if start.IsZero() {
				start = fleetsim.DefaultStart
			}
			rng := start.Add(tc.from).UTC().Format(time.RFC3339) + "/" + cmp.Or(tc.span, 2*time.Hour).String()
			report := func(path string, flags ...string) map[string]any {
				args := append([]string{"diagnose", "--format", "json", "--range", rng}, flags...)
				code, out, errs := whyslow(t, "", append(args, path)...)
				require.Equal(t, exitOK, code, errs)
				var m map[string]any
				require.NoError(t, json.Unmarshal([]byte(out), &m))
				in, _ := m["inputs"].(map[string]any)
				require.NotNil(t, in)
				sources := in["sources"]
				delete(in, "sources")
				assert.Equal(t, []any{path}, sources)
				return m
			}
			const size = `([0-9]+ bytes|[0-9.]+ MB)`
			// Prometheus serves remote read; VictoriaMetrics does not, and
			// says so.
			// Where it serves remote read, the replicas a report shows are
			// read from their samples.
			how := `; samples by remote read \(/api/v1/read\)`
			shown := ` and [1-9]\d* remote reads of the samples of the replicas shown`
			switch tc.server {
			case "victoria-metrics":
				// Without the client's address, which VictoriaMetrics
				// echoes and which changes from run to run.
				how, shown = `; samples by /api/v1/query: HTTP 400 at /api/v1/read: unsupported path requested: "/api/v1/read"`, ""
			case "thanos":
				how, shown = `; samples by /api/v1/query: HTTP 404 at /api/v1/read.*`, ""
			}
			if tc.scenario == "rolling-restart-statefulset" && shown != "" {
				// The replicas shown may all be restarted ones, read
				// whole from their samples by the survey.
				shown = "(" + shown + ")?"
			}
			refusal := ""
			if tc.server == "prometheus-without-@" {
				refusal = `; the server refused PromQL's @ modifier, so which pods had their series was asked at every edge of the grid`
			}
			read := `^http://127\.0\.0\.1:\d+(/prometheus)?: read with \d+ queries and \d+ label lookups: \d+ HTTP requests, ` + size + ` of responses received` + how + `$`
			summed := `^http://127\.0\.0\.1:\d+(/prometheus)?: aggregated in the server with [1-9]\d* queries` + shown + `: \d+ HTTP requests, ` + size + ` of responses received` + refusal + `$`
			// notes checks that the server's reads say what they cost, in
			// notes of their own (for the raw pull, the survey's read and
			// the windows'; for a pushdown, the survey's reads, the
			// windows' and the sums in the server, last), and drops them.
			notes := func(m map[string]any, pushdown bool) {
				in := m["inputs"].(map[string]any)
				notes, _ := in["notes"].([]any)
				delete(in, "notes")
				if !pushdown {
					require.Len(t, notes, 2)
					for _, n := range notes {
						assert.Regexp(t, read, n)
					}
					return
				}
				require.GreaterOrEqual(t, len(notes), 3)
				for _, n := range notes[:len(notes)-1] {
					assert.Regexp(t, read, n)
				}
				assert.Regexp(t, summed, notes[len(notes)-1])
			}
			ref := report(dir)
			assert.Equal(t, expect, ref["verdict"])
			for _, pushdown := range []bool{true, false} {
				got := report(url, fmt.Sprintf("--pushdown=%v", pushdown))
				notes(got, pushdown)
				assert.Empty(t, jsondiff.Diff(ref, got, jsondiff.NearlyEqual), "--pushdown=%v: report differences (directory, server)", pushdown)
				if exactServer {
					for _, d := range jsondiff.Diff(ref, got, nil) {
						assert.Regexp(t, `^\.windows\.change_point\.(score|signals\[\d+\]\.(before|after|score)): `, d,
							"--pushdown=%v: a difference (directory, server) beyond the fleet means' last digits", pushdown)
					}
				}
			}
		})
	}
}

// TestDiagnoseURLGivenWindows checks windows given on the command line
// against a server: with --pushdown the range is surveyed (the server
// summing the histograms) and read again with the windows' histograms
// reduced as read, with --pushdown=false every pod's samples of the
// range are read whole; either report is the directory's (Prometheus to
// the bit, VictoriaMetrics to 1e-9), for windows side by side, for an
// incident alone with the --max-window before it, and for an incident
// alone with all before it (--max-window 0), which a server reads up to
// the incident's end (the directory is given that --range, and the
// server's warning that no start was given is left out). The survey
// lists VictoriaMetrics's series by whole days (docs/inputs.md): there a
// family seen only outside the range is listed among the signals with no
// sample, so the report's verdict, windows, facts and findings are
// compared. A range without data says so.
func TestDiagnoseURLGivenWindows(t *testing.T) {
	promserver.Binary(t, "prometheus") // skip before simulating
	spec, fleet := promserver.FleetOf(t, "kv-preemption", 4, 15*time.Second)
	dir := filepath.Join(t.TempDir(), "tsdb")
	require.NoError(t, simtsdb.Write(fleet, dir, fleetsim.TSDBOptions{HeadSpan: -1}))
	start := cmp.Or(fleet.Config.Start, fleetsim.DefaultStart)
	rfc := func(from, to time.Duration) string {
		return start.Add(from).UTC().Format(time.RFC3339) + "/" + start.Add(to).UTC().Format(time.RFC3339)
	}
	servers := map[string]string{"prometheus": promserver.Prometheus(t, dir), "victoria-metrics": promserver.VictoriaMetrics(t, fleet)}
	for _, tc := range []struct{ windows, dirOnly []string }{
		{[]string{"--baseline", rfc(13*time.Minute, 28*time.Minute), "--incident", rfc(31*time.Minute, 47*time.Minute)}, nil},
		{[]string{"--incident", rfc(33*time.Minute, 48*time.Minute)}, nil},
		{[]string{"--incident", rfc(33*time.Minute, 48*time.Minute), "--max-window", "0"},
			[]string{"--range", rfc(-time.Hour, 48*time.Minute+diagnose.ReadMargin)}},
	} {
		noStart := regexp.MustCompile(`no start of the time range given: read the 6h up to ` + regexp.QuoteMeta(start.Add(48*time.Minute+diagnose.ReadMargin).UTC().Format(time.RFC3339)))
		report := func(path string, flags ...string) map[string]any {
			args := append(append([]string{"diagnose", "--format", "json"}, tc.windows...), flags...)
			code, out, errs := whyslow(t, "", append(args, path)...)
			require.Equal(t, exitOK, code, errs)
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(out), &m))
			in := m["inputs"].(map[string]any)
			delete(in, "sources")
			delete(in, "notes") // what the reads cost
			if tc.dirOnly != nil && path != dir {
				// The warning that no start was given, and only it.
				drop := func(into map[string]any, key string) {
					list, _ := into[key].([]any)
					kept := slices.DeleteFunc(slices.Clone(list), func(w any) bool { return noStart.MatchString(fmt.Sprint(w)) })
					assert.Len(t, kept, len(list)-1, "%s: the warning that no start was given", key)
					if into[key] = kept; len(kept) == 0 {
						delete(into, key) // as the report leaves an empty list out
					}
				}
				drop(in, "problems")
				drop(m, "warnings")
				drop(m, "warning_details")
			}
			return m
		}
		ref := report(dir, tc.dirOnly...)
		assert.Equal(t, spec.Expect, ref["verdict"], "%v", tc.windows)
		for name, url := range servers {
			for _, pushdown := range []bool{true, false} {
				got := report(url, fmt.Sprintf("--pushdown=%v", pushdown))
				want := ref
				cmpOpt := jsondiff.NearlyEqual
				switch {
				case name == "prometheus":
					cmpOpt = nil
				case pushdown:
					part := func(m map[string]any) map[string]any {
						return map[string]any{"verdict": m["verdict"], "windows": m["windows"], "facts": m["facts"], "hypotheses": m["hypotheses"]}
					}
					want, got = part(ref), part(got)
				}
				assert.Empty(t, jsondiff.Diff(want, got, cmpOpt), "%s %v --pushdown=%v: report differences (directory, server)", name, tc.windows, pushdown)
			}
		}
	}
	// A range the server holds nothing of says so.
	code, _, errs := whyslow(t, "", "diagnose", "--range", "2030-01-01T00:00:00Z/1h", servers["prometheus"])
	assert.Equal(t, 1, code)
	assert.Contains(t, errs, "no series of the metrics asked for between 2029-12-31T23:59:00Z and 2030-01-01T01:00:00Z")
	assert.NotContains(t, errs, "bad_data")
}

// The command's side of the server guards: --server-deadline ends a read
// that a stalling server would drag on, a server's echo of the request is
// printed without its credentials, on one line, and a redirect to another
// port gets no credentials; the messages name the flags.
func TestServerGuards(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tok, []byte("s3cret-token\n"), 0o600))
	rng := "2026-09-22T10:00:00Z/5m"

	t.Run("deadline", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, `{"status":"success","data":[`)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}))
		t.Cleanup(srv.Close)
		begin := time.Now()
		code, _, errs := whyslow(t, "", "catalog", srv.URL, "--range", rng, "--server-timeout", "100ms", "--server-deadline", "1s")
		assert.Equal(t, 1, code)
		assert.Less(t, time.Since(begin), 5*time.Second)
		assert.Contains(t, errs, "deadline for reading the server passed (--server-deadline 1s) after 1")
	})

	t.Run("echo", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, fmt.Sprintf("you sent\nAuthorization=%s\nX-Api-Key=%s", r.Header.Get("Authorization"), r.Header.Get("X-Api-Key")), http.StatusBadRequest)
		}))
		t.Cleanup(srv.Close)
		code, out, errs := whyslow(t, "", "catalog", srv.URL, "--range", rng, "--bearer-token-file", tok, "--header", "X-Api-Key=api-k3y")
		assert.Equal(t, 1, code)
		assert.Contains(t, errs, "you sent Authorization=xxxxx X-Api-Key=xxxxx")
		for _, secret := range []string{"s3cret-token", "api-k3y"} {
			assert.NotContains(t, out+errs, secret)
		}
	})

	t.Run("redirect", func(t *testing.T) {
		var got []string
		var mu sync.Mutex
		target := tenantServer(t)
		spy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			got = append(got, r.Header.Get("Authorization"))
			mu.Unlock()
			target.Config.Handler.ServeHTTP(w, r)
		}))
		t.Cleanup(spy.Close)
		front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, spy.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
		}))
		t.Cleanup(front.Close)
		code, out, errs := whyslow(t, "", "catalog", front.URL, "--range", rng, "--bearer-token-file", tok, "--header", "X-Scope-OrgID=team-a")
		assert.Equal(t, 1, code)
		assert.Contains(t, errs, "401")
		assert.Contains(t, errs, "redirected to "+spy.URL+"/api/v1/label/__name__/values, another origin: no credentials sent there")
		assert.NotContains(t, out+errs, "s3cret")
		mu.Lock()
		defer mu.Unlock()
		require.NotEmpty(t, got)
		for _, a := range got {
			assert.Empty(t, a, "the redirect target got the token")
		}
	})

	t.Run("oversize", func(t *testing.T) {
		var queries atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/api/v1/label/__name__/values":
				fmt.Fprint(w, `{"status":"success","data":["vllm:num_requests_waiting"]}`)
			case "/api/v1/query":
				queries.Add(1)
				w.Header().Set("Content-Length", fmt.Sprint(500<<20))
				w.WriteHeader(http.StatusOK)
			default:
				fmt.Fprint(w, `{"status":"success","data":[]}`)
			}
		}))
		t.Cleanup(srv.Close)
		code, _, errs := whyslow(t, "", "catalog", srv.URL, "--range", "2026-09-22T10:00:00Z/6h", "--max-bytes", "1MiB")
		assert.Equal(t, 1, code)
		assert.Contains(t, errs, "more than --max-bytes (1048576 bytes)")
		assert.Contains(t, errs, "/api/v1/query {__name__=\"vllm:num_requests_waiting\"}")
		assert.LessOrEqual(t, queries.Load(), int64(30))
	})
}
