package store

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/mcpsag/router/internal/statedir"
)

// Values in the files, bodies and vectors buckets are sealed: a format byte,
// a CRC-32C of the key and the payload, then the payload. A flipped bit, a
// value written by an older format, or garbage in a structurally valid file
// fails the check and is treated as absent (the file is parsed or the vector
// embedded again), so damage inside a value costs work, never a wrong answer.
const sealHeader = 5 // statedir.SealFormat, then the checksum

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func sealSum(key, payload []byte) uint32 {
	return crc32.Update(crc32.Checksum(key, castagnoli), castagnoli, payload)
}

// seal returns the stored form of payload under key.
func seal(key, payload []byte) []byte {
	out := make([]byte, sealHeader, sealHeader+len(payload))
	out[0] = statedir.SealFormat
	binary.LittleEndian.PutUint32(out[1:], sealSum(key, payload))
	return append(out, payload...)
}

// unseal returns the payload of a stored value, or false when the value is
// not sealed by this format or does not match its checksum. The payload
// aliases v.
func unseal(key, v []byte) ([]byte, bool) {
	if len(v) < sealHeader || v[0] != statedir.SealFormat {
		return nil, false
	}
	payload := v[sealHeader:]
	if binary.LittleEndian.Uint32(v[1:]) != sealSum(key, payload) {
		return nil, false
	}
	return payload, true
}
