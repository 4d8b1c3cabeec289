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

A model built for a GPU (attnc --target=host-cuda, host-opencl) runs on it,
its inputs and outputs copied at the edges of each run; arrays already in
its device memory are read and written there, with no copy:
`Model.device_array(a)` makes one (`.numpy()` copies it back), and on CUDA any
object with `__cuda_array_interface__` (a torch.cuda tensor, a CuPy array)
is taken as it is. With tensors on the device every output is given in
`out=`:

    y = m.device_array((1, 128, 768), np.float32)    # uninitialised
    m.run({"x": m.device_array(x)}, out={"y": y})
    print(y.numpy())

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
    "DeviceArray", "DTypeError", "Error", "FileError", "InvalidLibraryError", "KernelError", "Model",
    "ModelInfo", "NoDeviceError", "NonFiniteError", "OutOfMemoryError", "ShapeError", "TensorInfo",
    "UnsupportedCPUError", "compile", "find_attnc", "from_pretrained", "init_weights", "load",
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


class NonFiniteError(Error, ValueError):
    """ATTN_ERROR_NON_FINITE: a weight holds NaN or Inf (check_weights)."""
    status = 12


_BY_STATUS = {cls.status: cls for cls in (
    FileError, InvalidLibraryError, ABIMismatchError, ArgumentError, ShapeError, DTypeError,
    DimOutOfBoundsError, KernelError, OutOfMemoryError, UnsupportedCPUError,
    NoDeviceError, NonFiniteError)}


def _error(status, message):
    return _BY_STATUS.get(status, Error)(message, status)


_attnc._set_error_factory(_error)


# ------------------------------------------------------------------ dtypes

# attn_dtype -> numpy dtype; bf16 only where ml_dtypes provides it; i8 and u8
# (4-bit values, two per byte) only for quantized weights (never an input or
# output).
_NUMPY_DTYPES = {0: np.dtype(np.float32), 1: np.dtype(np.int32), 3: np.dtype(np.float16),
                 4: np.dtype(np.int8), 5: np.dtype(np.uint8)}
try:  # pragma: no cover - optional
    import ml_dtypes
    _NUMPY_DTYPES[2] = np.dtype(ml_dtypes.bfloat16)
except ImportError:
    pass
_KNOWN_DTYPES = frozenset(_NUMPY_DTYPES.values())
_ATTN_CODES = {v: k for k, v in _NUMPY_DTYPES.items()}
_ATTN_NAMES = {0: "f32", 1: "i32", 2: "bf16", 3: "f16", 4: "i8", 5: "u8"}
# A bf16 state (KV cache) without ml_dtypes: its bits, as uint16 (with
# ml_dtypes, ml_dtypes.bfloat16; either is accepted, and a bfloat16 array
# crosses to the runtime as its uint16 view).
_BF16_BITS = np.dtype(np.uint16)


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
    precision: str  # what the linears multiply: "f32", "bf16" or "int8"


def _tensor_info(raw):
    name, dtype, dims = raw
    return TensorInfo(name, _NUMPY_DTYPES.get(dtype), _ATTN_NAMES.get(dtype, str(dtype)),
                      tuple(Dim(symbol=sym, max=mx or None) if dyn else Dim(extent=ext)
                            for dyn, ext, sym, mx in dims))


# ------------------------------------------------------------------ models

# The entry points a library may have (attn_model_has_entry).
_ENTRIES = ("run", "prefill", "decode")
# attn_device -> Model.device.
_DEVICES = {0: "host", 1: "cuda", 2: "opencl"}
# The ATTN_ON_DEVICE_* bit of each group of a run's tensors.
_ON_DEVICE = {"inputs": 1, "outputs": 2, "states": 4}


class DeviceArray:
    """An array in the memory of a GPU model's device (Model.device_array).
    Given as an input, output or state, the kernels read or write it where
    it is. numpy() copies it to the host, copy_from(a) from the host. Its
    memory is freed by free(), when it is collected, or when its model
    closes; it belongs to its model."""

    def __init__(self, model, shape, dtype):
        self.model = model
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        if self.dtype not in _ATTN_CODES:
            raise DTypeError(f"a device array of {self.dtype}: the runtime keeps f32, i32, "
                             "f16 and bf16", 6)
        self.nbytes = int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize
        self.ptr = model._m.device_alloc(self.nbytes)

    def copy_from(self, a):
        """Copies array `a` (of this shape; made this dtype) in; returns self."""
        a = np.ascontiguousarray(a, dtype=self.dtype)
        if a.shape != self.shape:
            raise ShapeError(f"cannot copy an array of shape {a.shape} into a device array "
                             f"of shape {self.shape}", 5)
        self.model._m.copy_to_device(self.ptr, a)
        return self

    def numpy(self):
        """A new numpy array with the contents."""
        a = np.empty(self.shape, dtype=self.dtype)
        self.model._m.copy_to_host(a, self.ptr)
        return a

    def free(self):
        """Frees the memory now (idempotent; nothing once the model closed)."""
        ptr, self.ptr = getattr(self, "ptr", 0), 0
        if ptr:
            self.model._m.device_free(ptr)

    def __del__(self):
        try:
            self.free()
        except Exception:  # noqa: BLE001 - never from a finaliser
            pass

    @property
    def __cuda_array_interface__(self):
        if self.model.device != "cuda":
            raise AttributeError("__cuda_array_interface__: the array is on "
                                 f"{self.model.device}, not CUDA")
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.ptr, False),
                "strides": None, "version": 3}

    def __repr__(self):
        return (f"<attnc.DeviceArray {self.dtype} {list(self.shape)} on {self.model.device} "
                f"at {self.ptr:#x}>")


class Model:
    """A loaded model library (attnc.load). Call it with its inputs by name:
    `m(x=a)` or `m.run({"x": a})`, which return a dict name -> numpy array.
    close() (or leaving a `with` block) unloads it."""

    def __init__(self, path, weights=None, threads=None, check_weights=False):
        path = os.fspath(path)
        weights = None if weights is None else os.fspath(weights)
        self._m = _attnc._Model(path, weights, bool(check_weights))
        self.path = path
        self.weights = weights
        self.info = ModelInfo(*self._m.info())
        self.inputs = [_tensor_info(t) for t in self._m.inputs()]
        self.outputs = [_tensor_info(t) for t in self._m.outputs()]
        # What it read from `weights`, as declared (f32, bf16, f16 or i8).
        self.weight_tensors = [_tensor_info(t) for t in self._m.weights()]
        self._in_dtypes = {t.name: t.dtype for t in self.inputs}
        # The KV caches a "prefill" or "decode" writes (none for most models).
        self.states = [_tensor_info(t) for t in self._m.states()]
        self._state_dtypes = {t.name: t.dtype for t in self.states}
        self._bf16_states = {t.name for t in self.states if t.dtype_name == "bf16"}
        self.entries = tuple(e for e in _ENTRIES if self._m.has_entry(e))
        # Where the kernels run: "host", "cuda" or "opencl".
        self.device = _DEVICES.get(self._m.device()[0], "unknown")
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
        groups = {"inputs": inputs, "outputs": out or {}, "states": states or {}}
        if any(_on_device(v) for g in groups.values() for v in g.values()):
            return self._run_on_device(groups, entry)
        ins = [(name, self._input(name, value)) for name, value in inputs.items()]
        sts = [(name, self._state(name, a)) for name, a in (states or {}).items()]
        if not out:
            return self._m.run(ins, [], entry, sts)
        outs = [(name, self._output(name, a)) for name, a in out.items()]
        result = self._m.run(ins, outs, entry, sts)
        result.update(outs)
        return {t.name: result[t.name] for t in self.outputs if t.name in result}

    def device_array(self, array_or_shape, dtype=np.float32):
        """A DeviceArray in this GPU model's device memory: a copy of a
        numpy array, or an uninitialised one of a shape and dtype."""
        if isinstance(array_or_shape, np.ndarray):
            a = array_or_shape
            return DeviceArray(self, a.shape, a.dtype).copy_from(a)
        return DeviceArray(self, array_or_shape, dtype)

    def _run_on_device(self, groups, entry):
        """run() with tensors on the device: each group (inputs, outputs,
        states) wholly on the device or wholly on the host, every output
        given."""
        bits, raw, keep = 0, {}, []
        for group, values in groups.items():
            where = [_on_device(v) for v in values.values()]
            if any(where) and not all(where):
                raise ArgumentError(
                    f"the {group} mix host and device arrays: the runtime takes each group "
                    "(inputs, outputs, states) in one place; make them all device arrays "
                    "(Model.device_array) or all host arrays", 4)
            if where and all(where):
                bits |= _ON_DEVICE[group]
            raw[group] = [self._raw(group, name, v, keep) for name, v in values.items()]
        missing = [t.name for t in self.outputs if t.name not in groups["outputs"]]
        if missing:
            raise ArgumentError("with tensors on the device, give every output in out= "
                                f"(Model.device_array makes them): missing {', '.join(missing)}",
                                4)
        self._m.run_raw(raw["inputs"], raw["outputs"], entry, raw["states"], bits)
        return {t.name: groups["outputs"][t.name] for t in self.outputs}

    def _raw(self, group, name, value, keep):
        """(name, address, attn dtype, shape) of one tensor; host arrays made
        go into `keep`, alive for the run."""
        if isinstance(value, DeviceArray):
            if value.model is not self:
                raise ArgumentError(f"{group[:-1]} '{name}' is a device array of another "
                                    "model: device arrays belong to the model that made "
                                    "them", 4)
            if not value.ptr:
                raise ArgumentError(f"{group[:-1]} '{name}' is a freed device array", 4)
            return (name, value.ptr, _ATTN_CODES[value.dtype], list(value.shape))
        if hasattr(value, "__cuda_array_interface__"):
            if self.device != "cuda":
                raise ArgumentError(f"{group[:-1]} '{name}' is CUDA memory, but model "
                                    f"'{self.info.name}' runs on {self.device}", 4)
            iface = value.__cuda_array_interface__
            dtype = np.dtype(iface["typestr"])
            shape = tuple(iface["shape"])
            strides = iface.get("strides")
            dense = tuple(int(np.prod(shape[i + 1:], dtype=np.int64)) * dtype.itemsize
                          for i in range(len(shape)))
            if dtype not in _ATTN_CODES or (strides is not None and tuple(strides) != dense):
                raise ArgumentError(f"{group[:-1]} '{name}': CUDA memory must be C-contiguous "
                                    "f32, i32, f16 or bf16 (.contiguous() it)", 4)
            return (name, int(iface["data"][0]), _ATTN_CODES[dtype], list(shape))
        if group == "inputs":
            a = self._input(name, value)
        elif group == "states":
            a = self._state(name, value)
        else:
            a = self._output(name, value)
        keep.append(a)
        code = 2 if a.dtype == _BF16_BITS else _ATTN_CODES[a.dtype]
        return (name, a.ctypes.data, code, list(a.shape))

    def has_entry(self, name):
        """True when the library has the entry point `name`: "run" always;
        "prefill" and "decode" for a model with states (KV caches)."""
        return bool(self._m.has_entry(str(name)))

    def entry_inputs(self, entry="run"):
        """The inputs of entry point `entry` ("run", "prefill", "decode") as
        TensorInfos, `inputs` for "run". An entry takes the model's inputs
        its computation reads: an encoder-decoder's "decode", which reads
        its cross-attention caches, takes no encoder input; "decode" also
        takes `position`. An unknown entry raises ArgumentError."""
        return [_tensor_info(t) for t in self._m.entry_inputs(str(entry))]

    def new_state(self, batch=1, capacity=None, **extents):
        """New zeroed states for `batch` sequences of up to `capacity` tokens
        (default: the capacity symbol's bound): a dict name -> array [batch,
        capacity, F] per state of its dtype (float32; float16 for an f16
        cache; for a bf16 one ml_dtypes.bfloat16 where ml_dtypes is
        installed, else uint16 holding the bf16 bits), which the caller owns
        and passes to
        prefill / decode / run(states=...). The runtime writes their rows in
        place and never copies them; copy the dict's arrays to fork a
        sequence. `extents` size the states whose row dim is another symbol:
        a cross-attention's caches [B, T, F] hold one row per memory token,
        so new_state(batch=2, capacity=64, T=len_of_the_memory)."""
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
                elif d.symbol in extents:
                    what, value = "extent", extents[d.symbol]
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
            dtype = t.dtype
            if dtype is None and t.dtype_name == "bf16":
                dtype = _BF16_BITS
            if dtype is None:
                raise DTypeError(f"state '{t.name}' is {t.dtype_name}, which has no numpy "
                                 "dtype here", 6)
            result[t.name] = np.zeros(shape, dtype=dtype)
        return result

    def prefill(self, inputs, states, out=None):
        """run(inputs, entry="prefill", states=states): the outputs of the
        prompt `inputs` (entry_inputs("prefill")), its keys and values
        written into rows 0 .. S-1 of `states` (a cross-attention's cache:
        the memory's keys and values, rows 0 .. T-1)."""
        return self.run(inputs, out=out, entry="prefill", states=states)

    def decode(self, inputs, states, position, out=None):
        """run(inputs + position, entry="decode", states=states): `inputs`
        (entry_inputs("decode") but position) are S new tokens after the
        `position` (an int, or i32 [B]) already in `states`; their keys and
        values go into rows position .. position + S - 1. An
        encoder-decoder's decode takes no encoder input: its cross
        attentions read the caches its prefill wrote. A decode past the
        states' capacity raises KernelError before any state is written."""
        inputs = dict(inputs)
        if isinstance(position, (int, np.integer)):
            first = next(iter(states.values()), None) if states else None
            batch = first.shape[0] if isinstance(first, np.ndarray) and first.ndim else 1
            position = np.full((batch,), position, dtype=np.int32)
        inputs["position"] = position
        return self.run(inputs, out=out, entry="decode", states=states)

    def generate(self, prompt, max_new_tokens, temperature=0.0, top_k=0, top_p=1.0,
                 repetition_penalty=1.0, seed=None, eos_token_id=None, stop=None,
                 stream=False, decoder_start_token_id=None, forced_bos_token_id=None,
                 forced_eos_token_id=None):
        """Generates token ids after `prompt` (a list of ids, int32 or int64;
        or a list of such prompts) with "prefill" and "decode", choosing each
        token as transformers' `generate` does (attnc.sampling): greedy when
        `temperature` is 0 (the default), else sampled after temperature,
        `top_k` (0: off) and `top_p` (1.0: off), with `seed` for numpy's
        generator; `repetition_penalty` applies to both. A sequence ends
        after `max_new_tokens`, at an id of `eos_token_id` (an int or a list)
        or at the end of a `stop` sequence of ids, each included. Returns
        the new ids (a list per prompt for a list of prompts); with `stream`,
        an iterator over the steps: the new id (or, for a list of prompts, a
        list with an id or None per prompt, None once it has finished).
        An encoder-decoder (BART, T5: a decode entry without the encoder's
        ids) reads the prompts as the encoder's ids, starts its decoder at
        `decoder_start_token_id` and forces `forced_bos_token_id` first and
        `forced_eos_token_id` last where given, as transformers does."""
        from .generation import generate
        return generate(self, prompt, max_new_tokens, temperature, top_k, top_p,
                        repetition_penalty, seed, eos_token_id, stop, stream, None,
                        decoder_start_token_id, forced_bos_token_id, forced_eos_token_id)

    def _state(self, name, a):
        if not isinstance(a, np.ndarray):
            raise TypeError(f"state '{name}' must be a numpy array, not {type(a).__name__} "
                            "(the runtime writes it in place): make states with "
                            "Model.new_state")
        expected = self._state_dtypes.get(name)
        bf16 = name in self._bf16_states
        if bf16 and a.dtype == _BF16_BITS:
            pass  # the bf16 bits
        elif expected is not None and a.dtype != expected:
            keeps = (f"it as {expected}" if not bf16
                     else f"it as bf16 ({expected} or uint16 bits)")
            raise DTypeError(f"state '{name}' is a numpy {a.dtype} array but the model keeps "
                             f"{keeps}: a state is written in place, never converted; "
                             "make states with Model.new_state", 6)
        elif expected is None and bf16:
            raise DTypeError(f"state '{name}' is a numpy {a.dtype} array but the model keeps "
                             "it as bf16: give a uint16 array of the bf16 bits (or install "
                             "ml_dtypes for ml_dtypes.bfloat16); make states with "
                             "Model.new_state", 6)
        elif a.dtype not in _KNOWN_DTYPES:
            raise DTypeError(f"state '{name}' is a numpy {a.dtype} array; the runtime keeps "
                             "states in f32, f16 or bf16", 6)
        if not (a.flags.c_contiguous and a.flags.writeable):
            raise ArgumentError(f"state '{name}' must be a writable C-contiguous array: the "
                                "runtime writes its rows in place, and a copy would lose them "
                                "(np.ascontiguousarray it once and keep that array)", 4)
        # The runtime writes the view's memory, which is the array's.
        return a.view(_BF16_BITS) if bf16 else a

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


def _on_device(value):
    """Whether a run argument is device memory."""
    return isinstance(value, DeviceArray) or hasattr(value, "__cuda_array_interface__")


def load(path, weights=None, threads=None, check_weights=False):
    """Loads the model library at `path`. `weights`: the safetensors file of
    a library that reads its weights at load (attnc without --weights), or a
    sharded checkpoint's model.safetensors.index.json; None for one that
    embeds them. `threads`: the thread pool's size (default: the
    library's). `check_weights`: scan the weights for NaN and Inf first,
    raising NonFiniteError at the first (ATTN_LOAD_CHECK_WEIGHTS)."""
    return Model(path, weights=weights, threads=threads, check_weights=check_weights)


def from_pretrained(directory, threads=None, max_context=None, cache_dir=None, kv_cache=None,
                    precision=None):
    """A Hugging Face model directory, imported, compiled (cached) and loaded
    with its tokenizer: see attnc.pretrained.from_pretrained."""
    from .pretrained import from_pretrained
    return from_pretrained(directory, threads, max_context, cache_dir, kv_cache, precision)


# ------------------------------------------------------------------ compiler


def find_attnc():
    """The attnc executable: $ATTNC; else `attnc` on PATH; else next to this
    Python (a virtual environment's bin/, activated or not); else in the
    prefix this package is installed in (<prefix>/bin/attnc for
    <prefix>/lib/pythonX.Y/site-packages/attnc, e.g. `pip install --prefix`
    into attnc's own install prefix); else build/bin/attnc beside the virtual
    environment this Python runs in (a clone's .venv next to its build/, as
    scripts/setup.sh makes them) or beside this package's source tree
    (python/attnc in a clone). Raises CompileError if none."""
    env = os.environ.get("ATTNC")
    if env:
        return env
    found = shutil.which("attnc")
    if found:
        return found
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [os.path.join(os.path.dirname(sys.executable), "attnc")]
    prefix = here
    for _ in range(4):  # attnc -> site-packages -> pythonX.Y -> lib -> prefix
        prefix = os.path.dirname(prefix)
    candidates.append(os.path.join(prefix, "bin", "attnc"))
    for root in (os.path.dirname(os.path.abspath(sys.prefix)),
                 os.path.dirname(os.path.dirname(here))):
        candidates.append(os.path.join(root, "build", "bin", "attnc"))
    for candidate in candidates:
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    raise CompileError("attnc not found: set $ATTNC to the executable, put its directory on "
                       "PATH, install it next to this Python (cmake --install build --prefix "
                       f"{sys.prefix}), or build it (./scripts/setup.sh builds build/bin/attnc)")


def _run_attnc(args, what, cache_dir=None):
    """Runs attnc with `args`; `cache_dir`: its ATTNC_CACHE_DIR (where it keeps
    compiled kernels), else the environment's."""
    exe = find_attnc()
    env = dict(os.environ, ATTNC_CACHE_DIR=os.fspath(cache_dir)) if cache_dir else None
    try:
        r = subprocess.run([exe] + args, capture_output=True, text=True, env=env)
    except OSError as e:
        raise CompileError(f"cannot run {exe}: {e.strerror}") from None
    if r.returncode != 0:
        raise CompileError(r.stderr.strip() or f"{what} failed with exit code {r.returncode}")
    return r


def compile(model, output, target="host", schedule="hand", weights=None, kv_cache=None,
            precision=None):
    """Compiles the `.attn` file `model` (or a Hugging Face directory) into
    the library `output` with the attnc executable (see find_attnc). target:
    "host" or a Halide target (e.g. "x86-64-linux-avx2"); schedule: "hand",
    "auto" or "naive"; weights: a safetensors file to embed (None: the
    library reads them at load); kv_cache: a directory's caches' dtype
    (attnc --kv-cache: "f32", "f16", "bf16" or "i8"); precision: what the
    linears' GEMMs multiply (attnc --precision: "f32", the default, "bf16",
    or "int8": linears over i8 or 4-bit weights quantize their inputs).
    Raises CompileError with attnc's messages. Returns `output`."""
    args = [os.fspath(model), "-o", os.fspath(output), f"--target={target}",
            f"--schedule={schedule}"]
    if precision is not None:
        args += [f"--precision={precision}"]
    if weights is not None:
        args += ["--weights", os.fspath(weights)]
    if kv_cache is not None:
        args += [f"--kv-cache={kv_cache}"]
    _run_attnc(args, "attnc")
    return output


def init_weights(model, output, seed=0):
    """Writes random weights for the `.attn` file `model` to the safetensors
    file `output` (attnc --init-weights). Returns `output`."""
    _run_attnc([os.fspath(model), f"--init-weights={os.fspath(output)}", f"--seed={seed}"],
               "attnc --init-weights")
    return output
