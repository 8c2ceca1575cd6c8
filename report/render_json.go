package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strings"
	"unicode"

	"github.com/whyslow/whyslow/rules"
)

// WriteJSON writes the report as indented JSON, in the versioned schema
// docs/ids.md documents (schema_version, verdict, windows, symptoms,
// hypotheses, signals, timelines, facts, inputs, dimensions, warnings,
// groups). Values are in base units (seconds, tokens, ratios 0..1) and
// times in RFC 3339 UTC.
//
// JSON has no NaN or Inf, so non-finite numbers are written as null, and
// WriteJSON adds a warning to the written report saying how many and,
// for infinities (such as the unbounded upper bound of a quantile in the
// +Inf bucket), where. Lists the schema promises (symptoms, hypotheses,
// warnings, signals.fleet and the lists of each hypothesis) are written as
// [] when empty, never null. WriteJSON does not modify r.
func (r *Report) WriteJSON(w io.Writer) error {
	out := r.forJSON()
	if out == nil {
		out = normalizedReport(&Report{SchemaVersion: SchemaVersion})
	}
	if warn := nonFiniteWarnings(out); len(warn) > 0 {
		for _, s := range warn {
			if !slices.Contains(out.Warnings, s) {
				out.Warnings = append(out.Warnings, s)
			}
		}
	}
	// The timelines hold most of a large report's bytes: they are written
	// one at a time where a placeholder stands in the rest of the report,
	// instead of the whole report being marshalled, indented and unescaped
	// in memory (three copies of it, in memory fresh from the system).
	tls := out.Timelines
	if len(tls) > 0 {
		out.Timelines = []Timeline{{Signal: timelinesMark}} // out is a copy
	}
	doc, err := indentedJSON(out.MarshalJSON())
	if err != nil {
		return err
	}
	doc = append(doc, '\n')
	if len(tls) == 0 {
		_, err = w.Write(doc)
		return err
	}
	// The placeholder's array, as json.Indent writes a top-level field's:
	// "[", each element on a line of its own four spaces in, "\n  ]". It
	// is found by its lines, which no string in the report can hold (JSON
	// writes a string's newlines as \n).
	mark := bytes.Index(doc, []byte(timelinesMarkJSON))
	open := mark + len("\n  \"timelines\": [")
	closing := bytes.IndexByte(doc[max(mark, 0):], ']')
	if mark < 0 || closing < 0 {
		return fmt.Errorf("report: writing JSON: no place for the timelines")
	}
	if _, err := w.Write(doc[:open]); err != nil {
		return err
	}
	// One timeline after the other in the same memory: compact, then
	// indented behind its separator (fresh memory for each, a hundred
	// kilobytes, cost more than the writing).
	var compact []byte
	var indented bytes.Buffer
	for i, t := range tls {
		if compact, err = t.appendJSON(compact[:0]); err != nil {
			return err
		}
		indented.Reset()
		if i == 0 {
			indented.WriteString("\n    ")
		} else {
			indented.WriteString(",\n    ")
		}
		if err := json.Indent(&indented, compact, "    ", "  "); err != nil {
			return err
		}
		if _, err := w.Write(unescapeHTML(indented.Bytes())); err != nil {
			return err
		}
	}
	if _, err := io.WriteString(w, "\n  "); err != nil {
		return err
	}
	_, err = w.Write(doc[mark+closing:])
	return err
}

// timelinesMark is the signal of the placeholder timeline WriteJSON
// writes the timelines in place of, and timelinesMarkJSON the indented
// lines that open its field.
const (
	timelinesMark     = "\x00whyslow:timelines\x00"
	timelinesMarkJSON = "\n  \"timelines\": [\n    {\n      \"signal\": \"\\u0000whyslow:timelines\\u0000\""
)

// indentedJSON indents the compact JSON b (as an Encoder with SetIndent
// writes it, without its second pass over what MarshalJSON returns) and
// unescapes what nested json.Marshal calls escaped (unescapeHTML).
func indentedJSON(b []byte, err error) ([]byte, error) {
	return indentJSON(b, err, "")
}

func indentJSON(b []byte, err error, prefix string) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.Grow(len(b) + len(b)/2 + 1)
	if err := json.Indent(&buf, b, prefix, "  "); err != nil {
		return nil, err
	}
	return unescapeHTML(buf.Bytes()), nil
}

// unescapeHTML turns the \u003c, \u003e and \u0026 escapes that nested
// json.Marshal calls (such as rules.Evidence's) write back into <, > and
// &: the same JSON strings, readable ("up >= 1.5x"). Escape sequences are
// read left to right, so an escaped backslash followed by "u003e" is left
// alone. It works in place (the result is never longer than what it has
// read), returning b's prefix: the report's JSON is tens of megabytes.
func unescapeHTML(b []byte) []byte {
	if !bytes.Contains(b, []byte(`\u00`)) {
		return b
	}
	out := b[:0]
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			out = append(out, b[i])
			continue
		}
		if b[i+1] == 'u' && i+6 <= len(b) {
			switch string(b[i+2 : i+6]) {
			case "003c", "003C":
				out = append(out, '<')
				i += 5
				continue
			case "003e", "003E":
				out = append(out, '>')
				i += 5
				continue
			case "0026":
				out = append(out, '&')
				i += 5
				continue
			}
		}
		out = append(out, b[i], b[i+1])
		i++
	}
	return out
}

// forJSON returns a copy of r whose promised lists are non-nil.
func (r *Report) forJSON() *Report {
	if r == nil {
		return nil
	}
	return normalizedReport(r)
}

// normalizedReport copies r (and its groups), replacing nil lists and
// maps of the schema by empty ones. Slices are copied before they change.
func normalizedReport(r *Report) *Report {
	c := *r
	if c.Culprit == nil {
		c.Culprit = r.NamedCulprit()
	}
	if c.Symptoms == nil {
		c.Symptoms = []rules.Symptom{}
	} else {
		c.Symptoms = slices.Clone(c.Symptoms)
		for i := range c.Symptoms {
			c.Symptoms[i].Evidence = nonNil(c.Symptoms[i].Evidence)
		}
	}
	c.Hypotheses = slices.Clone(nonNil(c.Hypotheses))
	for i := range c.Hypotheses {
		f := &c.Hypotheses[i]
		f.Explains = nonNil(f.Explains)
		f.Evidence = nonNil(f.Evidence)
		f.CounterEvidence = nonNil(f.CounterEvidence)
		f.NextChecks = nonNil(f.NextChecks)
		f.Mitigations = nonNil(f.Mitigations)
		f.RootCause = nonNil(f.RootCause)
		f.Prevention = nonNil(f.Prevention)
	}
	c.Warnings = slices.Clone(nonNil(c.Warnings))
	c.Dimensions = nonNil(c.Dimensions)
	c.Signals.Fleet = nonNil(c.Signals.Fleet)
	if c.Signals.Replicas == nil {
		c.Signals.Replicas = map[string][]Signal{}
	}
	if c.Facts == nil {
		c.Facts = rules.Facts{}
	}
	if c.Settings.SLO == nil {
		c.Settings.SLO = map[string]float64{}
	}
	if c.Settings.Thresholds == nil {
		c.Settings.Thresholds = map[string]float64{}
	}
	c.Inputs.Sources = nonNil(c.Inputs.Sources)
	c.Inputs.Replicas = nonNil(c.Inputs.Replicas)
	if c.Groups != nil {
		gs := make([]*Report, len(c.Groups))
		for i, g := range c.Groups {
			if g != nil {
				gs[i] = normalizedReport(g)
			}
		}
		c.Groups = gs
	}
	return &c
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// maxInfPaths is the number of infinite values a warning names.
const maxInfPaths = 5

// nonFiniteWarnings walks the report as it will be written and returns
// the warnings about the non-finite numbers it holds.
func nonFiniteWarnings(r *Report) []string {
	var nan int
	var inf []string
	newFloatWalker(func(path func() string, v float64) {
		switch {
		case math.IsNaN(v):
			nan++
		case math.IsInf(v, 0):
			inf = append(inf, fmt.Sprintf("%s (%v)", path(), v))
		}
	}).walk(reflect.ValueOf(r))
	var out []string
	if len(inf) > 0 {
		shown := inf[:min(len(inf), maxInfPaths)]
		more := ""
		if len(inf) > len(shown) {
			more = fmt.Sprintf(" and %d more", len(inf)-len(shown))
		}
		out = append(out, fmt.Sprintf("json: %d infinite number(s) written as null (an unbounded bucket bound or a ratio to zero): %s%s",
			len(inf), strings.Join(shown, ", "), more))
	}
	if nan > 0 {
		out = append(out, fmt.Sprintf("json: %d unknown number(s) (NaN: not measured, or not defined for the signal's kind) written as null", nan))
	}
	return out
}

// A floatWalker calls f for every float64 reachable from a value through
// exported fields, slices, arrays, maps (in sorted key order) and
// pointers, with its JSON-like path
// ("hypotheses[prefill-long-prompts].evidence[0].upper"), built only when
// f asks for it: a report holds some 400,000 numbers, nearly all of which
// need none. Fields tagged json:"-" are skipped, like the encoder does.
type floatWalker struct {
	f    func(path func() string, v float64)
	path func() string // join, made once
	segs []pathSeg     // the path to the value being walked
	// fields caches each struct type's fields to walk.
	fields map[reflect.Type][]walkField
}

// newFloatWalker returns a floatWalker calling f.
func newFloatWalker(f func(path func() string, v float64)) *floatWalker {
	w := &floatWalker{f: f, fields: map[reflect.Type][]walkField{}}
	w.path = w.join
	return w
}

// pathSeg is one step of a floatWalker's path: a struct field by its JSON
// name, a list element (elem, its index), or a map key (elem, idx -1).
type pathSeg struct {
	field string
	elem  reflect.Value
	idx   int
}

// walkField is a struct field a floatWalker walks, by index and JSON name.
type walkField struct {
	index int
	name  string
}

func (w *floatWalker) walk(v reflect.Value) {
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		w.f(w.path, v.Float())
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			w.walk(v.Elem())
		}
	case reflect.Struct:
		if e, ok := v.Interface().(rules.Evidence); ok {
			w.walkEvidence(e)
			return
		}
		for _, fd := range w.structFields(v.Type()) {
			w.segs = append(w.segs, pathSeg{field: fd.name})
			w.walk(v.Field(fd.index))
			w.segs = w.segs[:len(w.segs)-1]
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			e := v.Index(i)
			w.segs = append(w.segs, pathSeg{elem: e, idx: i})
			w.walk(e)
			w.segs = w.segs[:len(w.segs)-1]
		}
	case reflect.Map:
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
		for _, k := range keys {
			w.segs = append(w.segs, pathSeg{elem: k, idx: -1})
			w.walk(v.MapIndex(k))
			w.segs = w.segs[:len(w.segs)-1]
		}
	}
}

// walkEvidence walks an evidence item as its MarshalJSON writes it: the
// numbers of its fact flat, then its effect.
func (w *floatWalker) walkEvidence(e rules.Evidence) {
	f := e.Fact
	for _, n := range []struct {
		name string
		v    float64
	}{{"value", f.Incident.Value}, {"baseline", f.Baseline.Value}, {"lower", f.Incident.Lower}, {"upper", f.Incident.Upper}, {"count", f.Incident.Count}, {"baseline_count", f.Baseline.Count}} {
		w.segs = append(w.segs, pathSeg{field: n.name})
		w.f(w.path, n.v)
		w.segs = w.segs[:len(w.segs)-1]
	}
	w.segs = append(w.segs, pathSeg{field: "effect"})
	w.walk(reflect.ValueOf(e.Effect))
	w.segs = w.segs[:len(w.segs)-1]
}

// structFields returns the fields of struct type t to walk, with their
// JSON names.
func (w *floatWalker) structFields(t reflect.Type) []walkField {
	if fs, ok := w.fields[t]; ok {
		return fs
	}
	var fs []walkField
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		name := snakeCase(sf.Name)
		if tag, ok := sf.Tag.Lookup("json"); ok {
			n, _, _ := strings.Cut(tag, ",")
			if n == "-" {
				continue
			}
			if n != "" {
				name = n
			}
		}
		fs = append(fs, walkField{i, name})
	}
	w.fields[t] = fs
	return fs
}

// join returns the path to the value being walked.
func (w *floatWalker) join() string {
	var b strings.Builder
	for _, s := range w.segs {
		switch {
		case s.field != "":
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.field)
		case s.idx < 0:
			fmt.Fprintf(&b, ".%v", s.elem)
		default:
			b.WriteString("[" + elementKey(s.elem, s.idx) + "]")
		}
	}
	return b.String()
}

// elementKey names a list element by its id when it has one (a signal,
// finding or symptom), by its quantile for a Quantile, else by index.
func elementKey(v reflect.Value, i int) string {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return fmt.Sprint(i)
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return fmt.Sprint(i)
	}
	switch x := v.Interface().(type) {
	case Quantile:
		return fmtQ(x.Q)
	case rules.Evidence:
		return fmt.Sprint(i)
	}
	for _, name := range []string{"ID", "Signal"} {
		if fv := v.FieldByName(name); fv.IsValid() && fv.Kind() == reflect.String && fv.String() != "" {
			if name == "Signal" {
				if rv := v.FieldByName("Replica"); rv.IsValid() && rv.String() != "" {
					return fv.String() + "@" + rv.String()
				}
			}
			return fv.String()
		}
	}
	return fmt.Sprint(i)
}

// snakeCase turns a Go field name into a JSON key: BaselineCount ->
// baseline_count.
func snakeCase(s string) string {
	var b strings.Builder
	rs := []rune(s)
	for i, r := range rs {
		if unicode.IsUpper(r) {
			if i > 0 && (unicode.IsLower(rs[i-1]) || i+1 < len(rs) && unicode.IsLower(rs[i+1])) {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// rankedFinding is a finding as the JSON form writes it: with its rank.
type rankedFinding struct {
	// Rank is the finding's place in the ranking, 1 first.
	Rank int `json:"rank"`
	rules.Finding
}

// MarshalJSON writes the report with an explicit "rank" on every
// hypothesis, in ranking order. Reading the JSON back into a Report
// ignores the rank (the order holds it).
func (r Report) MarshalJSON() ([]byte, error) {
	type plain Report
	hs := make([]rankedFinding, len(r.Hypotheses))
	for i, f := range r.Hypotheses {
		hs[i] = rankedFinding{Rank: i + 1, Finding: f}
	}
	p := plain(r)
	p.Hypotheses = nil
	b, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	hb, err := json.Marshal(hs)
	if err != nil {
		return nil, err
	}
	// Put "hypotheses" back in its place (json.Marshal writes the
	// fields in declaration order, and plain's Hypotheses is null).
	return bytes.Replace(b, []byte(`"hypotheses":null`), append([]byte(`"hypotheses":`), hb...), 1), nil
}
