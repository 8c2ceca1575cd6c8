// Package jsondiff lists the places at which two decoded JSON values
// differ, for tests that compare two reports field by field (the same
// fleet read from two formats, or from a server and a TSDB). It is for
// tests only; no library package imports it.
package jsondiff

import (
	"fmt"
	"slices"
)

// Diff returns the paths at which the decoded JSON values a and b (as
// json.Unmarshal into an any gives them) differ, each with both values,
// in key and index order: ".signals.fleet[3 ttft].baseline.mean: 0.2,
// 0.3", where an array element with an "id" is named by it too (a value
// printed longer than 200 bytes is cut). Values that are neither objects
// nor arrays are compared with equal, or with == when equal is nil.
//
// It lists the first 20 differences, then a line saying how many more
// there are: enough for a failure message.
func Diff(a, b any, equal func(a, b any) bool) []string {
	if equal == nil {
		equal = func(a, b any) bool { return a == b }
	}
	diffs := diff(a, b, "", equal, nil)
	if n := len(diffs); n > most {
		diffs = append(diffs[:most], fmt.Sprintf("... and %d more", n-most))
	}
	return diffs
}

// most is how many differences Diff lists.
const most = 20

func diff(a, b any, path string, equal func(a, b any) bool, diffs []string) []string {
	switch a := a.(type) {
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok {
			break
		}
		keys := make([]string, 0, len(a)+len(bm))
		for k := range a {
			keys = append(keys, k)
		}
		for k := range bm {
			if _, ok := a[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			diffs = diff(a[k], bm[k], path+"."+k, equal, diffs)
		}
		return diffs
	case []any:
		bs, ok := b.([]any)
		if !ok {
			break
		}
		if len(a) != len(bs) {
			diffs = append(diffs, fmt.Sprintf("%s: %d elements, %d elements", path, len(a), len(bs)))
		}
		for i := range min(len(a), len(bs)) {
			elem := fmt.Sprintf("%s[%d]", path, i)
			if m, ok := a[i].(map[string]any); ok && m["id"] != nil {
				elem = fmt.Sprintf("%s[%d %v]", path, i, m["id"])
			}
			diffs = diff(a[i], bs[i], elem, equal, diffs)
		}
		return diffs
	default:
		if _, isMap := b.(map[string]any); !isMap {
			if _, isSlice := b.([]any); !isSlice && equal(a, b) {
				return diffs
			}
		}
	}
	return append(diffs, fmt.Sprintf("%s: %s, %s", path, short(a), short(b)))
}

// short prints v, cut to 200 bytes.
func short(v any) string {
	s := fmt.Sprint(v)
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}
