package upstream

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/mcpsag/router/internal/skill"
)

// safeNameChar reports whether c may appear in a tool name hosts accept
// (the MCP rule: 1-128 of [A-Za-z0-9_.-]).
func safeNameChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-'
}

// safeName reports whether every byte of s is a safe name character.
func safeName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !safeNameChar(s[i]) {
			return false
		}
	}
	return true
}

// EntryNames maps the upstream names of one server's tools to entry names
// "server.tool" that hosts accept: at most skill.MaxToolNameBytes bytes of
// [A-Za-z0-9_.-]. A name that already fits is kept as it is. Any other name
// (spaces, Unicode look-alikes, control characters, too long) is rewritten:
// every byte outside the set becomes '_', the result is cut to fit, and
// '_' plus the first 8 hex digits of the sha256 of the upstream name is
// appended, so the mapping is deterministic and a rewritten name never
// passes for a kept one. Kept names are assigned first; a rewritten name
// that still collides takes more hex digits. The result is stable: a tool
// keeps its entry name when other tools come and go. names must hold no
// duplicates.
func EntryNames(server string, names []string) map[string]string {
	prefix := server + "."
	room := skill.MaxToolNameBytes - len(prefix)
	out := make(map[string]string, len(names))
	taken := make(map[string]bool, len(names))
	var rewrite []string
	for _, n := range names {
		if len(n) <= room && safeName(n) {
			out[n] = prefix + n
			taken[prefix+n] = true
		} else {
			rewrite = append(rewrite, n)
		}
	}
	for _, n := range rewrite {
		sum := sha256.Sum256([]byte(n))
		hexSum := hex.EncodeToString(sum[:])
		var b strings.Builder
		for i := 0; i < len(n); i++ {
			if safeNameChar(n[i]) {
				b.WriteByte(n[i])
			} else if b.Len() == 0 || !strings.HasSuffix(b.String(), "_") {
				b.WriteByte('_') // one '_' per run of unsafe bytes
			}
		}
		base := strings.Trim(b.String(), "_")
		for digits := 8; ; digits += 4 {
			suffix := "_" + hexSum[:min(digits, len(hexSum))]
			stem := base
			if len(stem) > room-len(suffix) {
				stem = stem[:room-len(suffix)]
			}
			name := prefix + strings.TrimLeft(stem+suffix, "_")
			if !taken[name] || digits >= len(hexSum) {
				out[n] = name
				taken[name] = true
				break
			}
		}
	}
	return out
}
