package skillmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/mcpsag/router/internal/skill"
)

// FrontmatterJSON returns the frontmatter of a SKILL.md held in data as a
// JSON object: every field the author wrote, decoded as Parse decodes it
// (an unquoted ": " inside a value read as a string, integers, floats,
// booleans and nulls as JSON values, every other scalar as its text), under
// the limits on size, nodes and depth Parse applies. When the frontmatter has no name, name is
// set to name. It fails where Parse skips the file, and on values JSON
// cannot hold (such as .inf).
func FrontmatterJSON(data []byte, name string, lim Limits) ([]byte, error) {
	p := &parser{}
	if int64(len(data)) > lim.MaxFileBytes {
		return nil, fmt.Errorf("the file is %d bytes, over the %d-byte limit", len(data), lim.MaxFileBytes)
	}
	text := normaliseNewlines(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")))
	fm, _, _, ok := splitFrontmatter(text, lim.MaxFrontmatterBytes, p)
	if !ok {
		return nil, firstError(p)
	}
	root, ok := p.decodeYAML(fm, lim.MaxFrontmatterBytes)
	if !ok {
		return nil, firstError(p)
	}
	fields := make(map[string]any, len(root.Content)/2)
	for i := 0; i+1 < len(root.Content); i += 2 {
		k := root.Content[i]
		if k.Kind != yaml.ScalarNode {
			continue // Parse ignores such keys too
		}
		if _, dup := fields[k.Value]; dup {
			return nil, fmt.Errorf("field %q appears twice", k.Value)
		}
		fields[k.Value] = nodeValue(root.Content[i+1])
	}
	if v, ok := fields["name"]; !ok || v == nil || v == "" {
		fields["name"] = name
	}
	b, err := json.Marshal(fields)
	if err != nil {
		return nil, fmt.Errorf("the frontmatter cannot be written as JSON: %w", err)
	}
	return b, nil
}

// firstError turns the parser's first error into an error value.
func firstError(p *parser) error {
	for _, pr := range p.problems {
		if pr.Severity == skill.SeverityError {
			return errors.New(pr.Message)
		}
	}
	return errors.New("the frontmatter does not parse")
}
