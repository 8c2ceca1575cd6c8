package rules

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Sentinels of an evaluation's warnings (Result.Warnings).
var (
	// ErrUnusedFact: a fact given is not used by any rule (an unknown id).
	ErrUnusedFact = errors.New("fact not used by any rule")
	// ErrNotEvaluable: a symptom could not be evaluated: no fact needed to
	// judge it was usable.
	ErrNotEvaluable = errors.New("symptom not evaluable")
)

// Sentinels of a fact's Missing: the kinds of reason a fact could not be
// measured for.
var (
	// ErrNoSource: the evidence holds no source for the fact: no such
	// metric, label, series or bucket.
	ErrNoSource = errors.New("no source in the evidence")
	// ErrTooLittle: the source is in the evidence, but the window holds
	// too little of it to measure: no observation, too few scrapes,
	// intervals or replicas.
	ErrTooLittle = errors.New("too little in the window")
)

// NoSource returns a reason of kind ErrNoSource, its text formatted as
// fmt.Sprintf does.
func NoSource(format string, args ...any) error {
	return Warning{ErrNoSource, fmt.Sprintf(format, args...)}
}

// TooLittle returns a reason of kind ErrTooLittle, its text formatted as
// fmt.Sprintf does.
func TooLittle(format string, args ...any) error {
	return Warning{ErrTooLittle, fmt.Sprintf(format, args...)}
}

// A Warning is a non-fatal problem: an error whose message is its text
// and whose Unwrap is its sentinel (an evaluation's ErrUnusedFact and
// ErrNotEvaluable, a missing fact's ErrNoSource and ErrTooLittle). It is
// a JSON string, its text.
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
