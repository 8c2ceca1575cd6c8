package report

import "github.com/whyslow/whyslow/catalog"

// CatalogDocument lays out a catalog resolution (whyslow catalog): the
// title, the targets with their versions, the signals with the metric
// names they were found under, the warnings, and what the targets'
// metrics cannot show (catalog.Resolution.UnseenLines). Its text form fits
// TextWidth columns; the cells are the catalog's own (catalog.Table).
func CatalogDocument(res catalog.Resolution) *Document {
	d := &Document{}
	d.para("", res.Title())
	d.table("targets", docTable(res.TargetTable()))
	d.table("signals", docTable(res.SignalTable()))
	if ws := res.WarningLines(); len(ws) > 0 {
		d.heading(2, "Warnings")
		d.list("warning", textItems(ws))
	}
	if us := res.UnseenLines(); len(us) > 0 {
		d.heading(2, "Cannot see")
		d.list("unseen", textItems(us))
	}
	return d
}

// docTable makes a document table of a catalog table, the counts of
// targets right-aligned.
func docTable(t catalog.Table) *Table {
	out := &Table{Head: t.Head, Rows: t.Rows, Right: make([]bool, len(t.Head))}
	for i, h := range t.Head {
		out.Right[i] = h == "targets"
	}
	return out
}
