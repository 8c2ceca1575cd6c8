package promapi_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/snapshot"
	"github.com/whyslow/whyslow/snapshot/promapi"
)

// engineServer answers an Engine's queries for pods a and b: per pod and
// minute, 1 observation at or below 0.1 and 2 above (sum 5); a query for
// more than one pod is refused as too large when refuse is set. It
// records the queries.
type engineServer struct {
	refuse  bool
	mu      sync.Mutex
	queries []string
}

func (s *engineServer) handler(start time.Time) http.HandlerFunc {
	pods := regexp.MustCompile(`pod=~?"([^"]*)"`)
	return func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		q := r.Form.Get("query")
		s.mu.Lock()
		s.queries = append(s.queries, q)
		s.mu.Unlock()
		m := pods.FindStringSubmatch(q)
		if m == nil {
			http.Error(w, "no pod matcher", http.StatusBadRequest)
			return
		}
		n := len(strings.Split(m[1], "|"))
		if s.refuse && n > 1 {
			w.WriteHeader(http.StatusUnprocessableEntity)
			fmt.Fprint(w, `{"status":"error","errorType":"execution","error":"query processing would load too many samples into memory"}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/api/v1/query" { // resets: pod b reset
			if strings.Contains(m[1], "b") {
				fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"pod":"b"},"value":[0,"1"]}]}}`)
				return
			}
			fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
			return
		}
		// Two points: the ends of the grid's first and third windows.
		vals := func(v float64) string {
			return fmt.Sprintf(`[[%d,"%g"],[%d,"%g"]]`, start.Add(time.Minute).Unix(), v, start.Add(3*time.Minute).Unix(), v)
		}
		each := strings.Contains(q, "by (le, pod)") || strings.Contains(q, "by (pod)")
		var series []string
		add := func(le string, perPod float64) {
			for _, p := range strings.Split(m[1], "|") {
				labels := map[string]string{}
				if le != "" {
					labels["le"] = le
				}
				if each {
					labels["pod"] = p
				}
				var kv []string
				for k, v := range labels {
					kv = append(kv, fmt.Sprintf("%q:%q", k, v))
				}
				if !each {
					series = append(series, fmt.Sprintf(`{"metric":{%s},"values":%s}`, strings.Join(kv, ","), vals(perPod*float64(n))))
					break
				}
				series = append(series, fmt.Sprintf(`{"metric":{%s},"values":%s}`, strings.Join(kv, ","), vals(perPod)))
			}
		}
		switch {
		case strings.Contains(q, "_bucket"):
			add("0.1", 1)
			add("+Inf", 3)
		case strings.Contains(q, "_sum"):
			add("", 5)
		default:
			add("", 3)
		}
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"matrix","result":[%s]}}`, strings.Join(series, ","))
	}
}

// TestEngine checks the queries an Engine sends (the difference of two
// instant selectors a step apart, summed by le, or by le and pod), how
// it assembles their answers into histograms per window, and that a
// batch the server refuses as too large is asked for in halves.
func TestEngine(t *testing.T) {
	start := time.Date(2026, 9, 22, 10, 0, 0, 0, time.UTC)
	grid := snapshot.Grid(snapshot.Window{Start: start, End: start.Add(3 * time.Minute)}, time.Minute)
	targets := []*snapshot.Target{{Name: "a", NameFrom: "pod"}, {Name: "b", NameFrom: "pod"}}
	for _, refuse := range []bool{false, true} {
		t.Run(fmt.Sprintf("refuse=%v", refuse), func(t *testing.T) {
			srv := &engineServer{refuse: refuse}
			ts := httptest.NewServer(srv.handler(start))
			t.Cleanup(ts.Close)
			eng, err := promapi.Config{}.Engine(context.Background(), ts.URL, snapshot.Options{})
			require.NoError(t, err)
			q := snapshot.HistogramQuery{Metric: "vllm:time_to_first_token_seconds", Match: map[string]string{"model_name": "m"}, Targets: targets, Grid: grid}

			rows, err := eng.HistogramIncreases(q)
			require.NoError(t, err)
			require.Len(t, rows, 1)
			require.Len(t, rows[0], 3)
			assert.Nil(t, rows[0][1], "no answer at the second window's end")
			for _, i := range []int{0, 2} {
				h := rows[0][i]
				require.NotNil(t, h)
				assert.Equal(t, []float64{0.1, math.Inf(1)}, h.Bounds)
				assert.Equal(t, []float64{2, 6}, h.Counts)
				assert.Equal(t, 6.0, h.Count)
				assert.Equal(t, 10.0, h.Sum)
			}
			q.Each = true
			rows, err = eng.HistogramIncreases(q)
			require.NoError(t, err)
			require.Len(t, rows, 2)
			assert.Equal(t, []float64{1, 3}, rows[1][2].Counts)

			names, err := eng.Resets(q)
			require.NoError(t, err)
			assert.Equal(t, []string{"b"}, names)

			srv.mu.Lock()
			defer srv.mu.Unlock()
			assert.Contains(t, srv.queries, `sum by (le) ({__name__="vllm:time_to_first_token_seconds_bucket",model_name="m",pod=~"a|b"} - {__name__="vllm:time_to_first_token_seconds_bucket",model_name="m",pod=~"a|b"} offset 1m)`)
			assert.Contains(t, srv.queries, `sum by (pod) (resets({__name__="vllm:time_to_first_token_seconds_count",model_name="m",pod=~"a|b"}[8m])) > 0`)
			if refuse {
				assert.Contains(t, srv.queries, `sum by (le) ({__name__="vllm:time_to_first_token_seconds_bucket",model_name="m",pod="b"} - {__name__="vllm:time_to_first_token_seconds_bucket",model_name="m",pod="b"} offset 1m)`)
			}
			assert.Contains(t, eng.Cost().Error(), "aggregated in the server with ")
		})
	}
}

// TestEngineErrorNamesServer checks that a query that keeps failing is an
// error naming the server, its address without credentials.
func TestEngineErrorNamesServer(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
	}))
	t.Cleanup(ts.Close)
	addr := strings.Replace(ts.URL, "http://", "http://reader:pw@", 1)
	eng, err := promapi.Config{Retries: -1}.Engine(context.Background(), addr, snapshot.Options{})
	require.NoError(t, err)
	start := time.Date(2026, 9, 22, 10, 0, 0, 0, time.UTC)
	_, err = eng.HistogramIncreases(snapshot.HistogramQuery{Metric: "m", Targets: []*snapshot.Target{{Name: "a", NameFrom: "pod"}},
		Grid: snapshot.Grid(snapshot.Window{Start: start, End: start.Add(2 * time.Minute)}, time.Minute)})
	require.ErrorIs(t, err, promapi.ErrServer)
	assert.Contains(t, err.Error(), "snapshot: server http://xxxxx@127.0.0.1:")
	assert.NotContains(t, err.Error(), "pw")
}
