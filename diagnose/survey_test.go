package diagnose_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/diagnose"
	"github.com/whyslow/whyslow/internal/fleetsim"
	"github.com/whyslow/whyslow/snapshot"
)

// survey runs a Surveyor over ev's targets, as many passes as it asks
// for, and returns the survey and the number of passes.
func survey(t *testing.T, ev *snapshot.Evidence, opts diagnose.Options) (*diagnose.Survey, int) {
	t.Helper()
	s, err := diagnose.NewSurveyor(opts)
	require.NoError(t, err)
	for pass := 1; pass <= 2; pass++ {
		for _, tg := range ev.Targets {
			require.NoError(t, s.Add(tg))
		}
		sv, again, err := s.Survey()
		require.NoError(t, err)
		if !again {
			require.NotNil(t, sv)
			return sv, pass
		}
	}
	t.Fatal("the survey asked for a third pass")
	return nil, 0
}

// lateStart returns a copy of tg whose samples and scrapes before cut are
// gone: a replica that started later than the others.
func lateStart(tg *snapshot.Target, cut time.Time) *snapshot.Target {
	return within(tg, cut, time.Unix(1<<40, 0), nil)
}

// within returns a copy of tg with the samples and scrapes in [from, to]
// only, and only the families keep keeps (nil: all).
func within(tg *snapshot.Target, from, to time.Time, keep func(*snapshot.Family) bool) *snapshot.Target {
	lo, hi := from.UnixMilli(), to.UnixMilli()
	span := func(ts []int64) (int, int) {
		i, _ := slices.BinarySearch(ts, lo)
		j, _ := slices.BinarySearch(ts, hi+1)
		return i, max(i, j)
	}
	out := *tg
	out.Scrapes = nil
	for _, s := range tg.Scrapes {
		if !s.Time.Before(from) && !s.Time.After(to) {
			out.Scrapes = append(out.Scrapes, s)
		}
	}
	out.Families = map[string]*snapshot.Family{}
	for name, f := range tg.Families {
		if keep != nil && !keep(f) {
			continue
		}
		g := *f
		g.Series = nil
		for _, s := range f.Series {
			c := *s
			i, j := span(c.T)
			c.T, c.V = c.T[i:j], c.V[i:j]
			if c.StartT != nil {
				c.StartT = c.StartT[i:j]
			}
			g.Series = append(g.Series, &c)
		}
		g.Histograms = nil
		for _, h := range f.Histograms {
			c := *h
			i, j := span(c.T)
			n := len(c.Bounds)
			c.T, c.Counts, c.Sum, c.Count = c.T[i:j], c.Counts[i*n:j*n], c.Sum[i:j], c.Count[i:j]
			g.Histograms = append(g.Histograms, &c)
		}
		out.Families[name] = &g
	}
	return &out
}

// simulatePods simulates the first pods pods of scenario name (its
// traffic unscaled) and reads their dumps back.
func simulatePods(t *testing.T, name string, pods int) *snapshot.Evidence {
	t.Helper()
	spec, ok := fleetsim.LookupScenario(name)
	require.True(t, ok, name)
	cfg := spec.Config
	cfg.NumPods, cfg.Pods = pods, nil
	return simulate(t, cfg)
}

// TestSurveyIsTheWholeDiagnosis checks that a diagnosis that takes its
// timelines, change point and windows from a survey of the targets one at
// a time is the diagnosis of the whole evidence, in one pass when every
// replica was scraped over the same minutes and in two when the first
// replica read started later than the fleet.
func TestSurveyIsTheWholeDiagnosis(t *testing.T) {
	ev := simulatePods(t, "kv-preemption", 3)
	require.Len(t, ev.Targets, 3)
	late := *ev
	late.Targets = append([]*snapshot.Target{lateStart(ev.Targets[0], ev.Targets[0].Scrapes[0].Time.Add(7*time.Minute+20*time.Second))}, ev.Targets[1:]...)
	first, _ := ev.Span()
	base := snapshot.Window{Start: first.Add(5 * time.Minute), End: first.Add(20 * time.Minute)}
	inc := snapshot.Window{Start: first.Add(24 * time.Minute), End: first.Add(39 * time.Minute)}

	for _, tc := range []struct {
		name   string
		ev     *snapshot.Evidence
		opts   diagnose.Options
		passes int
	}{
		{"same minutes", ev, diagnose.Options{}, 1},
		{"first replica starts late", &late, diagnose.Options{}, 2},
		{"timeline step given", ev, diagnose.Options{TimelineStep: 2 * time.Minute}, 1},
		{"no bound on the windows", ev, diagnose.Options{MaxWindow: -1}, 1},
		// Windows given are kept, as Diagnose keeps them.
		{"windows given", ev, diagnose.Options{Baseline: base, Incident: inc}, 1},
		{"incident given", ev, diagnose.Options{Incident: inc}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ref, err := diagnose.Diagnose(tc.ev, tc.opts)
			require.NoError(t, err)
			sv, passes := survey(t, tc.ev, tc.opts)
			assert.Equal(t, tc.passes, passes, "%s", sv)
			opts := tc.opts
			opts.Survey = sv
			got, err := diagnose.Diagnose(tc.ev, opts)
			require.NoError(t, err)
			assert.Equal(t, reportJSON(t, ref, false), reportJSON(t, got, false))
			b, i := sv.Windows()
			assert.Equal(t, ref.Windows.Baseline.Start, b.Start)
			assert.Equal(t, ref.Windows.Incident.End, i.End)
			require.NotEmpty(t, sv.ReadRanges())
		})
	}
}

// TestSurveyRefusesGroups checks that evidence serving two models, which
// Diagnose splits, is refused with ErrSurveyGroups (the command then reads
// it whole).
func TestSurveyRefusesGroups(t *testing.T) {
	a := modelFleet(t, "healthy", "llama", "", 2)
	b := modelFleet(t, "healthy", "qwen", "", 2)
	for _, tg := range b.Targets {
		tg.Name += "-qwen"
	}
	ev := &snapshot.Evidence{Targets: append(append([]*snapshot.Target(nil), a.Targets...), b.Targets...)}
	s, err := diagnose.NewSurveyor(diagnose.Options{})
	require.NoError(t, err)
	for _, tg := range ev.Targets {
		require.NoError(t, s.Add(tg))
	}
	_, _, err = s.Survey()
	require.ErrorIs(t, err, diagnose.ErrSurveyGroups)
}

// TestMaxWindowBoundsChosenWindows checks that the windows either side of
// the change point are at most Options.MaxWindow long, and reach the
// first and last scrape without a bound.
func TestMaxWindowBoundsChosenWindows(t *testing.T) {
	ev := simulatePods(t, "kv-preemption", 2)
	first, last := ev.Span()
	for _, tc := range []struct {
		max  time.Duration
		full bool
	}{{10 * time.Minute, false}, {-1, true}} {
		rep, err := diagnose.Diagnose(ev, diagnose.Options{MaxWindow: tc.max})
		require.NoError(t, err)
		b, i := rep.Windows.Baseline, rep.Windows.Incident
		require.Equal(t, b.End, i.Start)
		if tc.full {
			assert.Equal(t, first, b.Start)
			assert.Equal(t, last, i.End)
			continue
		}
		assert.LessOrEqual(t, b.End.Sub(b.Start), tc.max)
		assert.LessOrEqual(t, i.End.Sub(i.Start), tc.max)
		assert.True(t, b.End.Sub(b.Start) == tc.max || i.End.Sub(i.Start) == tc.max, "a window was cut to MaxWindow")
	}
	_, err := diagnose.Diagnose(ev, diagnose.Options{MaxWindow: time.Minute})
	require.Error(t, err, "a MaxWindow shorter than MinWindow")
}

// sketchOf returns tg as a TSDB reader shows it to Options.ForTarget
// before it reads a sample: its families, their series listed by labels,
// without samples.
func sketchOf(tg *snapshot.Target) *snapshot.Target {
	sk := &snapshot.Target{Name: tg.Name, NameFrom: tg.NameFrom, Families: map[string]*snapshot.Family{}}
	for name, f := range tg.Families {
		sk.Families[name] = f.WithoutSamples()
	}
	return sk
}

// TestSurveyorLabelsOnlyFor checks, on a pod of each vLLM generation,
// that a survey lists by labels the candidates the catalog does not match
// (on 0.11, the older names it still exports beside the new ones) and
// never a family it measures.
func TestSurveyorLabelsOnlyFor(t *testing.T) {
	spec, ok := fleetsim.LookupScenario("healthy")
	require.True(t, ok)
	s, err := diagnose.NewSurveyor(diagnose.Options{})
	require.NoError(t, err)
	measured := []catalog.SignalID{catalog.SignalProcessStart, catalog.SignalTTFT, catalog.SignalQueueTime, catalog.SignalPrefillTime,
		catalog.SignalTPOT, catalog.SignalITL, catalog.SignalE2E, catalog.SignalWaiting, catalog.SignalRunning,
		catalog.SignalKVUsage, catalog.SignalPreemptions, catalog.SignalGPUUtil}
	for _, v := range []fleetsim.Version{fleetsim.VersionV1, fleetsim.VersionV1Early, fleetsim.VersionV0} {
		t.Run(v.String(), func(t *testing.T) {
			cfg := spec.Config
			cfg.NumPods, cfg.Pods, cfg.Version, cfg.Duration = 1, nil, v, 10*time.Minute
			ev := simulate(t, cfg)
			for _, tg := range ev.Targets {
				more := s.LabelsOnlyFor(sketchOf(tg))
				res := catalog.Default().ResolveTarget(tg)
				for _, id := range measured {
					m, ok := res.Match(id)
					if !ok || !m.Found() {
						continue
					}
					for _, name := range more {
						assert.NotEqual(t, m.Family.Name, snapshot.FamilyBaseName(name), "%s: %s measures %s", tg.Name, id, name)
					}
				}
				if v == fleetsim.VersionV1 && res.Engine != catalog.EngineNotVLLM {
					var listedHere []string
					for _, name := range more {
						if tg.Family(name) != nil {
							listedHere = append(listedHere, name)
						}
					}
					assert.Contains(t, listedHere, "vllm:time_per_output_token_seconds", "%s: ITL reads inter_token_latency on 0.11", tg.Name)
				}
			}
		})
	}
}

// TestSurveySkipFor checks which families a survey lets the windows' read
// skip: only those it read by their labels (no sample) that no signal
// matches; none of a target read in full, and never a matched family.
func TestSurveySkipFor(t *testing.T) {
	ev := simulatePods(t, "healthy", 2)
	cat := catalog.Default()

	sv, _ := survey(t, ev, diagnose.Options{})
	for _, tg := range ev.Targets {
		assert.Empty(t, sv.SkipFor(&snapshot.Target{Name: tg.Name}), "%s: read in full, every family has samples", tg.Name)
	}

	// As a survey's read lists them: every family but the matched ones by
	// labels alone, and one unmatched family decoded after all.
	listed := &snapshot.Evidence{}
	var kept string
	for _, tg := range ev.Targets {
		matched := map[string]bool{}
		for _, m := range cat.ResolveTarget(tg).Matches {
			if m.Found() {
				matched[m.Family.Name] = true
			}
		}
		c := *tg
		c.Families = map[string]*snapshot.Family{}
		for _, name := range tg.FamilyNames() {
			f := tg.Families[name]
			if !matched[name] && kept == "" && strings.HasSuffix(name, "_created") {
				kept = name // decoded after all
			}
			if matched[name] || name == kept {
				c.Families[name] = f
			} else {
				c.Families[name] = f.WithoutSamples()
			}
		}
		listed.Targets = append(listed.Targets, &c)
	}
	require.NotEmpty(t, kept)
	sv, _ = survey(t, listed, diagnose.Options{})
	for _, tg := range listed.Targets {
		skip := sv.SkipFor(&snapshot.Target{Name: tg.Name})
		require.NotEmpty(t, skip, tg.Name)
		for _, m := range cat.ResolveTarget(tg).Matches {
			if m.Found() {
				assert.NotContains(t, skip, m.Family.Name, "%s: %s is measured", tg.Name, m.Signal)
			}
		}
		assert.NotContains(t, skip, kept, "%s: read with samples", tg.Name)
		for _, name := range skip {
			assert.Zero(t, evidenceSamples(&snapshot.Evidence{Targets: []*snapshot.Target{{Families: map[string]*snapshot.Family{name: tg.Families[name]}}}}), name)
		}
	}
	assert.Empty(t, sv.SkipFor(&snapshot.Target{Name: "no-such-pod"}))
}
