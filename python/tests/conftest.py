"""Fixtures of the attnc package's tests: two small models compiled once per
session with the attnc executable (attnc.find_attnc: $ATTNC, which ctest sets
to the build's, else PATH, else build/bin/attnc), with random weights from
attnc --init-weights.

  tiny  x f32[B, S, 8], ids i32[B, S] -> y = layer_norm(linear(x, fc), ln),
        z = y + embedding(ids, emb); B <= 8, S <= 16: the numerics, every
        error path
  big   x f32[B, S, 256] -> two 256x256 linears with a GELU between; B <= 64,
        S <= 1024: ~4 GFLOP at B=8, S=1024, a run long enough (tens of ms)
        to see other threads go on while it runs
"""

import os
import sys

import numpy as np
import pytest

import attnc

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "test", "e2e"))

TINY = """\
model tiny {
  dim B <= 8, S <= 16
  input x : f32[B, S, 8]
  input ids : i32[B, S]
  weight fc.weight : f32[12, 8]
  weight fc.bias : f32[12]
  weight ln.weight : f32[12]
  weight ln.bias : f32[12]
  weight emb : f32[10, 12]
  output y = layer_norm(linear(x, fc), ln)
  output z = y + embedding(ids, emb)
}
"""

BIG = """\
model big {
  dim B <= 64, S <= 1024
  input x : f32[B, S, 256]
  weight a.weight : f32[256, 256]
  weight b.weight : f32[256, 256]
  output y = linear(gelu(linear(x, a.weight)), b.weight)
}
"""


class Built:
    def __init__(self, source, lib, weights):
        self.source, self.lib, self.weights = source, lib, weights


def cpu_has(flag):
    """Whether this CPU lists `flag` (e.g. "avx512_bf16") in /proc/cpuinfo."""
    try:
        with open("/proc/cpuinfo") as f:
            return any(line.startswith("flags") and flag in line.split() for line in f)
    except OSError:
        return False


def build(tmp, name, text):
    source = tmp / f"{name}.attn"
    source.write_text(text)
    weights = attnc.init_weights(source, tmp / f"{name}.safetensors", seed=7)
    lib = attnc.compile(source, tmp / f"{name}.so")
    return Built(source, lib, weights)


@pytest.fixture(scope="session")
def tiny(tmp_path_factory):
    return build(tmp_path_factory.mktemp("tiny"), "tiny", TINY)


@pytest.fixture(scope="session")
def big(tmp_path_factory):
    return build(tmp_path_factory.mktemp("big"), "big", BIG)


def sixty_fourths(rng, shape, limit):
    """Multiples of 2^-6 in [-limit, limit]: products have 12 fractional
    bits and sums of 32 of them stay below 2^11, so exact in f32."""
    n = int(limit * 64)
    return rng.integers(-n, n + 1, size=shape).astype(np.float64) / 64
