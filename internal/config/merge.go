package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Setting is one value to write into a config file, at a dotted key path
// such as "match.fusion.convex_weight". A nil Value removes the key.
type Setting struct {
	Key   string
	Value any
}

// Merge writes settings into the YAML config file at path, keeping every
// other key and the comments, and creating the file (and missing mappings)
// when needed. The result is checked to be a valid configuration before it
// replaces the file, atomically.
func Merge(path string, settings []Setting) error {
	doc, preamble, err := readDoc(path)
	if err != nil {
		return err
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return fmt.Errorf("%s: the top level is not a mapping", path)
	}
	for _, s := range settings {
		if err := set(root, strings.Split(s.Key, "."), s.Value); err != nil {
			return fmt.Errorf("%s: %w", s.Key, err)
		}
	}
	var buf bytes.Buffer
	buf.Write(preamble)
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return err
	}
	check := Default()
	dec := yaml.NewDecoder(bytes.NewReader(buf.Bytes()))
	dec.KnownFields(true)
	if err := dec.Decode(&check); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("merged config would be invalid: %w", err)
	}
	return replaceFile(path, buf.Bytes())
}

// readDoc reads the YAML document at path. An empty, comments-only or
// missing file gives a document of one empty mapping, and the file's text
// as the preamble to keep above it.
func readDoc(path string) (doc *yaml.Node, preamble []byte, err error) {
	doc = &yaml.Node{}
	data, err := os.ReadFile(path)
	switch {
	case os.IsNotExist(err):
	case err != nil:
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	case len(bytes.TrimSpace(data)) > 0:
		if err := yaml.Unmarshal(data, doc); err != nil {
			return nil, nil, fmt.Errorf("%s is not valid YAML: %w", path, err)
		}
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		preamble = bytes.TrimRight(data, " \t\n")
		if len(preamble) > 0 {
			preamble = append(preamble, '\n')
		}
		doc = &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode}}}
	}
	return doc, preamble, nil
}

// replaceFile replaces the file at path with data atomically, through a
// temporary file in its folder, keeping the old file's permissions.
func replaceFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".config-*.yaml")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if fi, err := os.Stat(path); err == nil {
		_ = os.Chmod(tmp.Name(), fi.Mode().Perm())
	}
	return os.Rename(tmp.Name(), path)
}

// set puts value at path under the mapping m.
func set(m *yaml.Node, path []string, value any) error {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value != path[0] {
			continue
		}
		if len(path) == 1 {
			if value == nil {
				m.Content = append(m.Content[:i], m.Content[i+2:]...)
				return nil
			}
			return m.Content[i+1].Encode(value)
		}
		child := m.Content[i+1]
		if child.Kind != yaml.MappingNode {
			if child.Kind == yaml.ScalarNode && child.Tag == "!!null" {
				*child = yaml.Node{Kind: yaml.MappingNode}
			} else {
				return fmt.Errorf("%s is not a mapping", path[0])
			}
		}
		return set(child, path[1:], value)
	}
	if value == nil {
		return nil
	}
	key := &yaml.Node{Kind: yaml.ScalarNode, Value: path[0]}
	val := &yaml.Node{}
	if len(path) == 1 {
		if err := val.Encode(value); err != nil {
			return err
		}
	} else {
		val.Kind = yaml.MappingNode
		if err := set(val, path[1:], value); err != nil {
			return err
		}
	}
	m.Content = append(m.Content, key, val)
	return nil
}
