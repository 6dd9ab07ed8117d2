package filestamp

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Meta is what the file system says of one file without reading it: its
// device, inode, size, and modification and change times. Any write to the
// file, a truncation or a replacement (a file renamed over it) changes it,
// even one that restores the modification time, since the change time
// moves too; damage below the file system does not. Comparing two Metas
// costs a stat, whatever the file's size.
type Meta struct {
	Dev, Ino         uint64
	Size             int64
	MtimeNs, CtimeNs int64
}

// MetaOf returns the Meta of the open file f.
func MetaOf(f *os.File) (Meta, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return Meta{}, err
	}
	return metaOfStat(&st), nil
}

// MetaAt returns the Meta of the file at path, following links.
func MetaAt(path string) (Meta, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return Meta{}, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	return metaOfStat(&st), nil
}

func metaOfStat(st *unix.Stat_t) Meta {
	return Meta{Dev: uint64(st.Dev), Ino: uint64(st.Ino), Size: st.Size, MtimeNs: st.Mtim.Nano(), CtimeNs: st.Ctim.Nano()}
}

// String is m as one line: the five numbers in the order of the fields.
func (m Meta) String() string {
	return fmt.Sprintf("%d %d %d %d %d\n", m.Dev, m.Ino, m.Size, m.MtimeNs, m.CtimeNs)
}
