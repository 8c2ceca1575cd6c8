package diagnose_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/diagnose"
	"github.com/whyslow/whyslow/internal/fleetsim"
	"github.com/whyslow/whyslow/internal/matrix"
	"github.com/whyslow/whyslow/snapshot"
)

// windowsOf returns ev as a read of the survey's windows gives it: each
// target's samples over the ranges sv reads (their hull).
func windowsOf(t *testing.T, ev *snapshot.Evidence, sv *diagnose.Survey) *snapshot.Evidence {
	t.Helper()
	rs := sv.ReadRanges()
	require.NotEmpty(t, rs)
	out := *ev
	out.Targets = nil
	for _, tg := range ev.Targets {
		w := within(tg, rs[0].Start, rs[len(rs)-1].End, nil)
		if len(w.Scrapes) > 0 {
			out.Targets = append(out.Targets, w)
		}
	}
	return &out
}

// reduced returns the targets of ev through sv.Reduce, in order.
func reduced(t *testing.T, ev *snapshot.Evidence, sv *diagnose.Survey) *snapshot.Evidence {
	t.Helper()
	out := *ev
	out.Targets = nil
	for _, tg := range ev.Targets {
		r, err := sv.Reduce(tg)
		require.NoError(t, err)
		out.Targets = append(out.Targets, r)
	}
	return &out
}

// TestReduceIsTheDiagnosis checks, on every scenario of the simulator,
// that a diagnosis of the windows' targets reduced one at a time
// (Survey.Reduce: their histograms measured, their samples dropped) is
// the diagnosis of the windows' targets as read, to the byte of the JSON
// report, and that the reduction dropped histogram samples.
func TestReduceIsTheDiagnosis(t *testing.T) {
	type fleet struct {
		name string
		cfg  fleetsim.Config
		tsdb bool // read from a TSDB (instance labels, restarts at new addresses)
	}
	var fleets []fleet
	for _, spec := range fleetsim.Scenarios() {
		fleets = append(fleets, fleet{spec.Name, spec.Config, false})
	}
	for _, c := range fleetsim.MatrixCases() {
		fleets = append(fleets, fleet{"matrix-" + c.Name, c.Config(4, 1, (c.KnobMin+c.KnobMax)/2), c.TSDB})
	}
	if testing.Short() {
		fleets = fleets[:3]
	}
	for _, fl := range fleets {
		t.Run(fl.name, func(t *testing.T) {
			t.Parallel()
			f, ev := simulateFleet(t, fl.cfg)
			if fl.tsdb {
				var err error
				ev, err = matrix.TSDBEvidence(f)
				require.NoError(t, err)
			}
			sv, _ := survey(t, ev, diagnose.Options{})
			if len(sv.ReadRanges()) == 0 {
				t.Skip("lifetime windows: nothing to reduce")
			}
			win := windowsOf(t, ev, sv)
			ref, err := diagnose.Diagnose(win, diagnose.Options{Survey: sv})
			require.NoError(t, err)
			red := reduced(t, win, sv)
			dropped := false
			for i, tg := range red.Targets {
				for name, f := range tg.Families {
					if len(f.Histograms) > 0 && len(f.Histograms[0].T) == 0 && len(win.Targets[i].Families[name].Histograms[0].T) > 0 {
						dropped = true
					}
				}
			}
			assert.True(t, dropped, "no histogram samples dropped")
			got, err := diagnose.Diagnose(red, diagnose.Options{Survey: sv})
			require.NoError(t, err)
			assert.Equal(t, reportJSON(t, ref, false), reportJSON(t, got, false))
		})
	}
}

// TestReduceOrder checks that Reduce takes targets in name order, starts
// over when the first comes again (a read that starts over), and that a
// diagnosis refuses evidence of which only some targets were reduced.
func TestReduceOrder(t *testing.T) {
	ev := simulatePods(t, "kv-preemption", 3)
	sv, _ := survey(t, ev, diagnose.Options{})
	win := windowsOf(t, ev, sv)
	require.Len(t, win.Targets, 3)
	names := make([]string, len(win.Targets))
	for i, tg := range win.Targets {
		names[i] = tg.Name
	}
	require.True(t, slices.IsSorted(names))

	ref, err := diagnose.Diagnose(win, diagnose.Options{Survey: sv})
	require.NoError(t, err)

	_, err = sv.Reduce(win.Targets[1])
	require.NoError(t, err)
	_, err = sv.Reduce(win.Targets[0])
	require.ErrorContains(t, err, "name order")
	_, err = sv.Reduce(win.Targets[1]) // the first again: starts over
	require.NoError(t, err)
	_, err = sv.Reduce(win.Targets[2])
	require.NoError(t, err)
	_, err = sv.Reduce(win.Targets[2])
	require.ErrorContains(t, err, "name order", "each once")

	sv, _ = survey(t, ev, diagnose.Options{})
	// The first target again starts over; the third keeps its samples.
	part := *win
	part.Targets = slices.Clone(win.Targets)
	for i := range 2 {
		part.Targets[i], err = sv.Reduce(win.Targets[i])
		require.NoError(t, err)
	}
	_, err = diagnose.Diagnose(&part, diagnose.Options{Survey: sv})
	require.ErrorContains(t, err, "was not reduced")

	// All three, starting over once more.
	got, err := diagnose.Diagnose(reduced(t, win, sv), diagnose.Options{Survey: sv})
	require.NoError(t, err)
	assert.Equal(t, reportJSON(t, ref, false), reportJSON(t, got, false))
}
