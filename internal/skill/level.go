package skill

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// LoadLevel is how much of a skill a caller asks for (progressive disclosure).
type LoadLevel int

// Load levels.
const (
	LevelSummary  LoadLevel = 1 // name, description, source: about 100 tokens
	LevelBody     LoadLevel = 2 // the SKILL.md body under a token budget
	LevelResource LoadLevel = 3 // one named file from the skill folder
)

func (l LoadLevel) String() string {
	switch l {
	case LevelSummary:
		return "summary"
	case LevelBody:
		return "body"
	case LevelResource:
		return "resource"
	}
	return fmt.Sprintf("level(%d)", int(l))
}

// Valid reports whether l is one of the three load levels.
func (l LoadLevel) Valid() bool { return l >= LevelSummary && l <= LevelResource }

// CharsPerToken is the ratio EstimateTokens uses. Real BPE tokenizers average
// about four characters per token on English prose and markdown; the estimate
// needs no tokenizer files and is the same for every host.
const CharsPerToken = 4

// TokenCounting names the counting rule in API replies.
const TokenCounting = "estimate: ceil(unicode characters / 4)"

// EstimateTokens estimates the number of LLM tokens in s as
// ceil(characters/CharsPerToken).
func EstimateTokens(s string) int {
	n := utf8.RuneCountInString(s)
	return (n + CharsPerToken - 1) / CharsPerToken
}

// BodyStart returns at most n characters of a skill's body, cut back to the
// last white space when the cut falls inside a word. Matching indexes and
// embeds this much of a body.
func BodyStart(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, count := 0, 0
	for i < len(s) && count < n {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		count++
	}
	cut := s[:i]
	if r, _ := utf8.DecodeRuneInString(s[i:]); !unicode.IsSpace(r) {
		if j := strings.LastIndexFunc(cut, unicode.IsSpace); j > 0 {
			cut = cut[:j]
		}
	}
	return cut
}

// TruncateBody cuts body to at most budget estimated tokens (see
// EstimateTokens). It prefers to cut at a line break, then at a space, in
// the last fifth of the allowance, so a reader never gets half a word when it
// can be avoided. It returns the text, its estimated tokens, and whether it was
// cut.
func TruncateBody(body string, budget int) (string, int, bool) {
	if budget <= 0 {
		return "", 0, body != ""
	}
	if EstimateTokens(body) <= budget {
		return body, EstimateTokens(body), false
	}
	maxRunes := budget * CharsPerToken
	cut := 0
	for i := range body {
		if maxRunes == 0 {
			cut = i
			break
		}
		maxRunes--
	}
	text := body[:cut]
	floor := len(text) * 4 / 5
	if i := strings.LastIndexByte(text, '\n'); i >= floor && i > 0 {
		text = text[:i+1]
	} else if i := strings.LastIndexByte(text, ' '); i >= floor && i > 0 {
		text = text[:i]
	}
	return text, EstimateTokens(text), true
}
