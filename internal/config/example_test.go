package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestExampleListsEveryKey: the example config file documents every key the
// router reads (as a setting or a comment), so a new key cannot go
// undocumented.
func TestExampleListsEveryKey(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "examples", ".mcp", ".mcp-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for _, key := range yamlKeys(reflect.TypeOf(Config{}), "") {
		name := key[strings.LastIndex(key, ".")+1:]
		if !strings.Contains(text, name+":") {
			t.Errorf("key %s is not in examples/.mcp/.mcp-config.yaml", key)
		}
	}
}

// yamlKeys lists the dotted YAML paths of a struct type's fields, through
// nested structs (not into lists).
func yamlKeys(t reflect.Type, prefix string) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if tag == "" || tag == "-" {
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
