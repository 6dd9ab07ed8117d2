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

// TestReadPrivateKeepsTheFileAsItWas reads a file with ReadPrivate and with
// Read, then rewrites it in place and cuts it to nothing, as another
// process might: the private copy keeps the bytes read and reads without a
// fault, while the shared mapping shows the new bytes (which is why a
// mapping is not kept). The copy is read-only.
func TestReadPrivateKeepsTheFileAsItWas(t *testing.T) {
	p := filepath.Join(t.TempDir(), "index.snapshot")
	want := bytes.Repeat([]byte("0123456789abcdef"), 5000) // several pages, the last one partial
	if err := os.WriteFile(p, want, 0o644); err != nil {
		t.Fatal(err)
	}
	private, release, err := ReadPrivate(p)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	shared, unmap, err := Read(p)
	if err != nil {
		t.Fatal(err)
	}
	defer unmap()

	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(bytes.Repeat([]byte{0xff}, 8192), 4096); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if bytes.Equal(shared, want) {
		t.Error("the shared mapping does not show a write in place; the test no longer tells the two apart")
	}
	if !bytes.Equal(private, want) {
		t.Fatal("the private copy changed with a write in place to the file")
	}

	if err := os.Truncate(p, 0); err != nil {
		t.Fatal(err)
	}
	err = Guard(p, func() error {
		if !bytes.Equal(private, want) {
			return errors.New("the private copy changed when the file was cut")
		}
		return nil
	})
	if err != nil {
		t.Fatalf("read of the private copy of a file cut to nothing: %v", err)
	}
	if err := Guard(p, func() error { private[0] = 'x'; return nil }); err == nil {
		t.Error("a write to the private copy succeeded; it must be read-only")
	}
}

func TestReadPrivateOfEmptyAndMissingFiles(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "empty")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	data, release, err := ReadPrivate(p)
	if err != nil || len(data) != 0 {
		t.Fatalf("empty file: %d bytes, %v; want none, no error", len(data), err)
	}
	release()
	if _, _, err := ReadPrivate(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v, want ErrNotExist", err)
	}
}
