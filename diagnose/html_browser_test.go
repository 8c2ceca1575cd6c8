package diagnose_test

import (
	"bytes"
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/diagnose"
	"github.com/whyslow/whyslow/internal/fleetsim"
	"github.com/whyslow/whyslow/internal/reportfixture"
	"github.com/whyslow/whyslow/report"
	"github.com/whyslow/whyslow/report/html"
	"github.com/whyslow/whyslow/snapshot"
)

// chromium returns the path of a headless-capable Chromium. Without one
// the browser test skips locally and fails in CI (CI=true), where .ci/run
// installs Debian's chromium.
func chromium(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the browser test is in the full tier")
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no Chromium on PATH; .ci/run installs Debian's chromium (the browser test never skips in CI)")
	}
	t.Skip("no Chromium on PATH (apt-get install chromium); the test runs in CI")
	return ""
}

// browserReports are the reports the browser test lays out: the render
// fixture (an incident), the embedded sample (an incident with timelines
// over an hour), a single real dump (undetermined) and the fleetsim
// scenarios (scenarioReports).
func browserReports(t *testing.T) map[string]*report.Report {
	t.Helper()
	out := map[string]*report.Report{"fixture": reportfixture.Article()}
	for name, path := range map[string]string{
		"sample":   filepath.Join("..", "examples", "postmortem", "evidence", "long-prompts.om.gz"),
		"realdump": filepath.Join("..", "testdata", "realdata", "vllm", "lora-multitenancy-experiment-0.30.0.prom"),
	} {
		ev, err := snapshot.Read(context.Background(), []string{path}, snapshot.Options{})
		require.NoError(t, err)
		rep, err := diagnose.Diagnose(ev, diagnose.Options{})
		require.NoError(t, err)
		out[name] = rep
	}
	for name, rep := range browserScenarios(t) {
		out["scenario-"+name] = rep
	}
	// A report split by model (a group column), and two in full detail
	// (--verbose: counts beside the values).
	out["split"] = reportfixture.Split()
	out["fixture"+verboseSuffix] = out["fixture"]
	out["scenario-hot-replica"+verboseSuffix] = out["scenario-hot-replica"]
	return out
}

// verboseSuffix ends the name of a browser case rendered with
// html.Options.Verbose.
const verboseSuffix = "+verbose"

// browserScenarios diagnoses the fleetsim scenarios (under -short, those
// of shortScenarios), as many at once as there are processors.
func browserScenarios(t *testing.T) map[string]*report.Report {
	t.Helper()
	var mu sync.Mutex
	out := map[string]*report.Report{}
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))
	for _, spec := range fleetsim.Scenarios() {
		if testing.Short() && !shortScenarios[spec.Name] {
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			rep, err := scenarioDiagnosis(spec)
			if !assert.NoError(t, err, spec.Name) {
				return
			}
			mu.Lock()
			out[spec.Name] = rep
			mu.Unlock()
		})
	}
	wg.Wait()
	require.False(t, t.Failed(), "simulating the scenarios")
	return out
}

// tableBox is the layout of one table of the HTML report in the browser.
type tableBox struct {
	// Head is the table's header row, to name it in messages.
	Head string `json:"head"`
	// Width is the table's scroll width, Narrowest its width with every
	// cell wrapped where it may (min-content); Box and BoxScroll are its
	// container's client and scroll widths.
	Width     float64 `json:"width"`
	Narrowest float64 `json:"narrowest"`
	Box       float64 `json:"box"`
	BoxScroll float64 `json:"boxScroll"`
}

// tableBoxesJS measures every table of the page.
const tableBoxesJS = `Array.from(document.querySelectorAll('table')).map(function (t) {
	var c = t.parentElement;
	var box = {head: Array.from(t.querySelectorAll('thead th')).map(function (h) { return h.textContent; }).join(' | '),
		width: t.scrollWidth, box: c.clientWidth, boxScroll: c.scrollWidth};
	t.style.width = 'min-content';
	box.narrowest = t.scrollWidth;
	t.style.width = '';
	return box;
})`

// The HTML report, rendered headless at 1,400 px: the verdict box and the
// first timeline lie within the first 1,500 px, nothing is wider than the
// window and no table scrolls in its box (every table of every report:
// the fixture, the sample, a real dump, the fleetsim scenarios, a split
// report and two verbose ones), and
// the page fetches nothing from the network.
func TestHTMLInBrowser(t *testing.T) {
	exe := chromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.WindowSize(1400, 1000), chromedp.Flag("headless", true),
		chromedp.Flag("disable-gpu", true))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	dir := t.TempDir()
	reports := browserReports(t)
	for _, name := range slices.Sorted(maps.Keys(reports)) {
		rep := reports[name]
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			require.NoError(t, html.WriteOptions(&b, rep, html.Options{Verbose: strings.HasSuffix(name, verboseSuffix)}))
			path := filepath.Join(dir, name+".html")
			require.NoError(t, os.WriteFile(path, b.Bytes(), 0o644))

			ctx, cancel := chromedp.NewContext(actx)
			defer cancel()
			ctx, cancelT := context.WithTimeout(ctx, 60*time.Second)
			defer cancelT()
			var mu sync.Mutex
			var fetched []string
			require.NoError(t, chromedp.Listen(ctx, func(ev any) {
				if e, ok := ev.(*network.EventRequestWillBeSent); ok {
					if u := e.Request.URL; !strings.HasPrefix(u, "file://") && !strings.HasPrefix(u, "data:") {
						mu.Lock()
						fetched = append(fetched, u)
						mu.Unlock()
					}
				}
			}))
			require.NoError(t, chromedp.Do(ctx,
				chromedp.EmulateViewport(1400, 1000),
				chromedp.Navigate("file://"+path),
				chromedp.WaitReady("body"),
			))
			eval := func(js string) float64 {
				v, err := chromedp.Run(ctx, chromedp.Evaluate[float64](js))
				require.NoError(t, err, js)
				return v
			}
			verdictTop := eval(`document.querySelector('p.verdict').getBoundingClientRect().top + window.scrollY`)
			plotTop := eval(`(function(){var f=document.querySelector('figure.plot'); return f ? f.getBoundingClientRect().top + window.scrollY : -1})()`)
			scrollWidth := eval(`document.documentElement.scrollWidth`)
			tables, err := chromedp.Run(ctx, chromedp.Evaluate[[]tableBox](tableBoxesJS))
			require.NoError(t, err)
			widest := tableBox{}
			for _, tb := range tables {
				if tb.Narrowest > widest.Narrowest {
					widest = tb
				}
				assert.LessOrEqual(t, tb.Width, tb.Box, "the table (%s) fits its box", tb.Head)
				assert.LessOrEqual(t, tb.BoxScroll, tb.Box, "the table (%s) does not scroll", tb.Head)
			}
			t.Logf("%s: verdict at %.0f px, first timeline at %.0f px, scroll width %.0f px; %d tables; the widest needs %.0f px wrapped, is laid out at %.0f px in a %.0f px box (%s)",
				name, verdictTop, plotTop, scrollWidth, len(tables), widest.Narrowest, widest.Width, widest.Box, widest.Head)
			shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(80))
			require.NoError(t, err)
			assert.NotEmpty(t, shot, "screenshot")
			_ = os.WriteFile(filepath.Join(dir, name+".jpg"), shot, 0o644)
			if d := os.Getenv("WHYSLOW_SCREENSHOTS"); d != "" {
				_ = os.WriteFile(filepath.Join(d, name+".jpg"), shot, 0o644)
				_ = os.WriteFile(filepath.Join(d, name+".html"), b.Bytes(), 0o644)
			}
			assert.Less(t, verdictTop, 1500.0, "verdict box")
			if len(rep.Timelines) > 0 {
				assert.GreaterOrEqual(t, plotTop, 0.0, "a timeline is drawn")
				assert.Less(t, plotTop, 1500.0, "the first timeline is within the first 1,500 px")
			}
			assert.LessOrEqual(t, scrollWidth, 1400.0, "nothing wider than the window")
			// The replica the verdict names: one row of the per-replica
			// table, its tag visible.
			culprit := ""
			if c := rep.NamedCulprit(); c != nil && c.Kind == "replica" {
				culprit = c.Name
			}
			marked, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(function () {
	var rows = document.querySelectorAll('table.replicas tr.culprit');
	if (rows.length !== 1) { return rows.length ? 'several' : ''; }
	var tag = rows[0].querySelector('span.tag').getBoundingClientRect();
	return tag.width > 0 && tag.height > 0 ? rows[0].cells[0].textContent : 'hidden';
})()`))
			require.NoError(t, err)
			if culprit != "" {
				assert.Equal(t, culprit+" culprit", marked, "the culprit's row")
			} else {
				assert.Empty(t, marked, "no culprit, no row marked")
			}
			mu.Lock()
			assert.Empty(t, fetched, "the page requests nothing from the network")
			mu.Unlock()
		})
	}
}
