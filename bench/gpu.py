#!/usr/bin/env python3
"""The GPU benchmark (issue 10): the GPT-2 block and the BERT layer compiled
for CUDA against PyTorch on the same GPU, fp32 with TF32 off on both sides.

Two steps, because the machine with the GPU has CUDA and PyTorch but no
MLIR (docs/gpu.md, "Measuring on a GPU"):

  bench/gpu.py prepare [--out bench/gpu-out] [--capability 86]
      here: writes each block with the bench's sequence bound and compiles it
      (and GPT-2 small with KV caches, models/gpt2.attn, for the decode)
      with --target=host-cuda-cuda_capability_N (weights read at load: the
      libraries stay small), and bundles attn-run with the libraries it
      links into OUT/bin and OUT/lib. Halide 21 stops at sm_86; the driver
      compiles its PTX for newer GPUs (an H100 is sm_90).
  bench/gpu.py run [--out bench/gpu-out] [--shape 1x128 ...] [--reps 50]
      on the GPU machine, in a copy of this tree with OUT carried along:
      seeded weights for the libraries'
      weights tables (attn-run --info lists them), written once and read by
      both sides; per block and shape, attn-run --device-memory --bench (the
      kernels alone: inputs and outputs stay on the device) and the PyTorch
      module of bench/blocks.py on CUDA, timed with CUDA events; both outputs
      compared with the module in fp64 on the CPU. Prints markdown tables:
      the blocks (ms, TFLOP/s, ratio, errors), then attnc's kernels by kind
      (attn-run --profile) beside cuBLAS GEMMs and SDPA at the same sizes,
      then GPT-2 small's decode on the device (attn-run --generate from
      prompts of 128 and 960 tokens, ms per token, the first checked with
      --check; attnc alone). Tables also go to OUT/results.md.

`--attnc-only` (run) skips PyTorch: a smoke test of the attnc side anywhere
a library's device is (a host-opencl build on PoCL, with --target).
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "test", "e2e"))

import numpy as np  # noqa: E402

import blocks  # noqa: E402
from profile_table import parse_profile  # noqa: E402
import safetensors_io  # noqa: E402

ATTNC = os.path.join(REPO, "build", "bin", "attnc")
# The C libraries every Linux has; attn-run's others go into the bundle.
SYSTEM_LIBS = ("linux-vdso", "ld-linux", "libc.so", "libm.so", "libpthread", "libdl",
               "librt")
# The shapes of the issue: a short prompt, a batch, long sequences.
SHAPES = ((1, 128), (8, 128), (1, 1024), (1, 4096))
# GPT-2 small's decode: its positions (GPT-2's own), the prompts' lengths.
DECODE_POSITIONS = 1024
DECODE_PROMPTS = (128, 960)


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def run_cmd(cmd, what, timeout=1800, libdir=None):
    env = dict(os.environ)
    if libdir:
        env["LD_LIBRARY_PATH"] = libdir + os.pathsep + env.get("LD_LIBRARY_PATH", "")
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    if r.returncode != 0:
        sys.exit(f"bench/gpu.py: {what} failed (exit {r.returncode}):\n"
                 f"$ {' '.join(cmd)}\n{r.stdout}{r.stderr}")
    return r.stdout


def library(out, block):
    return os.path.join(out, f"{block.name}.so")


def bundle_attn_run(out):
    """OUT/bin/attn-run and OUT/lib: attn-run with libattnrt and the other
    libraries it links (fmt, png, libstdc++, ...), found by ldd, so the GPU
    machine needs only the C library."""
    src = os.path.join(REPO, "build", "bin", "attn-run")
    os.makedirs(os.path.join(out, "bin"), exist_ok=True)
    os.makedirs(os.path.join(out, "lib"), exist_ok=True)
    shutil.copy2(src, os.path.join(out, "bin", "attn-run"))
    for line in run_cmd(["ldd", src], "ldd attn-run").splitlines():
        m = re.match(r"\s*(\S+) => (/\S+)", line)
        if m and not m.group(1).startswith(SYSTEM_LIBS):
            shutil.copy2(m.group(2), os.path.join(out, "lib", m.group(1)))


def prepare(a):
    os.makedirs(a.out, exist_ok=True)
    target = a.target or f"host-cuda-cuda_capability_{a.capability}"
    for block in blocks.BLOCKS.values():
        with open(os.path.join(REPO, block.model_file)) as f:
            text = f.read()
        text, n = re.subn(r"dim B, S <= \d+", f"dim B, S <= {block.s_max}", text)
        if n != 1:
            sys.exit(f"bench/gpu.py: {block.model_file} has no 'dim B, S <= N' line")
        model = os.path.join(a.out, f"{block.name}.attn")
        with open(model, "w") as f:
            f.write(text)
        log(f"compiling {block.name} for {target}")
        run_cmd([ATTNC, model, f"--target={target}", "-o", library(a.out, block)],
                f"attnc {block.name}")
    from gpt2_source import gpt2_decode_text
    model = os.path.join(a.out, "gpt2_decode.attn")
    with open(model, "w") as f:
        f.write(gpt2_decode_text(DECODE_POSITIONS))
    log(f"compiling gpt2_decode for {target}")
    run_cmd([ATTNC, model, f"--target={target}", "-o", decode_library(a.out)],
            "attnc gpt2_decode")
    bundle_attn_run(a.out)
    print(f"prepared {a.out} for {target}: carry it to the GPU machine and run "
          "bench/gpu.py run there")


def decode_library(out):
    return os.path.join(out, "gpt2_decode.so")


def decode_side(a, work):
    """GPT-2 small with its KV caches on the device (attn-run --generate),
    seeded weights: per prompt length, ms per token over --decode-tokens
    greedy steps, the shortest also checked against one run over the whole
    sequence (--check). Rows of the decode table."""
    lib = decode_library(work)
    wpath = os.path.join(work, "gpt2_decode.safetensors")
    make_weights(work, lib, wpath)
    # Once untimed: the driver compiles each kernel's PTX at its first launch
    # (Halide 21 emits sm_86 at most) and caches it for later processes; the
    # first timed prompt otherwise paid it (8.9 against 1.6 ms a token, H200).
    attn_run(work, [lib, "--weights", wpath, "--generate", "2", "--prompt", "1,2,3",
                    "--cache", str(DECODE_POSITIONS)], "attn-run --generate (warm-up)")
    rng = np.random.default_rng(7)
    rows = []
    for n in DECODE_PROMPTS:
        prompt = ",".join(str(v) for v in rng.integers(0, 50257, n))
        check = ["--check"] if n == DECODE_PROMPTS[0] else []
        log(f"gpt2_decode prompt {n}")
        text = attn_run(work, [lib, "--weights", wpath, "--generate", str(a.decode_tokens),
                               "--prompt", prompt, "--cache", str(DECODE_POSITIONS)] + check,
                        f"attn-run --generate (prompt {n})")
        m = re.search(r"^decode: .*: ([0-9.]+) ms/token", text, re.M)
        if not m:
            sys.exit(f"bench/gpu.py: no decode line in attn-run's output:\n{text}")
        verdict = "-"
        if check:
            c = re.search(r"^check: .*max abs difference ([^ ]+) .*: (ok|FAILED)$", text, re.M)
            verdict = f"{c.group(2)} ({c.group(1)})" if c else "no check line"
        rows.append(f"| {n} | {a.decode_tokens - 1} | {float(m.group(1)):.3f} | {verdict} |")
    return rows


def attn_run(out, args, what):
    return run_cmd([os.path.join(out, "bin", "attn-run")] + args, what,
                   libdir=os.path.join(out, "lib"))


def weights_table(out, lib):
    """(name, dims) of every weight the library reads, from attn-run --info."""
    text = attn_run(out, [lib, "--info"], "attn-run --info")
    table, inside = [], False
    for line in text.splitlines():
        if line.startswith("weights"):
            inside = True
            continue
        m = re.match(r"\s+(\S+): F32 \[([0-9, ]+)\]$", line) if inside else None
        if m:
            table.append((m.group(1), [int(d) for d in m.group(2).split(",")]))
    if not table:
        sys.exit(f"bench/gpu.py: '{lib}' reads no f32 weights (attn-run --info):\n{text}")
    return table


def make_weights(out, lib, path):
    """Seeded weights: N(0, 0.02) matrices and biases, norms' scales near 1
    (their names end in LayerNorm.weight / ln_*.weight), as a trained
    checkpoint has them."""
    rng = np.random.default_rng(1)
    tensors = {}
    for name, dims in weights_table(out, lib):
        if re.search(r"(LayerNorm|ln_\d)\.weight$", name):
            v = 1.0 + 0.1 * rng.standard_normal(dims)
        else:
            v = 0.02 * rng.standard_normal(dims)
        tensors[name] = v.astype(np.float32)
    safetensors_io.save(path, tensors)
    return tensors


def parse_bench(text):
    m = re.search(r"median ([0-9.]+) ms", text)
    if not m:
        sys.exit(f"bench/gpu.py: no median in attn-run's output:\n{text}")
    return float(m.group(1))


def attnc_side(a, block, lib, weights, b, s, work):
    x = np.random.default_rng(100 + b * s).standard_normal((b, s, blocks.D))
    x = x.astype(np.float32)
    inp = os.path.join(work, f"{block.name}_in_{b}x{s}.safetensors")
    out = os.path.join(work, f"{block.name}_out_{b}x{s}.safetensors")
    safetensors_io.save(inp, {"x": x})
    base = [lib, "--weights", weights, "--inputs", inp, "--device-memory"]
    ms = parse_bench(attn_run(work, base + ["--bench", str(a.reps), "--outputs", out],
                              f"attn-run {block.name} {b}x{s}"))
    profile = {kind: row["ms"] for kind, row in
               parse_profile(attn_run(work, base + ["--profile"], "attn-run --profile")).items()}
    return x, ms, profile, safetensors_io.load(out)["y"]


def torch_time(fn, reps):
    """Median ms of `fn` on the GPU over `reps` runs after warm-up, each
    timed with CUDA events."""
    import torch
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def torch_side(a, block, weights, x):
    import torch
    mod = blocks.torch_module(block, weights).cuda()
    xt = torch.from_numpy(x).cuda()
    with torch.inference_mode():
        ms = torch_time(lambda: mod(xt), a.reps)
        y = mod(xt).float().cpu().numpy()
    return ms, y


def reference(block, weights, x):
    """The block in fp64 on the CPU: what both sides' errors are measured
    against (PyTorch's fused fp32 kernels are not a reference)."""
    import torch
    mod = blocks.torch_module(block, weights).double()
    with torch.inference_mode():
        return mod(torch.from_numpy(x).double()).numpy()


def reference_kernels(a, b, s, causal):
    """cuBLAS GEMMs (x @ W, the block's four shapes) and fp32 SDPA at this
    shape, in ms."""
    import torch
    import torch.nn.functional as F
    m, d, f = b * s, blocks.D, blocks.FFN
    times = {}
    for k, n in ((d, 3 * d), (d, d), (d, f), (f, d)):
        xa = torch.randn(m, k, device="cuda")
        wa = torch.randn(k, n, device="cuda")
        times[f"gemm {m}x{k}x{n}"] = (torch_time(lambda: xa @ wa, a.reps), 2.0 * m * k * n)
    q, kk, v = (torch.randn(b, blocks.HEADS, s, d // blocks.HEADS, device="cuda")
                for _ in range(3))
    s_eff = (s + 1) / 2 if causal else s
    times["sdpa"] = (torch_time(lambda: F.scaled_dot_product_attention(
        q, kk, v, is_causal=causal), a.reps), 4.0 * b * s * s_eff * d)
    return times


def tflops(flops, ms):
    return flops / (ms * 1e-3) / 1e12 if ms > 0 else 0.0


def run(a):
    work = a.out
    rows, details = [], []
    gpu = "no PyTorch (--attnc-only)"
    if not a.attnc_only:
        import torch
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        gpu = f"{torch.cuda.get_device_name()}, PyTorch {torch.__version__}"
    shapes = [tuple(int(v) for v in t.split("x")) for t in a.shape] if a.shape else SHAPES
    for block in blocks.BLOCKS.values():
        lib = library(work, block)
        if not os.path.exists(lib):
            sys.exit(f"bench/gpu.py: '{lib}' is missing: run bench/gpu.py prepare first")
        wpath = os.path.join(work, f"{block.name}.safetensors")
        weights = make_weights(work, lib, wpath)
        for b, s in shapes:
            if s > block.s_max:
                continue
            log(f"{block.name} {b}x{s}")
            flops = blocks.flops(block, b, s)
            x, ours, profile, y = attnc_side(a, block, lib, wpath, b, s, work)
            if a.attnc_only:
                rows.append(f"| {block.name} | {b}x{s} | {ours:.3f} | "
                            f"{tflops(flops, ours):.2f} | - | - | - | - | - |")
            else:
                theirs, ty = torch_side(a, block, weights, x)
                ref = reference(block, weights, x)
                err, terr = (float(np.max(np.abs(v - ref))) for v in (y, ty))
                rows.append(f"| {block.name} | {b}x{s} | {ours:.3f} | "
                            f"{tflops(flops, ours):.2f} | {theirs:.3f} | "
                            f"{tflops(flops, theirs):.2f} | {ours / theirs:.2f} | "
                            f"{err:.1e} | {terr:.1e} |")
                for name, (ms, fl) in reference_kernels(a, b, s, block.causal).items():
                    details.append(f"| {block.name} | {b}x{s} | PyTorch {name} | {ms:.3f} | "
                                   f"{tflops(fl, ms):.2f} |")
            for kind, ms in sorted(profile.items()):
                details.append(f"| {block.name} | {b}x{s} | attnc {kind} | {ms:.3f} | - |")
    decode = []
    if a.decode_tokens > 1 and os.path.exists(decode_library(work)):
        decode = ["", "Decode: GPT-2 small (seeded weights, KV caches in device memory), "
                  "attn-run --generate, greedy; the first prompt checked against one run "
                  "over its whole sequence (--check).", "",
                  "| prompt | decode steps | ms per token | check |",
                  "| --- | --- | --- | --- |", *decode_side(a, work)]
    text = "\n".join([
        f"GPU: {gpu}; fp32, TF32 off; attnc with inputs and outputs in device "
        f"memory; medians of {a.reps} runs.", "",
        "Errors: max abs difference from the block in fp64 (PyTorch on the CPU).", "",
        "| block | BxS | attnc ms | attnc TFLOP/s | PyTorch ms | PyTorch TFLOP/s | "
        "attnc / PyTorch | attnc error | PyTorch error |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |", *rows, "",
        "Kernels: attnc's by kind (attn-run --profile, ms per run, synchronised "
        "after each) beside cuBLAS GEMMs (M x K x N) and SDPA at the same shape.", "",
        "| block | BxS | kernel | ms | TFLOP/s |", "| --- | --- | --- | --- | --- |",
        *details, *decode, ""])
    print(text)
    with open(os.path.join(work, "results.md"), "w") as f:
        f.write(text)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="step", required=True)
    pp = sub.add_parser("prepare", help="compile the blocks for CUDA (here)")
    pp.add_argument("--out", default=os.path.join(HERE, "gpu-out"))
    pp.add_argument("--capability", type=int, default=86)
    pp.add_argument("--target", help="another target, e.g. host-opencl for a smoke test")
    pr = sub.add_parser("run", help="measure (on the GPU machine)")
    pr.add_argument("--out", default=os.path.join(HERE, "gpu-out"))
    pr.add_argument("--shape", action="append", metavar="BxS",
                    help="a shape to run (repeatable; default the issue's four)")
    pr.add_argument("--reps", type=int, default=50)
    pr.add_argument("--attnc-only", action="store_true",
                    help="skip PyTorch (no GPU API of its own needed)")
    pr.add_argument("--decode-tokens", type=int, default=64,
                    help="tokens GPT-2 small's decode generates per prompt (default 64; "
                         "0 skips the decode)")
    a = p.parse_args()
    prepare(a) if a.step == "prepare" else run(a)


if __name__ == "__main__":
    main()
