package snapshot_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	pmodel "github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"

	"github.com/whyslow/whyslow/snapshot"
)

// The benchmark corpus: 1,000 vLLM-sized dumps, 10 pods x 100 scrapes 15 s
// apart, made from the real vLLM 0.30.0 capture with every sample value
// varied (so no two dumps are equal). All benchmarks parse the same bytes.
const (
	benchPods   = 10
	benchScrape = 100
)

type benchDump struct {
	name string
	data []byte
}

var benchCorpus = sync.OnceValues(func() ([]benchDump, int64) {
	tmpl, err := os.ReadFile("../testdata/realdata/vllm/lora-multitenancy-experiment-0.30.0.prom")
	if err != nil {
		panic(err)
	}
	lines := bytes.SplitAfter(tmpl, []byte("\n"))
	rng := rand.New(rand.NewPCG(1, 2))
	var (
		out   []benchDump
		total int64
	)
	for s := range benchScrape {
		for p := range benchPods {
			var buf bytes.Buffer
			buf.Grow(len(tmpl) + 4096)
			// One affine change per dump keeps histograms valid.
			f, k := 1+0.01*float64(s)+0.001*float64(p), float64(rng.IntN(100))
			for _, l := range lines {
				i := bytes.LastIndexByte(l, ' ')
				if len(l) == 0 || l[0] == '#' || i < 0 {
					buf.Write(l)
					continue
				}
				v, err := strconv.ParseFloat(string(bytes.TrimSpace(l[i+1:])), 64)
				if err != nil {
					buf.Write(l)
					continue
				}
				v = v*f + k
				buf.Write(l[:i+1])
				buf.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
				buf.WriteByte('\n')
			}
			name := fmt.Sprintf("vllm-%d_%d.prom", p, 1758535200+15*s)
			out = append(out, benchDump{name: name, data: buf.Bytes()})
			total += int64(buf.Len())
		}
	}
	return out, total
})

// BenchmarkParseDumps reads the corpus into one Evidence, as Read does
// for a dump directory.
func BenchmarkParseDumps(b *testing.B) {
	dumps, done := corpusBench(b)
	defer done()
	for b.Loop() {
		bd := snapshot.NewBuilder(snapshot.Options{})
		for _, d := range dumps {
			if err := bd.AddDump(d.name, d.data, time.Time{}); err != nil {
				b.Fatal(err)
			}
		}
		if e := bd.Evidence(); len(e.Targets) != benchPods || e.Partial() {
			b.Fatalf("%d targets, problems %v", len(e.Targets), e.Problems)
		}
	}
}

// BenchmarkParseDumpEach parses every dump of the corpus on its own with
// ParseDump: no interning across dumps, the worst case.
func BenchmarkParseDumpEach(b *testing.B) {
	dumps, done := corpusBench(b)
	defer done()
	for b.Loop() {
		for _, d := range dumps {
			if _, err := snapshot.ParseDump(d.data, d.name, snapshot.Options{}); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkTextparseLoop is the limit: a bare textparse loop that calls
// Next, Series and Labels on every sample and keeps nothing.
func BenchmarkTextparseLoop(b *testing.B) {
	dumps, done := corpusBench(b)
	defer done()
	var ls labels.Labels
	for b.Loop() {
		n := 0
		for _, d := range dumps {
			p, err := textparse.New(d.data, "text/plain; version=0.0.4", nil, textparse.ParserOptions{})
			if p == nil {
				b.Fatal(err)
			}
			for {
				et, err := p.Next()
				if errors.Is(err, io.EOF) {
					break
				} else if err != nil {
					b.Fatal(err)
				}
				if et == textparse.EntrySeries {
					_, _, _ = p.Series()
					p.Labels(&ls)
					n++
				}
			}
		}
		if n == 0 {
			b.Fatal("no sample")
		}
	}
}

// BenchmarkExpfmt is github.com/prometheus/common/expfmt's text parser,
// what prom2json uses.
func BenchmarkExpfmt(b *testing.B) {
	dumps, done := corpusBench(b)
	defer done()
	for b.Loop() {
		for _, d := range dumps {
			p := expfmt.NewTextParser(pmodel.UTF8Validation)
			if _, err := p.TextToMetricFamilies(bytes.NewReader(d.data)); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// corpusBench readies b for benchmarks that read the whole corpus per op:
// bytes and allocations are reported, and throughput per CPU-second when
// the returned done is deferred (see reportCPU).
func corpusBench(b *testing.B) (dumps []benchDump, done func()) {
	dumps, total := benchCorpus()
	b.SetBytes(total)
	b.ReportAllocs()
	return dumps, reportCPU(b, total)
}

// reportCPU reports throughput per CPU-second of the process (GC
// included), steadier than MB/s on a machine shared with other work. Use
// as defer reportCPU(b, bytesPerOp)().
func reportCPU(b *testing.B, bytesPerOp int64) func() {
	start := cpuTime()
	return func() {
		if used := cpuTime() - start; used > 0 && b.N > 0 {
			b.ReportMetric(float64(bytesPerOp)*float64(b.N)/1e6/used.Seconds(), "MB/cpu-s")
		}
	}
}
