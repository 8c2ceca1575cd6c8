package snapshot

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeFleet is what a streaming source reads: pod-a, pod-b (whose counter
// drops without a restart, its other does not) and pod-c, scraped every 30 s for 3 h
// (with wide, every 90 s for 9 h: a span where outliers are possible,
// none there); with late, pod-c has 4 more scrapes two days later (time
// outliers).
func fakeFleet(late, wide bool) *Evidence {
	t0 := time.Date(2026, 9, 22, 10, 0, 0, 0, time.UTC)
	mk := func(name string, extra int, drop bool) *Target {
		var ts []int64
		step := 30 * time.Second
		if wide {
			step = 90 * time.Second
		}
		for i := range 360 {
			ts = append(ts, t0.Add(time.Duration(i)*step).UnixMilli())
		}
		for i := range extra {
			ts = append(ts, t0.Add(48*time.Hour+time.Duration(i)*30*time.Second).UnixMilli())
		}
		tg := &Target{Name: name, NameFrom: "pod", Families: map[string]*Family{}}
		c := &Series{Name: "x_total", Labels: labels.FromStrings("pod", name)}
		y := &Series{Name: "y_total", Labels: labels.FromStrings("pod", name)}
		g := &Series{Name: "g", Labels: labels.FromStrings("pod", name)}
		for i, t := range ts {
			tg.Scrapes = append(tg.Scrapes, Scrape{Time: time.UnixMilli(t).UTC(), TimeFrom: TimeFromTSDB})
			v := float64(i)
			if drop && i >= 100 && i < 110 {
				v = 1
			}
			c.T, c.V = append(c.T, t), append(c.V, v)
			y.T, y.V = append(y.T, t), append(y.V, float64(2*i))
			g.T, g.V = append(g.T, t), append(g.V, float64(i%3))
		}
		tg.Families["x_total"] = &Family{Name: "x_total", Type: model.MetricTypeCounter, TypeInferred: true, Series: []*Series{c}}
		tg.Families["y_total"] = &Family{Name: "y_total", Type: model.MetricTypeCounter, TypeInferred: true, Series: []*Series{y}}
		tg.Families["g"] = &Family{Name: "g", Type: model.MetricTypeUnknown, TypeInferred: true, Series: []*Series{g}}
		return tg
	}
	extra := 0
	if late {
		extra = 4
	}
	return &Evidence{
		Targets:  []*Target{mk("pod-a", 0, false), mk("pod-b", 0, true), mk("pod-c", extra, false)},
		Sources:  []string{"fake://prom"},
		Problems: []Problem{{Severity: SeverityWarning, File: "fake://prom", Offset: -1, Err: errors.New("a warning of the source")}},
	}
}

// fakeStream is a streaming source over fakeFleet, counting its reads.
func fakeStream(late, wide bool, reads *int) Source {
	return Source{
		Name:  "fake",
		Match: func(p string) bool { return strings.HasPrefix(p, "fake://") },
		Read:  func(context.Context, string, Options) (*Evidence, error) { return fakeFleet(late, wide), nil },
		ReadEach: func(_ context.Context, _ string, _ Options, span func(int64, int64) error, visit func(*Target) error) (*Evidence, error) {
			*reads++
			e := fakeFleet(late, wide)
			lo, hi := e.Targets[0].Scrapes[0].Time.UnixMilli(), int64(0)
			for _, tg := range e.Targets {
				hi = max(hi, tg.Scrapes[len(tg.Scrapes)-1].Time.UnixMilli())
			}
			if err := span(lo, hi); err != nil {
				return nil, err
			}
			for i, tg := range e.Targets {
				e.Targets[i] = nil
				if err := visit(tg); err != nil {
					return nil, err
				}
			}
			return &Evidence{Sources: e.Sources, Problems: e.Problems}, nil
		},
	}
}

// The targets of a streaming source, visited by ReadEach, are Read's:
// built, checked for counters that drop and for time outliers (which need
// every target's scrape times: one more read of the source first, or,
// with Options.Revisit, a check after the read and a new start only where
// it finds some) as Read checks the whole evidence.
func TestReadEachStreamingSource(t *testing.T) {
	for _, tc := range []struct {
		name       string
		late, wide bool
		revisit    bool
		opts       Options
		wantReads  int
		revisits   int
		outliers   bool
	}{
		{name: "narrow span", wantReads: 1},
		{name: "narrow span, revisit", revisit: true, wantReads: 1},
		{name: "wide span", wide: true, wantReads: 3},
		{name: "wide span, revisit", wide: true, revisit: true, wantReads: 1},
		{name: "time outliers", late: true, wantReads: 3, outliers: true},
		{name: "time outliers, revisit", late: true, revisit: true, wantReads: 3, revisits: 1, outliers: true},
		{name: "time outliers kept", late: true, opts: Options{KeepTimeOutliers: true}, wantReads: 3, outliers: true},
		{name: "time outliers kept, revisit", late: true, revisit: true, opts: Options{KeepTimeOutliers: true}, wantReads: 3, revisits: 1, outliers: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reads := 0
			withSources(t, []Source{fakeStream(tc.late, tc.wide, &reads)}, func() {
				want, err := Read(context.Background(), []string{"fake://prom"}, tc.opts)
				require.NoError(t, err)
				var got []*Target
				revisits := 0
				opts := tc.opts
				if tc.revisit {
					opts.Revisit = func() error {
						revisits++
						got = nil
						return nil
					}
				}
				ev, err := ReadEach(context.Background(), []string{"fake://prom"}, opts, func(tg *Target) error {
					got = append(got, tg)
					return nil
				})
				require.NoError(t, err)
				assert.Equal(t, tc.wantReads, reads)
				assert.Equal(t, tc.revisits, revisits)
				assert.Equal(t, want.Targets, got)
				assert.Nil(t, ev.Targets)
				assert.Equal(t, want.Sources, ev.Sources)
				assert.Equal(t, problemTexts(want.Problems), problemTexts(ev.Problems), "the same problems in the same order")
				assert.NotEmpty(t, ev.ProblemsOf(ErrInconsistent))
				assert.Equal(t, tc.outliers, len(ev.ProblemsOf(ErrTimeOutlier)) > 0)
			})
		})
	}
	t.Run("revisit error", func(t *testing.T) {
		reads := 0
		withSources(t, []Source{fakeStream(true, false, &reads)}, func() {
			stop := errors.New("stop")
			ev, err := ReadEach(context.Background(), []string{"fake://prom"}, Options{Revisit: func() error { return stop }}, func(*Target) error { return nil })
			require.ErrorIs(t, err, stop)
			assert.Nil(t, ev)
			assert.Equal(t, 1, reads)
		})
	})
	t.Run("visit error", func(t *testing.T) {
		reads := 0
		withSources(t, []Source{fakeStream(true, false, &reads)}, func() {
			stop := errors.New("stop")
			n := 0
			ev, err := ReadEach(context.Background(), []string{"fake://prom"}, Options{}, func(*Target) error { n++; return stop })
			require.ErrorIs(t, err, stop)
			assert.Nil(t, ev)
			assert.Equal(t, 1, n)
		})
	})
}

func problemTexts(ps []Problem) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}

// anyTimeOutlier, the check of Options.Revisit, says whether
// timeOutliers names a scrape, on any times.
func FuzzAnyTimeOutlier(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 200}, uint8(60), uint8(0))
	f.Add([]byte{10, 10, 10}, uint8(1), uint8(1))
	f.Add([]byte{1, 2}, uint8(255), uint8(0))
	f.Fuzz(func(t *testing.T, at []byte, unit, unknown uint8) {
		step := time.Duration(unit) * 10 * time.Minute
		t0 := time.Date(2026, 9, 22, 10, 0, 0, 0, time.UTC)
		tg := &Target{Name: "a"}
		var times []int64
		for i, b := range at {
			sc := Scrape{Time: t0.Add(time.Duration(b) * step), TimeFrom: TimeFromTSDB}
			if unknown > 0 && i%int(unknown) == 0 {
				sc.TimeFrom = TimeUnknown
			} else {
				times = append(times, sc.Time.UnixMilli())
			}
			tg.Scrapes = append(tg.Scrapes, sc)
		}
		b := NewBuilder(Options{})
		want := len(b.timeOutliers(&Evidence{Targets: []*Target{tg}})) > 0
		assert.Equal(t, want, anyTimeOutlier(len(tg.Scrapes), times))
	})
}
