package models

import (
	"bytes"
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

// TestDefaultReplacesADamagedCopy damages the unpacked model the way a disk
// does; the next call must write it again rather than serve the damage.
func TestDefaultReplacesADamagedCopy(t *testing.T) {
	dir := t.TempDir()
	p, err := Default(dir)
	if err != nil {
		t.Fatal(err)
	}
	onnx := filepath.Join(p, "model.onnx")
	want, err := os.ReadFile(onnx)
	if err != nil {
		t.Fatal(err)
	}
	damaged := append([]byte(nil), want...)
	damaged[len(damaged)/2] ^= 0x40
	if err := os.WriteFile(onnx, damaged, 0o640); err != nil {
		t.Fatal(err)
	}
	again, err := Default(dir)
	if err != nil || again != p {
		t.Fatalf("after damage: %q, %v; want %q", again, err, p)
	}
	got, err := os.ReadFile(onnx)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("the damaged model.onnx was not replaced (err %v)", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("%d entries in %s after the repair, want only the model folder", len(entries), dir)
	}
}
