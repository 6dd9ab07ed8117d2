package store

import (
	"encoding/binary"
	"fmt"
	"math"

	bolt "go.etcd.io/bbolt"
)

// Vectors returns the cached vectors for textHashes under a model
// fingerprint. Hashes without a vector are absent from the map.
func (d *DB) Vectors(fingerprint string, textHashes []string) (map[string][]float32, error) {
	out := make(map[string][]float32, len(textHashes))
	err := d.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketVectors).Bucket([]byte(fingerprint))
		if b == nil {
			return nil
		}
		for _, h := range textHashes {
			payload, ok := unseal([]byte(h), b.Get([]byte(h)))
			if !ok {
				continue // absent, damaged or of an older format: recompute it
			}
			vec, err := decodeVector(payload)
			if err != nil {
				continue
			}
			out[h] = vec
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read vectors: %w", err)
	}
	return out, nil
}

// PutVectors stores one batch of vectors in a single transaction.
func (d *DB) PutVectors(fingerprint string, vecs map[string][]float32) error {
	if len(vecs) == 0 {
		return nil
	}
	d.vectorsMu.Lock()
	defer d.vectorsMu.Unlock()
	h := d.h.Load()
	_, counted := h.vectorCount[fingerprint]
	added := 0
	err := d.update(func(tx *bolt.Tx) error {
		b, err := tx.Bucket(bucketVectors).CreateBucketIfNotExists([]byte(fingerprint))
		if err != nil {
			return fmt.Errorf("vectors bucket for %s: %w", fingerprint, err)
		}
		for h, v := range vecs {
			if counted && b.Get([]byte(h)) == nil {
				added++
			}
			if err := b.Put([]byte(h), seal([]byte(h), encodeVector(v))); err != nil {
				return fmt.Errorf("store vector %s: %w", h, err)
			}
		}
		return nil
	})
	if err == nil && counted {
		h.vectorCount[fingerprint] += added
	}
	return err
}

// VectorCount returns how many vectors are cached for a model. The first
// call for a model walks its bucket, unless the last Close noted the count;
// later ones read the count that every write keeps.
func (d *DB) VectorCount(fingerprint string) (int, error) {
	d.vectorsMu.Lock()
	defer d.vectorsMu.Unlock()
	h := d.h.Load()
	if n, ok := h.vectorCount[fingerprint]; ok {
		return n, nil
	}
	n := 0
	err := d.view(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketVectors).Bucket([]byte(fingerprint)); b != nil {
			n = b.Stats().KeyN
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	h.vectorCount[fingerprint] = n
	return n, nil
}

// PruneVectors deletes a model's vectors whose text hash is not in keep.
func (d *DB) PruneVectors(fingerprint string, keep map[string]bool) (int, error) {
	d.vectorsMu.Lock()
	defer d.vectorsMu.Unlock()
	h := d.h.Load()
	removed := 0
	err := d.update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketVectors).Bucket([]byte(fingerprint))
		if b == nil {
			return nil
		}
		var err error
		removed, err = deleteUnless(b, func(k []byte) bool { return keep[string(k)] })
		return err
	})
	if _, counted := h.vectorCount[fingerprint]; err == nil && counted {
		h.vectorCount[fingerprint] -= removed
	}
	return removed, err
}

func encodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func decodeVector(b []byte) ([]float32, error) {
	if len(b)%4 != 0 || len(b) == 0 {
		return nil, fmt.Errorf("vector of %d bytes is not a float32 array", len(b))
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		if math.IsNaN(float64(v[i])) || math.IsInf(float64(v[i]), 0) {
			return nil, fmt.Errorf("vector element %d is not finite", i)
		}
	}
	return v, nil
}
