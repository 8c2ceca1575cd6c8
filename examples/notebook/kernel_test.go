package notebook_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// kernelScript is the script that builds a real gophernotes kernel with
// whyslow compiled in and executes the notebook (../shared beside the
// checkout, as CI lays it out); WHYSLOW_GOPHERNOTES names another.
func kernelScript() string {
	if p := os.Getenv("WHYSLOW_GOPHERNOTES"); p != "" {
		return p
	}
	return filepath.Join("..", "..", "..", "shared", "tools", "gophernotes", "build-kernel.sh")
}

// TestNotebookKernel executes the notebook in a real gophernotes kernel
// and checks that every code cell prints its stored output and that no
// cell fails. It needs the script (kernelScript) and Debian's
// jupyter-nbconvert, python3-nbclient and python3-ipykernel: under
// CI=true it fails without them, elsewhere it skips, as it does under
// -short (the kernel takes a minute or two to build).
func TestNotebookKernel(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Jupyter kernel")
	}
	need := func(ok bool, what string) {
		t.Helper()
		if ok {
			return
		}
		if os.Getenv("CI") == "true" {
			t.Fatalf("cannot run the notebook in a real kernel: %s", what)
		}
		t.Skipf("cannot run the notebook in a real kernel: %s", what)
	}
	script, err := filepath.Abs(kernelScript())
	require.NoError(t, err)
	_, err = os.Stat(script)
	need(err == nil, "no "+script+" (set WHYSLOW_GOPHERNOTES)")
	_, err = os.Stat("/usr/bin/jupyter")
	need(err == nil, "no /usr/bin/jupyter (apt-get install jupyter-nbconvert python3-nbclient python3-ipykernel)")

	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	work := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", script, root, work)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)

	raw, err := os.ReadFile(filepath.Join(work, "whyslow.executed.ipynb"))
	require.NoError(t, err, "the script did not execute the notebook:\n%s", out)
	executed, err := readNotebook(raw)
	require.NoError(t, err)
	stored, err := os.ReadFile(notebookFile)
	require.NoError(t, err)
	want, err := readNotebook(stored)
	require.NoError(t, err)

	got, cells := executed.codeCells(), want.codeCells()
	require.Len(t, got, len(cells))
	for i, c := range got {
		for _, o := range c.outputs() {
			if o["output_type"] == "error" {
				t.Errorf("code cell %d failed in the kernel: %v: %v", i+1, o["ename"], o["evalue"])
			}
		}
		gs, gr := c.storedOutput()
		gs = dropImportNotes(gs)
		ws, wr := cells[i].storedOutput()
		assert.Equal(t, ws, gs, "code cell %d: printed output in the kernel", i+1)
		assert.Equal(t, strings.TrimRight(wr, "\n"), strings.TrimRight(gr, "\n"), "code cell %d: value in the kernel", i+1)
	}
}

// outputs returns the outputs recorded for c.
func (c *codeCell) outputs() []map[string]any {
	var out []map[string]any
	list, _ := c.m["outputs"].([]any)
	for _, o := range list {
		if m, ok := o.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// dropImportNotes removes gomacro's notes on the generic declarations it
// skips when a cell imports a package ("// warning: skipping import of
// func sync.OnceValue[T any]...: importing generic functions or types is
// not supported yet"): the notebook calls none of them.
func dropImportNotes(s string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(s, "\n") {
		if !strings.HasPrefix(line, "// warning: skipping import of ") {
			b.WriteString(line)
		}
	}
	return b.String()
}
