"""Minimal safetensors reader/writer for numpy arrays.

An independent implementation of the format, needing nothing beyond numpy:

    [8 bytes]  N, the header size, unsigned 64-bit little-endian
    [N bytes]  a UTF-8 JSON object: for each tensor name
               {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}
               with offsets relative to the start of the data section, plus an
               optional "__metadata__" object of string -> string
    [rest]     the data section: each tensor's bytes, row-major, little-endian

The writer pads the header with spaces to a multiple of 8 bytes so every
tensor starts aligned, as the reference implementation does.
"""

import json
import struct

import numpy as np

# safetensors dtype code -> numpy dtype (little-endian). F32 and I32 are what
# the e2e tests use; the others are accepted so real files can be inspected.
_DTYPES = {
    "F64": np.dtype("<f8"),
    "F32": np.dtype("<f4"),
    "F16": np.dtype("<f2"),
    "I64": np.dtype("<i8"),
    "I32": np.dtype("<i4"),
    "I16": np.dtype("<i2"),
    "I8": np.dtype("i1"),
    "U8": np.dtype("u1"),
    "BOOL": np.dtype("?"),
}
_CODES = {dt.str.lstrip("<|="): code for code, dt in _DTYPES.items()}


def _code_of(arr):
    key = arr.dtype.newbyteorder("<").str.lstrip("<|=")
    if key not in _CODES:
        raise TypeError(f"unsupported dtype for safetensors: {arr.dtype}")
    return _CODES[key]


def save(path, tensors, metadata=None):
    """Write `tensors` (name -> numpy array) to `path`, in the given order."""
    header = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    blobs = []
    offset = 0
    for name, arr in tensors.items():
        arr = np.asarray(arr)
        code = _code_of(arr)
        data = np.ascontiguousarray(arr, dtype=_DTYPES[code]).tobytes()
        header[name] = {
            "dtype": code,
            "shape": [int(d) for d in arr.shape],
            "data_offsets": [offset, offset + len(data)],
        }
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for data in blobs:
            f.write(data)


def load(path, with_metadata=False):
    """Read `path`; return name -> numpy array (and the metadata if asked)."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError(f"{path}: too short for a safetensors file")
    (n,) = struct.unpack("<Q", raw[:8])
    if n > len(raw) - 8:
        raise ValueError(f"{path}: header size {n} exceeds the file size")
    try:
        header = json.loads(raw[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: bad JSON header: {e}") from None
    if not isinstance(header, dict):
        raise ValueError(f"{path}: header is not a JSON object")
    data = memoryview(raw)[8 + n:]
    metadata = header.pop("__metadata__", None) or {}
    out = {}
    for name, info in header.items():
        code = info.get("dtype")
        if code not in _DTYPES:
            raise ValueError(f"{path}: tensor {name!r}: unsupported dtype {code!r}")
        dt = _DTYPES[code]
        shape = tuple(int(d) for d in info["shape"])
        begin, end = (int(v) for v in info["data_offsets"])
        count = int(np.prod(shape, dtype=np.int64))
        if not (0 <= begin <= end <= len(data)) or end - begin != count * dt.itemsize:
            raise ValueError(
                f"{path}: tensor {name!r}: data_offsets {[begin, end]} do not "
                f"fit shape {list(shape)} of {code} in {len(data)} data bytes")
        arr = np.frombuffer(data[begin:end], dtype=dt).reshape(shape)
        out[name] = arr.astype(dt.newbyteorder("="), copy=True)
    return (out, metadata) if with_metadata else out
