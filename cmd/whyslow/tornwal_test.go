package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/internal/fleetsim"
	"github.com/whyslow/whyslow/internal/fleetsim/simtsdb"
)

// smallFleet runs scenario on three of its eight pods (their share of the
// traffic), scraped every scrape (the scenario's interval when zero), and
// returns it with the scenario's expected verdict. It skips under -short.
func smallFleet(t *testing.T, scenario string, scrape time.Duration) (*fleetsim.Fleet, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("simulates a fleet")
	}
	spec, ok := fleetsim.LookupScenario(scenario)
	require.True(t, ok)
	cfg := spec.Config
	cfg.NumPods = 3
	for i := range cfg.Workload.Phases {
		cfg.Workload.Phases[i].Rate *= 3.0 / 8
	}
	if scrape > 0 {
		cfg.ScrapeInterval = scrape
	}
	fleet, err := fleetsim.Run(cfg)
	require.NoError(t, err)
	return fleet, spec.Expect
}

// A fleetsim TSDB whose head (the last 40 minutes) is in the WAL, and a
// copy of it whose last WAL segment is cut inside its last record, as a
// crash leaves it: a diagnosis whose windows meet the lost records is
// partial; one whose windows end before them is not.
func TestDiagnoseTornWALPartial(t *testing.T) {
	fleet, _ := smallFleet(t, "kv-preemption", 30*time.Second)
	intact := filepath.Join(t.TempDir(), "tsdb")
	require.NoError(t, simtsdb.Write(fleet, intact, fleetsim.TSDBOptions{HeadSpan: 40 * time.Minute}))

	// Never change the fixture: tear a copy.
	torn := filepath.Join(t.TempDir(), "torn")
	require.NoError(t, os.CopyFS(torn, os.DirFS(intact)))
	segs, err := filepath.Glob(filepath.Join(torn, "wal", "0*"))
	require.NoError(t, err)
	require.NotEmpty(t, segs)
	// The last segment that holds records (a closed WAL may end with an
	// empty one), cut 16 bytes before the end of its records.
	var seg string
	end := 0
	for i := len(segs) - 1; i >= 0 && seg == ""; i-- {
		b, err := os.ReadFile(segs[i])
		require.NoError(t, err)
		end = len(b)
		for end > 0 && b[end-1] == 0 { // page padding
			end--
		}
		if end > 16 {
			seg = segs[i]
		}
	}
	require.NotEmpty(t, seg)
	require.NoError(t, os.Truncate(seg, int64(end-16)))

	type rep struct {
		Verdict string `json:"verdict"`
		Inputs  struct {
			Partial  bool     `json:"partial"`
			Problems []string `json:"problems"`
		} `json:"inputs"`
		Summary string `json:"summary"`
	}
	diag := func(path string, args ...string) rep {
		t.Helper()
		code, out, errs := whyslow(t, "", append(append([]string{"diagnose", "--format", "json"}, args...), path)...)
		require.Equal(t, exitOK, code, errs)
		var r rep
		require.NoError(t, json.Unmarshal([]byte(out), &r))
		return r
	}

	ref := diag(intact)
	assert.False(t, ref.Inputs.Partial, "%v", ref.Inputs.Problems)

	got := diag(torn)
	assert.True(t, got.Inputs.Partial, "the incident window meets the torn records: %v", got.Inputs.Problems)
	assert.True(t, strings.HasPrefix(got.Summary, "PARTIAL EVIDENCE"), got.Summary)
	var lost string
	for _, p := range got.Inputs.Problems {
		if strings.Contains(p, "may be missing") {
			lost = p
		}
	}
	require.NotEmpty(t, lost, "%v", got.Inputs.Problems)
	assert.Contains(t, lost, "torn or corrupt WAL record")
	assert.NotContains(t, lost, "later segments dropped", "the empty newest segment loses nothing")

	// --strict fails on a partial report, though the read itself
	// succeeded: the torn records are lost from the incident window.
	code, out, errs := whyslow(t, "", "diagnose", "--strict", "--format", "json", torn)
	assert.Equal(t, exitInput, code, errs)
	assert.Empty(t, out)
	assert.Contains(t, errs, "partial result (--strict): samples of the windows may be missing")
	assert.Contains(t, errs, "torn or corrupt WAL record")
	code, _, errs = whyslow(t, "", "diagnose", "--strict", intact)
	assert.Equal(t, exitOK, code, errs)

	// Windows before the head (the last 40 minutes), long before the
	// tear, read nothing it lost.
	start := fleet.Config.Start
	if start.IsZero() {
		start = fleetsim.DefaultStart
	}
	rfc := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	early := diag(torn, "--baseline", rfc(start)+"/"+rfc(start.Add(10*time.Minute)),
		"--incident", rfc(start.Add(10*time.Minute))+"/"+rfc(start.Add(20*time.Minute)))
	assert.False(t, early.Inputs.Partial, "%v", early.Inputs.Problems)

	// quantile says so in its warnings, for a window over the tear only.
	quantileWarnings := func(window string) []string {
		t.Helper()
		code, out, errs := whyslow(t, "", "quantile", "--metric", "vllm:time_to_first_token_seconds", "--window", window, "--format", "json", torn)
		require.Equal(t, exitOK, code, errs)
		var q struct {
			Warnings []string `json:"warnings"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &q))
		var partial []string
		for _, w := range q.Warnings {
			if strings.HasPrefix(w, "partial: ") {
				partial = append(partial, w)
			}
		}
		return partial
	}
	last := start.Add(time.Hour) // the scenario runs for fleetsim's default hour
	assert.Len(t, quantileWarnings(rfc(last.Add(-20*time.Minute))+"/"+rfc(last)), 1)
	code, _, errs = whyslow(t, "", "quantile", "--strict", "--metric", "ttft", "--window", rfc(last.Add(-20*time.Minute))+"/"+rfc(last), torn)
	assert.Equal(t, exitInput, code, errs)
	assert.Contains(t, errs, "partial result (--strict): samples of the window may be missing")
	assert.Empty(t, quantileWarnings(rfc(start)+"/"+rfc(start.Add(20*time.Minute))))
}
