package fleetsim

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// famType is the type of a metric family.
type famType uint8

const (
	typeCounter famType = iota
	typeGauge
	typeHistogram
	typeSummary
)

var famTypeNames = [...]string{"counter", "gauge", "histogram", "summary"}

type label struct{ name, value string }

// family is one metric family of a scrape, independent of the exposition
// format.
type family struct {
	// name is the OpenMetrics family name: a counter's name without
	// _total (the 0.0.4 text adds it back).
	name     string
	help     string
	typ      famType
	created  bool // prometheus_client's _created (V1 and HTTP metrics)
	sumFirst bool // V0 multiprocess mode writes _sum before the buckets
	series   []series
}

// series is one labelled child of a family.
type series struct {
	labels  []label // sorted by name, without le
	value   float64 // counter or gauge
	bounds  []float64
	counts  []uint64 // histogram: per bucket, +Inf last
	sum     float64  // histogram or summary
	count   float64  // summary
	created float64  // Unix seconds
}

// histCount returns the number of observations of a histogram series.
func (s *series) histCount() float64 {
	var n uint64
	for _, c := range s.counts {
		n += c
	}
	return float64(n)
}

// nonFinite spells v when it is +Inf, -Inf or NaN, as posInf, negInf or
// nan (Python and Prometheus spell them differently).
func nonFinite(v float64, posInf, negInf, nan string) (string, bool) {
	switch {
	case math.IsInf(v, 1):
		return posInf, true
	case math.IsInf(v, -1):
		return negInf, true
	case math.IsNaN(v):
		return nan, true
	}
	return "", false
}

// pyRepr formats v as Python's repr(float) does.
func pyRepr(v float64) string {
	if s, ok := nonFinite(v, "inf", "-inf", "nan"); ok {
		return s
	}
	if v == 0 {
		if math.Signbit(v) {
			return "-0.0"
		}
		return "0.0"
	}
	// Python switches to exponent notation below 1e-4 and from 1e16; its
	// exponent form matches Go's shortest 'e' format ("1e-05").
	s := strconv.FormatFloat(v, 'e', -1, 64)
	_, e, _ := strings.Cut(s, "e")
	if ei, _ := strconv.Atoi(e); ei < -4 || ei >= 16 {
		return s
	}
	s = strconv.FormatFloat(v, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// formatFloat formats v as prometheus_client's floatToGoString does: Python
// repr, with positive values of 7 or more integer digits in Go-like
// exponent form ("1.394703e+06").
func formatFloat(v float64) string {
	// Fast path for the common case, whole numbers such as bucket counts
	// and counters: Python's repr is the integer and ".0" below 1e6.
	if v == math.Trunc(v) && v > -1e6 && v < 1e6 && (v != 0 || !math.Signbit(v)) {
		return strconv.FormatInt(int64(v), 10) + ".0"
	}
	return formatFloatRepr(v)
}

// formatFloatRepr is formatFloat without the fast path for whole numbers.
func formatFloatRepr(v float64) string {
	if s, ok := nonFinite(v, "+Inf", "-Inf", "NaN"); ok {
		return s
	}
	s := pyRepr(v)
	dot := strings.IndexByte(s, '.')
	if v > 0 && dot > 6 {
		mant := strings.TrimRight(s[:1]+"."+s[1:dot]+s[dot+1:], "0.")
		return mant + "e+" + twoDigits(dot-1)
	}
	return s
}

func twoDigits(n int) string {
	if n < 10 {
		return "0" + strconv.Itoa(n)
	}
	return strconv.Itoa(n)
}

// escapeLabel escapes a label value for the text formats.
func escapeLabel(v string) string {
	if !needsEscape(v) {
		return v
	}
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(v)
}

// needsEscape reports whether v holds a backslash, a double quote or a
// newline (strings.ContainsAny, without its set built on every call).
func needsEscape(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c == '\\' || c == '"' || c == '\n' {
			return true
		}
	}
	return false
}

func escapeHelp(v string) string {
	if !strings.ContainsAny(v, "\\\n") {
		return v
	}
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(v)
}

// appendLabels appends {a="x",le="y",...} with le inserted in name order
// (prometheus_client sorts label names). le == "" omits it.
func appendLabels(b []byte, ls []label, le string) []byte {
	if len(ls) == 0 && le == "" {
		return b
	}
	b = append(b, '{')
	n := 0
	leDone := le == ""
	for _, l := range ls {
		if !leDone && l.name > "le" {
			b = appendLabel(b, n, "le", le)
			n++
			leDone = true
		}
		b = appendLabel(b, n, l.name, l.value)
		n++
	}
	if !leDone {
		b = appendLabel(b, n, "le", le)
	}
	return append(b, '}')
}

// appendLabel appends the i-th label pair of a label set: name="value".
func appendLabel(b []byte, i int, name, value string) []byte {
	if i > 0 {
		b = append(b, ',')
	}
	b = append(b, name...)
	b = append(b, '=', '"')
	b = append(b, escapeLabel(value)...)
	return append(b, '"')
}

func appendSample(b []byte, name, suffix string, ls []label, le string, v float64) []byte {
	b = append(b, name...)
	b = append(b, suffix...)
	b = appendLabels(b, ls, le)
	b = append(b, ' ')
	if v == math.Trunc(v) && v > -1e6 && v < 1e6 && (v != 0 || !math.Signbit(v)) {
		// formatFloat's fast path, without its string.
		b = strconv.AppendInt(b, int64(v), 10)
		b = append(b, ".0"...)
	} else {
		b = append(b, formatFloat(v)...)
	}
	return append(b, '\n')
}

func appendHeader(b []byte, name, help, typ string) []byte {
	b = append(b, "# HELP "...)
	b = append(b, name...)
	b = append(b, ' ')
	b = append(b, escapeHelp(help)...)
	b = append(b, "\n# TYPE "...)
	b = append(b, name...)
	b = append(b, ' ')
	b = append(b, typ...)
	return append(b, '\n')
}

// appendText writes fams in the Prometheus text format 0.0.4 exactly as
// Python's prometheus_client (generate_latest) does.
func appendText(b []byte, fams []family) []byte {
	for i := range fams {
		f := &fams[i]
		name := f.name
		if f.typ == typeCounter {
			name += "_total"
		}
		b = appendHeader(b, name, f.help, famTypeNames[f.typ])
		for j := range f.series {
			s := &f.series[j]
			switch f.typ {
			case typeCounter:
				b = appendSample(b, name, "", s.labels, "", s.value)
			case typeGauge:
				b = appendSample(b, name, "", s.labels, "", s.value)
			case typeSummary:
				b = appendSample(b, name, "_count", s.labels, "", s.count)
				b = appendSample(b, name, "_sum", s.labels, "", s.sum)
			case typeHistogram:
				if f.sumFirst {
					b = appendSample(b, name, "_sum", s.labels, "", s.sum)
				}
				b = appendBuckets(b, name, s)
				b = appendSample(b, name, "_count", s.labels, "", s.histCount())
				if !f.sumFirst {
					b = appendSample(b, name, "_sum", s.labels, "", s.sum)
				}
			}
		}
		if f.created {
			cname := f.name + "_created"
			b = appendHeader(b, cname, f.help, "gauge")
			for j := range f.series {
				b = appendSample(b, cname, "", f.series[j].labels, "", f.series[j].created)
			}
		}
	}
	return b
}

func appendBuckets(b []byte, name string, s *series) []byte {
	s.eachBucket(func(le string, cum float64) {
		b = appendSample(b, name, "_bucket", s.labels, le, cum)
	})
	return b
}

// eachBucket calls fn with the le label and the cumulative count of every
// bucket of histogram s, +Inf last.
func (s *series) eachBucket(fn func(le string, cum float64)) {
	var cum uint64
	for k, c := range s.counts {
		cum += c
		le := "+Inf"
		if k < len(s.bounds) {
			le = formatBound(s.bounds[k])
		}
		fn(le, float64(cum))
	}
}

// boundText caches formatFloat of the bucket bounds: a few dozen values,
// formatted on every scrape of every histogram series.
var boundText sync.Map // float64 -> string

// formatBound is formatFloat of a bucket bound.
func formatBound(v float64) string {
	if s, ok := boundText.Load(v); ok {
		return s.(string)
	}
	s := formatFloat(v)
	boundText.Store(v, s)
	return s
}

// sampleFunc receives one sample: its full name, labels (sorted, le
// included where relevant) and value.
type sampleFunc func(name string, ls []label, v float64)

// eachSample calls fn for every sample of fams as a Prometheus server
// scraping the text format would store them (including _created gauges).
func eachSample(fams []family, fn sampleFunc) {
	var buf []label
	withLE := func(ls []label, le string) []label {
		buf = append(buf[:0], ls...)
		i, _ := slices.BinarySearchFunc(buf, "le", func(l label, n string) int { return strings.Compare(l.name, n) })
		buf = slices.Insert(buf, i, label{"le", le})
		return buf
	}
	for i := range fams {
		f := &fams[i]
		for j := range f.series {
			s := &f.series[j]
			switch f.typ {
			case typeCounter:
				fn(f.name+"_total", s.labels, s.value)
			case typeGauge:
				fn(f.name, s.labels, s.value)
			case typeSummary:
				fn(f.name+"_count", s.labels, s.count)
				fn(f.name+"_sum", s.labels, s.sum)
			case typeHistogram:
				s.eachBucket(func(le string, cum float64) {
					fn(f.name+"_bucket", withLE(s.labels, le), cum)
				})
				fn(f.name+"_count", s.labels, s.histCount())
				fn(f.name+"_sum", s.labels, s.sum)
			}
		}
		if f.created {
			for j := range f.series {
				fn(f.name+"_created", f.series[j].labels, f.series[j].created)
			}
		}
	}
}
