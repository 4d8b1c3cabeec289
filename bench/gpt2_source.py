"""models/gpt2.attn rewritten for the decode benches (bench/decode.py,
bench/quantized.py): KV caches on every layer and `n_positions` rows of the
position table, plus the caller's own rewrites."""

import os
import re

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def gpt2_decode_text(n_positions, extra=()):
    """The source; each (pattern, replacement) of the rewrites, the caller's
    `extra` after them, must match exactly once, else ValueError."""
    with open(os.path.join(REPO, "models", "gpt2.attn")) as f:
        text = f.read()
    subs = [
        (r"model gpt2 \{", "model gpt2_decode {"),
        (r"dim B, S <= 1024", f"dim B, S <= {n_positions}, L <= {n_positions}"),
        (r"wpe\.weight : f32\[1024, 768\]", f"wpe.weight : f32[{n_positions}, 768]"),
        (r"(    weight h\.\{i\}\.mlp\.c_proj\.bias +: f32\[768\]\n)",
         r"\1    state past.{i}.key   : f32[B, L, 768]\n"
         r"    state past.{i}.value : f32[B, L, 768]\n"),
        (r"mask = causal\)", "mask = causal, cache = past.{i})"),
    ] + list(extra)
    for pattern, repl in subs:
        text, n = re.subn(pattern, repl, text)
        if n != 1:
            raise ValueError(f"models/gpt2.attn: expected one '{pattern}' to rewrite, "
                             f"found {n}")
    return text
