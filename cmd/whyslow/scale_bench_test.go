package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/internal/fleetsim"
	"github.com/whyslow/whyslow/internal/fleetsim/simtsdb"
	"github.com/whyslow/whyslow/internal/heappeak"
)

// The scale benchmark's fleet: scaleSimPods simulated pods (fleetsim's
// healthy scenario: steady load, 15 s scrapes), replicated to scalePods pods by
// renaming, written as 2 h blocks.
const (
	scaleSimPods = 8
	scalePods    = 100
	scaleBlock   = 2 * time.Hour
)

// scaleFixture returns a TSDB directory of scalePods pods over span, and
// its last sample time. It is built in dir $WHYSLOW_SCALE_BENCH_DIR/<span>
// when that variable is set (and kept there, for runs of the built binary
// under /usr/bin/time), else in a temporary directory.
func scaleFixture(b *testing.B, span time.Duration) (dir string, end time.Time) {
	return fleetFixture(b, scalePods, span, 0)
}

// fleetFixture is scaleFixture for a fleet of pods pods, kept in
// $WHYSLOW_SCALE_BENCH_DIR/<pods>x<span> when pods is not scalePods. With
// overloadAt > 0 the load rises to that of fleetsim's sustained-overload
// scenario at overloadAt for two hours (kept in
// <pods>x<span>-overload-<overloadAt>).
func fleetFixture(b *testing.B, pods int, span, overloadAt time.Duration) (dir string, end time.Time) {
	b.Helper()
	spec, ok := fleetsim.LookupScenario("healthy")
	if !ok {
		b.Fatal("no healthy scenario")
	}
	cfg := spec.Config
	cfg.Duration = span
	name := fmt.Sprintf("%dx%dh", pods, int(span.Hours()))
	if overloadAt > 0 {
		over, ok := fleetsim.LookupScenario("sustained-overload")
		if !ok || len(over.Config.Workload.Phases) != 2 {
			b.Fatal("no sustained-overload scenario of two phases")
		}
		base, inc := over.Config.Workload.Phases[0], over.Config.Workload.Phases[1]
		inc.Start = overloadAt
		after := base
		after.Start = overloadAt + 2*time.Hour
		cfg.Workload = over.Config.Workload
		cfg.Workload.Phases = []fleetsim.Phase{base, inc, after}
		name += "-overload-" + overloadAt.String()
	}
	start := cfg.Start
	if start.IsZero() {
		start = fleetsim.DefaultStart
	}
	end = start.Add(span)
	if root := os.Getenv("WHYSLOW_SCALE_BENCH_DIR"); root != "" {
		dir = filepath.Join(root, name)
		if pods == scalePods && overloadAt == 0 {
			dir = filepath.Join(root, fmt.Sprintf("%dh", int(span.Hours())))
		}
		if _, err := os.Stat(filepath.Join(dir, "complete")); err == nil {
			return dir, end
		}
		if err := os.RemoveAll(dir); err != nil {
			b.Fatal(err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
	} else {
		dir = b.TempDir()
	}
	t0 := time.Now()
	fleet, err := fleetsim.Run(cfg)
	if err != nil {
		b.Fatal(err)
	}
	src := b.TempDir()
	if err := simtsdb.Write(fleet, src, fleetsim.TSDBOptions{}); err != nil {
		b.Fatal(err)
	}
	fleet = nil
	series, samples := replicateTSDB(b, src, dir, pods, start, end)
	if err := os.RemoveAll(src); err != nil {
		b.Fatal(err)
	}
	if os.Getenv("WHYSLOW_SCALE_BENCH_DIR") != "" {
		if err := os.WriteFile(filepath.Join(dir, "complete"), nil, 0o644); err != nil {
			b.Fatal(err)
		}
		// The marker is no block: the reader ignores plain files.
	}
	b.Logf("fixture %s: %d pods x %v, %d series, %d samples, built in %v", dir, pods, span, series, samples, time.Since(t0).Round(time.Second))
	return dir, end
}

// replicateTSDB copies every series of the TSDB src into 2 h blocks under
// dst, once per replica: pod p of pods takes the series of simulated pod
// p % scaleSimPods, with its pod and instance labels renamed.
func replicateTSDB(b *testing.B, src, dst string, pods int, start, end time.Time) (series, samples int) {
	b.Helper()
	ctx := context.Background()
	logger := slog.New(slog.DiscardHandler)
	db, err := tsdb.OpenDBReadOnly(src, b.TempDir(), logger)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	q, err := db.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		b.Fatal(err)
	}
	defer q.Close()
	type col struct {
		ls labels.Labels
		t  []int64
		v  []float64
	}
	var cols []col
	ss := q.Select(ctx, false, nil, labels.MustNewMatcher(labels.MatchRegexp, model.MetricNameLabel, ".+"))
	var it chunkenc.Iterator
	for ss.Next() {
		s := ss.At()
		c := col{ls: s.Labels()}
		it = s.Iterator(it)
		for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
			if vt != chunkenc.ValFloat {
				b.Fatalf("%s: sample type %v", c.ls, vt)
			}
			t, v := it.At()
			c.t, c.v = append(c.t, t), append(c.v, v)
		}
		cols = append(cols, c)
	}
	if err := ss.Err(); err != nil {
		b.Fatal(err)
	}
	// Series by simulated pod.
	byPod := map[string][]int{}
	var simPods []string
	for i, c := range cols {
		p := c.ls.Get("pod")
		if _, ok := byPod[p]; !ok {
			simPods = append(simPods, p)
		}
		byPod[p] = append(byPod[p], i)
	}
	var lsets []labels.Labels
	var srcOf []int
	for p := range pods {
		simPod := simPods[p%len(simPods)]
		name := fmt.Sprintf("vllm-%03d", p)
		for _, i := range byPod[simPod] {
			bl := labels.NewBuilder(cols[i].ls)
			bl.Set("pod", name)
			if cols[i].ls.Has("instance") {
				bl.Set("instance", "10.0."+strconv.Itoa(p/250)+"."+strconv.Itoa(p%250)+":8000")
			}
			lsets = append(lsets, bl.Labels())
			srcOf = append(srcOf, i)
		}
	}
	pos := make([]int, len(cols)) // next sample per source column, per block pass
	for from := start.Truncate(scaleBlock); from.Before(end.Add(time.Second)); from = from.Add(scaleBlock) {
		to := from.Add(scaleBlock).UnixMilli()
		w, err := tsdb.NewBlockWriter(logger, dst, scaleBlock.Milliseconds())
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		refs := make([]storage.SeriesRef, len(lsets))
		// The head of a block writer takes samples no older than half a
		// block behind its newest: append in slices of 20 minutes.
		for sl := from; sl.Before(from.Add(scaleBlock)); sl = sl.Add(20 * time.Minute) {
			slEnd := min(sl.Add(20*time.Minute).UnixMilli(), to)
			app := w.AppenderV2(ctx)
			first := slicesClone(pos)
			for k, ls := range lsets {
				c := cols[srcOf[k]]
				j := first[srcOf[k]]
				for ; j < len(c.t) && c.t[j] < slEnd; j++ {
					refs[k], err = app.Append(refs[k], ls, 0, c.t[j], c.v[j], nil, nil, storage.AOptions{})
					if err != nil {
						b.Fatal(err)
					}
					n++
				}
				pos[srcOf[k]] = j
			}
			if err := app.Commit(); err != nil {
				b.Fatal(err)
			}
		}
		if n > 0 {
			if _, err := w.Flush(ctx); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
		samples += n
	}
	return len(lsets), samples
}

func slicesClone(s []int) []int { return append([]int(nil), s...) }

// measure runs op b.N times and reports the peak live heap over the runs.
func measure(b *testing.B, op func(b *testing.B)) {
	b.Helper()
	var peak uint64
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		stop := heappeak.Start(2 * time.Millisecond) // runs a GC: not timed
		b.StartTimer()
		op(b)
		b.StopTimer()
		peak = max(peak, stop().Max)
		b.StartTimer()
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
}

// runCommand runs the command line args as main does, in process.
// Standard output is written away as to /dev/null, counted: a buffer
// that held it would grow to the 13 MB of a JSON report at every run, a
// tenth of a second of memory clearing that the command writing to a file
// or a pipe does not do.
func runCommand(b *testing.B, args ...string) {
	b.Helper()
	var stdout countWriter
	var stderr bytes.Buffer
	e := &env{stdin: bytes.NewReader(nil), stdout: &stdout, stderr: &stderr}
	if code := run(context.Background(), e, args); code != exitOK {
		b.Fatalf("whyslow %v: exit %d: %s", args, code, stderr.String())
	}
	if stdout == 0 {
		b.Fatalf("whyslow %v: nothing written", args)
	}
}

// countWriter counts the bytes written to it and drops them.
type countWriter int64

func (w *countWriter) Write(p []byte) (int, error) {
	*w += countWriter(len(p))
	return len(p), nil
}

// openFixtureBlocks opens every block of dir (the fixture has no WAL).
func openFixtureBlocks(b *testing.B, dir string) []*tsdb.Block {
	b.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	var blocks []*tsdb.Block
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		blk, err := tsdb.OpenBlock(slog.New(slog.DiscardHandler), filepath.Join(dir, e.Name()), nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		blocks = append(blocks, blk)
	}
	return blocks
}

// blocksQueryable opens every block of dir and returns a queryable over
// them (the fixture has no WAL), and a function closing the blocks.
func blocksQueryable(b *testing.B, dir string) (storage.Queryable, func()) {
	b.Helper()
	blocks := openFixtureBlocks(b, dir)
	qf := storage.QueryableFunc(func(mint, maxt int64) (storage.Querier, error) {
		var qs []storage.Querier
		for _, blk := range blocks {
			if blk.MaxTime() <= mint || blk.MinTime() > maxt {
				continue
			}
			q, err := tsdb.NewBlockQuerier(blk, mint, maxt)
			if err != nil {
				return nil, err
			}
			qs = append(qs, q)
		}
		return storage.NewMergeQuerier(qs, nil, storage.ChainedSeriesMerge), nil
	})
	return qf, func() {
		for _, blk := range blocks {
			blk.Close()
		}
	}
}

// bareDecode is the floor of any reader: open the blocks, look up the
// postings of the series whose __name__ matches re, and decode only their
// chunks in [mint, maxt], summing the values.
func bareDecode(b *testing.B, dir, re string, mint, maxt int64) (samples int) {
	b.Helper()
	qf, closeBlocks := blocksQueryable(b, dir)
	defer closeBlocks()
	q, err := qf.Querier(mint, maxt)
	if err != nil {
		b.Fatal(err)
	}
	defer q.Close()
	ss := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchRegexp, model.MetricNameLabel, re))
	var it chunkenc.Iterator
	var sum float64
	for ss.Next() {
		it = ss.At().Iterator(it)
		for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
			_, v := it.At()
			sum += v
			samples++
		}
		if err := it.Err(); err != nil {
			b.Fatal(err)
		}
	}
	if err := ss.Err(); err != nil {
		b.Fatal(err)
	}
	if math.IsNaN(sum) {
		b.Fatal("NaN sum")
	}
	return samples
}

// bareChunks is bareDecode without the querier: for each block, the
// postings of the series whose __name__ matches re, their index entries,
// and an iterator over each chunk in [mint, maxt], the samples outside it
// skipped (the fixture has no tombstones, no overlapping chunks, only
// float chunks). It is the floor of the reader since round 9, which decodes
// blocks so (snapshot/tsdb's decodeRefs).
func bareChunks(b *testing.B, dir, re string, mint, maxt int64) (samples int) {
	b.Helper()
	blocks := openFixtureBlocks(b, dir)
	defer func() {
		for _, blk := range blocks {
			blk.Close()
		}
	}()
	m := labels.MustNewMatcher(labels.MatchRegexp, model.MetricNameLabel, re)
	var (
		sum  float64
		it   chunkenc.Iterator
		chks []chunks.Meta
		sb   labels.ScratchBuilder
	)
	for _, blk := range blocks {
		if blk.MaxTime() <= mint || blk.MinTime() > maxt {
			continue
		}
		ir, err := blk.Index()
		if err != nil {
			b.Fatal(err)
		}
		cr, err := blk.Chunks()
		if err != nil {
			b.Fatal(err)
		}
		p, err := tsdb.PostingsForMatchers(context.Background(), ir, m)
		if err != nil {
			b.Fatal(err)
		}
		for p.Next() {
			if err := ir.Series(p.At(), &sb, &chks); err != nil {
				b.Fatal(err)
			}
			for _, c := range chks {
				if c.MaxTime < mint || c.MinTime > maxt {
					continue
				}
				ch, _, err := cr.ChunkOrIterable(c)
				if err != nil {
					b.Fatal(err)
				}
				it = ch.Iterator(it)
				for it.Next() == chunkenc.ValFloat {
					t, v := it.At()
					if t >= mint && t <= maxt {
						sum += v
						samples++
					}
				}
				if err := it.Err(); err != nil {
					b.Fatal(err)
				}
			}
		}
		ir.Close()
		cr.Close()
	}
	if math.IsNaN(sum) {
		b.Fatal("NaN sum")
	}
	return samples
}

// BenchmarkScale runs the command's own code path (run, as main calls
// it) on a 100-pod TSDB of 6 h and of 24 h, side by side with the PromQL
// engine answering the same question on the same blocks and with bare
// decoding of only the chunks the question needs:
//
//   - quantile: fleet TTFT p50/p95/p99 over the last 30 minutes (bare:
//     through a querier's iterators, and bare-chunks: chunk by chunk, as
//     the reader decodes blocks since round 9);
//   - diagnose-windows: diagnose with --baseline and --incident (30 min
//     each);
//   - diagnose-whole: diagnose with the change-point search over the whole
//     range (bare: every catalog series over the whole range).
//
// WHYSLOW_SCALE_SPANS (default "6h,24h") lists the spans. Set
// WHYSLOW_SCALE_BENCH_DIR to keep the fixtures between runs (and for
// runs of the built binary under /usr/bin/time -v); see
// snapshot/tsdb/TSDB_BENCHMARKS.md.
func BenchmarkScale(b *testing.B) {
	const ttft = "vllm:time_to_first_token_seconds"
	spans := "6h,24h"
	if s := os.Getenv("WHYSLOW_SCALE_SPANS"); s != "" {
		spans = s
	}
	for _, sp := range strings.Split(spans, ",") {
		span, err := time.ParseDuration(sp)
		if err != nil {
			b.Fatalf("WHYSLOW_SCALE_SPANS: %v", err)
		}
		dir, end := scaleFixture(b, span)
		win := 30 * time.Minute
		qStart, qEnd := end.Add(-win), end
		rfc := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
		window := rfc(qStart) + "/" + rfc(qEnd)
		baseline := rfc(end.Add(-span/2-win)) + "/" + rfc(end.Add(-span/2))
		name := func(s string) string { return fmt.Sprintf("span=%v/%s", span, s) }

		b.Run(name("quantile-30m/whyslow"), func(b *testing.B) {
			measure(b, func(b *testing.B) {
				runCommand(b, "quantile", "--metric", ttft, "--q", "0.5,0.95,0.99", "--window", window, "--format", "json", dir)
			})
		})
		b.Run(name("quantile-30m/promql"), func(b *testing.B) {
			measure(b, func(b *testing.B) {
				qf, closeBlocks := blocksQueryable(b, dir)
				defer closeBlocks()
				eng := promql.NewEngine(promql.EngineOpts{MaxSamples: 500_000_000, Timeout: 10 * time.Minute, LookbackDelta: 5 * time.Minute})
				defer eng.Close()
				for _, q := range []string{"0.5", "0.95", "0.99"} {
					expr := "histogram_quantile(" + q + ", sum by (le) (increase(" + ttft + "_bucket[30m])))"
					qry, err := eng.NewInstantQuery(context.Background(), qf, nil, expr, qEnd)
					if err != nil {
						b.Fatal(err)
					}
					res := qry.Exec(context.Background())
					if res.Err != nil {
						b.Fatal(res.Err)
					}
					if v, err := res.Vector(); err != nil || len(v) != 1 {
						b.Fatalf("%s: %v %v", expr, v, err)
					}
					qry.Close()
				}
			})
		})
		b.Run(name("quantile-30m/bare"), func(b *testing.B) {
			measure(b, func(b *testing.B) {
				bareDecode(b, dir, ttft+"_(bucket|sum|count)", qStart.Add(-5*time.Minute).UnixMilli(), qEnd.UnixMilli())
			})
		})
		b.Run(name("quantile-30m/bare-chunks"), func(b *testing.B) {
			measure(b, func(b *testing.B) {
				bareChunks(b, dir, ttft+"_(bucket|sum|count)", qStart.Add(-5*time.Minute).UnixMilli(), qEnd.UnixMilli())
			})
		})
		b.Run(name("diagnose-windows/whyslow"), func(b *testing.B) {
			measure(b, func(b *testing.B) {
				runCommand(b, "diagnose", "--baseline", baseline, "--incident", window, "--format", "json", dir)
			})
		})
		b.Run(name("diagnose-whole/whyslow"), func(b *testing.B) {
			measure(b, func(b *testing.B) {
				runCommand(b, "diagnose", "--format", "json", dir)
			})
		})
		b.Run(name("diagnose-whole/bare"), func(b *testing.B) {
			measure(b, func(b *testing.B) {
				bareDecode(b, dir, catalogRegexp(), math.MinInt64, math.MaxInt64)
			})
		})
	}
}

// catalogRegexp matches the sample names of every family a diagnosis
// reads (the catalog's EvidenceMetrics, with their _bucket, _sum and
// _count series).
func catalogRegexp() string {
	var alts []string
	for _, m := range catalog.Default().EvidenceMetrics() {
		q := regexp.QuoteMeta(m)
		alts = append(alts, q, q+"_bucket", q+"_sum", q+"_count")
	}
	return strings.Join(alts, "|")
}
