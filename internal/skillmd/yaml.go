package skillmd

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// The frontmatter's YAML: decoded into a node tree within the limits every
// reader of it shares (measureYAML), with a retry for the commonest
// breakage, and turned into plain values for JSON.

// decodeYAML parses the frontmatter into a mapping node, and refuses one
// that, its aliases expanded, holds more than maxBytes of text, more than
// maxYAMLNodes nodes or nests deeper than maxYAMLDepth (measureYAML). When
// the YAML does not parse because of an unquoted ": " inside a value, which
// is the most common breakage in real skills, it retries with such values
// quoted and warns.
func (p *parser) decodeYAML(fm []byte, maxBytes int) (*yaml.Node, bool) {
	p.lineOffset = 1 // the opening fence is line 1
	if !utf8.Valid(fm) {
		p.errorf(CodeInvalidUTF8, "", 1, "frontmatter is not valid UTF-8")
		return nil, false
	}
	var doc yaml.Node
	err := safeUnmarshal(fm, &doc)
	if err != nil {
		if fixed, lines := quoteColonValues(fm); len(lines) > 0 {
			var retry yaml.Node
			if safeUnmarshal(fixed, &retry) == nil {
				for _, l := range lines {
					p.warnf(CodeUnquotedColon, "", l+p.lineOffset, "value contains ': ' without quotes; read it as a quoted string (quote it to silence this)")
				}
				doc, err = retry, nil
			}
		}
	}
	if err != nil {
		p.errorf(CodeYAMLSyntax, "", yamlErrorLine(err)+p.lineOffset, "frontmatter is not valid YAML: %s", cleanYAMLError(err))
		return nil, false
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		p.errorf(CodeYAMLNotMapping, "", 2, "frontmatter is empty; add name and description")
		return nil, false
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		p.errorf(CodeYAMLNotMapping, "", root.Line+p.lineOffset, "frontmatter must be a mapping of fields (name: ..., description: ...)")
		return nil, false
	}
	if m := measureYAML(root, maxBytes); m.problem != "" {
		p.errorf(m.code, m.field, m.line+p.lineOffset, "%s", m.problem)
		return nil, false
	}
	return root, true
}

// yamlMeasure is what measureYAML found wrong with a frontmatter: the
// problem's code and text, and the field and line where the limit was
// passed; problem is "" when the frontmatter is within the limits.
type yamlMeasure struct {
	nodes, bytes int
	code         string
	field        string
	line         int
	problem      string
}

// measureYAML walks the frontmatter root with every alias expanded, as
// readers of its fields see it, and says whether it stays within maxBytes
// of text (keys and scalar values), maxYAMLNodes nodes and maxYAMLDepth
// levels (the root is level 0, a field's value level 1; following an alias
// is a level). It stops at the first limit passed, so its work is bounded
// whatever the aliases multiply.
func measureYAML(root *yaml.Node, maxBytes int) yamlMeasure {
	m := yamlMeasure{}
	for i := 0; i+1 < len(root.Content) && m.problem == ""; i += 2 {
		k := root.Content[i]
		m.field, m.line = k.Value, k.Line
		m.walk(k, 1, maxBytes)
		m.walk(root.Content[i+1], 1, maxBytes)
	}
	return m
}

func (m *yamlMeasure) walk(n *yaml.Node, depth, maxBytes int) {
	if m.problem != "" {
		return
	}
	m.nodes++
	switch {
	case m.nodes > maxYAMLNodes:
		m.code, m.problem = CodeYAMLTooComplex, fmt.Sprintf("frontmatter expands to more than %d YAML nodes (aliases?); the skill is skipped", maxYAMLNodes)
		return
	case depth > maxYAMLDepth:
		m.code, m.problem = CodeYAMLTooComplex, fmt.Sprintf("frontmatter nests deeper than %d levels; the skill is skipped", maxYAMLDepth)
		return
	}
	switch n.Kind {
	case yaml.AliasNode:
		if n.Alias != nil {
			m.walk(n.Alias, depth+1, maxBytes)
		}
	case yaml.ScalarNode:
		if m.bytes += len(n.Value); m.bytes > maxBytes {
			m.code, m.problem = CodeFrontmatterTooLarge, fmt.Sprintf("frontmatter is over %d bytes once its aliases (*name) are expanded; "+
				"the skill is skipped (write each value once, or raise limits.max_frontmatter_bytes)", maxBytes)
		}
	default:
		for _, c := range n.Content {
			m.walk(c, depth+1, maxBytes)
		}
	}
}

// safeUnmarshal parses YAML into a node tree, turning a library panic into an
// error. Aliases are not expanded here: decodeYAML bounds their expansion
// before any field is read.
func safeUnmarshal(b []byte, n *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml parser failed: %v", r)
		}
	}()
	return yaml.Unmarshal(b, n)
}

var yamlLineRE = regexp.MustCompile(`line (\d+)`)

func yamlErrorLine(err error) int {
	m := yamlLineRE.FindStringSubmatch(err.Error())
	if m == nil {
		return 1
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

func cleanYAMLError(err error) string {
	s := strings.TrimPrefix(err.Error(), "yaml: ")
	return yamlLineRE.ReplaceAllString(strings.TrimPrefix(s, "unmarshal errors:\n  "), "")
}

var plainKeyValueRE = regexp.MustCompile(`^([A-Za-z0-9_-]+):[ \t]+(.*)$`)

// quoteColonValues rewrites top-level "key: value" lines whose plain value
// contains ": " as double-quoted strings. It returns the rewritten text and the
// 1-based YAML lines it changed.
func quoteColonValues(fm []byte) ([]byte, []int) {
	lines := strings.Split(string(fm), "\n")
	var changed []int
	for i, l := range lines {
		m := plainKeyValueRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		v := strings.TrimRight(m[2], " \t")
		if v == "" || strings.ContainsAny(v[:1], `"'[{|>&*!%@`+"`") || !strings.Contains(v, ": ") {
			continue
		}
		lines[i] = m[1] + ": " + strconv.Quote(v)
		changed = append(changed, i+1)
	}
	return []byte(strings.Join(lines, "\n")), changed
}

// nodeValue is v as a Go value for encoding/json, aliases expanded. Its
// work is what measureYAML allowed when the frontmatter was decoded.
func nodeValue(v *yaml.Node) any {
	switch v.Kind {
	case yaml.AliasNode:
		if v.Alias == nil {
			return nil
		}
		return nodeValue(v.Alias)
	case yaml.ScalarNode:
		switch v.Tag {
		case "!!int", "!!float", "!!bool", "!!null":
			var x any
			if err := v.Decode(&x); err == nil {
				return x
			}
		}
		return v.Value
	case yaml.SequenceNode:
		out := make([]any, 0, len(v.Content))
		for _, c := range v.Content {
			out = append(out, nodeValue(c))
		}
		return out
	case yaml.MappingNode:
		out := make(map[string]any, len(v.Content)/2)
		for i := 0; i+1 < len(v.Content); i += 2 {
			out[v.Content[i].Value] = nodeValue(v.Content[i+1])
		}
		return out
	}
	return nil
}
