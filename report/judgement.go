package report

import "github.com/whyslow/whyslow/rules"

// JudgementDocument lays out an experiment judgement (whyslow experiment):
// the title, the verdict, the tables of rules.Judgement.Tables (reasons,
// runs, workload, metrics, per-run values), the warnings, then notes, one
// paragraph each (diagnose adds the warm-up and the configuration check).
// Its text form fits TextWidth columns.
func JudgementDocument(j rules.Judgement, notes ...string) *Document {
	d := &Document{}
	d.heading(1, j.Title())
	d.para("verdict", "verdict: "+string(j.Verdict))
	for _, t := range j.Tables() {
		if t.Title != "" {
			d.heading(3, t.Title)
		}
		d.table("", &Table{Head: t.Head, Rows: t.Rows, Right: t.Right})
	}
	if len(j.Warnings) > 0 {
		d.heading(3, "warnings")
		d.list("warning", textItems(j.Warnings))
	}
	for _, n := range notes {
		d.para("", n)
	}
	return d
}
