//go:build !unix

package snapshot_test

import "time"

// cpuTime is unknown here: the MB/cpu-s metric is not reported.
func cpuTime() time.Duration { return 0 }
