package skillfs

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/mcpsag/router/internal/skill"
)

// TestScanResultRoundTrip: what a scan found of two roots (skill files
// with and without resources, nested ones, problems, folders) is read
// back as it was, given the same roots, and refused given others.
func TestScanResultRoundTrip(t *testing.T) {
	_, roots := listingsTree(t)
	res := withoutListings(Scan(roots, DefaultScanLimits, nil))
	if len(res.Problems) == 0 || len(res.Files) < 2*readAheadMin/2 {
		t.Fatalf("the tree should give problems and many files: %d files, %v", len(res.Files), res.Problems)
	}
	withResources := 0
	for _, f := range res.Files {
		withResources += len(f.Resources)
	}
	if withResources == 0 {
		t.Fatal("the tree should give skills with resources")
	}
	data, err := MarshalScanResult(&res, roots)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadScanResult(data, roots)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, res) {
		t.Errorf("read back\n%+v\nwant\n%+v", got, res)
	}

	other := append([]skill.Root(nil), roots...)
	other[len(other)-1].Order++
	for name, rs := range map[string][]skill.Root{"changed": other, "fewer": roots[:len(roots)-1], "none": nil} {
		if _, err := ReadScanResult(data, rs); !errors.Is(err, ErrScanRoots) {
			t.Errorf("%s roots: %v, want ErrScanRoots", name, err)
		}
	}
	if _, err := MarshalScanResult(&res, roots[:1]); err == nil {
		t.Error("a file of a root not given was encoded")
	}
}

func TestReadScanResultRefusesDamage(t *testing.T) {
	res, roots := sampleScanResult()
	data, err := MarshalScanResult(&res, roots)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ReadScanResult(data, roots); err != nil {
		t.Fatal(err)
	}
	flipped := append([]byte(nil), data...)
	flipped[len(flipped)/2] ^= 1
	cases := map[string][]byte{
		"flipped": flipped, "cut": data[:len(data)-1], "empty": nil,
		"other format": append([]byte("MCPSAGS0"), data[len(scanMagic):]...),
	}
	// Totals that lie, with a checksum that matches.
	for i, name := range []string{"text bytes", "strings"} {
		cases[name+" -1"] = withScanTotal(t, data, len(roots), i, -1)
		cases[name+" +1"] = withScanTotal(t, data, len(roots), i, +1)
	}
	for name, b := range cases {
		if _, err := ReadScanResult(b, roots); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := ReadScanResult(cases["other format"], roots); !errors.Is(err, ErrScanFormat) {
		t.Errorf("another format: %v, want ErrScanFormat", err)
	}
	if _, err := ReadScanResult(flipped, roots); errors.Is(err, ErrScanFormat) || errors.Is(err, ErrScanRoots) {
		t.Errorf("damage reported as %v", err)
	}
}

// withScanTotal returns an encoded scan result of nRoots roots with its
// header total i (0 text bytes, 1 strings) changed by delta, and the
// checksum made to match.
func withScanTotal(t *testing.T, data []byte, nRoots, i, delta int) []byte {
	t.Helper()
	r := listingReader{b: data[len(scanMagic) : len(data)-4]}
	r.uvarint()
	for range nRoots {
		r.bytes()
		r.bytes()
		r.bytes()
		r.bytes()
		r.varint()
	}
	for range i {
		r.uvarint()
	}
	return withUvarintAt(t, data, r, delta)
}

func sampleScanResult() (ScanResult, []skill.Root) {
	roots := []skill.Root{
		{Path: "/ws/skills", Display: "skills", Kind: "project", Order: 0},
		{Path: "/ws/agents/a/skills", Display: "agents/a/skills", Kind: "project", Agent: "a", Order: 1},
	}
	res := ScanResult{
		Files: []Found{
			{Root: roots[0], Path: "/ws/skills/a/SKILL.md", Dir: "/ws/skills/a", RelPath: "a/SKILL.md", Size: 10, ModTime: time.Unix(1700000000, 5),
				Resources: []skill.Resource{{Path: "scripts/run.sh", Size: 4}, {Path: "x.txt", Size: 0}}, ResourcesTruncated: true},
			{Root: roots[0], Path: "/ws/skills/ab/SKILL.md", Dir: "/ws/skills/ab", RelPath: "ab/SKILL.md", Size: 11, ModTime: time.Unix(-1, 0)},
			{Root: roots[1], Path: "/ws/agents/a/skills/one/SKILL.md", Dir: "/ws/agents/a/skills/one", RelPath: "one/SKILL.md", Size: 12, ModTime: time.Unix(0, 0)},
		},
		Dirs:     []string{"/ws/skills", "/ws/skills/a", "/ws/skills/ab", "/ws/agents/a/skills", "/ws/agents/a/skills/one"},
		Problems: []skill.Problem{{Severity: skill.SeverityWarning, Code: "symlink-escape", File: "skills/x", Line: 3, Message: "m"}},
	}
	return res, roots
}

// FuzzReadScanResult: any bytes, with their checksum as found and made to
// match, are decoded or refused without a panic; what decodes encodes to
// bytes that decode to the same result.
func FuzzReadScanResult(f *testing.F) {
	res, roots := sampleScanResult()
	data, err := MarshalScanResult(&res, roots)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte(scanMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		check := func(b []byte) {
			got, err := ReadScanResult(b, roots)
			if err != nil {
				return
			}
			encoded, err := MarshalScanResult(&got, roots)
			if err != nil {
				t.Fatalf("a decoded result does not encode: %v", err)
			}
			back, err := ReadScanResult(encoded, roots)
			if err != nil || !reflect.DeepEqual(back, got) {
				t.Fatalf("a decoded result encodes to what does not decode the same: %v", err)
			}
		}
		check(data)
		if len(data) >= 4 {
			fixed := seal(append([]byte(nil), data[:len(data)-4]...))
			check(fixed)
		}
	})
}
