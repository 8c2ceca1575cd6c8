package notebook_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "store the program's output in the notebook's cells")

const notebookFile = "whyslow.ipynb"

// TestNotebook runs the notebook's code cells as one program (see the
// package documentation) and checks what they print.
func TestNotebook(t *testing.T) {
	raw, err := os.ReadFile(notebookFile)
	require.NoError(t, err)
	nb, err := readNotebook(raw)
	require.NoError(t, err)
	cells := nb.codeCells()
	require.NotEmpty(t, cells)

	prog, err := compose(cells)
	require.NoError(t, err)
	out := runProgram(t, prog)

	results, err := splitOutput(out, len(cells))
	require.NoError(t, err, "output:\n%s", out)

	all := string(out)
	for _, want := range []string{
		"replicas: 4 problems: 0\n",
		"vllm-0: 120 scrapes",
		"fleet (merged)",
		"average of the pods' p95 0.717s; fleet p95 from merged buckets 0.717s in [0.5, 0.75], n=28827",
		"prompt tokens p50",
		"symptom ttft: PRESENT",
		"prefill-long-prompts   supported",
		"experiment for prefill-long-prompts: change max_num_batched_tokens",
		"ttft         present=false",
	} {
		assert.Contains(t, all, want)
	}
	// The last cells show values: the verdict of the hand-run map agrees
	// with Diagnose's.
	verdict := results[len(results)-2]
	assert.Equal(t, "true\n", verdict.result, "cell %d", len(results)-2)

	if *update {
		for i, c := range cells {
			c.setOutput(results[i], i+1)
		}
		updated, err := nb.marshal()
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(notebookFile, updated, 0o644))
		return
	}
	for i, c := range cells {
		if stream, result := c.storedOutput(); stream != results[i].stream || result != results[i].result {
			t.Errorf("code cell %d: stored output differs from the program's; run\n\tgo test ./examples/notebook -update\nstored:\n%s%s\nnow:\n%s%s",
				i+1, stream, result, results[i].stream, results[i].result)
		}
	}
}

// A notebook is an nbformat 4 document. It is kept as generic JSON so that
// -update changes only the outputs of code cells.
type notebook struct {
	doc   map[string]any
	cells []map[string]any
}

// codeCell is one code cell of a notebook.
type codeCell struct {
	m      map[string]any
	source string
}

func readNotebook(raw []byte) (*notebook, error) {
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", notebookFile, err)
	}
	list, ok := doc["cells"].([]any)
	if !ok {
		return nil, fmt.Errorf("%s: no cells", notebookFile)
	}
	nb := &notebook{doc: doc}
	for i, c := range list {
		m, ok := c.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: cell %d is not an object", notebookFile, i)
		}
		nb.cells = append(nb.cells, m)
	}
	return nb, nil
}

// codeCells returns the code cells in order.
func (nb *notebook) codeCells() []*codeCell {
	var out []*codeCell
	for _, m := range nb.cells {
		if m["cell_type"] == "code" {
			out = append(out, &codeCell{m: m, source: joinText(m["source"])})
		}
	}
	return out
}

// marshal writes the notebook as Jupyter does: keys sorted, one space of
// indentation, no HTML escaping, a final newline.
func (nb *notebook) marshal() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", " ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(nb.doc); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// joinText reads a multi-line string of nbformat: a string, or a list of
// strings that each keep their newline.
func joinText(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []any:
		var b strings.Builder
		for _, s := range v {
			if s, ok := s.(string); ok {
				b.WriteString(s)
			}
		}
		return b.String()
	}
	return ""
}

// splitText writes a multi-line string as nbformat lists it.
func splitText(s string) []any {
	out := []any{}
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// cellOutput is what one cell printed (stream) and the value of its final
// expression (result), each "" when there is none.
type cellOutput struct {
	stream, result string
}

// storedOutput returns the output stored in the notebook for c.
func (c *codeCell) storedOutput() (stream, result string) {
	outs, _ := c.m["outputs"].([]any)
	for _, o := range outs {
		o, _ := o.(map[string]any)
		switch o["output_type"] {
		case "stream":
			stream += joinText(o["text"])
		case "execute_result":
			data, _ := o["data"].(map[string]any)
			result += joinText(data["text/plain"])
		}
	}
	return stream, result
}

// setOutput stores out in c, as Jupyter records an execution with the
// given count.
func (c *codeCell) setOutput(out cellOutput, count int) {
	outs := []any{}
	if out.stream != "" {
		outs = append(outs, map[string]any{"name": "stdout", "output_type": "stream", "text": splitText(out.stream)})
	}
	if out.result != "" {
		outs = append(outs, map[string]any{
			"data":            map[string]any{"text/plain": splitText(out.result)},
			"execution_count": count,
			"metadata":        map[string]any{},
			"output_type":     "execute_result",
		})
	}
	c.m["outputs"] = outs
	c.m["execution_count"] = count
}

// Markers the program prints between cells and before a cell's value, so
// that its output can be split per cell. They are control characters
// that no cell prints.
const (
	markCell   = "\x1ecell "
	markResult = "\x1dresult\n"
)

// program is a notebook turned into Go source.
type program struct {
	imports []importSpec
	decls   []string // package-level declarations, with //line comments
	cells   []*cellCode
	// code holds each cell's code after its imports, for blankUnused.
	code []string
}

type importSpec struct{ name, path string }

// cellCode holds the statements of one code cell.
type cellCode struct {
	index int      // 1-based code cell number
	body  string   // the statements, verbatim
	last  [2]int   // byte range in body of a final bare expression; {0, 0} if none
	show  bool     // print the final expression's value
	vars  []string // variables declared at the cell's top level
}

// lineFile names the notebook's cells in //line directives, so that
// compiler errors point at a cell and a line in it.
func lineFile(cell int) string { return fmt.Sprintf("%s#cell%d", notebookFile, cell) }

// compose turns the code cells into a program.
func compose(cells []*codeCell) (*program, error) {
	p := &program{}
	seen := map[string]bool{}
	for i, c := range cells {
		src := stripMagics(c.source)
		n := i + 1
		imports, rest, restLine, err := splitImports(src, n)
		if err != nil {
			return nil, err
		}
		for _, im := range imports {
			if key := im.name + " " + im.path; !seen[key] {
				seen[key] = true
				p.imports = append(p.imports, im)
			}
		}
		if strings.TrimSpace(rest) == "" {
			continue
		}
		p.code = append(p.code, rest)
		fset := token.NewFileSet()
		if _, err := parser.ParseFile(fset, "", "package main\n"+rest, 0); err == nil {
			// Only declarations: they go to package level.
			p.decls = append(p.decls, fmt.Sprintf("//line %s:%d\n%s", lineFile(n), restLine, rest))
			continue
		}
		cc, err := parseStatements(rest, n)
		if err != nil {
			return nil, err
		}
		cc.body = fmt.Sprintf("//line %s:%d\n%s", lineFile(n), restLine, rest)
		if cc.show {
			off := len(cc.body) - len(rest)
			cc.last[0] += off
			cc.last[1] += off
		}
		p.cells = append(p.cells, cc)
	}
	p.blankUnused()
	return p, nil
}

// stripMagics blanks the lines gophernotes gives to the kernel rather than
// to Go (%magics and $shell commands), keeping line numbers.
func stripMagics(src string) string {
	lines := strings.Split(src, "\n")
	for i, l := range lines {
		if t := strings.TrimSpace(l); strings.HasPrefix(t, "%") || strings.HasPrefix(t, "$") {
			lines[i] = ""
		}
	}
	return strings.Join(lines, "\n")
}

// splitImports separates the import declarations at the top of a cell
// from the rest, which starts at line restLine of the cell.
func splitImports(src string, cell int) (imports []importSpec, rest string, restLine int, err error) {
	const header = "package main\n"
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, lineFile(cell), header+src, parser.ImportsOnly)
	if err != nil {
		return nil, "", 0, fmt.Errorf("code cell %d: imports: %w", cell, err)
	}
	end := 0
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.IMPORT {
			break
		}
		for _, s := range gd.Specs {
			is := s.(*ast.ImportSpec)
			p, err := strconv.Unquote(is.Path.Value)
			if err != nil {
				return nil, "", 0, fmt.Errorf("code cell %d: import %s: %w", cell, is.Path.Value, err)
			}
			spec := importSpec{path: p}
			if is.Name != nil {
				spec.name = is.Name.Name
			}
			imports = append(imports, spec)
		}
		end = fset.Position(gd.End()).Offset - len(header)
	}
	rest = src[end:]
	return imports, rest, 1 + strings.Count(src[:end], "\n"), nil
}

// parseStatements parses a cell of statements and finds its final bare
// expression and the variables it declares.
func parseStatements(body string, cell int) (*cellCode, error) {
	const header = "package main\nfunc _() {\n"
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", header+body+"\n}\n", 0)
	if err != nil {
		return nil, fmt.Errorf("code cell %d is neither declarations nor statements: %w", cell, err)
	}
	stmts := f.Decls[0].(*ast.FuncDecl).Body.List
	cc := &cellCode{index: cell}
	for _, s := range stmts {
		switch s := s.(type) {
		case *ast.AssignStmt:
			if s.Tok == token.DEFINE {
				for _, l := range s.Lhs {
					if id, ok := l.(*ast.Ident); ok && id.Name != "_" {
						cc.vars = append(cc.vars, id.Name)
					}
				}
			}
		case *ast.DeclStmt:
			if gd, ok := s.Decl.(*ast.GenDecl); ok && gd.Tok == token.VAR {
				for _, sp := range gd.Specs {
					for _, id := range sp.(*ast.ValueSpec).Names {
						if id.Name != "_" {
							cc.vars = append(cc.vars, id.Name)
						}
					}
				}
			}
		}
	}
	if len(stmts) > 0 {
		if es, ok := stmts[len(stmts)-1].(*ast.ExprStmt); ok {
			cc.show = true
			cc.last = [2]int{fset.Position(es.Pos()).Offset - len(header), fset.Position(es.End()).Offset - len(header)}
		}
	}
	return cc, nil
}

// blankUnused imports as "_" every package no cell refers to, since
// gophernotes accepts unused imports and the compiler does not.
func (p *program) blankUnused() {
	used := map[string]bool{}
	for _, code := range p.code {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "", "package main\n"+code, parser.SkipObjectResolution)
		if err != nil {
			// compose checked that the code parses as one or the other.
			f, _ = parser.ParseFile(fset, "", "package main\nfunc _() {\n"+code+"\n}\n", parser.SkipObjectResolution)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok {
					used[id.Name] = true
				}
			}
			return true
		})
	}
	for i, im := range p.imports {
		if im.name == "_" || im.name == "." {
			continue
		}
		if !used[packageName(im)] {
			p.imports[i].name = "_"
		}
	}
}

// packageName guesses the name an import is referred to by: its alias,
// else the last element of its path that is not a major version.
func packageName(im importSpec) string {
	if im.name != "" {
		return im.name
	}
	elems := strings.Split(im.path, "/")
	name := elems[len(elems)-1]
	if len(elems) > 1 && regexp.MustCompile(`^v[0-9]+$`).MatchString(name) {
		name = elems[len(elems)-2]
	}
	return name
}

// source writes the program. Cells in noShow keep their final expression
// as a plain statement (a call with no result has no value to print).
func (p *program) source(noShow map[int]bool) []byte {
	var b bytes.Buffer
	b.WriteString("// Code generated by notebook_test.go from " + notebookFile + ". DO NOT EDIT.\n\npackage main\n\nimport (\n")
	b.WriteString("\tnbfmt \"fmt\"\n\tnbstrings \"strings\"\n")
	for _, im := range p.imports {
		if im.name != "" {
			fmt.Fprintf(&b, "\t%s %q\n", im.name, im.path)
		} else {
			fmt.Fprintf(&b, "\t%q\n", im.path)
		}
	}
	b.WriteString(")\n\n")
	for _, d := range p.decls {
		b.WriteString(d)
		b.WriteString("\n\n")
	}
	b.WriteString("//line " + notebookFile + "#main:1\n")
	b.WriteString("func main() {\n")
	for _, c := range p.cells {
		fmt.Fprintf(&b, "nbfmt.Printf(\"%%s%%d\\n\", %q, %d)\n", markCell, c.index)
		body := c.body
		if c.show && !noShow[c.index] {
			body = body[:c.last[0]] + "nbShow(" + body[c.last[0]:c.last[1]] + ")" + body[c.last[1]:]
		}
		b.WriteString(body)
		b.WriteString("\n")
		for _, v := range c.vars {
			fmt.Fprintf(&b, "_ = %s\n", v)
		}
	}
	b.WriteString("}\n\n")
	fmt.Fprintf(&b, `// nbShow prints the value of a cell's final expression, as the notebook shows it.
func nbShow(vs ...any) {
	if len(vs) == 0 {
		return
	}
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = nbfmt.Sprint(v)
	}
	nbfmt.Print(%q)
	nbfmt.Println(nbstrings.Join(s, " "))
}
`, markResult)
	return b.Bytes()
}

// noValue matches the compiler's complaint about a final call that
// returns nothing, wrapped in nbShow: "...ipynb#cell3:5: f() (no value)
// used as value".
var noValue = regexp.MustCompile(regexp.QuoteMeta(notebookFile) + `#cell(\d+):\d+(?::\d+)?: .*\(no value\) used as value`)

// runProgram builds the program inside this package's directory, so that
// it resolves imports within the repository's module, and runs it here.
// A final call without result is found from the compiler's error and left
// unwrapped, once per cell.
func runProgram(t *testing.T, p *program) []byte {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "notebook")
	noShow := map[int]bool{}
	for {
		msg, err := build(p.source(noShow), bin)
		if err == nil {
			break
		}
		retry := false
		for _, m := range noValue.FindAllStringSubmatch(msg, -1) {
			n, _ := strconv.Atoi(m[1])
			if !noShow[n] {
				noShow[n], retry = true, true
			}
		}
		if !retry {
			t.Fatalf("the notebook does not compile as a program: %v\n%s", err, msg)
		}
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the notebook's program failed: %v\nstderr:\n%s\nstdout:\n%s", err, stderr.Bytes(), stdout.Bytes())
	}
	return stdout.Bytes()
}

// build compiles src into bin from a temporary directory _run-* that it
// removes before returning. It returns the compiler's output.
func build(src []byte, bin string) (string, error) {
	dir, err := os.MkdirTemp(".", "_run-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "main.go"), src, 0o644); err != nil {
		return "", err
	}
	cmd := exec.Command("go", "build", "-o", bin, "./"+path.Base(filepath.ToSlash(dir)))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// splitOutput splits the program's output per code cell, using the
// markers the program prints.
func splitOutput(out []byte, cells int) ([]cellOutput, error) {
	res := make([]cellOutput, cells)
	parts := strings.Split(string(out), markCell)
	if parts[0] != "" {
		return nil, errors.New("output before the first cell")
	}
	for _, part := range parts[1:] {
		num, text, ok := strings.Cut(part, "\n")
		n, err := strconv.Atoi(num)
		if !ok || err != nil || n < 1 || n > cells {
			return nil, fmt.Errorf("bad cell marker %q", num)
		}
		stream, result, _ := strings.Cut(text, markResult)
		res[n-1] = cellOutput{stream: stream, result: result}
	}
	return res, nil
}

// TestCompose checks the translation of cells on small cases.
func TestCompose(t *testing.T) {
	cells := []*codeCell{
		{source: "import (\n\t\"fmt\"\n\t\"os\"\n)\nimport \"strings\""},
		{source: "func twice(x int) int { return 2 * x }"},
		{source: "%help\nx := twice(21)\nfmt.Println(\"x is\", x)\nx"},
		{source: "import \"fmt\"\ny, z := 1, 2\n_ = z\nstrings.Repeat(\"ab\", y)"},
		{source: "for i := 0; i < 2; i++ {\n\tfmt.Print(i)\n}"},
	}
	p, err := compose(cells)
	require.NoError(t, err)
	assert.Equal(t, []importSpec{{path: "fmt"}, {name: "_", path: "os"}, {path: "strings"}}, p.imports)
	require.Len(t, p.decls, 1)
	assert.Contains(t, p.decls[0], "func twice")
	require.Len(t, p.cells, 3)
	assert.Equal(t, []string{"x"}, p.cells[0].vars)
	assert.True(t, p.cells[0].show)
	assert.Equal(t, "x", p.cells[0].body[p.cells[0].last[0]:p.cells[0].last[1]])
	assert.Equal(t, []string{"y", "z"}, p.cells[1].vars)
	assert.False(t, p.cells[2].show)
	assert.NotContains(t, p.cells[0].body, "%help")

	src := string(p.source(nil))
	assert.Contains(t, src, "nbShow(x)")
	assert.Contains(t, src, `nbShow(strings.Repeat("ab", y))`)
	// The magic line is blanked, so x := ... stays on line 2 of cell 3;
	// cell 4's code starts on the line where its import ends.
	assert.Contains(t, src, "//line "+notebookFile+"#cell3:1\n\nx := twice(21)\n")
	assert.Contains(t, src, "//line "+notebookFile+"#cell4:1\n\ny, z := 1, 2\n")
	assert.Contains(t, src, "_ = x\n")
}

func TestComposeErrors(t *testing.T) {
	for _, src := range []string{
		"x := (",
		"func f() {}\nx := 1",
	} {
		_, err := compose([]*codeCell{{source: src}})
		assert.Error(t, err, "%q", src)
	}
}

func TestSplitOutput(t *testing.T) {
	out := markCell + "1\nhello\n" + markResult + "42\n" + markCell + "3\nbye\n"
	got, err := splitOutput([]byte(out), 3)
	require.NoError(t, err)
	assert.Equal(t, []cellOutput{{"hello\n", "42\n"}, {}, {"bye\n", ""}}, got)

	_, err = splitOutput([]byte("stray\n"+out), 3)
	assert.Error(t, err)
	_, err = splitOutput([]byte(markCell+"9\n"), 3)
	assert.Error(t, err)
}

func TestSplitText(t *testing.T) {
	for _, s := range []string{"", "a", "a\n", "a\nb", "a\n\nb\n"} {
		assert.Equal(t, s, joinText(splitText(s)), "%q", s)
	}
	assert.True(t, slices.Equal([]any{"a\n", "b"}, splitText("a\nb")))
}

// TestRunCells runs a small notebook end to end: declarations, values
// shown, a final call with no result (the compiler's complaint makes it a
// plain statement) and a final call with two results (both shown).
func TestRunCells(t *testing.T) {
	cells := []*codeCell{
		{source: "import (\n\t\"fmt\"\n\t\"strconv\"\n)"},
		{source: "func hello() { fmt.Println(\"hello\") }"},
		{source: "x := 6 * 7\nfmt.Println(\"x is\", x)\nx"},
		{source: "hello()"},
		{source: "strconv.Atoi(\"12\")"},
		{source: "for i := 0; i < 2; i++ {\n\tfmt.Print(i)\n}"},
	}
	p, err := compose(cells)
	require.NoError(t, err)
	out := runProgram(t, p)
	got, err := splitOutput(out, len(cells))
	require.NoError(t, err)
	assert.Equal(t, []cellOutput{
		{}, {},
		{"x is 42\n", "42\n"},
		{"hello\n", ""},
		{"", "12 <nil>\n"},
		{"01", ""},
	}, got)
}
