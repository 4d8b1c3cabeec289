#!/usr/bin/env python3
"""Exports one block, with the benchmark's weights, to ONNX for one (B, S):
the very PyTorch module the torch column times (blocks.torch_module), fp32,
static shapes (per-shape export keeps every shape-dependent optimisation open to
ONNX Runtime and OpenVINO), opset 18, input `x`, output `y`.

    export_onnx.py --block gpt2 --weights W.safetensors --b 1 --s 128 --out F.onnx

Uses torch.onnx.export's default (torch.export-based, "dynamo") exporter, the
one PyTorch 2.x recommends; the weights are stored inside the .onnx file.
"""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "test", "e2e"))

import blocks  # noqa: E402
import safetensors_io  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--block", required=True, choices=sorted(blocks.BLOCKS))
    p.add_argument("--weights", required=True)
    p.add_argument("--b", type=int, required=True)
    p.add_argument("--s", type=int, required=True)
    p.add_argument("--out", required=True)
    a = p.parse_args()

    import torch

    mod = blocks.torch_module(blocks.BLOCKS[a.block], safetensors_io.load(a.weights))
    x = torch.randn(a.b, a.s, blocks.D)
    tmp = a.out + ".tmp"
    with torch.no_grad():
        torch.onnx.export(mod, (x,), tmp, input_names=["x"], output_names=["y"],
                          opset_version=18, external_data=False)
    os.replace(tmp, a.out)   # a half-written file is never taken for a cached one


if __name__ == "__main__":
    main()
