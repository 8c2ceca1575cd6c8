package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestREADMESessions runs every "$ whyslow ..." session shown in the
// repository's README.md and in the pages under docs/, and checks that the
// output shown there is what the command prints today, so that the
// documentation stays true (as benchstat's doc_test does for its own).
//
// In the README, a line "..." stands for lines left out, and "..." inside a
// line for columns left out; runs of spaces are not significant. A trailing
// "| head -N" is honoured by comparing only the first N lines.
func TestREADMESessions(t *testing.T) {
	docs, err := filepath.Glob("../../docs/*.md")
	require.NoError(t, err)
	require.NotEmpty(t, docs, "no docs/*.md pages")
	for _, file := range append([]string{"../../README.md"}, docs...) {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		sessions := readmeSessions(string(data))
		if filepath.Base(file) == "README.md" {
			require.NotEmpty(t, sessions, "README.md shows no whyslow session")
		}
		for _, s := range sessions {
			t.Run(filepath.Base(file)+"/"+strings.Join(s.args, " "), func(t *testing.T) {
				checkSession(t, s)
			})
		}
	}
}

// checkSession runs one session and checks that its shown output lines are
// printed, in order.
func checkSession(t *testing.T, s readmeSession) {
	t.Helper()
	args := make([]string, len(s.args))
	for i, a := range s.args {
		// Paths in the documentation are relative to the repository root.
		if _, err := os.Stat(filepath.Join("../..", a)); err == nil && i > 0 && !strings.HasPrefix(a, "-") {
			a = filepath.Join("../..", a)
		}
		args[i] = a
	}
	code, out, errOut := whyslow(t, "", args...)
	require.Equal(t, exitOK, code, errOut)
	lines := strings.Split(out, "\n")
	if s.head > 0 && len(lines) > s.head {
		lines = lines[:s.head]
	}
	next := 0
	for _, want := range s.output {
		if strings.TrimSpace(want) == "..." {
			continue
		}
		found := false
		for next < len(lines) {
			got := lines[next]
			next++
			if matchElided(want, got) {
				found = true
				break
			}
		}
		assert.True(t, found, "documented line not printed (in order):\n%s\noutput:\n%s", want, strings.Join(lines, "\n"))
	}
}

type readmeSession struct {
	args   []string
	head   int
	output []string
}

var headRE = regexp.MustCompile(`\|\s*head\s+-(\d+)\s*$`)

// readmeSessions finds the fenced blocks whose first line is
// "$ whyslow ...".
func readmeSessions(md string) []readmeSession {
	var out []readmeSession
	blocks := strings.Split(md, "```")
	for i := 1; i < len(blocks); i += 2 {
		lines := strings.Split(strings.TrimPrefix(blocks[i], "\n"), "\n")
		if len(lines) == 0 || !strings.HasPrefix(lines[0], "$ whyslow ") {
			continue
		}
		cmd := strings.TrimPrefix(lines[0], "$ whyslow ")
		s := readmeSession{}
		if m := headRE.FindStringSubmatch(cmd); m != nil {
			for _, c := range m[1] {
				s.head = s.head*10 + int(c-'0')
			}
			cmd = cmd[:len(cmd)-len(m[0])]
		}
		s.args = strings.Fields(cmd)
		for _, l := range lines[1:] {
			if strings.TrimSpace(l) != "" {
				s.output = append(s.output, l)
			}
		}
		out = append(out, s)
	}
	return out
}

// matchElided reports whether got contains the parts of want between
// "..." elisions, in order, with runs of spaces folded.
func matchElided(want, got string) bool {
	fold := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	got = fold(got)
	pos := 0
	for _, part := range strings.Split(want, "...") {
		part = fold(part)
		if part == "" {
			continue
		}
		i := strings.Index(got[pos:], part)
		if i < 0 {
			return false
		}
		pos += i + len(part)
	}
	return true
}

func TestMatchElided(t *testing.T) {
	tests := []struct {
		want, got string
		ok        bool
	}{
		{"a  b", "a b", true},
		{"ttft ... MOVED up", "ttft 1 2 3 MOVED up", true},
		{"ttft ... MOVED up", "ttft 1 2 3 moved", false},
		{"b ... a", "a b", false},
		{"score 10", "score 11", false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.ok, matchElided(tt.want, tt.got), "%q ~ %q", tt.want, tt.got)
	}
}
