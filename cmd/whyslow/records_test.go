package main

import (
	"cmp"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/alerts"
	"github.com/whyslow/whyslow/diagnose"
	"github.com/whyslow/whyslow/internal/fleetsim"
	"github.com/whyslow/whyslow/internal/fleetsim/simtsdb"
	"github.com/whyslow/whyslow/internal/promserver"
)

// backfillRecords writes the recording rules whyslow diagnose reads
// (changeRecords, as whyslow alerts writes them) for [start, end] with
// promtool from the Prometheus at url, and returns the directory of the
// blocks it wrote.
func backfillRecords(t testing.TB, url string, start, end time.Time) string {
	t.Helper()
	promtool := promserver.Binary(t, "promtool")
	rf, err := alerts.Generate(alerts.DefaultOptions)
	require.NoError(t, err)
	var keep []alerts.Rule
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if slices.Contains(recordNames(), r.Record) {
				keep = append(keep, r)
			}
		}
	}
	require.Len(t, keep, len(changeRecords))
	rf = alerts.RuleFile{Groups: []alerts.Group{{Name: "whyslow-change", Rules: keep}}}
	y, err := rf.YAML()
	require.NoError(t, err)
	dir := t.TempDir()
	file := filepath.Join(dir, "rules.yml")
	require.NoError(t, os.WriteFile(file, y, 0o644))
	out := filepath.Join(dir, "blocks")
	rfc := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	cmd := exec.Command(promtool, "tsdb", "create-blocks-from", "rules", "--start", rfc(start), "--end", rfc(end),
		"--url", url, "--output-dir", out, "--eval-interval", "30s", "-q", file)
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", b)
	return out
}

// TestDiagnoseByRecords runs "whyslow diagnose URL" over a long range of
// a real Prometheus holding a fleet's samples and the recording rules of
// whyslow alerts (backfilled by promtool), on a sweep of fleets: where the
// records show a change, only the time around it is surveyed, and the
// verdict, the status of every hypothesis, the change point and the
// windows are those of the survey of the whole range (--records=false);
// where they show none, the whole range is surveyed. Without the records
// the whole range is surveyed, and a note says why. The test shortens
// what "around" means (recordsAround) to fit a simulated fleet's hour,
// keeping it longer than Options.MaxWindow by more than the records'
// onset may lag the samples', as it is by default. Where WHYSLOW_MIMIR
// names a mimir binary, two fleets are also read through Mimir, with the
// same records' note, verdict, hypotheses and windows.
func TestDiagnoseByRecords(t *testing.T) {
	promserver.Binary(t, "prometheus") // skip before simulating
	promserver.Binary(t, "promtool")
	around := recordsAround
	t.Cleanup(func() { recordsAround = around })
	recordsAround = diagnose.DefaultMaxWindow + 15*time.Minute

	for _, tc := range []struct {
		scenario string
		change   bool // the records show a change
	}{
		{"kv-preemption", true},
		{"sustained-overload", true},
		{"burst", true},
		{"decode-pressure", true},
		{"long-prompts", true},
		{"outside-gpu", true},
		{"healthy", false},
		{"restart", false},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			spec, fleet := promserver.Fleet(t, tc.scenario)
			dir := filepath.Join(t.TempDir(), "tsdb")
			require.NoError(t, simtsdb.Write(fleet, dir, fleetsim.TSDBOptions{HeadSpan: -1}))
			bare := promserver.Prometheus(t, dir)
			start := fleet.Config.Start
			if start.IsZero() {
				start = fleetsim.DefaultStart
			}
			blocks := backfillRecords(t, bare, start, start.Add(2*time.Hour))
			ents, err := os.ReadDir(blocks)
			require.NoError(t, err)
			require.NotEmpty(t, ents)
			for _, e := range ents {
				require.NoError(t, os.CopyFS(filepath.Join(dir, e.Name()), os.DirFS(filepath.Join(blocks, e.Name()))))
			}
			recorded := promserver.Prometheus(t, dir)

			rng := start.UTC().Format(time.RFC3339) + "/2h"
			report := func(url string, flags ...string) (map[string]any, string) {
				args := append([]string{"diagnose", "--format", "json", "--range", rng}, flags...)
				code, out, errs := whyslow(t, "", append(args, url)...)
				require.Equal(t, exitOK, code, errs)
				var m map[string]any
				require.NoError(t, json.Unmarshal([]byte(out), &m))
				var records []string
				for _, n := range m["inputs"].(map[string]any)["notes"].([]any) {
					if strings.Contains(n.(string), ": records: ") {
						records = append(records, n.(string))
					}
				}
				require.LessOrEqual(t, len(records), 1, "%q", records)
				return m, strings.Join(records, "")
			}
			// hypotheses maps each hypothesis to its status (those of one
			// score may come in another order).
			hypotheses := func(m map[string]any) map[string]string {
				out := map[string]string{}
				for _, h := range m["hypotheses"].([]any) {
					h := h.(map[string]any)
					out[h["id"].(string)] = h["status"].(string)
				}
				return out
			}
			windows := func(m map[string]any) (out [2]any) {
				w := m["windows"].(map[string]any)
				for i, name := range []string{"baseline", "incident"} {
					x := w[name].(map[string]any)
					out[i] = [2]any{x["start"], x["end"]}
				}
				return out
			}

			whole, note := report(recorded, "--records=false")
			assert.Equal(t, spec.Expect, whole["verdict"])
			assert.Empty(t, note)

			got, note := report(recorded)
			if tc.change {
				assert.Regexp(t, `^http://127\.0\.0\.1:\d+: records: the change-point search over \S+ read the recording rules whyslow:ttft_p95, whyslow:tpot_p95, whyslow:itl_p95, whyslow:ttft_mean, whyslow:waiting_mean_raw \(avg_over_time per 1m interval\): a change at \S+ \(score [0-9.]+; [a-z0-9_, ]+ moved\); surveyed \S+ around it \(--records=false surveys the whole range\)$`, note)
			} else {
				assert.Regexp(t, `: records: the change-point search over \S+ read the recording rules .* and found no change; surveyed the whole range \S+$`, note)
			}
			assert.Equal(t, whole["verdict"], got["verdict"])
			assert.Equal(t, hypotheses(whole), hypotheses(got))
			assert.Equal(t, windows(whole), windows(got))
			if tc.scenario == "kv-preemption" {
				// --model: the records of that model are searched.
				model := cmp.Or(fleet.Config.ModelName, "meta-llama/Llama-3.1-8B-Instruct")
				one, oneNote := report(recorded, "--model", model)
				assert.Equal(t, note, oneNote)
				assert.Equal(t, windows(whole), windows(one))
			}

			if os.Getenv(promserver.MimirEnv) != "" && (tc.scenario == "kv-preemption" || tc.scenario == "healthy") {
				// The same blocks, records included, served by Mimir's
				// store-gateway and read by its own query engine.
				mimir := promserver.Mimir(t, dir, start, start.Add(2*time.Hour))
				fromMimir, mnote := report(mimir)
				assert.Equal(t, strings.SplitN(note, ": records: ", 2)[1], strings.SplitN(mnote, ": records: ", 2)[1], "the records' note through Mimir")
				assert.Equal(t, got["verdict"], fromMimir["verdict"])
				assert.Equal(t, hypotheses(got), hypotheses(fromMimir))
				assert.Equal(t, windows(got), windows(fromMimir))
			}

			// A server without the records: the whole range, and a note
			// that says why.
			plain, note := report(bare)
			assert.Regexp(t, `: records: the server holds none of the recording rules whyslow:ttft_p95, .* \(whyslow alerts writes them\); surveyed the whole range \S+$`, note)
			assert.Equal(t, whole["verdict"], plain["verdict"])
			assert.Equal(t, windows(whole), windows(plain))
		})
	}
}
