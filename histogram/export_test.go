package histogram

// SameFloat is sameFloat, the equality of the oracle tests, for the
// external test package.
var SameFloat = sameFloat
