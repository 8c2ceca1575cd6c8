package dumpdir

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Stdin is the name of standard input among paths.
const Stdin = "-"

// Exts are the extensions of dump files, each also accepted with a
// further ".gz".
var Exts = []string{".prom", ".txt", ".metrics", ".om", ".openmetrics", ".text", ".out"}

// IsDumpName reports whether a file name looks like a metrics dump.
func IsDumpName(name string) bool {
	_, ok := trimExt(name)
	return ok
}

// trimExt strips ".gz" and a dump extension from a base name. ok is
// false when the name has no dump extension.
func trimExt(name string) (stem string, ok bool) {
	stem = strings.TrimSuffix(name, ".gz")
	for _, ext := range Exts {
		if len(stem) > len(ext) && strings.EqualFold(stem[len(stem)-len(ext):], ext) {
			return stem[:len(stem)-len(ext)], true
		}
	}
	return stem, false
}

// IsOpenMetricsName reports whether a file name says OpenMetrics.
func IsOpenMetricsName(name string) bool {
	name = strings.ToLower(strings.TrimSuffix(name, ".gz"))
	return strings.HasSuffix(name, ".om") || strings.HasSuffix(name, ".openmetrics")
}

var (
	// 2026-09-22T10:00:15Z, 2026-09-22T10-00-15Z, 2026-09-22_10-00-15.5+02:00,
	// 2026-09-22 100015.
	reDateTime = regexp.MustCompile(`(\d{4})-(\d{2})-(\d{2})[T_ ](\d{2})[:\-]?(\d{2})[:\-]?(\d{2})(?:[.,](\d{1,9}))?(Z|[+-]\d{2}:?\d{2})?`)
	// 20260922T100015Z, 20260922-100015, 20260922_100015.
	reCompact = regexp.MustCompile(`(\d{4})(\d{2})(\d{2})[T_\-](\d{2})(\d{2})(\d{2})(Z)?`)
	// What the shell's <(...) and /dev/stdin give: standard input by
	// another name.
	reStdinPath = regexp.MustCompile(`^/(?:dev|proc/self|proc/\d+)/fd/\d+$|^/dev/stdin$`)
	// Unix seconds (10 digits) or milliseconds (13 digits).
	reUnix = regexp.MustCompile(`(?:^|[^0-9])(\d{13}|\d{10})(?:$|[^0-9])`)
)

// timeFromName finds a timestamp in a file or directory name (without
// extension). It returns the time and the part of the name before the
// timestamp (or after it when nothing precedes it), trimmed of
// separators: the target name of flat "<pod>_<timestamp>.prom" files.
// A time without zone is UTC.
func timeFromName(stem string) (t time.Time, rest string, ok bool) {
	var lo, hi int
	if m := lastMatch(reDateTime, stem); m != nil {
		y, mo, d := atoi(stem, m, 1), atoi(stem, m, 2), atoi(stem, m, 3)
		h, mi, s := atoi(stem, m, 4), atoi(stem, m, 5), atoi(stem, m, 6)
		ns := 0
		if m[14] >= 0 {
			frac := stem[m[14]:m[15]]
			ns, _ = strconv.Atoi((frac + "000000000")[:9])
		}
		loc := time.UTC
		if m[16] >= 0 {
			z := stem[m[16]:m[17]]
			if z != "Z" {
				z = strings.ReplaceAll(z, ":", "")
				zh, _ := strconv.Atoi(z[1:3])
				zm, _ := strconv.Atoi(z[3:5])
				off := (zh*60 + zm) * 60
				if z[0] == '-' {
					off = -off
				}
				loc = time.FixedZone("", off)
			}
		}
		if !validClock(mo, d, h, mi, s) {
			return time.Time{}, stem, false
		}
		t, lo, hi = time.Date(y, time.Month(mo), d, h, mi, s, ns, loc), m[0], m[1]
	} else if m := lastMatch(reCompact, stem); m != nil {
		y, mo, d := atoi(stem, m, 1), atoi(stem, m, 2), atoi(stem, m, 3)
		h, mi, s := atoi(stem, m, 4), atoi(stem, m, 5), atoi(stem, m, 6)
		if !validClock(mo, d, h, mi, s) {
			return time.Time{}, stem, false
		}
		t, lo, hi = time.Date(y, time.Month(mo), d, h, mi, s, 0, time.UTC), m[0], m[1]
	} else if m := lastMatch(reUnix, stem); m != nil {
		lo, hi = m[2], m[3]
		n, err := strconv.ParseInt(stem[lo:hi], 10, 64)
		if err != nil {
			return time.Time{}, stem, false
		}
		if hi-lo == 13 {
			t = time.UnixMilli(n).UTC()
		} else {
			t = time.Unix(n, 0).UTC()
		}
	} else {
		return time.Time{}, stem, false
	}
	const seps = "_-. "
	rest = strings.Trim(stem[:lo], seps)
	if rest == "" {
		rest = strings.Trim(stem[hi:], seps)
	}
	return t, rest, true
}

func lastMatch(re *regexp.Regexp, s string) []int {
	ms := re.FindAllStringSubmatchIndex(s, -1)
	if len(ms) == 0 {
		return nil
	}
	return ms[len(ms)-1]
}

func atoi(s string, m []int, group int) int {
	n, _ := strconv.Atoi(s[m[2*group]:m[2*group+1]])
	return n
}

func validClock(mo, d, h, mi, s int) bool {
	return mo >= 1 && mo <= 12 && d >= 1 && d <= 31 && h <= 23 && mi <= 59 && s <= 60
}

// Name is what a dump's path says about it.
type Name struct {
	// Target is the target name the path gives, never empty.
	Target string
	// Time is the time in the file (or parent directory) name; zero if
	// none.
	Time time.Time
}

// ParseName derives the target name and time of a dump from its path.
// inSubdir says that the file sits in a subdirectory of the directory the
// caller named (the DIR/<pod>/<timestamp>.prom layout): the directory,
// not the file name, then names the target, so that "dcgm-<ts>.prom" next
// to vLLM's "<ts>.prom" joins the same pod.
func ParseName(path string, inSubdir bool) Name {
	if path == Stdin || reStdinPath.MatchString(path) {
		return Name{Target: "stdin"}
	}
	base := filepath.Base(path)
	stem, _ := trimExt(base)
	dir := filepath.Base(filepath.Dir(path))
	if dir == "." || dir == string(filepath.Separator) {
		dir = ""
	}
	t, rest, ok := timeFromName(stem)
	var ni Name
	if ok {
		ni.Time = t
	}
	dirTime, dirRest, dirIsTime := timeFromName(dir)
	if !ok && dirIsTime {
		// DIR/<timestamp>/<pod>.prom
		ni.Time = dirTime
		if dirRest == "" {
			ni.Target = stem
			return ni
		}
	}
	switch {
	case inSubdir && dir != "" && !dirIsTime:
		ni.Target = dir
	case ok && rest != "":
		ni.Target = rest
	case ok && dir != "" && !dirIsTime:
		ni.Target = dir // vllm-0/2026-09-22T10-00-15Z.prom
	case !ok && stem != "":
		ni.Target = stem
	case base != "." && base != string(filepath.Separator):
		ni.Target = base
	default:
		ni.Target = "dump"
	}
	return ni
}
