// Package readme tests that README.md works as written: every Go block is a whole file that
// compiles against this module, the quick-start pipeline is complete, the paths the Layout
// section names exist, and the relative links of the README and docs/ lead somewhere. The
// API and every Config field are documented in godoc only, so nothing here compares them.
package readme

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
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
// a bare file name counting as one in the directory its bullet begins with, the s3io
// bullet names every non-test Go file of s3io/ (a pattern such as partbuf_*.go covers the
// files it matches), and every package directory under s3io/internal/ is named.
func TestLayout(t *testing.T) {
	root := repoRoot(t)
	bullets := layoutBullets(t, readme(t))
	if len(bullets) == 0 {
		t.Fatal(`README.md's "## Layout" section has no bullets`)
	}
	var s3ioNames []string
	namedDirs := map[string]bool{} // every path named, without a trailing slash
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
			namedDirs[strings.TrimSuffix(rel, "/")] = true
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

	internal, err := os.ReadDir(filepath.Join(root, "s3io", "internal"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, e := range internal {
		if dir := "s3io/internal/" + e.Name(); e.IsDir() && !namedDirs[dir] {
			t.Errorf("the Layout section has no bullet for the package `%s/`", dir)
		}
	}
}

// mdLink is an inline Markdown link or image: its target, without a title.
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestLinks checks that every relative link of README.md and docs/*.md leads to a file of
// the repository and, with a #fragment, to a heading of that file, as GitHub renders them;
// and that the README links both pages of docs/.
func TestLinks(t *testing.T) {
	root := repoRoot(t)
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append([]string{filepath.Join(root, "README.md")}, pages...)
	linked := map[string]bool{} // repository paths the README links
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, page)
		for i, l := range strings.Split(string(data), "\n") {
			for _, m := range mdLink.FindAllStringSubmatch(l, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, fragment, _ := strings.Cut(target, "#")
				dest := page
				if file != "" {
					dest = filepath.Join(filepath.Dir(page), filepath.FromSlash(file))
				}
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s:%d: the link %s leads to no file", rel, i+1, target)
					continue
				}
				if destRel, err := filepath.Rel(root, dest); err == nil && rel == "README.md" {
					linked[filepath.ToSlash(destRel)] = true
				}
				if fragment != "" && !slices.Contains(anchors(t, dest), fragment) {
					t.Errorf("%s:%d: the link %s names no heading of %s", rel, i+1, target, filepath.Base(dest))
				}
			}
		}
	}
	for _, want := range []string{"docs/design.md", "docs/performance.md"} {
		if !linked[want] {
			t.Errorf("README.md does not link %s", want)
		}
	}
}

// anchors returns the fragment GitHub gives each heading of a Markdown file: lowercased,
// spaces as hyphens, punctuation other than hyphens and underscores dropped, and -1, -2...
// after a repeated one. Code blocks are skipped.
func anchors(t *testing.T, file string) []string {
	t.Helper()
	var out []string
	seen := map[string]int{}
	for _, heading := range headings(t, file) {
		var b strings.Builder
		for _, r := range strings.ToLower(heading) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		slug := b.String()
		if n := seen[slug]; n > 0 {
			out = append(out, slug+"-"+strconv.Itoa(n))
		} else {
			out = append(out, slug)
		}
		seen[slug]++
	}
	return out
}

// headings returns the text of each heading of a Markdown file, in order; code blocks are
// skipped.
func headings(t *testing.T, file string) []string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	fenced := false
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(strings.TrimLeft(l, " "), "```") {
			fenced = !fenced
		}
		if !fenced && strings.HasPrefix(l, "#") {
			out = append(out, strings.TrimSpace(strings.TrimLeft(l, "#")))
		}
	}
	return out
}

// sectionRef is a reference in a Go comment to a section of the README or of docs/, written
// (README, "Heading") or (docs/design.md, "Heading"); comment lines are joined first, so a
// heading may wrap.
var sectionRef = regexp.MustCompile(`(README|docs/[\w.-]+\.md|design\.md|performance\.md), "([^"]+)"`)

// looseSectionRef is a section named another way, which TestCommentSections would not check.
var looseSectionRef = regexp.MustCompile(`"[^"\n]+" (in|of) the README`)

// commentJoin joins a comment's wrapped lines: a newline, the indentation and the next
// line's "//".
var commentJoin = regexp.MustCompile(`\n[ \t]*// ?`)

// TestCommentSections checks that every (FILE, "Heading") a Go comment or a Markdown page of
// the repository points at is a heading of that file, and that no comment uses another way of naming a
// section, which this test would not check.
func TestCommentSections(t *testing.T) {
	root := repoRoot(t)
	cache := map[string][]string{}
	headingsOf := func(file string) []string {
		if _, ok := cache[file]; !ok {
			cache[file] = headings(t, filepath.Join(root, filepath.FromSlash(file)))
		}
		return cache[file]
	}
	_, self, _, _ := runtime.Caller(0)
	refs := 0
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != root || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		md := strings.HasSuffix(path, ".md") && !strings.Contains(path, string(filepath.Separator)+"testdata")
		if d.IsDir() || !strings.HasSuffix(path, ".go") && !md || path == self {
			return nil // this file writes the pattern, not a reference
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		text := commentJoin.ReplaceAllString(string(data), " ")
		if md {
			// A Markdown page wraps its references too; it names itself by its path.
			text = strings.ReplaceAll(strings.ReplaceAll(text, "\n  ", " "), "\n", " ")
		}
		for _, m := range sectionRef.FindAllStringSubmatch(text, -1) {
			refs++
			file := m[1]
			if file == "README" {
				file = "README.md"
			}
			if md && !strings.Contains(file, "/") && filepath.Dir(rel) == "docs" {
				file = "docs/" + file // a docs page naming its sibling
			}
			if !slices.Contains(headingsOf(file), m[2]) {
				t.Errorf("%s: a comment points at %s, %q: no such heading", rel, m[1], m[2])
			}
		}
		if m := looseSectionRef.FindString(text); m != "" {
			t.Errorf("%s: %q: write a section reference as (README, \"Heading\"), which this test checks", rel, m)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if refs == 0 {
		t.Error("no comment points at a section: the pattern no longer matches how they are written")
	}
}

// TestTransformLists keeps the lists of transforms in step with s3io's exported functions:
// every function that takes a beam.Scope, and PlanDescriptors, is named in the "Which
// transform" list of the package doc and the README's table; and the transforms said to fail
// the job on a Failure (package doc, README's "When something fails") are exactly those
// whose body calls failOnFailures.
func TestTransformLists(t *testing.T) {
	root := repoRoot(t)
	fset := token.NewFileSet()
	paths, err := filepath.Glob(filepath.Join(root, "s3io", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var transforms, failing []string
	var docText string
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if f.Doc != nil {
			docText += f.Doc.Text()
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !fn.Name.IsExported() {
				continue
			}
			params := fn.Type.Params.List
			scoped := len(params) > 0 && types.ExprString(params[0].Type) == "beam.Scope"
			if !scoped && fn.Name.Name != "PlanDescriptors" {
				continue
			}
			transforms = append(transforms, fn.Name.Name)
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if c, ok := n.(*ast.CallExpr); ok {
					if id, ok := c.Fun.(*ast.Ident); ok && id.Name == "failOnFailures" {
						failing = append(failing, fn.Name.Name)
					}
				}
				return true
			})
		}
	}
	slices.Sort(transforms)
	slices.Sort(failing)
	if len(transforms) < 10 || len(failing) == 0 {
		t.Fatalf("found %d transforms, %d failing the job: the parse no longer sees them", len(transforms), len(failing))
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := func(text, from, to string) string {
		_, after, ok := strings.Cut(text, from)
		if !ok {
			t.Fatalf("no %q", from)
		}
		before, _, _ := strings.Cut(after, to)
		return before
	}
	names := regexp.MustCompile(`\b(Read\w*|Plan\w*|Except)\b`)
	listed := func(text string) []string {
		var out []string
		for _, n := range names.FindAllString(text, -1) {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
		slices.Sort(out)
		return out
	}
	// The doc's list names a WithFailures variant as "X ... have WithFailures variants".
	docList := section(docText, "Which transform\n", "Guarantees\n")
	for _, tr := range transforms {
		base := strings.TrimSuffix(tr, "WithFailures")
		if !slices.Contains(listed(docList), tr) && !(base != tr && slices.Contains(listed(docList), base) && strings.Contains(docList, "WithFailures")) {
			t.Errorf("the package doc's \"Which transform\" does not name %s", tr)
		}
		if !slices.Contains(listed(section(string(readme), "## Which transform", "\n## ")), tr) {
			t.Errorf("the README's \"Which transform\" does not name %s", tr)
		}
	}
	for where, text := range map[string]string{
		"the package doc": section(docText, "with a Reason.", "then fail the job"),
		"the README":      section(string(readme), "**Fail by default.**", "then fail the job"),
	} {
		if got := listed(text); !slices.Equal(got, failing) {
			t.Errorf("%s says %v fail the job on a Failure; the transforms calling failOnFailures are %v", where, got, failing)
		}
	}
}

// TestReadPathMap checks docs/design.md's "Map of the read path": it names files, and every
// one it names (a pattern such as framers*.go matching at least one) is in the tree.
func TestReadPathMap(t *testing.T) {
	root := repoRoot(t)
	data, err := os.ReadFile(filepath.Join(root, "docs", "design.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	start := slices.IndexFunc(lines, func(l string) bool { return l == "### Map of the read path" })
	if start < 0 {
		t.Fatal(`docs/design.md has no "### Map of the read path" section`)
	}
	named := 0
	for i := start + 1; i < len(lines) && !strings.HasPrefix(lines[i], "#"); i++ {
		for _, m := range codeSpan.FindAllStringSubmatch(lines[i], -1) {
			p := m[1]
			if !isPath(p) {
				continue
			}
			named++
			matches, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(p)))
			if err != nil || len(matches) == 0 {
				t.Errorf("docs/design.md:%d names %s, which is not in the tree", i+1, p)
			}
		}
	}
	if named < 10 {
		t.Errorf(`docs/design.md's "Map of the read path" names %d files; want the read path's files`, named)
	}
}

// fileBlock is a README code block that shows a file of the repository: the whole file
// (<!-- file: PATH -->) or a contiguous part of it (<!-- excerpt: PATH -->), on the line
// before the block.
var fileBlock = regexp.MustCompile("(?s)<!-- (file|excerpt): (\\S+) -->\n```[a-z]*\n(.*?)```")

// TestFileBlocks checks that every block marked as a file's is that file, or a part of it,
// as it is: the programs the README shows are the ones the tests run.
func TestFileBlocks(t *testing.T) {
	root := repoRoot(t)
	text := strings.Join(readme(t), "\n")
	blocks := fileBlock.FindAllStringSubmatch(text, -1)
	if len(blocks) == 0 {
		t.Fatal("no <!-- file: --> or <!-- excerpt: --> block: the pattern no longer matches the README")
	}
	for _, m := range blocks {
		kind, rel, block := m[1], m[2], m[3]
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			t.Errorf("README shows %s: %v", rel, err)
			continue
		}
		switch {
		case kind == "file" && string(data) != block:
			t.Errorf("README's block for %s is not the file as it is", rel)
		case kind == "excerpt" && !strings.Contains(string(data), block):
			t.Errorf("README's excerpt of %s is not a contiguous part of the file as it is", rel)
		}
	}
}
