package skillfs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/mcpsag/router/internal/skill"
)

// listingsTree writes a workspace with a wide root (read ahead) whose
// skill folders hold every kind of entry, and a small second root (read
// folder by folder), and returns its roots.
func listingsTree(t *testing.T) (ws string, roots []skill.Root) {
	t.Helper()
	ws = t.TempDir()
	outside := t.TempDir()
	writeSkill(t, outside, "evil", "evil", "d")
	root := filepath.Join(ws, "skills")
	for i := range 2 * readAheadMin {
		dir := fmt.Sprintf("s%03d", i)
		switch i % 5 {
		case 0:
			writeSkill(t, root, dir, dir, "d")
		case 1:
			writeSkill(t, root, dir, dir, "d")
			writeFile(t, filepath.Join(root, dir, "scripts", "run.sh"), "echo")
			writeFile(t, filepath.Join(root, dir, "notes.txt"), "n")
		case 2:
			must(t, os.MkdirAll(filepath.Join(root, dir), 0o755))
			must(t, os.Symlink(filepath.Join(outside, "evil", SkillFile), filepath.Join(root, dir, SkillFile)))
		case 3:
			writeSkill(t, root, dir+"/inner", dir+"-inner", "d")
		case 4:
			must(t, os.MkdirAll(filepath.Join(root, dir, "empty"), 0o755))
		}
	}
	writeSkill(t, filepath.Join(ws, "agents", "a", "skills"), "one", "one", "d")
	roots, err := ExpandRoots(ws, DefaultRoots())
	if err != nil {
		t.Fatal(err)
	}
	return ws, roots
}

// withoutListings returns the scan as a client of Scan sees it.
func withoutListings(r ScanResult) ScanResult {
	r.Listings = nil
	return r
}

// TestListingsSpareUnchangedFolders: a scan given the listings of an
// earlier one (through their encoding, as a restart reads them) reads no
// folder whose stamp is unchanged and finds what a scan without them
// finds, after changes of every kind: entries added, removed and replaced
// in skill folders, in their subfolders and in roots, and a SKILL.md
// edited in place, which changes no folder.
func TestListingsSpareUnchangedFolders(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("folder listings are recorded on Linux only")
	}
	ws, roots := listingsTree(t)
	time.Sleep(racyMargin + 100*time.Millisecond) // the folders' times are then old enough to keep
	first := Scan(roots, DefaultScanLimits, nil)
	if first.Listings.Len() != len(first.Dirs) || first.Listings.Reused() != 0 {
		t.Fatalf("recorded %d listings (%d reused) of %d folders read", first.Listings.Len(), first.Listings.Reused(), len(first.Dirs))
	}
	known := roundTrip(t, first.Listings)

	again := Scan(roots, DefaultScanLimits, known)
	if !reflect.DeepEqual(withoutListings(again), withoutListings(first)) {
		t.Fatalf("with listings, an unchanged tree scans differently:\n%+v\nwithout:\n%+v", again.Files, first.Files)
	}
	if again.Listings.Reused() != len(first.Dirs) {
		t.Errorf("reused %d listings of %d unchanged folders", again.Listings.Reused(), len(first.Dirs))
	}

	root := filepath.Join(ws, "skills")
	writeFile(t, filepath.Join(root, "s000", "added.md"), "new resource")          // a skill folder gains a file
	writeFile(t, filepath.Join(root, "s001", "scripts", "more.sh"), "echo more")   // a subfolder does; s001 is unchanged
	must(t, os.Remove(filepath.Join(root, "s006", "notes.txt")))                   // a skill folder loses one
	must(t, os.RemoveAll(filepath.Join(root, "s005")))                             // a root loses a skill
	writeSkill(t, filepath.Join(root, "s008"), "late", "s008-late", "d")           // a folder gains a skill
	writeFile(t, filepath.Join(root, "s010", SkillFile), "---\nname: s010\n---\n") // edited in place: s010 is unchanged
	must(t, os.Remove(filepath.Join(root, "s015", SkillFile)))                     // replaced by a folder of that name
	must(t, os.Mkdir(filepath.Join(root, "s015", SkillFile), 0o755))
	writeSkill(t, filepath.Join(ws, "agents", "a", "skills"), "two", "two", "d") // the second root gains a skill

	fresh := Scan(roots, DefaultScanLimits, nil)
	got := Scan(roots, DefaultScanLimits, known)
	if !reflect.DeepEqual(withoutListings(got), withoutListings(fresh)) {
		t.Fatalf("with stale listings the scan differs:\n%+v\n%v\nwithout:\n%+v\n%v", got.Files, got.Problems, fresh.Files, fresh.Problems)
	}
	if len(fresh.Files) != len(first.Files) { // late and two added, s005 and s015 gone
		t.Fatalf("the changes did not happen as planned: %d skills, then %d", len(first.Files), len(fresh.Files))
	}
	changed := 6                                                                // s000, s006, skills/, s008, s015, agents/a/skills/
	if n, want := got.Listings.Reused(), len(first.Dirs)-changed-1; n != want { // s005 is gone
		t.Errorf("reused %d listings, want %d: every unchanged folder, no changed one", n, want)
	}
}

// roundTrip encodes and decodes l, checking that nothing is lost.
func roundTrip(t *testing.T, l *Listings) *Listings {
	t.Helper()
	data, err := l.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ReadListings(data)
	if err != nil {
		t.Fatal(err)
	}
	if !back.Taken.Equal(l.Taken) || back.Len() != l.Len() {
		t.Fatalf("decoded %d listings taken %v, encoded %d taken %v", back.Len(), back.Taken, l.Len(), l.Taken)
	}
	for p, d := range l.dirs {
		b := back.dirs[p]
		if b == nil || b.stamp != d.stamp || describe(b.entries) != describe(d.entries) {
			t.Fatalf("%s: decoded %+v, encoded %+v", p, b, d)
		}
	}
	return back
}

// TestListingsSkipRecentFolders: a folder changed within racyMargin of the
// scan is not recorded, since a second change in the same tick of the file
// system's clock could leave its times as they are.
func TestListingsSkipRecentFolders(t *testing.T) {
	_, roots := listingsTree(t)
	res := Scan(roots, DefaultScanLimits, nil)
	if len(res.Dirs) == 0 || res.Listings.Len() != 0 {
		t.Errorf("recorded %d listings of %d folders all just written", res.Listings.Len(), len(res.Dirs))
	}
}

// TestReadListingsRefusesDamage: a flipped bit, a cut and another format
// are refused.
func TestReadListingsRefusesDamage(t *testing.T) {
	l := sampleListings()
	data, err := l.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ReadListings(data); err != nil {
		t.Fatal(err)
	}
	flipped := append([]byte(nil), data...)
	flipped[len(flipped)/2] ^= 1
	other := append([]byte("MCPSAGL1"), data[8:]...)
	// Totals that lie, with a checksum that matches: one entry, one path
	// byte or one name byte more or fewer than the folders hold.
	lies := map[string][]byte{}
	for i, name := range []string{"entries", "path bytes", "name bytes"} {
		for _, delta := range []int{-1, 1} {
			lies[fmt.Sprintf("%s %+d", name, delta)] = withTotal(t, data, i, delta)
		}
	}
	for name, b := range map[string][]byte{"flipped": flipped, "cut": data[:len(data)-1], "other format": other, "empty": nil} {
		lies[name] = b
	}
	if _, err := ReadListings(other); !errors.Is(err, ErrListingsFormat) {
		t.Errorf("another format: %v, want ErrListingsFormat", err)
	}
	if _, err := ReadListings(flipped); errors.Is(err, ErrListingsFormat) {
		t.Error("damage reported as another format")
	}
	for name, b := range lies {
		if _, err := ReadListings(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// withTotal returns encoded listings with header total i (0 entries, 1 path
// bytes, 2 name bytes) changed by delta, and the checksum made to match.
func withTotal(t *testing.T, data []byte, i, delta int) []byte {
	t.Helper()
	r := listingReader{b: data[len(listingsMagic) : len(data)-4]}
	r.varint()
	r.uvarint()
	for range i {
		r.uvarint()
	}
	return withUvarintAt(t, data, r, delta)
}

// withUvarintAt returns data, encoded with a trailing CRC-32C, with the
// uvarint r reads next changed by delta, and the checksum made to match.
func withUvarintAt(t *testing.T, data []byte, r listingReader, delta int) []byte {
	t.Helper()
	at := len(data) - 4 - len(r.b)
	v := r.uvarint()
	if r.err != nil {
		t.Fatal(r.err)
	}
	out := binary.AppendUvarint(append([]byte(nil), data[:at]...), uint64(int(v)+delta))
	out = append(out, r.b...)
	return seal(out)
}

func sampleListings() *Listings {
	l := &Listings{Taken: time.Unix(1700000000, 5), dirs: map[string]*folderListing{}}
	for i, p := range []string{"/ws/skills", "/ws/skills/a", "/ws/skills/ab", "/ws/skills/b/c"} {
		l.dirs[p] = &folderListing{
			stamp:   dirStamp{dev: 1, ino: uint64(10 + i), mtime: int64(i) << 40, ctime: -int64(i)},
			entries: []fs.DirEntry{dirent{dir: p, name: "SKILL.md"}, dirent{dir: p, name: "link", typ: os.ModeSymlink}, dirent{dir: p, name: "pipe", typ: os.ModeIrregular}, dirent{dir: p, name: "scripts", typ: os.ModeDir}},
		}
	}
	return l
}

// FuzzReadListings: any bytes, with their checksum as found and made to
// match, are decoded or refused without a panic; what decodes encodes to
// bytes that decode to the same listings.
func FuzzReadListings(f *testing.F) {
	data, err := sampleListings().MarshalBinary()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte(listingsMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		check := func(b []byte) {
			l, err := ReadListings(b)
			if err != nil {
				return
			}
			encoded, err := l.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			back, err := ReadListings(encoded)
			if err != nil || back.Len() != l.Len() {
				t.Fatalf("decoded listings (%d) encode to what does not decode the same: %d, %v", l.Len(), back.Len(), err)
			}
			if again, _ := back.MarshalBinary(); string(again) != string(encoded) {
				t.Fatal("decoded listings encode to other bytes the second time")
			}
		}
		check(data)
		if len(data) >= 4 {
			fixed := seal(append([]byte(nil), data[:len(data)-4]...))
			check(fixed)
		}
	})
}
