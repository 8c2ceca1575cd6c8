package tsdb

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/whyslow/whyslow/internal/heappeak"
	"github.com/whyslow/whyslow/snapshot"
)

// The benchmark fleet: pods scraped every 15 s for 6 h, each exposing a
// catalog-like set of series: tsdbBenchHists histograms of 20 buckets
// (+Inf included) with _sum and _count, and gauges and counters.
const (
	tsdbBenchStep     = 15 * time.Second
	tsdbBenchSpan     = 6 * time.Hour
	tsdbBenchHists    = 12
	tsdbBenchBuckets  = 20
	tsdbBenchGauges   = 40
	tsdbBenchCounters = 40
)

// tsdbBenchPods is 100, or WHYSLOW_TSDB_BENCH_PODS, or 10 with -short.
func tsdbBenchPods(b *testing.B) int {
	if s := os.Getenv("WHYSLOW_TSDB_BENCH_PODS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			b.Fatal(err)
		}
		return n
	}
	if testing.Short() {
		return 10
	}
	return 100
}

func tsdbBenchHistName(i int) string  { return fmt.Sprintf("vllm:bench_hist_%02d_seconds", i) }
func tsdbBenchGaugeName(i int) string { return fmt.Sprintf("vllm:bench_gauge_%02d", i) }

// writeTSDBBench writes the fleet as 2 h blocks (as Prometheus cuts them)
// with tsdb.BlockWriter, and returns the number of series and samples.
func writeTSDBBench(b testing.TB, dir string, pods int, t0 time.Time) (series, samples int) {
	return writeTSDBFleet(b, dir, pods, t0, tsdbBenchSpan)
}

// writeTSDBFleet writes the benchmark fleet over span from t0.
func writeTSDBFleet(b testing.TB, dir string, pods int, t0 time.Time, span time.Duration) (series, samples int) {
	ctx := context.Background()
	logger := slog.New(slog.DiscardHandler)
	type ser struct {
		ls  labels.Labels
		ref storage.SeriesRef
		f   func(i int) float64
	}
	var all []*ser
	bounds := make([]string, tsdbBenchBuckets)
	for k := range bounds {
		if k == tsdbBenchBuckets-1 {
			bounds[k] = "+Inf"
		} else {
			bounds[k] = strconv.FormatFloat(0.001*float64(int(1)<<k), 'g', -1, 64)
		}
	}
	for p := range pods {
		pod := fmt.Sprintf("vllm-%03d", p)
		base := []string{"pod", pod, "job", "vllm", "instance", "10.0.0." + strconv.Itoa(p) + ":8000", "model_name", "meta-llama/Llama-3.1-8B-Instruct"}
		mk := func(name string, f func(int) float64, kv ...string) {
			all = append(all, &ser{ls: labels.FromStrings(append(append([]string{"__name__", name}, base...), kv...)...), f: f})
		}
		for h := range tsdbBenchHists {
			name := tsdbBenchHistName(h)
			for k, le := range bounds {
				mk(name+"_bucket", func(i int) float64 { return float64(i * (k + 1) * (p + 1)) }, "le", le)
			}
			mk(name+"_sum", func(i int) float64 { return 0.37 * float64(i*(p+1)) })
			mk(name+"_count", func(i int) float64 { return float64(i * tsdbBenchBuckets * (p + 1)) })
		}
		for g := range tsdbBenchGauges {
			mk(tsdbBenchGaugeName(g), func(i int) float64 { return float64((i*7+g+p)%97) / 97 })
		}
		for c := range tsdbBenchCounters {
			mk(fmt.Sprintf("vllm:bench_counter_%02d_total", c), func(i int) float64 { return float64(i * (c + 3)) })
		}
	}
	steps := int(span / tsdbBenchStep)
	perBlock := int(2 * time.Hour / tsdbBenchStep)
	for start := 0; start < steps; start += perBlock {
		w, err := tsdb.NewBlockWriter(logger, dir, (2 * time.Hour).Milliseconds())
		if err != nil {
			b.Fatal(err)
		}
		for _, s := range all {
			s.ref = 0
		}
		for i := start; i < min(start+perBlock, steps); i++ {
			app := w.AppenderV2(ctx)
			ts := t0.Add(time.Duration(i) * tsdbBenchStep).UnixMilli()
			for _, s := range all {
				ref, err := app.Append(s.ref, s.ls, 0, ts, s.f(i), nil, nil, storage.AOptions{})
				if err != nil {
					b.Fatal(err)
				}
				s.ref = ref
				samples++
			}
			if err := app.Commit(); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := w.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
	return len(all), samples
}

// tsdbBenchFixture writes the benchmark fleet (tsdbBenchPods pods over
// tsdbBenchSpan from t0) into a temporary directory, logs its size, and
// returns the directory, t0 and the families a diagnosis needs (4
// histograms, 6 gauges, for snapshot.Options.Metrics).
func tsdbBenchFixture(b *testing.B) (dir string, t0 time.Time, catalog []string) {
	b.Helper()
	pods := tsdbBenchPods(b)
	dir = b.TempDir()
	t0 = time.Date(2026, 9, 22, 0, 0, 0, 0, time.UTC)
	start := time.Now()
	series, samples := writeTSDBBench(b, dir, pods, t0)
	b.Logf("fixture: %d pods, %d series, %d samples, 3 blocks of 2 h, written in %v", pods, series, samples, time.Since(start).Round(time.Second))
	for h := range 4 {
		catalog = append(catalog, tsdbBenchHistName(h))
	}
	for g := range 6 {
		catalog = append(catalog, tsdbBenchGaugeName(g))
	}
	return dir, t0, catalog
}

// BenchmarkReadTSDB extracts the histograms and gauges a diagnosis needs
// (4 histograms, 6 gauges, snapshot.Options.Metrics) of a 100-pod fleet over 6 h,
// for two windows (baseline and incident), per op. snapshot.Window lengths of
// 30 min and 2 h show how peak memory grows: with the series selected and
// the samples kept, never with the size of the TSDB.
func BenchmarkReadTSDB(b *testing.B) {
	dir, t0, catalog := tsdbBenchFixture(b)
	for _, win := range []time.Duration{30 * time.Minute, 2 * time.Hour} {
		b.Run("window="+win.String(), func(b *testing.B) {
			windows := []time.Time{t0.Add(1 * time.Hour), t0.Add(3*time.Hour + 30*time.Minute)}
			var gotSeries, gotSamples int
			peak := peakLoop(b, func() {
				gotSeries, gotSamples = 0, 0
				for _, w0 := range windows {
					ev, err := Read(context.Background(), dir, snapshot.Options{Start: w0, End: w0.Add(win), Metrics: catalog})
					if err != nil {
						b.Fatal(err)
					}
					if len(ev.Problems) > 0 {
						b.Fatal(ev.Problems)
					}
					for _, tg := range ev.Targets {
						s, n := countKept(tg)
						gotSeries, gotSamples = gotSeries+s, gotSamples+n
					}
					runtime.KeepAlive(ev)
				}
			})
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
			b.ReportMetric(float64(gotSeries), "series")
			b.ReportMetric(float64(gotSamples), "samples")
			b.ReportMetric(float64(peak)/float64(gotSamples), "peak-B/sample")
		})
	}
}

// peakLoop runs op b.N times, reporting allocations, and returns the
// highest peak of the live heap above its level at the start of an op (the
// sampler's GC and start are not timed).
func peakLoop(b *testing.B, op func()) (peak uint64) {
	b.Helper()
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		stop := heappeak.Start(2 * time.Millisecond) // runs a GC: not timed
		b.StartTimer()
		op()
		b.StopTimer()
		peak = max(peak, stop().Above())
		b.StartTimer()
	}
	return peak
}

// countKept returns the series and samples of a target, as the
// benchmarks count them (each bucket, _sum and _count a series).
func countKept(tg *snapshot.Target) (series, samples int) {
	for _, f := range tg.Families {
		for _, s := range f.Series {
			series++
			samples += s.Len()
		}
		for _, h := range f.Histograms {
			series += len(h.Bounds) + 2
			samples += h.Len() * (len(h.Bounds) + 2)
		}
	}
	return series, samples
}

// BenchmarkReadEachTSDB reads the fleet of BenchmarkReadTSDB over its
// whole range, with snapshot.Read (every target held at once) and with
// snapshot.ReadEach (one target at a time, dropped by the visitor), for
// the catalog's families (snapshot.Options.Metrics) and for every series.
func BenchmarkReadEachTSDB(b *testing.B) {
	dir, _, catalog := tsdbBenchFixture(b)
	for _, sel := range []struct {
		name    string
		metrics []string
	}{{"catalog", catalog}, {"all", nil}} {
		for _, each := range []bool{false, true} {
			name := "select=" + sel.name + "/read=Read"
			if each {
				name = "select=" + sel.name + "/read=ReadEach"
			}
			b.Run(name, func(b *testing.B) {
				opts := snapshot.Options{Metrics: sel.metrics, Limits: snapshot.Limits{MaxMemory: 16 << 30}}
				var gotTargets, gotSeries, gotSamples int
				peak := peakLoop(b, func() {
					gotTargets, gotSeries, gotSamples = 0, 0, 0
					count := func(tg *snapshot.Target) error {
						s, n := countKept(tg)
						gotTargets, gotSeries, gotSamples = gotTargets+1, gotSeries+s, gotSamples+n
						return nil
					}
					if each {
						if _, err := snapshot.ReadEach(context.Background(), []string{dir}, opts, count); err != nil {
							b.Fatal(err)
						}
					} else {
						ev, err := snapshot.Read(context.Background(), []string{dir}, opts)
						if err != nil {
							b.Fatal(err)
						}
						for _, tg := range ev.Targets {
							_ = count(tg)
						}
						runtime.KeepAlive(ev)
					}
				})
				b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
				b.ReportMetric(float64(gotTargets), "targets")
				b.ReportMetric(float64(gotSeries), "series")
				b.ReportMetric(float64(gotSamples), "samples")
			})
		}
	}
}
