package embed

import (
	"encoding/json"
	"strings"
)

// wordPiece is a native encoder for one common tokenizer.json: a BERT
// WordPiece vocabulary with the lowercasing BERT normalizer, the BERT
// pre-tokenizer and [CLS]/[SEP] post-processing. It
// encodes printable ASCII words itself, text that holds no added token;
// for that text it gives exactly the ids the general tokenizer gives (the tests
// compare the two on the dev sets, real skill texts and random text), at a
// small fraction of its cost. A word outside ASCII is tokenized alone by
// the general tokenizer; anything else goes to it whole.
type wordPiece struct {
	vocab    map[string]int // word-initial pieces
	cont     map[string]int // continuation pieces, without their prefix
	unk      int
	cls, sep int
	maxChars int
	added    []string // lowercased contents of the added tokens
	// addedNonASCII is set when an added token holds a character outside
	// ASCII: such text always goes to the general tokenizer.
	addedNonASCII bool
	norm          bertNormalizer // for encodeUnicode
}

// tokenizerJSON is the part of tokenizer.json wordPiece reads.
type tokenizerJSON struct {
	AddedTokens []struct {
		Content string `json:"content"`
	} `json:"added_tokens"`
	Normalizer *struct {
		Type               string `json:"type"`
		CleanText          bool   `json:"clean_text"`
		HandleChineseChars bool   `json:"handle_chinese_chars"`
		Lowercase          bool   `json:"lowercase"`
		StripAccents       *bool  `json:"strip_accents"`
	} `json:"normalizer"`
	PreTokenizer *struct {
		Type string `json:"type"`
	} `json:"pre_tokenizer"`
	PostProcessor *struct {
		Type string `json:"type"`
		CLS  []any  `json:"cls"`
		SEP  []any  `json:"sep"`
		// Single is a TemplateProcessing template; only
		// "[CLS] $A [SEP]" (two special tokens around the sequence) is
		// understood.
		Single []struct {
			SpecialToken *struct {
				ID     string `json:"id"`
				TypeID int    `json:"type_id"`
			} `json:"SpecialToken"`
			Sequence *struct {
				ID     string `json:"id"`
				TypeID int    `json:"type_id"`
			} `json:"Sequence"`
		} `json:"single"`
		SpecialTokens map[string]struct {
			IDs []int `json:"ids"`
		} `json:"special_tokens"`
	} `json:"post_processor"`
	Model struct {
		Type                    string         `json:"type"`
		UnkToken                string         `json:"unk_token"`
		ContinuingSubwordPrefix string         `json:"continuing_subword_prefix"`
		MaxInputCharsPerWord    int            `json:"max_input_chars_per_word"`
		Vocab                   map[string]int `json:"vocab"`
	} `json:"model"`
}

// newWordPiece returns the native encoder for tokenizer.json, or nil when
// the tokenizer is of another kind.
func newWordPiece(data []byte) *wordPiece {
	var t tokenizerJSON
	if json.Unmarshal(data, &t) != nil || !t.native() {
		return nil
	}
	m := t.Model
	wp := &wordPiece{vocab: m.Vocab, cont: map[string]int{}, maxChars: m.MaxInputCharsPerWord, norm: newBertNormalizer(&t)}
	var ok bool
	if wp.cls, wp.sep, ok = t.specials(); !ok {
		return nil
	}
	if wp.unk, ok = m.Vocab[m.UnkToken]; !ok {
		return nil
	}
	for piece, id := range m.Vocab {
		if rest, isCont := strings.CutPrefix(piece, m.ContinuingSubwordPrefix); isCont {
			wp.cont[rest] = id
		}
	}
	for _, a := range t.AddedTokens {
		if a.Content != "" {
			wp.added = append(wp.added, strings.ToLower(a.Content))
			for i := 0; i < len(a.Content); i++ {
				wp.addedNonASCII = wp.addedNonASCII || a.Content[i] >= 0x80
			}
		}
	}
	return wp
}

// native reports whether wordPiece encodes as t does: a lowercasing BERT
// normalizer, the BERT pre-tokenizer, a WordPiece model and a
// post-processor. Accents matter only outside ASCII, which the general
// tokenizer encodes; t's own truncation and padding do not matter, since
// loadTokenizer replaces them.
func (t *tokenizerJSON) native() bool {
	n, pre, post, m := t.Normalizer, t.PreTokenizer, t.PostProcessor, t.Model
	return n != nil && n.Type == "BertNormalizer" && n.Lowercase &&
		pre != nil && pre.Type == "BertPreTokenizer" && post != nil &&
		m.Type == "WordPiece" && m.ContinuingSubwordPrefix != "" && m.MaxInputCharsPerWord > 0
}

// maxID returns the largest id of the vocabulary.
func (wp *wordPiece) maxID() int {
	top := 0
	for _, id := range wp.vocab {
		top = max(top, id)
	}
	return top
}

// specials returns the ids of [CLS] and [SEP] as t's post-processor names
// them: a BertProcessing pair, or a TemplateProcessing "[CLS] $A [SEP]";
// ok is false for another post-processor or ids the vocabulary does not
// hold.
func (t *tokenizerJSON) specials() (cls, sep int, ok bool) {
	post, vocab := t.PostProcessor, t.Model.Vocab
	switch post.Type {
	case "BertProcessing":
		special := func(v []any) (int, bool) {
			if len(v) != 2 {
				return 0, false
			}
			tok, ok1 := v[0].(string)
			id, ok2 := v[1].(float64)
			if !ok1 || !ok2 || vocab[tok] != int(id) {
				return 0, false
			}
			return int(id), true
		}
		cls, ok1 := special(post.CLS)
		sep, ok2 := special(post.SEP)
		return cls, sep, ok1 && ok2
	case "TemplateProcessing":
		tmpl := post.Single
		if len(tmpl) != 3 || tmpl[0].SpecialToken == nil || tmpl[1].Sequence == nil || tmpl[1].Sequence.ID != "A" ||
			tmpl[1].Sequence.TypeID != 0 || tmpl[2].SpecialToken == nil || tmpl[0].SpecialToken.TypeID != 0 || tmpl[2].SpecialToken.TypeID != 0 {
			return 0, 0, false
		}
		one := func(tok string) (int, bool) {
			st, ok := post.SpecialTokens[tok]
			if !ok || len(st.IDs) != 1 {
				return 0, false
			}
			return st.IDs[0], true
		}
		cls, ok1 := one(tmpl[0].SpecialToken.ID)
		sep, ok2 := one(tmpl[2].SpecialToken.ID)
		return cls, sep, ok1 && ok2
	}
	return 0, 0, false
}

// nonASCIIWord returns the end of the space-separated word of s that holds
// position i when that word has a byte outside ASCII, else i.
func nonASCIIWord(s string, i int) int {
	start := i
	for start > 0 && s[start-1] != ' ' {
		start--
	}
	end := i
	for end < len(s) && s[end] != ' ' {
		end++
	}
	for k := start; k < end; k++ {
		if s[k] >= 0x80 {
			return end
		}
	}
	return i
}

// asciiPunct reports whether an ASCII byte is punctuation to the BERT
// pre-tokenizer: every printable ASCII character that is not a letter or a
// digit.
func asciiPunct(c byte) bool {
	return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126)
}

// encode returns the ids of text, [CLS] and [SEP] included, with the
// word pieces cut to maxTokens-2; ok is false when the text is not for this
// encoder (it holds an added token, a control character, or a word that is
// not printable ASCII while other is nil).
//
// text is sanitised (Sanitize: words apart by single spaces), and the BERT
// normalizer, pre-tokenizer and WordPiece all work within a space-separated
// word, so text's pieces are its words' pieces in order. A word that is
// not printable ASCII is given to other, which returns the pieces the
// general tokenizer makes of that word alone (without [CLS] and [SEP]); ok
// is false when it cannot.
func (wp *wordPiece) encode(text string, maxTokens int, other func(word string) ([]int, bool)) (ids []int, ok bool) {
	if maxTokens < 2 {
		return nil, false
	}
	low, ok := wp.lower(text, other != nil)
	if !ok {
		return nil, false
	}
	limit := maxTokens - 2
	ids = make([]int, 1, min(len(text)/2+2, maxTokens))
	ids[0] = wp.cls
	for i := 0; i < len(low); {
		c := low[i]
		if c == ' ' {
			i++
			continue
		}
		if wordEnd := nonASCIIWord(low, i); wordEnd > i {
			if len(ids)-1 >= limit {
				break
			}
			pieces, ok := other(text[i:wordEnd])
			if !ok {
				return nil, false
			}
			ids = append(ids, pieces...)
			i = wordEnd
			continue
		}
		j := i + 1
		if !asciiPunct(c) {
			for j < len(low) && low[j] != ' ' && !asciiPunct(low[j]) {
				j++
			}
		}
		if len(ids)-1 >= limit {
			break
		}
		ids = wp.appendWord(ids, low[i:j])
		i = j
	}
	if len(ids)-1 > limit {
		ids = ids[:limit+1]
	}
	return append(ids, wp.sep), true
}

// lower returns text with ASCII letters lowercased; ok is false when text
// holds a control character or an added token, or, unless withOther (a
// tokenizer for other words), a byte outside ASCII.
func (wp *wordPiece) lower(text string, withOther bool) (string, bool) {
	lower := make([]byte, len(text))
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case c == ' ':
		case c < 32 || c == 127:
			return "", false
		case c > 127:
			if !withOther || wp.addedNonASCII {
				return "", false
			}
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
		}
		lower[i] = c
	}
	low := string(lower)
	for _, a := range wp.added {
		if strings.Contains(low, a) {
			return "", false
		}
	}
	return low, true
}

// appendWord appends the word pieces of word (lowercased ASCII without
// spaces or, but for a lone one, punctuation) to ids: greedy longest match
// first, [UNK] for a word too long or one that does not split.
func (wp *wordPiece) appendWord(ids []int, word string) []int {
	if len(word) > wp.maxChars {
		return append(ids, wp.unk)
	}
	return wp.appendPieces(ids, word)
}

// appendPieces appends the word pieces of a lowercased word to ids: greedy
// longest match first, [UNK] for a word that does not split. Pieces are
// matched on bytes: a cut inside a UTF-8 sequence is never a piece.
func (wp *wordPiece) appendPieces(ids []int, word string) []int {
	start := len(ids)
	for pos := 0; pos < len(word); {
		end := len(word)
		id, found := 0, false
		for ; end > pos; end-- {
			if pos == 0 {
				id, found = wp.vocab[word[:end]]
			} else {
				id, found = wp.cont[word[pos:end]]
			}
			if found {
				break
			}
		}
		if !found {
			return append(ids[:start], wp.unk)
		}
		ids = append(ids, id)
		pos = end
	}
	return ids
}
