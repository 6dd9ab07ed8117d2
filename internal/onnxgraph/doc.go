// Package onnxgraph writes small ONNX models in pure Go.
//
// It encodes the ONNX ModelProto by hand with protowire rather than vendoring
// onnx.proto: the router only ever writes a handful of graph shapes, and the
// field numbers it needs are listed in proto.go next to the encoder.
//
// It writes two models. StaticEmbedding is a token-embedding table looked up
// per token id, the graph behind the project's default offline embedding
// model and behind the tiny model the test suite generates. Encoder is a
// BERT-style transformer encoder (all-MiniLM-L6-v2 and its fine-tunes) with
// int8 weights dequantised in the graph. Both follow the Hugging Face
// feature-extraction convention (inputs input_ids and attention_mask, and
// token_type_ids for the encoder; output last_hidden_state), so they run
// through the same hugot path as any exported sentence-transformer and the
// embedder does the pooling. ReadStatic and ReadEncoder recognise exactly
// the graphs this package writes and return their weights, so that embed
// can evaluate them natively.
//
// Models are checked by loading them with hugot's pure-Go backend
// (onnx-gomlx), which is what the router runs; see static_test.go.
package onnxgraph
