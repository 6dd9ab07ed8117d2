// Package onnxgraph writes small ONNX models in pure Go.
//
// It encodes the ONNX ModelProto by hand with protowire rather than vendoring
// onnx.proto: the router only ever writes a handful of graph shapes, and the
// field numbers it needs are listed in proto.go next to the encoder.
//
// The one model it writes today is StaticEmbedding: a token-embedding table
// looked up per token id, the graph behind the project's default offline
// embedding model and behind the tiny model the test suite generates. The
// output follows the Hugging Face feature-extraction convention (inputs
// input_ids and attention_mask, output last_hidden_state), so the model runs
// through the same hugot path as any exported sentence-transformer and the
// embedder does the pooling.
//
// Models are checked by loading them with hugot's pure-Go backend
// (onnx-gomlx), which is what the router runs; see static_test.go.
package onnxgraph
