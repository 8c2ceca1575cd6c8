package fleetsim

import (
	"math"
	"slices"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
)

// TSDBOptions refine what a Prometheus TSDB written from the fleet holds
// ([Fleet.EachStored]) and how it is laid out on disk (simtsdb.Write).
type TSDBOptions struct {
	// HeadSpan is how much of the end of the run stays in the head only
	// (write-ahead log and chunks_head), as in a Prometheus that was
	// running when its data directory was copied; the rest is compacted
	// into persistent blocks aligned on BlockDuration. Zero means 10
	// minutes; a negative value compacts everything into blocks; a value
	// longer than the run leaves everything in the WAL.
	HeadSpan time.Duration
	// BlockDuration is the block range; zero means 2 h, Prometheus's
	// default.
	BlockDuration time.Duration
	// NoStaleMarkers disables the staleness markers Prometheus writes
	// when a target disappears (a pod restarting) or a series vanishes
	// between scrapes.
	NoStaleMarkers bool
	// Up writes the series Prometheus synthesises for every scrape
	// attempt: up{job, instance, ...} = 1 at each scrape of a target and 0
	// at each scrape it missed (a pod down while restarting). Off by
	// default so that the other series stand alone, as in TSDBs whose
	// up series were dropped by the copy.
	Up bool
}

// EachStored calls add with every sample a Prometheus server scraping
// every pod (job "vllm") and its GPU exporter (job "dcgm-exporter") would
// have stored, in the order it would have appended them: scrape round by
// scrape round, one sample per scrape per series with the target labels,
// a staleness marker (value.StaleNaN) when a series vanishes or its pod
// misses a scrape unless opts.NoStaleMarkers, and the up series with
// opts.Up. series is a dense index, from 0 in order of first appearance;
// lset is the series' label set, the same value at every call for one
// series. Timestamps t are in milliseconds. opts.HeadSpan and
// opts.BlockDuration are ignored. EachStored stops at the first error
// add returns and returns it.
func (f *Fleet) EachStored(opts TSDBOptions, add func(series int, lset labels.Labels, t int64, v float64) error) error {
	// Series are looked up by a key built in a reused buffer (map lookups
	// with string(bytes) do not allocate); labels are built once per
	// series.
	index := map[string]int{}
	var (
		lsets []labels.Labels
		sb    labels.ScratchBuilder
		key   []byte
	)
	put := func(name string, ls []label, t int64, v float64) error {
		key = appendKey(key[:0], name, ls)
		i, ok := index[string(key)]
		if !ok {
			sb.Reset()
			sb.Add(model.MetricNameLabel, name)
			for _, l := range ls {
				sb.Add(l.name, l.value)
			}
			sb.Sort()
			i = len(lsets)
			lsets = append(lsets, sb.Labels())
			index[string(key)] = i
		}
		return add(i, lsets[i], t, v)
	}

	// last holds, per target, the label sets of its previous scrape, for
	// staleness markers.
	type targetKey struct {
		pod  int
		dcgm bool
	}
	type stored struct {
		name string
		ls   []label
	}
	last := map[targetKey][]stored{}
	staleAt := func(k targetKey, t int64, keep map[string]bool) error {
		for _, s := range last[k] {
			if keep != nil && keep[labelsKey(s.name, s.ls)] {
				continue
			}
			if err := put(s.name, s.ls, t, math.Float64frombits(value.StaleNaN)); err != nil {
				return err
			}
		}
		return nil
	}
	iv := f.Config.ScrapeInterval
	for _, round := range f.rounds() {
		present := map[int]bool{}
		for _, sc := range round {
			present[sc.pod.Index] = true
			if opts.Up {
				if err := f.putUp(put, sc.pod, sc.Time.UnixMilli(), 1); err != nil {
					return err
				}
			}
			for _, dcgm := range []bool{false, true} {
				k := targetKey{sc.pod.Index, dcgm}
				var cur []stored
				var aerr error
				sc.eachStored(dcgm, func(name string, ls []label, t int64, v float64) {
					if aerr == nil {
						aerr = put(name, ls, t, v)
						if !opts.NoStaleMarkers {
							cur = append(cur, stored{name, slices.Clone(ls)})
						}
					}
				})
				if aerr != nil {
					return aerr
				}
				if !opts.NoStaleMarkers && len(last[k]) > 0 {
					keep := map[string]bool{}
					for _, s := range cur {
						keep[labelsKey(s.name, s.ls)] = true
					}
					if err := staleAt(k, sc.Time.UnixMilli(), keep); err != nil {
						return err
					}
				}
				last[k] = cur
			}
		}
		if opts.NoStaleMarkers || len(round) == 0 {
			continue
		}
		// A pod missing from a round failed its scrape: everything it
		// exposed before goes stale at that scrape's instant.
		k0 := int(round[0].Offset / iv)
		for _, p := range f.Pods {
			if present[p.Index] {
				continue
			}
			at := time.Duration(k0)*iv + p.skew
			if at > f.Config.Duration {
				continue // not due within the run
			}
			ts := f.Config.Start.Add(at).UnixMilli()
			if opts.Up {
				if err := f.putUp(put, p, ts, 0); err != nil {
					return err
				}
			}
			for _, dcgm := range []bool{false, true} {
				k := targetKey{p.Index, dcgm}
				if err := staleAt(k, ts, nil); err != nil {
					return err
				}
				last[k] = nil
			}
		}
	}
	return nil
}

// putUp stores the up sample of pod p's targets (vLLM and, with one, its
// GPU exporter) at t.
func (f *Fleet) putUp(put func(string, []label, int64, float64) error, p *Pod, t int64, v float64) error {
	proc := p.procAt(time.UnixMilli(t).Sub(f.Config.Start))
	targets := [][]label{p.targetLabels(proc, false)}
	if f.Config.GPUExporter != NoGPUExporter {
		targets = append(targets, p.targetLabels(proc, true))
	}
	for _, ls := range targets {
		if err := put("up", ls, t, v); err != nil {
			return err
		}
	}
	return nil
}

// labelsKey is a map key for a series.
func labelsKey(name string, ls []label) string {
	return string(appendKey(nil, name, ls))
}

// appendKey appends an unambiguous encoding of a series to b.
func appendKey(b []byte, name string, ls []label) []byte {
	b = append(b, name...)
	b = append(b, 0)
	for _, l := range ls {
		b = append(b, l.name...)
		b = append(b, 0)
		b = append(b, l.value...)
		b = append(b, 0)
	}
	return b
}
