package fleetsim

import (
	"bufio"
	"cmp"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// VLLM returns the pod's /metrics page at the scrape, in the Prometheus
// text format 0.0.4 as vLLM's prometheus_client writes it.
func (sc *Scrape) VLLM() []byte {
	return appendText(make([]byte, 0, 64<<10), sc.families())
}

// DCGM returns the DCGM exporter's page for the pod's GPUs at the scrape,
// or nil when Config.GPUExporter is NoGPUExporter.
func (sc *Scrape) DCGM() []byte {
	fams := sc.dcgmFamilies()
	if fams == nil {
		return nil
	}
	return appendDCGMText(make([]byte, 0, 8<<10), fams)
}

// Layout is how WriteDumps arranges dump files.
type Layout int

const (
	// LayoutPodDirs writes DIR/<pod>/<time>.prom and, with a GPU
	// exporter, DIR/<pod>/dcgm-<time>.prom beside it.
	LayoutPodDirs Layout = iota
	// LayoutFlat writes DIR/<pod>_<time>.prom and DIR/<pod>_dcgm-<time>.prom.
	LayoutFlat
)

// DumpOptions refine WriteDumps.
type DumpOptions struct {
	Layout Layout
	// Gzip compresses every file (name suffix .gz).
	Gzip bool
	// TimeFormat formats the scrape time in file names; empty means
	// "2006-01-02T15-04-05Z" (RFC 3339 with dashes, safe on every file
	// system). Use "unix" for Unix seconds.
	TimeFormat string
	// SetModTime sets each file's modification time to its scrape time.
	SetModTime bool
}

// fileTime formats t for a file name.
func (o DumpOptions) fileTime(t time.Time) string {
	switch o.TimeFormat {
	case "":
		return t.UTC().Format("2006-01-02T15-04-05Z")
	case "unix":
		return strconv.FormatInt(t.Unix(), 10)
	}
	return t.UTC().Format(o.TimeFormat)
}

// WriteDumps writes every scrape of every pod as /metrics dump files under
// dir, which is created if needed.
func (f *Fleet) WriteDumps(dir string, opts DumpOptions) error {
	for _, p := range f.Pods {
		for _, sc := range p.Scrapes {
			pdir, prefix := dir, sc.PodName()+"_"
			if opts.Layout == LayoutPodDirs {
				pdir, prefix = filepath.Join(dir, sc.PodName()), ""
			}
			if err := os.MkdirAll(pdir, 0o755); err != nil {
				return err
			}
			ts := opts.fileTime(sc.Time)
			if err := writeDump(filepath.Join(pdir, prefix+ts+".prom"), sc.VLLM(), sc.Time, opts); err != nil {
				return err
			}
			if d := sc.DCGM(); d != nil {
				if err := writeDump(filepath.Join(pdir, prefix+"dcgm-"+ts+".prom"), d, sc.Time, opts); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func writeDump(name string, data []byte, t time.Time, opts DumpOptions) (err error) {
	if opts.Gzip {
		name += ".gz"
	}
	fh, err := os.Create(name)
	if err != nil {
		return err
	}
	defer func() {
		err = errors.Join(err, fh.Close())
		if err == nil && opts.SetModTime {
			err = os.Chtimes(name, t, t)
		}
	}()
	if !opts.Gzip {
		_, err = fh.Write(data)
		return err
	}
	zw := gzip.NewWriter(fh)
	zw.ModTime = t
	if _, err := zw.Write(data); err != nil {
		return err
	}
	return zw.Close()
}

// targetLabels returns the labels Prometheus attaches to the vLLM target
// of the pod's process proc (job, instance, namespace, pod, and the role
// label RoleLabel of a pod with a prefill/decode role). DCGM series
// keep their own pod attribution (honor_labels) and get job and instance
// of the exporter.
func (p *Pod) targetLabels(proc int, dcgm bool) []label {
	if dcgm {
		return []label{{"instance", p.GPUInstance}, {"job", "dcgm-exporter"}}
	}
	if role := p.fleet.Config.Pods[p.Index].Role; role != "" {
		return []label{{"instance", p.Instances[proc]}, {"job", "vllm"}, {RoleLabel, role}, {"namespace", p.fleet.Config.Namespace}, {"pod", p.Names[proc]}}
	}
	return []label{{"instance", p.Instances[proc]}, {"job", "vllm"}, {"namespace", p.fleet.Config.Namespace}, {"pod", p.Names[proc]}}
}

// procAt is the pod's process at offset t: the last one started by then
// (the first before any).
func (p *Pod) procAt(t time.Duration) int {
	k := 0
	for i, s := range p.Starts {
		if s <= t {
			k = i
		}
	}
	return k
}

// storedLabels merges metric labels with target labels into a set sorted
// by name, without __name__ (target labels win, as with honor_labels:
// false; DCGM's own pod attribution has no clash with its target labels).
func storedLabels(dst []label, ls, target []label) []label {
	dst = append(dst[:0], target...)
	for _, l := range ls {
		if !slices.ContainsFunc(target, func(t label) bool { return t.name == l.name }) {
			dst = append(dst, l)
		}
	}
	slices.SortFunc(dst, func(a, b label) int { return strings.Compare(a.name, b.name) })
	return dst
}

// eachStored calls fn with every sample of the scrape as Prometheus stores
// it: metric name, labels with target labels (sorted, without __name__)
// and the millisecond timestamp. dcgm selects the GPU exporter's page.
func (sc *Scrape) eachStored(dcgm bool, fn func(name string, ls []label, tMs int64, v float64)) {
	fams := sc.families()
	if dcgm {
		fams = sc.dcgmFamilies()
	}
	target := sc.pod.targetLabels(sc.proc, dcgm)
	t := sc.Time.UnixMilli()
	var buf []label
	eachSample(fams, func(name string, ls []label, v float64) {
		buf = storedLabels(buf, ls, target)
		fn(name, buf, t, v)
	})
}

// rounds groups the fleet's scrapes by scrape round (the k-th scrape
// instant of the interval grid), in time order.
func (f *Fleet) rounds() [][]*Scrape {
	iv := f.Config.ScrapeInterval
	var out [][]*Scrape
	for _, p := range f.Pods {
		for _, sc := range p.Scrapes {
			k := int(sc.Offset / iv)
			for len(out) <= k {
				out = append(out, nil)
			}
			out[k] = append(out[k], sc)
		}
	}
	return out
}

// WriteFederate writes the fleet as a concatenation of Prometheus
// /federate responses, one per scrape round: text format 0.0.4, every
// family "untyped", one TYPE line per metric name, samples sorted by name
// and labels, with target labels and millisecond timestamps, values
// formatted as Go does.
func (f *Fleet) WriteFederate(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	type line struct {
		name string
		text []byte
	}
	var lines []line
	for _, round := range f.rounds() {
		lines = lines[:0]
		for _, sc := range round {
			for _, dcgm := range []bool{false, true} {
				sc.eachStored(dcgm, func(name string, ls []label, t int64, v float64) {
					b := make([]byte, 0, 160)
					b = append(b, name...)
					b = appendLabels(b, ls, "")
					b = append(b, ' ')
					b = appendGoFloat(b, v)
					b = append(b, ' ')
					b = strconv.AppendInt(b, t, 10)
					b = append(b, '\n')
					lines = append(lines, line{name, b})
				})
			}
		}
		slices.SortStableFunc(lines, func(a, b line) int {
			return cmp.Or(strings.Compare(a.name, b.name), strings.Compare(string(a.text), string(b.text)))
		})
		prev := ""
		for _, l := range lines {
			if l.name != prev {
				fmt.Fprintf(bw, "# TYPE %s untyped\n", l.name)
				prev = l.name
			}
			bw.Write(l.text)
		}
	}
	return bw.Flush()
}

// appendGoFloat formats v as Prometheus (Go) does in the text format.
func appendGoFloat(b []byte, v float64) []byte {
	s := formatFloat(v) // for Inf/NaN spellings
	if strings.ContainsAny(s, "IN") {
		return append(b, s...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

// WriteOpenMetrics writes the fleet as one OpenMetrics 1.0 document: every
// sample carries target labels, families are not interleaved, _created
// values are samples of their family, and the document ends with "# EOF".
// With withTimestamps, every scrape is written with its time in seconds,
// the input `promtool tsdb create-blocks-from openmetrics` expects; without,
// only the last scrape of each pod is written (a document of one instant,
// as a single scrape would give).
func (f *Fleet) WriteOpenMetrics(w io.Writer, withTimestamps bool) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	type scrapeFams struct {
		sc   *Scrape
		fams [2][]family
	}
	var all []scrapeFams
	var order []string
	seen := map[string]bool{}
	for _, p := range f.Pods {
		scrapes := p.Scrapes
		if !withTimestamps && len(scrapes) > 0 {
			scrapes = scrapes[len(scrapes)-1:]
		}
		for _, sc := range scrapes {
			sf := scrapeFams{sc: sc, fams: [2][]family{sc.families(), sc.dcgmFamilies()}}
			for _, fs := range sf.fams {
				for _, fm := range fs {
					if !seen[fm.name] {
						seen[fm.name] = true
						order = append(order, fm.name)
					}
				}
			}
			all = append(all, sf)
		}
	}
	var buf []label
	for _, name := range order {
		header := false
		for _, sf := range all {
			for d, fs := range sf.fams {
				i := slices.IndexFunc(fs, func(fm family) bool { return fm.name == name })
				if i < 0 {
					continue
				}
				fm := &fs[i]
				if !header {
					fmt.Fprintf(bw, "# TYPE %s %s\n# HELP %s %s\n", name, famTypeNames[fm.typ], name, escapeHelp(fm.help))
					header = true
				}
				target := sf.sc.pod.targetLabels(sf.sc.proc, d == 1)
				ts := ""
				if withTimestamps {
					ts = " " + strconv.FormatFloat(float64(sf.sc.Time.UnixMilli())/1000, 'f', -1, 64)
				}
				one := []family{*fm}
				one[0].created = false
				for j := range fm.series {
					one[0].series = fm.series[j : j+1]
					eachSample(one, func(sname string, ls []label, v float64) {
						buf = storedLabels(buf, ls, target)
						bw.WriteString(sname)
						bw.Write(appendLabels(nil, buf, ""))
						bw.WriteString(" " + formatFloat(v) + ts + "\n")
					})
					if fm.created {
						buf = storedLabels(buf, fm.series[j].labels, target)
						bw.WriteString(name + "_created")
						bw.Write(appendLabels(nil, buf, ""))
						bw.WriteString(" " + formatFloat(fm.series[j].created) + ts + "\n")
					}
				}
			}
		}
	}
	bw.WriteString("# EOF\n")
	return bw.Flush()
}
