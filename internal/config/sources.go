package config

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// SourceKind says which layer set a value.
type SourceKind string

// Layers, in increasing precedence.
const (
	SourceDefault SourceKind = "default"
	SourceFile    SourceKind = "file"
	SourceEnv     SourceKind = "env"
	SourceFlag    SourceKind = "flag"
)

// Source is where one setting's value came from.
type Source struct {
	Kind SourceKind
	// Name is the config file, the environment variable or the flag.
	Name string
}

func (s Source) String() string {
	if s.Name == "" {
		return string(s.Kind)
	}
	return string(s.Kind) + " " + s.Name
}

// override is a setting that the environment and the command line can set.
type override struct {
	key, env, flag string
	get            func(Overrides) string
}

var overrides = []override{
	{"addr", "MCPSAG_ADDR", "--addr", func(o Overrides) string { return o.Addr }},
	{"workspace", "MCPSAG_WORKSPACE", "--workspace", func(o Overrides) string { return o.Workspace }},
	{"state_dir", "MCPSAG_STATE_DIR", "--state-dir", func(o Overrides) string { return o.StateDir }},
	{"admin_addr", "MCPSAG_ADMIN_ADDR", "--admin-addr", func(o Overrides) string { return o.AdminAddr }},
	{"model.dir", "MCPSAG_MODEL_DIR", "--model-dir", func(o Overrides) string { return o.ModelDir }},
	{"log_level", "MCPSAG_LOG_LEVEL", "--log-level", func(o Overrides) string { return o.LogLevel }},
	{"mcp.addr", "MCPSAG_MCP_ADDR", "--mcp-addr", func(o Overrides) string { return o.MCPAddr }},
}

// noteOverrides records the settings set in o (non-empty, or a listener
// turned off) as coming from kind.
func (c *Config) noteOverrides(o Overrides, kind SourceKind) {
	for _, ov := range overrides {
		if ov.get(o) == "" && !slices.Contains(o.Off, ov.key) {
			continue
		}
		name := ov.env
		if kind == SourceFlag {
			name = ov.flag
		}
		c.Sources[ov.key] = Source{Kind: kind, Name: name}
	}
}

// SourceOf returns where the setting at a dotted path came from; settings
// nobody set are defaults.
func (c *Config) SourceOf(key string) Source {
	if s, ok := c.Sources[key]; ok {
		return s
	}
	return Source{Kind: SourceDefault}
}

// blame turns validation problems into one error that names, for each, where
// the value at fault came from: a flag, a variable or the config file.
func (c *Config) blame(problems []error) error {
	out := make([]error, len(problems))
	for i, p := range problems {
		src := c.sourceOfProblem(p.Error())
		if src.Kind == SourceDefault {
			out[i] = p
		} else {
			out[i] = fmt.Errorf("%s: %w", src, p)
		}
	}
	return errors.Join(out...)
}

// sourceOfProblem finds the source of the key a problem starts with ("addr:",
// "log_level \"x\"", "roots[2]: ...", "load: ..."): the key itself, or the
// highest-precedence setting under it.
func (c *Config) sourceOfProblem(msg string) Source {
	key := msg
	if i := strings.IndexAny(msg, ` :[`); i >= 0 {
		key = msg[:i]
	}
	if s, ok := c.Sources[key]; ok {
		return s
	}
	best := Source{Kind: SourceDefault}
	rank := map[SourceKind]int{SourceDefault: 0, SourceFile: 1, SourceEnv: 2, SourceFlag: 3}
	for k, s := range c.Sources {
		if strings.HasPrefix(k, key+".") && rank[s.Kind] > rank[best.Kind] {
			best = s
		}
	}
	return best
}

// settingPaths lists the dotted paths of the leaves of a YAML mapping: every
// key whose value is not itself a mapping.
func settingPaths(data []byte) []string {
	var doc yaml.Node
	if len(bytes.TrimSpace(data)) == 0 || yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
		return nil
	}
	var out []string
	var walk func(n *yaml.Node, prefix string)
	walk = func(n *yaml.Node, prefix string) {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i].Value, n.Content[i+1]
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			if v.Kind == yaml.MappingNode {
				walk(v, p)
			} else {
				out = append(out, p)
			}
		}
	}
	if root := doc.Content[0]; root.Kind == yaml.MappingNode {
		walk(root, "")
	}
	sort.Strings(out)
	return out
}

// Explain renders the configuration as YAML with each setting's source as a
// line comment; notes adds comments of its own for some keys (the daemon
// says which model an empty model.dir means, and where a zero threshold comes
// from).
func (c Config) Explain(notes map[string]string) (string, error) {
	var root yaml.Node
	if err := root.Encode(c); err != nil {
		return "", fmt.Errorf("render config: %w", err)
	}
	var walk func(n *yaml.Node, prefix string)
	walk = func(n *yaml.Node, prefix string) {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := k.Value
			if prefix != "" {
				p = prefix + "." + k.Value
			}
			if v.Kind == yaml.MappingNode && len(v.Content) > 0 {
				walk(v, p)
				continue
			}
			comment := c.SourceOf(p).String()
			if note, ok := notes[p]; ok {
				comment += "; " + note
			}
			k.LineComment = comment
		}
	}
	walk(&root, "")
	var b strings.Builder
	head := "# effective configuration; each setting says where its value came from\n"
	if c.File != "" {
		head += "# config file: " + c.File + "\n"
	} else {
		head += "# config file: none (defaults, environment and flags only)\n"
	}
	b.WriteString(head)
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&root); err != nil {
		return "", fmt.Errorf("render config: %w", err)
	}
	return b.String(), nil
}
