package promapi_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/histogram"
	"github.com/whyslow/whyslow/snapshot"
	"github.com/whyslow/whyslow/snapshot/promapi"
)

// engineServer answers an Engine's queries as PromQL would on two pods:
// pod a scraped at every minute from start, pod b from start+1m; each
// holds, at minute k, cumulative counts of k observations at or below
// 0.1 and 3k in all, summing 5k. A query for more than one pod is
// refused as too large when refuse is set. It records the queries.
type engineServer struct {
	refuse  bool
	mu      sync.Mutex
	queries []string
}

func (s *engineServer) handler(start time.Time) http.HandlerFunc {
	pods := regexp.MustCompile(`pod=~?"([^"]*)"`)
	from := map[string]int{"a": 0, "b": 1} // the minute each pod appears
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
		names := strings.Split(m[1], "|")
		if s.refuse && len(names) > 1 {
			w.WriteHeader(http.StatusUnprocessableEntity)
			fmt.Fprint(w, `{"status":"error","errorType":"execution","error":"query processing would load too many samples into memory"}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		minute := func(v string) int {
			f, _ := strconv.ParseFloat(v, 64)
			return int((int64(f) - start.Unix()) / 60)
		}
		if r.URL.Path == "/api/v1/query" && strings.Contains(q, "last_over_time") { // presence: one series each
			var res []string
			for _, p := range names {
				res = append(res, fmt.Sprintf(`{"metric":{"pod":%q},"value":[0,"1"]}`, p))
			}
			fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[%s]}}`, strings.Join(res, ","))
			return
		}
		if r.URL.Path == "/api/v1/query" { // resets: pod b reset
			if slices.Contains(names, "b") {
				fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"pod":"b"},"value":[0,"1"]}]}}`)
				return
			}
			fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
			return
		}
		each := strings.Contains(q, ", pod)") || strings.Contains(q, "by (pod)")
		value := map[string]float64{"0.1": 1, "+Inf": 3, "": 3}
		if strings.Contains(q, "_sum") {
			value[""] = 5
		}
		les := []string{""}
		if strings.Contains(q, "by (le") {
			les = []string{"0.1", "+Inf"}
		}
		var series []string
		for _, le := range les {
			points := map[string][]string{} // by pod ("" for the sum)
			for k := minute(r.Form.Get("start")); k <= minute(r.Form.Get("end")); k++ {
				total, any := 0.0, false
				for _, p := range names {
					var v float64
					switch {
					case strings.Contains(q, "last_over_time"): // presence: the edges without the pod's series
						if k >= from[p] {
							continue
						}
						v = -1
					case strings.Contains(q, "unless"): // a series on one side only
						if (k >= from[p]) == (k-1 >= from[p]) {
							continue
						}
						v = 1
					case strings.Contains(q, " offset 1m)"): // the difference per series
						if k-1 < from[p] {
							continue
						}
						v = value[le]
					default: // the cumulative value
						if k < from[p] {
							continue
						}
						v = float64(k) * value[le]
					}
					key := ""
					if each {
						key = p
						points[key] = append(points[key], fmt.Sprintf(`[%d,"%g"]`, start.Add(time.Duration(k)*time.Minute).Unix(), v))
						continue
					}
					total, any = total+v, true
				}
				if any {
					points[""] = append(points[""], fmt.Sprintf(`[%d,"%g"]`, start.Add(time.Duration(k)*time.Minute).Unix(), total))
				}
			}
			for key, pts := range points {
				var kv []string
				if le != "" {
					kv = append(kv, fmt.Sprintf(`"le":%q`, le))
				}
				if key != "" {
					kv = append(kv, fmt.Sprintf(`"pod":%q`, key))
				}
				series = append(series, fmt.Sprintf(`{"metric":{%s},"values":[%s]}`, strings.Join(kv, ","), strings.Join(pts, ",")))
			}
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
			want := func(pods float64) *histogram.Histogram {
				return &histogram.Histogram{Bounds: []float64{0.1, math.Inf(1)}, Counts: []float64{pods, 3 * pods}, Count: 3 * pods, Sum: 5 * pods}
			}
			// The first minute: b has no sample at its start and is left
			// out (asked for as differences per series).
			assert.Equal(t, []*histogram.Histogram{want(1), want(2), want(2)}, rows[0])
			q.Each = true
			rows, err = eng.HistogramIncreases(q)
			require.NoError(t, err)
			require.Len(t, rows, 2)
			assert.Equal(t, []*histogram.Histogram{want(1), want(1), want(1)}, rows[0])
			assert.Equal(t, []*histogram.Histogram{nil, want(1), want(1)}, rows[1])

			pres, err := eng.Presence(q)
			require.NoError(t, err)
			assert.Equal(t, [][]int{{1, 1, 1, 1}, {0, 1, 1, 1}}, pres)

			// Asked again after Presence, the engine knows where the set
			// of series changes (b's first minute) and does not ask.
			srv.mu.Lock()
			asked := len(srv.queries)
			srv.mu.Unlock()
			again, err := eng.HistogramIncreases(q)
			require.NoError(t, err)
			assert.Equal(t, rows, again)
			srv.mu.Lock()
			for _, sent := range srv.queries[asked:] {
				assert.NotContains(t, sent, " unless ", "the set-change query")
			}
			srv.mu.Unlock()

			names, err := eng.Resets(q)
			require.NoError(t, err)
			assert.Equal(t, []string{"b"}, names)

			srv.mu.Lock()
			defer srv.mu.Unlock()
			if !refuse {
				assert.Contains(t, srv.queries, `sum by (le) ({__name__="vllm:time_to_first_token_seconds_bucket",model_name="m",pod=~"a|b"})`)
				assert.Contains(t, srv.queries, `count by () ({__name__="vllm:time_to_first_token_seconds_count",model_name="m",pod=~"a|b"} unless {__name__="vllm:time_to_first_token_seconds_count",model_name="m",pod=~"a|b"} offset 1m) or count by () ({__name__="vllm:time_to_first_token_seconds_count",model_name="m",pod=~"a|b"} offset 1m unless {__name__="vllm:time_to_first_token_seconds_count",model_name="m",pod=~"a|b"})`)
				assert.Contains(t, srv.queries, `sum by (le) ({__name__="vllm:time_to_first_token_seconds_bucket",model_name="m",pod=~"a|b"} - {__name__="vllm:time_to_first_token_seconds_bucket",model_name="m",pod=~"a|b"} offset 1m)`)
			}
			assert.Contains(t, srv.queries, `sum by (pod) (resets({__name__="vllm:time_to_first_token_seconds_count",model_name="m",pod=~"a|b"}[8m])) > 0`)
			if !refuse {
				at := strconv.FormatInt(start.Add(3*time.Minute).Unix(), 10)
				d := `count by (pod) (last_over_time({__name__="vllm:time_to_first_token_seconds_count",model_name="m",pod=~"a|b"}[13m] @ ` + at + `))`
				assert.Contains(t, srv.queries, d)
				assert.Contains(t, srv.queries, `count by (pod) ({__name__="vllm:time_to_first_token_seconds_count",model_name="m",pod=~"a|b"}) < on (pod) `+d+
					` or on (pod) (`+d+` unless on (pod) {__name__="vllm:time_to_first_token_seconds_count",model_name="m",pod=~"a|b"}) * 0 - 1`)
			}
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

// TestTimelines evaluates an expression on a grid longer than one range
// query may be: the answers of the two queries are placed at their
// windows, a series missing an interval has NaN there, series come in
// the order of their labels, and a sample off the grid or a grid of
// uneven windows is an error.
func TestTimelines(t *testing.T) {
	start := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)
	grid := snapshot.Grid(snapshot.Window{Start: start, End: start.Add(10005 * time.Minute)}, time.Minute)
	var mu sync.Mutex
	var ranges [][2]int64
	off := false
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, "/api/v1/query_range", r.URL.Path)
		assert.Equal(t, "avg_over_time(whyslow:ttft_p95[1m])", r.FormValue("query"))
		from, _ := strconv.ParseFloat(r.FormValue("start"), 64)
		to, _ := strconv.ParseFloat(r.FormValue("end"), 64)
		mu.Lock()
		ranges = append(ranges, [2]int64{int64(from), int64(to)})
		offGrid := off
		mu.Unlock()
		var a, b []string
		for ts := int64(from); ts <= int64(to); ts += 60 {
			k := (ts - start.Unix()) / 60 // the window ending at ts is k-1
			a = append(a, fmt.Sprintf(`[%d,"%d"]`, ts, k))
			if k%2 == 0 {
				b = append(b, fmt.Sprintf(`[%d,"%d"]`, ts, -k))
			}
		}
		if offGrid {
			a = append(a, fmt.Sprintf(`[%d,"1"]`, int64(to)+30))
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"matrix","result":[`+
			`{"metric":{"model_name":"z"},"values":[%s]},{"metric":{"model_name":"a"},"values":[%s]}]}}`,
			strings.Join(a, ","), strings.Join(b, ","))
	}))
	t.Cleanup(ts.Close)
	eng, err := promapi.Config{}.Engine(context.Background(), ts.URL, snapshot.Options{})
	require.NoError(t, err)

	tls, err := eng.Timelines("avg_over_time(whyslow:ttft_p95[1m])", grid)
	require.NoError(t, err)
	require.Len(t, ranges, 2)
	assert.Equal(t, [2]int64{grid[0].End.Unix(), grid[9999].End.Unix()}, ranges[0])
	assert.Equal(t, [2]int64{grid[10000].End.Unix(), grid[10004].End.Unix()}, ranges[1])
	require.Len(t, tls, 2)
	assert.Equal(t, `{model_name="a"}`, tls[0].Labels.String())
	assert.Equal(t, `{model_name="z"}`, tls[1].Labels.String())
	for i := range grid {
		k := float64(i + 1)
		assert.Equal(t, k, tls[1].Values[i], "window %d", i)
		if i%2 == 1 {
			assert.Equal(t, -k, tls[0].Values[i], "window %d", i)
		} else {
			assert.True(t, math.IsNaN(tls[0].Values[i]), "window %d", i)
		}
	}

	mu.Lock()
	off = true
	mu.Unlock()
	_, err = eng.Timelines("avg_over_time(whyslow:ttft_p95[1m])", grid[:10])
	require.ErrorIs(t, err, promapi.ErrServer)
	assert.ErrorContains(t, err, "no interval's end")

	uneven := append(slices.Clone(grid[:3]), snapshot.Window{Start: grid[3].Start, End: grid[3].End.Add(time.Second)})
	_, err = eng.Timelines("x", uneven)
	assert.ErrorContains(t, err, "window 3")
}
