package snapshot_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/snapshot"
)

// realCapture is a real vLLM 0.30 /metrics scrape (one process).
const realCapture = "../testdata/realdata/vllm/lora-multitenancy-experiment-0.30.0.prom"

var reCounterSample = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*(?:_total|_bucket|_count|_sum)(?:\{[^}]*\})?) (\S+)$`)

// edited returns the capture with every counter and histogram sample
// multiplied by scale (cumulative buckets stay cumulative) and the
// process start time replaced by pst ("" keeps it; "-" drops it).
func edited(t *testing.T, scale float64, pst string) string {
	t.Helper()
	data, err := os.ReadFile(realCapture)
	require.NoError(t, err)
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "process_start_time_seconds ") {
			switch pst {
			case "-":
				continue
			case "":
			default:
				line = "process_start_time_seconds " + pst
			}
		} else if m := reCounterSample.FindStringSubmatch(line); m != nil {
			if v, err := strconv.ParseFloat(m[2], 64); err == nil {
				line = m[1] + " " + strconv.FormatFloat(v*scale, 'g', -1, 64)
			}
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// TestOneTargetAtTwoTimes: dumps whose names differ only by the time and
// an ordinal token are one target at two times when the same
// process_start_time_seconds and counters that do not fall confirm it;
// otherwise, and whenever the names differ by more (vllm-0, vllm-1: two
// pods with the same labels), they stay apart, with a warning when the
// names alone suggest one target.
func TestOneTargetAtTwoTimes(t *testing.T) {
	const (
		t0 = "SERVER_t0_2026-05-28T12-53-45_extracted.prom"
		t1 = "SERVER_t1_2026-05-28T13-00-26_extracted.prom"
	)
	tests := []struct {
		name         string
		files        map[string]string
		targets      []string
		scrapes      int // of the first target
		info, warned bool
		why          string
	}{
		{"same process, counters grow",
			map[string]string{t0: edited(t, 1, ""), t1: edited(t, 1.5, "")},
			[]string{"SERVER"}, 2, true, false, ""},
		{"before and after, names otherwise equal",
			map[string]string{"vllm-pod_before_2026-05-28T12-53-45.prom": edited(t, 1, ""), "vllm-pod_after_2026-05-28T13-00-26.prom": edited(t, 1.5, "")},
			[]string{"vllm-pod"}, 2, true, false, ""},
		{"two pods with the same labels and process start stay apart",
			map[string]string{"vllm-0_2026-05-28T12-53-45.prom": edited(t, 1, ""), "vllm-1_2026-05-28T13-00-26.prom": edited(t, 1.5, "")},
			[]string{"vllm-0", "vllm-1"}, 1, false, false, ""},
		{"process start differs",
			map[string]string{t0: edited(t, 1, ""), t1: edited(t, 1.5, "1.79061800e+09")},
			[]string{"SERVER_t0", "SERVER_t1"}, 1, false, true, "process_start_time_seconds differs"},
		{"counters fall under one process start",
			map[string]string{t0: edited(t, 1, ""), t1: edited(t, 0.5, "")},
			[]string{"SERVER_t0", "SERVER_t1"}, 1, false, true, "falls from SERVER_t0 to SERVER_t1"},
		{"no process start time",
			map[string]string{t0: edited(t, 1, "-"), t1: edited(t, 1.5, "-")},
			[]string{"SERVER_t0", "SERVER_t1"}, 1, false, true, "no single process_start_time_seconds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, text := range tt.files {
				require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
			}
			ev, err := snapshot.Read(context.Background(), []string{dir}, snapshot.Options{})
			require.NoError(t, err)
			var names []string
			for _, tg := range ev.Targets {
				names = append(names, tg.Name)
			}
			require.Equal(t, tt.targets, names)
			assert.Len(t, ev.Targets[0].Scrapes, tt.scrapes)
			var info, warned *snapshot.Problem
			for i, p := range ev.Problems {
				assert.False(t, errors.Is(p, snapshot.ErrInconsistent), "no counter read as falling: %v", p)
				if errors.Is(p, snapshot.ErrOneTarget) {
					switch p.Severity {
					case snapshot.SeverityInfo:
						info = &ev.Problems[i]
					case snapshot.SeverityWarning:
						warned = &ev.Problems[i]
					}
				}
			}
			assert.Equal(t, tt.info, info != nil, "%v", ev.Problems)
			assert.Equal(t, tt.warned, warned != nil, "%v", ev.Problems)
			if warned != nil {
				assert.Contains(t, warned.Error(), tt.why)
				assert.Contains(t, warned.Error(), "DIR/SERVER/")
			}
			if tt.info {
				// The counters of the joined target grew by half between the scrapes.
				f := ev.Targets[0].Family("vllm:request_success_total")
				require.NotNil(t, f)
				for _, s := range f.Series {
					require.Len(t, s.V, 2)
					assert.InDelta(t, 1.5*s.V[0], s.V[1], 1e-9)
				}
			}
		})
	}
}

// TestOneTargetFolderNamed: the workaround the warning gives: the files of
// one target in a folder named after it are one target, whatever their
// contents say.
func TestOneTargetFolderNamed(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "SERVER")
	require.NoError(t, os.Mkdir(sub, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(sub, "SERVER_t0_2026-05-28T12-53-45_extracted.prom"), []byte(edited(t, 1, "-")), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(sub, "SERVER_t1_2026-05-28T13-00-26_extracted.prom"), []byte(edited(t, 1.5, "-")), 0o644))
	ev, err := snapshot.Read(context.Background(), []string{dir}, snapshot.Options{})
	require.NoError(t, err)
	require.Len(t, ev.Targets, 1)
	assert.Equal(t, "SERVER", ev.Targets[0].Name)
	assert.Len(t, ev.Targets[0].Scrapes, 2)
}
