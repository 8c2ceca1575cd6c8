package report

import (
	"strings"
	"unicode"
)

// mdInline is whyslow's one Markdown escaper, used by
// Document.WriteMarkdown for every report, judgement and catalog: it
// escapes the characters that would start Markdown markup in running text
// (emphasis, code, links, HTML tags, table cells), and a heading, quote or
// list marker at the start of a line. Underscores inside
// words (fact ids such as ttft_p95) never emphasise and stay as they are;
// a bracket only starts a link when "(", "[" or ":" follows "]", so
// "[1s, 2.5s]" stays readable.
func mdInline(s string) string { return mdEscape(s, true) }

// mdCell escapes a table cell: inline markup as mdInline does
// (but not line-start markers, meaningless in a cell), and line breaks as
// <br>.
func mdCell(s string) string {
	return strings.ReplaceAll(mdEscape(s, false), "\n", "<br>")
}

func mdEscape(s string, lines bool) string {
	var b strings.Builder
	rs := []rune(s)
	for i, r := range rs {
		next := rune(0)
		if i+1 < len(rs) {
			next = rs[i+1]
		}
		lineStart := i == 0 || rs[i-1] == '\n'
		switch {
		case r == '\\' || r == '`' || r == '*' || r == '|':
			b.WriteByte('\\')
		case r == ']' && (next == '(' || next == '[' || next == ':'):
			b.WriteByte('\\')
		case r == '<' && (next == '/' || next == '!' || next == '?' || unicode.IsLetter(next)):
			b.WriteByte('\\')
		case lines && lineStart && (r == '#' || r == '>' || r == '-' || r == '+'):
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return escapeEdgeUnderscores(b.String())
}

// escapeEdgeUnderscores escapes underscores that begin or end a word.
func escapeEdgeUnderscores(s string) string {
	if !strings.Contains(s, "_") {
		return s
	}
	rs := []rune(s)
	var b strings.Builder
	word := func(r rune) bool {
		return r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
	}
	for i, r := range rs {
		if r == '_' {
			prev := i > 0 && word(rs[i-1]) && rs[i-1] != '_'
			next := i+1 < len(rs) && word(rs[i+1]) && rs[i+1] != '_'
			if !(prev && next) {
				b.WriteByte('\\')
			}
		}
		b.WriteRune(r)
	}
	return b.String()
}
