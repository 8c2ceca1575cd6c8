package diagnose

import "github.com/whyslow/whyslow/rules"

// FactIDForTest converts a string to a fact id for the external tests.
func FactIDForTest(s string) rules.FactID { return rules.FactID(s) }
