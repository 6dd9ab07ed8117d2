// Package dashboard reads a Grafana dashboard JSON file, such as the
// router's deploy/grafana/mcpsag-router.json, and lists its PromQL queries
// with their variables expanded. Tests use it to check that every query
// names metrics the router exports and, against a real Prometheus, that
// every query returns data.
package dashboard

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Dashboard is the part of a Grafana dashboard model the checks need.
type Dashboard struct {
	UID           string     `json:"uid"`
	Title         string     `json:"title"`
	SchemaVersion int        `json:"schemaVersion"`
	ID            *int       `json:"id"`
	Inputs        []Input    `json:"__inputs"`
	Panels        []Panel    `json:"panels"`
	Templating    Templating `json:"templating"`
}

// Input is an entry of __inputs, present in dashboards exported for sharing.
type Input struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	PluginID string `json:"pluginId"`
}

// Panel is a panel or a row; rows hold their panels when collapsed.
type Panel struct {
	ID         int         `json:"id"`
	Type       string      `json:"type"`
	Title      string      `json:"title"`
	Datasource *Datasource `json:"datasource"`
	GridPos    GridPos     `json:"gridPos"`
	Targets    []Target    `json:"targets"`
	Panels     []Panel     `json:"panels"`
}

// GridPos is a panel's place on the 24-column grid.
type GridPos struct {
	H int `json:"h"`
	W int `json:"w"`
	X int `json:"x"`
	Y int `json:"y"`
}

// Datasource references a data source by type and uid (possibly a
// variable such as ${DS_PROMETHEUS}).
type Datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// Target is one query of a panel.
type Target struct {
	RefID      string      `json:"refId"`
	Expr       string      `json:"expr"`
	Datasource *Datasource `json:"datasource"`
}

// Templating holds the dashboard variables.
type Templating struct {
	List []Variable `json:"list"`
}

// Variable is a dashboard variable. Query is a string or an object with a
// "query" field, depending on the Grafana version that saved it.
type Variable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	Datasource *Datasource     `json:"datasource"`
}

// Parse decodes a dashboard JSON document.
func Parse(data []byte) (*Dashboard, error) {
	var d Dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("parse dashboard: %w", err)
	}
	return &d, nil
}

// AllPanels returns every panel that is not a row, including those inside
// collapsed rows, in document order.
func (d *Dashboard) AllPanels() []Panel {
	var out []Panel
	var walk func([]Panel)
	walk = func(ps []Panel) {
		for _, p := range ps {
			if p.Type != "row" {
				out = append(out, p)
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

// Query is one PromQL expression and where it comes from.
type Query struct {
	// Source is "panel <title> <refId>" or "variable <name>".
	Source string
	// Expr is the expression as written, with dashboard variables.
	Expr string
}

// labelValues matches a Grafana label_values(selector, label) variable query.
var labelValues = regexp.MustCompile(`^\s*label_values\(\s*(.+?)\s*,\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)\s*$`)

// Queries returns the PromQL of every panel target and of every query
// variable. A label_values(selector, label) variable yields its selector,
// which is itself a valid instant query.
func (d *Dashboard) Queries() ([]Query, error) {
	var out []Query
	for _, p := range d.AllPanels() {
		for _, t := range p.Targets {
			if strings.TrimSpace(t.Expr) == "" {
				continue
			}
			out = append(out, Query{Source: fmt.Sprintf("panel %q %s", p.Title, t.RefID), Expr: t.Expr})
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, err := variableQuery(v.Query)
		if err != nil {
			return nil, fmt.Errorf("variable %s: %w", v.Name, err)
		}
		if m := labelValues.FindStringSubmatch(q); m != nil {
			q = m[1]
		}
		out = append(out, Query{Source: "variable " + v.Name, Expr: q})
	}
	return out, nil
}

func variableQuery(raw json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var obj struct {
		Query string `json:"query"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return "", fmt.Errorf("query is neither a string nor an object: %w", err)
	}
	return obj.Query, nil
}

// Builtins are values for Grafana's built-in interval variables, suitable
// for a short test against a Prometheus that scrapes every few seconds.
var Builtins = map[string]string{
	"__rate_interval": "1m",
	"__interval":      "15s",
	"__range":         "1h",
}

// varRef matches $name, ${name}, ${name:format} and [[name]].
var varRef = regexp.MustCompile(`\$\{(\w+)(?::\w+)?\}|\$(\w+)|\[\[(\w+)\]\]`)

// Expand replaces dashboard variables in expr with values from vars, then
// from Builtins. It returns an error naming any variable it cannot expand.
func Expand(expr string, vars map[string]string) (string, error) {
	var missing []string
	out := varRef.ReplaceAllStringFunc(expr, func(ref string) string {
		m := varRef.FindStringSubmatch(ref)
		name := m[1] + m[2] + m[3]
		if v, ok := vars[name]; ok {
			return v
		}
		if v, ok := Builtins[name]; ok {
			return v
		}
		missing = append(missing, name)
		return ref
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("expand %q: unknown variables %v", expr, missing)
	}
	return out, nil
}

var (
	stringLit  = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`")
	matchers   = regexp.MustCompile(`\{[^{}]*\}`)
	ranges     = regexp.MustCompile(`\[[^\[\]]*\]`)
	grouping   = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	offsets    = regexp.MustCompile(`\boffset\s+-?[0-9][0-9a-z]*`)
	numbers    = regexp.MustCompile(`(^|[^a-zA-Z0-9_:])(0x[0-9a-fA-F]+|[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?|\.[0-9]+([eE][-+]?[0-9]+)?)`)
	identifier = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
)

// keywords are PromQL words that are not metric names when they are not
// followed by "(".
var keywords = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"bool": true, "and": true, "or": true, "unless": true, "offset": true, "inf": true, "nan": true,
	"Inf": true, "NaN": true,
}

// MetricNames returns the metric names an expanded PromQL expression
// selects, sorted and without duplicates. It is a lexical scan, not a
// parser: it drops strings, label matchers, ranges, grouping clauses,
// numbers and function calls, and keeps the remaining identifiers. Names
// given only as {__name__="..."} are not reported.
func MetricNames(expr string) []string {
	s := stringLit.ReplaceAllString(expr, `""`)
	s = matchers.ReplaceAllString(s, " ")
	s = ranges.ReplaceAllString(s, " ")
	s = grouping.ReplaceAllString(s, " ")
	s = offsets.ReplaceAllString(s, " ")
	s = numbers.ReplaceAllString(s, "$1 ")
	var names []string
	for _, loc := range identifier.FindAllStringIndex(s, -1) {
		word := s[loc[0]:loc[1]]
		rest := strings.TrimLeft(s[loc[1]:], " \t\n")
		if strings.HasPrefix(rest, "(") || keywords[word] {
			continue
		}
		names = append(names, word)
	}
	slices.Sort(names)
	return slices.Compact(names)
}
