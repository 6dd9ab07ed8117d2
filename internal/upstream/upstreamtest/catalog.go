package upstreamtest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsag/router/internal/skillmd"
)

// CatalogTool is one tool of a dev set as an MCP server would define it.
type CatalogTool struct {
	// Name is the tool's original name (mapping.json's key); Label the
	// skill name the dev set's queries use for it.
	Name, Label string
	Description string
	// InputSchema is built from the parameters the skill's body lists;
	// OutputSchema from the values it returns (nil when it lists none).
	InputSchema, OutputSchema json.RawMessage
}

// paramLine is one line of a dev-set skill's "## Parameters" section:
// - `name` (type, required): description
var paramLine = regexp.MustCompile("^- `([^`]+)` \\(([^,)]+)(, required)?\\)(?:: (.*))?$")

// LoadCatalog reads a dev set (../shared/eval/<set>: skills/<name>/SKILL.md
// and mapping.json, original tool name to skill name) back into the tools it
// was made from: each skill's original name, its description, an input
// schema built from the parameters its body lists (name, type, required,
// description) and an output schema from the values it returns. Sets whose
// bodies list no parameters give tools with an empty object schema.
func LoadCatalog(dir string) ([]CatalogTool, error) {
	b, err := os.ReadFile(filepath.Join(dir, "mapping.json"))
	if err != nil {
		return nil, fmt.Errorf("dev set %s: %w", dir, err)
	}
	var mapping map[string]string
	if err := json.Unmarshal(b, &mapping); err != nil {
		return nil, fmt.Errorf("dev set %s: mapping.json: %w", dir, err)
	}
	var out []CatalogTool
	for original, label := range mapping {
		data, err := os.ReadFile(filepath.Join(dir, "skills", label, "SKILL.md"))
		if err != nil {
			return nil, fmt.Errorf("dev set %s: tool %s: %w", dir, original, err)
		}
		p, problems := skillmd.Parse(data, label, skillmd.DefaultLimits)
		if p == nil {
			return nil, fmt.Errorf("dev set %s: %s: %v", dir, label, problems)
		}
		in, err := ObjectSchema(p.Body, "## Parameters")
		if err != nil {
			return nil, fmt.Errorf("dev set %s: %s: %w", dir, label, err)
		}
		res, err := ObjectSchema(p.Body, "## Returns")
		if err != nil {
			return nil, fmt.Errorf("dev set %s: %s: %w", dir, label, err)
		}
		if string(res) == `{"type":"object","properties":{}}` {
			res = nil
		}
		out = append(out, CatalogTool{Name: original, Label: label, Description: p.Frontmatter.Description, InputSchema: in, OutputSchema: res})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// jsonTypes maps the dev sets' Python type names to JSON Schema types.
var jsonTypes = map[string]string{
	"str": "string", "int": "integer", "float": "number", "bool": "boolean",
	"list": "array", "dict": "object",
}

// ObjectSchema builds an object schema from the lines of one section of a
// dev-set skill's body ("## Parameters" or "## Returns"), in their order.
func ObjectSchema(body, section string) (json.RawMessage, error) {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	var required []string
	n := 0
	in := false
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "## ") {
			in = line == section
			continue
		}
		m := paramLine.FindStringSubmatch(line)
		if !in || m == nil {
			continue
		}
		prop := map[string]string{"description": m[4]}
		if t, ok := jsonTypes[strings.ToLower(strings.TrimSpace(m[2]))]; ok {
			prop["type"] = t
		}
		name, _ := json.Marshal(m[1])
		val, _ := json.Marshal(prop)
		if n > 0 {
			b.WriteByte(',')
		}
		b.Write(name)
		b.WriteByte(':')
		b.Write(val)
		n++
		if m[3] != "" {
			required = append(required, m[1])
		}
	}
	b.WriteString("}")
	if len(required) > 0 {
		r, _ := json.Marshal(required)
		b.WriteString(`,"required":`)
		b.Write(r)
	}
	b.WriteString("}")
	out := json.RawMessage(b.String())
	if !json.Valid(out) {
		return nil, fmt.Errorf("built an invalid schema")
	}
	return out, sc.Err()
}

// NewCatalogServer returns an MCP server (the official Go SDK) that lists
// tools, 500 per page. A call answers with the tool's name and arguments.
func NewCatalogServer(tools []CatalogTool) *mcpsdk.Server {
	srv := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "mcpsag-catalog", Version: "1.0"}, &mcpsdk.ServerOptions{PageSize: 500})
	for _, t := range tools {
		name := t.Name
		tool := &mcpsdk.Tool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema}
		if t.OutputSchema != nil {
			tool.OutputSchema = t.OutputSchema
		}
		srv.AddTool(tool,
			func(_ context.Context, req *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
				return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{
					Text: fmt.Sprintf("called %s with %s", name, req.Params.Arguments)}}}, nil
			})
	}
	return srv
}

// Labels maps each tool's original name to its dev-set label, as
// mapping.json does.
func Labels(tools []CatalogTool) map[string]string {
	out := make(map[string]string, len(tools))
	for _, t := range tools {
		out[t.Name] = t.Label
	}
	return out
}
