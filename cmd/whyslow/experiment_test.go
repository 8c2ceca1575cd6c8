package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/internal/fleetsim"
	"github.com/whyslow/whyslow/rules"
)

// experiment runs "whyslow experiment ARGS" in process (the command is
// called directly, so that the test does not depend on its registration)
// and returns the exit status as run would, stdout and stderr.
func experiment(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &env{stdout: &out, stderr: &errb}
	code := report(&errb, "experiment", runExperiment(context.Background(), e, args))
	return code, out.String(), errb.String()
}

// writeRuns simulates 3 repeats per arm (max_num_seqs 128 vs 96 at low
// load: nothing changes) as dump folders, and the decode-pressure plan.
func writeRuns(t *testing.T) (plan string, baseline, treatment []string) {
	t.Helper()
	dir := t.TempDir()
	ph := fleetsim.DefaultPhase
	ph.Rate = 4
	for i := range 3 {
		for _, arm := range []struct {
			name string
			seqs int
			runs *[]string
		}{{"b", 128, &baseline}, {"t", 96, &treatment}} {
			eng := fleetsim.DefaultEngine
			eng.MaxNumSeqs = arm.seqs
			f, err := fleetsim.Run(fleetsim.Config{Seed: uint64(i + 1), TraceSeed: uint64(10 + i), NumPods: 1,
				Duration: 6 * time.Minute, Engine: eng, Workload: fleetsim.Workload{Phases: []fleetsim.Phase{ph}}})
			require.NoError(t, err)
			d := filepath.Join(dir, fmt.Sprintf("%s%d", arm.name, i+1))
			require.NoError(t, f.WriteDumps(d, fleetsim.DumpOptions{}))
			*arm.runs = append(*arm.runs, d)
		}
	}
	var p rules.Plan
	for _, r := range rules.Map() {
		if r.ID == rules.DecodePressure {
			p = r.Experiment
		}
	}
	p.Change.From, p.Change.To = "128", "96"
	data, err := json.Marshal(p)
	require.NoError(t, err)
	plan = filepath.Join(dir, "plan.json")
	require.NoError(t, os.WriteFile(plan, data, 0o644))
	return plan, baseline, treatment
}

func TestExperimentCommand(t *testing.T) {
	plan, b, tr := writeRuns(t)
	args := []string{"--plan", plan, "--warmup", "1m"}
	for i := range b {
		args = append(args, "--baseline", b[i], "--treatment", tr[i])
	}

	code, out, errOut := experiment(t, args...)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "verdict: reject")
	assert.Contains(t, out, "fired      active sequences fall but TPOT p95 does not improve")
	assert.Contains(t, out, "max_num_seqs is not visible")

	code, out, errOut = experiment(t, append(args, "--format", "json")...)
	require.Equal(t, exitOK, code, errOut)
	var v map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &v))
	assert.Equal(t, "reject", v["verdict"])
	assert.EqualValues(t, 60, v["warm_up_seconds"])

	code, out, errOut = experiment(t, append(args, "--format", "markdown")...)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "**verdict: reject**")

	// A window of a longer series: PATH@START/END.
	start := time.Date(2026, 9, 22, 10, 0, 0, 0, time.UTC)
	win := "@" + start.Format(time.RFC3339) + "/5m"
	wargs := []string{"--plan", plan, "--warmup", "1m"}
	for i := range b {
		wargs = append(wargs, "--baseline", b[i]+win, "--treatment", tr[i]+win)
	}
	code, out, errOut = experiment(t, append(wargs, "--format", "json")...)
	require.Equal(t, exitOK, code, errOut)
	require.NoError(t, json.Unmarshal([]byte(out), &v))
	runs := v["baseline_runs"].([]any)
	assert.Equal(t, "2026-09-22T10:01:00Z/2026-09-22T10:05:00Z", runs[0].(map[string]any)["window"])

	// Too few runs: refused, which is a judgement, not an error.
	code, out, _ = experiment(t, "--plan", plan, "--baseline", b[0], "--treatment", tr[0])
	assert.Equal(t, exitOK, code)
	assert.Contains(t, out, "verdict: refused")
}

func TestExperimentUsage(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte("{\n  \"hypothesis\": \"x\",\n  oops\n}"), 0o644))
	tests := []struct {
		name string
		args []string
		code int
		err  string
	}{
		{"no plan", []string{"--baseline", "a", "--treatment", "b"}, exitUsage, "--plan is required"},
		{"no runs", []string{"--plan", bad}, exitUsage, "--baseline RUN and --treatment RUN"},
		{"positional", []string{"--plan", bad, "--baseline", "a", "--treatment", "b", "extra"}, exitUsage, `unexpected argument "extra"`},
		{"format", []string{"--plan", bad, "--baseline", "a", "--treatment", "b", "--format", "html"}, exitUsage, `--format "html"`},
		{"warmup", []string{"--plan", bad, "--baseline", "a", "--treatment", "b", "--warmup", "soon"}, exitUsage, `--warmup "soon"`},
		{"bad plan", []string{"--plan", bad, "--baseline", "a", "--treatment", "b"}, exitInput, "bad.json:3: offset"},
		{"missing plan", []string{"--plan", filepath.Join(dir, "none.json"), "--baseline", "a", "--treatment", "b"}, exitInput, "none.json"},
		{"help", []string{"--help"}, exitOK, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := experiment(t, tt.args...)
			assert.Equal(t, tt.code, code, errOut)
			assert.Contains(t, errOut, tt.err)
		})
	}
}

func TestParseRun(t *testing.T) {
	tests := []struct {
		spec, path, window string
		err                bool
	}{
		{"runs/b1/", "runs/b1/", "whole", false},
		{"data@2026-09-22T10:00:00Z/2026-09-22T10:20:00Z", "data", "2026-09-22T10:00:00Z/2026-09-22T10:20:00Z", false},
		{"data@2026-09-22T10:00:00Z/20m", "data", "2026-09-22T10:00:00Z/2026-09-22T10:20:00Z", false},
		{"user@host", "user@host", "whole", false},
		{"data@yesterday/today", "", "", true},
		{"@2026-09-22T10:00:00Z/20m", "", "", true},
		{"", "", "", true},
	}
	for _, tt := range tests {
		path, w, err := parseRun(tt.spec)
		if tt.err {
			assert.Error(t, err, tt.spec)
			continue
		}
		require.NoError(t, err, tt.spec)
		assert.Equal(t, tt.path, path)
		assert.Equal(t, tt.window, w.String())
	}
}
