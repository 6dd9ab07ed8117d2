package mapfile

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// ReadPrivate reads the file at path into memory of this process's own: an
// anonymous mapping, outside Go's heap (so the garbage collector neither
// scans it nor counts it when it paces itself), made read-only once filled.
// Unlike a mapping of the file, what it returns does not change when
// another process rewrites the file in place, and reading it never faults
// when another process truncates the file: the file is read once, with
// read(2), and not looked at again. A mapping of the file with MAP_PRIVATE
// would not do: its pages are the page cache's until written, so they show
// another process's writes, and a truncation takes away even pages copied
// on write.
//
// release unmaps the memory, after which data must not be used. An empty
// file gives an empty data and a release that does nothing. A file that
// shrinks while it is read is an error (io.ErrUnexpectedEOF); one that grows
// is read as long as it was when opened. Bytes that change while it is read
// are read as they are: callers check a checksum.
func ReadPrivate(path string) (data []byte, release func(), err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	size := fi.Size()
	switch {
	case size == 0:
		return []byte{}, func() {}, nil
	case size < 0 || size != int64(int(size)):
		return nil, nil, fmt.Errorf("%s: %d bytes do not fit in memory", path, size)
	}
	mem, err := syscall.Mmap(-1, 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: memory for %d bytes: %w", path, size, err)
	}
	release = func() { _ = syscall.Munmap(mem) }
	if _, err := io.ReadFull(f, mem); err != nil {
		release()
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	if err := syscall.Mprotect(mem, syscall.PROT_READ); err != nil {
		release()
		return nil, nil, fmt.Errorf("%s: protect its copy: %w", path, err)
	}
	return mem, release, nil
}
