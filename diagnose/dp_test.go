package diagnose_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/diagnose"
	"github.com/whyslow/whyslow/report"
	"github.com/whyslow/whyslow/rules"
	"github.com/whyslow/whyslow/snapshot"
)

// dpEngine is one data-parallel engine's counters and gauges at a scrape.
type dpEngine struct {
	running, waiting float64
	done             float64 // vllm:request_success_total (stop)
	fast             float64 // TTFT observations <= 0.5 s (of done)
}

// dpExposition writes one scrape of a data-parallel pod the way vLLM V1
// does: every vllm: series carries engine="i" and model_name.
func dpExposition(start float64, engines []dpEngine) string {
	var b strings.Builder
	fam := func(name, typ string, f func(e dpEngine) float64) {
		fmt.Fprintf(&b, "# TYPE %s %s\n", name, typ)
		for i, e := range engines {
			fmt.Fprintf(&b, "%s{engine=\"%d\",model_name=\"m\"} %g\n", name, i, f(e))
		}
	}
	fam("vllm:num_requests_running", "gauge", func(e dpEngine) float64 { return e.running })
	fam("vllm:num_requests_waiting", "gauge", func(e dpEngine) float64 { return e.waiting })
	fam("vllm:kv_cache_usage_perc", "gauge", func(e dpEngine) float64 { return 0.02 * e.running })
	b.WriteString("# TYPE vllm:request_success_total counter\n")
	for i, e := range engines {
		fmt.Fprintf(&b, "vllm:request_success_total{engine=\"%d\",finished_reason=\"stop\",model_name=\"m\"} %g\n", i, e.done)
	}
	for _, h := range []string{"vllm:time_to_first_token_seconds", "vllm:e2e_request_latency_seconds"} {
		fmt.Fprintf(&b, "# TYPE %s histogram\n", h)
		for i, e := range engines {
			fmt.Fprintf(&b, "%s_bucket{engine=\"%d\",le=\"0.5\",model_name=\"m\"} %g\n", h, i, e.fast)
			fmt.Fprintf(&b, "%s_bucket{engine=\"%d\",le=\"2.5\",model_name=\"m\"} %g\n", h, i, e.done)
			fmt.Fprintf(&b, "%s_bucket{engine=\"%d\",le=\"+Inf\",model_name=\"m\"} %g\n", h, i, e.done)
			fmt.Fprintf(&b, "%s_sum{engine=\"%d\",model_name=\"m\"} %g\n", h, i, 0.3*e.fast+1.5*(e.done-e.fast))
			fmt.Fprintf(&b, "%s_count{engine=\"%d\",model_name=\"m\"} %g\n", h, i, e.done)
		}
	}
	fmt.Fprintf(&b, "# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds %g\n", start)
	return b.String()
}

// balanced and skewed are the two scrapes of issue 32's data-parallel
// pod, 7 minutes apart: engines 0-3 running 8/8/8/8, then 27/5/0/0 after
// the router sent engine 0 most of the pod's requests.
var (
	balanced = []dpEngine{{8, 0, 1000, 950}, {8, 0, 1000, 950}, {8, 0, 1000, 950}, {8, 0, 1000, 950}}
	skewed   = []dpEngine{{27, 12, 1300, 1050}, {5, 0, 1060, 1005}, {0, 0, 1008, 958}, {0, 0, 1008, 958}}
)

func noteIDs(rep *report.Report) []string {
	var ids []string
	for _, n := range rep.Notes {
		ids = append(ids, n.ID)
	}
	return ids
}

func finding(rep *report.Report, id rules.HypothesisID) rules.Finding {
	return first(rep.Hypotheses, func(f rules.Finding) bool { return f.ID == id })
}

// TestEngineImbalanceOneScrape: one scrape of a data-parallel pod whose
// engines run 27/5/0/0 names the imbalance as suspected (a note: one
// scrape cannot say whether it lasts or slows requests); 8/8/8/8 does not.
func TestEngineImbalanceOneScrape(t *testing.T) {
	start := float64(t0.Unix() - 3600)
	for _, tt := range []struct {
		name      string
		engines   []dpEngine
		suspected bool
	}{
		{"27/5/0/0", skewed, true},
		{"8/8/8/8", balanced, false},
		{"6/3/2/1: within the noise of a fair split of 12", []dpEngine{{6, 0, 1000, 950}, {3, 0, 1000, 950}, {2, 0, 1000, 950}, {1, 0, 1000, 950}}, false},
		{"3/0/0/0: too little load to judge", []dpEngine{{3, 0, 1000, 950}, {0, 0, 1000, 950}, {0, 0, 1000, 950}, {0, 0, 1000, 950}}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			name := "pod/" + t0.UTC().Format("2006-01-02T15-04-05Z") + ".prom"
			ev, err := snapshot.ParseDump([]byte(dpExposition(start, tt.engines)), name, snapshot.Options{})
			require.NoError(t, err)
			rep, table := diagnoseTable(t, ev)
			assert.Equal(t, tt.suspected, contains(noteIDs(rep), "engine-imbalance-suspected"), "%s", table)
			last := rep.Facts[rules.EngineInflightShareLast]
			if tt.suspected {
				require.NoError(t, last.Missing, "%s", table)
				assert.Contains(t, last.Source, "engine 0")
				assert.InDelta(t, 39.0/44*4, float64(last.Incident.Upper), 1e-9, "27 running + 12 waiting of 44 in flight")
				assert.NotEqual(t, rules.Contradicted, finding(rep, rules.EngineImbalance).Status, "%s", table)
			}
			assert.NotEqual(t, rules.Verdict(rules.EngineImbalance), rep.Verdict, "one scrape is no verdict\n%s", table)
		})
	}
}

// TestEngineImbalanceTwoScrapes: issue 32's two scrapes of one
// data-parallel pod, 7 minutes apart, in a flat folder named as the
// operator saved them: read as one pod at two times (the same
// process_start_time_seconds, counters that grow), the engine imbalance
// named from the pod's arrivals; with a TTFT target it is the verdict,
// not a hot replica.
func TestEngineImbalanceTwoScrapes(t *testing.T) {
	start := float64(t0.Unix() - 3600)
	dir := t.TempDir()
	at := []time.Time{t0, t0.Add(7 * time.Minute)}
	for i, engines := range [][]dpEngine{balanced, skewed} {
		name := fmt.Sprintf("SERVER_t%d_%s_extracted.prom", i, at[i].Format("2006-01-02T15-04-05"))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(dpExposition(start, engines)), 0o644))
	}
	ev, err := snapshot.Read(context.Background(), []string{dir}, snapshot.Options{})
	require.NoError(t, err)
	require.Len(t, ev.Targets, 1, "one pod")
	require.Len(t, ev.Targets[0].Scrapes, 2, "at two times")

	rep, table := diagnoseTable(t, ev)
	load := rep.Facts[rules.EngineLoadShareMax]
	require.NoError(t, load.Missing, "%s", table)
	assert.GreaterOrEqual(t, float64(load.Incident.Value), rules.DefaultThresholds.Hotspot, "%s", table)
	assert.Contains(t, load.Source, "engine 0")
	assert.Contains(t, noteIDs(rep), "engine-imbalance-suspected")
	assert.NotEqual(t, rules.Contradicted, finding(rep, rules.EngineImbalance).Status, "%s", table)
	assert.Error(t, rep.Facts[rules.ReplicaLoadShareMax].Missing, "one pod: no replica hot spot to judge")

	rep, err = diagnose.Diagnose(ev, diagnose.Options{SLO: rules.SLO{TTFTP95: 1}})
	require.NoError(t, err)
	table = factsTable(rep)
	assert.Equal(t, rules.Verdict(rules.EngineImbalance), rep.Verdict, "%s", table)
	assert.Equal(t, rules.Supported, finding(rep, rules.EngineImbalance).Status, "%s", table)
	assert.NotEqual(t, rules.Supported, finding(rep, rules.ReplicaRestarts).Status, "one process: no restart\n%s", table)
	t.Logf("%s\n%s", rep.Summary, table)
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// TestEngineImbalanceSingleEngine: pods of one engine each are balanced by
// construction: the engine facts are 1 and engine-imbalance is ruled out,
// not left "not evaluable" on every fleet without data parallelism.
func TestEngineImbalanceSingleEngine(t *testing.T) {
	ev, err := snapshot.ParseDump([]byte(dpExposition(float64(t0.Unix()-3600), []dpEngine{{27, 12, 1300, 1050}})),
		"pod/"+t0.UTC().Format("2006-01-02T15-04-05Z")+".prom", snapshot.Options{})
	require.NoError(t, err)
	rep, table := diagnoseTable(t, ev)
	for _, id := range []rules.FactID{rules.EngineLoadShareMax, rules.EngineInflightShareMax, rules.EngineInflightShareLast} {
		assert.Equal(t, 1.0, float64(rep.Facts[id].Incident.Value), "%s: %s", id, table)
	}
	assert.Equal(t, rules.Contradicted, finding(rep, rules.EngineImbalance).Status, "%s", table)
	assert.NotContains(t, noteIDs(rep), "engine-imbalance-suspected")
}
