package layering

import (
	"bytes"
	"encoding/json"
	"go/parser"
	"go/token"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const module = "github.com/whyslow/whyslow"

// pkg is what go list says of one package.
type pkg struct {
	ImportPath string
	Name       string
	Doc        string
	Dir        string
	GoFiles    []string
	Imports    []string
	Deps       []string
}

// list runs go list -json on patterns (-deps too when deps) and returns
// the packages by import path.
func list(t *testing.T, deps bool, patterns ...string) map[string]pkg {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	args := []string{"list", "-json=ImportPath,Name,Doc,Dir,GoFiles,Imports,Deps"}
	if deps {
		args = append(args, "-deps")
	}
	cmd := exec.Command(goTool, append(args, patterns...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	pkgs := map[string]pkg{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else {
			require.NoError(t, err)
		}
		pkgs[p.ImportPath] = p
	}
	return pkgs
}

// own returns the whyslow packages among paths, without the module prefix
// ("" for the root package).
func own(paths []string) []string {
	var out []string
	for _, p := range paths {
		if p == module {
			out = append(out, "")
		} else if rest, ok := strings.CutPrefix(p, module+"/"); ok {
			out = append(out, rest)
		}
	}
	return out
}

// TestImports: each package imports (directly or not) only the whyslow
// packages below it: data flows evidence -> snapshot -> diagnose (with
// catalog) -> rules -> report.
func TestImports(t *testing.T) {
	pkgs := list(t, false, module+"/...")
	// allowed lists, for each library package, every whyslow package it
	// may import directly; a package missing here may import nothing of
	// whyslow.
	allowed := map[string][]string{
		"histogram":                 {},
		"rules":                     {"histogram", "internal/textfmt"},
		"snapshot":                  {"histogram", "snapshot/internal/dumpdir", "snapshot/internal/outlier", "snapshot/internal/stream"},
		"snapshot/tsdb":             {"snapshot", "snapshot/internal/store", "snapshot/internal/outlier", "histogram"},
		"snapshot/promapi":          {"snapshot", "snapshot/internal/store", "histogram"},
		"snapshot/internal/store":   {"snapshot", "histogram"},
		"snapshot/internal/dumpdir": {},
		"snapshot/internal/outlier": {},
		"snapshot/internal/stream":  {},
		"catalog":                   {"snapshot"},
		"report":                    {"histogram", "snapshot", "catalog", "rules", "internal/textfmt"}, // snapshot: Warning.Severity is snapshot.Severity
		"report/html":               {"report", "rules", "internal/textfmt"},
		"diagnose":                  {"histogram", "snapshot", "catalog", "rules", "report", "internal/textfmt"},
		"internal/textfmt":          {},
		"alerts":                    {"catalog", "rules"},
	}
	for name, want := range allowed {
		p, ok := pkgs[module+"/"+name]
		require.True(t, ok, "package %s not found", name)
		for _, imp := range own(p.Imports) {
			assert.Contains(t, want, imp, "%s must not import %s", name, imp)
		}
	}
	// No library package imports the simulator, test support, the command
	// or examples; internal/textfmt, the text formatter the library writes
	// its sentences and reports with, is the library's own.
	for path, p := range pkgs {
		if p.Name == "main" || strings.Contains(path, "/internal/") || strings.Contains(path, "/examples/") {
			continue
		}
		for _, imp := range own(p.Imports) {
			lib := imp == "internal/textfmt"
			assert.False(t, !lib && (strings.HasPrefix(imp, "internal/") || strings.HasPrefix(imp, "examples/") || strings.HasPrefix(imp, "cmd/")),
				"%s imports %s", path, imp)
		}
	}
}

// TestNothingBelowReportImportsIt: report is the last stage; no stage
// before it reaches it, not even indirectly.
func TestNothingBelowReportImportsIt(t *testing.T) {
	below := []string{"histogram", "rules", "snapshot", "snapshot/internal/store", "snapshot/tsdb", "snapshot/promapi", "catalog"}
	for _, name := range below {
		deps := own(list(t, true, module+"/"+name)[module+"/"+name].Deps)
		assert.NotContains(t, deps, "report", name)
		assert.NotContains(t, deps, "report/html", name)
		assert.NotContains(t, deps, "diagnose", name)
	}
	for _, name := range []string{"snapshot", "snapshot/internal/store", "snapshot/tsdb", "snapshot/promapi"} {
		assert.NotContains(t, own(list(t, true, module+"/"+name)[module+"/"+name].Deps), "catalog", "%s knows no vLLM", name)
	}
}

// TestProgramsLinkOnlyWhatTheyUse: a program that reads text dumps and
// diagnoses (snapshot, catalog, diagnose, report) links neither the TSDB
// reader nor the plotting packages; the command, which imports both
// subpackages, links both (so the test can fail).
func TestProgramsLinkOnlyWhatTheyUse(t *testing.T) {
	const tsdb, plot = "github.com/prometheus/prometheus/tsdb", "gonum.org/v1/plot"
	links := func(patterns ...string) (hasTSDB, hasPlot bool) {
		for path := range list(t, true, patterns...) {
			hasTSDB = hasTSDB || path == tsdb || strings.HasPrefix(path, tsdb+"/")
			hasPlot = hasPlot || path == plot || strings.HasPrefix(path, plot+"/")
		}
		return hasTSDB, hasPlot
	}
	hasTSDB, hasPlot := links(module+"/snapshot", module+"/catalog", module+"/diagnose", module+"/report")
	assert.False(t, hasTSDB, "a text-dump program links %s", tsdb)
	assert.False(t, hasPlot, "a diagnose-only program links %s", plot)

	hasTSDB, hasPlot = links(module + "/snapshot/tsdb")
	assert.True(t, hasTSDB)
	assert.False(t, hasPlot)
	hasTSDB, hasPlot = links(module + "/cmd/whyslow")
	assert.True(t, hasTSDB, "the command reads TSDB directories")
	assert.True(t, hasPlot, "the command writes HTML")
}

// TestSimulatorLinksNoTSDB: the simulator and the example programs link
// neither the TSDB nor, through it, Prometheus's service discovery and
// its cloud and Kubernetes clients; only internal/fleetsim/simtsdb, which
// writes TSDB directories, links the TSDB (so the test can fail).
func TestSimulatorLinksNoTSDB(t *testing.T) {
	heavy := []string{
		"github.com/prometheus/prometheus/tsdb", "github.com/prometheus/prometheus/discovery",
		"k8s.io", "cloud.google.com", "google.golang.org/api", "github.com/aws", "github.com/Azure",
	}
	// linked returns the entries of heavy that patterns link.
	linked := func(patterns ...string) []string {
		deps := list(t, true, patterns...)
		var out []string
		for _, h := range heavy {
			for path := range deps {
				if path == h || strings.HasPrefix(path, h+"/") {
					out = append(out, h)
					break
				}
			}
		}
		return out
	}
	assert.Empty(t, linked(module+"/internal/fleetsim", module+"/examples/..."))
	assert.Contains(t, linked(module+"/internal/fleetsim/simtsdb"), "github.com/prometheus/prometheus/tsdb")
}

// TestCommandLinksNoCloudSDK: the command reads TSDB directories with
// Prometheus's block, chunk and WAL decoders, not its tsdb package, whose
// configuration (prometheus/config, service discovery) links every cloud
// and Kubernetes SDK.
func TestCommandLinksNoCloudSDK(t *testing.T) {
	exact := []string{"github.com/prometheus/prometheus/tsdb", "github.com/prometheus/prometheus/config"}
	prefixes := []string{"github.com/prometheus/prometheus/discovery", "k8s.io", "cloud.google.com", "google.golang.org/api", "github.com/aws", "github.com/Azure"}
	deps := list(t, true, module+"/cmd/whyslow", module+"/examples/...")
	require.Contains(t, deps, "github.com/prometheus/prometheus/tsdb/wlog", "the command reads the WAL with Prometheus's own decoder")
	for path := range deps {
		assert.NotContains(t, exact, path)
		for _, p := range prefixes {
			assert.False(t, path == p || strings.HasPrefix(path, p+"/"), "the command links %s", path)
		}
	}
}

// TestPackageDocs: every package says its job in its doc comment.
func TestPackageDocs(t *testing.T) {
	for path, p := range list(t, false, module+"/...") {
		if p.Name == "main" && strings.Contains(path, "/examples/") {
			continue // example programs are documented by examples/README.md
		}
		assert.NotEmpty(t, p.Doc, "package %s has no doc comment", path)
	}
	// The library packages also say, in the full doc comment, what they
	// must not import (go list gives only the first sentence).
	for _, name := range []string{"histogram", "rules", "snapshot", "snapshot/internal/store", "snapshot/tsdb", "catalog", "report", "report/html", "diagnose", "alerts"} {
		doc := fullDoc(t, list(t, false, module+"/"+name)[module+"/"+name])
		assert.True(t, strings.Contains(doc, "import") || strings.Contains(doc, "link"),
			"the doc of %s does not say what it must not import: %q", name, doc)
	}
}

// fullDoc returns the package doc comment of p, from its files.
func fullDoc(t *testing.T, p pkg) string {
	t.Helper()
	var docs []string
	for _, f := range p.GoFiles {
		file, err := parser.ParseFile(token.NewFileSet(), filepath.Join(p.Dir, f), nil, parser.PackageClauseOnly|parser.ParseComments)
		require.NoError(t, err)
		if file.Doc != nil {
			docs = append(docs, file.Doc.Text())
		}
	}
	return strings.Join(docs, "\n")
}
