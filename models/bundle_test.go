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

// TestSameContent: files equal, differing in one byte, or one a prefix of
// the other, including at the edge of a read block.
func TestSameContent(t *testing.T) {
	block := bytes.Repeat([]byte("m"), 64<<10)
	long := append(append([]byte(nil), block...), block...)
	flipped := append([]byte(nil), long...)
	flipped[len(flipped)-1] ^= 1
	for _, c := range []struct {
		name string
		a, b []byte
		want bool
	}{
		{"both empty", nil, nil, true},
		{"equal, two blocks", long, long, true},
		{"equal, short", []byte("abc"), []byte("abc"), true},
		{"last byte differs", long, flipped, false},
		{"cut at a block", long, block, false},
		{"one byte longer", long, append(append([]byte(nil), long...), 'x'), false},
		{"empty and not", nil, []byte("a"), false},
	} {
		if got := sameContent(bytes.NewReader(c.a), bytes.NewReader(c.b)); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
		if got := sameContent(bytes.NewReader(c.b), bytes.NewReader(c.a)); got != c.want {
			t.Errorf("%s, swapped: %v, want %v", c.name, got, c.want)
		}
	}
}
