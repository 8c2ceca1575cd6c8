package rules

import (
	"math"
	"strconv"
	"time"

	"github.com/whyslow/whyslow/internal/textfmt"
)

// Unit is the unit of a fact's or a report value's numbers. Values are in
// base units: seconds, tokens, requests, ratios 0..1, rates per second.
type Unit string

// Units. The catalog names its signals' units in words ("seconds"); the
// report and the facts use these short forms, and Format reads both.
const (
	UnitNone            Unit = ""
	UnitSeconds         Unit = "s"
	UnitTokens          Unit = "tokens"
	UnitRequests        Unit = "requests"
	UnitRatio           Unit = "ratio"
	UnitCount           Unit = "count"
	UnitPerSecond       Unit = "1/s"
	UnitPerHour         Unit = "1/h"
	UnitRequestsPerSec  Unit = "req/s"
	UnitTokensPerSecond Unit = "tokens/s"
	UnitMultiple        Unit = "x"
)

// Format is whyslow's one formatter of a value with its unit: seconds as
// µs, ms, s or a duration (850µs, 42ms, 1.9s, 2m30s); tokens and requests
// with a k, M or G suffix from 100 000 on; ratios as percentages; rates
// per second; multiples with an x. NaN is "n/a", never zero; ±Inf is
// "+Inf" or "-Inf". Numbers are textfmt.Number's (internal/textfmt).
func (u Unit) Format(v float64) string { return u.format(v, false) }

// Prose is Format for running text: its numbers are textfmt.Prose's, and a
// multiple is textfmt.Multiple's.
func (u Unit) Prose(v float64) string { return u.format(v, true) }

// format is Format, or Prose when prose is set.
func (u Unit) format(v float64, prose bool) string {
	num := textfmt.Number
	if prose {
		num = textfmt.Prose
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return textfmt.Number(v)
	}
	switch u {
	case UnitSeconds, "seconds":
		return formatSeconds(v)
	case UnitTokens:
		return formatLarge(v, num) + " tokens"
	case UnitRequests, "req":
		return formatLarge(v, num) + " req"
	case UnitRatio:
		return num(100*v) + "%"
	case UnitRequestsPerSec, "requests/s":
		return num(v) + " req/s"
	case UnitTokensPerSecond:
		return num(v) + " tokens/s"
	case UnitPerSecond, "count/s", "/s":
		return num(v) + "/s"
	case UnitPerHour:
		return num(v) + "/h"
	case UnitMultiple:
		if prose {
			return textfmt.Multiple(v)
		}
		return num(v) + "x"
	case UnitNone, UnitCount, "r":
		return formatLarge(v, num)
	}
	return num(v) + " " + string(u)
}

// Rate is the unit of a per-second rate of a counter in unit u.
func (u Unit) Rate() Unit {
	switch u {
	case UnitRequests:
		return UnitRequestsPerSec
	case UnitTokens:
		return UnitTokensPerSecond
	}
	return "/s"
}

// formatSeconds formats a duration in seconds: 850µs, 42ms, 1.9s, 2m30s.
func formatSeconds(v float64) string {
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0s"
	case a < 1e-3:
		return textfmt.Number(v*1e6) + "µs"
	case a < 1:
		return textfmt.Number(v*1e3) + "ms"
	case a < 100:
		return textfmt.Number(v) + "s"
	}
	return time.Duration(v * float64(time.Second)).Round(time.Second).String()
}

// formatLarge formats a value with three significant digits and a k, M
// or G suffix from 100 000 on (13.3M), the numbers below 100 000 written
// by num.
func formatLarge(v float64, num func(float64) string) string {
	a := math.Abs(v)
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0) || a < 1e5:
		return num(v)
	case a < 1e6:
		return strconv.FormatFloat(v/1e3, 'g', 3, 64) + "k"
	case a < 1e9:
		return strconv.FormatFloat(v/1e6, 'g', 3, 64) + "M"
	}
	return strconv.FormatFloat(v/1e9, 'g', 3, 64) + "G"
}
