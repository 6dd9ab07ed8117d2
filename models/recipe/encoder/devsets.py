"""The labelled sets the encoder is fine-tuned on, read where they lie
beside the checkout (../shared): skill roots of SKILL.md folders and their
queries.jsonl. Nothing of them is copied into the repository; the recipe
reads them at run time.

A skill's text is the one the router embeds (skill.Skill.DocumentText): its
name with hyphens and underscores read as spaces, a colon, its description
(with Claude Code's when_to_use after it), and, for a model whose
mcpsag-model.json sets body_chars, a blank line and the start of its body.
"""
import json
import os
import re

import yaml

SHARED = os.environ.get("MCPSAG_SHARED", os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "shared"))


# The corpora's tasks, written for the project beside its tests.
CORPORA_TASKS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "testdata", "corpora-tasks", "queries.jsonl")


def gathered_sets(work):
    """Every set by name: (skill root, queries file), after gathering the
    skill folders of ../shared/corpora into work/corpora (gather_corpora),
    the root the corpora tasks go with."""
    corpora_root = os.path.join(work, "corpora")
    gather_corpora(corpora_root)
    return {
        "metatool": (f"{SHARED}/eval/metatool/skills", f"{SHARED}/eval/metatool/queries.jsonl"),
        "seal-tools": (f"{SHARED}/eval/seal-tools/skills", f"{SHARED}/eval/seal-tools/queries.jsonl"),
        "skillsbench-dev": (f"{SHARED}/eval-transfer/skillsbench-dev/skills", f"{SHARED}/eval-transfer/skillsbench-dev/queries.jsonl"),
        "toollens-train": (f"{SHARED}/eval-transfer/toollens-train/skills", f"{SHARED}/eval-transfer/toollens-train/queries.jsonl"),
        "corpora": (f"{corpora_root}/skills", CORPORA_TASKS),
    }


# The queries fitted on for ToolLens: its whole train split, of which the
# dev set's 3,000 requests are a part.
TOOLLENS_TRAIN = f"{SHARED}/train/toollens-train-full/queries.jsonl"


def gather_corpora(dst):
    """Copies every skill folder under ../shared/corpora into dst/skills,
    named as the router's dev-set tests name them (a folder name seen before
    gets -2, -3, ...), and returns how many."""
    import shutil
    src = f"{SHARED}/corpora"
    shutil.rmtree(dst, ignore_errors=True)
    taken = set()

    def walk(d):
        for e in sorted(os.listdir(d)):
            p = os.path.join(d, e)
            if os.path.isdir(p) and not os.path.islink(p):
                yield from walk(p)
            elif e == "SKILL.md":
                yield p

    for p in walk(src):
        folder = os.path.dirname(p)
        base = os.path.basename(folder)
        name, i = base, 2
        while name in taken:
            name, i = f"{base}-{i}", i + 1
        taken.add(name)
        shutil.copytree(folder, os.path.join(dst, "skills", name), symlinks=True)
    return len(taken)


def parse(path):
    """The frontmatter (a dict, None when there is none) and body of a SKILL.md."""
    text = open(path, encoding="utf-8", errors="replace").read()
    m = re.match(r"^---\s*\n(.*?)\n---\s*\n?(.*)$", text, re.S)
    if not m:
        return None, text
    try:
        fm = yaml.safe_load(m.group(1)) or {}
    except Exception:
        fm = {}
    if not isinstance(fm, dict):
        fm = {}
    return fm, m.group(2)


def skills(root):
    """The skills of a root, by name, in folder order."""
    out = {}
    for d in sorted(os.listdir(root)):
        p = os.path.join(root, d, "SKILL.md")
        if not os.path.isfile(p):
            continue
        fm, body = parse(p)
        if fm is None:
            continue
        name = str(fm.get("name") or d)
        desc = str(fm.get("description") or "")
        when = fm.get("when_to_use")
        if isinstance(when, str) and when:
            desc += " " + when
        out[name] = {"name": name, "desc": desc, "body": body, "dir": d}
    return out


def document_text(s, body_chars=0):
    """The text the router embeds for skill s."""
    name = s["name"].replace("-", " ").replace("_", " ").strip()
    text = name + (": " + s["desc"].strip() if s["desc"].strip() else "")
    if body_chars and s["body"].strip():
        text += "\n\n" + s["body"].strip()[:body_chars]
    return text


def unit_vectors(model, tok, texts, length):
    """The vectors the router computes for texts under a transformers
    model: the token vectors averaged where the attention mask is 1 (the
    router's mean pooling), L2-normalised; each text cut at length tokens.
    Gradients flow unless the caller turns them off."""
    import torch

    b = tok(texts, padding=True, truncation=True, max_length=length, return_tensors="pt")
    h = model(**b).last_hidden_state
    m = b["attention_mask"].unsqueeze(-1).float()
    return torch.nn.functional.normalize((h * m).sum(1) / m.sum(1), dim=-1)


def queries(path):
    return [json.loads(line) for line in open(path) if line.strip()]
