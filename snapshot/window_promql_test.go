package snapshot_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/snapshot"
)

// TestIncreaseMatchesPromQL compares Series.Increase with PromQL where the
// semantics coincide: without a reset in the window, the increase is
// "x - x offset d" evaluated at the window's end; the number of resets is
// resets(x[d]) when no reset falls in the first step (PromQL's range
// (t-d, t] does not hold the start edge sample at t-d).
func TestIncreaseMatchesPromQL(t *testing.T) {
	// 200 scrapes 15s apart from the Unix epoch, with a reset at scrape 120
	// and a missed scrape at 50.
	var vals []string
	s := &snapshot.Series{Name: "x", Labels: labels.EmptyLabels()}
	for i := range 200 {
		v := float64(3 * i)
		if i >= 120 {
			v = float64(2 * (i - 120))
		}
		if i == 50 {
			vals = append(vals, "_")
			continue
		}
		vals = append(vals, fmt.Sprint(v))
		s.T = append(s.T, int64(i)*15000)
		s.V = append(s.V, v)
	}
	st := promqltest.LoadedStorage(t, "load 15s\n  x "+strings.Join(vals, " "))
	eng := promqltest.NewTestEngine(t, false, snapshot.Lookback, promqltest.DefaultMaxSamplesPerQuery)
	query := func(q string, ts time.Time) float64 {
		t.Helper()
		qry, err := eng.NewInstantQuery(context.Background(), st, nil, q, ts)
		require.NoError(t, err)
		defer qry.Close()
		vec, err := qry.Exec(context.Background()).Vector()
		require.NoError(t, err)
		require.Len(t, vec, 1, q)
		return vec[0].F
	}

	resets := 0
	for _, tc := range []struct {
		end, d time.Duration
	}{
		{10 * time.Minute, 10 * time.Minute},
		{10*time.Minute + 7*time.Second, 5 * time.Minute}, // between scrapes
		{29*time.Minute + 59*time.Second, 17 * time.Minute},
		{49*time.Minute + 45*time.Second, 19 * time.Minute},
		{40 * time.Minute, 20 * time.Minute}, // reset at 30m
		{41*time.Minute + 3*time.Second, 14 * time.Minute},
	} {
		end := time.Unix(0, 0).Add(tc.end)
		w := snapshot.Window{Start: end.Add(-tc.d), End: end}
		inc, err := s.Increase(w)
		require.NoError(t, err)
		q := fmt.Sprintf("x - x offset %s", model(tc.d))
		resets += inc.Resets
		if inc.Resets == 0 {
			assert.Equal(t, query(q, end), inc.Value, "%s at %s", q, w)
		} else {
			assert.NotEqual(t, query(q, end), inc.Value, "%s at %s", q, w)
		}
		assert.Equal(t, query(fmt.Sprintf("resets(x[%s])", model(tc.d)), end), float64(inc.Resets), "resets at %s", w)
	}
	require.Equal(t, 2, resets, "the reset was in two of the windows")
}

// model formats d as a PromQL duration.
func model(d time.Duration) string { return fmt.Sprintf("%ds", int(d.Seconds())) }
