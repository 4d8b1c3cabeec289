#!/usr/bin/env python3
"""What masks save: the attention kernel alone (attn.sdpa, GPT-2 small's 12
heads of 64) under each mask, timed with attn-run --bench in one run.

  bench/masks.py [--threads 2] [--runs 5]

Prints, per case, the median ms and the ratio to its baseline:
  * padding: a batch of 4 x 1024 with lengths [S, S/2, S/4, 1] against the
    same batch with every length S (target: at most 0.5x; the visible area is
    0.44 of the full one);
  * window: window(256) & causal at 1 x 4096 against causal (target: at least
    5x cheaper).
Needs the built project (build/bin/attnc, build/bin/attn-run) and numpy (the
project's .venv).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "test", "e2e"))
import safetensors_io as st  # noqa: E402

MODEL = """func.func @model(%q: tensor<?x?x768xf32> {attn.dim_symbols = ["B", "S"], attn.name = "q"},
                 %len: tensor<?xi32> {attn.dim_symbols = ["B"], attn.name = "len"})
    -> (tensor<?x?x768xf32> {attn.name = "y"}) attributes {attn.symbols = [["B", 0], ["S", 4096]]} {
  %o = attn.sdpa %q, %q, %q heads(12) MASK {scale = 0.125 : f32}
      : tensor<?x?x768xf32>, tensor<?x?x768xf32>, tensor<?x?x768xf32> -> tensor<?x?x768xf32>
  return %o : tensor<?x?x768xf32>
}
"""

MASKS = {
    "padding": "mask<none> lengths(%len : tensor<?xi32>)",
    "causal": "mask<causal>",
    "window256": "mask<causal, window(255, 0)>",
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    attnc = os.path.join(REPO, "build", "bin", "attnc")
    run = os.path.join(REPO, "build", "bin", "attn-run")
    wd = tempfile.mkdtemp(prefix="attnc-masks-")
    rng = np.random.default_rng(0)
    libs = {}
    # The models have no weights; attnc still wants a (here empty) file.
    weights = os.path.join(wd, "none.safetensors")
    for name, mask in MASKS.items():
        src = os.path.join(wd, name + ".mlir")
        with open(src, "w") as f:
            f.write(MODEL.replace("MASK", mask))
        if not os.path.exists(weights):
            subprocess.run([attnc, src, "--init-weights=" + weights], check=True)
        libs[name] = os.path.join(wd, name + ".so")
        subprocess.run([attnc, src, "--weights", weights, "-o", libs[name]], check=True)

    def inputs(path, B, S, lengths):
        st.save(path, {"q": rng.standard_normal((B, S, 768)).astype(np.float32),
                       "len": np.array(lengths, np.int32)})
        return path

    def time(lib, path):
        p = subprocess.run([run, lib, "--inputs", path, "--threads", str(args.threads),
                            "--bench", str(args.runs)], capture_output=True, text=True,
                           check=True)
        return float(re.search(r"median ([0-9.]+) ms", p.stdout + p.stderr).group(1))

    S = 1024
    full = time(libs["padding"], inputs(os.path.join(wd, "full.st"), 4, S, [S] * 4))
    padded = time(libs["padding"], inputs(os.path.join(wd, "pad.st"), 4, S,
                                          [S, S // 2, S // 4, 1]))
    long_in = inputs(os.path.join(wd, "long.st"), 1, 4096, [4096])
    causal = time(libs["causal"], long_in)
    window = time(libs["window256"], long_in)
    print(f"threads {args.threads}, median of {args.runs} runs")
    print("| case | ms | against | ratio |")
    print("| --- | ---: | --- | ---: |")
    print(f"| padding 4x{S}, lengths [S, S/2, S/4, 1] | {padded:.1f} | unpadded {full:.1f} ms "
          f"| {padded / full:.2f}x |")
    print(f"| causal & window(256), 1x4096 | {window:.1f} | causal {causal:.1f} ms "
          f"| {causal / window:.1f}x cheaper |")


if __name__ == "__main__":
    main()
