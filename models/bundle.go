// Package models ships the router's embedding models inside the binary, so
// the router works offline from any folder: the default model, a sentence
// encoder (mcpsag-minilm-v1/), and the fast model served while the
// encoder's vectors are computed or when it is unavailable, a static one
// (mcpsag-static-v1/). Their recipes are in recipe/ (see README.md and each
// folder's MODEL.md).
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

	"go.yaml.in/yaml/v3"
)

// DefaultName is the bundled default model's name and folder.
const DefaultName = "mcpsag-minilm-v1"

// FastName is the bundled fast model's name and folder: a static model
// served while the default model's vectors are computed, and when it is
// unavailable.
const FastName = "mcpsag-static-v1"

//go:embed mcpsag-minilm-v1/model.onnx mcpsag-minilm-v1/tokenizer.json mcpsag-minilm-v1/config.json mcpsag-minilm-v1/mcpsag-model.json
//go:embed mcpsag-static-v1/model.onnx mcpsag-static-v1/tokenizer.json mcpsag-static-v1/mcpsag-model.json
var bundled embed.FS

// The files of each bundled model.
var (
	defaultFiles = []string{"model.onnx", "tokenizer.json", "config.json", "mcpsag-model.json"}
	fastFiles    = []string{"model.onnx", "tokenizer.json", "mcpsag-model.json"}
)

// DefaultManifest is the bundled default model's mcpsag-model.json: its
// name, prefixes, token limit and cosine threshold.
//
//go:embed mcpsag-minilm-v1/mcpsag-model.json
var DefaultManifest []byte

// Calibration is the bundled models' calibrated abstention, a fragment of
// the router's config file (match.abstain.classifiers, one per model, and
// match.calibrated_on); the router's default configuration includes it.
// See each calibration.yaml's header for how it was fitted.
var Calibration = mergeCalibrations(defaultCalibration, fastCalibration)

//go:embed mcpsag-minilm-v1/calibration.yaml
var defaultCalibration []byte

//go:embed mcpsag-static-v1/calibration.yaml
var fastCalibration []byte

// mergeCalibrations returns one config fragment holding the classifiers of
// every fragment given, the first one's calibrated_on first. A fragment
// that does not parse is a build defect, which TestBundledCalibration
// reports; it is left out here.
func mergeCalibrations(fragments ...[]byte) []byte {
	type fragment struct {
		Match struct {
			Abstain struct {
				Classifiers []yaml.Node `yaml:"classifiers"`
			} `yaml:"abstain"`
			CalibratedOn string `yaml:"calibrated_on,omitempty"`
		} `yaml:"match"`
	}
	var out fragment
	for _, b := range fragments {
		var f fragment
		if yaml.Unmarshal(b, &f) != nil {
			continue
		}
		out.Match.Abstain.Classifiers = append(out.Match.Abstain.Classifiers, f.Match.Abstain.Classifiers...)
		if out.Match.CalibratedOn == "" {
			out.Match.CalibratedOn = f.Match.CalibratedOn
		}
	}
	b, _ := yaml.Marshal(out)
	return b
}

// Default writes the bundled default model under dir, in a folder named
// after the model and its content hash, and returns that folder. It writes
// only when the folder is missing or its files differ from the bundled ones
// (a damaged copy is replaced), so repeated starts reuse it; a half-written
// folder from a crash is never used, because files are written to a
// temporary folder that is renamed into place when complete.
func Default(dir string) (string, error) { return unpack(DefaultName, defaultFiles, dir) }

// Fast writes the bundled fast model under dir, as Default does the
// default model, and returns its folder.
func Fast(dir string) (string, error) { return unpack(FastName, fastFiles, dir) }

// unpack writes the files names of the bundled model name under dir; see
// Default.
func unpack(name string, names []string, dir string) (string, error) {
	files, err := fs.Sub(bundled, name)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, n := range names {
		if err := copyFrom(h, files, n); err != nil {
			return "", fmt.Errorf("bundled model %s: %w", name, err)
		}
	}
	target := filepath.Join(dir, name+"-"+hex.EncodeToString(h.Sum(nil))[:12])
	if fi, err := os.Stat(target); err == nil && fi.IsDir() {
		if intact(files, target, names) {
			return target, nil
		}
		// A damaged copy (the folder is derived data): set it aside and
		// write it again.
		aside := fmt.Sprintf("%s.damaged-%d", target, time.Now().UnixNano())
		if err := os.Rename(target, aside); err != nil {
			return "", fmt.Errorf("bundled model %s: replace the damaged copy in %s: %w", name, target, err)
		}
		defer os.RemoveAll(aside)
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", fmt.Errorf("bundled model %s: %w", name, err)
	}
	tmp, err := os.MkdirTemp(dir, ".extract-")
	if err != nil {
		return "", fmt.Errorf("bundled model %s: %w", name, err)
	}
	defer os.RemoveAll(tmp)
	for _, n := range names {
		b, _ := fs.ReadFile(files, n)
		if err := os.WriteFile(filepath.Join(tmp, n), b, 0o640); err != nil {
			return "", fmt.Errorf("bundled model %s: %w", name, err)
		}
	}
	if err := os.Rename(tmp, target); err != nil {
		if fi, serr := os.Stat(target); serr == nil && fi.IsDir() {
			return target, nil // another process got there first
		}
		return "", fmt.Errorf("bundled model %s: %w", name, err)
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
