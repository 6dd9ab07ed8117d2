package main

import (
	"bytes"
	"compress/gzip"
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

// ---- man pages ----

var (
	roffFont   = regexp.MustCompile(`\\f(\[[^\]]*\]|\(..|.)`)
	roffSize   = regexp.MustCompile(`\\s[+-]?\d+|\\s\(\d\d|\\s\[[^\]]*\]`)
	roffString = regexp.MustCompile(`\\\*(\[[^\]]*\]|\(..|.)`)
	roffNamed  = regexp.MustCompile(`\\(\[[^\]]*\]|\(..)`)
	roffOther  = regexp.MustCompile(`\\[kwhvnoXlLbDRZ]'[^']*'|\\[kn]\[[^\]]*\]|\\[kn].|\\[&|^~0c%:!)/,dtua{}]`)
	roffNames  = map[string]string{"em": " - ", "en": "-", "hy": "-", "mi": "-", "lq": `"`, "rq": `"`, "oq": "'", "cq": "'", "aq": "'", "dq": `"`, "bu": " ", "co": "(c)", "rg": "(R)", "tm": "(TM)", "ga": "`", "ti": "~", "ha": "^", "rs": `\`, "sl": "/", "lh": " ", "rh": " ", "Fo": `"`, "Fc": `"`}
)

// roffText turns one line of roff text into plain text.
func roffText(s string) string {
	if i := strings.Index(s, `\"`); i >= 0 {
		s = s[:i]
	}
	s = strings.ReplaceAll(s, `\\`, "\x00")
	s = roffFont.ReplaceAllString(s, "")
	s = roffSize.ReplaceAllString(s, "")
	s = roffString.ReplaceAllString(s, "")
	s = roffNamed.ReplaceAllStringFunc(s, func(m string) string {
		name := strings.Trim(m[1:], "[]()")
		if r, ok := roffNames[name]; ok {
			return r
		}
		return " "
	})
	s = strings.ReplaceAll(s, `\-`, "-")
	s = strings.ReplaceAll(s, `\e`, `\`)
	s = strings.ReplaceAll(s, `\ `, " ")
	s = strings.ReplaceAll(s, `\'`, "'")
	s = strings.ReplaceAll(s, "\\`", "`")
	s = strings.ReplaceAll(s, `\.`, ".")
	s = roffOther.ReplaceAllString(s, "")
	s = strings.ReplaceAll(s, "\x00", `\`)
	return s
}

// macroArgs splits a macro line's arguments, honouring double quotes.
func macroArgs(s string) []string {
	var out []string
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimSpace(s) {
		if s[0] == '"' {
			end := strings.IndexByte(s[1:], '"')
			if end < 0 {
				out = append(out, s[1:])
				break
			}
			out = append(out, s[1:1+end])
			s = s[2+end:]
			continue
		}
		end := strings.IndexAny(s, " \t")
		if end < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	return out
}

// manPage extracts the NAME description and the first paragraph of
// DESCRIPTION of one roff (man or mdoc) page.
func manPage(src string) (names, desc, body string) {
	var r manReader
	for _, line := range strings.Split(src, "\n") {
		r.line(strings.TrimRight(line, " \t\r"))
	}
	r.brk()
	return r.result()
}

// manReader is manPage's state while it reads a page line by line.
type manReader struct {
	section  string   // the section being read, upper case; DONE after the first DESCRIPTION list
	nameText []string // the NAME section's text
	paras    []string // DESCRIPTION's paragraphs read
	cur      []string // the lines of the paragraph being read
	inTable  bool     // between .TS and .TE
}

// brk ends the paragraph being read.
func (r *manReader) brk() {
	if len(r.cur) > 0 {
		r.paras = append(r.paras, strings.Join(r.cur, " "))
		r.cur = nil
	}
}

// line reads one line: tables are skipped, a request or macro changes
// the state or yields text, an empty line ends a paragraph, and text goes
// to the NAME or the DESCRIPTION section being read.
func (r *manReader) line(line string) {
	if r.inTable {
		if strings.HasPrefix(line, ".TE") {
			r.inTable = false
		}
		return
	}
	text := ""
	if strings.HasPrefix(line, ".") || strings.HasPrefix(line, "'") {
		var ok bool
		if text, ok = r.request(line[1:]); !ok {
			return
		}
	} else {
		if line == "" {
			r.brk()
			return
		}
		text = roffText(line)
	}
	text = strings.TrimSpace(text)
	if text == "" {
		return
	}
	switch r.section {
	case "NAME":
		r.nameText = append(r.nameText, text)
	case "DESCRIPTION":
		r.cur = append(r.cur, text)
	}
}

// request applies one request or macro line (without its leading . or ')
// and returns the text it yields; ok is false for the requests and macros
// that yield none (sections, paragraphs, tables, comments and the rest).
func (r *manReader) request(line string) (text string, ok bool) {
	m := strings.TrimSpace(line)
	name, rest, _ := strings.Cut(m, " ")
	name = strings.TrimSpace(name)
	switch name {
	case "SH", "Sh", "SS", "Ss":
		if name == "SH" || name == "Sh" {
			r.section = strings.ToUpper(strings.Join(macroArgs(roffText(rest)), " "))
		}
		r.brk()
		return "", false
	case "PP", "P", "LP", "Pp", "TP", "IP", "HP", "It", "sp", "Bl", "Bd":
		r.brk()
		if name == "IP" && r.section == "DESCRIPTION" {
			if len(r.paras) > 0 || len(r.cur) > 0 {
				r.section = "DONE"
			}
		}
		return "", false
	case "TS":
		r.inTable = true
		r.brk()
		return "", false
	case "Nm":
		if r.section == "NAME" {
			r.nameText = append(r.nameText, strings.Join(macroArgs(roffText(rest)), " "))
		} else if r.section == "DESCRIPTION" {
			text = strings.Join(macroArgs(roffText(rest)), " ")
		}
		return text, true
	case "Nd":
		if r.section == "NAME" {
			r.nameText = append(r.nameText, "-", roffText(rest))
		}
		return "", false
	case "B", "I", "SM", "SB", "BR", "RB", "IR", "RI", "BI", "IB", "Ar", "Fl", "Cm", "Pa", "Em", "Sy", "Li", "Dq", "Qq", "Sq", "Ql", "Xr", "Ev", "Va", "Fn", "Fa", "Ic", "Dv", "Er", "Tn", "Ux", "Ox", "Nx", "Fx", "Bx", "Lk", "Mt", "Ad", "An", "Lb", "St", "Ft", "Vt", "Ms", "Pq", "Op", "No", "Ns", "Ta", "Aq", "Brq", "Bq", "Ao", "Ac", "Po", "Pc", "Qo", "Qc", "Do", "Dc", "So", "Sc", "Eo", "Ec", "Oo", "Oc", "Bo", "Bc", "UR", "UE", "MT", "ME", "Nd2":
		return fontText(name, rest), true
	default:
		return "", false // other requests and macros, and comments
	}
}

// fontText returns the words of a font or inline macro's arguments,
// without the punctuation and mdoc calls among them (but keeping . , ; :);
// the alternating-font requests (BR, IR, ...) join their arguments.
func fontText(name, rest string) string {
	args := macroArgs(roffText(rest))
	var keep []string
	for _, a := range args {
		if len(a) <= 2 && strings.ContainsAny(a, ".,;:()[]|") || isMdocCall(a) {
			if a == "." || a == "," || a == ";" || a == ":" {
				keep = append(keep, a)
			}
			continue
		}
		keep = append(keep, a)
	}
	sep := " "
	if len(name) == 2 && (name[0] == 'B' || name[0] == 'R' || name[0] == 'I') && strings.ToUpper(name) == name {
		sep = "" // alternating fonts join their arguments
	}
	return strings.Join(keep, sep)
}

// result splits the NAME text into names and description at its dash, and
// returns them with the first DESCRIPTION paragraph (with the next when it
// is very short), clipped.
func (r *manReader) result() (names, desc, body string) {
	nl := strings.Join(strings.Fields(strings.Join(r.nameText, " ")), " ")
	for _, sep := range []string{" - ", " -- ", " — "} {
		if a, b, ok := strings.Cut(nl, sep); ok {
			names, desc = strings.TrimSpace(a), strings.TrimSpace(b)
			break
		}
	}
	// The first paragraph, with the next one when it is very short.
	var b strings.Builder
	for _, p := range r.paras {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(p)
		if b.Len() >= 80 {
			break
		}
	}
	return names, desc, clip(b.String(), maxDocLen)
}

func isMdocCall(a string) bool {
	switch a {
	case "Ar", "Fl", "Cm", "Pa", "Em", "Sy", "Li", "Xr", "Ev", "Va", "Nm", "Ns", "Pq", "Op", "Oo", "Oc", "Dq", "Qq", "Sq", "Ql", "No", "Ic", "Dv", "Er", "Fn", "Fa":
		return true
	}
	return false
}

var (
	manTrack     = regexp.MustCompile(`\((ALPHA|BETA|DEPRECATED|PREVIEW)\)\s*`)
	manTrackWord = regexp.MustCompile(` (alpha|beta|preview) `)
)

var manBad = regexp.MustCompile(`[\\]|^\W*$`)

// manPairs reads the man pages of sections 1, 2, 3, 5, 7 and 8 (English,
// the top-level directories): "name: NAME description" against the first
// paragraph of DESCRIPTION.
func manPairs() ([]Pair, []Input, error) {
	var pairs []Pair
	var inputs []Input
	seen := map[string]bool{}
	for _, dir := range manDirs {
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		th := newTreeHash()
		n := 0
		for _, e := range ents { // ReadDir sorts by name
			if !e.Type().IsRegular() {
				continue // symbolic links repeat another page
			}
			path := filepath.Join(dir, e.Name())
			data, err := readMaybeGzip(path)
			if err != nil {
				continue
			}
			th.add(e.Name(), data)
			src := string(data)
			if strings.HasPrefix(src, ".so ") {
				continue
			}
			names, desc, body := manPage(src)
			if desc == "" || len(body) < 40 || len(desc) < 8 || manBad.MatchString(desc) || strings.Contains(body, `\`) {
				continue
			}
			name, _, _ := strings.Cut(names, ",")
			name = strings.TrimSpace(name)
			// Release tracks of one command (gcloud alpha/beta) repeat
			// each other: one group, and one page per NAME description.
			body = strings.TrimSpace(manTrack.ReplaceAllString(body, ""))
			group := "man:" + strings.ToLower(strings.Join(strings.Fields(manTrackWord.ReplaceAllString(" "+name+" ", " ")), " "))
			key := strings.ToLower(desc)
			if name == "" || len(body) < 40 || seen[key] {
				continue
			}
			seen[key] = true
			pairs = append(pairs, Pair{Source: "man", Group: group, A: desc, B: name + ": " + body})
			n++
		}
		inputs = append(inputs, Input{Source: "man", Path: dir, SHA256: th.sum(), Bytes: th.bytes, Files: th.files, Pairs: n})
	}
	return pairs, inputs, nil
}

func readMaybeGzip(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil || !strings.HasSuffix(path, ".gz") {
		return data, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
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
