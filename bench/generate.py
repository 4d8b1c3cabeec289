#!/usr/bin/env python3
"""From a Hugging Face checkpoint to generated tokens (issue 23): what a user
of `attnc.from_pretrained` waits for.

  .venv/bin/python bench/generate.py                 # everything (a few minutes)
  .venv/bin/python bench/generate.py --only compile  # one measure
  .venv/bin/python bench/generate.py --threads 2 --workdir /tmp/attnc-gen

Needs numpy and attnc (the attnc executable on PATH or $ATTNC); no torch:
the checkpoints are written here, random, with numpy.

1. compile: a TinyLlama-1.1B-shaped LlamaForCausalLM directory (hidden
   2048, 22 layers, 32 heads, 4 KV heads, intermediate 5632, vocabulary
   32000, bf16, 2.2 GB, written once into WORKDIR/tinyllama as a sharded
   checkpoint: two shards and model.safetensors.index.json) through `attnc
   import DIR -o model.attn` (the import alone) and `attnc DIR -o lib.so
   --verbose` (import + compile + link); the second's stderr is timestamped
   as it streams, which splits it into import and lowering (to the first
   kernel line), Halide kernels (to "attnc: compiled"), and the Halide
   runtime and link (to exit). Median of --reps runs. Aim: under 20 s.
2. overhead: `Model.generate(prompt, N)` (greedy) against a plain loop of
   `prefill` then `decode` calls with numpy's argmax on the same library,
   same prompt and N, alternated --reps times; the medians' difference per
   token, and relative to the loop's time per token. Model: a small Llama
   (hidden 512, 4 layers, 8 heads, 4 KV heads, intermediate 1408,
   vocabulary 32000, bf16) so the per-token cost is small and an overhead
   shows. Aim: under 3 %.
3. batch: `Model.generate` of B = 1, 8, 32 ragged prompts (lengths drawn
   in [16, 64], seed 0), 32 new tokens each, greedy, no EOS: generated
   tokens per second (prefills included), and the decode steps alone.

Results are printed and written to WORKDIR/results.md with the CPU
(lscpu's model name). Method and results: docs/performance.md,
"From a checkpoint to tokens".
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import attnc

TINYLLAMA = dict(hidden_size=2048, num_hidden_layers=22, num_attention_heads=32,
                 num_key_value_heads=4, intermediate_size=5632, vocab_size=32000,
                 max_position_embeddings=2048)
SMALL = dict(hidden_size=512, num_hidden_layers=4, num_attention_heads=8,
             num_key_value_heads=4, intermediate_size=1408, vocab_size=32000,
             max_position_embeddings=512)


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def llama_tensors(c):
    """(name, shape) of LlamaForCausalLM's checkpoint, in save order."""
    d, f, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    kv = d // c["num_attention_heads"] * c["num_key_value_heads"]
    out = [("model.embed_tokens.weight", (v, d))]
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        out += [(p + "input_layernorm.weight", (d,)),
                (p + "self_attn.q_proj.weight", (d, d)),
                (p + "self_attn.k_proj.weight", (kv, d)),
                (p + "self_attn.v_proj.weight", (kv, d)),
                (p + "self_attn.o_proj.weight", (d, d)),
                (p + "post_attention_layernorm.weight", (d,)),
                (p + "mlp.gate_proj.weight", (f, d)),
                (p + "mlp.up_proj.weight", (f, d)),
                (p + "mlp.down_proj.weight", (d, f))]
    return out + [("model.norm.weight", (d,)), ("lm_head.weight", (v, d))]


def bf16(shape, rng, norm):
    """Random bf16 bits: N(0, 0.02) for matrices, ones for norms."""
    if norm:
        return np.full(shape, 0x3F80, dtype=np.uint16)
    x = rng.standard_normal(shape, dtype=np.float32) * np.float32(0.02)
    return (x.view(np.uint32) >> 16).astype(np.uint16)


def write_shard(path, tensors, rng):
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, shape in tensors:
        n = 2 * int(np.prod(shape))
        header[name] = {"dtype": "BF16", "shape": list(shape),
                        "data_offsets": [offset, offset + n]}
        offset += n
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path + ".tmp", "wb") as f:
        f.write(len(text).to_bytes(8, "little") + text)
        for name, shape in tensors:
            bf16(shape, rng, name.endswith("norm.weight")).tofile(f)
    os.replace(path + ".tmp", path)


def write_checkpoint(directory, config, shards):
    """A LlamaForCausalLM directory as save_pretrained writes it (sharded
    when `shards` > 1), random bf16 weights; kept if already complete."""
    done = os.path.join(directory, "config.json")
    if os.path.exists(done):
        return directory
    os.makedirs(directory, exist_ok=True)
    log(f"writing {directory} ...")
    rng = np.random.default_rng(0)
    tensors = llama_tensors(config)
    sizes = [2 * int(np.prod(s)) for _, s in tensors]
    total, weight_map, start = sum(sizes), {}, 0
    for k in range(shards):
        end, acc = start, 0
        while end < len(tensors) and (k == shards - 1 or acc < total / shards):
            acc += sizes[end]
            end += 1
        name = (f"model-{k + 1:05d}-of-{shards:05d}.safetensors" if shards > 1
                else "model.safetensors")
        write_shard(os.path.join(directory, name), tensors[start:end], rng)
        weight_map.update({t: name for t, _ in tensors[start:end]})
        start = end
    if shards > 1:
        with open(os.path.join(directory, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f,
                      indent=2)
    cfg = dict(architectures=["LlamaForCausalLM"], model_type="llama", hidden_act="silu",
               rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False,
               torch_dtype="bfloat16", bos_token_id=1, eos_token_id=2, **config)
    with open(done + ".tmp", "w") as f:
        json.dump(cfg, f, indent=2)
    os.replace(done + ".tmp", done)
    return directory


def weights_of(directory):
    index = os.path.join(directory, "model.safetensors.index.json")
    return index if os.path.exists(index) else os.path.join(directory, "model.safetensors")


def timed_compile(exe, directory, out, threads_env):
    """attnc DIR -o out --verbose with each stderr line's time since start:
    (import+lowering, kernels, runtime+link, total) seconds, kernel count."""
    t0 = time.perf_counter()
    p = subprocess.Popen([exe, directory, "-o", out, "--verbose"], stderr=subprocess.PIPE,
                         stdout=subprocess.DEVNULL, text=True, env=threads_env)
    first = compiled = None
    kernels = 0
    for line in p.stderr:
        now = time.perf_counter() - t0
        if line.startswith("[") and "] kernel " in line and first is None:
            first = now
        if line.startswith("attnc: compiled"):
            compiled = now
            kernels = int(line.split()[2])
    if p.wait() != 0:
        raise SystemExit(f"attnc {directory} failed")
    total = time.perf_counter() - t0
    first = first if first is not None else total
    compiled = compiled if compiled is not None else first
    return first, compiled - first, total - compiled, total, kernels


def measure_compile(a, exe, results):
    d = write_checkpoint(os.path.join(a.workdir, "tinyllama"), TINYLLAMA, shards=2)
    env = dict(os.environ)
    imports, splits = [], []
    for r in range(a.reps):
        t0 = time.perf_counter()
        subprocess.run([exe, "import", d, "-o", os.path.join(a.workdir, "tinyllama.attn")],
                       check=True)
        imports.append(time.perf_counter() - t0)
        lib = os.path.join(a.workdir, "tinyllama.so")
        splits.append(timed_compile(exe, d, lib, env))
        log(f"compile rep {r}: import {imports[-1]:.2f} s, attnc DIR -o lib.so "
            f"{splits[-1][3]:.2f} s")
    med = [statistics.median(s[i] for s in splits) for i in range(4)]
    results.append("## 1. TinyLlama-1.1B-shaped directory: import + compile\n")
    results.append(f"- checkpoint: {d} (2 shards + index, bf16, "
                   f"{sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d)) / 1e9:.2f} GB)")
    results.append(f"- `attnc import DIR` alone: {statistics.median(imports):.2f} s "
                   f"(median of {a.reps})")
    results.append(f"- `attnc DIR -o lib.so`: {med[3]:.2f} s = import and lowering "
                   f"{med[0]:.2f} s + {splits[0][4]} Halide kernels {med[1]:.2f} s + Halide "
                   f"runtime and link {med[2]:.2f} s (medians of {a.reps}); aim 20 s\n")
    return lib, d


def small_model(a, exe):
    d = write_checkpoint(os.path.join(a.workdir, "small"), SMALL, shards=1)
    lib = os.path.join(a.workdir, "small.so")
    if not os.path.exists(lib):
        subprocess.run([exe, d, "-o", lib], check=True)
    return attnc.load(lib, weights=weights_of(d), threads=a.threads)


def raw_loop(m, prompt, n):
    """What generate does at its simplest: prefill, then n - 1 decodes,
    numpy's argmax choosing each token."""
    states = m.new_state(batch=1, capacity=len(prompt) + n)
    logits = m.prefill({"ids": prompt[None, :]}, states)["logits"][:, -1]
    out = []
    for step in range(n):
        token = int(np.argmax(logits[0]))
        out.append(token)
        if step + 1 == n:
            break
        logits = m.decode({"ids": np.array([[token]], dtype=np.int32)}, states,
                          position=len(prompt) + step)["logits"][:, -1]
    return out


class RunClock:
    """Time spent inside the library's runs (Model.run, which prefill and
    decode call), so that what generate adds around them is measured apart
    from the kernels' time, which other processes on the machine disturb."""

    def __init__(self, m):
        self.inside = 0.0
        run = m.run

        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return run(*args, **kwargs)
            finally:
                self.inside += time.perf_counter() - t0
        m.run = timed

    def measure(self, fn):
        """(wall seconds, seconds outside the library) of fn()."""
        self.inside = 0.0
        t0 = time.perf_counter()
        fn()
        wall = time.perf_counter() - t0
        return wall, wall - self.inside


def measure_overhead(a, m, results):
    rng = np.random.default_rng(1)
    prompt = rng.integers(3, SMALL["vocab_size"], 16).astype(np.int32)
    n = a.tokens
    assert m.generate(prompt, n) == raw_loop(m, prompt, n), "generate != the raw loop"
    clock = RunClock(m)
    raw, gen = [], []
    for _ in range(a.reps):
        raw.append(clock.measure(lambda: raw_loop(m, prompt, n)))
        gen.append(clock.measure(lambda: m.generate(prompt, n)))
    r = statistics.median(w for w, _ in raw)
    g = statistics.median(w for w, _ in gen)
    r_out = statistics.median(o for _, o in raw)
    g_out = statistics.median(o for _, o in gen)
    results.append("## 2. Model.generate over a loop of raw decode calls\n")
    results.append(f"- small Llama (hidden 512, 4 layers, vocab 32000, bf16), prompt 16, "
                   f"{n} new tokens, greedy, {a.threads} threads, medians of {a.reps}")
    results.append(f"- wall: raw loop {1e3 * r / n:.3f} ms/token, generate {1e3 * g / n:.3f} "
                   f"ms/token ({100 * (g - r) / r:+.2f} %)")
    results.append(f"- outside the library's runs: raw loop {1e6 * r_out / n:.1f} us/token, "
                   f"generate {1e6 * g_out / n:.1f} us/token: generate adds "
                   f"{1e6 * (g_out - r_out) / n:.1f} us/token = "
                   f"{100 * (g_out - r_out) / r:.2f} % of the raw loop's time (aim 3 %)\n")


def measure_batch(a, m, results):
    rng = np.random.default_rng(0)
    n = 32
    results.append("## 3. Batched decode, ragged prompts\n")
    results.append(f"small Llama, prompts of 16..64 tokens, {n} new tokens each, greedy, "
                   f"{a.threads} threads, median of {a.reps}:\n")
    results.append("| B | generate s | tokens/s | decode steps only, tokens/s |")
    results.append("| ---: | ---: | ---: | ---: |")
    for b in (1, 8, 32):
        prompts = [rng.integers(3, SMALL["vocab_size"], int(k)).astype(np.int32)
                   for k in rng.integers(16, 65, b)]
        times, decode = [], []
        for _ in range(a.reps):
            t0 = time.perf_counter()
            steps = m.generate(prompts, n, stream=True)
            next(steps)     # the prefills and the first token
            t1 = time.perf_counter()
            for _ in steps:
                pass
            t2 = time.perf_counter()
            times.append(t2 - t0)
            decode.append(t2 - t1)
        t, dt = statistics.median(times), statistics.median(decode)
        results.append(f"| {b} | {t:.3f} | {b * n / t:.0f} | {b * (n - 1) / dt:.0f} |")
    results.append("")


def cpu_name():
    out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    name = next((l.split(":", 1)[1].strip() for l in out.splitlines()
                 if l.startswith("Model name")), "?")
    cores = os.cpu_count()
    return f"{name}, {cores} logical CPUs"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", choices=("compile", "overhead", "batch"))
    ap.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "attnc-bench-generate"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--tokens", type=int, default=128, help="new tokens for the overhead")
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    exe = attnc.find_attnc()
    results = ["# bench/generate.py", "", f"- CPU: {cpu_name()}",
               f"- load average at the start: {os.getloadavg()[0]:.1f}",
               f"- attnc: {subprocess.run([exe, '--version'], capture_output=True, text=True).stdout.strip()}",
               ""]
    if a.only in (None, "compile"):
        measure_compile(a, exe, results)
    if a.only in (None, "overhead", "batch"):
        with small_model(a, exe) as m:
            if a.only in (None, "overhead"):
                measure_overhead(a, m, results)
            if a.only in (None, "batch"):
                measure_batch(a, m, results)
    text = "\n".join(results)
    print(text)
    with open(os.path.join(a.workdir, "results.md"), "w") as f:
        f.write(text + "\n")


if __name__ == "__main__":
    main()
