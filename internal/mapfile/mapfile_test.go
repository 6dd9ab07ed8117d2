package mapfile

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadGivesTheFileBytes(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string][]byte{
		"empty": nil,
		"small": []byte("a few bytes"),
		"pages": bytes.Repeat([]byte("0123456789abcdef"), 5000), // 80,000 bytes: several pages, the last one partial
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, content, 0o644); err != nil {
				t.Fatal(err)
			}
			data, release, err := Read(p)
			if err != nil {
				t.Fatal(err)
			}
			defer release()
			if !bytes.Equal(data, content) {
				t.Fatalf("read %d bytes, want the file's %d", len(data), len(content))
			}
		})
	}
	if _, _, err := Read(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v, want ErrNotExist", err)
	}
}

// TestGuardTurnsAFaultIntoAnError cuts a mapped file short and reads the
// mapping past the new end: the fault must come back as an error, not end
// the process.
func TestGuardTurnsAFaultIntoAnError(t *testing.T) {
	p := filepath.Join(t.TempDir(), "model.onnx")
	if err := os.WriteFile(p, bytes.Repeat([]byte{7}, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	data, release, err := Read(p)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if err := os.Truncate(p, 0); err != nil {
		t.Fatal(err)
	}
	sum := 0
	err = Guard(p, func() error {
		for _, b := range data {
			sum += int(b)
		}
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), p) {
		t.Fatalf("read past the end of a cut file: %v (sum %d), want an error naming the file", err, sum)
	}

	want := errors.New("read failed")
	if err := Guard(p, func() error { return want }); err != want {
		t.Fatalf("Guard returned %v, want read's own error", err)
	}
}
