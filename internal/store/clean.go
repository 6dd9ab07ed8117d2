package store

import (
	"fmt"
	"os"
	"path/filepath"

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
const cleanFile = FileName + ".clean"

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
// dir, once nothing will write to it any more.
func noteClean(dir string, f *os.File) error {
	st, err := stampOf(f)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, cleanFile), []byte(st.String()), 0o640)
}

// takeClean removes the clean-close note in dir and reports whether it
// names f, the locked cache file, as it is now. A note that cannot be
// removed is not trusted: a later crash would leave it behind.
func takeClean(dir string, f *os.File) bool {
	p := filepath.Join(dir, cleanFile)
	note, err := os.ReadFile(p)
	if err != nil {
		return false
	}
	if os.Remove(p) != nil {
		return false
	}
	st, err := stampOf(f)
	return err == nil && string(note) == st.String()
}
