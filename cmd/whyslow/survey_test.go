package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/diagnose"
	"github.com/whyslow/whyslow/internal/fleetsim"
	"github.com/whyslow/whyslow/internal/fleetsim/simtsdb"
	wsreport "github.com/whyslow/whyslow/report"
	"github.com/whyslow/whyslow/snapshot"
)

// TestDiagnoseSurveyedTSDB checks the command's path for a history: a TSDB
// directory without --incident is surveyed target by target and only the
// chosen windows are read, and the JSON report is the one Diagnose gives
// for the whole directory read at once; with --max-window 10m the windows
// leave most of the hour unread.
func TestDiagnoseSurveyedTSDB(t *testing.T) {
	fleet, expect := smallFleet(t, "kv-preemption", 0)
	dir := t.TempDir()
	require.NoError(t, simtsdb.Write(fleet, dir, fleetsim.TSDBOptions{HeadSpan: -1}))
	require.True(t, snapshot.Streams([]string{dir}))

	for _, tc := range []struct {
		flag string
		opts diagnose.Options
	}{
		{"30m0s", diagnose.Options{}},
		{"10m", diagnose.Options{MaxWindow: 10 * time.Minute}},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			got, _ := requireDiagnosedAsWhole(t, dir, tc.opts, "--max-window", tc.flag)
			assert.Equal(t, expect, got["verdict"])
		})
	}
}

// TestDiagnoseTSDBSaysWhyNothingMatched checks that the streamed reads
// of a TSDB (the survey, the windows read target by target) still say why
// a question matched nothing, as a whole read does: windows outside the
// evidence, a --match that selects no series.
func TestDiagnoseTSDBSaysWhyNothingMatched(t *testing.T) {
	fleet, _ := smallFleet(t, "healthy", 0)
	dir := t.TempDir()
	require.NoError(t, simtsdb.Write(fleet, dir, fleetsim.TSDBOptions{HeadSpan: -1}))
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--baseline", "2030-01-01T00:00:00Z/2030-01-01T01:00:00Z", "--incident", "2030-01-01T01:00:00Z/2030-01-01T02:00:00Z"},
			[]string{"matched nothing; read the rest of the evidence to say why", "--baseline 2030-01-01T00:00:00Z–2030-01-01T01:00:00Z lies outside the evidence"}},
		{[]string{"--match", `{pod="nope"}`}, []string{`no data matching --match {pod="nope"}`}},
	} {
		code, _, stderr := whyslow(t, "", append(append([]string{"diagnose"}, tc.args...), dir)...)
		assert.Equal(t, 1, code, stderr)
		for _, w := range tc.want {
			assert.Contains(t, stderr, w)
		}
	}
}

// TestDiagnoseTSDBRangesApart checks the command's path for given windows
// far apart on a TSDB: each range is read target by target, and each
// target of the second merged into the first's as it is read; the JSON
// report is the one Diagnose gives for snapshot.MergeRanges of the two
// ranges read and trimmed apart.
func TestDiagnoseTSDBRangesApart(t *testing.T) {
	fleet, _ := smallFleet(t, "kv-preemption", 0)
	dir := t.TempDir()
	require.NoError(t, simtsdb.Write(fleet, dir, fleetsim.TSDBOptions{HeadSpan: -1}))
	start := cmp.Or(fleet.Config.Start, fleetsim.DefaultStart)
	opts := diagnose.Options{
		Baseline: snapshot.Window{Start: start.Add(2 * time.Minute), End: start.Add(12 * time.Minute)},
		Incident: snapshot.Window{Start: start.Add(42 * time.Minute), End: start.Add(55 * time.Minute)},
	}
	ranges := opts.ReadRanges()
	require.Len(t, ranges, 2, "the windows are read apart")
	code, out, stderr := whyslow(t, "", "diagnose", "--format", "json", "--baseline", rfcWindow(opts.Baseline), "--incident", rfcWindow(opts.Incident), dir)
	require.Equal(t, 0, code, stderr)

	trim, err := opts.Trimmer()
	require.NoError(t, err)
	var evs []*snapshot.Evidence
	for _, r := range ranges {
		sel := opts.Selection()
		sel.Start, sel.End = r.Start, r.End
		ev, err := snapshot.Read(context.Background(), []string{dir}, sel)
		require.NoError(t, err)
		for i, tg := range ev.Targets {
			ev.Targets[i] = trim(tg)
		}
		evs = append(evs, ev)
	}
	rep, err := diagnose.Diagnose(snapshot.MergeRanges(evs...), opts)
	require.NoError(t, err)
	requireReportJSON(t, rep, out)
}

// TestDiagnoseTSDBGivenWindowsSurveyed checks the command's path for
// given windows that one range covers on a TSDB (the incident and all
// before it too, --max-window 0): the range is surveyed
// target by target and read again with the windows' histograms reduced
// as read (diagnose.Survey.Reduce), and the JSON report is the one
// Diagnose gives for the range read whole and trimmed: on an incident, a
// restart (samples before and after a reset), pods of two vLLM versions
// and an overload.
func TestDiagnoseTSDBGivenWindowsSurveyed(t *testing.T) {
	for _, scenario := range []string{"kv-preemption", "restart", "mixed-versions", "sustained-overload"} {
		fleet, expect := smallFleet(t, scenario, 0)
		dir := t.TempDir()
		require.NoError(t, simtsdb.Write(fleet, dir, fleetsim.TSDBOptions{HeadSpan: -1}))
		start := cmp.Or(fleet.Config.Start, fleetsim.DefaultStart)
		base := snapshot.Window{Start: start.Add(7 * time.Minute), End: start.Add(22 * time.Minute)}
		inc := snapshot.Window{Start: start.Add(25 * time.Minute), End: start.Add(40 * time.Minute)}
		for _, tc := range []struct {
			name  string
			opts  diagnose.Options
			flags []string
		}{
			{"baseline-and-incident", diagnose.Options{Baseline: base, Incident: inc}, []string{"--baseline", rfcWindow(base), "--incident", rfcWindow(inc)}},
			{"incident-alone", diagnose.Options{Incident: inc}, []string{"--incident", rfcWindow(inc)}},
			{"all-before-incident", diagnose.Options{Incident: inc, MaxWindow: -1}, []string{"--incident", rfcWindow(inc), "--max-window", "0"}},
		} {
			t.Run(scenario+"/"+tc.name, func(t *testing.T) {
				require.LessOrEqual(t, len(tc.opts.ReadRanges()), 1, "one range covers the windows")
				code, out, stderr := whyslow(t, "", append(append([]string{"diagnose", "--format", "json"}, tc.flags...), dir)...)
				require.Equal(t, 0, code, stderr)
				trim, err := tc.opts.Trimmer()
				require.NoError(t, err)
				ev, err := snapshot.Read(context.Background(), []string{dir}, tc.opts.Selection())
				require.NoError(t, err)
				for i, tg := range ev.Targets {
					ev.Targets[i] = trim(tg)
				}
				rep, err := diagnose.Diagnose(ev, tc.opts)
				require.NoError(t, err)
				if scenario == "kv-preemption" {
					assert.Equal(t, expect, string(rep.Verdict))
				}
				requireReportJSON(t, rep, out)
			})
		}
	}
}

// rfcWindow writes w as the command's window flags take it.
func rfcWindow(w snapshot.Window) string {
	return w.Start.UTC().Format(time.RFC3339) + "/" + w.End.UTC().Format(time.RFC3339)
}

// requireDiagnosedAsWhole runs "diagnose --format json" with flags on
// the TSDB dir and asserts that its report is the one Diagnose gives under
// opts for the whole directory read at once; it returns the report decoded
// and that evidence.
func requireDiagnosedAsWhole(t *testing.T, dir string, opts diagnose.Options, flags ...string) (map[string]any, *snapshot.Evidence) {
	t.Helper()
	code, out, stderr := whyslow(t, "", append(append([]string{"diagnose", "--format", "json"}, flags...), dir)...)
	require.Equal(t, 0, code, stderr)
	ev, err := snapshot.Read(context.Background(), []string{dir}, snapshot.Options{})
	require.NoError(t, err)
	rep, err := diagnose.Diagnose(ev, opts)
	require.NoError(t, err)
	return requireReportJSON(t, rep, out), ev
}

// requireReportJSON asserts that out, the command's JSON report, is rep's
// (with the library's option names as the command's flags), and returns
// it decoded.
func requireReportJSON(t *testing.T, rep *wsreport.Report, out string) map[string]any {
	t.Helper()
	var want, got map[string]any
	var buf bytes.Buffer
	require.NoError(t, rep.WriteJSON(&buf))
	require.NoError(t, json.Unmarshal([]byte(flagHints.Replace(buf.String())), &want))
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	assert.Equal(t, want, got)
	return got
}
