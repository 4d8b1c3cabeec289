#!/usr/bin/env python3
"""Writes a safetensors file of N(0, 1) float32 tensors: make_inputs.py OUT NAME=D0xD1x... [--seed N]."""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "test", "e2e"))
from safetensors_io import save  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("out")
    p.add_argument("tensors", nargs="+", help="NAME=1x64x768")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    rng = np.random.default_rng(args.seed)
    tensors = {}
    for spec in args.tensors:
        name, _, dims = spec.partition("=")
        shape = [int(d) for d in dims.split("x")]
        tensors[name] = rng.standard_normal(shape).astype(np.float32)
    save(args.out, tensors)


if __name__ == "__main__":
    main()
