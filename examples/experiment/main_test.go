package main

import (
	"bytes"
	"encoding/json"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/diagnose"
	"github.com/whyslow/whyslow/rules"
)

// judged runs the experiment once for the tests that read its report.
var judged = sync.OnceValues(func() (*diagnose.ExperimentReport, error) { return experiment(rules.MinRuns) })

// TestAdopt checks the judgement: more KV space removes the preemptions
// and the E2E tail they caused, on the same workload, with exactly one
// configuration variable changed.
func TestAdopt(t *testing.T) {
	rep, err := judged()
	require.NoError(t, err)
	assert.Equal(t, rules.Adopt, rep.Verdict, rep.String())
	assert.Equal(t, string(rules.KVPreemption), rep.Plan.Hypothesis)
	assert.Equal(t, "0.6", rep.Plan.Change.From)
	assert.Equal(t, "0.9", rep.Plan.Change.To)
	assert.Len(t, rep.Baseline, rules.MinRuns)
	assert.Len(t, rep.Treatment, rules.MinRuns)
	for _, w := range rep.Workload {
		assert.Equal(t, "same", w.Outcome, w.Text)
	}
	for _, c := range rep.Metrics {
		if c.Metric == rules.PreemptionRate {
			assert.Less(t, c.Change, -0.5, "preemptions fall by more than half")
		}
	}
	assert.True(t, rep.Configuration.Visible, rep.Configuration.Text)
	assert.Equal(t, 120.0, rep.WarmUpSeconds)
}

func TestRun(t *testing.T) {
	if _, err := judged(); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run([]string{"-format", "json"}, &stdout, &stderr), stderr.String())
	var got struct {
		Verdict string `json:"verdict"`
		Plan    struct {
			Hypothesis string `json:"hypothesis"`
		} `json:"plan"`
	}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &got), stdout.String())
	assert.Equal(t, "adopt", got.Verdict)
	assert.Equal(t, "kv-preemption", got.Plan.Hypothesis)
}

func TestWrite(t *testing.T) {
	rep, err := judged()
	require.NoError(t, err)
	var text, md bytes.Buffer
	require.NoError(t, write(&text, rep, "text"))
	require.NoError(t, write(&md, rep, "markdown"))
	assert.Contains(t, text.String(), "verdict: adopt")
	assert.Contains(t, text.String(), "change gpu_memory_utilization from 0.6 to 0.9")
	assert.Contains(t, md.String(), "adopt")
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{{"-format", "pdf"}, {"-runs", "0"}, {"extra"}, {"-nope"}} {
		var stdout, stderr bytes.Buffer
		assert.Equal(t, 2, run(args, &stdout, &stderr), "%q", args)
		assert.Empty(t, stdout.String(), "%q", args)
		assert.Contains(t, stderr.String(), "-format", "%q: usage printed", args)
	}
}

// Too few runs is the plan's concern, not the program's: the judge
// refuses instead of adopting.
func TestTooFewRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates two more runs")
	}
	rep, err := experiment(1)
	require.NoError(t, err)
	assert.Equal(t, rules.Refused, rep.Verdict, rep.String())
}
