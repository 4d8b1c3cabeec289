#!/usr/bin/env python3
"""Where attnc's kernels sit under this machine's roofline (issue 25, item 6).

  python bench/roofline.py                          # models/gpt2.attn
  python bench/roofline.py models/llama.attn --dims B=1,S=128 B=1,S=1 --threads 2

The model is compiled with build/bin/attnc (weights drawn by `attnc
--init-weights --seed=1`, read at load) and run by attn-run at each --dims
(`--random DIMS --bench N --profile`): per kind of kernel its ms per run,
GFLOP/s and arithmetic intensity (flops per byte of the buffers its calls
are passed, docs/runtime.md "Profiling": an overcount of the bytes for a
kernel that reads part of a buffer, which puts it right of where it is).
The roof is measured in the same run at the same thread count: the FP32 FMA
peak (bench/fma_peak.c) and the read bandwidth (bench/read_bw.c), each the
best of two measurements. Attainable GFLOP/s at intensity I is
min(peak, bandwidth x I); each kernel's fraction of it is in the table.

Writes OUT/roofline.png (log-log; one point per kind of kernel and --dims,
its area the kernel's share of the run's time) and OUT/roofline.md. Needs
numpy and matplotlib (bench/setup.sh pins them), a C compiler `cc`, and the
built project.
"""

import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import run as bench_run  # noqa: E402  (bench/run.py: peak, bandwidth, machine facts)
from profile_table import parse_profile  # noqa: E402

BIN = os.path.join(REPO, "build", "bin")


def profile(lib, weights, dims, threads, reps):
    text = bench_run.run_cmd(
        [os.path.join(BIN, "attn-run"), lib, "--weights", weights, "--random", dims,
         "--threads", str(threads), "--bench", str(reps), "--profile"],
        f"attn-run --profile at {dims}", timeout=1800)
    kinds = parse_profile(text)
    if not kinds:
        raise bench_run.BenchError(f"attn-run --profile at {dims}: no table in its output:\n{text}")
    return kinds


def attainable(intensity, peak, bandwidth):
    return min(peak, bandwidth * intensity)


def plot(path, title, points, peak, bandwidth):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(8, 5.5), dpi=120)
    xs = [p["intensity"] for p in points]
    lo = min(xs + [peak / bandwidth]) / 4
    hi = max(xs + [peak / bandwidth]) * 4
    grid = np.geomspace(lo, hi, 200)
    ax.plot(grid, np.minimum(peak, bandwidth * grid), color="black", linewidth=1.5)
    ax.annotate(f"FMA peak {peak:.0f} GFLOP/s", (hi, peak), ha="right", va="bottom")
    ax.annotate(f"read {bandwidth:.1f} GB/s", (lo * 1.2, bandwidth * lo * 1.3),
                rotation=0, va="bottom")
    colors = {}
    for p in points:
        first = p["dims"] not in colors
        color = colors.setdefault(p["dims"], f"C{len(colors)}")
        ax.scatter(p["intensity"], p["gflops"], s=20 + 6 * p["share"], color=color,
                   alpha=0.7, label=p["dims"] if first else None)
        ax.annotate(p["kind"], (p["intensity"], p["gflops"]), fontsize=7,
                    xytext=(4, 2), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (flop per byte of the kernel's buffers)")
    ax.set_ylabel("GFLOP/s")
    ax.set_title(title, fontsize=9)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(title="dims (area: share of the run)", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model", nargs="?", default=os.path.join(REPO, "models", "gpt2.attn"),
                   help="an .attn model (default models/gpt2.attn: its 500 MB of weights do not fit in the caches)")
    p.add_argument("--dims", nargs="+", default=["B=1,S=128", "B=1,S=1"],
                   help="attn-run --random values, one profile each")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--bench", type=int, default=20, help="attn-run --bench N")
    p.add_argument("--out", default=os.path.join(HERE, "out", "roofline"))
    a = p.parse_args()
    if a.threads < 1 or a.bench < 1:
        p.error("--threads and --bench must be at least 1")

    os.makedirs(a.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="attnc-roofline-")
    name = os.path.splitext(os.path.basename(a.model))[0]
    lib, weights = os.path.join(work, name + ".so"), os.path.join(work, name + ".safetensors")
    attnc = os.path.join(BIN, "attnc")
    bench_run.run_cmd([attnc, a.model, f"--init-weights={weights}", "--seed=1"],
                      "attnc --init-weights")
    bench_run.run_cmd([attnc, a.model, "-o", lib], "attnc", timeout=1800)

    peaks, isa = bench_run.measure_peak(work, [a.threads])
    reads = bench_run.measure_bandwidth(work, [a.threads])
    points = []
    for dims in a.dims:
        for kind, row in profile(lib, weights, dims, a.threads, a.bench).items():
            if row["gflops"] and row["intensity"]:
                points.append(dict(row, kind=kind, dims=dims))
    again, _ = bench_run.measure_peak(work, [a.threads])
    reads_again = bench_run.measure_bandwidth(work, [a.threads])
    peak = max(peaks[a.threads], again[a.threads])
    bandwidth = max(reads[a.threads], reads_again[a.threads])

    _, cpu, commit = bench_run.machine_facts(())
    title = (f"{name}, {a.threads} thread(s); {cpu}; attnc {commit}; "
             f"peak {peak:.0f} GFLOP/s ({isa}), read {bandwidth:.1f} GB/s")
    png = os.path.join(a.out, "roofline.png")
    plot(png, title, points, peak, bandwidth)
    lines = [f"# Roofline: {title}", "",
             "| dims | kernel | ms/run | % of run | GFLOP/s | flop/B | roof GFLOP/s | of roof |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for q in points:
        roof = attainable(q["intensity"], peak, bandwidth)
        lines.append(f"| {q['dims']} | {q['kind']} | {q['ms']:.3f} | {q['share']:.1f} | "
                     f"{q['gflops']:.1f} | {q['intensity']:.2f} | {roof:.1f} | "
                     f"{100 * q['gflops'] / roof:.0f}% |")
    lines += ["", f"Plot: {png}", ""]
    md = os.path.join(a.out, "roofline.md")
    with open(md, "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    try:
        main()
    except bench_run.BenchError as e:
        sys.exit(f"bench/roofline.py: {e}")
