package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/diagnose"
	"github.com/whyslow/whyslow/internal/fleetsim"
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
	require.NoError(t, fleet.WriteTSDB(dir, fleetsim.TSDBOptions{HeadSpan: -1}))
	require.True(t, snapshot.Streams([]string{dir}))

	for _, tc := range []struct {
		flag string
		opts diagnose.Options
	}{
		{"30m0s", diagnose.Options{}},
		{"10m", diagnose.Options{MaxWindow: 10 * time.Minute}},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			code, out, stderr := whyslow(t, "", "diagnose", "--format", "json", "--max-window", tc.flag, dir)
			require.Equal(t, 0, code, stderr)
			ev, err := snapshot.Read(context.Background(), []string{dir}, snapshot.Options{SandboxDir: t.TempDir()})
			require.NoError(t, err)
			rep, err := diagnose.Diagnose(ev, tc.opts)
			require.NoError(t, err)
			got := requireReportJSON(t, rep, out)
			assert.Equal(t, expect, got["verdict"])
		})
	}
}

// TestDiagnoseSurveyedLongTSDB checks the survey of a TSDB whose history
// spans more than 6 h, where a scrape may lie far outside the rest (a time
// outlier, left out): the survey is made as the targets are read and the
// scrape times checked at the end (snapshot.Options.Revisit). A few more
// scrapes of one pod 5 h 45 min after the fleet's hour are no outlier, and the
// survey is made once; two days after, they are, and it starts over. Either
// way the JSON report is the one Diagnose gives for the whole directory.
func TestDiagnoseSurveyedLongTSDB(t *testing.T) {
	fleet, expect := smallFleet(t, "kv-preemption", 0)
	for _, tc := range []struct {
		name  string
		after time.Duration
	}{
		{"no outlier", 5*time.Hour + 45*time.Minute},
		{"outlier", 48 * time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, fleet.WriteTSDB(dir, fleetsim.TSDBOptions{HeadSpan: -1}))
			whole, err := snapshot.Read(context.Background(), []string{dir}, snapshot.Options{SandboxDir: t.TempDir(), KeepTimeOutliers: true})
			require.NoError(t, err)
			// One gauge of the first pod, scraped 4 more times.
			tg := whole.Targets[0]
			g := tg.Families["vllm:num_requests_waiting"].Series[0]
			lset := labels.NewBuilder(g.Labels).Set(labels.MetricName, g.Name).Labels()
			_, last := whole.Span()
			w, err := tsdb.NewBlockWriter(slog.New(slog.DiscardHandler), dir, (2 * time.Hour).Milliseconds())
			require.NoError(t, err)
			app := w.AppenderV2(context.Background())
			for i := range 4 {
				ts := last.Add(tc.after + time.Duration(i)*15*time.Second).UnixMilli()
				_, err := app.Append(0, lset, 0, ts, 1, nil, nil, storage.AOptions{})
				require.NoError(t, err)
			}
			require.NoError(t, app.Commit())
			_, err = w.Flush(context.Background())
			require.NoError(t, err)
			require.NoError(t, w.Close())

			code, out, stderr := whyslow(t, "", "diagnose", "--format", "json", dir)
			require.Equal(t, 0, code, stderr)
			ev, err := snapshot.Read(context.Background(), []string{dir}, snapshot.Options{SandboxDir: t.TempDir()})
			require.NoError(t, err)
			outlier := tc.after > 24*time.Hour
			assert.Equal(t, outlier, len(ev.ProblemsOf(snapshot.ErrTimeOutlier)) > 0)
			if first, end := ev.Span(); !outlier {
				require.Greater(t, end.Sub(first), 6*time.Hour, "a history over 6 h")
			}
			rep, err := diagnose.Diagnose(ev, diagnose.Options{})
			require.NoError(t, err)
			got := requireReportJSON(t, rep, out)
			if outlier {
				assert.Equal(t, expect, got["verdict"])
			}
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
	require.NoError(t, fleet.WriteTSDB(dir, fleetsim.TSDBOptions{HeadSpan: -1}))
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
	require.NoError(t, fleet.WriteTSDB(dir, fleetsim.TSDBOptions{HeadSpan: -1}))
	start := fleet.Config.Start
	if start.IsZero() {
		start = fleetsim.DefaultStart
	}
	opts := diagnose.Options{
		Baseline: snapshot.Window{Start: start.Add(2 * time.Minute), End: start.Add(12 * time.Minute)},
		Incident: snapshot.Window{Start: start.Add(42 * time.Minute), End: start.Add(55 * time.Minute)},
	}
	ranges := opts.ReadRanges()
	require.Len(t, ranges, 2, "the windows are read apart")
	rfc := func(w snapshot.Window) string {
		return w.Start.UTC().Format(time.RFC3339) + "/" + w.End.UTC().Format(time.RFC3339)
	}
	code, out, stderr := whyslow(t, "", "diagnose", "--format", "json", "--baseline", rfc(opts.Baseline), "--incident", rfc(opts.Incident), dir)
	require.Equal(t, 0, code, stderr)

	trim, err := opts.Trimmer()
	require.NoError(t, err)
	var evs []*snapshot.Evidence
	for _, r := range ranges {
		sel := opts.Selection()
		sel.Start, sel.End, sel.SandboxDir = r.Start, r.End, t.TempDir()
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

// requireReportJSON asserts that out, the command's JSON report, is rep's
// (with the library's option names as the command's flags), and returns
// it decoded.
func requireReportJSON(t *testing.T, rep *diagnose.Report, out string) map[string]any {
	t.Helper()
	var want, got map[string]any
	var buf bytes.Buffer
	require.NoError(t, rep.WriteJSON(&buf))
	require.NoError(t, json.Unmarshal([]byte(flagHints.Replace(buf.String())), &want))
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	assert.Equal(t, want, got)
	return got
}
