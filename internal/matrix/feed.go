package matrix

import (
	"cmp"
	"context"
	"errors"
	"os"
	"slices"
	"time"

	"github.com/whyslow/whyslow/internal/fleetsim"
	"github.com/whyslow/whyslow/internal/fleetsim/simtsdb"
	"github.com/whyslow/whyslow/snapshot"
	_ "github.com/whyslow/whyslow/snapshot/tsdb" // snapshot.Read reads TSDB directories
)

// dumpTime is the file-name time format of fleetsim.WriteDumps'
// default DumpOptions.
const dumpTime = "2006-01-02T15-04-05Z"

// Evidence renders every scrape of f as the /metrics (and DCGM) pages
// fleetsim.WriteDumps would write under DIR/<pod>/<time>.prom, and reads
// them in memory with snapshot.Builder.AddDump, in the order
// snapshot.Read gives a dump directory (by the time in the file name,
// then by path). The result is the Evidence `whyslow diagnose DIR` reads
// from the same fleet written to disk, without the files.
func Evidence(f *fleetsim.Fleet) *snapshot.Evidence {
	type dump struct {
		name string
		t    time.Time
		sc   *fleetsim.Scrape
		dcgm bool
	}
	var dumps []dump
	for _, p := range f.Pods {
		for _, sc := range p.Scrapes {
			ts := sc.Time.UTC().Format(dumpTime)
			dumps = append(dumps, dump{sc.PodName() + "/" + ts + ".prom", sc.Time, sc, false})
			if f.Config.GPUExporter != fleetsim.NoGPUExporter {
				dumps = append(dumps, dump{sc.PodName() + "/dcgm-" + ts + ".prom", sc.Time, sc, true})
			}
		}
	}
	slices.SortStableFunc(dumps, func(x, y dump) int {
		return cmp.Or(x.t.Compare(y.t), cmp.Compare(x.name, y.name))
	})
	b := snapshot.NewBuilder(snapshot.Options{})
	for _, d := range dumps {
		data := d.sc.VLLM()
		if d.dcgm {
			data = d.sc.DCGM()
		}
		_ = b.AddDump(d.name, data, time.Time{})
	}
	return b.Evidence()
}

// TSDBEvidence writes f as a Prometheus TSDB ([simtsdb.Write])
// into a temporary directory and reads it back with snapshot.Read, as
// `whyslow diagnose DIR` reads a Prometheus data directory; the directory
// is removed before it returns.
func TSDBEvidence(f *fleetsim.Fleet) (ev *snapshot.Evidence, err error) {
	dir, err := os.MkdirTemp("", "whyslow-matrix-tsdb-")
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()
	if err := simtsdb.Write(f, dir, fleetsim.TSDBOptions{}); err != nil {
		return nil, err
	}
	return snapshot.Read(context.Background(), []string{dir}, snapshot.Options{})
}
