"""How each F32 tensor of a safetensors file was drawn, as attnc --init-weights
draws them: `near one` (1 +- 0.1), `near zero` (+-0.02) or `fan-in N` (+-1/sqrt(N)
with N a dim of its shape, the values spreading over most of that range).
Standard library only, so it runs under lit's Python."""
import math
import struct
import sys

import safetensors_raw


def tensors(path):
    header, raw, start = safetensors_raw.read(path)
    data = raw[start:]
    for name, info in sorted(header.items()):
        assert info["dtype"] == "F32", (name, info["dtype"])
        begin, end = info["data_offsets"]
        values = struct.unpack(f"<{(end - begin) // 4}f", data[begin:end])
        yield name, info["shape"], values


def kind(shape, values):
    lo, hi = min(values), max(values)
    if lo >= 0.9 and hi <= 1.1:
        return "near one"
    top = max(-lo, hi)
    if top <= 0.02:
        return "near zero"
    for extent in sorted(set(shape)):
        bound = 1 / math.sqrt(extent)
        if 0.9 * bound < top <= bound:
            return f"fan-in {extent}"
    return f"unknown, in [{lo}, {hi}]"


for name, shape, values in tensors(sys.argv[1]):
    print(f"{name}: {kind(shape, values)}")
