package report

import (
	"bufio"
	"io"
	"strings"
	"unicode/utf8"
)

// A report is rendered in two steps: its content is first laid out as a
// small Document (headings, paragraphs, nested lists, tables, preformatted
// text), then the document is written as text, Markdown or (package
// report/html) HTML. The forms therefore say the same things in the same
// order.

// Kinds of Block.
const (
	// BlockHeading is a heading of Level 1 (title) to 4.
	BlockHeading = "heading"
	// BlockPara is a paragraph of Text.
	BlockPara = "para"
	// BlockList is a list of Items.
	BlockList = "list"
	// BlockTable is a Table.
	BlockTable = "table"
	// BlockPre is preformatted Text.
	BlockPre = "pre"
	// BlockPlots marks where the HTML form draws the timeline plots of the
	// report named in Text (a group label, or "all"); text and Markdown
	// skip it.
	BlockPlots = "plots"
)

// Block is one block of a Document.
type Block struct {
	// Kind is one of the Block* constants.
	Kind string
	// Level is a heading's level: 1 (title) to 4.
	Level int
	// Text is the text of a heading, paragraph or preformatted block.
	Text string
	// Class is a hint for HTML styling: "verdict", "warning", ...
	Class string
	// Items are a list's items.
	Items []Item
	// Table is a table block's table.
	Table *Table
	// Plot is the name of a timeline plot the HTML form draws after the
	// block; ignored by text and Markdown.
	Plot string
}

// Item is one item of a list, with its own sub-items.
type Item struct {
	// Text is the item's text; a newline breaks the line inside the item.
	Text string
	// Class is a hint for HTML styling.
	Class string
	// Sub are nested items.
	Sub []Item
}

// Table is a table with a header row.
type Table struct {
	// Head is the header row.
	Head []string
	// Rows are the body rows.
	Rows [][]string
	// Right marks right-aligned (numeric) columns.
	Right []bool
	// Marks marks rows to emphasise (a moved signal, a hot replica).
	Marks []bool
	// Tags label rows for the HTML form, which shows a row's tag beside
	// its first cell and as its class: "culprit" on the row of the replica
	// the report singles out (Report.NamedCulprit). Text and Markdown
	// leave them out.
	Tags []string
}

// Document is a laid-out report: the one document model every writer
// (text, Markdown, HTML) renders.
type Document struct {
	// Blocks are the document's blocks in order.
	Blocks []Block
	// shift is added to every heading level (groups nest one level down).
	shift int
	// verbose keeps every detail (LayoutOptions.Verbose).
	verbose bool
	// wide keeps text lines whole (LayoutOptions.Wide).
	wide bool
}

func (d *Document) heading(level int, text string) {
	d.Blocks = append(d.Blocks, Block{Kind: BlockHeading, Level: level + d.shift, Text: text})
}

func (d *Document) para(class, text string) {
	d.Blocks = append(d.Blocks, Block{Kind: BlockPara, Class: class, Text: text})
}

func (d *Document) list(class string, items []Item) {
	if len(items) == 0 {
		return
	}
	d.Blocks = append(d.Blocks, Block{Kind: BlockList, Class: class, Items: items})
}

func (d *Document) table(class string, t *Table) {
	d.Blocks = append(d.Blocks, Block{Kind: BlockTable, Class: class, Table: t})
}

// textItems makes list items of strings.
func textItems(ss []string) []Item {
	items := make([]Item, len(ss))
	for i, s := range ss {
		items[i] = Item{Text: s}
	}
	return items
}

// TextWidth is the width in columns the text form fits: paragraphs and
// list items are wrapped at word boundaries, and a table wider than it is
// split into several tables that repeat the first column. A single word
// longer than the width (a long path or metric name) is left whole.
const TextWidth = 120

// WriteText writes the document for a terminal: headings underlined,
// lists indented, tables aligned in columns, every line within TextWidth
// columns where words allow.
func (d *Document) WriteText(w io.Writer) error {
	width := TextWidth
	if d.wide {
		width = 0
	}
	return d.WriteTextWidth(w, width)
}

// WriteTextWidth is WriteText fitting width columns instead of
// TextWidth; width 0 fits nothing (one table row per line, however wide:
// the --wide flag).
func (d *Document) WriteTextWidth(w io.Writer, width int) error {
	bw := bufio.NewWriter(w)
	for i, b := range d.Blocks {
		if i > 0 && d.Blocks[i-1].Kind != BlockHeading {
			bw.WriteString("\n")
		}
		switch b.Kind {
		case BlockHeading:
			bw.WriteString(b.Text + "\n")
			switch b.Level {
			case 1:
				bw.WriteString(strings.Repeat("=", utf8.RuneCountInString(b.Text)) + "\n")
			case 2:
				bw.WriteString(strings.Repeat("-", utf8.RuneCountInString(b.Text)) + "\n")
			}
		case BlockPara:
			for _, l := range strings.Split(b.Text, "\n") {
				writeWrapped(bw, l, "", "", width)
			}
		case BlockList:
			writeTextItems(bw, b.Items, "  ", width)
		case BlockTable:
			writeTextTable(bw, b.Table, "  ", width)
		case BlockPre:
			for _, line := range strings.Split(b.Text, "\n") {
				bw.WriteString(strings.TrimRight("  "+line, " ") + "\n")
			}
		}
	}
	return bw.Flush()
}

func writeTextItems(w *bufio.Writer, items []Item, indent string, width int) {
	for _, it := range items {
		lines := strings.Split(it.Text, "\n")
		writeWrapped(w, lines[0], indent+"- ", indent+"  ", width)
		for _, l := range lines[1:] {
			writeWrapped(w, l, indent+"  ", indent+"  ", width)
		}
		writeTextItems(w, it.Sub, indent+"    ", width)
	}
}

// writeWrapped writes text after first, wrapped at width columns at
// spaces (not at all when width is 0), continuation lines after rest.
func writeWrapped(w *bufio.Writer, text, first, rest string, width int) {
	if width <= 0 {
		w.WriteString(strings.TrimRight(first+text, " ") + "\n")
		return
	}
	line := first
	n := utf8.RuneCountInString(line)
	empty := true
	for _, word := range strings.Split(text, " ") {
		wn := utf8.RuneCountInString(word)
		if !empty && n+1+wn > width {
			w.WriteString(line + "\n")
			line, n, empty = rest, utf8.RuneCountInString(rest), true
		}
		if !empty {
			line += " "
			n++
		}
		line += word
		n += wn
		empty = false
	}
	w.WriteString(strings.TrimRight(line, " ") + "\n")
}

func writeTextTable(w *bufio.Writer, t *Table, indent string, width int) {
	if width <= 0 {
		writeTextTablePart(w, t, indent, 0)
		return
	}
	room := width - utf8.RuneCountInString(indent)
	if wrapped := wrapLastColumn(t, room); tableWidth(wrapped) <= room {
		writeTextTablePart(w, wrapped, indent, 0)
		return
	}
	for i, part := range splitTable(t, room) {
		if i > 0 {
			w.WriteString("\n")
		}
		writeTextTablePart(w, part, indent, width)
	}
}

// tableWidth is the width of t written as text (without indent).
func tableWidth(t *Table) int {
	total := 0
	for i, n := range tableWidths(t) {
		if i > 0 {
			total += 2
		}
		total += n
	}
	return total
}

// tableWidths returns the width of each column of t.
func tableWidths(t *Table) []int {
	widths := make([]int, len(t.Head))
	for _, row := range append([][]string{t.Head}, t.Rows...) {
		for i, c := range row {
			if i < len(widths) {
				widths[i] = max(widths[i], utf8.RuneCountInString(c))
			}
		}
	}
	return widths
}

// wrapLastColumn wraps the cells of a left-aligned last column (prose,
// such as the dimensions' "how") so that the table fits width: a wrapped
// cell continues on rows of its own, empty but for the rest of the text.
func wrapLastColumn(t *Table, width int) *Table {
	widths := tableWidths(t)
	last := len(widths) - 1
	if last < 1 || (last < len(t.Right) && t.Right[last]) {
		return t
	}
	used := 0
	for _, n := range widths[:last] {
		used += n + 2
	}
	room := width - used
	if used+widths[last] <= width || room < 20 {
		return t
	}
	out := &Table{Head: t.Head, Right: t.Right}
	for i, r := range t.Rows {
		mark := i < len(t.Marks) && t.Marks[i]
		if last >= len(r) || utf8.RuneCountInString(r[last]) <= room {
			out.Rows = append(out.Rows, r)
			out.Marks = append(out.Marks, mark)
			continue
		}
		for j, part := range wrapWords(r[last], room) {
			row := make([]string, len(r))
			if j == 0 {
				copy(row, r)
			}
			row[last] = part
			out.Rows = append(out.Rows, row)
			out.Marks = append(out.Marks, mark)
		}
	}
	return out
}

// wrapWords splits text into lines of at most width runes at spaces (a
// longer word stands alone).
func wrapWords(text string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		if line != "" && utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	return append(lines, line)
}

// splitTable splits a table wider than width into tables of consecutive
// columns that each repeat the first column and fit width (a column too
// wide by itself gets a table of its own).
func splitTable(t *Table, width int) []*Table {
	widths := tableWidths(t)
	total := 0
	for i, n := range widths {
		if i > 0 {
			total += 2
		}
		total += n
	}
	if total <= width || len(widths) < 3 {
		return []*Table{t}
	}
	var parts []*Table
	var cols []int
	used := widths[0]
	flush := func() {
		p := &Table{Marks: t.Marks}
		keep := append([]int{0}, cols...)
		pick := func(row []string) []string {
			out := make([]string, len(keep))
			for j, c := range keep {
				if c < len(row) {
					out[j] = row[c]
				}
			}
			return out
		}
		p.Head = pick(t.Head)
		for _, r := range t.Rows {
			p.Rows = append(p.Rows, pick(r))
		}
		for _, c := range keep {
			p.Right = append(p.Right, c < len(t.Right) && t.Right[c])
		}
		parts = append(parts, p)
		cols, used = nil, widths[0]
	}
	for c := 1; c < len(widths); c++ {
		if len(cols) > 0 && used+2+widths[c] > width {
			flush()
		}
		cols = append(cols, c)
		used += 2 + widths[c]
	}
	flush()
	return parts
}

func writeTextTablePart(w *bufio.Writer, t *Table, indent string, width int) {
	if width > 0 {
		t = wrapLastColumn(t, width-utf8.RuneCountInString(indent))
	}
	widths := make([]int, len(t.Head))
	measure := func(row []string) {
		for i, c := range row {
			if i < len(widths) {
				widths[i] = max(widths[i], utf8.RuneCountInString(c))
			}
		}
	}
	measure(t.Head)
	for _, r := range t.Rows {
		measure(r)
	}
	line := func(row []string) {
		var b strings.Builder
		b.WriteString(indent)
		for i := range widths {
			c := ""
			if i < len(row) {
				c = row[i]
			}
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			if i > 0 {
				b.WriteString("  ")
			}
			if i < len(t.Right) && t.Right[i] {
				b.WriteString(pad + c)
			} else {
				b.WriteString(c + pad)
			}
		}
		w.WriteString(strings.TrimRight(b.String(), " ") + "\n")
	}
	line(t.Head)
	rule := make([]string, len(widths))
	for i, n := range widths {
		rule[i] = strings.Repeat("-", n)
	}
	line(rule)
	for _, r := range t.Rows {
		line(r)
	}
}

// WriteMarkdown writes the document as CommonMark with GitHub tables.
func (d *Document) WriteMarkdown(w io.Writer) error {
	bw := bufio.NewWriter(w)
	for i, b := range d.Blocks {
		if i > 0 {
			bw.WriteString("\n")
		}
		switch b.Kind {
		case BlockHeading:
			bw.WriteString(strings.Repeat("#", min(b.Level, 6)) + " " + mdInline(b.Text) + "\n")
		case BlockPara:
			text := mdInline(b.Text)
			if b.Class == "verdict" {
				text = "**" + text + "**"
			}
			bw.WriteString(text + "\n")
		case BlockList:
			writeMarkdownItems(bw, b.Items, "")
		case BlockTable:
			writeMarkdownTable(bw, b.Table)
		case BlockPre:
			bw.WriteString("```text\n" + b.Text + "\n```\n")
		}
	}
	return bw.Flush()
}

func writeMarkdownItems(w *bufio.Writer, items []Item, indent string) {
	for _, it := range items {
		lines := strings.Split(mdInline(it.Text), "\n")
		w.WriteString(indent + "- " + lines[0])
		for _, l := range lines[1:] {
			// A hard line break inside the item.
			w.WriteString("\\\n" + indent + "  " + l)
		}
		w.WriteString("\n")
		writeMarkdownItems(w, it.Sub, indent+"  ")
	}
}

func writeMarkdownTable(w *bufio.Writer, t *Table) {
	rawRow := func(cells []string) {
		w.WriteString("|")
		for _, c := range cells {
			w.WriteString(" " + c + " |")
		}
		w.WriteString("\n")
	}
	row := func(cells []string) {
		esc := make([]string, len(cells))
		for i, c := range cells {
			esc[i] = mdCell(c)
		}
		rawRow(esc)
	}
	row(t.Head)
	w.WriteString("|")
	for i := range t.Head {
		if i < len(t.Right) && t.Right[i] {
			w.WriteString("---:|")
		} else {
			w.WriteString("---|")
		}
	}
	w.WriteString("\n")
	for i, r := range t.Rows {
		if i < len(t.Marks) && t.Marks[i] {
			m := make([]string, len(r))
			for j, c := range r {
				if c != "" {
					c = "**" + mdCell(c) + "**"
				}
				m[j] = c
			}
			rawRow(m)
			continue
		}
		row(r)
	}
}
