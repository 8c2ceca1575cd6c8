package html

import (
	"html/template"
	"io"

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
// running and KV usage add one line per replica. Intervals without
// observations are gaps, not zeros. The SVG does not embed fonts: its
// text uses the Liberation Sans metrics, which Arial and Helvetica share.
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
		plots[report.GroupLabel(rep.Group)] = views
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
	"right": func(t *report.Table, i int) bool { return i < len(t.Right) && t.Right[i] },
	"mark":  func(t *report.Table, i int) bool { return i < len(t.Marks) && t.Marks[i] },
}).Parse(htmlSource))

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
table { border-collapse: collapse; margin: .5rem 0 1rem; font-size: .9rem; }
th, td { overflow-wrap: normal; border: 1px solid #d5dbe3; padding: .25rem .5rem; vertical-align: top; text-align: left; }
th { background: #f1f4f8; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.mark td { background: #fff3cd; font-weight: 600; }
pre { background: #f6f8fa; padding: .6rem .8rem; overflow-x: auto; }
figure.plot { margin: 1rem 0 1.6rem; }
figure.plot figcaption { font-size: .9rem; color: #444; }
figure.plot svg { display: block; width: 100%; max-width: 100%; height: auto; }
figure.plot svg text { font-family: "Liberation Sans", Arial, Helvetica, sans-serif !important; }
ul.legend { list-style: none; padding: 0; margin: .2rem 0; display: flex; flex-wrap: wrap; gap: .3rem 1.2rem; font-size: .85rem; }
ul.legend li span { display: inline-block; width: 1.6rem; height: 0; border-top: 2px solid; vertical-align: middle; margin-right: .35rem; }
ul.legend li.bold span { border-top-width: 4px; }
ul.legend li.bold { font-weight: 700; }
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
{{else if eq .Kind "table"}}{{template "table" .Table}}
{{else if eq .Kind "pre"}}<pre>{{.Text}}</pre>
{{else if eq .Kind "plots"}}{{if .Plots}}<h2>Timelines</h2>
{{range .Plots}}<figure class="plot">
<figcaption><strong>{{.Title}}</strong>: {{.Caption}}</figcaption>
{{.Inline}}
<ul class="legend">{{range .Legend}}<li{{if .Bold}} class="bold"{{end}}><span style="border-color: {{.Color}}"></span>{{.Name}}</li>{{end}}</ul>
</figure>
{{end}}{{end}}{{end}}{{end}}
{{define "heading"}}{{if eq .Level 1}}<h1>{{.Text}}</h1>{{else if eq .Level 2}}<h2>{{.Text}}</h2>{{else if eq .Level 3}}<h3{{with .Class}} class="{{.}}"{{end}}>{{.Text}}</h3>{{else}}<h4>{{.Text}}</h4>{{end}}{{end}}
{{define "items"}}<ul>{{range .}}{{template "item" .}}{{end}}</ul>{{end}}
{{define "item"}}<li{{with .Class}} class="{{.}}"{{end}}>{{.Text}}{{if .Sub}}{{template "items" .Sub}}{{end}}</li>{{end}}
{{define "table"}}{{$t := .}}<div class="scroll"><table>
<thead><tr>{{range $i, $h := .Head}}<th{{if right $t $i}} class="num"{{end}}>{{$h}}</th>{{end}}</tr></thead>
<tbody>
{{range $r, $row := .Rows}}<tr{{if mark $t $r}} class="mark"{{end}}>{{range $i, $c := $row}}<td{{if right $t $i}} class="num"{{end}}>{{$c}}</td>{{end}}</tr>
{{end}}</tbody>
</table></div>{{end}}`
