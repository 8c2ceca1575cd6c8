package catalog

import (
	"fmt"
	"strconv"
	"strings"
)

// Version is a vLLM release number, major.minor.patch. The zero Version
// (0.0.0, which vLLM never released) stands for "no bound" in a
// VersionRange.
type Version struct {
	Major, Minor, Patch int
}

// ParseVersion parses "0.10", "0.9.2" or "v0.11.0". A missing patch is 0.
func ParseVersion(s string) (Version, error) {
	t := strings.TrimPrefix(strings.TrimSpace(s), "v")
	parts := strings.Split(t, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return Version{}, fmt.Errorf("catalog: version %q: want MAJOR.MINOR[.PATCH]", s)
	}
	var n [3]int
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 {
			return Version{}, fmt.Errorf("catalog: version %q: bad number %q", s, p)
		}
		n[i] = v
	}
	return Version{n[0], n[1], n[2]}, nil
}

// mustVersion is ParseVersion for the literals of the name history; it panics on a
// malformed literal, which is a programming error caught by the tests.
func mustVersion(s string) Version {
	ver, err := ParseVersion(s)
	if err != nil {
		panic(err)
	}
	return ver
}

// IsZero reports whether v is the zero Version ("no bound").
func (v Version) IsZero() bool { return v == Version{} }

// Compare returns -1, 0 or +1 as v is lower than, equal to or higher than w.
func (v Version) Compare(w Version) int {
	switch {
	case v.Major != w.Major:
		return cmpInt(v.Major, w.Major)
	case v.Minor != w.Minor:
		return cmpInt(v.Minor, w.Minor)
	}
	return cmpInt(v.Patch, w.Patch)
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// String formats v as "0.9.2".
func (v Version) String() string {
	return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
}

// nextMinor returns the first release of the minor series after v's:
// 0.10.3 -> 0.11.0.
func (v Version) nextMinor() Version { return Version{v.Major, v.Minor + 1, 0} }

// Engine is the vLLM engine generation whose metric code produced a
// capture. vLLM's V0 engine (vllm/engine/metrics.py) was the default up to
// 0.7.x and could still be selected up to 0.10.x; V1
// (vllm/v1/metrics/loggers.py) is the default from 0.8.0. They expose
// different names, labels and buckets.
type Engine int

const (
	// EngineUnknown: the evidence does not tell.
	EngineUnknown Engine = iota
	// EngineV0 is vLLM's original engine.
	EngineV0
	// EngineV1 is the rewritten engine, default from 0.8.
	EngineV1
	// EngineNotVLLM: the target exposes no vllm: metric at all (another
	// server such as SGLang, or an exporter only).
	EngineNotVLLM
)

var engineNames = [...]string{EngineUnknown: "unknown", EngineV0: "V0", EngineV1: "V1", EngineNotVLLM: "not vLLM"}

// String returns "unknown", "V0", "V1" or "not vLLM".
func (e Engine) String() string { return enumString(e, "Engine", engineNames[:]) }

// VersionRange is a half-open range [Min, Max) of vLLM versions, optionally
// restricted to one engine generation. A zero Min means no lower bound and
// a zero Max no upper bound, so the zero VersionRange is "any version of
// any engine". Max is exclusive so that "up to 0.10.x" is Max 0.11.0.
//
// A range with Max <= Min is empty: no version matches (see Empty); so is a
// range whose Engine is EngineNotVLLM.
type VersionRange struct {
	// Engine restricts the range to one generation; EngineUnknown means
	// either.
	Engine Engine
	// Min is the first version in the range; zero for no lower bound.
	Min Version
	// Max is the first version after the range; zero for no upper bound.
	Max Version
}

// Since returns the range of versions from min on, of the given engine.
func Since(e Engine, min Version) VersionRange { return VersionRange{Engine: e, Min: min} }

// Between returns the range from the release first to the last release of
// the minor series of last, inclusive: Between(EngineV1, 0.8.0, 0.10.0) is
// 0.8.0 up to every 0.10.x.
func Between(e Engine, first, last Version) VersionRange {
	return VersionRange{Engine: e, Min: first, Max: last.nextMinor()}
}

// Empty reports whether no version lies in r.
func (r VersionRange) Empty() bool {
	if r.Engine == EngineNotVLLM {
		return true
	}
	return !r.Max.IsZero() && r.Max.Compare(r.Min) <= 0
}

// Unbounded reports whether r constrains neither the engine nor the
// version.
func (r VersionRange) Unbounded() bool {
	return r.Engine == EngineUnknown && r.Min.IsZero() && r.Max.IsZero()
}

// Contains reports whether version ver of engine e lies in r. EngineUnknown
// matches any engine.
func (r VersionRange) Contains(e Engine, ver Version) bool {
	if r.Empty() {
		return false
	}
	if r.Engine != EngineUnknown && e != EngineUnknown && e != r.Engine {
		return false
	}
	if !r.Min.IsZero() && ver.Compare(r.Min) < 0 {
		return false
	}
	return r.Max.IsZero() || ver.Compare(r.Max) < 0
}

// Intersect returns the versions in both r and o. Ranges of different
// engines (V0 and V1) do not intersect; the result is then empty.
func (r VersionRange) Intersect(o VersionRange) VersionRange {
	out := r
	switch {
	case o.Engine == EngineUnknown:
	case r.Engine == EngineUnknown:
		out.Engine = o.Engine
	case r.Engine != o.Engine:
		return emptyRange()
	}
	if !o.Min.IsZero() && (out.Min.IsZero() || o.Min.Compare(out.Min) > 0) {
		out.Min = o.Min
	}
	if !o.Max.IsZero() && (out.Max.IsZero() || o.Max.Compare(out.Max) < 0) {
		out.Max = o.Max
	}
	if out.Empty() {
		return emptyRange()
	}
	return out
}

// Hull returns the smallest range that holds both r and o. An empty range
// adds nothing; engines that differ give EngineUnknown.
func (r VersionRange) Hull(o VersionRange) VersionRange {
	if r.Empty() {
		return o
	}
	if o.Empty() {
		return r
	}
	out := r
	if o.Engine != r.Engine {
		out.Engine = EngineUnknown
	}
	if o.Min.IsZero() || (!out.Min.IsZero() && o.Min.Compare(out.Min) < 0) {
		out.Min = o.Min
	}
	if o.Max.IsZero() || (!out.Max.IsZero() && o.Max.Compare(out.Max) > 0) {
		out.Max = o.Max
	}
	return out
}

// without returns r minus o when that is a single non-empty range, that is
// when o covers one end of r and not all of it; otherwise ok is false and
// r is returned unchanged. The engine of o must match r's (or either be
// unknown) for o to remove anything.
func (r VersionRange) without(o VersionRange) (VersionRange, bool) {
	if r.Empty() || o.Empty() {
		return r, false
	}
	if r.Engine != EngineUnknown && o.Engine != EngineUnknown && r.Engine != o.Engine {
		return r, false
	}
	if o.Engine != EngineUnknown && r.Engine == EngineUnknown {
		// Absence of a V1 name says nothing about V0 versions.
		return r, false
	}
	ov := r.Intersect(VersionRange{Min: o.Min, Max: o.Max})
	if ov.Empty() {
		return r, false
	}
	coversLow := ov.Min == r.Min
	coversHigh := ov.Max == r.Max
	switch {
	case coversLow && coversHigh:
		return r, false // would remove everything
	case coversLow && !ov.Max.IsZero():
		out := r
		out.Min = ov.Max
		return out, true
	case coversHigh && !ov.Min.IsZero():
		out := r
		out.Max = ov.Min
		return out, true
	}
	return r, false // a hole in the middle: not a single range
}

// emptyRange is the canonical empty range.
func emptyRange() VersionRange { return VersionRange{Min: Version{0, 0, 1}, Max: Version{0, 0, 1}} }

// String formats r for a report: ">= 0.11 (V1)", "0.9.2–0.10.x (V1)",
// "0.10.x (V1)", "0.6.0–0.6.3 (V0)", "<= 0.10.x", "any (V1)", "unknown"
// (the zero range) or "none" (empty). "0.10.x" stands for every patch
// release of 0.10.
func (r VersionRange) String() string {
	if r.Empty() {
		return "none"
	}
	if r.Unbounded() {
		return "unknown"
	}
	var s string
	switch {
	case r.Min.IsZero() && r.Max.IsZero():
		s = "any"
	case r.Max.IsZero():
		s = ">= " + lowString(r.Min)
	case r.Min.IsZero():
		s = "<= " + highString(r.Max)
	case r.Min.Patch == 0 && r.Max == r.Min.nextMinor():
		s = fmt.Sprintf("%d.%d.x", r.Min.Major, r.Min.Minor)
	case r.Min.Major == r.Max.Major && r.Min.Minor == r.Max.Minor:
		// Both ends in one minor series: spell the patch out.
		s = r.Min.String() + "–" + highString(r.Max)
	default:
		s = lowString(r.Min) + "–" + highString(r.Max)
	}
	if r.Engine == EngineV0 || r.Engine == EngineV1 {
		s += " (" + r.Engine.String() + ")"
	}
	return s
}

// lowString formats an inclusive lower bound: "0.11" for 0.11.0, else
// "0.9.2".
func lowString(v Version) string {
	if v.Patch == 0 {
		return fmt.Sprintf("%d.%d", v.Major, v.Minor)
	}
	return v.String()
}

// highString formats an exclusive upper bound as the last version below
// it: 0.11.0 -> "0.10.x", 0.6.4 -> "0.6.3", 1.0.0 -> "0.x".
func highString(v Version) string {
	switch {
	case v.Patch > 0:
		return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch-1)
	case v.Minor > 0:
		return fmt.Sprintf("%d.%d.x", v.Major, v.Minor-1)
	case v.Major > 0:
		return fmt.Sprintf("%d.x", v.Major-1)
	}
	return "0.0.0"
}

// Confidence grades how well a fact of the name history is established.
type Confidence int

const (
	// Documented: read in the release's code or versioned documentation.
	Documented Confidence = iota
	// Approximate: dated from pull requests, not release tags (the "~" of
	// the reference notes); off by a patch or a minor release at most.
	Approximate
	// Unverified: could not be pinned to a release (newest main, third
	// party reports). Used only for the likely range, never the
	// consistent one.
	Unverified
)

var confidenceNames = [...]string{Documented: "documented", Approximate: "approximate", Unverified: "unverified"}

// String returns "documented", "approximate" or "unverified".
func (c Confidence) String() string { return enumString(c, "Confidence", confidenceNames[:]) }

// Era records that vLLM versions in a range emit a metric: under its name
// alone, or (when Bounds is set) with a given bucket layout. The name
// history (see History) is a list of Eras; it backs both the candidate
// names of the catalog's signals and the inference of a capture's version.
type Era struct {
	// Metric is the family's lookup name (see snapshot.Family.Name):
	// counters with _total, histograms without _bucket.
	Metric string
	// Versions is the range of versions that emit Metric by default.
	// Versions where it is hidden behind --show-hidden-metrics-for-version
	// are not included.
	Versions VersionRange
	// Confidence says how well Versions is established.
	Confidence Confidence
	// Default is true when every server of the era emits the family with
	// default flags, whatever its traffic or configuration, so that its
	// absence from a complete capture is (weak) evidence against the era.
	// Opt-in families (LoRA, speculative decoding, OTLP traces, KV
	// residency, MFU) are not Default.
	Default bool
	// Bounds, when non-nil, makes this a layout era: the finite bucket
	// upper bounds (ascending, without +Inf) that Metric's histogram has
	// in Versions. Layout eras are evidence only when a capture's bounds
	// equal Bounds exactly.
	Bounds []float64
	// Note explains the era in a few words.
	Note string
}

// String formats e as "vllm:kv_cache_usage_perc >= 0.9.2 (V1)".
func (e Era) String() string {
	s := e.Metric
	if e.Bounds != nil {
		s += " buckets"
	}
	s += " " + e.Versions.String()
	if e.Confidence != Documented {
		s += " [" + e.Confidence.String() + "]"
	}
	return s
}

// History returns vLLM's metric name history: one Era per metric name and
// engine generation, plus layout Eras for the bucket sets that changed.
// It is built from reference/vllm-metrics.md (sections 3 to 8) and returned
// as a fresh slice the caller may modify.
func History() []Era { return history() }
