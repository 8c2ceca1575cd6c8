package histogram

// SameFloat is sameFloat, the equality of the oracle tests, for the
// external test package.
var SameFloat = sameFloat

// ValidFast is Validate's fast path, and ValidateLong its long way, for
// the external test package.
func (h Histogram) ValidFast() bool     { return h.valid() }
func (h Histogram) ValidateLong() error { return h.validate() }
