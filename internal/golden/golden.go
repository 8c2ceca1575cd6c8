// Package golden compares test output with golden files under testdata,
// the way cmd/benchstat's tests do: go test -update rewrites the files,
// and a mismatch leaves the output beside the golden file as NAME.got.
// It is for tests only; no library package imports it.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// Update is the -update flag of every test binary that imports golden:
// rewrite the golden files instead of comparing with them.
var Update = flag.Bool("update", false, "rewrite the golden files under testdata/ instead of comparing with them")

// Check compares got with the golden file at path. Under -update it
// writes got there (creating the directory) and passes. On a mismatch it
// writes got to path+".got" and reports an error naming both files (a
// match removes it); a missing golden file is an error that says how to
// create it.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *Update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden file: %v (go test -update creates it)", err)
	}
	if string(want) != string(got) {
		_ = os.WriteFile(path+".got", got, 0o644)
		t.Errorf("output differs from %s (see %s.got; go test -update rewrites it if the change is intended)", path, path)
		return
	}
	_ = os.Remove(path + ".got") // from an earlier mismatch
}
