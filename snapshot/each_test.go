package snapshot_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/snapshot"
)

// Dump files and folders are read whole and handed over target by
// target: the targets of Read, in order, and the rest of its Evidence.
func TestReadEachDumps(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"vllm-0/2026-09-22T10-00-00Z.prom":      vllmDump(3, 0, [3]float64{1, 2, 2}),
		"vllm-0/2026-09-22T10-00-15Z.prom":      vllmDump(5, 1, [3]float64{1, 4, 5}),
		"vllm-0/dcgm-2026-09-22T10-00-15Z.prom": dcgmDump(90, 40),
		"vllm-1/2026-09-22T10-00-15Z.prom":      vllmDump(1, 0, [3]float64{0, 1, 1}),
		"vllm-1/2026-09-22T10-00-30Z.prom":      "garbage{",
		"vllm-2_20260922T100000Z.prom":          vllmDump(2, 0, [3]float64{0, 0, 0}),
	})
	for _, tc := range []struct {
		name  string
		paths []string
	}{
		{"folder", []string{root}},
		{"files", []string{filepath.Join(root, "vllm-0", "2026-09-22T10-00-00Z.prom"), filepath.Join(root, "vllm-2_20260922T100000Z.prom")}},
		{"folders", []string{filepath.Join(root, "vllm-0"), filepath.Join(root, "vllm-1")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := snapshot.Read(context.Background(), tc.paths, snapshot.Options{})
			require.NoError(t, err)
			var got []*snapshot.Target
			ev, err := snapshot.ReadEach(context.Background(), tc.paths, snapshot.Options{}, func(tg *snapshot.Target) error {
				got = append(got, tg)
				return nil
			})
			require.NoError(t, err)
			assert.Equal(t, want.Targets, got)
			assert.Nil(t, ev.Targets)
			assert.Equal(t, want.Sources, ev.Sources)
			assert.Equal(t, want.Problems, ev.Problems)
		})
	}
	t.Run("visit error", func(t *testing.T) {
		stop := errors.New("stop")
		n := 0
		ev, err := snapshot.ReadEach(context.Background(), []string{root}, snapshot.Options{}, func(*snapshot.Target) error { n++; return stop })
		require.ErrorIs(t, err, stop)
		assert.Nil(t, ev)
		assert.Equal(t, 1, n)
	})
	t.Run("errors", func(t *testing.T) {
		_, err := snapshot.ReadEach(context.Background(), nil, snapshot.Options{}, nil)
		require.ErrorIs(t, err, snapshot.ErrEmpty)
		_, err = snapshot.ReadEach(context.Background(), []string{root}, snapshot.Options{Format: "csv"}, nil)
		require.Error(t, err)
	})
}
