package embed

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// This file encodes text as Hugging Face's tokenizers library does with a
// BERT tokenizer.json, for all of Unicode: its BertNormalizer (clean text,
// spaces around CJK ideographs, accents stripped by NFD then dropping
// non-spacing marks, lowercase per character), its BertPreTokenizer
// (words split at white space and punctuation) and WordPiece. The general
// tokenizer differs from the library outside ASCII (it never strips
// accents, and panics on a few characters); an encoder graph, trained on
// the library's tokens, gets these.

// bertNormalizer is the BertNormalizer of a tokenizer.json.
type bertNormalizer struct {
	cleanText, handleCJK, stripAccents, lowercase bool
}

// newBertNormalizer reads the normalizer's settings: a null strip_accents
// follows lowercase, as in the library.
func newBertNormalizer(t *tokenizerJSON) bertNormalizer {
	n := t.Normalizer
	strip := n.Lowercase
	if n.StripAccents != nil {
		strip = *n.StripAccents
	}
	return bertNormalizer{cleanText: n.CleanText, handleCJK: n.HandleChineseChars, stripAccents: strip, lowercase: n.Lowercase}
}

// apply normalises text.
func (n bertNormalizer) apply(text string) string {
	var b strings.Builder
	b.Grow(len(text))
	for _, r := range text {
		switch {
		case n.cleanText && (r == 0 || r == utf8.RuneError || isControlHF(r)):
			continue
		case n.cleanText && isWhitespaceHF(r):
			b.WriteByte(' ')
		case n.handleCJK && isCJK(r):
			b.WriteByte(' ')
			b.WriteRune(r)
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	s := b.String()
	if n.stripAccents {
		s = strings.Map(func(r rune) rune {
			if unicode.Is(unicode.Mn, r) {
				return -1
			}
			return r
		}, norm.NFD.String(s))
	}
	if n.lowercase {
		s = lowerHF(s)
	}
	return s
}

// lowerHF lowercases each character with its full lowercase mapping, as
// Rust's char::to_lowercase does: the simple mapping, but for İ (U+0130),
// which becomes i and a combining dot above.
func lowerHF(s string) string {
	if !strings.ContainsRune(s, 'İ') {
		return strings.Map(unicode.ToLower, s)
	}
	var b strings.Builder
	for _, r := range s {
		if r == 'İ' {
			b.WriteString("i\u0307")
			continue
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// isControlHF reports whether the library's clean-up drops r: the
// categories C (control, format, private use, surrogate, unassigned) but
// for tab, line feed and carriage return.
func isControlHF(r rune) bool {
	switch r {
	case '\t', '\n', '\r':
		return false
	}
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs) ||
		!unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z, unicode.C)
}

// isWhitespaceHF reports whether r is white space to the library.
func isWhitespaceHF(r rune) bool {
	return r == '\t' || r == '\n' || r == '\r' || unicode.IsSpace(r)
}

// isCJK reports whether r is a CJK ideograph, as BERT defines them.
func isCJK(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FFF) || (r >= 0x3400 && r <= 0x4DBF) || (r >= 0x20000 && r <= 0x2A6DF) ||
		(r >= 0x2A700 && r <= 0x2B73F) || (r >= 0x2B740 && r <= 0x2B81F) || (r >= 0x2B920 && r <= 0x2CEAF) ||
		(r >= 0xF900 && r <= 0xFAFF) || (r >= 0x2F800 && r <= 0x2FA1F)
}

// isPunctHF reports whether the pre-tokenizer splits r off as punctuation:
// ASCII punctuation and the Unicode categories P.
func isPunctHF(r rune) bool {
	if r < utf8.RuneSelf {
		return asciiPunct(byte(r))
	}
	return unicode.IsPunct(r)
}

// encodeUnicode returns the ids the library gives text, [CLS] and [SEP]
// included, with the word pieces cut to maxTokens-2; ok is false when text
// holds an added token, which the general tokenizer handles.
func (wp *wordPiece) encodeUnicode(text string, maxTokens int) (ids []int, ok bool) {
	if maxTokens < 2 {
		return nil, false
	}
	if len(wp.added) > 0 {
		low := strings.ToLower(text)
		for _, a := range wp.added {
			if strings.Contains(low, a) {
				return nil, false
			}
		}
	}
	s := wp.norm.apply(text)
	limit := maxTokens - 2
	ids = make([]int, 1, min(len(s)/2+2, maxTokens))
	ids[0] = wp.cls
	start := -1 // start of the word being read
	for i, r := range s {
		if len(ids)-1 >= limit {
			break
		}
		space, punct := isWhitespaceHF(r), isPunctHF(r)
		if (space || punct) && start >= 0 {
			ids = wp.appendUnicodeWord(ids, s[start:i])
			start = -1
		}
		switch {
		case punct:
			ids = wp.appendUnicodeWord(ids, s[i:i+utf8.RuneLen(r)])
		case !space && start < 0:
			start = i
		}
	}
	if start >= 0 && len(ids)-1 < limit {
		ids = wp.appendUnicodeWord(ids, s[start:])
	}
	if len(ids)-1 > limit {
		ids = ids[:limit+1]
	}
	return append(ids, wp.sep), true
}

// appendUnicodeWord appends the pieces of one word, [UNK] for a word of
// more characters than the model takes.
func (wp *wordPiece) appendUnicodeWord(ids []int, word string) []int {
	if utf8.RuneCountInString(word) > wp.maxChars {
		return append(ids, wp.unk)
	}
	return wp.appendPieces(ids, word)
}
