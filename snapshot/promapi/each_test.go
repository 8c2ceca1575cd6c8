package promapi_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/internal/promserver"
	"github.com/whyslow/whyslow/snapshot"
	"github.com/whyslow/whyslow/snapshot/promapi"
)

// writeEachTSDB writes 2 h of 30 s samples of seven pods (a gauge, a
// counter and a histogram each) and of the extra series, into a block
// directory under dir.
func writeEachTSDB(t *testing.T, dir string, t0 time.Time, extra ...labels.Labels) {
	t.Helper()
	var series []labels.Labels
	for p := range 7 {
		pod := fmt.Sprintf("pod-%d", p)
		series = append(series,
			labels.FromStrings("__name__", "vllm:num_requests_waiting", "pod", pod, "instance", fmt.Sprintf("10.0.1.%d:8000", p)),
			labels.FromStrings("__name__", "vllm:request_success_total", "pod", pod, "finished_reason", "stop"),
			labels.FromStrings("__name__", "vllm:e2e_request_latency_seconds_bucket", "pod", pod, "le", "1"),
			labels.FromStrings("__name__", "vllm:e2e_request_latency_seconds_bucket", "pod", pod, "le", "+Inf"),
			labels.FromStrings("__name__", "vllm:e2e_request_latency_seconds_sum", "pod", pod),
			labels.FromStrings("__name__", "vllm:e2e_request_latency_seconds_count", "pod", pod),
		)
	}
	series = append(series, extra...)
	ctx := context.Background()
	w, err := tsdb.NewBlockWriter(slog.New(slog.DiscardHandler), dir, (4 * time.Hour).Milliseconds())
	require.NoError(t, err)
	refs := make([]storage.SeriesRef, len(series))
	for i := range 240 {
		app := w.AppenderV2(ctx)
		ts := t0.Add(time.Duration(i) * 30 * time.Second).UnixMilli()
		for k, ls := range series {
			v := float64(i * (k%5 + 1))
			if ls.Get("le") == "+Inf" || strings.HasSuffix(ls.Get("__name__"), "_count") {
				v *= 2
			}
			refs[k], err = app.Append(refs[k], ls, 0, ts, v, nil, nil, storage.AOptions{})
			require.NoError(t, err)
		}
		require.NoError(t, app.Commit())
	}
	_, err = w.Flush(ctx)
	require.NoError(t, err)
	require.NoError(t, w.Close())
}

// serverProblems are the problems' texts without the read's cost note,
// whose counts differ between reads.
func serverProblems(ps []snapshot.Problem) []string {
	var out []string
	for _, p := range ps {
		if s := p.Error(); !strings.Contains(s, ": read with ") {
			out = append(out, s)
		}
	}
	return out
}

// TestReadEachAsRead serves fleets through a real Prometheus and checks
// that ReadEach visits the targets of Read, equal and in name order, with
// the same problems: batch by batch where it can (pods, and targets named
// otherwise that go between them), whole where a target's series span
// batches (exported_pod, a name shared with a pod, Options.TargetName).
// A memory budget that holds a few pods but not the fleet is enough for
// ReadEach batch by batch, and not for Read.
func TestReadEachAsRead(t *testing.T) {
	t0 := time.Date(2026, 9, 22, 10, 0, 0, 0, time.UTC)
	others := []labels.Labels{
		labels.FromStrings("__name__", "vllm:num_requests_waiting", "instance", "10.0.0.2:8000"), // before the pods
		labels.FromStrings("__name__", "vllm:num_requests_waiting", "job", "vllm-z"),             // after them
	}
	exporter := labels.FromStrings("__name__", "vllm:num_requests_waiting", "pod", "dcgm-1", "exported_pod", "pod-3")
	shared := labels.FromStrings("__name__", "vllm:num_requests_waiting", "instance", "pod-4")
	fixture := func(extra ...labels.Labels) string {
		dir := filepath.Join(t.TempDir(), "data")
		writeEachTSDB(t, dir, t0, extra...)
		return promserver.Prometheus(t, dir)
	}
	rng := snapshot.Options{Start: t0, End: t0.Add(2 * time.Hour)}
	withLabelsOnly := rng
	withLabelsOnly.LabelsOnly = []string{"vllm:e2e_request_latency_seconds"}
	renamed := rng
	renamed.TargetName = func(_, name string) string { return "replica-" + name }
	open := renamed // read whole, with the warning of an open start
	open.Start = time.Time{}
	open.End = rng.End.Add(time.Hour)
	for _, tc := range []struct {
		name    string
		url     string
		opts    snapshot.Options
		batched bool
		targets int
	}{
		{"pods and others", fixture(others...), rng, true, 9},
		{"labels only", fixture(others...), withLabelsOnly, true, 9},
		{"pods alone, a range", fixture(), snapshot.Options{Start: t0.Add(17 * time.Minute), End: t0.Add(49 * time.Minute)}, true, 7},
		{"exported_pod", fixture(exporter), rng, false, 7},
		{"a name shared", fixture(shared), rng, false, 7},
		{"renamed", fixture(), renamed, false, 7},
		{"renamed, open start", fixture(), open, false, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := promapi.Config{TargetsPerQuery: 2, MaxRange: 25 * time.Minute}
			ctx := promapi.WithConfig(context.Background(), cfg)
			whole := snapshot.NewMemoryBudget(1 << 30)
			o := tc.opts
			o.Memory = whole
			want, err := cfg.Read(ctx, tc.url, o)
			require.NoError(t, err)
			require.Len(t, want.Targets, tc.targets)

			var got []*snapshot.Target
			spans := 0
			ev, err := cfg.ReadEach(ctx, tc.url, tc.opts, func(minT, maxT int64) error {
				spans++
				assert.Empty(t, got, "span before the first visit")
				if !tc.opts.Start.IsZero() {
					assert.LessOrEqual(t, minT, tc.opts.Start.UnixMilli())
				}
				assert.GreaterOrEqual(t, maxT, tc.opts.End.UnixMilli())
				return nil
			}, func(tg *snapshot.Target) error {
				got = append(got, tg)
				return nil
			})
			require.NoError(t, err)
			assert.Equal(t, 1, spans)
			require.Equal(t, len(want.Targets), len(got))
			for i := range got {
				require.Equal(t, want.Targets[i], got[i], "target %d (%s)", i, want.Targets[i].Name)
			}
			assert.True(t, slices.IsSortedFunc(got, func(a, b *snapshot.Target) int { return strings.Compare(a.Name, b.Name) }))
			assert.Nil(t, ev.Targets)
			assert.Equal(t, want.Sources, ev.Sources)
			assert.ElementsMatch(t, serverProblems(want.Problems), serverProblems(ev.Problems))

			// Half of what Read holds: enough for two batches of two pods
			// at a time (one query in flight), not for the fleet.
			cfg.Concurrency = 1
			budget := func() *snapshot.MemoryBudget { return snapshot.NewMemoryBudget(whole.Used() / 2) }
			o.Memory = budget()
			_, err = cfg.Read(ctx, tc.url, o)
			var le *snapshot.LimitError
			require.ErrorAs(t, err, &le)
			o.Memory = budget()
			n := 0
			_, err = cfg.ReadEach(ctx, tc.url, o, func(int64, int64) error { return nil }, func(*snapshot.Target) error { n++; return nil })
			if tc.batched {
				require.NoError(t, err)
				assert.Equal(t, tc.targets, n)
			} else {
				require.ErrorAs(t, err, &le, "read whole")
			}
		})
	}

	t.Run("visit stops", func(t *testing.T) {
		url := fixture(others...)
		stop := errors.New("enough")
		var names []string
		_, err := snapshot.ReadEach(promapi.WithConfig(context.Background(), promapi.Config{TargetsPerQuery: 2}), []string{url}, rng,
			func(tg *snapshot.Target) error {
				names = append(names, tg.Name)
				if len(names) == 3 {
					return stop
				}
				return nil
			})
		require.ErrorIs(t, err, stop)
		assert.Equal(t, []string{"10.0.0.2:8000", "pod-0", "pod-1"}, names)
	})
}
