#!/usr/bin/env python3
"""Decode of a GPT-2-small-size model with int8 and 4-bit weights against f32
(issue 25, item 2): ms per token at one context, the weight bytes a step
reads, the effective bandwidth (weight and KV-cache bytes a step reads, over
its time), and each quantized model's logit error against f32.

  .venv/bin/python bench/quantized.py --context 128 --threads 1

Model: bench/decode.py's (models/gpt2.attn with a KV cache per layer), random
weights (attnc --init-weights --seed=1). The int8 model is the same model
with its linear matrices declared i8 with their scales and its weights file
made by `attnc quantize`; the 4-bit model ("q4") declares them i4 with one
scale per group of 32 inputs, its file made by `attnc quantize --bits 4`.
Which matrices: every layer's attention projections (c_attn, c_proj) and MLP
(c_fc, c_proj); the head tied to the token table (an embedding too) stays
f32, as do the norms and biases.

Decode at context C (B = 1): a prefill of C - 1 random ids, then one token at
position C - 1; that step is timed (median of --reps after a warm-up); the
prefill of all C ids is timed too (median of --prefill-reps). The
logit error is each quantized model's against the f32 model's over --steps
greedy steps of the f32 model's tokens (teacher-forced: all read the same
ids).
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np

from gpt2_source import gpt2_decode_text

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

D, LAYERS, FFN, VOCAB = 768, 12, 3072, 50257
QUANTIZED = r"h\.[0-9]+\.(attn\.c_(attn|proj)|mlp\.c_(fc|proj))\.weight$"
GROUP = 32  # the 4-bit model's inputs per scale
# (name, in, out) of each layer's quantized matrices, all stored [in, out].
MATRICES = (("attn.c_attn", D, 3 * D), ("attn.c_proj", D, D), ("mlp.c_fc", D, FFN),
            ("mlp.c_proj", FFN, D))
KINDS = ("f32", "int8", "q4")


def model_text(n_positions, kind):
    """bench/decode.py's GPT-2 with KV caches; "int8": its attention and MLP
    matrices declared i8 with their per-output-channel scales; "q4": i4 with
    their scales per group of GROUP inputs ([in / GROUP, out], the matrices'
    layout)."""
    extra = []
    for name, n_in, n_out in (MATRICES if kind != "f32" else ()):
        escaped = name.replace(".", r"\.")
        shape = f"{n_in}, {n_out}"
        scale = f"{n_out}" if kind == "int8" else f"{n_in // GROUP}, {n_out}"
        dtype = "i8" if kind == "int8" else "i4"
        extra.append((rf"(    weight h\.\{{i\}}\.{escaped}\.weight) +: f32\[{shape}\]"
                      r"( layout\(in, out\)\n)",
                      rf"\1 : {dtype}[{shape}]\2    weight h.{{i}}.{name}.weight_scale"
                      rf" : f32[{scale}]\n"))
    try:
        return gpt2_decode_text(n_positions, extra)
    except ValueError as e:
        sys.exit(str(e))


def weight_bytes(kind):
    """Bytes of the matrices one decode step reads: every layer's GEMMs (and
    their scales) and the head (the KV cache is counted apart)."""
    elements = LAYERS * sum(i * o for _, i, o in MATRICES)
    if kind == "f32":
        matrices = 4 * elements
    elif kind == "int8":
        matrices = elements + LAYERS * sum(4 * o for _, _, o in MATRICES)
    else:
        matrices = elements // 2 + 4 * elements // GROUP
    return matrices + D * VOCAB * 4


def take_turns(attnc, kinds, libs, weights, ids, n_pos, a):
    """Each round times every model's decode at the last position (the
    median of 30 steps) and its prefill of all the ids, one model after the
    other, so a machine's load shifts all of them alike."""
    C = ids.shape[1]
    models = {}
    for kind in kinds:
        m = attnc.load(libs[kind], weights=weights[kind], threads=a.threads)
        states = m.new_state(batch=1, capacity=n_pos)
        m.prefill({"ids": ids[:, :-1]}, states)
        models[kind] = (m, states)
    last = {"ids": np.ascontiguousarray(ids[:, -1:])}
    decode = {k: [] for k in kinds}
    prefill = {k: [] for k in kinds}
    for _ in range(a.turns):
        for kind, (m, states) in models.items():
            out = {"logits": np.zeros((1, 1, VOCAB), np.float32)}
            m.decode(last, states, position=C - 1, out=out)
            times = []
            for _ in range(30):
                t = time.perf_counter()
                m.decode(last, states, position=C - 1, out=out)
                times.append(time.perf_counter() - t)
            decode[kind].append(1e3 * statistics.median(times))
            fresh = m.new_state(batch=1, capacity=n_pos)
            t = time.perf_counter()
            m.prefill({"ids": ids}, fresh)
            prefill[kind].append(1e3 * (time.perf_counter() - t))
    print(f"GPT-2 small, B=1, context {C}, {a.threads} thread(s), {a.turns} rounds in turns")
    print(f"| weights | decode ms/token (per round) | prefill {C} ms (per round) |")
    print("| --- | --- | --- |")
    for kind in kinds:
        print(f"| {kind} | {' '.join(f'{x:.2f}' for x in decode[kind])} | "
              f"{' '.join(f'{x:.0f}' for x in prefill[kind])} |")


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"{' '.join(cmd)} failed:\n{p.stderr}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--context", type=int, default=128)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--steps", type=int, default=32)
    ap.add_argument("--prefill-reps", type=int, default=5)
    ap.add_argument("--turns", type=int, default=0,
                    help="instead of one timing per model: load them all and time "
                         "them in turns, this many rounds of 30 decode steps (and a "
                         "prefill) each, steadier on a loaded machine")
    ap.add_argument("--kinds", default=",".join(KINDS),
                    help="comma-separated weights to compare (f32 always runs: "
                         "the reference); default f32,int8,q4")
    ap.add_argument("--reuse", action="store_true",
                    help="reuse the libraries and weights of an earlier run in --workdir")
    ap.add_argument("--attnc", default=os.path.join(REPO, "build", "bin", "attnc"))
    ap.add_argument("--workdir", default=os.path.join(HERE, "out", "quantized"))
    a = ap.parse_args()
    import attnc

    kinds = ["f32"] + [k for k in a.kinds.split(",") if k != "f32"]
    if any(k not in KINDS for k in kinds):
        sys.exit(f"--kinds: choose from {', '.join(KINDS)}")
    os.makedirs(a.workdir, exist_ok=True)
    n_pos = max(1024, a.context + a.steps)
    libs, weights = {}, {}
    for kind in kinds:
        src = os.path.join(a.workdir, f"gpt2_{kind}.attn")
        with open(src, "w") as f:
            f.write(model_text(n_pos, kind))
        libs[kind] = os.path.join(a.workdir, f"gpt2_{kind}.so")
        weights[kind] = os.path.join(a.workdir, f"w_{kind}.safetensors")
        if a.reuse and os.path.exists(libs[kind]) and os.path.exists(weights[kind]):
            continue
        if kind == "f32":
            run([a.attnc, src, f"--init-weights={weights[kind]}", "--seed=1"])
        else:
            bits = ["--bits", "4", "--group", str(GROUP)] if kind == "q4" else []
            run([a.attnc, "quantize", weights["f32"], "-o", weights[kind],
                 "--only", QUANTIZED, "--in-out", "."] + bits)
        run([a.attnc, src, "-o", libs[kind]])

    C = a.context
    rng = np.random.default_rng([C, VOCAB])
    ids = rng.integers(0, VOCAB, size=(1, C), dtype=np.int32)
    if a.turns:
        take_turns(attnc, kinds, libs, weights, ids, n_pos, a)
        return
    results = {}
    for kind in kinds:
        m = attnc.load(libs[kind], weights=weights[kind], threads=a.threads)
        # Prefill of the C-token prompt (GEMMs), timed as the decode.
        states = m.new_state(batch=1, capacity=n_pos)
        prefill = []
        for _ in range(1 + a.prefill_reps):
            t = time.perf_counter()
            m.prefill({"ids": ids}, states)
            prefill.append(time.perf_counter() - t)
        states = m.new_state(batch=1, capacity=n_pos)
        m.prefill({"ids": ids[:, :-1]}, states)
        last = {"ids": np.ascontiguousarray(ids[:, -1:])}
        out = {"logits": np.zeros((1, 1, VOCAB), np.float32)}
        m.decode(last, states, position=C - 1, out=out)
        times = []
        for _ in range(a.reps):
            t = time.perf_counter()
            m.decode(last, states, position=C - 1, out=out)
            times.append(time.perf_counter() - t)
        logits = [out["logits"].copy()]
        # Teacher-forced steps on the f32 model's greedy tokens.
        tokens = results.get("f32", {}).get("tokens")
        chosen = []
        for step in range(a.steps):
            tok = int(np.argmax(logits[-1])) if tokens is None else tokens[step]
            chosen.append(tok)
            m.decode({"ids": np.array([[tok]], np.int32)}, states, position=C + step, out=out)
            logits.append(out["logits"].copy())
        results[kind] = {"ms": 1e3 * statistics.median(times),
                         "prefill_ms": 1e3 * statistics.median(prefill[1:]),
                         "logits": np.stack(logits),
                         "tokens": chosen}
    import platform
    cpu = platform.processor() or "unknown"
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            if line.startswith("Model name"):
                cpu = line.split(":", 1)[1].strip()
    except OSError:
        pass
    print(f"GPT-2 small decode, B=1, context {C}, {a.threads} thread(s), {cpu}")
    cache_mb = LAYERS * 2 * C * D * 4 / 1e6
    print(f"| weights | decode ms/token | weight MB/token | + f32 KV cache MB | "
          f"effective GB/s | prefill {C} ms |")
    print("| --- | --- | --- | --- | --- | --- |")
    for kind in kinds:
        r = results[kind]
        mb = weight_bytes(kind) / 1e6
        print(f"| {kind} | {r['ms']:.2f} | {mb:.0f} | {cache_mb:.0f} | "
              f"{(mb + cache_mb) / r['ms']:.1f} | {r['prefill_ms']:.1f} |")
    ref = results["f32"]["logits"]
    for kind in kinds[1:]:
        got = results[kind]["logits"]
        agree = np.argmax(ref, -1) == np.argmax(got, -1)
        print(f"{kind} vs f32 over {len(ref)} steps: max |logit error| "
              f"{np.abs(got - ref).max():.4f} (logits' max |value| {np.abs(ref).max():.2f}), "
              f"top-1 agreement {agree.mean():.3f} ({agree.sum()}/{agree.size})")


if __name__ == "__main__":
    main()
