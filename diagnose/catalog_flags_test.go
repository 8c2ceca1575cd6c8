package diagnose_test

import "github.com/whyslow/whyslow/internal/golden"

// update rewrites the golden files under testdata/ instead of comparing
// with them: go test ./diagnose/ -update. It is shared by every golden test
// of the package's external tests.
var update = golden.Update
