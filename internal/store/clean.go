package store

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/mcpsag/router/internal/statedir"
	"golang.org/x/sys/unix"
)

// A cache closed by Close leaves a note beside it, cache.db.clean, naming
// the file as Close left it: device, inode, size, and modification and
// change times. The next Open takes the note away before it uses the file
// and, when the file still matches it, does not walk the file's structure
// again (verifyFile reads every page: about half a second at 100,000
// skills). Any write to the file since, truncation or replacement changes
// what the note names, and a router that stopped without Close (a crash, a
// kill) leaves no note, so those files are checked as before. Damage that
// bypasses the file system (the disk's own) is not noticed this way; bbolt
// does not notice it either.
//
// After the stamp, the note lists how many vectors each model had, one
// "vectors <fingerprint> <count>" line per model counted, so that
// VectorCount does not walk a model's vectors again after a restart. A
// router that does not know these lines does not take the note for its
// file's, and checks the file; a note without them is still the file's,
// with nothing counted.

// fileStamp identifies a file's content as the file system describes it.
type fileStamp struct {
	Dev, Ino         uint64
	Size             int64
	MtimeNs, CtimeNs int64
}

// stampOf returns the stamp of the open file f.
func stampOf(f *os.File) (fileStamp, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return fileStamp{}, err
	}
	return fileStamp{Dev: uint64(st.Dev), Ino: uint64(st.Ino), Size: st.Size,
		MtimeNs: st.Mtim.Nano(), CtimeNs: st.Ctim.Nano()}, nil
}

func (s fileStamp) String() string {
	return fmt.Sprintf("%d %d %d %d %d\n", s.Dev, s.Ino, s.Size, s.MtimeNs, s.CtimeNs)
}

// noteClean writes the clean-close note for f, the locked cache file in
// dir, once nothing will write to it any more; vectors counts each model's
// vectors.
func noteClean(dir string, f *os.File, vectors map[string]int) error {
	st, err := stampOf(f)
	if err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString(st.String())
	for _, fp := range slices.Sorted(maps.Keys(vectors)) {
		if fp == "" || strings.ContainsFunc(fp, unicode.IsSpace) {
			continue // not a line takeClean could read back; counted again
		}
		fmt.Fprintf(&b, "vectors %s %d\n", fp, vectors[fp])
	}
	return os.WriteFile(filepath.Join(dir, statedir.CleanNote), []byte(b.String()), 0o640)
}

// takeClean removes the clean-close note in dir and reports whether it
// names f, the locked cache file, as it is now, and if so the vector counts
// it lists (empty when none). A note that cannot be removed is not trusted:
// a later crash would leave it behind. Nor is one with a line it cannot
// read.
func takeClean(dir string, f *os.File) (vectors map[string]int, clean bool) {
	p := filepath.Join(dir, statedir.CleanNote)
	note, err := os.ReadFile(p)
	if err != nil {
		return nil, false
	}
	if os.Remove(p) != nil {
		return nil, false
	}
	st, err := stampOf(f)
	if err != nil {
		return nil, false
	}
	stamp, rest, ok := strings.Cut(string(note), "\n")
	if !ok || stamp+"\n" != st.String() {
		return nil, false
	}
	vectors = map[string]int{}
	for line := range strings.Lines(rest) {
		fields := strings.Fields(line)
		if len(fields) != 3 || fields[0] != "vectors" || !strings.HasSuffix(line, "\n") {
			return nil, false
		}
		n, err := strconv.Atoi(fields[2])
		if err != nil || n < 0 {
			return nil, false
		}
		vectors[fields[1]] = n
	}
	return vectors, true
}
