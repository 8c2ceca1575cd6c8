package catalog_test

import "flag"

// update rewrites the golden files under testdata/ instead of comparing
// with them: go test ./catalog/ -update.
var update = flag.Bool("update", false, "rewrite golden files in testdata/")
