package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// A Pair is one training example: two texts that should embed close to each
// other. Group ties together pairs that must land in the same split (Debian
// packages built from one source share their long description's opening).
type Pair struct {
	Source string `json:"src"`
	Group  string `json:"g"`
	A      string `json:"a"`
	B      string `json:"b"`
}

// Input records one file the recipe read, for MODEL.md.
type Input struct {
	Source string `json:"source"`
	Path   string `json:"path"`
	SHA256 string `json:"sha256"` // of the bytes as parsed (decompressed)
	Bytes  int    `json:"bytes"`
	Files  int    `json:"files,omitempty"` // for a directory tree: files hashed
	Pairs  int    `json:"pairs"`
}

// Default input locations; every one comes from a Debian package or from the
// apt lists that `apt-get update -o Acquire::Languages=en` writes.
const (
	aptListsDir = "/var/lib/apt/lists"
	wordnetDir  = "/usr/share/wordnet"
	foldocDict  = "/usr/share/dictd/foldoc.dict.dz"
)

// allSources are the sources the data step can read, in the order their
// pairs are written; defaultSources are the ones it reads by default.
var (
	allSources     = []string{"debian", "appstream", "wordnet", "foldoc", "man", "godoc", "pydoc"}
	defaultSources = "debian,appstream,wordnet,foldoc,man,godoc,pydoc"
)

// collectData reads the named sources and returns the pairs in a fixed order.
func collectData(names string) ([]Pair, []Input, error) {
	want := map[string]bool{}
	for _, n := range strings.Split(names, ",") {
		if n = strings.TrimSpace(n); n != "" {
			if !slices.Contains(allSources, n) {
				return nil, nil, fmt.Errorf("unknown source %q (want some of %s)", n, strings.Join(allSources, ","))
			}
			want[n] = true
		}
	}
	var pairs []Pair
	var inputs []Input
	type source struct {
		name string
		fn   func() ([]Pair, []Input, error)
	}
	for _, s := range []source{
		{"debian", debianPairs},
		{"appstream", appstreamPairs},
		{"wordnet", wordnetPairs},
		{"foldoc", foldocPairs},
		{"man", manPairs},
		{"godoc", goDocPairs},
		{"pydoc", pyDocPairs},
	} {
		if !want[s.name] {
			continue
		}
		p, in, err := s.fn()
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", s.name, err)
		}
		pairs = append(pairs, p...)
		inputs = append(inputs, in...)
	}
	return pairs, inputs, nil
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// aptCat returns an apt list file decompressed, through apt's own helper,
// which knows every compression apt uses (lz4, xz, gz, zstd).
func aptCat(path string) ([]byte, error) {
	out, err := exec.Command("/usr/lib/apt/apt-helper", "cat-file", path).Output()
	if err != nil {
		return nil, fmt.Errorf("apt-helper cat-file %s: %w", path, err)
	}
	return out, nil
}

// debianPairs pairs each package's one-line synopsis with its long
// description, from the Translation-en indexes.
func debianPairs() ([]Pair, []Input, error) {
	files, _ := filepath.Glob(filepath.Join(aptListsDir, "*_i18n_Translation-en*"))
	sort.Strings(files)
	if len(files) == 0 {
		return nil, nil, errors.New("no Translation-en index in " + aptListsDir + ": run apt-get update -o Acquire::Languages=en")
	}
	seenPkg := map[string]bool{}
	seenDesc := map[string]bool{}
	return aptPairs("debian", files, func(data []byte) []Pair {
		var pairs []Pair
		for _, rec := range bytes.Split(data, []byte("\n\n")) {
			pkg, synopsis, long := parseTranslation(string(rec))
			if pkg == "" || seenPkg[pkg] || long == "" || skipPackage(pkg, synopsis) {
				continue
			}
			seenPkg[pkg] = true
			key := strings.ToLower(long)
			if seenDesc[key] {
				continue
			}
			seenDesc[key] = true
			first, _, _ := strings.Cut(long, "\n")
			pairs = append(pairs, Pair{Source: "debian", Group: "deb:" + sha([]byte(strings.ToLower(first)))[:16], A: synopsis, B: strings.ReplaceAll(long, "\n", " ")})
		}
		return pairs
	})
}

// aptPairs makes pairs of each of the files of apt's lists with parse, and
// lists each file read as an Input of source.
func aptPairs(source string, files []string, parse func(data []byte) []Pair) ([]Pair, []Input, error) {
	var pairs []Pair
	var inputs []Input
	for _, f := range files {
		data, err := aptCat(f)
		if err != nil {
			return nil, nil, err
		}
		ps := parse(data)
		pairs = append(pairs, ps...)
		inputs = append(inputs, Input{Source: source, Path: f, SHA256: sha(data), Bytes: len(data), Pairs: len(ps)})
	}
	return pairs, inputs, nil
}

// parseTranslation returns the package name, synopsis and long description
// (paragraphs separated by newlines) of one Translation-en record.
func parseTranslation(rec string) (pkg, synopsis, long string) {
	var paras []string
	var cur []string
	inDesc := false
	for _, line := range strings.Split(rec, "\n") {
		switch {
		case strings.HasPrefix(line, "Package: "):
			pkg = strings.TrimSpace(line[len("Package: "):])
			inDesc = false
		case strings.HasPrefix(line, "Description-en: "):
			synopsis = strings.TrimSpace(line[len("Description-en: "):])
			inDesc = true
		case inDesc && strings.HasPrefix(line, " "):
			t := strings.TrimSpace(line)
			if t == "." {
				if len(cur) > 0 {
					paras = append(paras, strings.Join(cur, " "))
					cur = nil
				}
				continue
			}
			cur = append(cur, t)
		default:
			inDesc = false
		}
	}
	if len(cur) > 0 {
		paras = append(paras, strings.Join(cur, " "))
	}
	return pkg, synopsis, strings.Join(paras, "\n")
}

// skipPackage drops records that teach nothing about what software does.
func skipPackage(pkg, synopsis string) bool {
	s := strings.ToLower(synopsis)
	for _, w := range []string{"transitional", "dummy package", "debug symbols", "debugging symbols"} {
		if strings.Contains(s, w) {
			return true
		}
	}
	return strings.HasSuffix(pkg, "-dbg") || strings.HasSuffix(pkg, "-dbgsym")
}

var htmlTag = regexp.MustCompile(`<[^>]+>`)

// appstreamPairs reads the DEP-11 (AppStream) component metadata that apt
// downloads with the package lists: name and summary against the
// description, and keywords against the summary.
func appstreamPairs() ([]Pair, []Input, error) {
	files, _ := filepath.Glob(filepath.Join(aptListsDir, "*_dep11_Components-*.yml*"))
	sort.Strings(files)
	return aptPairs("appstream", files, func(data []byte) []Pair {
		var pairs []Pair
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for {
			var doc struct {
				ID          string              `yaml:"ID"`
				Name        map[string]string   `yaml:"Name"`
				Summary     map[string]string   `yaml:"Summary"`
				Description map[string]string   `yaml:"Description"`
				Keywords    map[string][]string `yaml:"Keywords"`
			}
			err := dec.Decode(&doc)
			if err == io.EOF {
				break
			}
			if err != nil {
				continue // one odd document does not spoil the rest
			}
			name, summary := doc.Name["C"], doc.Summary["C"]
			if doc.ID == "" || summary == "" {
				continue
			}
			desc := strings.Join(strings.Fields(htmlTag.ReplaceAllString(doc.Description["C"], " ")), " ")
			g := "as:" + doc.ID
			if desc != "" {
				pairs = append(pairs, Pair{Source: "appstream", Group: g, A: name + ": " + summary, B: desc})
			}
			if kw := doc.Keywords["C"]; len(kw) > 0 {
				pairs = append(pairs, Pair{Source: "appstream", Group: g, A: strings.Join(kw, ", "), B: name + ": " + summary})
			}
		}
		return pairs
	})
}

// wordnetPairs pairs each WordNet synset's lemmas with its definition, and
// lemmas of one synset with each other.
func wordnetPairs() ([]Pair, []Input, error) {
	var pairs []Pair
	var inputs []Input
	for _, pos := range []string{"noun", "verb", "adj", "adv"} {
		path := filepath.Join(wordnetDir, "data."+pos)
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, nil, fmt.Errorf("%w (apt-get install wordnet-base)", err)
		}
		n := 0
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "  ") {
				continue // licence header
			}
			head, gloss, ok := strings.Cut(line, " | ")
			if !ok {
				continue
			}
			f := strings.Fields(head)
			if len(f) < 4 {
				continue
			}
			var cnt int
			fmt.Sscanf(f[3], "%x", &cnt)
			var lemmas []string
			for i := 0; i < cnt && 4+2*i < len(f); i++ {
				w := f[4+2*i]
				if k := strings.IndexByte(w, '('); k > 0 { // adjective markers like (a)
					w = w[:k]
				}
				lemmas = append(lemmas, strings.ReplaceAll(w, "_", " "))
			}
			if len(lemmas) == 0 {
				continue
			}
			def, _, _ := strings.Cut(gloss, ";")
			def = strings.TrimSpace(strings.Trim(def, `"`))
			if def == "" || isProper(lemmas[0]) {
				continue
			}
			g := "wn:" + pos + ":" + f[0]
			pairs = append(pairs, Pair{Source: "wordnet", Group: g, A: strings.Join(lemmas, ", "), B: def})
			n++
			if len(lemmas) > 1 {
				pairs = append(pairs, Pair{Source: "wordnet-syn", Group: g, A: lemmas[0], B: strings.Join(lemmas[1:], ", ")})
				n++
			}
		}
		inputs = append(inputs, Input{Source: "wordnet", Path: path, SHA256: sha(data), Bytes: len(data), Pairs: n})
	}
	return pairs, inputs, nil
}

func isProper(s string) bool {
	return s != "" && s[0] >= 'A' && s[0] <= 'Z'
}

var (
	foldocMeta   = regexp.MustCompile(`<[^>]*>|\(\d{4}-\d\d-\d\d\)|\(https?://[^)]*\)`)
	foldocBraces = strings.NewReplacer("{", "", "}", "")
)

// foldocPairs pairs each FOLDOC headword with the first paragraph of its
// definition.
func foldocPairs() ([]Pair, []Input, error) {
	f, err := os.Open(foldocDict)
	if err != nil {
		return nil, nil, fmt.Errorf("%w (apt-get install dict-foldoc)", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", foldocDict, err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", foldocDict, err)
	}
	var pairs []Pair
	var head string
	var body []string
	flush := func() {
		if head == "" || len(body) == 0 {
			return
		}
		text := strings.Join(body, " ")
		text = strings.Join(strings.Fields(foldocBraces.Replace(foldocMeta.ReplaceAllString(text, " "))), " ")
		if len(text) > 20 && !strings.HasPrefix(strings.ToLower(text), "see ") {
			pairs = append(pairs, Pair{Source: "foldoc", Group: "foldoc:" + strings.ToLower(head), A: head, B: text})
		}
	}
	inBody, bodyDone := false, false
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case line == "":
			if inBody && len(body) > 0 {
				bodyDone = true
			}
		case !strings.HasPrefix(line, " "):
			if inBody { // a new entry starts
				flush()
				head, body, inBody, bodyDone = "", nil, false, false
			}
			if head == "" {
				head = strings.TrimSpace(line)
			}
		default:
			inBody = true
			if !bodyDone {
				body = append(body, strings.TrimSpace(line))
			}
		}
	}
	flush()
	// The first entries are the dictionary's own header.
	kept := pairs[:0]
	for _, p := range pairs {
		if !strings.HasPrefix(p.A, "00-database") {
			kept = append(kept, p)
		}
	}
	return kept, []Input{{Source: "foldoc", Path: foldocDict, SHA256: sha(data), Bytes: len(data), Pairs: len(kept)}}, nil
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
