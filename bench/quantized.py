#!/usr/bin/env python3
"""Decode of a GPT-2-small-size model with int8 and 4-bit weights against f32
(issue 25, item 2), and with its KV caches in f16, bf16 or i8 against f32
(item 3): ms per token at one context, the weight and KV-cache bytes a step reads,
the effective bandwidth (those bytes over its time), and each variant's
logit error against f32 weights with f32 caches.

  .venv/bin/python bench/quantized.py --context 128 --threads 1
  .venv/bin/python bench/quantized.py --context 1024 --kinds f32,int8 --kv-cache f32,f16

Model: bench/decode.py's (models/gpt2.attn with a KV cache per layer), random
weights (attnc --init-weights --seed=1). The int8 model is the same model
with its linear matrices declared i8 with their scales and its weights file
made by `attnc quantize`; the 4-bit model ("q4") declares them i4 with one
scale per group of 32 inputs, its file made by `attnc quantize --bits 4`.
Which matrices: every layer's attention projections (c_attn, c_proj) and MLP
(c_fc, c_proj), and the token table `wte` (one scale per row in int8, per
group of 32 features in q4), so the head tied to it reads it quantized too;
the position table, the norms and the biases stay f32. "int8-f32head" and
"q4-f32head" keep the token table (and so the head) f32, as before the
tables could be quantized; "int8-a8" and "q4-a8" are "int8" and "q4"
compiled with attnc --precision=int8 (int8 activations, integer dot
products). --kv-cache lists the caches' dtypes to run
each weight kind with (`state past.{i}.key : f16[B, L, 768]`; i8 with its
scales per row and head, `past.{i}.key_scale : f32[B, L, 12]`); a step
reads the cache's first C rows of keys and values in every layer.

Decode at context C (B = 1): a prefill of C - 1 random ids, then one token at
position C - 1; that step is timed (median of --reps after a warm-up); the
prefill of all C ids is timed too (median of --prefill-reps; 0 skips it).
The variants are loaded together and their decode steps timed in turns (one
step of each per round), so a shared machine's load falls on all. With
--turns N, instead, N rounds each time every variant's decode (the median of
30 steps) and its prefill, and the table lists every round. The logit error
is each variant's against the f32 model's (f32 caches) over --steps greedy
steps of that model's tokens (teacher-forced: all read the same ids).
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

D, LAYERS, FFN, VOCAB, HEADS = 768, 12, 3072, 50257, 12
MATRICES_RE = r"h\.[0-9]+\.(attn\.c_(attn|proj)|mlp\.c_(fc|proj))"
# The layers' Conv1D matrices are stored [in, out]; the token table is
# [rows, features], an [out, in] matrix of the head.
IN_OUT = r"^h\."
GROUP = 32  # the 4-bit model's inputs per scale
# (name, in, out) of each layer's quantized matrices, all stored [in, out].
MATRICES = (("attn.c_attn", D, 3 * D), ("attn.c_proj", D, D), ("mlp.c_fc", D, FFN),
            ("mlp.c_proj", FFN, D))
KINDS = ("f32", "int8", "q4", "int8-f32head", "q4-f32head", "int8-a8", "q4-a8")
CACHES = ("f32", "f16", "bf16", "i8")


def bits_of(kind):
    """The matrices' precision: f32, int8 or q4."""
    return kind.split("-")[0]


def weights_of(kind):
    """The weights of `kind`: "-a8" (int8 activations, attnc
    --precision=int8) reads those of the kind without it."""
    return kind.removesuffix("-a8")


def quantized_head(kind):
    return weights_of(kind) in ("int8", "q4")


def quantize_args(kind):
    """The arguments of `attnc quantize` (after IN -o OUT) that make the
    weights of `kind` from the f32 ones."""
    table = "|wte" if quantized_head(kind) else ""
    bits = ["--bits", "4", "--group", str(GROUP)] if bits_of(kind) == "q4" else []
    return ["--only", rf"^({MATRICES_RE}{table})\.weight$", "--in-out", IN_OUT] + bits


def model_text(n_positions, kind, kv_cache="f32"):
    """bench/decode.py's GPT-2 with KV caches of dtype `kv_cache`; "int8":
    its attention and MLP matrices and its token table declared i8 with
    their per-output-channel (per-row) scales; "q4": i4 with their scales
    per group of GROUP inputs ([in / GROUP, out], the matrices' layout;
    [50257, 768 / GROUP] for the table); "-f32head": the table f32."""
    extra = [(rf"state past\.\{{i\}}\.{kv}( +): f32\[", rf"state past.{{i}}.{kv}\1: {kv_cache}[")
             for kv in ("key", "value")]
    if kv_cache == "i8":
        # An i8 cache's scales: one per row and head.
        extra.append((r"(    state past\.\{i\}\.value : i8\[B, L, 768\]\n)",
                      rf"\1    state past.{{i}}.key_scale : f32[B, L, {HEADS}]\n"
                      rf"    state past.{{i}}.value_scale : f32[B, L, {HEADS}]\n"))
    if quantized_head(kind):
        dtype, scale = (("i8", f"{VOCAB}") if weights_of(kind) == "int8"
                        else ("i4", f"{VOCAB}, {D // GROUP}"))
        extra.append((rf"(  weight wte\.weight) : f32\[{VOCAB}, {D}\]\n",
                      rf"\1 : {dtype}[{VOCAB}, {D}]\n"
                      rf"  weight wte.weight_scale : f32[{scale}]\n"))
    kind = bits_of(kind)
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
    head = D * VOCAB
    if bits_of(kind) == "f32":
        matrices = 4 * elements
    elif bits_of(kind) == "int8":
        matrices = elements + LAYERS * sum(4 * o for _, _, o in MATRICES)
    else:
        matrices = elements // 2 + 4 * elements // GROUP
    if weights_of(kind) == "int8":
        return matrices + head + 4 * VOCAB
    if weights_of(kind) == "q4":
        return matrices + head // 2 + 4 * head // GROUP
    return matrices + 4 * head


def cache_bytes(cache, C):
    """Bytes of the keys and values a step at context C reads (an i8
    cache's: a byte a feature and an f32 scale a head)."""
    if cache == "i8":
        return LAYERS * 2 * C * (D + 4 * HEADS)
    return LAYERS * 2 * C * D * (4 if cache == "f32" else 2)


def name_of(variant):
    kind, cache = variant
    return kind if cache == "f32" else f"{kind}_{cache}kv"


def take_turns(models, states, ids, n_pos, rounds):
    """Each round times every variant's decode at the last position (the
    median of 30 steps) and its prefill of all the ids, one variant after
    the other, so a machine's load shifts all of them alike."""
    C = ids.shape[1]
    last = {"ids": np.ascontiguousarray(ids[:, -1:])}
    decode = {v: [] for v in models}
    prefill = {v: [] for v in models}
    for _ in range(rounds):
        for v, m in models.items():
            out = {"logits": np.zeros((1, 1, VOCAB), np.float32)}
            m.decode(last, states[v], position=C - 1, out=out)
            times = []
            for _ in range(30):
                t = time.perf_counter()
                m.decode(last, states[v], position=C - 1, out=out)
                times.append(time.perf_counter() - t)
            decode[v].append(1e3 * statistics.median(times))
            fresh = m.new_state(batch=1, capacity=n_pos)
            t = time.perf_counter()
            m.prefill({"ids": ids}, fresh)
            prefill[v].append(1e3 * (time.perf_counter() - t))
    print(f"GPT-2 small, B=1, context {C}, {rounds} rounds in turns")
    print(f"| weights | KV cache | decode ms/token (per round) | prefill {C} ms (per round) |")
    print("| --- | --- | --- | --- |")
    for v in models:
        print(f"| {v[0]} | {v[1]} | {' '.join(f'{x:.2f}' for x in decode[v])} | "
              f"{' '.join(f'{x:.0f}' for x in prefill[v])} |")


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"{' '.join(cmd)} failed:\n{p.stderr}")


def choose(text, allowed, flag):
    """`text`'s comma-separated values, "f32" first (the reference)."""
    values = ["f32"] + [v for v in text.split(",") if v != "f32"]
    if any(v not in allowed for v in values):
        sys.exit(f"{flag}: choose from {', '.join(allowed)}")
    return values


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--context", type=int, default=128)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--steps", type=int, default=32)
    ap.add_argument("--prefill-reps", type=int, default=5)
    ap.add_argument("--kinds", default="f32,int8,q4",
                    help="comma-separated weights to compare (f32 always runs: "
                         "the reference): " + ", ".join(KINDS) + "; default f32,int8,q4")
    ap.add_argument("--kv-cache", default="f32",
                    help="the caches' dtypes to run each weight kind with, e.g. f32,f16 "
                         "(f32 always runs)")
    ap.add_argument("--turns", type=int, default=0,
                    help="instead: this many rounds of 30 decode steps (and a prefill) "
                         "of every variant in turn, each round's median listed")
    ap.add_argument("--reuse", action="store_true",
                    help="reuse the libraries and weights of an earlier run in --workdir "
                         "(libraries older than attnc are compiled again)")
    ap.add_argument("--attnc", default=os.path.join(REPO, "build", "bin", "attnc"))
    ap.add_argument("--workdir", default=os.path.join(HERE, "out", "quantized"))
    a = ap.parse_args()
    import attnc

    kinds = choose(a.kinds, KINDS, "--kinds")
    caches = choose(a.kv_cache, CACHES, "--kv-cache")
    os.makedirs(a.workdir, exist_ok=True)
    n_pos = max(1024, a.context + a.steps)
    variants = [(kind, cache) for kind in kinds for cache in caches]
    libs, weights = {}, {}
    for kind in kinds:
        # The file names carry n_pos (wpe's rows and the caches' bound), so
        # --reuse never picks up a run's for another context.
        weights[kind] = os.path.join(a.workdir, f"w_{kind}_n{n_pos}.safetensors")
        if a.reuse and os.path.exists(weights[kind]):
            continue
        if kind == "f32":
            src = os.path.join(a.workdir, f"gpt2_f32_n{n_pos}.attn")
            with open(src, "w") as f:
                f.write(model_text(n_pos, "f32"))
            run([a.attnc, src, f"--init-weights={weights[kind]}", "--seed=1"])
        else:
            run([a.attnc, "quantize", weights["f32"], "-o", weights[kind]]
                + quantize_args(kind))
    for v in variants:
        src = os.path.join(a.workdir, f"gpt2_{name_of(v)}_n{n_pos}.attn")
        with open(src, "w") as f:
            f.write(model_text(n_pos, *v))
        libs[v] = os.path.join(a.workdir, f"gpt2_{name_of(v)}_n{n_pos}.so")
        # A library compiled before attnc was rebuilt is compiled again.
        if not (a.reuse and os.path.exists(libs[v])
                and os.path.getmtime(libs[v]) >= os.path.getmtime(a.attnc)):
            run([a.attnc, src, "-o", libs[v]]
                + (["--precision=int8"] if v[0].endswith("-a8") else []))

    C = a.context
    rng = np.random.default_rng([C, VOCAB])
    ids = rng.integers(0, VOCAB, size=(1, C), dtype=np.int32)
    # Every variant loaded at once and its decodes timed in turns, one step
    # each per round: on a shared machine the load of the moment falls on
    # all of them alike.
    models, states, times, prefill = {}, {}, {}, {}
    last = {"ids": np.ascontiguousarray(ids[:, -1:])}
    out = {"logits": np.zeros((1, 1, VOCAB), np.float32)}
    for v in variants:
        m = models[v] = attnc.load(libs[v], weights=weights[v[0]], threads=a.threads)
        # Prefill of the C-token prompt (GEMMs), timed as the decode.
        st = m.new_state(batch=1, capacity=n_pos)
        prefill[v] = []
        for _ in range(a.prefill_reps and 1 + a.prefill_reps):
            t = time.perf_counter()
            m.prefill({"ids": ids}, st)
            prefill[v].append(time.perf_counter() - t)
        st = states[v] = m.new_state(batch=1, capacity=n_pos)
        m.prefill({"ids": ids[:, :-1]}, st)
        m.decode(last, st, position=C - 1, out=out)
        times[v] = []
    if a.turns:
        take_turns(models, states, ids, n_pos, a.turns)
        for m in models.values():
            m.close()
        return
    for _ in range(a.reps):
        for v in variants:
            t = time.perf_counter()
            models[v].decode(last, states[v], position=C - 1, out=out)
            times[v].append(time.perf_counter() - t)
    results = {}
    for v in variants:
        m = models[v]
        m.decode(last, states[v], position=C - 1, out=out)
        logits = [out["logits"].copy()]
        # Teacher-forced steps on the f32 model's greedy tokens.
        tokens = results.get(("f32", "f32"), {}).get("tokens")
        chosen = []
        for step in range(a.steps):
            tok = int(np.argmax(logits[-1])) if tokens is None else tokens[step]
            chosen.append(tok)
            m.decode({"ids": np.array([[tok]], np.int32)}, states[v], position=C + step,
                     out=out)
            logits.append(out["logits"].copy())
        m.close()
        results[v] = {"ms": 1e3 * statistics.median(times[v]),
                      "prefill_ms": (1e3 * statistics.median(prefill[v][1:])
                                     if prefill[v] else float("nan")),
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
    print(f"| weights | KV cache | decode ms/token | weight MB/token | + KV cache MB | "
          f"effective GB/s | prefill {C} ms |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for kind, cache in variants:
        r = results[kind, cache]
        mb = weight_bytes(kind) / 1e6
        cache_mb = cache_bytes(cache, C) / 1e6
        print(f"| {kind} | {cache} | {r['ms']:.2f} | {mb:.0f} | {cache_mb:.0f} | "
              f"{(mb + cache_mb) / r['ms']:.1f} | {r['prefill_ms']:.1f} |")
    ref = results["f32", "f32"]["logits"]
    for kind, cache in variants[1:]:
        got = results[kind, cache]["logits"]
        agree = np.argmax(ref, -1) == np.argmax(got, -1)
        print(f"{kind} weights, {cache} cache vs f32 over {len(ref)} steps: max |logit error| "
              f"{np.abs(got - ref).max():.4f} (logits' max |value| {np.abs(ref).max():.2f}), "
              f"top-1 agreement {agree.mean():.3f} ({agree.sum()}/{agree.size})")


if __name__ == "__main__":
    main()
