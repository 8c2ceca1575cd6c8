package rules

import (
	"encoding/json"
	"errors"
)

// Sentinels of an evaluation's warnings (Result.Warnings).
var (
	// ErrUnusedFact: a fact given is not used by any rule (an unknown id).
	ErrUnusedFact = errors.New("fact not used by any rule")
	// ErrNotEvaluable: a symptom could not be evaluated: no fact needed to
	// judge it was usable.
	ErrNotEvaluable = errors.New("symptom not evaluable")
)

// A Warning is a non-fatal problem of an evaluation: an error whose
// message is its text and whose Unwrap is its sentinel (ErrUnusedFact,
// ErrNotEvaluable). It is a JSON string, its text.
type Warning struct {
	Err  error  // the sentinel
	Text string // the warning as printed
}

func (w Warning) Error() string { return w.Text }

// Unwrap returns the warning's sentinel.
func (w Warning) Unwrap() error { return w.Err }

// MarshalJSON writes the warning's text.
func (w Warning) MarshalJSON() ([]byte, error) { return json.Marshal(w.Text) }

// UnmarshalJSON reads a warning's text; its Err is unknown (nil).
func (w *Warning) UnmarshalJSON(b []byte) error {
	*w = Warning{}
	return json.Unmarshal(b, &w.Text)
}
