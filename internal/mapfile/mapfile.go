// Package mapfile reads large files into memory: through read-only
// mappings of the files (Read, Map), whose bytes are the page cache's pages
// instead of a copy in fresh memory, or into memory of the process's own
// (ReadPrivate), which no other process can change.
//
// A mapped file that another process truncates faults when the pages past
// its new end are read (SIGBUS), and one it rewrites in place changes under
// its readers. Readers of a mapping the process does not own the writes of
// guard their reads with Guard, and read it only while they load it; what
// a process keeps using, it reads with ReadPrivate.
package mapfile

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"syscall"
)

// Read maps the file at path read-only; release unmaps it, after which data
// must not be used. A file that cannot be mapped (an empty one, or a file
// system that does not allow it) is read instead, and release does nothing.
func Read(path string) (data []byte, release func(), err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if data, release, ok := Map(f); ok {
		return data, release, nil
	}
	data, err = io.ReadAll(f)
	return data, func() {}, err
}

// Map maps the open file f read-only, as it is now; release unmaps it. ok
// is false, and nothing is mapped, for a file that cannot be mapped: an
// empty one, one too large for the address space, or one on a file system
// that does not allow it.
func Map(f *os.File) (data []byte, release func(), ok bool) {
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, false
	}
	size := fi.Size()
	if size <= 0 || size != int64(int(size)) {
		return nil, nil, false
	}
	data, err = syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, false
	}
	return data, func() { _ = syscall.Munmap(data) }, true
}

// Guard runs read, which reads a mapping, and returns its error, or an
// error naming path when the read faulted (the file was cut short while
// mapped) instead of letting the fault end the process.
func Guard(path string, read func() error) (err error) {
	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: read of its mapping failed (was it changed while being read?): %v", path, r)
		}
	}()
	return read()
}
