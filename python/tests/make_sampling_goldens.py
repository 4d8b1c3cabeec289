"""Writes python/tests/goldens/sampling.safetensors: what transformers'
`generate` does to a decoder's logits before it picks a token, for the
sampling tests (test_sampling.py), so CI needs no torch.

For each case: a GenerationConfig (do_sample, temperature, top_k, top_p,
repetition_penalty), the processors transformers' own
`GenerationMixin._get_logits_processor` builds from it (so the order is
theirs too) applied to fixed float32 logits [4, 64] and the ids each row has
seen; the result (filtered tokens at -inf) and its softmax are stored.

Pinned: torch 2.15.0, transformers 5.23.0 (CPU). Run:
  python python/tests/make_sampling_goldens.py
with a Python that has both (not the project's .venv)."""

import json
import os
import sys

import numpy as np
import torch
import transformers
from transformers import GenerationConfig, GPT2Config, GPT2LMHeadModel

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "test", "e2e"))
import safetensors_io  # noqa: E402

PINNED = {"torch": "2.15.0", "transformers": "5.23.0"}
V = 64

# name -> GenerationConfig arguments
CASES = {
    "greedy_penalty": dict(do_sample=False, repetition_penalty=1.3),
    "temperature": dict(do_sample=True, temperature=0.7, top_k=0),
    "top_k5": dict(do_sample=True, top_k=5),
    "top_k1": dict(do_sample=True, top_k=1),
    "top_p09": dict(do_sample=True, top_k=0, top_p=0.9),
    "top_p05": dict(do_sample=True, top_k=0, top_p=0.5),
    "top_p001": dict(do_sample=True, top_k=0, top_p=0.01),
    "all": dict(do_sample=True, temperature=0.8, top_k=10, top_p=0.9, repetition_penalty=1.2),
    "hot": dict(do_sample=True, temperature=2.5, top_k=40, top_p=0.95, repetition_penalty=0.8),
}


def main():
    for lib, version in (("torch", torch.__version__), ("transformers", transformers.__version__)):
        if not version.startswith(PINNED[lib]):
            sys.exit(f"{lib} {version}: the goldens are pinned to {PINNED[lib]}")
    rng = np.random.default_rng(0)
    logits = (rng.standard_normal((4, V)) * 3).astype(np.float32)
    logits[2, :8] = logits[2, 0]           # a row with ties at its top
    logits[2, 0:8] = logits[2].max() + 1
    logits[3] = np.linspace(-4, 4, V, dtype=np.float32)  # smooth: top-p cuts mid-row
    seen = rng.integers(0, V, size=(4, 6))
    model = GPT2LMHeadModel(GPT2Config(vocab_size=V, n_embd=8, n_layer=1, n_head=1,
                                       bos_token_id=None, eos_token_id=None)).eval()
    out = {"logits": logits, "seen": seen.astype(np.int32)}
    meta = {}
    for name, kwargs in CASES.items():
        gc = GenerationConfig(**kwargs)
        processors = model._get_logits_processor(
            generation_config=gc, input_ids_seq_length=seen.shape[1],
            encoder_input_ids=torch.from_numpy(seen), logits_processor=None, device="cpu")
        with torch.no_grad():
            scores = processors(torch.from_numpy(seen), torch.from_numpy(logits.copy()))
        out[f"{name}.scores"] = scores.numpy().astype(np.float32)
        out[f"{name}.probs"] = torch.softmax(scores, dim=-1).numpy().astype(np.float32)
        meta[name] = {**kwargs, "processors": [type(p).__name__ for p in processors]}
    path = os.path.join(HERE, "goldens", "sampling.safetensors")
    safetensors_io.save(path, out, metadata={"cases": json.dumps(meta), **PINNED})
    for name, m in meta.items():
        print(f"{name}: {m['processors']}")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
