package embed

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Sanitize returns text in the form the tokenizer is given: valid UTF-8,
// with control characters, line breaks and other white space turned into
// single spaces, format characters (zero-width joiners, bidi controls, BOM)
// and unassigned or private-use code points dropped, trimmed, and cut at a
// rune boundary to at most maxBytes bytes (maxBytes <= 0 means no cut).
//
// Invalid UTF-8 bytes become spaces. Emoji and every other graphic
// character are kept; the tokenizer maps what it does not know to [UNK].
// The work done is bounded by maxBytes, not by len(text).
func Sanitize(text string, maxBytes int) string {
	if maxBytes > 0 && len(text) > 4*maxBytes {
		// Dropped characters can shrink the text at most fourfold per
		// kept byte; cutting first bounds the work on huge inputs.
		text = text[:4*maxBytes]
	}
	var b strings.Builder
	b.Grow(min(len(text), max(maxBytes, 0)+utf8.UTFMax))
	space := false // a space is pending
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		i += size
		switch {
		case r == utf8.RuneError && size <= 1, unicode.IsSpace(r), unicode.IsControl(r):
			space = b.Len() > 0
			continue
		case r == utf8.RuneError, !unicode.IsGraphic(r):
			// U+FFFD itself, format characters (Cf), unassigned code
			// points and private use: dropped.
			continue
		}
		n := utf8.RuneLen(r)
		if space {
			n++
		}
		if maxBytes > 0 && b.Len()+n > maxBytes {
			break
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return b.String()
}
