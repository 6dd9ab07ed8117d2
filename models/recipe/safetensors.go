package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
)

// safetensors is a parsed .safetensors file: an 8-byte little-endian
// header length, a JSON header naming each tensor's dtype, shape and byte
// range, then the tensors' little-endian bytes.
type safetensors struct {
	tensors map[string]stTensor
	data    []byte // the bytes after the header
}

type stTensor struct {
	DType   string   `json:"dtype"`
	Shape   []int    `json:"shape"`
	Offsets [2]int64 `json:"data_offsets"`
}

// stSizes are the dtypes of the safetensors format with their sizes in
// bytes.
var stSizes = map[string]int{
	"BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1,
	"I16": 2, "U16": 2, "F16": 2, "BF16": 2,
	"I32": 4, "U32": 4, "F32": 4,
	"I64": 8, "U64": 8, "F64": 8,
}

// maxSafetensorsHeader bounds the JSON header, as the reference reader
// does (100 MB).
const maxSafetensorsHeader = 100 << 20

// parseSafetensors parses b, checking every tensor's dtype, shape and byte
// range against the data.
func parseSafetensors(b []byte) (*safetensors, error) {
	if len(b) < 8 {
		return nil, errors.New("safetensors: file shorter than its header length")
	}
	n := binary.LittleEndian.Uint64(b)
	if n > maxSafetensorsHeader || n > uint64(len(b)-8) {
		return nil, fmt.Errorf("safetensors: header of %d bytes in a file of %d", n, len(b))
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b[8:8+n], &raw); err != nil {
		return nil, fmt.Errorf("safetensors: header: %w", err)
	}
	st := &safetensors{tensors: map[string]stTensor{}, data: b[8+n:]}
	for name, v := range raw {
		if name == "__metadata__" {
			continue
		}
		var t stTensor
		if err := json.Unmarshal(v, &t); err != nil {
			return nil, fmt.Errorf("safetensors: tensor %q: %w", name, err)
		}
		if err := t.check(int64(len(st.data))); err != nil {
			return nil, fmt.Errorf("safetensors: tensor %q: %w", name, err)
		}
		st.tensors[name] = t
	}
	return st, nil
}

// check checks t's dtype, shape and byte range within size bytes of data.
func (t stTensor) check(size int64) error {
	width, ok := stSizes[t.DType]
	if !ok {
		return fmt.Errorf("unknown dtype %q", t.DType)
	}
	count := int64(1)
	for _, d := range t.Shape {
		if d < 0 || (d > 0 && count > math.MaxInt32/int64(d)) {
			return fmt.Errorf("shape %v is negative or too large", t.Shape)
		}
		count *= int64(d)
	}
	begin, end := t.Offsets[0], t.Offsets[1]
	if begin < 0 || end < begin || end > size {
		return fmt.Errorf("byte range [%d, %d) outside the %d bytes of data", begin, end, size)
	}
	if end-begin != count*int64(width) {
		return fmt.Errorf("%d bytes for %s of shape %v", end-begin, t.DType, t.Shape)
	}
	return nil
}

// has reports whether the file holds a tensor called name.
func (st *safetensors) has(name string) bool {
	_, ok := st.tensors[name]
	return ok
}

// float32s returns tensor name as float32 values, row-major. The tensor
// must have the given shape and be F32, F16 or BF16; any other dtype is an
// error.
func (st *safetensors) float32s(name string, shape ...int) ([]float32, error) {
	t, ok := st.tensors[name]
	if !ok {
		return nil, fmt.Errorf("safetensors: no tensor %q", name)
	}
	if !slices.Equal(t.Shape, shape) {
		return nil, fmt.Errorf("safetensors: tensor %q has shape %v, want %v", name, t.Shape, shape)
	}
	b := st.data[t.Offsets[0]:t.Offsets[1]]
	var v []float32
	switch t.DType {
	case "F32":
		v = make([]float32, len(b)/4)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
	case "BF16":
		v = make([]float32, len(b)/2)
		for i := range v {
			v[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(b[2*i:])) << 16)
		}
	case "F16":
		v = make([]float32, len(b)/2)
		for i := range v {
			v[i] = halfToFloat(binary.LittleEndian.Uint16(b[2*i:]))
		}
	default:
		return nil, fmt.Errorf("safetensors: tensor %q is %s; only F32, F16 and BF16 are read as float32", name, t.DType)
	}
	return v, nil
}

// halfToFloat converts an IEEE 754 binary16 value to float32, exactly.
func halfToFloat(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // infinities and NaNs
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	case exp != 0: // normal
		return math.Float32frombits(sign | (exp+127-15)<<23 | frac<<13)
	case frac == 0:
		return math.Float32frombits(sign)
	}
	// Subnormal: frac·2^-24.
	v := float32(frac) * (1.0 / (1 << 24))
	if sign != 0 {
		return -v
	}
	return v
}
