package match

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"unsafe"
)

// The snapshot's encoding: little-endian integers, length-prefixed strings
// and aligned raw arrays, which the reader uses where they lie.

// enc writes the snapshot's encoding; the first error sticks.
type enc struct {
	w   *bufio.Writer
	n   int // bytes written
	err error
	buf [8]byte
}

func (e *enc) bytes(b []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(b)
		e.n += len(b)
	}
}
func (e *enc) u8(v uint8) { e.bytes([]byte{v}) }
func (e *enc) bool(v bool) {
	if v {
		e.u8(1)
	} else {
		e.u8(0)
	}
}
func (e *enc) u32(v uint32) {
	binary.LittleEndian.PutUint32(e.buf[:4], v)
	e.bytes(e.buf[:4])
}
func (e *enc) u64(v uint64) {
	binary.LittleEndian.PutUint64(e.buf[:8], v)
	e.bytes(e.buf[:8])
}
func (e *enc) str(s string) {
	e.u32(uint32(len(s)))
	if e.err == nil {
		_, e.err = e.w.WriteString(s)
		e.n += len(s)
	}
}

// array writes v after the zero bytes that bring the offset to a multiple
// of align.
func array[T number](e *enc, v []T, align int) {
	var pad [rowAlign]byte
	e.bytes(pad[:padding(e.n, align)])
	e.bytes(asBytes(v))
}
func (e *enc) u32s(v []uint32)  { array(e, v, 4) }
func (e *enc) i32s(v []int32)   { array(e, v, 4) }
func (e *enc) u16s(v []uint16)  { array(e, v, 2) }
func (e *enc) f32s(v []float32) { array(e, v, 4) }

// i8s writes int8 vector rows, rows the float32 ones.
func (e *enc) i8s(v []int8)     { array(e, v, rowAlign) }
func (e *enc) rows(v []float32) { array(e, v, rowAlign) }

// rowAlign is the alignment of the vector rows in a snapshot: a cache line.
const rowAlign = 64

// padding is the number of bytes from offset off to the next multiple of
// size.
func padding(off, size int) int { return (size - off%size) % size }

// number is a value type of the snapshot's arrays.
type number interface {
	int8 | uint16 | uint32 | int32 | float32
}

func sizeOf[T number]() int {
	var zero T
	return int(unsafe.Sizeof(zero))
}

// bytesOf views a numeric slice as its bytes, in host order.
func bytesOf[T number](v []T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), len(v)*sizeOf[T]())
}

// dec reads the snapshot's encoding from memory; the first error sticks
// and later reads return zero values.
type dec struct {
	b   []byte
	off int
	err error
}

// take returns the next n bytes of b, capped so that appending copies.
func (d *dec) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b)-d.off {
		d.err = io.ErrUnexpectedEOF
		return nil
	}
	b := d.b[d.off : d.off+n : d.off+n]
	d.off += n
	return b
}
func (d *dec) u8() uint8 {
	if b := d.take(1); b != nil {
		return b[0]
	}
	return 0
}
func (d *dec) bool() bool { return d.u8() != 0 }
func (d *dec) u32() uint32 {
	if b := d.take(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}
func (d *dec) u64() uint64 {
	if b := d.take(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

// str reads a string where it lies in b, not a copy of it: like the
// vectors and postings, it is valid as long as b is unchanged.
func (d *dec) str() string {
	n := int(d.u32())
	if d.err == nil && n > 1<<24 {
		d.err = fmt.Errorf("string of %d bytes", n)
	}
	b := d.take(n)
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// numeric reads an array of n values that starts at the next multiple of
// align: where they lie in b when the host is little-endian and b holds
// them aligned, else in a new slice.
func numeric[T number](d *dec, n, align int) []T {
	if d.err != nil || n < 0 || n > 1<<30 {
		if d.err == nil {
			d.err = fmt.Errorf("array of %d values", n)
		}
		return nil
	}
	size := sizeOf[T]()
	d.take(padding(d.off, align))
	raw := d.take(n * size)
	if d.err != nil {
		return nil
	}
	if n == 0 {
		return []T{}
	}
	p := unsafe.Pointer(unsafe.SliceData(raw))
	if littleEndian && uintptr(p)%uintptr(size) == 0 {
		return unsafe.Slice((*T)(p), n)
	}
	out := make([]T, n)
	b := bytesOf(out)
	copy(b, raw)
	if !littleEndian {
		swapBytes(b, size)
	}
	return out
}
func (d *dec) u32s(n int) []uint32  { return numeric[uint32](d, n, 4) }
func (d *dec) i32s(n int) []int32   { return numeric[int32](d, n, 4) }
func (d *dec) u16s(n int) []uint16  { return numeric[uint16](d, n, 2) }
func (d *dec) f32s(n int) []float32 { return numeric[float32](d, n, 4) }
func (d *dec) i8s(n int) []int8     { return numeric[int8](d, n, rowAlign) }
func (d *dec) rows(n int) []float32 { return numeric[float32](d, n, rowAlign) }

// asBytes is v's bytes as the snapshot stores them: little-endian (a copy,
// swapped, on a big-endian host).
func asBytes[T number](v []T) []byte {
	b := bytesOf(v)
	if !littleEndian {
		b = slices.Clone(b)
		swapBytes(b, sizeOf[T]())
	}
	return b
}

var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// swapBytes reverses the byte order of every size-byte value in b.
func swapBytes(b []byte, size int) {
	for i := 0; i+size <= len(b); i += size {
		for a, z := i, i+size-1; a < z; a, z = a+1, z-1 {
			b[a], b[z] = b[z], b[a]
		}
	}
}
