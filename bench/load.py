#!/usr/bin/env python3
"""Weights at load (issue 8): a library that reads its weights when it is
loaded (attnc MODEL -o M.so) against one that embeds them (attnc MODEL
--weights W -o M.so), for GPT-2 small (models/gpt2.attn) with random weights:
compile time and library size; load time against the time it takes to read
the weights file; resident memory after the load and after the first run.

  .venv/bin/python bench/load.py                # GPT-2 small, 3 loads each
  .venv/bin/python bench/load.py --reps 5 --threads 2

Every load runs in a fresh process (this script with --worker), so each one
maps the library and the weights from the page cache as an application's
start would; "read file" is the best of --reps plain reads of the weights
file into memory (warm cache too). The first run feeds token ids 0 of shape
--ids (default 1x128). Memory is the worker's VmRSS, split into RssAnon (the
process's own: constants packed at load, temporaries) and RssFile (pages of
mapped files: the embedded library's constants, the mapped weights file).
Needs the built project (build/bin/attnc) and numpy and the attnc package
(scripts/setup.sh installs it in .venv, bench/setup.sh in bench/.venv).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

MIB = 1024.0 * 1024.0


def memory():
    """VmRSS, RssAnon and RssFile of this process, in MiB."""
    fields = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "RssAnon", "RssFile"):
                fields[key] = int(value.split()[0]) / 1024.0
    return fields


def worker(a):
    import numpy as np
    import attnc

    before = memory()
    start = time.perf_counter()
    model = attnc.load(a.lib, weights=a.weights)
    load_s = time.perf_counter() - start
    loaded = memory()
    model.set_threads(a.threads)
    B, S = (int(v) for v in a.ids.split("x"))
    ids = np.zeros((B, S), np.int32)
    logits = np.empty((B, S, a.vocab), np.float32)
    start = time.perf_counter()
    model.run({"ids": ids}, out={"logits": logits})
    run_s = time.perf_counter() - start
    after = memory()
    print(json.dumps({"load_s": load_s, "run_s": run_s, "before": before,
                      "loaded": loaded, "after_run": after}))


def timed(cmd):
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def read_file_s(path, reps):
    buf = bytearray(os.path.getsize(path))
    best = float("inf")
    for _ in range(reps):
        start = time.perf_counter()
        with open(path, "rb", buffering=0) as f:
            f.readinto(buf)
        best = min(best, time.perf_counter() - start)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=os.path.join(REPO, "models", "gpt2.attn"))
    ap.add_argument("--vocab", type=int, default=50257, help="the logits' last dim")
    ap.add_argument("--ids", default="1x128", help="BxS of the first run's token ids")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--tools", default=os.path.join(REPO, "build"))
    ap.add_argument("--workdir", default=os.path.join(REPO, "build", "bench-load"))
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--lib", help=argparse.SUPPRESS)
    ap.add_argument("--weights", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        return worker(a)

    attnc = os.path.join(a.tools, "bin", "attnc")
    os.makedirs(a.workdir, exist_ok=True)
    weights = os.path.join(a.workdir, "weights.safetensors")
    subprocess.run([attnc, a.model, f"--init-weights={weights}", "--seed=1"], check=True)
    libs = {"load": os.path.join(a.workdir, "load.so"),
            "embedded": os.path.join(a.workdir, "embedded.so")}
    compile_s = {"load": timed([attnc, a.model, "-o", libs["load"]]),
                 "embedded": timed([attnc, a.model, "--weights", weights, "-o",
                                    libs["embedded"]])}
    read_s = read_file_s(weights, a.reps)
    size = os.path.getsize(weights) / MIB
    print(f"# Weights at load: {os.path.basename(a.model)}, weights file {size:.1f} MiB, "
          f"read in {read_s * 1e3:.0f} ms (best of {a.reps}, warm cache: "
          f"{size / read_s:.0f} MiB/s); first run on ids {a.ids}, {a.threads} threads\n")
    print("| library | compile s | library MiB | load ms (median) | load / read file "
          "| RSS after load MiB (anon + file) | RSS after first run MiB (anon + file) "
          "| first run ms |")
    print("| --- | ---: | ---: | ---: | ---: | --- | --- | ---: |")
    for kind, lib in libs.items():
        runs = []
        for _ in range(a.reps):
            cmd = [sys.executable, __file__, "--worker", "--lib", lib, "--tools", a.tools,
                   "--ids", a.ids, "--vocab", str(a.vocab), "--threads", str(a.threads)]
            if kind == "load":
                cmd += ["--weights", weights]
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            runs.append(json.loads(out))
        mid = sorted(runs, key=lambda r: r["load_s"])[len(runs) // 2]
        load_ms = statistics.median(r["load_s"] for r in runs) * 1e3

        def rss(m):
            return f"{m['VmRSS']:.0f} ({m['RssAnon']:.0f} + {m['RssFile']:.0f})"

        print(f"| {kind} | {compile_s[kind]:.1f} | {os.path.getsize(lib) / MIB:.1f} "
              f"| {load_ms:.0f} | {load_ms / (read_s * 1e3):.1f}x | {rss(mid['loaded'])} "
              f"| {rss(mid['after_run'])} | {mid['run_s'] * 1e3:.0f} |")


if __name__ == "__main__":
    main()
