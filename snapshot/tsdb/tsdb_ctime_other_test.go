//go:build !linux

package tsdb

import "io/fs"

// tsdbCtime is 0 where the platform gives no portable change time.
func tsdbCtime(fs.FileInfo) int64 { return 0 }
