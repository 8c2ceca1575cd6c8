package fleetsim

import "time"

// EachStoredSample calls fn with every sample of every scrape of the
// fleet (vLLM and GPU exporter pages) as Prometheus stores it: the series
// as text, name{labels} with the target labels, as WriteFederate writes
// it; the scrape time; and the value. keep, if not nil, selects the
// metric names to visit before anything is formatted. Samples come pod
// by pod in time order.
func (f *Fleet) EachStoredSample(keep func(name string) bool, fn func(series string, at time.Time, v float64)) {
	var b []byte
	for _, p := range f.Pods {
		for _, sc := range p.Scrapes {
			for _, dcgm := range []bool{false, true} {
				sc.eachStored(dcgm, func(name string, ls []label, _ int64, v float64) {
					if keep != nil && !keep(name) {
						return
					}
					b = append(b[:0], name...)
					b = appendLabels(b, ls, "")
					fn(string(b), sc.Time, v)
				})
			}
		}
	}
}
