package diagnose_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/diagnose"
	"github.com/whyslow/whyslow/report/html"
	"github.com/whyslow/whyslow/snapshot"
)

// chromium returns the path of a headless-capable Chromium. Without one
// the browser test skips locally and fails in CI (CI=true), where .ci/run
// installs Debian's chromium.
func chromium(t *testing.T) string {
	t.Helper()
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

// browserReports are the three reports the browser test lays out: the
// render fixture (an incident), the embedded sample (an incident with
// timelines over an hour) and a single real dump (undetermined).
func browserReports(t *testing.T) map[string]*diagnose.Report {
	t.Helper()
	out := map[string]*diagnose.Report{"fixture": renderReport()}
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
	return out
}

// The HTML report, rendered headless at 1,400 px: the verdict box and the
// first timeline lie within the first 1,500 px, nothing is wider than the
// window (wide tables scroll inside their box), and the page fetches
// nothing from the network (issue 14).
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
	for name, rep := range browserReports(t) {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			require.NoError(t, html.Write(&b, rep))
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
			t.Logf("verdict at %.0f px, first timeline at %.0f px, scroll width %.0f px", verdictTop, plotTop, scrollWidth)
			shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(80))
			require.NoError(t, err)
			assert.NotEmpty(t, shot, "screenshot")
			_ = os.WriteFile(filepath.Join(dir, name+".jpg"), shot, 0o644)
			if d := os.Getenv("WHYSLOW_SCREENSHOTS"); d != "" {
				_ = os.WriteFile(filepath.Join(d, name+".jpg"), shot, 0o644)
			}
			assert.Less(t, verdictTop, 1500.0, "verdict box")
			if len(rep.Timelines) > 0 {
				assert.GreaterOrEqual(t, plotTop, 0.0, "a timeline is drawn")
				assert.Less(t, plotTop, 1500.0, "the first timeline is within the first 1,500 px")
			}
			assert.LessOrEqual(t, scrollWidth, 1400.0, "nothing wider than the window")
			mu.Lock()
			assert.Empty(t, fetched, "the page requests nothing from the network")
			mu.Unlock()
		})
	}
}
