package main

import (
	"encoding/gob"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"sort"
	"strings"
)

// maxTokens caps the tokens of one text, in training and at run time
// (mcpsag-model.json max_tokens counts [CLS] and [SEP] too).
const maxTokens = 254

// valShare: one Debian group in valShare goes to the validation split.
const valShare = 40

// Corpus is the tokenised training data.
type Corpus struct {
	Vocab []string
	Texts []string  // distinct texts
	IDs   [][]int32 // token ids of each text, without [CLS]/[SEP]
	Pairs []TPair
	work  string // work directory it was loaded from (not encoded)
}

// TPair is a Pair by text index.
type TPair struct {
	A, B   int32
	Source string
	Val    bool // held out for validation
}

// docValShare: one group in docValShare of the documentation sources (man
// pages, Go and Python doc comments) goes to the validation split; they are
// smaller than Debian's, so they give a larger share.
const docValShare = 20

// isValidation reports whether a pair's group is held out. Debian groups
// and the documentation sources' groups are held out, each for its own
// retrieval task; WordNet, FOLDOC and AppStream are not.
func isValidation(p Pair) bool {
	share := uint32(0)
	switch p.Source {
	case "debian":
		share = valShare
	case "man", "godoc", "pydoc":
		share = docValShare
	default:
		return false
	}
	h := fnv.New32a()
	h.Write([]byte(p.Group))
	return h.Sum32()%share == 0
}

// loadCorpus tokenises the pairs with the work directory's tokenizer, or
// reads the cached result.
func loadCorpus(work string) (*Corpus, error) {
	cache := workPath(work, "corpus.gob")
	if f, err := os.Open(cache); err == nil {
		defer f.Close()
		var c Corpus
		if err := gob.NewDecoder(f).Decode(&c); err == nil {
			c.work = work
			return &c, nil
		}
	}
	var pairs []Pair
	if err := readJSON(workPath(work, "pairs.json"), &pairs); err != nil {
		return nil, err
	}
	vocab, err := readVocab(workPath(work, "tokenizer.json"))
	if err != nil {
		return nil, err
	}
	c := &Corpus{Vocab: vocab, work: work}
	index := map[string]int32{}
	intern := func(s string) int32 {
		if i, ok := index[s]; ok {
			return i
		}
		i := int32(len(c.Texts))
		index[s] = i
		c.Texts = append(c.Texts, s)
		return i
	}
	for _, p := range pairs {
		c.Pairs = append(c.Pairs, TPair{A: intern(p.A), B: intern(p.B), Source: p.Source, Val: isValidation(p)})
	}
	// Tokenise in parallel: each text is independent, so the result does
	// not depend on scheduling.
	c.IDs = make([][]int32, len(c.Texts))
	parallelRows(len(c.Texts), func(lo, hi int) {
		sg := newSegmenter()
		wp := newWordPiece(vocab)
		for i := lo; i < hi; i++ {
			ids := encodeText(sg, wp, c.Texts[i])
			if len(ids) > maxTokens {
				ids = ids[:maxTokens]
			}
			c.IDs[i] = ids
		}
	})
	f, err := os.Create(cache)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := gob.NewEncoder(f).Encode(c); err != nil {
		return nil, err
	}
	return c, nil
}

// readVocab returns the vocabulary of a tokenizer.json in id order.
func readVocab(path string) ([]string, error) {
	var tj struct {
		Model struct {
			Vocab map[string]int `json:"vocab"`
		} `json:"model"`
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &tj); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	vocab := make([]string, len(tj.Model.Vocab))
	for s, id := range tj.Model.Vocab {
		if id < 0 || id >= len(vocab) || vocab[id] != "" {
			return nil, fmt.Errorf("%s: bad id %d for %q", path, id, s)
		}
		vocab[id] = s
	}
	return vocab, nil
}

// docFreq returns each token's document frequency over the training texts
// and the number of texts counted.
func (c *Corpus) docFreq() ([]int, int) {
	df := make([]int, len(c.Vocab))
	used := make([]bool, len(c.Texts))
	for _, p := range c.Pairs {
		if !p.Val {
			used[p.A], used[p.B] = true, true
		}
	}
	n := 0
	seen := make([]int, len(c.Vocab))
	for i, ids := range c.IDs {
		if !used[i] {
			continue
		}
		n++
		for _, t := range ids {
			if seen[t] != i+1 {
				seen[t] = i + 1
				df[t]++
			}
		}
	}
	return df, n
}

// isWordToken reports whether a vocabulary entry is a whole word (not a
// piece, special token or punctuation).
func isWordToken(s string) bool {
	if strings.HasPrefix(s, "##") || strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		return false
	}
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127 {
			return true
		}
	}
	return false
}

// decompositions returns, for each whole-word token of at least four
// characters, the pieces it splits into when the word itself is unknown.
func decompositions(vocab []string) [][]int32 {
	wp := newWordPiece(vocab)
	out := make([][]int32, len(vocab))
	for id, s := range vocab {
		if !isWordToken(s) || len([]rune(s)) < 4 {
			continue
		}
		if d := wp.split(s, true); len(d) >= 2 && vocab[d[0]] != "[UNK]" {
			out[id] = d
		}
	}
	return out
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
