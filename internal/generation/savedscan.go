package generation

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"time"

	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/skillfs"
)

// A snapshot also keeps the scan its generation was built from, so that a
// restart can serve that generation before scanning: the listing of every
// skill folder (paths, sizes, times, resources) and every folder visited.
// Layout: counts and fields in little-endian integers and length-prefixed
// strings, then the CRC-32C of that section.

var scanCRC = crc32.MakeTable(crc32.Castagnoli)

// writeScan writes the files and folders of scan; roots index the roots the
// files name (the snapshot header holds them).
func writeScan(w io.Writer, scan *skillfs.ScanResult, roots []skill.Root) error {
	crc := crc32.New(scanCRC)
	bw := bufio.NewWriterSize(io.MultiWriter(w, crc), 1<<20)
	var buf [8]byte
	u32 := func(v uint32) { binary.LittleEndian.PutUint32(buf[:4], v); bw.Write(buf[:4]) }
	i64 := func(v int64) { binary.LittleEndian.PutUint64(buf[:8], uint64(v)); bw.Write(buf[:8]) }
	str := func(s string) { u32(uint32(len(s))); bw.WriteString(s) }
	rootIdx := make(map[string]int, len(roots))
	for i, r := range roots {
		rootIdx[r.Path] = i
	}
	u32(uint32(len(scan.Files)))
	for _, f := range scan.Files {
		i, ok := rootIdx[f.Root.Path]
		if !ok {
			return fmt.Errorf("scan names root %s, not among the roots", f.Root.Path)
		}
		u32(uint32(i))
		str(f.Path)
		str(f.Dir)
		str(f.RelPath)
		i64(f.Size)
		i64(f.ModTime.UnixNano())
		u32(uint32(len(f.Resources)))
		for _, r := range f.Resources {
			str(r.Path)
			i64(r.Size)
		}
		if f.ResourcesTruncated {
			u32(1)
		} else {
			u32(0)
		}
	}
	u32(uint32(len(scan.Dirs)))
	for _, d := range scan.Dirs {
		str(d)
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	_, err := w.Write(binary.LittleEndian.AppendUint32(nil, crc.Sum32()))
	return err
}

// readScan reads what writeScan wrote; problems come from the header.
func readScan(r io.Reader, roots []skill.Root, problems []skill.Problem) (*skillfs.ScanResult, error) {
	crc := crc32.New(scanCRC)
	var err error
	var buf [8]byte
	read := func(b []byte) {
		if err == nil {
			_, err = io.ReadFull(r, b)
			crc.Write(b)
		}
	}
	u32 := func() uint32 { read(buf[:4]); return binary.LittleEndian.Uint32(buf[:4]) }
	i64 := func() int64 { read(buf[:8]); return int64(binary.LittleEndian.Uint64(buf[:8])) }
	str := func() string {
		n := u32()
		if err != nil || n > 1<<16 {
			if err == nil {
				err = fmt.Errorf("a string of %d bytes", n)
			}
			return ""
		}
		b := make([]byte, n)
		read(b)
		return string(b)
	}
	res := &skillfs.ScanResult{Problems: problems}
	n := u32()
	if err != nil || n > 1<<24 {
		return nil, fmt.Errorf("saved scan: %d files: %w", n, errors.Join(err, errors.New("damaged")))
	}
	res.Files = make([]skillfs.Found, n)
	for i := range res.Files {
		ri := int(u32())
		if err == nil && ri >= len(roots) {
			err = fmt.Errorf("root %d of %d", ri, len(roots))
		}
		if err != nil {
			return nil, fmt.Errorf("saved scan: %w", err)
		}
		f := skillfs.Found{Root: roots[ri], Path: str(), Dir: str(), RelPath: str(), Size: i64(), ModTime: time.Unix(0, i64())}
		k := u32()
		if err == nil && k > 1<<16 {
			err = fmt.Errorf("%d resources", k)
		}
		for range k {
			f.Resources = append(f.Resources, skill.Resource{Path: str(), Size: i64()})
		}
		f.ResourcesTruncated = u32() != 0
		res.Files[i] = f
	}
	d := u32()
	if err == nil && d > 1<<24 {
		err = fmt.Errorf("%d folders", d)
	}
	if err != nil {
		return nil, fmt.Errorf("saved scan: %w", err)
	}
	res.Dirs = make([]string, d)
	for i := range res.Dirs {
		res.Dirs[i] = str()
	}
	sum := crc.Sum32()
	var tail [4]byte
	if _, e := io.ReadFull(r, tail[:]); e != nil || err != nil || binary.LittleEndian.Uint32(tail[:]) != sum {
		return nil, fmt.Errorf("saved scan: checksum mismatch: %w", errors.Join(err, e))
	}
	return res, nil
}
