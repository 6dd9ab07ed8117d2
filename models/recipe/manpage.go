package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Man pages, one of the documentation sources of docs.go: roff (man and
// mdoc) read line by line for the NAME description and the first
// paragraph of DESCRIPTION.

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
