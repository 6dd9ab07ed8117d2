// Package encoder evaluates a BERT-style transformer encoder natively, in
// pure Go with assembly kernels on amd64: no cgo, no shared library, no
// graph compiler.
//
// How it fits: the model file is the encoder graph that onnxgraph writes
// and reads (onnxgraph.Encoder); embed opens a model folder, and when
// onnxgraph.ReadEncoder recognises its model.onnx, embed runs the forward
// pass here instead of in hugot's ONNX runtime, which it builds only when
// verification compares the two. New keeps the weights as the graph stores
// them, int8 with one scale per row, and packs the matrices once for the
// matrix kernels, which dequantise them a block at a time; Pool and
// LastHiddenState run a batch of token sequences, the dense layers once
// over all their tokens and the attention per sequence and head, on as many
// goroutines as the caller allows.
//
// The kernels are chosen at run time: AVX-512 or AVX2 with FMA on amd64,
// portable Go elsewhere. softmax's exp and GELU's erf are float32
// approximations within about 1e-7 of the exact functions.
package encoder
