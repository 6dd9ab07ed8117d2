package models

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDefaultExtractsOnce(t *testing.T) {
	dir := t.TempDir()
	p, err := Default(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"model.onnx", "tokenizer.json", "mcpsag-model.json"} {
		if fi, err := os.Stat(filepath.Join(p, n)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", n, err)
		}
	}
	again, err := Default(dir)
	if err != nil || again != p {
		t.Errorf("second call = %q, %v; want %q", again, err, p)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("%d entries in %s, want only the model folder", len(entries), dir)
	}
}
