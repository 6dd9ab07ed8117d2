"""The dense ranking alone of a sentence encoder on the labelled sets beside
the checkout (devsets.py): NDCG@10, Recall@5 and Hit@1 of each set's tasks
that have a relevant skill, by cosine between mean-pooled, L2-normalised
vectors. It compares candidate base models before one is converted:

  python3 dense.py --src MODEL_DIR [--body 400] [--sets SET,...] [--out FILE.json]

MODEL_DIR is a Hugging Face folder (model.safetensors, config.json, the
tokenizer files) of any architecture transformers loads, so it also
measures encoders `go run ./models/recipe encoder` does not convert. The
router's own dense mode adds the name and trigger boosts to the cosine
(routerctl eval --mode dense); these figures are the cosine alone, so
compare them with each other, not with routerctl's. It runs in the
environment of finetune.py (requirements-finetune.txt).
"""
import argparse
import json
import math
import time

import torch
from transformers import AutoModel, AutoTokenizer

import devsets

ap = argparse.ArgumentParser()
ap.add_argument("--src", required=True, help="the model folder")
ap.add_argument("--body", type=int, default=400, help="characters of the body after the name and description")
ap.add_argument("--length", type=int, default=256, help="tokens of a text")
ap.add_argument("--sets", default="", help="only these sets, comma-separated (default: all)")
ap.add_argument("--out", default="", help="write the figures here as JSON")
ap.add_argument("--work", default="/tmp/mcpsag-encoder", help="where the corpora are gathered")
a = ap.parse_args()
torch.set_num_threads(2)

SETS = devsets.gathered_sets(a.work)
wanted = [n for n in a.sets.split(",") if n]
for n in wanted:
    if n not in SETS:
        ap.error("unknown set %r; the sets are %s" % (n, ", ".join(SETS)))
tok = AutoTokenizer.from_pretrained(a.src)
model = AutoModel.from_pretrained(a.src).eval()


def embed(texts, batch=32):
    """Unit vectors of texts, batched by length."""
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    out = None
    with torch.no_grad():
        for i in range(0, len(texts), batch):
            idx = order[i:i + batch]
            v = devsets.unit_vectors(model, tok, [texts[j] for j in idx], a.length)
            if out is None:
                out = torch.zeros(len(texts), v.shape[1])
            out[idx] = v
    return out


def figures(top, relevant):
    """NDCG@10, Recall@5 and Hit@1 of one ranking, in percent."""
    dcg = sum(1 / math.log2(i + 2) for i, n in enumerate(top[:10]) if n in relevant)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(relevant), 10)))
    return 100 * dcg / ideal, 100 * len(set(top[:5]) & relevant) / len(relevant), 100.0 * (top[0] in relevant)


results = {}
for name, (root, qpath) in SETS.items():
    if wanted and name not in wanted:
        continue
    start = time.time()
    sk = devsets.skills(root)
    names = list(sk)
    docs = embed([devsets.document_text(sk[n], a.body) for n in names])
    tasks = [(q["query"], {r for r in q["relevant"] if r in sk}) for q in devsets.queries(qpath)]
    tasks = [(q, rel) for q, rel in tasks if rel]
    top = (embed([q for q, _ in tasks]) @ docs.T).topk(min(10, len(names)), dim=1).indices.tolist()
    sums = [0.0, 0.0, 0.0]
    for (_, rel), row in zip(tasks, top):
        for k, v in enumerate(figures([names[j] for j in row], rel)):
            sums[k] += v
    n = len(tasks)
    results[name] = {"ndcg10": sums[0] / n, "recall5": sums[1] / n, "hit1": sums[2] / n,
                     "tasks": n, "skills": len(names), "seconds": time.time() - start}
    print("%-16s NDCG@10 %5.1f  Recall@5 %5.1f  Hit@1 %5.1f  (%d tasks, %d skills, %.0f s)" % (
        name, sums[0] / n, sums[1] / n, sums[2] / n, n, len(names), time.time() - start), flush=True)
if a.out:
    with open(a.out, "w") as f:
        json.dump(results, f, indent=1)
