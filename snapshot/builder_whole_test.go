package snapshot_test

import (
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/snapshot"
	"github.com/whyslow/whyslow/snapshot/internal/store"
)

// fuzzColumns builds, from data, the Columns of a small TSDB read: pods
// with a gauge, a counter and a classic histogram whose buckets come and
// go (layout changes), the series added in an order unrelated to labels.
func fuzzColumns(data []byte) *store.Columns {
	a := store.NewColumns("db", snapshot.Options{})
	les := []string{"0.5", "1", "2.5", "+Inf"}
	pods := int(data[0]%3) + 1
	rows := data[1:]
	for p := pods - 1; p >= 0; p-- {
		pod := "p" + strconv.Itoa(p)
		add := func(lset labels.Labels, keep func(i int, mask byte) bool, v func(i int) float64) {
			r := a.Series("db", lset)
			for i, mask := range rows {
				if keep(i, mask) {
					r.Append(int64(15000*i+p), v(i))
				}
			}
		}
		always := func(int, byte) bool { return true }
		add(labels.FromStrings("__name__", "g", "pod", pod), func(i int, m byte) bool { return m&0x80 == 0 }, func(i int) float64 { return float64(i) })
		add(labels.FromStrings("__name__", "c_total", "pod", pod), always, func(i int) float64 { return float64(i * 2) })
		for b := len(les) - 1; b >= 0; b-- {
			add(labels.FromStrings("__name__", "h_bucket", "pod", pod, "le", les[b]),
				func(i int, m byte) bool { return b == len(les)-1 || m&(1<<b) != 0 },
				func(i int) float64 { return float64(i*10 + b) })
		}
		add(labels.FromStrings("__name__", "h_sum", "pod", pod), always, func(i int) float64 { return float64(i) / 2 })
		add(labels.FromStrings("__name__", "h_count", "pod", pod), always, func(i int) float64 { return float64(i*10 + 3) })
	}
	return a
}

// FuzzBuilderTakesColumnsWhole: the evidence of Columns is taken whole by
// an adopting Builder, and what Evidence then returns equals the merge of
// the same evidence target by target.
func FuzzBuilderTakesColumnsWhole(f *testing.F) {
	f.Add([]byte{2, 0xff, 0x0f, 0x00, 0xff, 0x80})
	f.Add([]byte{0, 1, 2, 3})
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 || len(data) > 40 {
			return
		}
		whole := fuzzColumns(data).Evidence()
		require.True(t, snapshot.Canonical(whole, nil))
		b := snapshot.NewBuilder(snapshot.Options{})
		b.SetAdopt(true)
		b.AddEvidence(whole)
		require.True(t, b.TookWhole(), "taken whole")
		got := b.Evidence()

		e := fuzzColumns(data).Evidence()
		m := snapshot.NewBuilder(snapshot.Options{})
		m.SetAdopt(true)
		m.AddTargets(e)
		want := m.Evidence()
		require.Equal(t, want, got)
	})
}

// TestBuilderMergesWholeFirst: a second input merges the evidence taken
// whole before joining it, as if both had been merged target by target.
func TestBuilderMergesWholeFirst(t *testing.T) {
	data := []byte{1, 0xff, 0x0f, 0x00}
	b := snapshot.NewBuilder(snapshot.Options{})
	b.SetAdopt(true)
	b.AddEvidence(fuzzColumns(data).Evidence())
	b.SetAdopt(false)
	b.AddEvidence(&snapshot.Evidence{Sources: []string{"more"}, Targets: []*snapshot.Target{{Name: "p0", Families: map[string]*snapshot.Family{
		"x": {Name: "x", Series: []*snapshot.Series{{Name: "x", Labels: labels.FromStrings("pod", "p0"), T: []int64{1}, V: []float64{1}}}},
	}}}})
	got := b.Evidence()
	require.Len(t, got.Targets, 2)
	assert.Equal(t, []string{"db", "more"}, got.Sources)
	assert.Contains(t, got.Targets[0].Families, "x")
	assert.Contains(t, got.Targets[0].Families, "h")
}

// TestCanonical lists evidence that Builder.Evidence would change, which
// is then merged target by target.
func TestCanonical(t *testing.T) {
	series := func(name string, ts ...int64) *snapshot.Series {
		return &snapshot.Series{Name: name, Labels: labels.FromStrings("pod", "p"), T: ts, V: make([]float64, len(ts))}
	}
	target := func(name string, fams ...*snapshot.Family) *snapshot.Target {
		tg := &snapshot.Target{Name: name, Families: map[string]*snapshot.Family{}}
		for _, f := range fams {
			tg.Families[f.Name] = f
		}
		return tg
	}
	inf := math.Inf(1)
	hist := func(ts int64, bounds ...float64) *snapshot.HistogramSeries {
		return &snapshot.HistogramSeries{Labels: labels.FromStrings("pod", "p"), Bounds: bounds, T: []int64{ts},
			Counts: make([]float64, len(bounds)), Sum: []float64{0}, Count: []float64{0}}
	}
	for name, tc := range map[string]struct {
		e    *snapshot.Evidence
		want bool
	}{
		"ok":                   {&snapshot.Evidence{Targets: []*snapshot.Target{target("a", &snapshot.Family{Name: "g", Series: []*snapshot.Series{series("g", 1, 2)}}), target("b")}}, true},
		"targets out of order": {&snapshot.Evidence{Targets: []*snapshot.Target{target("b"), target("a")}}, false},
		"targets repeated":     {&snapshot.Evidence{Targets: []*snapshot.Target{target("a"), target("a")}}, false},
		"empty series":         {&snapshot.Evidence{Targets: []*snapshot.Target{target("a", &snapshot.Family{Name: "g", Series: []*snapshot.Series{series("g")}})}}, false},
		"times repeated":       {&snapshot.Evidence{Targets: []*snapshot.Target{target("a", &snapshot.Family{Name: "g", Series: []*snapshot.Series{series("g", 2, 2)}})}}, false},
		"series out of order": {&snapshot.Evidence{Targets: []*snapshot.Target{target("a", &snapshot.Family{Name: "g",
			Series: []*snapshot.Series{series("g_b", 1), series("g_a", 1)}})}}, false},
		"family under another name": {&snapshot.Evidence{Targets: []*snapshot.Target{{Name: "a", Families: map[string]*snapshot.Family{"x": {Name: "g"}}}}}, false},
		"label __name__": {&snapshot.Evidence{Targets: []*snapshot.Target{target("a", &snapshot.Family{Name: "g",
			Series: []*snapshot.Series{{Name: "g", Labels: labels.FromStrings("__name__", "g"), T: []int64{1}, V: []float64{1}}}})}}, false},
		"scrapes out of order": {&snapshot.Evidence{Targets: []*snapshot.Target{{Name: "a", Families: map[string]*snapshot.Family{},
			Scrapes: []snapshot.Scrape{{Time: time.UnixMilli(2).UTC()}, {Time: time.UnixMilli(1).UTC()}}}}}, false},
		"scrape not UTC": {&snapshot.Evidence{Targets: []*snapshot.Target{{Name: "a", Families: map[string]*snapshot.Family{},
			Scrapes: []snapshot.Scrape{{Time: time.UnixMilli(2)}}}}}, time.Local == time.UTC},
		"scrape with a monotonic reading": {&snapshot.Evidence{Targets: []*snapshot.Target{{Name: "a", Families: map[string]*snapshot.Family{},
			Scrapes: []snapshot.Scrape{{Time: time.Now()}}}}}, false},
		"scrape within a millisecond": {&snapshot.Evidence{Targets: []*snapshot.Target{{Name: "a", Families: map[string]*snapshot.Family{},
			Scrapes: []snapshot.Scrape{{Time: time.UnixMilli(2).Add(time.Microsecond).UTC()}}}}}, false},
		"layout change": {&snapshot.Evidence{Targets: []*snapshot.Target{target("a", &snapshot.Family{Name: "h",
			Histograms: []*snapshot.HistogramSeries{hist(1, 1, inf), hist(2, 2, inf)}})}}, true},
		"same layout split": {&snapshot.Evidence{Targets: []*snapshot.Target{target("a", &snapshot.Family{Name: "h",
			Histograms: []*snapshot.HistogramSeries{hist(1, 1, inf), hist(2, 1, inf)}})}}, false},
		"layouts overlap": {&snapshot.Evidence{Targets: []*snapshot.Target{target("a", &snapshot.Family{Name: "h",
			Histograms: []*snapshot.HistogramSeries{hist(2, 1, inf), hist(2, 2, inf)}})}}, false},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, snapshot.Canonical(tc.e, nil))
		})
	}
	// Read by labels alone (Options.LabelsOnly), a series or histogram
	// without samples is canonical when it is listed.
	empty := &snapshot.Evidence{Targets: []*snapshot.Target{target("a", &snapshot.Family{Name: "g", Series: []*snapshot.Series{series("g")}})}}
	emptyHist := &snapshot.Evidence{Targets: []*snapshot.Target{target("a", &snapshot.Family{Name: "h",
		Histograms: []*snapshot.HistogramSeries{{Labels: labels.FromStrings("pod", "p"), Bounds: []float64{1, inf}}}})}}
	for name, tc := range map[string]struct {
		e      *snapshot.Evidence
		listed map[string]bool
		want   bool
	}{
		"empty series listed":            {empty, map[string]bool{"g": true}, true},
		"empty series of another listed": {empty, map[string]bool{"h": true}, false},
		"empty histogram listed":         {emptyHist, map[string]bool{"h": true}, true},
		"empty histogram not listed":     {emptyHist, nil, false},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, snapshot.Canonical(tc.e, tc.listed))
		})
	}
}
