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
# the e2e tests use, and F16 and BF16 (class BF16 below) for low-precision
# weights; the others are accepted so real files can be inspected.
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


class BF16:
    """bfloat16 data, which numpy has no dtype for: its raw 16-bit patterns
    (the high half of a float32's bits), saved and loaded as "BF16"."""

    def __init__(self, bits):
        self.bits = np.ascontiguousarray(bits, dtype="<u2")
        self.shape = self.bits.shape

    def to_float32(self):
        """The exact float32 values."""
        return (self.bits.astype(np.uint32) << 16).view(np.float32)


def to_bf16(a):
    """`a` rounded to bfloat16, to nearest even (as torch's
    `.to(torch.bfloat16)`); NaN stays a quiet NaN."""
    x = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (x + 0x7FFF + ((x >> 16) & 1)) >> 16
    nan = np.isnan(np.asarray(a, dtype=np.float32))
    rounded = np.where(nan, (x >> 16) | 0x40, rounded)
    return BF16(rounded.astype(np.uint16))


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
        if isinstance(arr, BF16):
            code, data = "BF16", arr.bits.tobytes()
        else:
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
        if code not in _DTYPES and code != "BF16":
            raise ValueError(f"{path}: tensor {name!r}: unsupported dtype {code!r}")
        dt = np.dtype("<u2") if code == "BF16" else _DTYPES[code]
        shape = tuple(int(d) for d in info["shape"])
        begin, end = (int(v) for v in info["data_offsets"])
        count = int(np.prod(shape, dtype=np.int64))
        if not (0 <= begin <= end <= len(data)) or end - begin != count * dt.itemsize:
            raise ValueError(
                f"{path}: tensor {name!r}: data_offsets {[begin, end]} do not "
                f"fit shape {list(shape)} of {code} in {len(data)} data bytes")
        arr = np.frombuffer(data[begin:end], dtype=dt).reshape(shape)
        arr = arr.astype(dt.newbyteorder("="), copy=True)
        out[name] = BF16(arr) if code == "BF16" else arr
    return (out, metadata) if with_metadata else out
