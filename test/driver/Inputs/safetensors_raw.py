"""A safetensors file's header and data, standard library only, so lit's
Python reads it (test/e2e/safetensors_io.py needs numpy)."""
import json
import struct


def read(path):
    """(header without __metadata__, the file's bytes, where data starts)."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    header.pop("__metadata__", None)
    return header, raw, 8 + n
