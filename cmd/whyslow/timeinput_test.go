package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/internal/fleetsim"
	"github.com/whyslow/whyslow/internal/heappeak"
)

// verdictOf runs diagnose --format json on paths and returns the verdict
// with every hypothesis status, and the warnings.
func verdictOf(t *testing.T, paths ...string) (verdict string, warnings []string) {
	t.Helper()
	code, out, errOut := whyslow(t, "", append([]string{"diagnose", "--format", "json"}, paths...)...)
	require.Equal(t, exitOK, code, errOut)
	var rep struct {
		Verdict    string   `json:"verdict"`
		Warnings   []string `json:"warnings"`
		Hypotheses []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"hypotheses"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	var sb strings.Builder
	sb.WriteString(rep.Verdict)
	for _, h := range rep.Hypotheses {
		fmt.Fprintf(&sb, " %s=%s", h.ID, h.Status)
	}
	return sb.String(), rep.Warnings
}

// Files dated a year and a month away, and one whose sample timestamps
// are seconds, among a fleet's dumps: diagnose stays quick and small,
// gives the verdict it gives without them, and names them. A +Inf in a
// gauge is a warning naming file and line, and changes no hypothesis.
func TestDiagnoseWithTimeOutliersAndInf(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates a fleet")
	}
	cfg := fleetsim.Scenario("sustained-overload")
	fleet, err := fleetsim.Run(cfg)
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, fleet.WriteDumps(dir, fleetsim.DumpOptions{}))
	clean, _ := verdictOf(t, dir)

	pods, err := filepath.Glob(filepath.Join(dir, "*"))
	require.NoError(t, err)
	sort.Strings(pods)
	pod := pods[0]
	dumps, err := filepath.Glob(filepath.Join(pod, "2*.prom"))
	require.NoError(t, err)
	sort.Strings(dumps)
	last, err := os.ReadFile(dumps[len(dumps)-1])
	require.NoError(t, err)
	t0, err := time.Parse("2006-01-02T15-04-05Z.prom", filepath.Base(dumps[0]))
	require.NoError(t, err)

	odd := t.TempDir()
	year := filepath.Join(odd, filepath.Base(pod), t0.AddDate(1, 0, 0).Format("2006-01-02T15-04-05Z.prom"))
	month := filepath.Join(odd, filepath.Base(pod), t0.AddDate(0, 1, 0).Format("2006-01-02T15-04-05Z.prom"))
	secs := filepath.Join(odd, filepath.Base(pod), "federate.txt")
	require.NoError(t, os.MkdirAll(filepath.Dir(year), 0o755))
	require.NoError(t, os.WriteFile(year, last, 0o644))
	require.NoError(t, os.WriteFile(month, last, 0o644))
	require.NoError(t, os.WriteFile(secs, []byte(fmt.Sprintf("vllm:num_requests_waiting{pod=%q} 3 %d\n", filepath.Base(pod), t0.Add(time.Minute).Unix())), 0o644))

	stop := heappeak.Start(time.Millisecond)
	start := time.Now()
	got, warnings := verdictOf(t, dir, odd)
	took := time.Since(start)
	peak := stop().Above()
	t.Logf("diagnose with outliers: %v, peak heap %.1f MiB", took, float64(peak)/(1<<20))
	assert.Less(t, peak, uint64(200<<20))
	assert.Equal(t, clean, got, "the same verdict as without the outliers")
	all := strings.Join(warnings, "\n")
	for _, p := range []string{year, month, secs} {
		assert.Contains(t, all, p)
	}
	assert.Less(t, took, 10*time.Second, "no timeline for a year")

	// +Inf in one waiting gauge.
	inf := t.TempDir()
	require.NoError(t, os.CopyFS(inf, os.DirFS(dir)))
	victim := filepath.Join(inf, filepath.Base(pod), filepath.Base(dumps[len(dumps)/2]))
	data, err := os.ReadFile(victim)
	require.NoError(t, err)
	s := string(data)
	i := strings.Index(s, "\nvllm:num_requests_waiting{") + 1
	require.Greater(t, i, 0)
	j := i + strings.IndexByte(s[i:], '\n')
	k := strings.LastIndexByte(s[i:j], ' ') + i
	require.NoError(t, os.WriteFile(victim, []byte(s[:k+1]+"+Inf"+s[j:]), 0o644))
	got, warnings = verdictOf(t, inf)
	assert.Equal(t, clean, got, "the same verdict and hypothesis statuses as the clean fleet")
	line := strings.Count(s[:i], "\n") + 1
	assert.Contains(t, strings.Join(warnings, "\n"), fmt.Sprintf("%s:%d: impossible sample value", victim, line))
}

// A window that cannot be parsed is answered with the accepted forms,
// never with Go's layout string (issue 14).
func TestParseWindowErrorsShowAcceptedForms(t *testing.T) {
	for _, s := range []string{"10:30/11:00", "2026-09-22T10:30:00Z/11:00", "2026-09-22 10:30/30m"} {
		_, err := parseWindow(s)
		require.Error(t, err, s)
		assert.Contains(t, err.Error(), "accepted forms: 2026-09-22T10:30:00Z/2026-09-22T11:00:00Z", s)
		assert.NotContains(t, err.Error(), "2006-01-02", s)
	}
	w, err := parseWindow("2026-09-22T10:30:00Z/30m")
	require.NoError(t, err)
	assert.Equal(t, 30*time.Minute, w.End.Sub(w.Start))
}

// A capture with no vLLM target (SGLang's) gets a short message and exit
// status 1, not a report of nothing but "cannot evaluate" (issue 14).
func TestDiagnoseNoVLLMTarget(t *testing.T) {
	path := "../../testdata/realdata/vllm/sglang-production-metrics-docs-unknown.prom"
	for _, cmd := range []string{"diagnose", "compare"} {
		code, out, errOut := whyslow(t, "", cmd, path)
		assert.Equal(t, exitInput, code, cmd)
		assert.Empty(t, out, cmd)
		assert.Contains(t, errOut, "whyslow "+cmd+": no vLLM target in "+path+": 1 target read (sglang-production-metrics-docs-unknown), none with a vllm: metric", cmd)
		assert.LessOrEqual(t, strings.Count(errOut, "\n"), 3, "short: %s", errOut)
	}
}
