package store

import (
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/mcpsag/router/internal/filestamp"
	"github.com/mcpsag/router/internal/statedir"
)

// A cache closed by Close leaves a note beside it, cache.db.clean, naming
// the file as Close left it: device, inode, size, and modification and
// change times, then a CRC-32C of its bytes. Close writes it only for a
// file whose structure passes the check Open makes (verifyFile): damage
// done while the router ran, which no call tripped over, is not vouched
// for. The next Open takes the note away before it uses the file and, when
// the file still matches it, stamp and checksum, does not walk the file's
// structure again. Any write to the file since, truncation or replacement
// changes the stamp; damage below the file system (bit rot, a bad block, a
// write that went astray) leaves the stamp and changes the checksum; a
// router that stopped without Close (a crash, a kill) leaves no note.
// Those files are checked as before. The checksum reads the whole file, as
// the walk does, and costs about as much (BenchmarkOpenChecks): the note
// no longer makes a start faster, it makes one safe to trust.
//
// After the checksum, the note lists how many vectors each model had, one
// "vectors <fingerprint> <count>" line per model counted, so that
// VectorCount does not walk a model's vectors again after a restart. A
// note whose stamp, checksum or any line cannot be read is not the file's.

// noteClean checks the locked cache file f in dir and, when it passes,
// writes the clean-close note for it, once nothing will write to it any
// more; vectors counts each model's vectors.
func noteClean(dir string, f *os.File, vectors map[string]int) error {
	st, err := filestamp.MetaOf(f)
	if err != nil {
		return err
	}
	var sum uint32
	err = guard(func() error {
		if err := verifyLocked(f); err != nil {
			return err
		}
		sum, err = fileSum(f)
		return err
	})
	if err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString(st.String())
	fmt.Fprintf(&b, "crc32c %08x\n", sum)
	for _, fp := range slices.Sorted(maps.Keys(vectors)) {
		if fp == "" || strings.ContainsFunc(fp, unicode.IsSpace) {
			continue // not a line takeClean could read back; counted again
		}
		fmt.Fprintf(&b, "vectors %s %d\n", fp, vectors[fp])
	}
	return os.WriteFile(filepath.Join(dir, statedir.CleanNote), []byte(b.String()), 0o640)
}

// fileSum returns the CRC-32C of f's bytes, read in large blocks: faster
// than through a mapping, whose pages fault in one at a time
// (BenchmarkOpenChecks).
func fileSum(f *os.File) (uint32, error) {
	h := crc32.New(castagnoli)
	buf := make([]byte, 1<<20)
	if _, err := io.CopyBuffer(h, io.NewSectionReader(f, 0, 1<<62), buf); err != nil {
		return 0, err
	}
	return h.Sum32(), nil
}

// takeClean removes the clean-close note in dir and reports whether it
// names f, the locked cache file, as it is now (stamp and checksum), and if
// so the vector counts it lists (empty when none). A note that cannot be
// removed is not trusted: a later crash would leave it behind. Nor is one
// with a line it cannot read.
func takeClean(dir string, f *os.File) (vectors map[string]int, clean bool) {
	p := filepath.Join(dir, statedir.CleanNote)
	note, err := os.ReadFile(p)
	if err != nil {
		return nil, false
	}
	if os.Remove(p) != nil {
		return nil, false
	}
	st, err := filestamp.MetaOf(f)
	if err != nil {
		return nil, false
	}
	stamp, rest, ok := strings.Cut(string(note), "\n")
	if !ok || stamp+"\n" != st.String() {
		return nil, false
	}
	sumLine, rest, ok := strings.Cut(rest, "\n")
	want, err := strconv.ParseUint(strings.TrimPrefix(sumLine, "crc32c "), 16, 32)
	if !ok || !strings.HasPrefix(sumLine, "crc32c ") || err != nil {
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
	// Last, as it reads the whole file: damage below the file system.
	if sum, err := fileSum(f); err != nil || sum != uint32(want) {
		return nil, false
	}
	return vectors, true
}
