"""attnc from Python: compile a `.attn` model with the attnc compiler, load the
library with the runtime (libattnrt, shipped inside this package) and run it
on numpy arrays.

    import attnc
    attnc.compile("m.attn", "m.so")                  # runs the attnc executable
    attnc.init_weights("m.attn", "w.safetensors")    # random weights, for trying
    with attnc.load("m.so", weights="w.safetensors") as m:
        print(m.inputs, m.outputs)
        y = m(x=x)["y"]                              # a dict name -> numpy array

Arrays: an input that is C-contiguous and of the model's dtype (float32 for
f32, int32 for i32) is read in place, no copy; one of the right dtype in
another layout (a slice, a transpose, Fortran order) is copied to a
C-contiguous array first; one of another dtype (float64, int64, ...) is
refused with DTypeError: convert it yourself (`x.astype(np.float32)`), so no
conversion happens behind your back. Nested lists and other array-likes that
are not numpy arrays are made arrays of the model's dtype. Outputs are new
arrays (64-byte aligned), or the arrays given in `out=` (C-contiguous,
writable, the model's dtype and shape), which are written in place.

Errors are `attnc.Error`s carrying the runtime's message, one subclass per
status of attn.h (ShapeError, DTypeError, ...); attnc's own failures are
CompileError.

A decoder compiled with KV caches (`state` and `cache = P` in the model) has
the entry points "run", "prefill" and "decode"; its caches are numpy arrays
the caller owns, written in place (a sequence is its states: copy them to
fork it, keep several for several sequences):

    states = m.new_state(batch=1, capacity=256)      # name -> zeroed float32 array
    logits = m.prefill({"ids": prompt}, states)["logits"]
    logits = m.decode({"ids": [[token]]}, states, position=len(prompt))["logits"]

The GIL is released while a model loads and runs, so other
Python threads go on, and several threads may run models at once (runs on one
model are serialised by the runtime; load a model twice to run it twice at
once).
"""

import dataclasses
import os
import shutil
import subprocess
import sys

import numpy as np

from . import _attnc

__all__ = [
    "ABIMismatchError", "ArgumentError", "CompileError", "Dim", "DimOutOfBoundsError",
    "DTypeError", "Error", "FileError", "InvalidLibraryError", "KernelError", "Model",
    "ModelInfo", "NoDeviceError", "OutOfMemoryError", "ShapeError", "TensorInfo",
    "UnsupportedCPUError", "compile", "find_attnc", "init_weights", "load",
]

__version__ = "0.4.0"


# ------------------------------------------------------------------ errors


class Error(Exception):
    """A failure of the runtime (status: attn_status as an int, message: the
    runtime's own words) or of attnc (CompileError, status None)."""

    status = None

    def __init__(self, message, status=None):
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status

    @property
    def status_name(self):
        """attn_status_string of the status, e.g. "shape mismatch"."""
        return None if self.status is None else _attnc.status_string(self.status)


class FileError(Error):
    """ATTN_ERROR_IO: the library or weights file cannot be opened or read."""
    status = 1


class InvalidLibraryError(Error):
    """ATTN_ERROR_INVALID_LIBRARY: not an attnc model, or a corrupt one."""
    status = 2


class ABIMismatchError(InvalidLibraryError):
    """ATTN_ERROR_ABI_MISMATCH: built for another model ABI version."""
    status = 3


class ArgumentError(Error, ValueError):
    """ATTN_ERROR_INVALID_ARGUMENT: e.g. an unknown or missing input name."""
    status = 4


class ShapeError(Error, ValueError):
    """ATTN_ERROR_SHAPE_MISMATCH: wrong rank or dim, inconsistent dims."""
    status = 5


class DTypeError(Error, TypeError):
    """ATTN_ERROR_DTYPE_MISMATCH: an array of the wrong element type."""
    status = 6


class DimOutOfBoundsError(ShapeError):
    """ATTN_ERROR_DIM_OUT_OF_BOUNDS: a dynamic dim beyond its bound."""
    status = 7


class KernelError(Error):
    """ATTN_ERROR_KERNEL_FAILED: a kernel of the model failed."""
    status = 8


class OutOfMemoryError(Error, MemoryError):
    """ATTN_ERROR_OUT_OF_MEMORY."""
    status = 9


class UnsupportedCPUError(Error):
    """ATTN_ERROR_UNSUPPORTED_CPU: built for instructions this CPU lacks."""
    status = 10


class NoDeviceError(Error):
    """ATTN_ERROR_NO_DEVICE: built for a GPU API this machine has no device of."""
    status = 11


class CompileError(Error):
    """The attnc executable failed; the message is its stderr."""


_BY_STATUS = {cls.status: cls for cls in (
    FileError, InvalidLibraryError, ABIMismatchError, ArgumentError, ShapeError, DTypeError,
    DimOutOfBoundsError, KernelError, OutOfMemoryError, UnsupportedCPUError,
    NoDeviceError)}


def _error(status, message):
    return _BY_STATUS.get(status, Error)(message, status)


_attnc._set_error_factory(_error)


# ------------------------------------------------------------------ dtypes

# attn_dtype -> numpy dtype; bf16 only where ml_dtypes provides it.
_NUMPY_DTYPES = {0: np.dtype(np.float32), 1: np.dtype(np.int32), 3: np.dtype(np.float16)}
try:  # pragma: no cover - optional
    import ml_dtypes
    _NUMPY_DTYPES[2] = np.dtype(ml_dtypes.bfloat16)
except ImportError:
    pass
_KNOWN_DTYPES = frozenset(_NUMPY_DTYPES.values())
_ATTN_NAMES = {0: "f32", 1: "i32", 2: "bf16", 3: "f16"}


# ------------------------------------------------------------------ infos


@dataclasses.dataclass(frozen=True)
class Dim:
    """One dim of a model tensor: `extent` for a constant one; `symbol` (and
    its inclusive bound `max`, None when unbounded) for a dynamic one."""
    extent: object = None
    symbol: object = None
    max: object = None

    @property
    def is_dynamic(self):
        return self.extent is None

    def __repr__(self):
        if not self.is_dynamic:
            return str(self.extent)
        return self.symbol if self.max is None else f"{self.symbol}<={self.max}"


@dataclasses.dataclass(frozen=True)
class TensorInfo:
    """A model input or output: name, numpy dtype (None for bf16 without
    ml_dtypes), the runtime's dtype name ("f32", "i32") and dims."""
    name: str
    dtype: object
    dtype_name: str
    dims: tuple

    @property
    def shape(self):
        """The dims as ints and symbol names, e.g. ('B', 'S', 768)."""
        return tuple(d.symbol if d.is_dynamic else d.extent for d in self.dims)

    def __repr__(self):
        return f"TensorInfo({self.name!r}, {self.dtype_name}[{', '.join(map(repr, self.dims))}])"


@dataclasses.dataclass(frozen=True)
class ModelInfo:
    """What a model library says about itself."""
    name: str
    compiler_version: str
    target: str
    path: str


def _tensor_info(raw):
    name, dtype, dims = raw
    return TensorInfo(name, _NUMPY_DTYPES.get(dtype), _ATTN_NAMES.get(dtype, str(dtype)),
                      tuple(Dim(symbol=sym, max=mx or None) if dyn else Dim(extent=ext)
                            for dyn, ext, sym, mx in dims))


# ------------------------------------------------------------------ models

# The entry points a library may have (attn_model_has_entry).
_ENTRIES = ("run", "prefill", "decode")


class Model:
    """A loaded model library (attnc.load). Call it with its inputs by name:
    `m(x=a)` or `m.run({"x": a})`, which return a dict name -> numpy array.
    close() (or leaving a `with` block) unloads it."""

    def __init__(self, path, weights=None, threads=None):
        path = os.fspath(path)
        weights = None if weights is None else os.fspath(weights)
        self._m = _attnc._Model(path, weights)
        self.path = path
        self.weights = weights
        self.info = ModelInfo(*self._m.info())
        self.inputs = [_tensor_info(t) for t in self._m.inputs()]
        self.outputs = [_tensor_info(t) for t in self._m.outputs()]
        # What it read from `weights`, as declared (f32, bf16 or f16).
        self.weight_tensors = [_tensor_info(t) for t in self._m.weights()]
        self._in_dtypes = {t.name: t.dtype for t in self.inputs}
        # The KV caches a "prefill" or "decode" writes (none for most models).
        self.states = [_tensor_info(t) for t in self._m.states()]
        self._state_dtypes = {t.name: t.dtype for t in self.states}
        self.entries = tuple(e for e in _ENTRIES if self._m.has_entry(e))
        if "decode" in self.entries:
            self._in_dtypes.setdefault("position", np.dtype(np.int32))
        if threads is not None:
            self.set_threads(threads)

    def set_threads(self, threads):
        """Sizes the model's thread pool; 0 restores the library's default."""
        self._m.set_threads(int(threads))

    def __call__(self, /, **inputs):
        return self.run(inputs)

    def run(self, inputs, out=None, entry=None, states=None):
        """Runs the model on `inputs` (a mapping name -> array-like). `out`
        (name -> array) gives arrays to write outputs into; the others are
        allocated. Returns a dict name -> array of every output.

        `entry`: the entry point, None or "run" (the default), "prefill" or
        "decode" (a model with states; see has_entry). `states` (name ->
        array, each state once; see new_state) are the KV caches "prefill"
        and "decode" read and write in place; "decode" also takes the input
        `position` (i32 [B]; decode() makes it from an int)."""
        ins = [(name, self._input(name, value)) for name, value in inputs.items()]
        sts = [(name, self._state(name, a)) for name, a in (states or {}).items()]
        if not out:
            return self._m.run(ins, [], entry, sts)
        outs = [(name, self._output(name, a)) for name, a in out.items()]
        result = self._m.run(ins, outs, entry, sts)
        result.update(outs)
        return {t.name: result[t.name] for t in self.outputs if t.name in result}

    def has_entry(self, name):
        """True when the library has the entry point `name`: "run" always;
        "prefill" and "decode" for a model with states (KV caches)."""
        return bool(self._m.has_entry(str(name)))

    def new_state(self, batch=1, capacity=None):
        """New zeroed states for `batch` sequences of up to `capacity` tokens
        (default: the capacity symbol's bound): a dict name -> float32 array
        [batch, capacity, F] per state, which the caller owns and passes to
        prefill / decode / run(states=...). The runtime writes their rows in
        place and never copies them; copy the dict's arrays to fork a
        sequence."""
        if not self.states:
            raise ArgumentError(f"model '{self.info.name}' has no states: declare its KV "
                                "caches with 'state' and give them to its attention as "
                                "'cache = P'", 4)
        batch = int(batch)
        result = {}
        for t in self.states:
            shape = []
            for i, d in enumerate(t.dims):
                if not d.is_dynamic:
                    shape.append(d.extent)
                    continue
                if i == 0:
                    what, value = "batch", batch
                else:
                    what, value = "capacity", capacity
                    if value is None:
                        if d.max is None:
                            raise ArgumentError(
                                f"state '{t.name}': its capacity {d.symbol} has no bound; "
                                "give new_state(capacity=N)", 4)
                        value = d.max
                value = int(value)
                if value < 1 or (d.max is not None and value > d.max):
                    bound = f" (at most {d.max})" if d.max is not None else ""
                    raise DimOutOfBoundsError(
                        f"state '{t.name}': {what} {value} for {d.symbol} is out of bounds: "
                        f"it must be at least 1{bound}", 7)
                shape.append(value)
            if t.dtype is None:
                raise DTypeError(f"state '{t.name}' is {t.dtype_name}, which has no numpy "
                                 "dtype here", 6)
            result[t.name] = np.zeros(shape, dtype=t.dtype)
        return result

    def prefill(self, inputs, states, out=None):
        """run(inputs, entry="prefill", states=states): the outputs of the
        prompt `inputs`, its keys and values written into rows 0 .. S-1 of
        `states`."""
        return self.run(inputs, out=out, entry="prefill", states=states)

    def decode(self, inputs, states, position, out=None):
        """run(inputs + position, entry="decode", states=states): `inputs`
        are S new tokens after the `position` (an int, or i32 [B]) already
        in `states`; their keys and values go into rows position ..
        position + S - 1. A decode past the states' capacity raises
        KernelError before any state is written."""
        inputs = dict(inputs)
        if isinstance(position, (int, np.integer)):
            first = next(iter(states.values()), None) if states else None
            batch = first.shape[0] if isinstance(first, np.ndarray) and first.ndim else 1
            position = np.full((batch,), position, dtype=np.int32)
        inputs["position"] = position
        return self.run(inputs, out=out, entry="decode", states=states)

    def _state(self, name, a):
        if not isinstance(a, np.ndarray):
            raise TypeError(f"state '{name}' must be a numpy array, not {type(a).__name__} "
                            "(the runtime writes it in place): make states with "
                            "Model.new_state")
        expected = self._state_dtypes.get(name)
        if expected is not None and a.dtype != expected:
            raise DTypeError(f"state '{name}' is a numpy {a.dtype} array but the model keeps "
                             f"it as {expected}: a state is written in place, never converted; "
                             "make states with Model.new_state", 6)
        if a.dtype not in _KNOWN_DTYPES:
            raise DTypeError(f"state '{name}' is a numpy {a.dtype} array; the runtime keeps "
                             "states in f32", 6)
        if not (a.flags.c_contiguous and a.flags.writeable):
            raise ArgumentError(f"state '{name}' must be a writable C-contiguous array: the "
                                "runtime writes its rows in place, and a copy would lose them "
                                "(np.ascontiguousarray it once and keep that array)", 4)
        return a

    def _input(self, name, value):
        expected = self._in_dtypes.get(name)
        if type(value) is np.ndarray:
            if value.dtype == expected and value.flags.c_contiguous:
                return value                        # read in place
            a = value
        else:  # a list, a scalar, a buffer: made an array of the model's dtype
            a = np.asarray(value, dtype=expected)
        if expected is None and a.dtype not in _KNOWN_DTYPES:
            # The runtime would name it; it cannot be handed an unknown dtype.
            raise ArgumentError(f"model '{self.info.name}' has no input named '{name}': "
                                f"its inputs are {', '.join(self._in_dtypes)}", 4)
        if a.dtype not in _KNOWN_DTYPES:
            raise DTypeError(
                f"input '{name}' is a numpy {a.dtype} array but the model expects "
                f"{expected}: convert it, e.g. x.astype(np.{expected})", 6)
        # Another dtype the runtime knows (f16 for f32, ...) reaches it: its message.
        if not a.flags.c_contiguous:
            a = np.ascontiguousarray(a)
        return a

    def _output(self, name, a):
        if not isinstance(a, np.ndarray):
            raise TypeError(f"out['{name}'] must be a numpy array, not {type(a).__name__}")
        if not (a.flags.c_contiguous and a.flags.writeable):
            raise ValueError(f"out['{name}'] must be a writable C-contiguous array "
                             "(the model writes it in place)")
        if a.dtype not in _KNOWN_DTYPES:
            raise DTypeError(f"output '{name}' is a numpy {a.dtype} array; the runtime "
                             "writes f32, i32 or f16", 6)
        return a

    def close(self):
        """Unloads the model (waiting for runs in flight); idempotent."""
        self._m.close()

    @property
    def closed(self):
        return self._m.closed

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        state = "closed" if self.closed else f"inputs {self.inputs}, outputs {self.outputs}"
        return f"<attnc.Model {self.info.name!r} from {self.path!r}: {state}>"


def load(path, weights=None, threads=None):
    """Loads the model library at `path`. `weights`: the safetensors file of
    a library that reads its weights at load (attnc without --weights), None
    for one that embeds them. `threads`: the thread pool's size (default: the
    library's)."""
    return Model(path, weights=weights, threads=threads)


# ------------------------------------------------------------------ compiler


def find_attnc():
    """The attnc executable: $ATTNC; else `attnc` on PATH; else build/bin/attnc
    beside the virtual environment this Python runs in (a clone's .venv next
    to its build/, as scripts/setup.sh makes them) or beside this package's
    source tree (python/attnc in a clone). Raises CompileError if none."""
    env = os.environ.get("ATTNC")
    if env:
        return env
    found = shutil.which("attnc")
    if found:
        return found
    here = os.path.dirname(os.path.abspath(__file__))
    for root in (os.path.dirname(os.path.abspath(sys.prefix)),
                 os.path.dirname(os.path.dirname(here))):
        candidate = os.path.join(root, "build", "bin", "attnc")
        if os.access(candidate, os.X_OK):
            return candidate
    raise CompileError("attnc not found: set $ATTNC to the executable, put it on PATH, or "
                       "build it (./scripts/setup.sh builds build/bin/attnc)")


def _run_attnc(args, what):
    exe = find_attnc()
    try:
        r = subprocess.run([exe] + args, capture_output=True, text=True)
    except OSError as e:
        raise CompileError(f"cannot run {exe}: {e.strerror}") from None
    if r.returncode != 0:
        raise CompileError(r.stderr.strip() or f"{what} failed with exit code {r.returncode}")
    return r


def compile(model, output, target="host", schedule="hand", weights=None):
    """Compiles the `.attn` file `model` into the library `output` with the
    attnc executable (see find_attnc). target: "host" or a Halide target
    (e.g. "x86-64-linux-avx2"); schedule: "hand", "auto" or "naive"; weights:
    a safetensors file to embed (None: the library reads them at load).
    Raises CompileError with attnc's messages. Returns `output`."""
    args = [os.fspath(model), "-o", os.fspath(output), f"--target={target}",
            f"--schedule={schedule}"]
    if weights is not None:
        args += ["--weights", os.fspath(weights)]
    _run_attnc(args, "attnc")
    return output


def init_weights(model, output, seed=0):
    """Writes random weights for the `.attn` file `model` to the safetensors
    file `output` (attnc --init-weights). Returns `output`."""
    _run_attnc([os.fspath(model), f"--init-weights={os.fspath(output)}", f"--seed={seed}"],
               "attnc --init-weights")
    return output
