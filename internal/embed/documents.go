package embed

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// VectorCache stores document vectors across restarts (the store implements
// it on bbolt). Keys are a model fingerprint and a text hash from TextHash.
type VectorCache interface {
	// Vectors returns cached vectors for the given text hashes under a model fingerprint; missing ones are absent from the map.
	// It returns an error only when the cache cannot be read.
	Vectors(fingerprint string, textHashes []string) (map[string][]float32, error)
	// PutVectors stores one batch in a single transaction.
	// It returns an error when the batch could not be written.
	PutVectors(fingerprint string, vecs map[string][]float32) error
}

// TextHash returns the cache key of a document text under an identity: the
// hex sha256 of the identity's Settings, a NUL byte, and the exact text. The
// settings are part of the key because a new document prefix, pooling or
// token limit changes vectors without changing the model files.
func TextHash(id Identity, text string) string {
	h := sha256.New()
	h.Write([]byte(id.Settings))
	h.Write([]byte{0})
	h.Write([]byte(text))
	return hex.EncodeToString(h.Sum(nil))
}

// EmbedDocuments returns one Document vector per text, reading what it can
// from cache and embedding the rest with e in batches of batchSize
// (DefaultBatchSize when batchSize <= 0). Each batch is embedded outside any
// cache transaction and then written with one PutVectors call. computed is
// the number of texts embedded; identical texts are embedded once.
//
// If e's identity changes during the run (a Manager reloaded), it returns
// ErrModelChanged and stores nothing more, so no vector is filed under the
// wrong fingerprint. Errors from e (ErrUnavailable included) and from the
// cache are returned wrapped; batches written before an error stay cached.
func EmbedDocuments(ctx context.Context, e Embedder, cache VectorCache, texts []string, batchSize int) (vecs [][]float32, computed int, err error) {
	if batchSize <= 0 {
		batchSize = DefaultBatchSize
	}
	id := e.Identity()
	if id.Fingerprint == "" {
		return nil, 0, fmt.Errorf("embed documents: %w", ErrUnavailable)
	}
	hashes := make([]string, len(texts))
	var unique []string // hashes in first-seen order
	firstText := map[string]string{}
	for i, t := range texts {
		hashes[i] = TextHash(id, t)
		if _, ok := firstText[hashes[i]]; !ok {
			firstText[hashes[i]] = t
			unique = append(unique, hashes[i])
		}
	}
	found, err := cache.Vectors(id.Fingerprint, unique)
	if err != nil {
		return nil, 0, fmt.Errorf("embed documents: read cache: %w", err)
	}
	if found == nil {
		found = map[string][]float32{}
	}
	var missing []string
	for _, h := range unique {
		if v, ok := found[h]; !ok || len(v) != id.Dimension {
			missing = append(missing, h)
		}
	}
	for start := 0; start < len(missing); start += batchSize {
		batch := missing[start:min(start+batchSize, len(missing))]
		batchTexts := make([]string, len(batch))
		for i, h := range batch {
			batchTexts[i] = firstText[h]
		}
		got, err := e.Embed(ctx, batchTexts, Document)
		if err != nil {
			return nil, computed, fmt.Errorf("embed documents: %w", err)
		}
		if now := e.Identity(); now.Fingerprint != id.Fingerprint || now.Settings != id.Settings {
			return nil, computed, fmt.Errorf("embed documents: %w", ErrModelChanged)
		}
		put := make(map[string][]float32, len(batch))
		for i, h := range batch {
			put[h] = got[i]
			found[h] = got[i]
		}
		if err := cache.PutVectors(id.Fingerprint, put); err != nil {
			return nil, computed, fmt.Errorf("embed documents: write cache: %w", err)
		}
		computed += len(batch)
	}
	vecs = make([][]float32, len(texts))
	for i, h := range hashes {
		vecs[i] = found[h]
	}
	return vecs, computed, nil
}

// UncachedDocuments returns the distinct texts, in first-seen order, whose
// Document vectors under id are not in cache: what EmbedDocuments would
// compute. It returns an error only when the cache cannot be read.
func UncachedDocuments(id Identity, cache VectorCache, texts []string) ([]string, error) {
	hashes := make([]string, 0, len(texts))
	text := make(map[string]string, len(texts))
	for _, t := range texts {
		h := TextHash(id, t)
		if _, ok := text[h]; !ok {
			text[h] = t
			hashes = append(hashes, h)
		}
	}
	found, err := cache.Vectors(id.Fingerprint, hashes)
	if err != nil {
		return nil, fmt.Errorf("read the vector cache: %w", err)
	}
	var out []string
	for _, h := range hashes {
		if v, ok := found[h]; !ok || len(v) != id.Dimension {
			out = append(out, text[h])
		}
	}
	return out, nil
}
