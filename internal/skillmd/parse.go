// Package skillmd parses SKILL.md files: it splits the YAML frontmatter from
// the markdown body, decodes the frontmatter leniently (as the Agent Skills
// client guide asks), validates it against the spec, and folds names for
// collision checks. It is pure: it reads no files and holds no state, so it is
// safe on any input and easy to fuzz.
package skillmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
	"golang.org/x/text/unicode/norm"

	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/statedir"
)

// Limits bound what the parser reads. The zero value is not useful; start from
// DefaultLimits.
type Limits struct {
	// MaxFileBytes caps the size of a SKILL.md; larger files are skipped.
	MaxFileBytes int64
	// MaxFrontmatterBytes caps the YAML header, as written and as read:
	// the text of its keys and values with every alias expanded (an alias
	// counts as what it names, every time it is used).
	MaxFrontmatterBytes int
}

// Version identifies this parser's output. The store records it with every
// cached record; a cache written by another version is parsed again, so a
// change to what Parse returns never leaves stale records behind. It is
// statedir.ParserVersion, which says when to bump it and what each
// version changed.
const Version = statedir.ParserVersion

// DefaultLimits are the caps the router uses unless configured otherwise.
var DefaultLimits = Limits{MaxFileBytes: 1 << 20, MaxFrontmatterBytes: 64 << 10}

// Spec limits from the Agent Skills specification.
const (
	maxNameLen          = 64
	maxDescriptionLen   = 1024
	maxCompatibilityLen = 500
	maxBodyLines        = 500
	maxBodyTokens       = 5000
	// maxYAMLNodes and maxYAMLDepth bound a frontmatter's nodes, aliases
	// expanded, and how deep they nest: one rule, checked once for the
	// whole document by every reader of it (measureYAML), so alias bombs
	// cost milliseconds, not memory, and what Parse accepts the others
	// read too.
	maxYAMLNodes = 10000
	maxYAMLDepth = 32
)

// Problem codes reported by the parser.
const (
	CodeFileTooLarge        = "file-too-large"
	CodeMissingFrontmatter  = "missing-frontmatter"
	CodeUnterminated        = "unterminated-frontmatter"
	CodeFrontmatterTooLarge = "frontmatter-too-large"
	CodeYAMLSyntax          = "yaml-syntax"
	CodeYAMLNotMapping      = "yaml-not-mapping"
	CodeYAMLTooComplex      = "yaml-too-complex"
	CodeDuplicateKey        = "duplicate-key"
	CodeUnquotedColon       = "unquoted-colon"
	CodeWrongType           = "wrong-type"
	CodeExplicitTag         = "explicit-tag"
	CodeNameMissing         = "name-missing"
	CodeNameInvalid         = "name-invalid"
	CodeNameControl         = "name-control"
	CodeNameTooLong         = "name-too-long"
	CodeNameMismatch        = "name-mismatch"
	CodeDescriptionMissing  = "description-missing"
	CodeDescriptionTooLong  = "description-too-long"
	CodeDescriptionAngle    = "description-angle-brackets"
	CodeCompatibilityLong   = "compatibility-too-long"
	CodeMetadataNotString   = "metadata-not-string"
	CodeUnknownField        = "unknown-field"
	CodeBodyTooLong         = "body-too-long"
	CodeInvalidUTF8         = "invalid-utf8"
)

// hostExtensions are frontmatter fields that hosts define outside the spec.
// They are kept in Extra without a warning.
var hostExtensions = map[string]bool{
	"when_to_use": true, "argument-hint": true, "arguments": true, "model": true,
	"effort": true, "context": true, "agent": true, "hooks": true, "paths": true,
	"shell": true, "version": true, "author": true,
}

// Parsed is the result of parsing one SKILL.md.
type Parsed struct {
	Frontmatter skill.Frontmatter
	// Name is the skill's identity: the frontmatter name, or the folder
	// name when the frontmatter has none.
	Name string
	Body string
	// BodyLine is the 1-based line where the body starts.
	BodyLine        int
	ContentHash     string
	FrontmatterHash string
}

// Parse parses a SKILL.md held in data. dirName is the name of the folder that
// holds it, which the spec says the skill name must equal. It returns the parsed
// skill, or nil when the file must be skipped, and every problem found. Problems
// have Line set but not File. Parse never panics and does bounded work on any
// input.
func Parse(data []byte, dirName string, lim Limits) (*Parsed, []skill.Problem) {
	p := &parser{}
	if int64(len(data)) > lim.MaxFileBytes {
		p.errorf(CodeFileTooLarge, "", 0, "file is %d bytes, over the %d-byte limit; shorten it or raise the limit", len(data), lim.MaxFileBytes)
		return nil, p.problems
	}
	contentHash := skill.Hash(data)

	text := normaliseNewlines(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")))
	fm, body, bodyLine, ok := splitFrontmatter(text, lim.MaxFrontmatterBytes, p)
	if !ok {
		return nil, p.problems
	}
	out := &Parsed{
		ContentHash:     contentHash,
		FrontmatterHash: skill.Hash(fm),
		BodyLine:        bodyLine,
	}

	root, ok := p.decodeYAML(fm, lim.MaxFrontmatterBytes)
	if !ok {
		return nil, p.problems
	}
	p.readFields(root, &out.Frontmatter)
	if p.fatal {
		return nil, p.problems
	}

	out.Name = p.checkName(out.Frontmatter.Name, dirName)
	if !p.checkDescription(out.Frontmatter.Description) || p.fatal {
		return nil, p.problems
	}
	if n := utf8.RuneCountInString(out.Frontmatter.Compatibility); n > maxCompatibilityLen {
		p.warnf(CodeCompatibilityLong, "compatibility", p.fieldLine["compatibility"], "compatibility is %d characters; the spec allows %d", n, maxCompatibilityLen)
	}

	if !utf8.Valid(body) {
		p.warnf(CodeInvalidUTF8, "", bodyLine, "body is not valid UTF-8; invalid bytes are replaced with U+FFFD")
		body = bytes.ToValidUTF8(body, []byte("\uFFFD"))
	}
	out.Body = string(body)
	if lines := strings.Count(out.Body, "\n"); lines > maxBodyLines {
		p.warnf(CodeBodyTooLong, "", bodyLine, "body has %d lines; the spec recommends at most %d (move detail to references/)", lines, maxBodyLines)
	} else if t := skill.EstimateTokens(out.Body); t > maxBodyTokens {
		p.warnf(CodeBodyTooLong, "", bodyLine, "body is about %d tokens; the spec recommends at most %d", t, maxBodyTokens)
	}
	return out, p.problems
}

// parser accumulates problems while parsing one file.
type parser struct {
	problems []skill.Problem
	// fatal is set when an error means the file must be skipped.
	fatal bool
	// lineOffset converts YAML node lines to file lines.
	lineOffset int
	fieldLine  map[string]int
}

func (p *parser) add(sev skill.Severity, code, field string, line int, format string, args ...any) {
	p.problems = append(p.problems, skill.Problem{
		Severity: sev, Code: code, Field: field, Line: line, Message: fmt.Sprintf(format, args...),
	})
	if sev == skill.SeverityError {
		p.fatal = true
	}
}

func (p *parser) errorf(code, field string, line int, format string, args ...any) {
	p.add(skill.SeverityError, code, field, line, format, args...)
}

func (p *parser) warnf(code, field string, line int, format string, args ...any) {
	p.add(skill.SeverityWarning, code, field, line, format, args...)
}

// normaliseNewlines turns CRLF and lone CR into LF.
func normaliseNewlines(b []byte) []byte {
	if bytes.IndexByte(b, '\r') < 0 {
		return b
	}
	b = bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n"))
	return bytes.ReplaceAll(b, []byte("\r"), []byte("\n"))
}

// splitFrontmatter finds the YAML between a leading "---" line and the next
// "---" (or "...") line. It returns the YAML, the body and the body's 1-based
// first line.
func splitFrontmatter(text []byte, maxFM int, p *parser) (fm, body []byte, bodyLine int, ok bool) {
	first, rest, found := bytes.Cut(text, []byte("\n"))
	if !isFence(first, false) {
		p.errorf(CodeMissingFrontmatter, "", 1, "file does not start with a '---' line; add YAML frontmatter with name and description")
		return nil, nil, 0, false
	}
	if !found {
		p.errorf(CodeUnterminated, "", 1, "frontmatter has no closing '---' line")
		return nil, nil, 0, false
	}
	line := 2
	off := 0
	for off <= len(rest) {
		end := bytes.IndexByte(rest[off:], '\n')
		var cur []byte
		if end < 0 {
			cur = rest[off:]
		} else {
			cur = rest[off : off+end]
		}
		if isFence(cur, true) {
			fm = rest[:off]
			if end >= 0 {
				body = rest[off+end+1:]
			}
			return fm, body, line + 1, true
		}
		if off > maxFM {
			p.errorf(CodeFrontmatterTooLarge, "", 1, "frontmatter is over %d bytes (or its closing '---' is missing); keep the header small and move text to the body", maxFM)
			return nil, nil, 0, false
		}
		if end < 0 {
			break
		}
		off += end + 1
		line++
	}
	p.errorf(CodeUnterminated, "", 1, "frontmatter has no closing '---' line")
	return nil, nil, 0, false
}

func isFence(line []byte, closing bool) bool {
	t := bytes.TrimRight(line, " \t")
	return string(t) == "---" || (closing && string(t) == "...")
}

// readFields walks the top-level mapping and fills fm.
func (p *parser) readFields(root *yaml.Node, fm *skill.Frontmatter) {
	p.fieldLine = make(map[string]int)
	seen := make(map[string]bool)
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		key := k.Value
		line := k.Line + p.lineOffset
		if k.Kind != yaml.ScalarNode {
			p.warnf(CodeWrongType, "", line, "ignoring a field whose key is not a plain string")
			continue
		}
		if seen[key] {
			p.errorf(CodeDuplicateKey, key, line, "field %q appears twice; YAML forbids duplicate keys and readers disagree on which wins", key)
			continue
		}
		seen[key] = true
		p.fieldLine[key] = line
		v = p.deref(v)
		if v == nil {
			continue
		}
		p.readField(fm, key, line, v)
	}
}

// readField fills the field key of fm, at line, from its value v.
func (p *parser) readField(fm *skill.Frontmatter, key string, line int, v *yaml.Node) {
	switch key {
	case "name":
		fm.Name = p.str(key, v)
	case "description":
		fm.Description = strings.TrimSpace(p.str(key, v))
	case "license":
		fm.License = p.str(key, v)
	case "compatibility":
		fm.Compatibility = p.str(key, v)
	case "metadata":
		fm.Metadata = p.stringMap(key, v)
	case "allowed-tools":
		fm.AllowedTools = p.list(key, v, true)
	case "triggers":
		fm.Triggers = p.list(key, v, false)
	case "tags":
		fm.Tags = p.list(key, v, false)
	case "hidden":
		fm.Hidden = p.boolean(key, v) == true
	case "disable-model-invocation":
		fm.DisableModelInvocation = p.boolean(key, v) == true
	case "user-invocable":
		if b, ok := p.boolean(key, v).(bool); ok {
			fm.UserInvocable = &b
		}
	default:
		js, ok := p.toJSON(key, v)
		if !ok {
			return
		}
		if fm.Extra == nil {
			fm.Extra = make(map[string]string)
		}
		fm.Extra[key] = js
		if !hostExtensions[key] {
			p.warnf(CodeUnknownField, key, line, "field %q is not part of the Agent Skills spec; kept as extra metadata", key)
		}
	}
}

// deref follows one alias and rejects explicit non-core tags such as !!binary.
func (p *parser) deref(v *yaml.Node) *yaml.Node {
	if v.Kind == yaml.AliasNode {
		v = v.Alias
		if v == nil {
			return nil
		}
	}
	if v.Style&yaml.TaggedStyle != 0 && v.Kind == yaml.ScalarNode && v.Tag != "!!str" {
		p.warnf(CodeExplicitTag, "", v.Line+p.lineOffset, "value has explicit tag %s; ignored (write plain text)", v.Tag)
		return nil
	}
	return v
}

// str reads a scalar as text. Numbers and booleans are accepted with a warning,
// since YAML reads `name: 123` as an integer.
func (p *parser) str(key string, v *yaml.Node) string {
	line := v.Line + p.lineOffset
	if v.Kind != yaml.ScalarNode {
		p.warnf(CodeWrongType, key, line, "%s must be a string, not a %s; ignored", key, kindName(v))
		return ""
	}
	switch v.Tag {
	case "!!str", "":
	case "!!null":
		return ""
	default:
		p.warnf(CodeWrongType, key, line, "%s is a %s in YAML; read as the text %q (quote it to silence this)", key, strings.TrimPrefix(v.Tag, "!!"), v.Value)
	}
	return v.Value
}

func (p *parser) boolean(key string, v *yaml.Node) any {
	if v.Kind == yaml.ScalarNode && v.Tag == "!!bool" {
		var b bool
		if err := v.Decode(&b); err == nil {
			return b
		}
	}
	if v.Kind == yaml.ScalarNode && v.Tag == "!!str" {
		switch strings.ToLower(strings.TrimSpace(v.Value)) {
		case "true", "yes":
			p.warnf(CodeWrongType, key, v.Line+p.lineOffset, "%s is the string %q; read as true (write true without quotes)", key, v.Value)
			return true
		case "false", "no":
			p.warnf(CodeWrongType, key, v.Line+p.lineOffset, "%s is the string %q; read as false (write false without quotes)", key, v.Value)
			return false
		}
	}
	p.warnf(CodeWrongType, key, v.Line+p.lineOffset, "%s must be true or false; ignored", key)
	return nil
}

// list reads a sequence of strings, or a single string split on spaces (when
// spaceSeparated, as the spec defines allowed-tools) or on commas.
func (p *parser) list(key string, v *yaml.Node, spaceSeparated bool) []string {
	line := v.Line + p.lineOffset
	var out []string
	switch v.Kind {
	case yaml.ScalarNode:
		if v.Tag == "!!null" {
			return nil
		}
		var parts []string
		if spaceSeparated {
			parts = strings.Fields(v.Value)
		} else {
			parts = strings.Split(v.Value, ",")
		}
		for _, s := range parts {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	case yaml.SequenceNode:
		for _, item := range v.Content {
			item = p.deref(item)
			if item == nil {
				continue
			}
			if item.Kind != yaml.ScalarNode {
				p.warnf(CodeWrongType, key, item.Line+p.lineOffset, "%s entries must be strings; skipped a %s", key, kindName(item))
				continue
			}
			if s := strings.TrimSpace(item.Value); s != "" {
				out = append(out, s)
			}
		}
	default:
		p.warnf(CodeWrongType, key, line, "%s must be a list of strings, not a %s; ignored", key, kindName(v))
	}
	return out
}

// stringMap reads metadata: a map of strings. Non-string values are kept as
// JSON text with a warning, as the spec defines string values only.
func (p *parser) stringMap(key string, v *yaml.Node) map[string]string {
	if v.Kind != yaml.MappingNode {
		if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
			return nil
		}
		p.warnf(CodeWrongType, key, v.Line+p.lineOffset, "%s must be a mapping of strings, not a %s; ignored", key, kindName(v))
		return nil
	}
	out := make(map[string]string, len(v.Content)/2)
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], p.deref(v.Content[i+1])
		if val == nil {
			continue
		}
		if val.Kind == yaml.ScalarNode {
			out[k.Value] = val.Value
			continue
		}
		js, ok := p.toJSON(key+"."+k.Value, val)
		if !ok {
			return out
		}
		p.warnf(CodeMetadataNotString, key, val.Line+p.lineOffset, "metadata value %q is a %s; the spec allows strings only (kept as JSON)", k.Value, kindName(val))
		out[k.Value] = js
	}
	return out
}

// toJSON renders a node as compact JSON. decodeYAML bounded the expansion
// of the whole frontmatter before.
func (p *parser) toJSON(key string, v *yaml.Node) (string, bool) {
	b, err := json.Marshal(nodeValue(v))
	if err != nil {
		p.warnf(CodeWrongType, key, v.Line+p.lineOffset, "%s cannot be represented as JSON; ignored", key)
		return "", false
	}
	return string(b), true
}

func kindName(v *yaml.Node) string {
	switch v.Kind {
	case yaml.SequenceNode:
		return "list"
	case yaml.MappingNode:
		return "mapping"
	case yaml.ScalarNode:
		return strings.TrimPrefix(v.Tag, "!!")
	}
	return "value"
}

// checkName validates the name against the spec and returns the skill's
// identity: the name, or dirName when the name is missing.
func (p *parser) checkName(name, dirName string) string {
	line := p.fieldLine["name"]
	if line == 0 {
		line = 2
	}
	name = strings.TrimSpace(name)
	if name == "" {
		p.warnf(CodeNameMissing, "name", line, "name is missing; using the folder name %q", dirName)
		p.checkNameText(dirName, line)
		return dirName
	}
	p.checkNameText(name, line)
	if n := utf8.RuneCountInString(name); n > maxNameLen {
		p.warnf(CodeNameTooLong, "name", line, "name is %d characters; the spec allows %d", n, maxNameLen)
	}
	if msg := nameRuleViolation(name); msg != "" {
		p.warnf(CodeNameInvalid, "name", line, "name %q %s; the spec allows lowercase letters, digits and single hyphens inside", name, msg)
	}
	if dirName != "" && norm.NFKC.String(name) != norm.NFKC.String(dirName) {
		p.warnf(CodeNameMismatch, "name", line, "name %q differs from its folder %q; the spec wants them equal", name, dirName)
	}
	return name
}

// checkNameText refuses a name that is no UTF-8 (a folder name, which a
// skill without a name takes: file names are bytes) or holds a control
// character (C0, DEL, C1), a format character (bidirectional overrides and
// isolates, zero-width characters) or a line or paragraph separator: such a
// name could not be sent to clients as it is, or would reach terminals and
// models as escape sequences or reordered text, and the spec allows only
// lowercase letters, digits and hyphens. Other departures from the spec's
// rules are warnings, the skill served under its name.
func (p *parser) checkNameText(name string, line int) {
	if !utf8.ValidString(name) {
		p.errorf(CodeInvalidUTF8, "name", line, "the name %q, taken from the folder since the frontmatter has none, is not valid UTF-8; the skill is skipped (give it a name)", name)
		return
	}
	for _, r := range name {
		if skill.ControlChar(r) {
			p.errorf(CodeNameControl, "name", line, "name %q contains the control character %U; the skill is skipped (the spec allows lowercase letters, digits and single hyphens)", name, r)
			return
		}
	}
}

// nameRuleViolation says how name breaks the spec's character rules, or "".
func nameRuleViolation(name string) string {
	if strings.HasPrefix(name, "-") || strings.HasSuffix(name, "-") {
		return "starts or ends with a hyphen"
	}
	if strings.Contains(name, "--") {
		return "contains consecutive hyphens"
	}
	for _, r := range name {
		if r == '-' || unicode.IsDigit(r) || (unicode.IsLetter(r) && unicode.IsLower(r)) {
			continue
		}
		return fmt.Sprintf("contains %q", r)
	}
	if norm.NFKC.String(name) != name {
		return "is not in Unicode NFKC form"
	}
	return ""
}

func (p *parser) checkDescription(d string) bool {
	line := p.fieldLine["description"]
	if d == "" {
		if line == 0 {
			line = 2
		}
		p.errorf(CodeDescriptionMissing, "description", line, "description is missing or empty; the skill is skipped (say what it does and when to use it)")
		return false
	}
	if n := utf8.RuneCountInString(d); n > maxDescriptionLen {
		p.warnf(CodeDescriptionTooLong, "description", line, "description is %d characters; the spec allows %d", n, maxDescriptionLen)
	}
	if strings.ContainsAny(d, "<>") {
		p.warnf(CodeDescriptionAngle, "description", line, "description contains '<' or '>', which some hosts reject")
	}
	return true
}

// FoldName returns the key under which names collide: NFKC-normalised and
// case-folded, so "PDF" and "pdf", or "ſkill" and "skill", name one skill.
func FoldName(name string) string {
	return strings.ToLower(norm.NFKC.String(strings.TrimSpace(name)))
}
