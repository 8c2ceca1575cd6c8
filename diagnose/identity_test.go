package diagnose_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/internal/fleetsim"
	"github.com/whyslow/whyslow/internal/fleetsim/simtsdb"
	"github.com/whyslow/whyslow/internal/matrix"
	"github.com/whyslow/whyslow/rules"
	"github.com/whyslow/whyslow/snapshot"
)

// rollingRestart is the healthy fleet of 8 pods restarted one after the
// other from 30 min, two minutes apart, each stopped gracefully (no new
// request, 40 s to finish those it holds) and back 60 s later: with
// rename, under a new pod name and address, as a Deployment's rollout
// replaces its pods; without, under its own name at a new address, as a
// StatefulSet's pods come back.
func rollingRestart(rename bool) fleetsim.Config {
	cfg := fleetsim.Scenario("healthy")
	cfg.Pods = make([]fleetsim.PodConfig, 8)
	for i := range cfg.Pods {
		r := fleetsim.Restart{
			At: time.Duration(30+2*i) * time.Minute, Downtime: time.Minute, Drain: 40 * time.Second,
			Instance: fmt.Sprintf("10.42.7.%d:8000", 100+i),
		}
		if rename {
			r.Name = fmt.Sprintf("vllm-7d9f6c-%05d", 31*i+7)
		}
		cfg.Pods[i].Restarts = []fleetsim.Restart{r}
	}
	return cfg
}

// TestRollingRestart: a rolling restart, by a StatefulSet (names kept,
// new addresses) or a Deployment (new names), from dumps and from a TSDB
// with its new instance labels, is no incident: one restart per pod at
// most, none lost.
func TestRollingRestart(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rename bool
		tsdb   bool
	}{
		{"statefulset/dumps", false, false},
		{"statefulset/tsdb", false, true},
		{"deployment/dumps", true, false},
		{"deployment/tsdb", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if testing.Short() && tc.rename != tc.tsdb {
				t.Skip("-short: the statefulset from dumps, the deployment from a TSDB")
			}
			f, err := fleetsim.Run(rollingRestart(tc.rename))
			require.NoError(t, err)
			lost := 0
			for _, r := range f.Requests {
				if r.Status == fleetsim.StatusLost {
					lost++
				}
			}
			require.Zero(t, lost, "the drain finishes every request")
			var ev *snapshot.Evidence
			if tc.tsdb {
				ev = readBack(t, func(dir string) error { return simtsdb.Write(f, dir, fleetsim.TSDBOptions{}) })
			} else {
				ev = matrix.Evidence(f)
			}
			rep, table := diagnoseTable(t, ev)
			assert.Equal(t, "no-incident", string(rep.Verdict), "%s", table)
			assert.LessOrEqual(t, float64(rep.Facts[rules.RestartsReplicaMax].Incident.Value), 1.0, "%s", table)
			assert.Zero(t, float64(rep.Facts[rules.RequestsLost].Incident.Value), "%s", table)
			t.Logf("%s\n%s", rep.Summary, table)
		})
	}
}

// TestCrashLoopNewAddresses: a crash loop stays a crash loop when the pod
// comes back at a new address each time (read from a TSDB): four
// restarts of one pod, not four replicas.
func TestCrashLoopNewAddresses(t *testing.T) {
	cfg := crashLoop()
	for i := range cfg.Pods[3].Restarts {
		cfg.Pods[3].Restarts[i].Instance = fmt.Sprintf("10.42.9.%d:8000", 10+i)
	}
	f, err := fleetsim.Run(cfg)
	require.NoError(t, err)
	ev := readBack(t, func(dir string) error { return simtsdb.Write(f, dir, fleetsim.TSDBOptions{}) })
	rep, table := diagnoseTable(t, ev)
	require.Equal(t, "replica-restarts", string(rep.Verdict), "%s", table)
	assert.Equal(t, 4.0, float64(rep.Facts[rules.RestartsReplicaMax].Incident.Value), "%s", table)
	assert.Contains(t, rep.Facts[rules.RestartsReplicaMax].Source, "vllm-3")
	assert.Positive(t, float64(rep.Facts[rules.RequestsLost].Incident.Value), "hard stops lose the requests in flight")
}

// TestOutageLoadFactor: the replicas present at the scrape times, usual
// over fewest. One of eight restarting at a time (a minute down each)
// leaves seven: 8/7; with two pods, one away leaves one: 2. No restart: 1.
func TestOutageLoadFactor(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates three fleets")
	}
	for _, tc := range []struct {
		name string
		pods int
		want float64
	}{
		{"one of eight away", 8, 8.0 / 7},
		{"one of two away", 2, 2},
		{"none away", 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := rollingRestart(false)
			if tc.pods > 0 {
				cfg.Pods = cfg.Pods[:tc.pods]
			} else {
				cfg.Pods = make([]fleetsim.PodConfig, 4)
			}
			f, err := fleetsim.Run(cfg)
			require.NoError(t, err)
			ev := matrix.Evidence(f)
			rep, table := diagnoseTable(t, ev)
			assert.InDelta(t, tc.want, float64(rep.Facts[rules.OutageLoadFactor].Incident.Value), 1e-9, "%s", table)
		})
	}
}

// TestRollingRestartV0: vLLM V0 exposes no process start time, so a
// StatefulSet pod that restarts shows only as its counters and request
// histograms reset; the change-point search's segment of the restarts
// (the two pods left took the third's load: ITL p95 1.9x) is a change of
// membership all the same, not an incident (it read as decode-pressure,
// high, on three pods scraped every 30 s or minute).
func TestRollingRestartV0(t *testing.T) {
	for _, iv := range []time.Duration{30 * time.Second, time.Minute} {
		r := matrix.RunCell(matrix.Cell{Case: "rolling-restart-statefulset", Expect: "no-incident", Pods: 3, Seed: fleetsim.MatrixSeeds[0],
			Variant: fleetsim.Variant{ScrapeInterval: iv, Version: fleetsim.VersionV0}})
		require.NoError(t, r.Err)
		assert.Equal(t, "no-incident", r.Verdict, "%s: %s (%v)", iv, r.Summary, r.Top)
	}
}
