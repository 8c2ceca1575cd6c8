package main

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/diagnose"
	"github.com/whyslow/whyslow/internal/fleetsim"
	"github.com/whyslow/whyslow/internal/fleetsim/simtsdb"
	"github.com/whyslow/whyslow/snapshot"
)

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
			require.NoError(t, simtsdb.Write(fleet, dir, fleetsim.TSDBOptions{HeadSpan: -1}))
			whole, err := snapshot.Read(context.Background(), []string{dir}, snapshot.Options{KeepTimeOutliers: true})
			require.NoError(t, err)
			// One gauge of the first pod, scraped 4 more times.
			tg := whole.Targets[0]
			g := tg.Families["vllm:num_requests_waiting"].Series[0]
			lset := labels.NewBuilder(g.Labels).Set(model.MetricNameLabel, g.Name).Labels()
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

			got, ev := requireDiagnosedAsWhole(t, dir, diagnose.Options{})
			outlier := tc.after > 24*time.Hour
			assert.Equal(t, outlier, len(ev.ProblemsOf(snapshot.ErrTimeOutlier)) > 0)
			if first, end := ev.Span(); !outlier {
				require.Greater(t, end.Sub(first), 6*time.Hour, "a history over 6 h")
			}
			if outlier {
				assert.Equal(t, expect, got["verdict"])
			}
		})
	}
}
