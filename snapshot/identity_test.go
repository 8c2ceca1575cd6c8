package snapshot_test

import (
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/snapshot"
)

func idSeries(name string, ls labels.Labels, t []int64, v []float64) *snapshot.Series {
	return &snapshot.Series{Name: name, Labels: ls, T: t, V: v}
}

func TestJoinAddresses(t *testing.T) {
	old := labels.FromStrings("instance", "10.0.0.1:8000", "pod", "vllm-0", "model_name", "m")
	neu := labels.FromStrings("instance", "10.0.0.2:8000", "pod", "vllm-0", "model_name", "m")
	joined := labels.FromStrings("pod", "vllm-0", "model_name", "m")
	tests := []struct {
		name   string
		series []*snapshot.Series
		// want lists each resulting series' labels and times, in order.
		want []*snapshot.Series
	}{
		{
			name:   "new address after a restart: one series",
			series: []*snapshot.Series{idSeries("c_total", old, []int64{1, 2}, []float64{5, 9}), idSeries("c_total", neu, []int64{4, 5}, []float64{1, 3})},
			want:   []*snapshot.Series{idSeries("c_total", joined, []int64{1, 2, 4, 5}, []float64{5, 9, 1, 3})},
		},
		{
			name:   "listed in the other order",
			series: []*snapshot.Series{idSeries("c_total", neu, []int64{4, 5}, []float64{1, 3}), idSeries("c_total", old, []int64{1, 2}, []float64{5, 9})},
			want:   []*snapshot.Series{idSeries("c_total", joined, []int64{1, 2, 4, 5}, []float64{5, 9, 1, 3})},
		},
		{
			name:   "overlapping in time: two processes, apart",
			series: []*snapshot.Series{idSeries("c_total", old, []int64{1, 4}, []float64{5, 9}), idSeries("c_total", neu, []int64{4, 5}, []float64{1, 3})},
			want:   []*snapshot.Series{idSeries("c_total", old, []int64{1, 4}, []float64{5, 9}), idSeries("c_total", neu, []int64{4, 5}, []float64{1, 3})},
		},
		{
			name: "instance that is a name is the identity",
			series: []*snapshot.Series{
				idSeries("c_total", labels.FromStrings("instance", "vllm-a"), []int64{1}, []float64{1}),
				idSeries("c_total", labels.FromStrings("instance", "vllm-b"), []int64{2}, []float64{1}),
			},
			want: []*snapshot.Series{
				idSeries("c_total", labels.FromStrings("instance", "vllm-a"), []int64{1}, []float64{1}),
				idSeries("c_total", labels.FromStrings("instance", "vllm-b"), []int64{2}, []float64{1}),
			},
		},
		{
			name: "pod_ip and a bare IP instance are addresses",
			series: []*snapshot.Series{
				idSeries("g", labels.FromStrings("instance", "10.0.0.1", "pod_ip", "10.0.0.1", "pod", "p"), []int64{1}, []float64{1}),
				idSeries("g", labels.FromStrings("instance", "fd00::2", "pod_ip", "fd00::2", "pod", "p"), []int64{2}, []float64{2}),
			},
			want: []*snapshot.Series{idSeries("g", labels.FromStrings("pod", "p"), []int64{1, 2}, []float64{1, 2})},
		},
		{
			name: "other labels differ: apart",
			series: []*snapshot.Series{
				idSeries("g", labels.FromStrings("instance", "h:1", "engine", "0"), []int64{1}, []float64{1}),
				idSeries("g", labels.FromStrings("instance", "h:2", "engine", "1"), []int64{2}, []float64{2}),
			},
			want: []*snapshot.Series{
				idSeries("g", labels.FromStrings("instance", "h:1", "engine", "0"), []int64{1}, []float64{1}),
				idSeries("g", labels.FromStrings("instance", "h:2", "engine", "1"), []int64{2}, []float64{2}),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tg := &snapshot.Target{Name: "vllm-0", NameFrom: "pod", Families: map[string]*snapshot.Family{"f": {Name: "f", Series: tt.series}}}
			got := tg.JoinAddresses()
			require.Len(t, got.Families["f"].Series, len(tt.want))
			for i, w := range tt.want {
				s := got.Families["f"].Series[i]
				assert.Equal(t, w.Labels.String(), s.Labels.String(), "series %d", i)
				assert.Equal(t, w.T, s.T, "series %d", i)
				assert.Equal(t, w.V, s.V, "series %d", i)
			}
			assert.Equal(t, tt.series, tg.Families["f"].Series, "the target given is not modified")
		})
	}
}

func TestJoinAddressesHistograms(t *testing.T) {
	h := func(inst string, bounds []float64, t ...int64) *snapshot.HistogramSeries {
		hs := &snapshot.HistogramSeries{Labels: labels.FromStrings("instance", inst, "pod", "p"), Bounds: bounds, T: t}
		for range t {
			hs.Counts = append(hs.Counts, make([]float64, len(bounds))...)
			hs.Sum = append(hs.Sum, 0)
			hs.Count = append(hs.Count, 0)
		}
		return hs
	}
	b1, b2 := []float64{1, 2, 1e300}, []float64{1, 5, 1e300}
	tg := &snapshot.Target{Name: "p", Families: map[string]*snapshot.Family{"h": {Name: "h", Histograms: []*snapshot.HistogramSeries{
		h("10.0.0.1:80", b1, 1, 2), h("10.0.0.2:80", b1, 3, 4), h("10.0.0.3:80", b2, 5, 6),
	}}}}
	got := tg.JoinAddresses().Families["h"].Histograms
	require.Len(t, got, 2, "one layout joined, the other kept")
	assert.Equal(t, []int64{1, 2, 3, 4}, got[0].T)
	assert.Len(t, got[0].Counts, 4*len(b1))
	assert.Equal(t, `{pod="p"}`, got[0].Labels.String())
	assert.Equal(t, []int64{5, 6}, got[1].T)
	assert.Equal(t, `{pod="p"}`, got[1].Labels.String(), "the new layout under the same identity")
}

func TestJoinAddressesUnchanged(t *testing.T) {
	tg := &snapshot.Target{Name: "p", Families: map[string]*snapshot.Family{"g": {Name: "g", Series: []*snapshot.Series{
		idSeries("g", labels.FromStrings("instance", "10.0.0.1:80", "engine", "0"), []int64{1}, []float64{1}),
		idSeries("g", labels.FromStrings("instance", "10.0.0.1:80", "engine", "1"), []int64{1}, []float64{1}),
	}}}}
	assert.Same(t, tg, tg.JoinAddresses())
	ev := &snapshot.Evidence{Targets: []*snapshot.Target{tg}}
	assert.Same(t, ev, ev.JoinAddresses())
}
