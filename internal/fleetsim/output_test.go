package fleetsim

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/textparse"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// smallFleet is a 2-pod, 20-minute fleet whose second pod restarts at 12
// minutes, with a GPU exporter.
func smallFleet(t *testing.T) *Fleet {
	t.Helper()
	ph := DefaultPhase
	ph.Rate = 6
	f, err := Run(Config{
		Seed: 11, Duration: 20 * time.Minute, GPUExporter: DCGMPercent,
		Pods:     []PodConfig{{}, {Restarts: []Restart{{At: 12 * time.Minute, Downtime: 45 * time.Second}}}},
		Workload: Workload{Phases: []Phase{ph}},
	})
	require.NoError(t, err)
	return f
}

// storedCount counts the samples a Prometheus server would store for f.
func storedCount(f *Fleet) int {
	n := 0
	for _, p := range f.Pods {
		for _, sc := range p.Scrapes {
			for _, d := range []bool{false, true} {
				sc.eachStored(d, func(string, []label, int64, float64) { n++ })
			}
		}
	}
	return n
}

func TestWriteOpenMetrics(t *testing.T) {
	f := smallFleet(t)
	var b bytes.Buffer
	require.NoError(t, f.WriteOpenMetrics(&b, true))
	require.True(t, bytes.HasSuffix(b.Bytes(), []byte("\n# EOF\n")))

	samples, created := 0, 0
	seenType := map[string]bool{}
	eachEntry(t, b.Bytes(), "application/openmetrics-text; version=1.0.0", func(p textparse.Parser, et textparse.Entry) {
		switch et {
		case textparse.EntryType:
			n, _ := p.Type()
			require.False(t, seenType[string(n)], "family %s declared twice: families must not interleave", n)
			seenType[string(n)] = true
		case textparse.EntrySeries:
			_, ts, _ := p.Series()
			require.NotNil(t, ts, "every sample carries a timestamp")
			if strings.HasSuffix(entryLabels(p).Get("__name__"), "_created") {
				created++
			}
			samples++
		}
	})
	// OpenMetrics carries _created inside its family, not as a gauge
	// family of its own: same number of samples as the text format.
	assert.Equal(t, storedCount(f), samples)
	assert.Greater(t, created, 0)

	if testing.Short() {
		t.Skip("-short: promtool's check is in the full tier")
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("promtool is required in CI (apt-get install prometheus)")
		}
		t.Skip("promtool not installed")
	}
	in := filepath.Join(t.TempDir(), "fleet.om")
	require.NoError(t, os.WriteFile(in, b.Bytes(), 0o644))
	out := t.TempDir()
	cmd := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", "-q", in, out)
	msg, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", msg)
	db, err := tsdb.OpenDBReadOnly(out, t.TempDir(), nil)
	require.NoError(t, err)
	defer db.Close()
	blocks, err := db.Blocks()
	require.NoError(t, err)
	var got uint64
	for _, bl := range blocks {
		got += bl.Meta().Stats.NumSamples
	}
	assert.Equal(t, uint64(storedCount(f)), got, "promtool stored every sample")
}

func TestWriteOpenMetricsInstant(t *testing.T) {
	f := smallFleet(t)
	var b bytes.Buffer
	require.NoError(t, f.WriteOpenMetrics(&b, false))
	seen := map[string]bool{}
	eachEntry(t, b.Bytes(), "application/openmetrics-text; version=1.0.0", func(p textparse.Parser, et textparse.Entry) {
		if et == textparse.EntrySeries {
			_, ts, _ := p.Series()
			require.Nil(t, ts)
			ls := entryLabels(p)
			require.False(t, seen[ls.String()], "one sample per series: %s", ls)
			seen[ls.String()] = true
		}
	})
	assert.NotEmpty(t, seen)
}

func TestWriteFederate(t *testing.T) {
	f := smallFleet(t)
	var b bytes.Buffer
	require.NoError(t, f.WriteFederate(&b))
	samples := 0
	eachEntry(t, b.Bytes(), "text/plain; version=0.0.4", func(p textparse.Parser, et textparse.Entry) {
		switch et {
		case textparse.EntryType:
			_, typ := p.Type()
			require.Equal(t, "unknown", string(typ), "federation exposes untyped samples")
		case textparse.EntrySeries:
			_, ts, _ := p.Series()
			require.NotNil(t, ts)
			ls := entryLabels(p)
			require.NotEmpty(t, ls.Get("instance"))
			require.NotEmpty(t, ls.Get("job"))
			samples++
		}
	})
	assert.Equal(t, storedCount(f), samples)
	assert.Contains(t, b.String(), "# TYPE vllm:num_requests_running untyped\n")
}

func TestWriteDumps(t *testing.T) {
	f := smallFleet(t)
	n := len(f.Pods[0].Scrapes) + len(f.Pods[1].Scrapes)
	require.Less(t, len(f.Pods[1].Scrapes), len(f.Pods[0].Scrapes), "no scrape while down")

	dir := t.TempDir()
	require.NoError(t, f.WriteDumps(dir, DumpOptions{SetModTime: true}))
	sc := f.Pods[0].Scrapes[3]
	name := filepath.Join(dir, "vllm-0", sc.Time.Format("2006-01-02T15-04-05Z")+".prom")
	data, err := os.ReadFile(name)
	require.NoError(t, err)
	assert.Equal(t, sc.VLLM(), data)
	fi, err := os.Stat(name)
	require.NoError(t, err)
	assert.True(t, fi.ModTime().Equal(sc.Time))
	dcgm, err := filepath.Glob(filepath.Join(dir, "*", "dcgm-*.prom"))
	require.NoError(t, err)
	assert.Len(t, dcgm, n)

	flat := t.TempDir()
	require.NoError(t, f.WriteDumps(flat, DumpOptions{Layout: LayoutFlat, Gzip: true, TimeFormat: "unix"}))
	name = filepath.Join(flat, "vllm-0_"+strconv.FormatInt(sc.Time.Unix(), 10)+".prom.gz")
	fh, err := os.Open(name)
	require.NoError(t, err)
	defer fh.Close()
	zr, err := gzip.NewReader(fh)
	require.NoError(t, err)
	got, err := io.ReadAll(zr)
	require.NoError(t, err)
	assert.Equal(t, sc.VLLM(), got)
	all, err := filepath.Glob(filepath.Join(flat, "*.prom.gz"))
	require.NoError(t, err)
	assert.Len(t, all, 2*n)
}
