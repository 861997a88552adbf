// Package readme tests that README.md works as written: every Go block is a whole file that
// compiles against this module, the quick-start pipeline is complete, the paths the Layout
// section names exist, and the API and Configuration tables match the package.
package readme

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spate-io/beam-s3/s3io"
)

// repoRoot is the module's root, two levels above this file.
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate this test file")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// block is one fenced code block of the README.
type block struct {
	lang    string // the fence's info string, such as "go" or "sh"
	line    int    // the line of the opening fence, 1-based
	section string // the nearest heading above it
	marker  string // the <!-- ... --> comment on the line before the fence, if any
	text    string // the content, less the fence's indentation
}

func (b block) where() string { return fmt.Sprintf("README.md:%d (%s)", b.line, b.section) }

// readme returns README.md's lines.
func readme(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(string(data), "\n")
}

// blocks parses the fenced code blocks of lines, including those indented in list items.
func blocks(t *testing.T, lines []string) []block {
	t.Helper()
	var out []block
	section := "top"
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "#") {
			section = strings.TrimSpace(l)
			continue
		}
		trimmed := strings.TrimLeft(l, " ")
		if !strings.HasPrefix(trimmed, "```") {
			continue
		}
		indent := len(l) - len(trimmed)
		b := block{lang: strings.TrimSpace(strings.TrimPrefix(trimmed, "```")), line: i + 1, section: section}
		if i > 0 {
			if m := strings.TrimSpace(lines[i-1]); strings.HasPrefix(m, "<!--") {
				b.marker = m
			}
		}
		var body []string
		for i++; ; i++ {
			if i == len(lines) {
				t.Fatalf("README.md:%d: code block never closed", b.line)
			}
			if strings.TrimSpace(lines[i]) == "```" {
				break
			}
			body = append(body, strings.TrimPrefix(lines[i], strings.Repeat(" ", indent)))
		}
		b.text = strings.Join(body, "\n") + "\n"
		out = append(out, b)
	}
	return out
}

// TestGoBlocksBuild writes every ```go block of the README to a package of its own inside
// this module and vets them all with one go vet, which type-checks each against this
// module's s3io and the Beam SDK of go.mod. A block must be a whole file, starting with its
// package clause, so that a reader can copy it as it is.
func TestGoBlocksBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the README's Go blocks with go vet (1–3 minutes with a cold build cache)")
	}
	var goBlocks []block
	for _, b := range blocks(t, readme(t)) {
		if b.lang != "go" {
			continue
		}
		fset := token.NewFileSet()
		if _, err := parser.ParseFile(fset, "main.go", b.text, parser.PackageClauseOnly); err != nil {
			t.Errorf("%s: not a whole Go file (it must start with its package clause): %v", b.where(), err)
			continue
		}
		goBlocks = append(goBlocks, b)
	}
	if len(goBlocks) == 0 {
		t.Fatal("README.md has no complete ```go block")
	}

	// The packages live under testdata (which ./... patterns skip) in this package's
	// directory, so that they resolve this module and its go.sum with no network access.
	if err := os.MkdirAll("testdata", 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("testdata", "blocks-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		os.RemoveAll(dir)
		os.Remove("testdata") // only if empty
	})
	var pkgs []string
	fenceLine := map[string]block{} // package directory name → its block
	for _, b := range goBlocks {
		name := "readme_line_" + strconv.Itoa(b.line)
		if err := os.Mkdir(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "main.go"), []byte(b.text), 0o644); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, "./"+filepath.ToSlash(filepath.Join(dir, name)))
		fenceLine[name] = b
	}
	cmd := exec.Command("go", append([]string{"vet"}, pkgs...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("go vet of the README's Go blocks failed (%v); positions are README lines:\n%s", err, readmePositions(string(out), fenceLine))
	}
	t.Logf("go vet passed on %d Go blocks: %s", len(goBlocks), strings.Join(pkgs, " "))
}

// vetPos matches a position in one of the generated files.
var vetPos = regexp.MustCompile(`(?:\S*/)?(readme_line_\d+)/main\.go:(\d+)(:\d+)?`)

// readmePositions rewrites positions in the generated files as README.md lines.
func readmePositions(out string, blocks map[string]block) string {
	return vetPos.ReplaceAllStringFunc(out, func(m string) string {
		sm := vetPos.FindStringSubmatch(m)
		b, ok := blocks[sm[1]]
		line, err := strconv.Atoi(sm[2])
		if !ok || err != nil {
			return m
		}
		return fmt.Sprintf("README.md:%d%s [%s]", b.line+line, sm[3], b.section)
	})
}

// TestQuickStart checks that the README has what a user needs to copy one pipeline and run
// it: the go get line, the Go version go.mod requires, and a Go block that is a whole
// program (package main, register.* in init, beam.Init, beamx.Run).
func TestQuickStart(t *testing.T) {
	lines := readme(t)
	var haveGet bool
	var pipeline *block
	for _, b := range blocks(t, lines) {
		if b.lang == "sh" && strings.Contains(b.text, "go get github.com/spate-io/beam-s3@latest") {
			haveGet = true
		}
		if b.lang == "go" && pipeline == nil && isWholePipeline(b.text) {
			pipeline = &b
		}
	}
	if !haveGet {
		t.Error("README.md has no ```sh block with `go get github.com/spate-io/beam-s3@latest`")
	}
	if pipeline == nil {
		t.Error("README.md has no ```go block that is a whole pipeline: package main, register.* in func init, beam.Init(), beamx.Run")
	}
	version := goVersion(t)
	if !strings.Contains(strings.Join(lines, "\n"), "Go "+version) {
		t.Errorf("README.md does not say which Go it needs: go.mod says go %s, and no \"Go %s\" appears", version, version)
	}
}

func isWholePipeline(src string) bool {
	_, initBody, ok := strings.Cut(src, "\nfunc init() {")
	if !ok {
		return false
	}
	initBody, _, _ = strings.Cut(initBody, "\n}")
	return strings.HasPrefix(src, "package main") &&
		strings.Contains(initBody, "register.") &&
		strings.Contains(src, "beam.Init()") &&
		strings.Contains(src, "beamx.Run(")
}

// goVersion is go.mod's go directive as major.minor, such as "1.26".
func goVersion(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go "); ok {
			parts := strings.Split(strings.TrimSpace(v), ".")
			return strings.Join(parts[:min(2, len(parts))], ".")
		}
	}
	t.Fatal("go.mod has no go directive")
	return ""
}

// codeSpan is one `...` span of Markdown.
var codeSpan = regexp.MustCompile("`([^`]+)`")

// layoutBullet is one top-level bullet of the Layout section, with its continuation lines.
type layoutBullet struct {
	line int
	text string
}

// layoutBullets returns the bullets of the "## Layout" section.
func layoutBullets(t *testing.T, lines []string) []layoutBullet {
	t.Helper()
	start := slices.IndexFunc(lines, func(l string) bool { return strings.TrimSpace(l) == "## Layout" })
	if start < 0 {
		t.Fatal(`README.md has no "## Layout" section`)
	}
	var out []layoutBullet
	for i := start + 1; i < len(lines) && !strings.HasPrefix(lines[i], "## "); i++ {
		l := lines[i]
		switch {
		case strings.HasPrefix(l, "- "):
			out = append(out, layoutBullet{line: i + 1, text: l[2:]})
		case strings.HasPrefix(l, "  ") && len(out) > 0 && strings.TrimSpace(l) != "":
			out[len(out)-1].text += " " + strings.TrimSpace(l)
		default:
			if len(out) > 0 && strings.TrimSpace(l) != "" {
				// A paragraph after the bullets ends them.
				return out
			}
		}
	}
	return out
}

// isPath reports whether a code span names a file or directory: it has a slash or ends in
// .go, and holds nothing a path in this repository would not (spaces, flags, calls).
func isPath(s string) bool {
	if strings.HasPrefix(s, "-") || strings.ContainsAny(s, " ()=,:<>") {
		return false
	}
	return strings.Contains(s, "/") || strings.HasSuffix(s, ".go")
}

// TestLayout checks the README's "## Layout": every file and directory it names exists,
// a bare file name counting as one in the directory its bullet begins with, and the s3io
// bullet names every non-test Go file of s3io/ (a pattern such as partbuf_*.go covers the
// files it matches).
func TestLayout(t *testing.T) {
	root := repoRoot(t)
	bullets := layoutBullets(t, readme(t))
	if len(bullets) == 0 {
		t.Fatal(`README.md's "## Layout" section has no bullets`)
	}
	var s3ioNames []string
	for _, b := range bullets {
		var base string // the directory the bullet is about: its first path
		for _, m := range codeSpan.FindAllStringSubmatch(b.text, -1) {
			p := m[1]
			if !isPath(p) {
				continue
			}
			rel := p
			if base == "" {
				base = strings.TrimSuffix(p, "/")
			} else if !strings.Contains(p, "/") {
				rel = path.Join(base, p) // a bare file name: in the bullet's directory
			}
			if base == "s3io" && !strings.Contains(p, "/") {
				s3ioNames = append(s3ioNames, p)
			}
			matches, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(strings.TrimSuffix(rel, "/"))))
			if err != nil || len(matches) == 0 {
				t.Errorf("README.md:%d: Layout names `%s` (%s), which does not exist", b.line, p, rel)
			}
		}
	}
	if len(s3ioNames) == 0 {
		t.Fatal("the Layout section has no bullet beginning with `s3io/` that names its files")
	}

	entries, err := os.ReadDir(filepath.Join(root, "s3io"))
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		named := slices.ContainsFunc(s3ioNames, func(pattern string) bool {
			ok, _ := path.Match(pattern, name)
			return ok
		})
		if !named {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		t.Errorf("the Layout section's s3io bullet does not name these non-test Go files of s3io/: %s", strings.Join(missing, ", "))
	}
}

// TestConfigTable checks that the "## Configuration" table has a row for every exported
// field of s3io.Config, with its valid values, and no row for a field that does not exist.
func TestConfigTable(t *testing.T) {
	lines := readme(t)
	start := slices.IndexFunc(lines, func(l string) bool { return strings.TrimSpace(l) == "## Configuration" })
	if start < 0 {
		t.Fatal(`README.md has no "## Configuration" section`)
	}
	documented := map[string]int{} // field → README line
	for i := start + 1; i < len(lines) && !strings.HasPrefix(lines[i], "## "); i++ {
		cells := strings.Split(lines[i], " | ")
		if !strings.HasPrefix(lines[i], "| `") || len(cells) < 4 {
			continue
		}
		for _, m := range codeSpan.FindAllStringSubmatch(cells[0], -1) {
			documented[m[1]] = i + 1
		}
		if strings.TrimSpace(cells[2]) == "" {
			t.Errorf("README.md:%d: the Configuration row of %s gives no valid values", i+1, cells[0][2:])
		}
	}
	fields := map[string]bool{}
	typ := reflect.TypeFor[s3io.Config]()
	for i := range typ.NumField() {
		if f := typ.Field(i); f.IsExported() {
			fields[f.Name] = true
			if _, ok := documented[f.Name]; !ok {
				t.Errorf("the Configuration table has no row for s3io.Config.%s", f.Name)
			}
		}
	}
	for name, line := range documented {
		if !fields[name] {
			t.Errorf("README.md:%d: the Configuration table documents %s, which s3io.Config does not have", line, name)
		}
	}
}

// TestAPITable checks that the "## API" section's tables name every exported identifier of
// package s3io (functions, types, constants, variables), and that the first column of each
// row names only identifiers that exist: go doc and the README show the same API.
func TestAPITable(t *testing.T) {
	exported := s3ioExported(t)
	lines := readme(t)
	start := slices.IndexFunc(lines, func(l string) bool { return strings.TrimSpace(l) == "## API" })
	if start < 0 {
		t.Fatal(`README.md has no "## API" section`)
	}
	leading := regexp.MustCompile(`^[A-Z][A-Za-z0-9]*`)
	named := map[string]bool{}
	for i := start + 1; i < len(lines) && !strings.HasPrefix(lines[i], "## "); i++ {
		if !strings.HasPrefix(lines[i], "| `") {
			continue
		}
		cells := strings.Split(lines[i], " | ")
		for c, cell := range cells {
			for _, m := range codeSpan.FindAllStringSubmatch(cell, -1) {
				id := leading.FindString(m[1])
				if id == "" {
					continue
				}
				named[id] = true
				if c == 0 && !exported[id] {
					t.Errorf("README.md:%d: the API table names `%s`, which package s3io does not export", i+1, id)
				}
			}
		}
	}
	var missing []string
	for id := range exported {
		if !named[id] {
			missing = append(missing, id)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("the API tables do not name these exported identifiers of s3io (document them, or unexport them): %s", strings.Join(missing, ", "))
	}
}

// s3ioExported returns the exported top-level identifiers of package s3io's non-test files.
func s3ioExported(t *testing.T) map[string]bool {
	t.Helper()
	dir := filepath.Join(repoRoot(t), "s3io")
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.IsExported() {
					out[d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch sp := spec.(type) {
					case *ast.TypeSpec:
						if sp.Name.IsExported() {
							out[sp.Name.Name] = true
						}
					case *ast.ValueSpec:
						for _, n := range sp.Names {
							if n.IsExported() {
								out[n.Name] = true
							}
						}
					}
				}
			}
		}
	}
	return out
}
