package html

import (
	"html/template"
	"io"
	"strings"

	"github.com/whyslow/whyslow/internal/textfmt"
	"github.com/whyslow/whyslow/report"
)

// Write writes the report as one self-contained HTML file for a
// postmortem: no script, no external style sheet, font or image, so it
// opens offline. The verdict comes first, then the symptoms, the ranked
// hypotheses with their evidence, the before/after table, timeline plots
// and the rest of the Markdown form's content.
//
// The plots are inline SVG drawn with gonum.org/v1/plot from
// Report.Timelines: TTFT, queue time, prefill time, TPOT and ITL p95,
// waiting, running, KV-cache usage, preemption rate and GPU utilisation,
// whichever the evidence holds, each with the incident window shaded and
// the baseline window lightly shaded. The fleet line is bold; waiting,
// running and KV usage add one line per replica, and every plot the line
// of the replica the report singles out (Report.NamedCulprit), whose row
// the per-replica table marks. Intervals without observations are gaps,
// not zeros; a quantile known only as a bound (report.Point.Bound) is a
// marker at the bound the tables print; a signal zero throughout is one
// line, not a plot. Tables wrap their cells (a value and its bucket on
// two lines) rather than scroll. The SVG does not embed fonts: its text
// uses the Liberation Sans metrics, which Arial and Helvetica share.
//
// All text is escaped (html/template). A report split into groups draws
// the plots of each group in its section.
func Write(w io.Writer, r *report.Report) error {
	return WriteOptions(w, r, Options{})
}

// Options select what the HTML form shows.
type Options struct {
	// Verbose prints every hypothesis in full and every evidence line
	// with its source metric (report.LayoutOptions.Verbose).
	Verbose bool
}

// WriteOptions is Write with options.
func WriteOptions(w io.Writer, r *report.Report, o Options) error {
	view, err := htmlView(r, o)
	if err != nil {
		return err
	}
	return htmlTemplate.Execute(w, view)
}

// htmlPage is the data of the HTML template.
type htmlPage struct {
	Title  string
	Blocks []htmlBlock
}

// htmlBlock is a block of the document, with its plots for a plots block.
type htmlBlock struct {
	report.Block
	Plots []htmlPlotView
}

// htmlPlotView is a plot as the template shows it.
type htmlPlotView struct {
	htmlPlot
	// Inline is the SVG drawn by gonum/plot, which escapes its own text
	// (tick labels); titles and legends are rendered by the template.
	Inline template.HTML
}

func htmlView(r *report.Report, o Options) (*htmlPage, error) {
	d := r.Layout(report.LayoutOptions{Verbose: o.Verbose, Plots: true})
	page := &htmlPage{Title: "whyslow report"}
	if r != nil {
		page.Title += ": " + string(r.Verdict)
	}
	// Plots are drawn per report: the top level's, or each group's.
	plots := map[string][]htmlPlotView{}
	reports := []*report.Report{r}
	if r != nil && len(r.Groups) > 0 {
		reports = r.Groups
	}
	for _, rep := range reports {
		if rep == nil {
			continue
		}
		ps, err := timelinePlots(rep)
		if err != nil {
			return nil, err
		}
		views := make([]htmlPlotView, len(ps))
		for i, p := range ps {
			// The SVG comes from gonum/plot's vgsvg, which escapes every
			// string it draws; no text of the report enters it.
			views[i] = htmlPlotView{htmlPlot: p, Inline: template.HTML(p.SVG)} // #nosec G203 -- see above
		}
		plots[textfmt.Selector(rep.Group)] = views
	}
	for _, b := range d.Blocks {
		hb := htmlBlock{Block: b}
		if b.Kind == report.BlockPlots {
			hb.Plots = plots[b.Text]
		}
		page.Blocks = append(page.Blocks, hb)
	}
	return page, nil
}

var htmlTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"right":     func(t *report.Table, i int) bool { return i < len(t.Right) && t.Right[i] },
	"rowClass":  rowClass,
	"tag":       func(t *report.Table, i int) string { return tableTag(t, i) },
	"splitCell": splitCell,
}).Parse(htmlSource))

// tableTag returns the tag of row i of t ("" for none).
func tableTag(t *report.Table, i int) string {
	if i < len(t.Tags) {
		return t.Tags[i]
	}
	return ""
}

// rowClass returns the class attribute value of row i of t: "mark" for a
// marked row, its tag (Table.Tags), both, or "".
func rowClass(t *report.Table, i int) string {
	var cls []string
	if i < len(t.Marks) && t.Marks[i] {
		cls = append(cls, "mark")
	}
	if tag := tableTag(t, i); tag != "" {
		cls = append(cls, tag)
	}
	return strings.Join(cls, " ")
}

// numCell is a numeric cell split where it may wrap: between a value and
// what qualifies it (the bucket that holds it, "[1s–2.5s]"; its count,
// "n=4,000"; its maximum, "(max 12 req)"; a second value after a comma),
// never inside one of them ("2.2s", "870 tokens").
type numCell []numPart

// numPart is one part of a numeric cell.
type numPart struct {
	Text   string
	Bucket bool // a bracketed bucket
}

// cellBreaks are where a numeric cell may wrap: before these...
var cellBreaks = []string{" [", " (", " n="}

// splitCell splits a numeric cell where it may wrap.
func splitCell(s string) numCell {
	var out numCell
	for s != "" {
		cut := len(s)
		for _, b := range cellBreaks {
			if i := strings.Index(s[1:], b); i >= 0 && i+1 < cut {
				cut = i + 1
			}
		}
		// ... and after a comma.
		if i := strings.Index(s, ", "); i >= 0 && i+1 < cut {
			cut = i + 1
		}
		part := s[:cut]
		out = append(out, numPart{Text: part, Bucket: strings.HasPrefix(part, "[") && strings.HasSuffix(part, "]")})
		s = strings.TrimPrefix(s[cut:], " ")
	}
	return out
}

const htmlSource = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="whyslow">
<title>{{.Title}}</title>
<style>
body { overflow-wrap: anywhere; font: 15px/1.45 -apple-system, "Segoe UI", "Liberation Sans", Arial, Helvetica, sans-serif; color: #1d2330; background: #fff; margin: 0; }
main { max-width: 76rem; margin: 0 auto; padding: 1.5rem 2rem 4rem; }
h1 { font-size: 1.6rem; margin: 2rem 0 .6rem; border-bottom: 3px solid #1f3a5f; padding-bottom: .3rem; }
h2 { font-size: 1.25rem; margin: 2rem 0 .5rem; border-bottom: 1px solid #ccd3dd; padding-bottom: .2rem; }
h3 { font-size: 1.05rem; margin: 1.4rem 0 .4rem; }
h3.status-supported { color: #a4161a; }
h3.status-not-evaluable { color: #8a6d00; }
h3.status-contradicted { color: #5c6675; font-weight: 600; }
p.verdict { font-size: 1.2rem; font-weight: 700; background: #fdecea; border-left: 6px solid #c62828; padding: .7rem 1rem; }
p.verdict.verdict-undetermined { background: #fff6db; border-left-color: #b7791f; }
p.verdict.verdict-no-incident { background: #e8f5e9; border-left-color: #2e7d32; }
ul.summary { background: #f6f8fa; border: 1px solid #d5dbe3; padding: .6rem 1rem .6rem 2rem; }
li.culprit { font-weight: 700; }
div.scroll { overflow-x: auto; max-width: 100%; }
ul { margin: .3rem 0 .6rem; padding-left: 1.4rem; }
li { margin: .15rem 0; }
li.PRESENT { color: #a4161a; font-weight: 700; }
li.PRESENT li { font-weight: 400; color: #1d2330; }
li.not-evaluable { color: #8a6d00; }
li.check-holds::marker { color: #2e7d32; }
li.check-does-not-hold::marker { color: #a4161a; }
table { border-collapse: collapse; margin: .5rem 0 1rem; font-size: .85rem; }
th, td { overflow-wrap: normal; border: 1px solid #d5dbe3; padding: .25rem .4rem; vertical-align: top; text-align: left; }
th { background: #f1f4f8; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.num { white-space: nowrap; }
td.q { white-space: normal; }
td.q span { white-space: nowrap; }
td.q span.bucket { color: #5c6675; font-size: .9em; }
table.compare td:last-child { white-space: nowrap; }
tr.mark td { background: #fff3cd; font-weight: 600; }
tr.culprit td { background: #fde2e4; font-weight: 700; }
tr.culprit td:first-child { box-shadow: inset 4px 0 0 #ad1457; }
span.tag { display: inline-block; font-size: .75rem; font-weight: 700; color: #fff; background: #ad1457; border-radius: .6rem; padding: 0 .45rem; margin-left: .3rem; vertical-align: .1em; }
pre { background: #f6f8fa; padding: .6rem .8rem; overflow-x: auto; }
figure.plot { margin: 1rem 0 1.6rem; }
figure.plot figcaption { font-size: .9rem; color: #444; }
figure.plot svg { display: block; width: 100%; max-width: 100%; height: auto; }
figure.plot svg text { font-family: "Liberation Sans", Arial, Helvetica, sans-serif !important; }
ul.legend { list-style: none; padding: 0; margin: .2rem 0; display: flex; flex-wrap: wrap; gap: .3rem 1.2rem; font-size: .85rem; }
ul.legend li span { display: inline-block; width: 1.6rem; height: 0; border-top: 2px solid; vertical-align: middle; margin-right: .35rem; }
ul.legend li.bold span { border-top-width: 4px; }
ul.legend li.bold { font-weight: 700; }
ul.legend li span.glyph { width: 1.6rem; height: auto; border: 0; text-align: center; font-weight: 700; }
figure.plot.zero { margin: .4rem 0 .8rem; }
</style>
</head>
<body>
<main>
{{range .Blocks}}{{template "block" .}}{{end}}
</main>
</body>
</html>
{{define "block"}}{{if eq .Kind "heading"}}{{template "heading" .}}
{{else if eq .Kind "para"}}<p{{with .Class}} class="{{.}}"{{end}}>{{.Text}}</p>
{{else if eq .Kind "list"}}{{if .Class}}<ul class="{{.Class}}">{{range .Items}}{{template "item" .}}{{end}}</ul>{{else}}{{template "items" .Items}}{{end}}
{{else if eq .Kind "table"}}{{template "table" .}}
{{else if eq .Kind "pre"}}<pre>{{.Text}}</pre>
{{else if eq .Kind "plots"}}{{if .Plots}}<h2>Timelines</h2>
{{range .Plots}}{{if .Inline}}<figure class="plot">
<figcaption><strong>{{.Title}}</strong>: {{.Caption}}</figcaption>
{{.Inline}}
<ul class="legend">{{range .Legend}}<li{{if .Bold}} class="bold"{{end}}>{{if .Glyph}}<span class="glyph" style="color: {{.Color}}">{{.Glyph}}</span>{{else}}<span style="border-color: {{.Color}}"></span>{{end}}{{.Name}}</li>{{end}}</ul>
</figure>
{{else}}<figure class="plot zero"><figcaption><strong>{{.Title}}</strong>: {{.Caption}}</figcaption></figure>
{{end}}{{end}}{{end}}{{end}}{{end}}
{{define "heading"}}{{if eq .Level 1}}<h1>{{.Text}}</h1>{{else if eq .Level 2}}<h2>{{.Text}}</h2>{{else if eq .Level 3}}<h3{{with .Class}} class="{{.}}"{{end}}>{{.Text}}</h3>{{else}}<h4>{{.Text}}</h4>{{end}}{{end}}
{{define "items"}}<ul>{{range .}}{{template "item" .}}{{end}}</ul>{{end}}
{{define "item"}}<li{{with .Class}} class="{{.}}"{{end}}>{{.Text}}{{if .Sub}}{{template "items" .Sub}}{{end}}</li>{{end}}
{{define "table"}}{{$t := .Table}}<div class="scroll"><table{{with .Class}} class="{{.}}"{{end}}>
<thead><tr>{{range $i, $h := $t.Head}}<th{{if right $t $i}} class="num"{{end}}>{{$h}}</th>{{end}}</tr></thead>
<tbody>
{{range $r, $row := $t.Rows}}{{$tag := tag $t $r}}<tr{{with rowClass $t $r}} class="{{.}}"{{end}}>{{range $i, $c := $row}}{{if right $t $i}}{{template "num" splitCell $c}}{{else}}<td>{{$c}}{{if and $tag (eq $i 0)}} <span class="tag">{{$tag}}</span>{{end}}</td>{{end}}{{end}}</tr>
{{end}}</tbody>
</table></div>{{end}}
{{define "num"}}{{if gt (len .) 1}}<td class="num q">{{range $i, $p := .}}{{if $i}} {{end}}<span{{if $p.Bucket}} class="bucket"{{end}}>{{$p.Text}}</span>{{end}}</td>{{else}}<td class="num">{{range .}}{{.Text}}{{end}}</td>{{end}}{{end}}`
