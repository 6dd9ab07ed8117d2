package store

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/skillmd"
)

// randomRecord makes a record with every field exercised, some left empty.
func randomRecord(r *rand.Rand) *FileRecord {
	str := func() string {
		if r.IntN(4) == 0 {
			return ""
		}
		return fmt.Sprintf("s%d é\x00%d", r.Int64(), r.IntN(1000))
	}
	strs := func() []string {
		var out []string
		for range r.IntN(4) {
			out = append(out, str())
		}
		return out
	}
	strMap := func() map[string]string {
		if r.IntN(3) == 0 {
			return nil
		}
		m := map[string]string{}
		for range 1 + r.IntN(5) {
			m[str()] = str()
		}
		return m
	}
	problems := func() []skill.Problem {
		var out []skill.Problem
		for range r.IntN(3) {
			out = append(out, skill.Problem{Severity: skill.Severity(r.IntN(3)), Code: str(), Field: str(), File: str(), Line: r.IntN(1 << 20), Message: str()})
		}
		return out
	}
	rec := &FileRecord{ModTimeNano: r.Int64() - r.Int64(), Size: r.Int64N(1 << 40), ContentHash: str(), Problems: problems()}
	if r.IntN(5) > 0 {
		var ui *bool
		if r.IntN(2) == 0 {
			v := r.IntN(2) == 0
			ui = &v
		}
		name := str()
		rec.Good = &Version{
			Name: name, FoldedName: skillmd.FoldName(name), BodyLine: r.IntN(1 << 20), BodyTokens: r.IntN(1 << 20), ContentHash: str(), FrontmatterHash: str(),
			Size: r.Int64N(1 << 40), ModTimeNano: -r.Int64(), Problems: problems(),
			Frontmatter: skill.Frontmatter{
				Name: str(), Description: str(), License: str(), Compatibility: str(), Metadata: strMap(),
				AllowedTools: strs(), Triggers: strs(), Tags: strs(), Hidden: r.IntN(2) == 0,
				DisableModelInvocation: r.IntN(2) == 0, UserInvocable: ui, Extra: strMap(),
			},
		}
	}
	return rec
}

// TestRecordRoundTrip encodes random records and decodes them back, checks
// that the same record always gives the same bytes, and that every cut of
// an encoding, and the encoding with a byte more, is refused.
func TestRecordRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		rec := randomRecord(r)
		b := encodeRecord(rec)
		if again := encodeRecord(rec); string(again) != string(b) {
			t.Fatalf("record %d: two encodings differ", i)
		}
		got, err := decodeRecord(b)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if !reflect.DeepEqual(got, rec) {
			t.Fatalf("record %d: decoded\n%+v\nwant\n%+v", i, got, rec)
		}
		if i%50 == 0 {
			for cut := range len(b) {
				if _, err := decodeRecord(b[:cut]); err == nil {
					t.Fatalf("record %d cut at %d of %d bytes: decoded", i, cut, len(b))
				}
			}
			if _, err := decodeRecord(append(b, 0)); err == nil {
				t.Fatalf("record %d with a trailing byte: decoded", i)
			}
		}
	}
}

// FuzzDecodeRecord feeds arbitrary bytes to decodeRecord: it must never
// panic, and whatever it accepts must survive encoding and decoding again
// unchanged.
func FuzzDecodeRecord(f *testing.F) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 8 {
		f.Add(encodeRecord(randomRecord(r)))
	}
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := decodeRecord(b)
		if err != nil {
			return
		}
		again, err := decodeRecord(encodeRecord(rec))
		if err != nil {
			t.Fatalf("a decoded record does not decode after encoding: %v", err)
		}
		if !reflect.DeepEqual(again, rec) {
			t.Fatalf("decoded\n%+v\nencoded and decoded again\n%+v", rec, again)
		}
	})
}
