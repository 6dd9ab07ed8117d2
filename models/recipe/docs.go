package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"unicode"
)

// Pairs from software documentation installed on the machine, shaped like a
// request against a tool's description:
//   - man pages: the NAME line's description against the first paragraph of
//     DESCRIPTION;
//   - the Go standard library: an exported identifier's doc sentence against
//     the identifier split into words (ReadFile -> "read file") and its
//     package;
//   - Python modules: a function's or class's docstring against its name
//     split into words and its module.
// Each source is read from fixed roots in sorted order; the input identity
// is the file count and a hash over the sorted file names and contents.

var (
	manDirs   = []string{"/usr/share/man/man1", "/usr/share/man/man2", "/usr/share/man/man3", "/usr/share/man/man5", "/usr/share/man/man7", "/usr/share/man/man8"}
	pyRoots   = []string{"/usr/lib/python3.11", "/usr/lib/python3/dist-packages"}
	maxDocLen = 600 // characters kept of a description
)

// treeHash accumulates a source's identity: every file's name and the
// sha256 of its bytes, in the order read (sorted).
type treeHash struct {
	h     io.Writer
	sum   func() string
	files int
	bytes int
}

func newTreeHash() *treeHash {
	h := sha256.New()
	return &treeHash{h: h, sum: func() string { return hex.EncodeToString(h.Sum(nil)) }}
}

func (t *treeHash) add(name string, data []byte) {
	s := sha256.Sum256(data)
	fmt.Fprintf(t.h, "%s\x00%x\n", name, s)
	t.files++
	t.bytes += len(data)
}

// splitIdent splits an identifier into lower-case words: camelCase,
// PascalCase, acronyms, digits and underscores (GetURLPath2 -> "get url
// path 2").
func splitIdent(s string) string {
	var words []string
	var cur []rune
	rs := []rune(s)
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = nil
		}
	}
	for i, r := range rs {
		switch {
		case r == '_' || r == '-' || r == '.':
			flush()
			continue
		case unicode.IsUpper(r):
			prevLower := i > 0 && (unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1]))
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			prevUpper := i > 0 && unicode.IsUpper(rs[i-1])
			if prevLower || (prevUpper && nextLower) {
				flush()
			}
		case unicode.IsDigit(r):
			if i > 0 && !unicode.IsDigit(rs[i-1]) {
				flush()
			}
		default:
			if i > 0 && unicode.IsDigit(rs[i-1]) {
				flush()
			}
		}
		cur = append(cur, r)
	}
	flush()
	return strings.Join(words, " ")
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	cut := strings.LastIndexByte(s[:n], ' ')
	if cut < n/2 {
		cut = n
	}
	return s[:cut]
}

// ---- Go standard library ----

// goDocPairs pairs every exported function, method and type of the Go
// standard library that has a doc comment: its first sentence (without the
// leading identifier) against the identifier in words and the package name.
func goDocPairs() ([]Pair, []Input, error) {
	root := filepath.Join(runtime.GOROOT(), "src")
	if _, err := os.Stat(root); err != nil {
		return nil, nil, err
	}
	files, err := goSourceFiles(root)
	if err != nil {
		return nil, nil, err
	}
	th := newTreeHash()
	gd := goDocs{seen: map[string]bool{}}
	fset := token.NewFileSet()
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, nil, err
		}
		rel, _ := filepath.Rel(root, path)
		th.add(filepath.ToSlash(rel), data)
		f, err := parser.ParseFile(fset, path, data, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			continue
		}
		gd.file(f, rel)
	}
	return gd.pairs, []Input{{Source: "godoc", Path: root + " (" + runtime.Version() + ")", SHA256: th.sum(), Bytes: th.bytes, Files: th.files, Pairs: len(gd.pairs)}}, nil
}

// goSourceFiles returns the non-test Go files under root, sorted, without
// testdata, vendor and folders starting with . or _.
func goSourceFiles(root string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == "testdata" || n == "vendor" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	return files, nil
}

// goDocs collects goDocPairs' pairs, each text pair once.
type goDocs struct {
	pairs []Pair
	seen  map[string]bool
	dp    doc.Package
}

// file adds the pairs of one parsed file at rel (from GOROOT/src): the
// package's doc comment, once per folder, and each exported function,
// method and type with a doc comment. Commands and test packages add none.
func (gd *goDocs) file(f *ast.File, rel string) {
	pkg := f.Name.Name
	if pkg == "main" || strings.HasSuffix(pkg, "_test") {
		return
	}
	dir := filepath.ToSlash(filepath.Dir(rel))
	group := "go:" + dir
	if f.Doc != nil {
		s := gd.dp.Synopsis(f.Doc.Text())
		s = strings.TrimPrefix(s, "Package "+pkg+" ")
		if len(s) >= 15 && !gd.seen["pkg\x00"+dir] {
			gd.seen["pkg\x00"+dir] = true
			gd.pairs = append(gd.pairs, Pair{Source: "godoc", Group: group, A: s, B: strings.ReplaceAll(dir, "/", " ")})
		}
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if ident, ok := funcIdent(d); ok {
				gd.add(group, ident, pkg, d.Doc.Text())
			}
		case *ast.GenDecl:
			if d.Tok != token.TYPE {
				continue
			}
			for _, sp := range d.Specs {
				ts := sp.(*ast.TypeSpec)
				cg := ts.Doc
				if cg == nil && len(d.Specs) == 1 {
					cg = d.Doc
				}
				if !ts.Name.IsExported() || cg == nil {
					continue
				}
				gd.add(group, ts.Name.Name, pkg, cg.Text())
			}
		}
	}
}

// funcIdent returns the identifier a function's pair is about, Name or
// Type.Name for a method; ok is false for a function that is not exported,
// has no doc comment, or is a method of a type that is not exported.
func funcIdent(d *ast.FuncDecl) (ident string, ok bool) {
	if !d.Name.IsExported() || d.Doc == nil {
		return "", false
	}
	ident = d.Name.Name
	if d.Recv != nil && len(d.Recv.List) == 1 {
		t := d.Recv.List[0].Type
		if s, ok := t.(*ast.StarExpr); ok {
			t = s.X
		}
		if ix, ok := t.(*ast.IndexExpr); ok {
			t = ix.X
		}
		if ix, ok := t.(*ast.IndexListExpr); ok {
			t = ix.X
		}
		id, ok := t.(*ast.Ident)
		if !ok || !id.IsExported() {
			return "", false
		}
		ident = id.Name + "." + ident
	}
	return ident, true
}

// add pairs the first sentence of comment, without a leading ident (or
// the method's name), against ident in words and pkg; a sentence that is
// short or deprecated, or a pair already seen, adds nothing.
func (gd *goDocs) add(group, ident, pkg, comment string) {
	s := gd.dp.Synopsis(comment)
	if s == "" || strings.HasPrefix(s, "Deprecated") {
		return
	}
	if rest, ok := strings.CutPrefix(s, ident+" "); ok {
		s = rest
	} else if i := strings.IndexByte(ident, '.'); i > 0 {
		if rest, ok := strings.CutPrefix(s, ident[i+1:]+" "); ok {
			s = rest
		}
	}
	if len(s) < 15 {
		return
	}
	b := splitIdent(ident) + " " + pkg
	key := strings.ToLower(s + "\x00" + b)
	if gd.seen[key] {
		return
	}
	gd.seen[key] = true
	gd.pairs = append(gd.pairs, Pair{Source: "godoc", Group: group, A: s, B: b})
}

// ---- Python modules ----

var (
	pyDef    = regexp.MustCompile(`^(\s*)(?:async\s+)?(def|class)\s+([A-Za-z][A-Za-z0-9_]*)\s*[(:]`)
	pyDocBeg = regexp.MustCompile(`^\s*[rRuU]?("""|''')`)
)

// pyDocPairs pairs public functions, methods and classes of the Python
// standard library and the Debian-packaged Python modules with their
// docstring's first paragraph against the name in words (methods with
// their class) and the module.
func pyDocPairs() ([]Pair, []Input, error) {
	var pairs []Pair
	var inputs []Input
	seen := map[string]bool{}
	for _, root := range pyRoots {
		var files []string
		filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if d.IsDir() {
				n := d.Name()
				if path != root && (n == "test" || n == "tests" || n == "testing" || n == "__pycache__" || n == "site-packages" || n == "dist-packages" || strings.HasPrefix(n, ".") || strings.HasSuffix(n, "-info")) {
					return filepath.SkipDir
				}
				return nil
			}
			if d.Type().IsRegular() && strings.HasSuffix(path, ".py") && !strings.HasPrefix(d.Name(), "test_") {
				files = append(files, path)
			}
			return nil
		})
		sort.Strings(files)
		th := newTreeHash()
		n := 0
		for _, path := range files {
			data, err := os.ReadFile(path)
			if err != nil {
				continue
			}
			rel, _ := filepath.Rel(root, path)
			th.add(filepath.ToSlash(rel), data)
			mod := strings.TrimSuffix(filepath.Base(path), ".py")
			if mod == "__init__" {
				mod = filepath.Base(filepath.Dir(path))
			}
			mod = strings.TrimLeft(mod, "_")
			group := "py:" + filepath.ToSlash(rel)
			for _, it := range pyDocs(string(data)) {
				b := splitIdent(it.name)
				if it.class != "" {
					b = splitIdent(it.class) + " " + b
				}
				b += " " + splitIdent(mod)
				key := strings.ToLower(it.doc + "\x00" + b)
				if seen[key] || seen[strings.ToLower(it.doc)] {
					continue
				}
				seen[key] = true
				seen[strings.ToLower(it.doc)] = true
				pairs = append(pairs, Pair{Source: "pydoc", Group: group, A: it.doc, B: b})
				n++
			}
		}
		inputs = append(inputs, Input{Source: "pydoc", Path: root, SHA256: th.sum(), Bytes: th.bytes, Files: th.files, Pairs: n})
	}
	return pairs, inputs, nil
}

type pyItem struct{ class, name, doc string }

var pySig = regexp.MustCompile(`^[\w.]+\(.*\)(\s*->.*)?$`)

// pyDocs scans Python source for def/class statements followed by a
// docstring; anything it cannot read is skipped.
func pyDocs(src string) []pyItem {
	lines := strings.Split(src, "\n")
	var out []pyItem
	type cls struct {
		indent int
		name   string
	}
	var classes []cls
	for i := 0; i < len(lines); i++ {
		m := pyDef.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		indent := len(strings.ReplaceAll(m[1], "\t", "        "))
		for len(classes) > 0 && classes[len(classes)-1].indent >= indent {
			classes = classes[:len(classes)-1]
		}
		kind, name := m[2], m[3]
		owner := ""
		if len(classes) > 0 {
			owner = classes[len(classes)-1].name
		}
		if kind == "class" {
			classes = append(classes, cls{indent, name})
		}
		j, ok := pySignatureEnd(lines, i)
		if !ok {
			continue
		}
		d, ok := pyDocstring(lines, j+1)
		if !ok {
			continue
		}
		if strings.HasPrefix(name, "_") || (owner != "" && strings.HasPrefix(owner, "_")) {
			continue
		}
		if len(d) < 15 || pySig.MatchString(d) || strings.Contains(d, ">>>") || strings.HasPrefix(strings.ToLower(d), "deprecated") {
			continue
		}
		out = append(out, pyItem{class: owner, name: name, doc: clip(d, maxDocLen)})
	}
	return out
}

// pySignatureEnd returns the line that ends the signature of the def or
// class statement at line i: the first, within 40 lines, that ends in ':'
// with the brackets balanced (comments aside). ok is false when there is
// none, or it is the last line.
func pySignatureEnd(lines []string, i int) (j int, ok bool) {
	depth := 0
	for j = i; j < len(lines) && j < i+40; j++ {
		l := lines[j]
		if k := strings.Index(l, "#"); k >= 0 && !strings.ContainsAny(l[:k], `"'`) {
			l = l[:k]
		}
		depth += strings.Count(l, "(") + strings.Count(l, "[") + strings.Count(l, "{")
		depth -= strings.Count(l, ")") + strings.Count(l, "]") + strings.Count(l, "}")
		if depth <= 0 && strings.HasSuffix(strings.TrimSpace(l), ":") {
			break
		}
	}
	if j+1 >= len(lines) || j >= i+40 {
		return j, false
	}
	return j, true
}

// pyDocstring returns the first paragraph of the docstring that opens on
// the first non-blank line from line k, read over at most 60 lines, its
// lines joined by spaces; ok is false when no docstring opens there.
func pyDocstring(lines []string, k int) (string, bool) {
	for k < len(lines) && strings.TrimSpace(lines[k]) == "" {
		k++
	}
	if k >= len(lines) {
		return "", false
	}
	dm := pyDocBeg.FindStringSubmatchIndex(lines[k])
	if dm == nil {
		return "", false
	}
	quote := lines[k][dm[2]:dm[3]]
	rest := lines[k][dm[3]:]
	var para []string
	done := false
	for l := k; l < len(lines) && l < k+60 && !done; l++ {
		t := rest
		if l > k {
			t = lines[l]
		}
		if e := strings.Index(t, quote); e >= 0 {
			t, done = t[:e], true
		}
		t = strings.TrimSpace(t)
		if t == "" {
			if len(para) > 0 {
				break
			}
			continue
		}
		para = append(para, t)
	}
	return strings.Join(para, " "), true
}
