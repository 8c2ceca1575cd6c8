package golden

import (
	"os"
	"path/filepath"
	"testing"
)

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true }

func TestCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "x.golden")
	r := &recorder{TB: t}
	Check(r, path, []byte("a"))
	if !r.failed {
		t.Fatal("a missing golden file passed")
	}
	*Update = true
	r = &recorder{TB: t}
	Check(r, path, []byte("a"))
	*Update = false
	if r.failed {
		t.Fatal("-update failed")
	}
	r = &recorder{TB: t}
	Check(r, path, []byte("a"))
	if r.failed {
		t.Fatal("the same output failed")
	}
	r = &recorder{TB: t}
	Check(r, path, []byte("b"))
	if !r.failed {
		t.Fatal("other output passed")
	}
	if got, err := os.ReadFile(path + ".got"); err != nil || string(got) != "b" {
		t.Fatalf(".got = %q, %v", got, err)
	}
}
