package main

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/whyslow/whyslow/snapshot"
)

func noTime(file, mtime string) snapshot.Problem {
	at, err := time.Parse(time.RFC3339, mtime)
	if err != nil {
		panic(err)
	}
	return snapshot.Problem{Severity: snapshot.SeverityWarning, File: file, Offset: -1, Err: &snapshot.NoTimeError{At: at}}
}

// Problems of several files that say the same thing are one line with a
// count and the first few names; others stay one line each.
func TestGroupProblems(t *testing.T) {
	var eight []snapshot.Problem
	for i := range 8 {
		eight = append(eight, noTime(fmt.Sprintf("pod-%d.prom", i), fmt.Sprintf("2026-09-22T10:3%d:00Z", i)))
	}
	lineProblem := snapshot.Problem{Severity: snapshot.SeverityWarning, File: "a.prom", Line: 7, Offset: -1, Err: snapshot.ErrNoTime}
	tests := []struct {
		name string
		in   []snapshot.Problem
		want []string
	}{
		{"eight files, one line", eight, []string{
			"8 files (pod-0.prom, pod-1.prom, pod-2.prom and 5 more): no scrape time: no time in the file name or on the samples; " +
				"using the file's mtime 2026-09-22T10:30:00Z – 2026-09-22T10:37:00Z"}},
		{"one file is its own line", eight[:1], []string{eight[0].Error()}},
		{"same time, said once", []snapshot.Problem{noTime("a", "2026-09-22T10:30:00Z"), noTime("b", "2026-09-22T10:30:00Z")}, []string{
			"2 files (a, b): no scrape time: no time in the file name or on the samples; using the file's mtime 2026-09-22T10:30:00Z"}},
		{"a line's problem is never grouped", []snapshot.Problem{lineProblem, lineProblem}, []string{lineProblem.Error(), lineProblem.Error()}},
		{"a text like a timed reason is not grouped with it", []snapshot.Problem{
			{Severity: snapshot.SeverityWarning, File: "x", Offset: -1, Err: errors.New((&snapshot.NoTimeError{}).Reason(""))},
			eight[0], eight[1]},
			[]string{"x: " + (&snapshot.NoTimeError{}).Reason(""),
				"2 files (pod-0.prom, pod-1.prom): no scrape time: no time in the file name or on the samples; " +
					"using the file's mtime 2026-09-22T10:30:00Z – 2026-09-22T10:31:00Z"}},
		{"other severities apart", []snapshot.Problem{eight[0], {Severity: snapshot.SeverityInfo, File: "b", Offset: -1, Err: eight[1].Err}},
			[]string{eight[0].Error(), "b: " + eight[1].Err.Error()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, g := range groupProblems(tt.in) {
				if len(g.files) == 1 {
					got = append(got, g.first.Error())
					continue
				}
				got = append(got, g.String())
			}
			assert.Equal(t, tt.want, got)
		})
	}
}
