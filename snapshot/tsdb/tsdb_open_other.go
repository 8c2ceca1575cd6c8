//go:build !unix

package tsdb

// Flags of openRegular: none where the platform has no O_NONBLOCK or
// O_NOFOLLOW (checkBlockFiles still refuses what is not a regular file).
const (
	oNonBlock = 0
	oNoFollow = 0
)
