"""A minimal ctypes binding of the attn runtime's C API (runtime/include/attn/attn.h),
for the benchmark only: load a model library (with its weights file when it
reads them at load), set its thread count, run it on float32 / int32 numpy
arrays in place.

Only what the benchmark needs is bound. The struct layouts mirror attn.h; the
C API is a stable ABI (structs are never changed in place), so this stays valid.
"""

import ctypes
import os

import numpy as np

ATTN_F32 = 0
ATTN_I32 = 1
_DTYPES = {np.dtype(np.float32): ATTN_F32, np.dtype(np.int32): ATTN_I32}


class _Tensor(ctypes.Structure):
    # attn_tensor: name, dtype, rank, dims, data
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("dtype", ctypes.c_int32),
        ("rank", ctypes.c_int32),
        ("dims", ctypes.POINTER(ctypes.c_int64)),
        ("data", ctypes.c_void_p),
    ]


class _LoadOptions(ctypes.Structure):
    # attn_load_options: size, weights
    _fields_ = [
        ("size", ctypes.c_uint32),
        ("weights", ctypes.c_char_p),
    ]


class AttnError(RuntimeError):
    pass


class Runtime:
    """libattnrt, loaded once per process."""

    def __init__(self, path):
        if not os.path.exists(path):
            raise AttnError(f"{path} missing: build the project first (./scripts/setup.sh)")
        lib = ctypes.CDLL(path)
        lib.attn_last_error.restype = ctypes.c_char_p
        lib.attn_model_load.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
        lib.attn_model_load.restype = ctypes.c_int
        lib.attn_model_load_with_options.argtypes = [
            ctypes.c_char_p, ctypes.POINTER(_LoadOptions), ctypes.POINTER(ctypes.c_void_p)]
        lib.attn_model_load_with_options.restype = ctypes.c_int
        lib.attn_model_free.argtypes = [ctypes.c_void_p]
        lib.attn_model_free.restype = None
        lib.attn_model_set_threads.argtypes = [ctypes.c_void_p, ctypes.c_int32]
        lib.attn_model_set_threads.restype = ctypes.c_int
        lib.attn_model_run.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Tensor), ctypes.c_int32,
                                       ctypes.POINTER(_Tensor), ctypes.c_int32]
        lib.attn_model_run.restype = ctypes.c_int
        self.lib = lib

    def check(self, status, what):
        if status != 0:
            raise AttnError(f"{what}: {self.lib.attn_last_error().decode()}")


class Model:
    """One compiled model with one input `x` and one output `y` of equal shape
    (both example blocks map [B, S, 768] -> [B, S, 768])."""

    def __init__(self, runtime, path, weights=None):
        """`weights`: the safetensors file of a library that reads its weights
        at load (attnc without --weights); None for one that embeds them."""
        self.rt = runtime
        handle = ctypes.c_void_p()
        options = _LoadOptions(ctypes.sizeof(_LoadOptions),
                               weights.encode() if weights else None)
        runtime.check(runtime.lib.attn_model_load_with_options(
            path.encode(), ctypes.byref(options), ctypes.byref(handle)), f"loading {path}")
        self.handle = handle
        self._keep = []

    def set_threads(self, threads):
        self.rt.check(self.rt.lib.attn_model_set_threads(self.handle, threads),
                      f"setting {threads} threads")

    def bind(self, x, y):
        """Prepares a run of x -> y (both C-contiguous float32, same shape);
        returns a function that runs it with no per-call Python allocation."""
        for name, a in (("x", x), ("y", y)):
            if a.dtype != np.float32 or not a.flags["C_CONTIGUOUS"]:
                raise AttnError(f"{name} must be a C-contiguous float32 array")
        dims = (ctypes.c_int64 * x.ndim)(*x.shape)
        inp = _Tensor(b"x", ATTN_F32, x.ndim, dims, x.ctypes.data)
        out = _Tensor(b"y", ATTN_F32, y.ndim, dims, y.ctypes.data)
        self._keep += [dims, inp, out, x, y]   # keep alive while the closure lives
        lib, handle, check = self.rt.lib, self.handle, self.rt.check
        pin, pout = ctypes.byref(inp), ctypes.byref(out)

        def run():
            check(lib.attn_model_run(handle, pin, 1, pout, 1), "running the model")

        return run

    def bind_named(self, inputs, outputs):
        """Prepares a run of any model: `inputs` and `outputs` map tensor names
        to C-contiguous float32 or int32 arrays (outputs preallocated at their
        full shape, see attn_model_output_dims). Returns a function that runs
        it with no per-call Python allocation."""
        def tensors(named):
            arr = (_Tensor * len(named))()
            for t, (name, a) in zip(arr, named.items()):
                if a.dtype not in _DTYPES or not a.flags["C_CONTIGUOUS"]:
                    raise AttnError(f"{name} must be a C-contiguous float32 or int32 array")
                dims = (ctypes.c_int64 * a.ndim)(*a.shape)
                bname = name.encode()
                t.name, t.dtype, t.rank, t.dims, t.data = (bname, _DTYPES[a.dtype], a.ndim,
                                                           dims, a.ctypes.data)
                self._keep += [dims, bname, a]   # keep alive while the closure lives
            self._keep.append(arr)
            return arr
        ins, outs = tensors(inputs), tensors(outputs)
        lib, handle, check = self.rt.lib, self.handle, self.rt.check
        n_in, n_out = len(inputs), len(outputs)

        def run():
            check(lib.attn_model_run(handle, ins, n_in, outs, n_out), "running the model")

        return run

    def close(self):
        if self.handle:
            self.rt.lib.attn_model_free(self.handle)
            self.handle = None
