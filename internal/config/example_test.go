package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/mcpsag/router/internal/match"
	"github.com/mcpsag/router/internal/skill"
)

// TestExampleListsEveryKey: the example config file documents every key the
// router reads (as a setting or a comment), so a new key cannot go
// undocumented.
func TestExampleListsEveryKey(t *testing.T) {
	for _, key := range unnamedKeys(reflect.TypeOf(Config{}), readExample(t)) {
		t.Errorf("key %s is not in examples/.mcp/.mcp-config.yaml", key)
	}
}

// readExample returns the example config file.
func readExample(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "examples", ".mcp", ".mcp-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// unnamedKeys lists the keys of struct type t (yamlKeys) whose name text
// never shows as "name:".
func unnamedKeys(t reflect.Type, text string) []string {
	var out []string
	for _, key := range yamlKeys(t, "") {
		name := key[strings.LastIndex(key, ".")+1:]
		if !strings.Contains(text, name+":") {
			out = append(out, key)
		}
	}
	return out
}

// yamlName is a struct field's YAML key, "" when it has none.
func yamlName(f reflect.StructField) string {
	tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if tag == "-" {
		return ""
	}
	return tag
}

// yamlKeys lists the dotted YAML paths of a struct type's fields, through
// nested structs (not into lists).
func yamlKeys(t reflect.Type, prefix string) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag := yamlName(f)
		if tag == "" {
			continue
		}
		path := prefix + tag
		out = append(out, path)
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct && ft.PkgPath() != "time" {
			out = append(out, yamlKeys(ft, path+".")...)
		}
	}
	return out
}

// TestExampleShowsTheDefaults: every value the example config file shows,
// commented out or set, is the default, except where it says it is an
// example (roots, mcp_servers) or the bundled calibration applies (the
// classifiers and their calibrated_on).
func TestExampleShowsTheDefaults(t *testing.T) {
	var doc map[string]any
	if err := yaml.Unmarshal([]byte(uncommentedYAML(readExample(t))), &doc); err != nil {
		t.Fatalf("the example's settings, uncommented, are not YAML: %v", err)
	}
	for _, key := range []string{"roots", "mcp_servers"} {
		if _, ok := doc[key]; !ok {
			t.Errorf("the example does not show %s", key)
		}
		delete(doc, key)
	}
	m, _ := doc["match"].(map[string]any)
	abstain, _ := m["abstain"].(map[string]any)
	if abstain == nil {
		t.Fatal("the example does not show match.abstain")
	}
	delete(abstain, "classifiers")
	delete(m, "calibrated_on")
	shown, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	want, got := Default(), Default()
	if err := yaml.Unmarshal(shown, &got); err != nil {
		t.Fatalf("the example's settings do not decode: %v", err)
	}
	// Empty paths and an empty precedence mean defaults filled in later:
	// compare what they resolve to.
	for _, c := range []*Config{&want, &got} {
		if err := c.absPaths(); err != nil {
			t.Fatal(err)
		}
	}
	if len(want.Precedence) != 0 {
		t.Fatalf("the default precedence is %v, not the empty list that means skill.DefaultPrecedence", want.Precedence)
	}
	if order, err := got.PrecedenceKinds(); err != nil || !reflect.DeepEqual(order, skill.DefaultPrecedence) {
		t.Errorf("the example shows precedence %v (%v), the default is %v", order, err, skill.DefaultPrecedence)
	}
	got.Precedence = want.Precedence
	for _, d := range differences(reflect.ValueOf(want), reflect.ValueOf(got), "") {
		t.Errorf("examples/.mcp/.mcp-config.yaml shows %s, which is not the default", d)
	}
}

// commentedSetting is a commented-out line of YAML: a key or a list item
// after "# " and its indentation.
var commentedSetting = regexp.MustCompile(`^# (\s*([a-z_]+:|- ))`)

// uncommentedYAML returns the settings of a commented config file: its
// uncommented lines, and its commented ones that hold a key or a list item
// with the "# " before them removed; prose comments are dropped.
func uncommentedYAML(text string) string {
	var b strings.Builder
	for line := range strings.Lines(text) {
		switch {
		case commentedSetting.MatchString(line):
			b.WriteString(line[2:])
		case !strings.HasPrefix(line, "#"):
			b.WriteString(line)
		}
	}
	return b.String()
}

// differences names, by YAML path, the fields where a and b (values of one
// struct type) differ, with b's value. An empty list or map equals none.
func differences(a, b reflect.Value, path string) []string {
	if a.Kind() == reflect.Struct && a.Type().PkgPath() != "time" {
		var out []string
		for i := range a.NumField() {
			tag := yamlName(a.Type().Field(i))
			if tag == "" {
				continue
			}
			out = append(out, differences(a.Field(i), b.Field(i), path+tag+".")...)
		}
		return out
	}
	if reflect.DeepEqual(a.Interface(), b.Interface()) {
		return nil
	}
	if k := a.Kind(); (k == reflect.Slice || k == reflect.Map) && a.Len() == 0 && b.Len() == 0 {
		return nil // [] in YAML is no list
	}
	return []string{fmt.Sprintf("%s %v (default %v)", strings.TrimSuffix(path, "."), b.Interface(), a.Interface())}
}

// TestMatchingDocShowsTheDefaults: the match settings block of
// docs/matching.md names every match key and shows its default.
func TestMatchingDocShowsTheDefaults(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "matching.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(data), "\n## Configuration\n")
	_, block, ok := strings.Cut(section, "\n```yaml\n")
	block, _, closed := strings.Cut(block, "\n```\n")
	if !ok || !closed {
		t.Fatal(`docs/matching.md has no yaml block under "## Configuration"`)
	}
	for _, key := range unnamedKeys(reflect.TypeOf(match.Config{}), block) {
		t.Errorf("match key %s is not in docs/matching.md's settings", key)
	}
	got := match.DefaultConfig()
	if err := yaml.Unmarshal([]byte(block), &got); err != nil {
		t.Fatalf("docs/matching.md's settings do not decode: %v", err)
	}
	for _, d := range differences(reflect.ValueOf(match.DefaultConfig()), reflect.ValueOf(got), "") {
		t.Errorf("docs/matching.md shows %s, which is not the default", d)
	}
}
