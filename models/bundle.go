// Package models ships the router's default embedding model inside the
// binary, so the router works offline from any folder. The model's files are
// in mcpsag-static-v1/ beside this file; the recipe that builds them is in
// recipe/ (see README.md and mcpsag-static-v1/MODEL.md).
package models

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// DefaultName is the bundled model's name and folder.
const DefaultName = "mcpsag-static-v1"

// FastName is the bundled fast model's name and folder: a static model served
// while the model's vectors are computed, and when it is unavailable; empty
// when none is bundled.
const FastName = ""

// Fast writes the bundled fast model under dir, as Default does the model,
// and returns its folder.
func Fast(dir string) (string, error) {
	return "", fmt.Errorf("no fast model is bundled")
}

//go:embed mcpsag-static-v1/model.onnx mcpsag-static-v1/tokenizer.json mcpsag-static-v1/mcpsag-model.json
var bundled embed.FS

// DefaultManifest is the bundled model's mcpsag-model.json: its name,
// prefixes, token limit and cosine threshold.
//
//go:embed mcpsag-static-v1/mcpsag-model.json
var DefaultManifest []byte

// Calibration is the bundled model's calibrated abstention, a fragment of the
// router's config file (match.abstain.classifiers and match.calibrated_on);
// the router's default configuration includes it. See the file's header for
// how it was fitted.
//
//go:embed mcpsag-static-v1/calibration.yaml
var Calibration []byte

// Default writes the bundled model under dir, in a folder named after the
// model and its content hash, and returns that folder. It writes only when
// the folder is missing or its files differ from the bundled ones (a damaged
// copy is replaced), so repeated starts reuse it; a half-written folder from
// a crash is never used, because files are written to a temporary folder
// that is renamed into place when complete.
func Default(dir string) (string, error) {
	files, err := fs.Sub(bundled, DefaultName)
	if err != nil {
		return "", err
	}
	names := []string{"model.onnx", "tokenizer.json", "mcpsag-model.json"}
	h := sha256.New()
	for _, n := range names {
		if err := copyFrom(h, files, n); err != nil {
			return "", fmt.Errorf("bundled model: %w", err)
		}
	}
	target := filepath.Join(dir, DefaultName+"-"+hex.EncodeToString(h.Sum(nil))[:12])
	if fi, err := os.Stat(target); err == nil && fi.IsDir() {
		if intact(files, target, names) {
			return target, nil
		}
		// A damaged copy (the folder is derived data): set it aside and
		// write it again.
		aside := fmt.Sprintf("%s.damaged-%d", target, time.Now().UnixNano())
		if err := os.Rename(target, aside); err != nil {
			return "", fmt.Errorf("bundled model: replace the damaged copy in %s: %w", target, err)
		}
		defer os.RemoveAll(aside)
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", fmt.Errorf("bundled model: %w", err)
	}
	tmp, err := os.MkdirTemp(dir, ".extract-")
	if err != nil {
		return "", fmt.Errorf("bundled model: %w", err)
	}
	defer os.RemoveAll(tmp)
	for _, n := range names {
		b, _ := fs.ReadFile(files, n)
		if err := os.WriteFile(filepath.Join(tmp, n), b, 0o640); err != nil {
			return "", fmt.Errorf("bundled model: %w", err)
		}
	}
	if err := os.Rename(tmp, target); err != nil {
		if fi, serr := os.Stat(target); serr == nil && fi.IsDir() {
			return target, nil // another process got there first
		}
		return "", fmt.Errorf("bundled model: %w", err)
	}
	return target, nil
}

// intact reports whether every named file in dir equals the bundled one.
// Both are read a block at a time: a start does not hold two more copies of
// the model.
func intact(files fs.FS, dir string, names []string) bool {
	for _, n := range names {
		want, err := files.Open(n)
		if err != nil {
			return false
		}
		got, err := os.Open(filepath.Join(dir, n))
		if err != nil {
			want.Close()
			return false
		}
		same := sameContent(got, want)
		got.Close()
		want.Close()
		if !same {
			return false
		}
	}
	return true
}

// sameContent reports whether a and b read to the same bytes.
func sameContent(a, b io.Reader) bool {
	bufA, bufB := make([]byte, 64<<10), make([]byte, 64<<10)
	for {
		na, errA := io.ReadFull(a, bufA)
		nb, errB := io.ReadFull(b, bufB)
		if na != nb || !bytes.Equal(bufA[:na], bufB[:nb]) {
			return false
		}
		endA, endB := errA == io.EOF || errA == io.ErrUnexpectedEOF, errB == io.EOF || errB == io.ErrUnexpectedEOF
		switch {
		case endA && endB:
			return true
		case errA != nil || errB != nil:
			return false
		}
	}
}

// copyFrom writes the file name of files to w.
func copyFrom(w io.Writer, files fs.FS, name string) error {
	f, err := files.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}
