package html

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/whyslow/whyslow/internal/textfmt"
	"github.com/whyslow/whyslow/report"
	"github.com/whyslow/whyslow/rules"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// This file draws a report's timelines as SVG with gonum.org/v1/plot, for
// the HTML form. Each plot shows one signal over the evidence: the fleet
// line bold, one thin line per replica where per-replica lines matter
// (waiting, running, KV usage), the line of the replica the report singles
// out (Report.NamedCulprit) on every plot, the incident window shaded and
// the baseline window lightly shaded. Intervals without observations are
// gaps, never zeros. A quantile known only as a bound (report.Point.Bound:
// in the histogram's first or overflow bucket) is drawn as a marker at the
// bound, never as a point of the line. A signal that is zero throughout
// is said in one line instead of a plot.

// plotSpec says how one timeline signal is drawn.
type plotSpec struct {
	signal   string
	title    string
	unit     string // "s", "ratio", "requests", "1/s"
	replicas bool   // draw one line per replica
}

// plotSpecs are the plots of the HTML report, in order.
var plotSpecs = []plotSpec{
	{"ttft", "TTFT p95", "s", false},
	{"queue_time", "queue time p95", "s", false},
	{"prefill_time", "prefill time p95", "s", false},
	{"tpot", "TPOT p95", "s", false},
	{"itl", "ITL p95", "s", false},
	{"e2e", "E2E latency p95", "s", false},
	{"waiting", "waiting requests", "requests", true},
	{"running", "running requests", "requests", true},
	{"kv_usage", "KV-cache usage", "ratio", true},
	{"preemptions", "preemptions", "1/s", false},
	{"gpu_util", "GPU utilisation", "ratio", false},
}

// Plot geometry and colours.
const (
	plotWidth  = 12 * vg.Inch
	plotHeight = 2.6 * vg.Inch
)

var (
	plotFleetColor    = color.RGBA{R: 0x1f, G: 0x3a, B: 0x5f, A: 0xff}
	plotIncidentShade = color.NRGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0x30}
	plotBaselineShade = color.NRGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0x20}
	plotSLOColor      = color.RGBA{R: 0xb7, G: 0x1c, B: 0x1c, A: 0xff}
	// plotCulpritColor draws the culprit replica on every plot (the
	// colour of its tag in the per-replica table).
	plotCulpritColor = color.RGBA{R: 0xad, G: 0x14, B: 0x57, A: 0xff}
	// plotReplicaColors are distinct colours for replica lines (Tableau
	// 10 without the red of the incident shading).
	plotReplicaColors = []color.RGBA{
		{0x1f, 0x77, 0xb4, 0xff}, {0xff, 0x7f, 0x0e, 0xff}, {0x2c, 0xa0, 0x2c, 0xff},
		{0x94, 0x67, 0xbd, 0xff}, {0x8c, 0x56, 0x4b, 0xff}, {0xe3, 0x77, 0xc2, 0xff},
		{0x7f, 0x7f, 0x7f, 0xff}, {0xbc, 0xbd, 0x22, 0xff}, {0x17, 0xbe, 0xcf, 0xff},
	}
	// plotFont is metric-compatible with Arial and Helvetica, so that a
	// viewer without the Liberation fonts lays the text out the same way.
	plotFont = font.Font{Typeface: "Liberation", Variant: "Sans"}
)

// htmlPlot is one drawn timeline.
type htmlPlot struct {
	Title   string
	Caption string
	// SVG is the inline <svg> element drawn by gonum/plot; nil for a
	// signal that is zero throughout, which Caption says in one line.
	SVG    []byte
	Legend []plotLegend
}

// plotLegend is one line of a plot's legend, rendered in HTML.
type plotLegend struct {
	Name  string
	Color string // CSS colour
	Bold  bool
	// Glyph is the marker of a legend entry drawn as markers ("▽"),
	// empty for a line.
	Glyph string
}

// Bound markers: a quantile in the first bucket is at most its upper
// edge (a triangle pointing down at the edge); one in the overflow bucket
// at least its lower edge (pointing up).
const (
	glyphAtMost  = "▽"
	glyphAtLeast = "△"
)

// timelinePlots draws the timelines of r (not of its groups).
func timelinePlots(r *report.Report) ([]htmlPlot, error) {
	var out []htmlPlot
	culprit := culpritReplica(r)
	for _, spec := range plotSpecs {
		var fleet *report.Timeline
		var reps []*report.Timeline
		for i := range r.Timelines {
			t := &r.Timelines[i]
			if t.Signal != spec.signal {
				continue
			}
			if t.Replica == "" {
				fleet = t
			} else if spec.replicas || t.Replica == culprit {
				reps = append(reps, t)
			}
		}
		if fleet == nil && len(reps) == 0 {
			continue
		}
		p, err := drawTimeline(r, spec, fleet, reps)
		if err != nil {
			return nil, fmt.Errorf("plot %s: %w", spec.signal, err)
		}
		if p != nil {
			out = append(out, *p)
		}
	}
	return out, nil
}

// plotScale chooses the unit the y axis shows and the factor from base
// units.
func plotScale(unit string, maxV float64) (label string, scale float64) {
	switch unit {
	case "s":
		if maxV < 1 {
			return "ms", 1000
		}
		return "s", 1
	case "ratio":
		return "%", 100
	case "1/s":
		return "per second", 1
	}
	return unit, 1
}

// culpritReplica names the replica the report singles out, or "".
func culpritReplica(r *report.Report) string {
	if c := r.NamedCulprit(); c != nil && c.Kind == "replica" {
		return c.Name
	}
	return ""
}

// plotPoints are a timeline's points as drawn, scaled.
type plotPoints struct {
	// Runs are runs of points whose value is known, each drawn as a line
	// (a lone point as a dot).
	Runs []plotter.XYs
	// AtMost and AtLeast are the points known only as a bound
	// (report.Point.Bound), at the bound: "<=" and ">=".
	AtMost, AtLeast plotter.XYs
}

// segments splits a timeline into runs of finite points, scaled; a point
// known only as a bound, or not finite, ends a run.
func segments(t *report.Timeline, scale float64) plotPoints {
	var out plotPoints
	var cur plotter.XYs
	end := func() {
		if len(cur) > 0 {
			out.Runs = append(out.Runs, cur)
			cur = nil
		}
	}
	for _, p := range t.Points {
		op, v := p.Bound()
		if math.IsNaN(v) || math.IsInf(v, 0) {
			end()
			continue
		}
		xy := plotter.XY{X: float64(p.T.Unix()), Y: v * scale}
		switch op {
		case "<=":
			end()
			out.AtMost = append(out.AtMost, xy)
		case ">=":
			end()
			out.AtLeast = append(out.AtLeast, xy)
		default:
			cur = append(cur, xy)
		}
	}
	end()
	return out
}

// bounds lists the distinct bounds of points, in the timeline's unit
// (the y values over scale), as the tables write them.
func bounds(points plotter.XYs, scale float64, unit string) string {
	var out []string
	for _, p := range points {
		s := rules.Unit(unit).Format(p.Y / scale)
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return strings.Join(out, ", ")
}

func cssColor(c color.RGBA) string { return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B) }

// drawTimeline draws one plot; nil when no point is finite.
func drawTimeline(r *report.Report, spec plotSpec, fleet *report.Timeline, reps []*report.Timeline) (*htmlPlot, error) {
	all := reps
	if fleet != nil {
		all = append([]*report.Timeline{fleet}, reps...)
	}
	// The ranges of the data, in base units.
	xMin, xMax, yMax := math.Inf(1), math.Inf(-1), 0.0
	zero, finite := true, 0
	var step time.Duration
	stat := ""
	for _, t := range all {
		step = max(step, t.Step)
		if stat == "" {
			stat = t.Stat
		}
		for _, p := range t.Points {
			x := float64(p.T.Unix())
			xMin, xMax = math.Min(xMin, x), math.Max(xMax, x)
			// A bound is drawn at the bound.
			if op, v := p.Bound(); !math.IsNaN(v) && !math.IsInf(v, 0) {
				yMax = math.Max(yMax, v)
				if v != 0 || op != "" {
					zero = false
				}
				finite++
			}
		}
	}
	if math.IsInf(xMin, 0) || finite == 0 {
		return nil, nil
	}
	if zero {
		return zeroPlot(spec, stat, step, fleet, reps), nil
	}
	slo, sloName := sloTarget(r, spec.signal)
	label, scale := plotScale(spec.unit, math.Max(yMax, slo))
	top := math.Max(yMax, slo) * scale * 1.08
	if spec.unit == "ratio" {
		top = math.Max(top, 100)
	}
	if top <= 0 {
		top = 1
	}
	// Intervals end at their points: the first interval starts one step
	// before the first point.
	if step > 0 {
		xMin -= step.Seconds()
	}
	xMin = math.Min(xMin, windowStart(r.Windows.Baseline, xMin))
	xMax = math.Max(xMax, windowEnd(r.Windows.Incident, xMax))

	p := plot.New()
	setPlotFonts(p)
	// A little room on the right for the last time label.
	p.X.Min, p.X.Max = xMin, xMax+0.04*(xMax-xMin)
	p.Y.Min, p.Y.Max = 0, top
	p.X.Tick.Marker = timeTicks{}
	p.Y.Label.Text = label
	p.Y.Tick.Marker = numberTicks{}
	p.X.Label.Text = "UTC"
	p.Add(plotter.NewGrid())

	shade := func(w report.WindowInfo, c color.Color) error {
		if w.Start.IsZero() || w.End.IsZero() || w.From == "none" || w.From == "lifetime" {
			return nil
		}
		x0, x1 := float64(w.Start.Unix()), float64(w.End.Unix())
		poly, err := plotter.NewPolygon(plotter.XYs{{X: x0, Y: 0}, {X: x1, Y: 0}, {X: x1, Y: top}, {X: x0, Y: top}})
		if err != nil {
			return err
		}
		poly.Color = c
		poly.LineStyle.Width = 0
		p.Add(poly)
		return nil
	}
	if err := shade(r.Windows.Baseline, plotBaselineShade); err != nil {
		return nil, err
	}
	if err := shade(r.Windows.Incident, plotIncidentShade); err != nil {
		return nil, err
	}

	var legend []plotLegend
	add := func(t *report.Timeline, c color.RGBA, width vg.Length, name string, bold bool) error {
		pts := segments(t, scale)
		if len(pts.Runs) == 0 && len(pts.AtMost) == 0 && len(pts.AtLeast) == 0 {
			return nil
		}
		for _, seg := range pts.Runs {
			if len(seg) == 1 {
				// A lone point between gaps: a dot, so it is not lost.
				sc, err := plotter.NewScatter(seg)
				if err != nil {
					return err
				}
				sc.GlyphStyle.Color = c
				sc.GlyphStyle.Radius = width
				sc.GlyphStyle.Shape = draw.CircleGlyph{}
				p.Add(sc)
				continue
			}
			l, err := plotter.NewLine(seg)
			if err != nil {
				return err
			}
			l.Color = c
			l.Width = width
			p.Add(l)
		}
		if len(pts.Runs) > 0 {
			legend = append(legend, plotLegend{Name: name, Color: cssColor(c), Bold: bold})
		}
		for _, b := range []struct {
			pts   plotter.XYs
			glyph draw.GlyphDrawer
			mark  string
			op    string
			where string
		}{
			{pts.AtMost, triangleGlyph{down: true}, glyphAtMost, "<=", "in the first bucket: only its upper edge is known"},
			{pts.AtLeast, triangleGlyph{}, glyphAtLeast, ">=", "in the overflow bucket: only its lower edge is known"},
		} {
			if len(b.pts) == 0 {
				continue
			}
			sc, err := plotter.NewScatter(b.pts)
			if err != nil {
				return err
			}
			sc.GlyphStyle.Color = c
			sc.GlyphStyle.Radius = width + vg.Points(2)
			sc.GlyphStyle.Shape = b.glyph
			p.Add(sc)
			who := t.Replica
			if who == "" {
				who = "fleet"
			}
			legend = append(legend, plotLegend{Name: fmt.Sprintf("%s: %s %s (%d intervals; %s %s)", who,
				b.op, bounds(b.pts, scale, spec.unit), len(b.pts), plotStatText(stat), b.where), Color: cssColor(c), Glyph: b.mark})
		}
		return nil
	}
	// The fleet first, so that a replica carrying all of it stays visible
	// on top of the bold line.
	if fleet != nil {
		name := "fleet"
		switch {
		case spec.signal == "kv_usage" || spec.signal == "gpu_util":
			name = "fleet (mean over replicas)"
		case stat == "mean" || stat == "rate":
			name = "fleet (sum over replicas)"
		case stat == "p95":
			name = "fleet (buckets merged across replicas)"
		}
		if err := add(fleet, plotFleetColor, vg.Points(2.5), name, true); err != nil {
			return nil, err
		}
	}
	culprit := culpritReplica(r)
	for i, t := range reps {
		width, name, bold, c := vg.Points(1), t.Replica, false, plotReplicaColors[i%len(plotReplicaColors)]
		if t.Replica == culprit {
			// The replica the report singles out stands out, in one
			// colour on every plot.
			width, name, bold, c = vg.Points(2), t.Replica+" (culprit)", true, plotCulpritColor
		}
		if err := add(t, c, width, name, bold); err != nil {
			return nil, err
		}
	}
	if slo > 0 {
		l, err := plotter.NewLine(plotter.XYs{{X: xMin, Y: slo * scale}, {X: xMax, Y: slo * scale}})
		if err != nil {
			return nil, err
		}
		l.Color = plotSLOColor
		l.Width = vg.Points(1.5)
		l.Dashes = []vg.Length{vg.Points(6), vg.Points(4)}
		p.Add(l)
		legend = append(legend, plotLegend{Name: "SLO " + sloName + " " + rules.UnitSeconds.Format(slo) + " (dashed)", Color: cssColor(plotSLOColor)})
	}
	if len(legend) == 0 {
		return nil, nil
	}

	c := vgsvg.New(plotWidth, plotHeight)
	p.Draw(draw.New(c))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return nil, err
	}
	title := plotTitle(spec, stat)
	caption := fmt.Sprintf("per %s interval; shaded: incident window %s (red), baseline %s (grey)",
		textfmt.Duration(step), r.Windows.Incident.Span(), r.Windows.Baseline.Span())
	return &htmlPlot{Title: title, Caption: caption, SVG: inlineSVG(buf.Bytes()), Legend: legend}, nil
}

// zeroPlot says in one line that a signal is zero throughout: over which
// span and how many samples are behind it (observations of a quantile,
// scrapes of a gauge; for a rate, the intervals), the fleet's or, without
// a fleet timeline, the replicas' together.
func zeroPlot(spec plotSpec, stat string, step time.Duration, fleet *report.Timeline, reps []*report.Timeline) *htmlPlot {
	counted := reps
	if fleet != nil {
		counted = []*report.Timeline{fleet}
	}
	var first, last time.Time
	intervals := map[time.Time]bool{}
	count := 0.0
	for _, t := range counted {
		for _, p := range t.Points {
			if v := float64(p.Value); math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			if first.IsZero() || p.T.Before(first) {
				first = p.T
			}
			if p.T.After(last) {
				last = p.T
			}
			intervals[p.T] = true
			count += float64(p.Count)
		}
	}
	span := report.WindowInfo{Start: first.Add(-step), End: last}.Span()
	n := textfmt.Integer(count) + " samples"
	switch stat {
	case "p95":
		n = textfmt.Integer(count) + " observations"
	case "rate":
		n = fmt.Sprintf("%s intervals of %s", textfmt.Integer(float64(len(intervals))), textfmt.Duration(step))
	}
	return &htmlPlot{Title: plotTitle(spec, stat), Caption: fmt.Sprintf("all zero over the window, %s: %s", span, n)}
}

// plotTitle is the title of a plot: the signal and what its points hold.
func plotTitle(spec plotSpec, stat string) string {
	title := spec.title
	if stat != "" && !strings.Contains(title, stat) {
		title += " (" + plotStatText(stat) + ")"
	}
	return title
}

// triangleGlyph is a hollow triangle pointing up, or down: the marker of
// a quantile known only as a bound.
type triangleGlyph struct{ down bool }

// DrawGlyph implements draw.GlyphDrawer.
func (g triangleGlyph) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: vg.Points(1.2)})
	r := sty.Radius
	dir := vg.Length(1)
	if g.down {
		dir = -1
	}
	// cos and sin of 30 degrees.
	const cos30, sin30 = 0.8660254037844386, 0.5
	p := make(vg.Path, 0, 4)
	p.Move(vg.Point{X: pt.X, Y: pt.Y + dir*r})
	p.Line(vg.Point{X: pt.X - r*cos30, Y: pt.Y - dir*r*sin30})
	p.Line(vg.Point{X: pt.X + r*cos30, Y: pt.Y - dir*r*sin30})
	p.Close()
	c.Stroke(p)
}

// sloTarget returns the SLO target drawn on the plot of signal, with its
// name: the p95 targets of TTFT, TPOT and ITL (the plots are p95 per
// interval); 0 when none was given.
func sloTarget(r *report.Report, signal string) (float64, string) {
	name := map[string]string{"ttft": "ttft_p95", "tpot": "tpot_p95", "itl": "itl_p95"}[signal]
	if name == "" {
		return 0, ""
	}
	return r.Settings.SLO[name], name
}

// numberTicks labels a numeric axis like the text report: gonum's
// default tick positions, labels by textfmt.Number ("750", not
// "750.00"; "0.5", not "0.50").
type numberTicks struct{}

// Ticks implements plot.Ticker.
func (numberTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = textfmt.Number(ticks[i].Value)
		}
	}
	return ticks
}

func plotStatText(stat string) string {
	switch stat {
	case "mean":
		return "mean over the interval's scrapes"
	case "max":
		return "max over the interval's scrapes"
	case "rate":
		return "per-second rate"
	}
	return stat
}

func windowStart(w report.WindowInfo, def float64) float64 {
	if w.Start.IsZero() || w.From == "none" || w.From == "lifetime" {
		return def
	}
	return float64(w.Start.Unix())
}

func windowEnd(w report.WindowInfo, def float64) float64 {
	if w.End.IsZero() || w.From == "none" || w.From == "lifetime" {
		return def
	}
	return float64(w.End.Unix())
}

// setPlotFonts sets every text of p to plotFont, keeping sizes.
func setPlotFonts(p *plot.Plot) {
	set := func(s *font.Font) { s.Typeface, s.Variant = plotFont.Typeface, plotFont.Variant }
	set(&p.Title.TextStyle.Font)
	set(&p.X.Label.TextStyle.Font)
	set(&p.Y.Label.TextStyle.Font)
	set(&p.X.Tick.Label.Font)
	set(&p.Y.Tick.Label.Font)
	set(&p.Legend.TextStyle.Font)
}

// inlineSVG strips the XML prolog and generator comment of a standalone
// SVG document so that it can be embedded in HTML.
func inlineSVG(b []byte) []byte {
	if i := bytes.Index(b, []byte("<svg")); i >= 0 {
		b = b[i:]
	}
	return bytes.TrimSpace(b)
}

// timeTicks labels a time axis (Unix seconds) at round UTC times: every
// 1, 2, 5, 10, 15 or 30 minutes, or 1, 2, 3, 6 or 12 hours, or days,
// whichever gives at most about eight labels, with unlabelled minor ticks
// in between.
type timeTicks struct{}

// tickSteps are the candidate label steps, with their minor steps.
var tickSteps = []struct{ major, minor time.Duration }{
	{time.Minute, 15 * time.Second}, {2 * time.Minute, 30 * time.Second}, {5 * time.Minute, time.Minute},
	{10 * time.Minute, 2 * time.Minute}, {15 * time.Minute, 5 * time.Minute}, {30 * time.Minute, 10 * time.Minute},
	{time.Hour, 15 * time.Minute}, {2 * time.Hour, 30 * time.Minute}, {3 * time.Hour, time.Hour},
	{6 * time.Hour, time.Hour}, {12 * time.Hour, 3 * time.Hour}, {24 * time.Hour, 6 * time.Hour},
}

// Ticks implements plot.Ticker.
func (timeTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return nil
	}
	span := time.Duration((hi - lo) * float64(time.Second))
	st := tickSteps[len(tickSteps)-1]
	for _, s := range tickSteps {
		if span/s.major <= 8 {
			st = s
			break
		}
	}
	layout := "15:04"
	if st.major >= 24*time.Hour || span > 24*time.Hour {
		layout = "01-02 15:04"
	}
	minor := int64(st.minor / time.Second)
	major := int64(st.major / time.Second)
	first := (int64(math.Ceil(lo)) + minor - 1) / minor * minor
	var ticks []plot.Tick
	for t := first; float64(t) <= hi; t += minor {
		tick := plot.Tick{Value: float64(t)}
		if t%major == 0 {
			tick.Label = time.Unix(t, 0).UTC().Format(layout)
		}
		ticks = append(ticks, tick)
	}
	return ticks
}
