#!/usr/bin/env python3
"""set_element.py IN OUT TENSOR INDEX BITS: copies the safetensors file IN to
OUT with element INDEX (flat) of TENSOR set to the integer BITS (its raw
little-endian bits: 0x7fc0 is a bf16 NaN). Standard library only."""
import sys

import safetensors_raw

src, dst, name, index, bits = sys.argv[1:6]
header, raw, start = safetensors_raw.read(src)
tensor = header[name]
size = {"F32": 4, "BF16": 2, "F16": 2}[tensor["dtype"]]
at = start + tensor["data_offsets"][0] + int(index) * size
data = bytearray(raw)
data[at:at + size] = int(bits, 0).to_bytes(size, "little")
with open(dst, "wb") as f:
    f.write(data)
