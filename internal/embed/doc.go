// Package embed turns skill texts and queries into vectors with a local ONNX
// sentence-embedding model, run by hugot's pure-Go backend (no cgo, no shared
// libraries), or natively when the model is one of onnxgraph's: a static
// embedding table, or a BERT encoder graph that internal/encoder evaluates.
//
// How it fits: internal/loader calls EmbedDocuments when a pass assembles a
// generation (and in the background, for the texts a pass left to its
// backfill), with a VectorCache backed by the store, so unchanged skills are
// never embedded twice; the matcher embeds each task as a Query (with a bounded
// LRU cache) and ranks by cosine next to BM25. Manager owns the current
// model: when the model folder is missing or broken, or a model run fails or
// times out, it reports degraded with a reason, emits one
// skill_embedding_fallback event through a FallbackReporter, and returns
// ErrUnavailable so matching falls back to keyword-only; Reload recovers when
// a valid model is back. Verify checks a model folder without a daemon.
//
// Model folders use the Hugging Face layout: model.onnx (or onnx/model.onnx),
// tokenizer.json, optionally config.json and sentence-transformers'
// 1_Pooling/config.json, plus an optional mcpsag-model.json with defaults
// (see Manifest). Texts are sanitised before they reach the tokenizer (see
// Sanitize), because hugot's Go tokenizer path calls log.Fatal on tokenizer
// errors; this package tokenizes itself, never calls that path, recovers
// the tokenizer's panics, and retries a text it fails on from its ASCII
// characters, so one odd text cannot fail a batch or degrade a Manager.
package embed
