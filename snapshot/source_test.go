package snapshot

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// withSources runs f with only the given sources registered.
func withSources(t *testing.T, list []Source, f func()) {
	t.Helper()
	sources.Lock()
	saved := sources.list
	sources.list = nil
	sources.Unlock()
	defer func() {
		sources.Lock()
		sources.list = saved
		sources.Unlock()
	}()
	for _, s := range list {
		RegisterSource(s)
	}
	f()
}

// A TSDB directory read by a program without the TSDB reader is a problem
// that names the import, not an empty dump folder.
func TestTSDBWithoutReader(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "wal"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "wal", "00000000"), []byte("x"), 0o644))
	withSources(t, nil, func() {
		ev, err := Read(context.Background(), []string{dir}, Options{})
		require.Error(t, err)
		assert.ErrorIs(t, err, ErrNoReader)
		assert.Contains(t, err.Error(), `import _ "github.com/whyslow/whyslow/snapshot/tsdb"`)
		require.NotNil(t, ev)
		require.Len(t, ev.Problems, 1)
		assert.Equal(t, dir, ev.Problems[0].File)
	})
}

// A registered source reads the paths it matches, before Read stats them:
// a URL works as a directory does.
func TestRegisterSource(t *testing.T) {
	var got []string
	fake := Source{
		Name:  "fake",
		Match: func(p string) bool { return strings.HasPrefix(p, "fake://") },
		Read: func(_ context.Context, p string, opts Options) (*Evidence, error) {
			got = append(got, p)
			if strings.HasSuffix(p, "/down") {
				return nil, errors.New("connection refused")
			}
			return ParseDump([]byte("vllm:num_requests_waiting 3\n"), "pod-a", opts)
		},
	}
	withSources(t, []Source{fake}, func() {
		ev, err := Read(context.Background(), []string{"fake://prom:9090", "fake://prom:9090/down"}, Options{})
		require.NoError(t, err)
		assert.Equal(t, []string{"fake://prom:9090", "fake://prom:9090/down"}, got)
		require.Len(t, ev.Targets, 1)
		f := ev.Targets[0].Family("vllm:num_requests_waiting")
		require.NotNil(t, f, "the source's evidence is merged")
		assert.True(t, ev.Partial(), "the failed source is a problem, the rest is read")
		assert.Contains(t, ev.Sources, "fake://prom:9090/down")

		assert.PanicsWithValue(t, "snapshot: RegisterSource: source fake registered twice", func() { RegisterSource(fake) })
		assert.Panics(t, func() { RegisterSource(Source{Name: "no funcs"}) })
	})
}
