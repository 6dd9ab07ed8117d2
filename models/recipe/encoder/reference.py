"""Reference embeddings of a model folder: Hugging Face's tokenizers library
and onnxruntime on the folder's own tokenizer.json and model.onnx, mean
pooling over the attention mask and L2 normalisation, as sentence-transformers
does. The router's tests compare its own embeddings with these
(models/reference_test.go).

Usage: python3 reference.py MODEL_DIR TEXTS_JSON OUT_F32 [MAX_TOKENS]

TEXTS_JSON is a JSON list of strings; OUT_F32 receives one little-endian
float32 vector per text, in order. MAX_TOKENS (default 256) caps the tokens
of a text, special tokens included. Runs offline: it reads only the files
named.
"""
import json
import sys

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer


def main():
    model_dir, texts_path, out_path = sys.argv[1:4]
    max_tokens = int(sys.argv[4]) if len(sys.argv) > 4 else 256
    texts = json.load(open(texts_path, encoding="utf-8"))
    tok = Tokenizer.from_file(f"{model_dir}/tokenizer.json")
    tok.no_padding()
    tok.enable_truncation(max_length=max_tokens)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(f"{model_dir}/model.onnx", opts, providers=["CPUExecutionProvider"])
    names = {i.name for i in sess.get_inputs()}
    rows = []
    for text in texts:
        enc = tok.encode(text)
        ids = np.array([enc.ids], np.int64)
        mask = np.array([enc.attention_mask], np.int64)
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in names:
            feed["token_type_ids"] = np.zeros_like(ids)
        hidden = sess.run(["last_hidden_state"], feed)[0][0]
        m = mask[0].astype(np.float32)[:, None]
        v = (hidden * m).sum(0) / max(m.sum(), 1.0)
        n = np.linalg.norm(v)
        rows.append((v / n if n > 0 else v).astype("<f4"))
    out = np.stack(rows) if rows else np.zeros((0, 0), "<f4")
    out.astype("<f4").tofile(out_path)


if __name__ == "__main__":
    main()
