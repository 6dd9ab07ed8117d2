package skillfs

import (
	"encoding/binary"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// On Linux a folder is read with system calls relative to its parent,
// already open, and its SKILL.md is stat'ed relative to the folder: at
// 100,000 skills a scan spends most of its time in the kernel resolving
// paths and in the calls that read each skill folder, which this makes
// fewer and shorter. What it finds is what readPath finds.

// noParent makes listing.read open its folder by its path.
const noParent = unix.AT_FDCWD

// openParent opens the folder real so that its subfolders can be read
// relative to it; without it (it cannot be opened), they are read by path.
func openParent(real string) (parent int, closeParent func()) {
	fd, err := unix.Open(real, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return noParent, func() {}
	}
	return fd, func() { unix.Close(fd) }
}

// read reads the folder name of the open folder parent (or the folder at
// path name when parent is noParent), whose real path is real, into l: its
// entries in name order, its stamp and, when one of the entries is a
// regular SKILL.md, its stat and the folder's resources. When known, the
// folder's listing from an earlier scan, has the folder's stamp, its
// entries are taken from there instead of read. It touches no walker
// state, so folders can be read ahead on other goroutines.
func (l *listing) read(parent int, name, real string, maxResources int, known *folderListing) {
	if known != nil {
		var st unix.Stat_t
		if unix.Fstatat(parent, name, &st, 0) == nil && stampOf(&st) == known.stamp {
			l.entries, l.stamp, l.reused = known.entries, known.stamp, true
			l.statSkill(real, maxResources, func() (fs.FileInfo, error) {
				return statAt(parent, name+"/"+SkillFile, filepath.Join(real, SkillFile))
			})
			return
		}
	}
	fd, err := unix.Openat(parent, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		l.err = &fs.PathError{Op: "open", Path: real, Err: err}
		return
	}
	defer unix.Close(fd)
	// The stamp is taken before the entries are read: a change between
	// the two leaves a stamp that no longer matches.
	var st unix.Stat_t
	if unix.Fstat(fd, &st) == nil {
		l.stamp = stampOf(&st)
	}
	if l.entries, err = readDirents(fd, real); err != nil {
		l.entries, l.err = nil, &fs.PathError{Op: "readdirent", Path: real, Err: err}
		return
	}
	l.statSkill(real, maxResources, func() (fs.FileInfo, error) {
		return statAt(fd, SkillFile, filepath.Join(real, SkillFile))
	})
}

// statAt stats name relative to the open folder fd; path names it in
// errors.
func statAt(fd int, name, path string) (fs.FileInfo, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(fd, name, &st, 0); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	return newStatInfo(SkillFile, &st), nil
}

// stampOf is the stamp of a folder from its stat.
func stampOf(st *unix.Stat_t) dirStamp {
	return dirStamp{dev: st.Dev, ino: st.Ino, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
}

// direntBuffers hold the raw entries getdents returns.
var direntBuffers = sync.Pool{New: func() any { b := make([]byte, 16<<10); return &b }}

// readDirents lists the open folder fd (at path dir), without "." and
// "..", sorted by name as os.ReadDir sorts.
func readDirents(fd int, dir string) ([]fs.DirEntry, error) {
	bp := direntBuffers.Get().(*[]byte)
	defer direntBuffers.Put(bp)
	buf := *bp
	var out []fs.DirEntry
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			break
		}
		// struct linux_dirent64: ino u64, off u64, reclen u16, type u8,
		// then the name, NUL-terminated.
		for b := buf[:n]; len(b) >= 19; {
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				return nil, unix.EIO
			}
			name := b[19:reclen]
			if i := slices.Index(name, 0); i >= 0 {
				name = name[:i]
			}
			typ := b[18]
			b = b[reclen:]
			if string(name) == "." || string(name) == ".." {
				continue
			}
			e := dirent{dir: dir, name: string(name)}
			if e.typ, err = direntType(fd, e.name, typ); err == unix.ENOENT {
				continue // gone since it was listed
			} else if err != nil {
				return nil, err
			}
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}

// direntType is the type bits of an entry of the open folder fd, from
// getdents' type, or from lstat when the file system does not say.
func direntType(fd int, name string, typ uint8) (fs.FileMode, error) {
	switch typ {
	case unix.DT_REG:
		return 0, nil
	case unix.DT_DIR:
		return fs.ModeDir, nil
	case unix.DT_LNK:
		return fs.ModeSymlink, nil
	case unix.DT_FIFO:
		return fs.ModeNamedPipe, nil
	case unix.DT_SOCK:
		return fs.ModeSocket, nil
	case unix.DT_CHR:
		return fs.ModeDevice | fs.ModeCharDevice, nil
	case unix.DT_BLK:
		return fs.ModeDevice, nil
	}
	var st unix.Stat_t
	if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return 0, err
	}
	return fileMode(st.Mode).Type(), nil
}

// statInfo is an fs.FileInfo from a stat.
type statInfo struct {
	name    string
	size    int64
	mode    fs.FileMode
	modTime time.Time
}

func newStatInfo(name string, st *unix.Stat_t) statInfo {
	return statInfo{name: name, size: st.Size, mode: fileMode(st.Mode), modTime: time.Unix(st.Mtim.Unix())}
}

func (s statInfo) Name() string       { return s.name }
func (s statInfo) Size() int64        { return s.size }
func (s statInfo) ModTime() time.Time { return s.modTime }
func (s statInfo) IsDir() bool        { return s.mode.IsDir() }
func (s statInfo) Mode() fs.FileMode  { return s.mode }
func (s statInfo) Sys() any           { return nil }

// fileMode converts a stat's mode to an fs.FileMode, as os.Stat does.
func fileMode(mode uint32) fs.FileMode {
	m := fs.FileMode(mode & 0o777)
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	}
	if mode&unix.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if mode&unix.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if mode&unix.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}
