#!/usr/bin/env python3
"""set_element.py IN OUT TENSOR INDEX BITS: copies the safetensors file IN to
OUT with element INDEX (flat) of TENSOR set to the integer BITS (its raw
little-endian bits: 0x7fc0 is a bf16 NaN). Standard library only."""
import json
import struct
import sys

src, dst, name, index, bits = sys.argv[1:6]
data = bytearray(open(src, "rb").read())
n = struct.unpack("<Q", data[:8])[0]
tensor = json.loads(data[8:8 + n])[name]
size = {"F32": 4, "BF16": 2, "F16": 2}[tensor["dtype"]]
at = 8 + n + tensor["data_offsets"][0] + int(index) * size
data[at:at + size] = int(bits, 0).to_bytes(size, "little")
open(dst, "wb").write(data)
