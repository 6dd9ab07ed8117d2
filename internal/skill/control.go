package skill

import "unicode"

// ControlChar reports whether r must not reach a person or a model raw
// from skill text: a control character (C0, DEL, C1), a format character
// (bidirectional overrides and isolates, zero-width characters, the tag
// characters of hidden text) or a line or paragraph separator. Printed to
// a terminal, they move its cursor, recolour or retitle it, or reorder or
// hide text. Names may hold none of them; routerctl shows them escaped on a
// terminal (newline and tab aside, in texts other than names).
func ControlChar(r rune) bool {
	return unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp)
}
