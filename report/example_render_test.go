package report_test

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/whyslow/whyslow/report"
	"github.com/whyslow/whyslow/rules"
)

// exampleReport is a small report: TTFT and prompt tokens over two
// windows, judged by the decision map.
func exampleReport() *report.Report {
	t0 := time.Date(2026, 3, 14, 9, 30, 0, 0, time.UTC)
	base := report.WindowInfo{Start: t0, End: t0.Add(30 * time.Minute), From: "given", Scrapes: 240}
	inc := report.WindowInfo{Start: t0.Add(30 * time.Minute), End: t0.Add(time.Hour), From: "given", Scrapes: 240}
	q := func(q, v, lo, hi, n float64) report.Quantile {
		return report.Quantile{Q: q, Value: rules.Number(v), Lower: rules.Number(lo), Upper: rules.Number(hi), Count: rules.Number(n)}
	}
	hist := func(id, unit string, b50, b95, i50, i95 report.Quantile) report.Signal {
		return report.Signal{ID: id, Kind: "histogram", Unit: unit,
			Baseline: &report.Measure{Window: base, Quantiles: []report.Quantile{b50, b95}, Count: b95.Count, Mean: b50.Value},
			Incident: &report.Measure{Window: inc, Quantiles: []report.Quantile{i50, i95}, Count: i95.Count, Mean: i50.Value}}
	}
	facts := rules.Facts{
		rules.TTFTP95: rules.Measured(2.2).WithBaseline(0.9).WithCount(4000, 3900),
	}
	res := rules.Evaluate(facts, rules.SLO{}, rules.DefaultThresholds)
	return &report.Report{
		SchemaVersion: report.SchemaVersion,
		Verdict:       res.Verdict,
		Windows:       report.Windows{Baseline: base, Incident: inc},
		Symptoms:      res.Symptoms[:1],
		Hypotheses:    res.Findings,
		Signals: report.Signals{Fleet: []report.Signal{
			hist("ttft", "s", q(0.5, 0.29, 0.25, 0.5, 3900), q(0.95, 0.9, 0.75, 1, 3900), q(0.5, 0.31, 0.25, 0.5, 4000), q(0.95, 2.2, 1, 2.5, 4000)),
			hist("prompt_tokens", "tokens", q(0.5, 850, 500, 1000, 3900), q(0.95, 2400, 2000, 5000, 3900), q(0.5, 870, 500, 1000, 4000), q(0.95, 6100, 5000, 10000, 4000)),
		}},
	}
}

// The before/after table of the article's section 10, as `whyslow
// compare` prints it.
func ExampleWriteCompareText() {
	rows := report.CompareTable(exampleReport())
	for _, r := range rows {
		fmt.Printf("%s p95 %v -> %v, moved %v\n", r.Signal, float64(r.BaselineP95.Value), float64(r.IncidentP95.Value), r.Moved)
	}
	_ = report.WriteCompareText(os.Stdout, rows)
	// Output:
	// ttft p95 0.9 -> 2.2, moved true
	// prompt_tokens p95 2400 -> 6100, moved true
	// Before and after: p50 and p95 per signal
	// ========================================
	// baseline 2026-03-14 09:30–10:00Z (30m) vs incident 2026-03-14 10:00–10:30Z (30m); quantiles of the histograms merged
	// across replicas, [lower–upper] is the bucket holding the quantile, n the observations in each window; change is
	// incident/baseline - 1; moved: p50 or p95 outside 0.83x–1.2x of the baseline, with >= 20 observations in each window
	//
	//   signal                  baseline p50           incident p50             baseline p95              incident p95
	//   -------------  ---------------------  ---------------------  -----------------------  ------------------------
	//   ttft             290ms [250ms–500ms]    310ms [250ms–500ms]         900ms [750ms–1s]            2.2s [1s–2.5s]
	//   prompt_tokens  850 tokens [500–1000]  870 tokens [500–1000]  2400 tokens [2000–5000]  6100 tokens [5000–10000]
	//
	//   signal         change p50  change p95  n baseline  n incident  moved
	//   -------------  ----------  ----------  ----------  ----------  --------
	//   ttft                +6.9%       +144%       3,900       4,000  MOVED up
	//   prompt_tokens      +2.35%       +154%       3,900       4,000  MOVED up
}

// A report prints its verdict first, then the windows and the symptoms
// (the first lines are shown here); String is the same text, for a
// notebook cell.
func ExampleReport_WriteText() {
	var b strings.Builder
	_ = exampleReport().WriteText(&b)
	lines := strings.Split(b.String(), "\n")
	fmt.Println(strings.Join(lines[:14], "\n"))
	// Output:
	// whyslow report: undetermined
	// ============================
	// verdict: undetermined: symptoms are present, and no hypothesis is supported
	//
	// Summary
	// -------
	//   - symptoms present: ttft
	//   - numbers (incident vs baseline window):
	//       - ttft_p95 2.2s vs baseline 900ms: 2.44x, severe (n=4,000 requests)
	//   - windows: baseline 09:30–10:00Z (240 scrapes), incident 10:00–10:30Z (240 scrapes) on 2026-03-14; given
	//   - evidence: 0 replicas, 0 sources
	//
	// Before and after: p50 and p95 per signal
	// ----------------------------------------
}
