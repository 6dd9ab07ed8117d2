package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/sugarme/tokenizer"
	"github.com/sugarme/tokenizer/normalizer"
	"github.com/sugarme/tokenizer/pretokenizer"
	"github.com/sugarme/tokenizer/pretrained"
)

// Special tokens, in id order. [CLS] and [SEP] frame every text (BERT
// post-processing) and get zero rows, so they do not move the pooled vector.
var specialTokens = []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}

// Vocabulary sizes. Whole words cover the frequent vocabulary; pieces
// (prefixes and ##suffixes) give every other word a vector made of parts.
const (
	maxWords      = 40000
	minWordCount  = 8
	maxPieces     = 12000
	minCharCount  = 50
	minPieceCount = 20
	maxPieceRunes = 10
	maxWordRunes  = 100 // tokenizer's max_input_chars_per_word
)

// A Segmenter splits text into words exactly as the exported tokenizer
// does: BERT normalisation (clean text, CJK spacing,
// lowercase; accents are kept because sugarme's accent stripping panics on
// some inputs), then splitting on whitespace and punctuation.
type Segmenter struct {
	norm normalizer.Normalizer
	pre  tokenizer.PreTokenizer
}

func newSegmenter() *Segmenter {
	return &Segmenter{
		norm: normalizer.NewBertNormalizer(true, true, true, false),
		pre:  pretokenizer.NewBertPreTokenizer(),
	}
}

// Words returns the pre-tokens of s.
func (sg *Segmenter) Words(s string) []string {
	ns, err := sg.norm.Normalize(normalizer.NewNormalizedFrom(s))
	if err != nil {
		return nil
	}
	pt, err := sg.pre.PreTokenize(tokenizer.NewPreTokenizedStringFromNS(ns))
	if err != nil {
		return nil
	}
	splits := pt.GetSplits(normalizer.NormalizedTarget, tokenizer.Byte)
	out := make([]string, 0, len(splits))
	for _, sp := range splits {
		if sp.Value != "" {
			out = append(out, sp.Value)
		}
	}
	return out
}

// buildVocab chooses the vocabulary from word counts, deterministically:
// special tokens, frequent characters (word-initial and ##), the most
// frequent words, then the most frequent substrings as pieces. Ties are
// broken by the string, so map order never matters.
func buildVocab(counts map[string]int) []string {
	vb := vocabBuilder{vocab: append([]string(nil), specialTokens...), seen: map[string]bool{}}
	for _, s := range vb.vocab {
		vb.seen[s] = true
	}
	chars := map[string]int{}
	for w, n := range counts {
		for _, r := range w {
			chars[string(r)] += n
		}
	}
	for _, c := range byCount(chars, minCharCount) {
		vb.add(c.s)
		vb.add("##" + c.s)
	}
	nw := 0
	for _, w := range byCount(counts, minWordCount) {
		if nw == maxWords {
			break
		}
		if utf8.RuneCountInString(w.s) > 30 || !usableWord(w.s) {
			continue
		}
		if vb.add(w.s) {
			nw++
		}
	}
	np := 0
	for _, p := range byCount(pieceCounts(counts, vb.seen), minPieceCount) {
		if np == maxPieces {
			break
		}
		if !usableWord(strings.TrimPrefix(p.s, "##")) || vb.seen[p.s] {
			continue
		}
		vb.add(p.s)
		np++
	}
	fmt.Fprintf(os.Stderr, "vocab: %d special, %d character, %d word, %d piece tokens\n",
		len(specialTokens), len(vb.vocab)-len(specialTokens)-nw-np, nw, np)
	return vb.vocab
}

// vocabBuilder is the vocabulary as buildVocab adds to it.
type vocabBuilder struct {
	vocab []string
	seen  map[string]bool
}

// add appends s unless it is in the vocabulary already, and reports
// whether it did.
func (vb *vocabBuilder) add(s string) bool {
	if vb.seen[s] {
		return false
	}
	vb.seen[s] = true
	vb.vocab = append(vb.vocab, s)
	return true
}

// counted is a string with its count.
type counted struct {
	s string
	n int
}

// byCount returns the strings of m counted at least atLeast times, the most
// frequent first, ties by the string.
func byCount(m map[string]int, atLeast int) []counted {
	out := make([]counted, 0, len(m))
	for s, n := range m {
		if n >= atLeast {
			out = append(out, counted{s, n})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].n != out[j].n {
			return out[i].n > out[j].n
		}
		return out[i].s < out[j].s
	})
	return out
}

// pieceCounts counts the substrings (2 to maxPieceRunes runes; ## marks
// one that does not start the word) of the usable words of 2 to 30 runes
// that are not in the vocabulary (seen). Pieces serve the words that are
// not in the vocabulary, so they are counted over those words only:
// substrings of frequent words would fill the list with fragments such as
// "infrastruc".
func pieceCounts(counts map[string]int, seen map[string]bool) map[string]int {
	pieces := map[string]int{}
	for w, n := range counts {
		rs := []rune(w)
		if seen[w] || len(rs) < 2 || len(rs) > 30 || !usableWord(w) {
			continue
		}
		for i := 0; i < len(rs); i++ {
			for l := 2; l <= maxPieceRunes && i+l <= len(rs); l++ {
				if i == 0 && l == len(rs) {
					continue // the whole word is not a piece of itself
				}
				p := string(rs[i : i+l])
				if i > 0 {
					p = "##" + p
				}
				pieces[p] += n
			}
		}
	}
	return pieces
}

// usableWord keeps words made of letters and digits (plus a single
// punctuation character, which the pre-tokenizer emits alone).
func usableWord(w string) bool {
	if utf8.RuneCountInString(w) == 1 {
		return true
	}
	for _, r := range w {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127 && r < 0x2000) {
			return false
		}
	}
	return true
}

// WordPiece is the greedy longest-match-first tokenizer of the exported
// tokenizer.json (the same algorithm as sugarme/tokenizer's and Hugging
// Face's WordPiece), used to tokenise the training corpus quickly.
type WordPiece struct {
	Vocab []string
	ids   map[string]int
	cache map[string][]int32
}

func newWordPiece(vocab []string) *WordPiece {
	ids := make(map[string]int, len(vocab))
	for i, s := range vocab {
		ids[s] = i
	}
	return &WordPiece{Vocab: vocab, ids: ids, cache: map[string][]int32{}}
}

func (wp *WordPiece) ID(s string) (int, bool) {
	id, ok := wp.ids[s]
	return id, ok
}

// Word returns the token ids of one pre-token. Not safe for concurrent use
// (it caches).
func (wp *WordPiece) Word(w string) []int32 {
	if ids, ok := wp.cache[w]; ok {
		return ids
	}
	ids := wp.split(w, false)
	wp.cache[w] = ids
	return ids
}

// split tokenises w; with noWhole it may not use w itself as one token (used
// to teach pieces what the whole word means).
func (wp *WordPiece) split(w string, noWhole bool) []int32 {
	rs := []rune(w)
	unk := []int32{int32(wp.ids["[UNK]"])}
	if len(rs) > maxWordRunes {
		return unk
	}
	var out []int32
	for start := 0; start < len(rs); {
		end := len(rs)
		found := -1
		for ; start < end; end-- {
			if noWhole && start == 0 && end == len(rs) {
				continue
			}
			sub := string(rs[start:end])
			if start > 0 {
				sub = "##" + sub
			}
			if id, ok := wp.ids[sub]; ok {
				found = id
				break
			}
		}
		if found < 0 {
			return unk
		}
		out = append(out, int32(found))
		start = end
	}
	return out
}

// tokenizerJSON renders the Hugging Face tokenizer.json for the vocabulary.
func tokenizerJSON(vocab []string) ([]byte, error) {
	type addedToken struct {
		ID         int    `json:"id"`
		Content    string `json:"content"`
		SingleWord bool   `json:"single_word"`
		Lstrip     bool   `json:"lstrip"`
		Rstrip     bool   `json:"rstrip"`
		Normalized bool   `json:"normalized"`
		Special    bool   `json:"special"`
	}
	var added []addedToken
	for i, s := range specialTokens {
		added = append(added, addedToken{ID: i, Content: s, Special: true})
	}
	// The vocab object is written by hand, in id order, so the file is
	// byte-for-byte reproducible and easy to diff.
	var vb bytes.Buffer
	vb.WriteString("{")
	for i, s := range vocab {
		if i > 0 {
			vb.WriteString(",")
		}
		k, _ := json.Marshal(s)
		fmt.Fprintf(&vb, "\n      %s: %d", k, i)
	}
	vb.WriteString("\n    }")
	head := map[string]any{
		"version":      "1.0",
		"truncation":   nil,
		"padding":      nil,
		"added_tokens": added,
		"normalizer": map[string]any{
			"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
			"strip_accents": false, "lowercase": true,
		},
		"pre_tokenizer":  map[string]any{"type": "BertPreTokenizer"},
		"post_processor": map[string]any{"type": "BertProcessing", "sep": []any{"[SEP]", 3}, "cls": []any{"[CLS]", 2}},
		"decoder":        map[string]any{"type": "WordPiece", "prefix": "##", "cleanup": true},
		"model":          "MODEL",
	}
	hb, err := json.MarshalIndent(head, "", "  ")
	if err != nil {
		return nil, err
	}
	model := fmt.Sprintf(`{
    "type": "WordPiece",
    "unk_token": "[UNK]",
    "continuing_subword_prefix": "##",
    "max_input_chars_per_word": %d,
    "vocab": %s
  }`, maxWordRunes, vb.String())
	out := bytes.Replace(hb, []byte(`"MODEL"`), []byte(model), 1)
	return append(out, '\n'), nil
}

func runVocab(args []string) error {
	fs := flag.NewFlagSet("vocab", flag.ExitOnError)
	work := fs.String("work", defaultWork, "work directory")
	fs.Parse(args)
	var pairs []Pair
	if err := readJSON(workPath(*work, "pairs.json"), &pairs); err != nil {
		return err
	}
	sg := newSegmenter()
	counts := map[string]int{}
	for _, p := range pairs {
		for _, t := range []string{p.A, p.B} {
			for _, w := range sg.Words(t) {
				counts[w]++
			}
		}
	}
	vocab := buildVocab(counts)
	tj, err := tokenizerJSON(vocab)
	if err != nil {
		return err
	}
	path := workPath(*work, "tokenizer.json")
	if err := os.WriteFile(path, tj, 0o644); err != nil {
		return err
	}
	removeCaches(*work)
	// The exported tokenizer must agree with the training tokenisation.
	if err := checkTokenizer(path, vocab, sg, pairs); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "vocab: %d distinct words, vocabulary %d tokens\n", len(counts), len(vocab))
	return nil
}

// removeCaches drops the tokenised corpus and PMI vectors that train keeps
// in the work directory, which a new vocabulary makes stale.
func removeCaches(work string) {
	os.Remove(workPath(work, "corpus.gob"))
	old, _ := filepath.Glob(workPath(work, "pmi-*.bin"))
	for _, f := range old {
		os.Remove(f)
	}
}

// checkTokenizer loads tokenizer.json with sugarme/tokenizer (hugot's Go
// tokenizer) and checks that it produces the ids the trainer uses on a
// sample of the corpus.
func checkTokenizer(path string, vocab []string, sg *Segmenter, pairs []Pair) error {
	tk, err := pretrained.FromFile(path)
	if err != nil {
		return fmt.Errorf("load %s: %w", path, err)
	}
	wp := newWordPiece(vocab)
	for i := 0; i < len(pairs); i += 97 {
		text := pairs[i].B
		enc, err := tk.EncodeSingle(text, true)
		if err != nil {
			return fmt.Errorf("encode %q: %w", text, err)
		}
		want := encodeText(sg, wp, text)
		got := enc.Ids
		if len(got) != len(want)+2 {
			return fmt.Errorf("tokenizer mismatch on %q: %d ids, want %d", text, len(got), len(want)+2)
		}
		for j, id := range want {
			if got[j+1] != int(id) {
				return fmt.Errorf("tokenizer mismatch on %q at %d: %v, want %v", text, j, enc.Tokens[j+1], vocab[id])
			}
		}
	}
	return nil
}

// encodeText returns the ids of text without [CLS]/[SEP].
func encodeText(sg *Segmenter, wp *WordPiece, text string) []int32 {
	var ids []int32
	for _, w := range sg.Words(text) {
		ids = append(ids, wp.Word(w)...)
	}
	return ids
}
