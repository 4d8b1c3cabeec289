"""The attnc package: compile, load with weights, describe, run against a
float64 numpy reference, every error path with the runtime's message, arrays
that are not C-contiguous, outputs written in place, the GIL released while a
model runs, concurrent runs equal to serial ones."""

import ctypes
import os
import re
import sys
import threading
import time

import numpy as np
import pytest

import attnc
import safetensors_io  # test/e2e, put on sys.path by conftest.py
from conftest import TINY

# float32 kernels against the float64 reference of a K=8 linear, a layer_norm
# over 12 features and a gather: errors are a few float32 ulps of O(1) values.
ATOL = 1e-5
RTOL = 1e-5


def reference(weights, x, ids):
    w = {k: v.astype(np.float64) for k, v in safetensors_io.load(weights).items()}
    h = x.astype(np.float64) @ w["fc.weight"].T + w["fc.bias"]
    mean = h.mean(axis=-1, keepdims=True)
    var = ((h - mean) ** 2).mean(axis=-1, keepdims=True)      # biased, eps 1e-5
    y = (h - mean) / np.sqrt(var + 1e-5) * w["ln.weight"] + w["ln.bias"]
    return {"y": y, "z": y + w["emb"][ids]}


def tiny_inputs(b=2, s=5, seed=0):
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal((b, s, 8)).astype(np.float32),
            "ids": rng.integers(0, 10, size=(b, s)).astype(np.int32)}


@pytest.fixture
def model(tiny):
    with attnc.load(tiny.lib, weights=tiny.weights) as m:
        yield m


# ------------------------------------------------------------------ describe


def test_info(model, tiny):
    assert model.info.name == "tiny"
    assert model.info.compiler_version.startswith("attnc ")
    assert model.info.target.startswith("x86-64-linux")
    assert [t.name for t in model.inputs] == ["x", "ids"]
    assert [t.name for t in model.outputs] == ["y", "z"]
    x, ids = model.inputs
    assert x.dtype == np.float32 and ids.dtype == np.int32
    assert (x.dtype_name, ids.dtype_name) == ("f32", "i32")
    assert x.shape == ("B", "S", 8)
    assert x.dims[0] == attnc.Dim(symbol="B", max=8)
    assert x.dims[1].is_dynamic and x.dims[1].max == 16
    assert x.dims[2] == attnc.Dim(extent=8) and not x.dims[2].is_dynamic
    assert model.outputs[1].shape == ("B", "S", 12)
    assert repr(x) == "TensorInfo('x', f32[B<=8, S<=16, 8])"


def test_weight_tensors(model, tmp_path):
    # What the library reads at load, with the dtypes as declared.
    assert [(t.name, t.dtype_name, t.shape) for t in model.weight_tensors] == [
        ("fc.weight", "f32", (12, 8)), ("fc.bias", "f32", (12,)),
        ("ln.weight", "f32", (12,)), ("ln.bias", "f32", (12,)),
        ("emb", "f32", (10, 12))]
    source = tmp_path / "lowp.attn"
    source.write_text(TINY.replace("fc.weight : f32", "fc.weight : bf16")
                      .replace("emb : f32", "emb : f16"))
    weights = attnc.init_weights(source, tmp_path / "lowp.safetensors", seed=7)
    lib = attnc.compile(source, tmp_path / "lowp.so")
    with attnc.load(lib, weights=weights) as m:
        assert [t.dtype_name for t in m.weight_tensors] == ["bf16", "f32", "f32", "f32",
                                                            "f16"]
        assert m.weight_tensors[4].dtype == np.float16
    # Embedded weights are read at no load: none listed.
    embedded = attnc.compile(source, tmp_path / "embedded.so", weights=weights)
    with attnc.load(embedded) as m:
        assert m.weight_tensors == []


# ------------------------------------------------------------------ numerics


@pytest.mark.parametrize("b,s", [(1, 1), (2, 5), (8, 16)])
def test_matches_reference(model, tiny, b, s):
    ins = tiny_inputs(b, s, seed=b * 100 + s)
    out = model(**ins)
    assert list(out) == ["y", "z"]
    ref = reference(tiny.weights, ins["x"], ins["ids"])
    for name in ("y", "z"):
        assert out[name].dtype == np.float32 and out[name].shape == (b, s, 12)
        np.testing.assert_allclose(out[name], ref[name], rtol=RTOL, atol=ATOL)


def test_run_takes_a_dict_and_lists(model):
    ins = tiny_inputs()
    by_call = model(**ins)
    by_run = model.run({"x": ins["x"].tolist(), "ids": ins["ids"]})
    np.testing.assert_array_equal(by_call["y"], by_run["y"])


def test_threads(tiny):
    ins = tiny_inputs()
    with attnc.load(tiny.lib, weights=tiny.weights, threads=1) as one:
        y1 = one(**ins)["y"]
        one.set_threads(2)
        y2 = one(**ins)["y"]
        one.set_threads(0)
    np.testing.assert_allclose(y1, y2, rtol=RTOL, atol=ATOL)


# ------------------------------------------------------------------ arrays


def test_not_contiguous_inputs_are_copied(model):
    """Documented: a C-contiguous array of the model's dtype is read in place;
    one of that dtype in another layout is copied first, same results."""
    ins = tiny_inputs(2, 6)
    expected = model(**ins)
    wide = np.zeros((2, 12, 16), np.float32)
    wide[:, ::2, ::2] = ins["x"]
    strided = wide[:, ::2, ::2]
    fortran = np.asfortranarray(ins["x"])
    ids_t = np.ascontiguousarray(ins["ids"].T).T
    for x, ids in ((strided, ins["ids"]), (fortran, ins["ids"]), (ins["x"], ids_t)):
        assert not (x.flags.c_contiguous and ids.flags.c_contiguous)
        got = model(x=x, ids=ids)
        for name in ("y", "z"):
            np.testing.assert_array_equal(got[name], expected[name])


def test_inputs_are_not_written(model):
    ins = tiny_inputs()
    keep = {k: v.copy() for k, v in ins.items()}
    ins["x"].flags.writeable = False          # read-only arrays are accepted
    model(**ins)
    for k in ins:
        np.testing.assert_array_equal(ins[k], keep[k])


def test_out_written_in_place(model):
    ins = tiny_inputs(2, 5)
    expected = model(**ins)
    y = np.full((2, 5, 12), np.nan, np.float32)
    got = model.run(ins, out={"y": y})
    assert got["y"] is y and list(got) == ["y", "z"]
    np.testing.assert_array_equal(y, expected["y"])
    np.testing.assert_array_equal(got["z"], expected["z"])


def test_out_refused(model):
    ins = tiny_inputs(2, 5)
    with pytest.raises(attnc.ShapeError,
                       match=r"output 'y' has dims \[2, 4, 12\] but the inputs make it \[2, 5, 12\]"):
        model.run(ins, out={"y": np.empty((2, 4, 12), np.float32)})
    with pytest.raises(ValueError, match="writable C-contiguous"):
        model.run(ins, out={"y": np.empty((2, 5, 24), np.float32)[:, :, ::2]})
    with pytest.raises(attnc.DTypeError, match="float64"):
        model.run(ins, out={"y": np.empty((2, 5, 12))})


# ------------------------------------------------------------------ errors


def test_wrong_input_name(model):
    ins = tiny_inputs()
    with pytest.raises(attnc.ArgumentError) as e:
        model(x=ins["x"], idz=ins["ids"])
    assert str(e.value) == "model 'tiny' has no input named 'idz': its inputs are x, ids"
    assert e.value.status == 4 and e.value.status_name == "invalid argument"
    assert isinstance(e.value, ValueError)


def test_missing_input(model):
    with pytest.raises(attnc.ArgumentError,
                       match=r"model 'tiny' has 2 inputs \(x, ids\) but 1 were given"):
        model(x=tiny_inputs()["x"])


def test_wrong_dtype(model):
    ins = tiny_inputs()
    # A dtype the runtime knows reaches it: the runtime's message.
    with pytest.raises(attnc.DTypeError,
                       match="input 'x' has dtype F16 but the model expects F32"):
        model(x=ins["x"].astype(np.float16), ids=ins["ids"])
    # One it does not (float64, int64) is refused here, not converted.
    with pytest.raises(attnc.DTypeError) as e:
        model(x=ins["x"].astype(np.float64), ids=ins["ids"])
    assert "input 'x' is a numpy float64 array but the model expects float32" in str(e.value)
    assert isinstance(e.value, TypeError)
    with pytest.raises(attnc.DTypeError, match="input 'ids' is a numpy int64 array"):
        model(x=ins["x"], ids=ins["ids"].astype(np.int64))


def test_wrong_shape(model):
    ins = tiny_inputs(2, 5)
    with pytest.raises(attnc.ShapeError,
                       match=r"input 'x' dim 2 is 4 but the model fixes it to 8"):
        model(x=ins["x"][:, :, :4], ids=ins["ids"])
    with pytest.raises(attnc.ShapeError, match="input 'x' has rank 2"):
        model(x=ins["x"][0], ids=ins["ids"])
    with pytest.raises(attnc.ShapeError, match="input 'ids' dim 1"):
        model(x=ins["x"], ids=ins["ids"][:, :3])
    with pytest.raises(attnc.DimOutOfBoundsError,
                       match=r"input 'x' dim 1 \(S\) is 17, beyond its bound S <= 16"):
        big = tiny_inputs(1, 17)
        model(**big)


def test_bad_token_id(model):
    ins = tiny_inputs()
    ins["ids"][1, 2] = 10
    with pytest.raises(attnc.KernelError) as e:
        model(**ins)
    # The kernel's words right after "failed: ", none of Halide's
    # "Requirement Failed: (false) 10 " before them.
    assert re.search(r"\) failed: token id 10 at batch 1 position 2 is outside 0 \.\. 9$",
                     str(e.value)), str(e.value)


def test_missing_weights_file(tiny, tmp_path):
    missing = tmp_path / "nope.safetensors"
    with pytest.raises(attnc.FileError) as e:
        attnc.load(tiny.lib, weights=missing)
    assert str(e.value) == (f"safetensors file '{missing}': cannot open it: "
                            "No such file or directory")


def test_no_weights_given(tiny):
    with pytest.raises(attnc.ArgumentError,
                       match="reads its 5 weights from a safetensors file at load"):
        attnc.load(tiny.lib)


def test_weights_of_another_model(tiny, big):
    with pytest.raises(attnc.Error, match=f"weight 'fc.weight' is not in '{big.weights}'"):
        attnc.load(tiny.lib, weights=big.weights)


@pytest.mark.parametrize("name, index, value, shown", [
    ("fc.weight", (3, 5), np.nan, "NaN at [3, 5]"),
    ("ln.bias", (11,), -np.inf, "-Inf at [11]"),
    ("emb", (9, 0), np.inf, "+Inf at [9, 0]"),
])
def test_check_weights(tiny, tmp_path, name, index, value, shown):
    weights = safetensors_io.load(tiny.weights)
    # The clean file passes the check and runs as without it.
    attnc.load(tiny.lib, weights=tiny.weights, check_weights=True).close()
    weights[name] = weights[name].copy()
    weights[name][index] = value
    bad = tmp_path / "bad.safetensors"
    safetensors_io.save(bad, weights)
    with pytest.raises(attnc.NonFiniteError) as e:
        attnc.load(tiny.lib, weights=bad, check_weights=True)
    assert str(e.value).startswith(f"weight '{name}' in '{bad}' holds {shown} (shape ")
    assert e.value.status_name == "non-finite weight"
    # Without the check the load succeeds: the kernels propagate the value.
    attnc.load(tiny.lib, weights=bad).close()


def test_missing_library(tmp_path):
    with pytest.raises(attnc.FileError,
                       match="cannot open model library .*: No such file or directory"):
        attnc.load(tmp_path / "nope.so")


def test_not_a_model():
    rt = os.path.join(os.path.dirname(attnc.__file__), "libattnrt.so")
    with pytest.raises(attnc.InvalidLibraryError) as e:
        attnc.load(rt)
    # A shared library attnc did not link carries no digest.
    assert str(e.value) == (f"'{rt}' is not a loadable model library: it "
                            "carries no attnc digest (attnc appends one to "
                            "every library; this one was made by another "
                            "tool, or its end is cut off): give the .so that "
                            "attnc built, or rebuild it")


def test_closed(tiny):
    m = attnc.load(tiny.lib, weights=tiny.weights)
    m.close()
    m.close()
    assert m.closed
    with pytest.raises(attnc.Error, match="the model is closed"):
        m(**tiny_inputs())
    with attnc.load(tiny.lib, weights=tiny.weights) as m2:
        assert not m2.closed
    assert m2.closed


def test_compile_error(tmp_path):
    bad = tmp_path / "bad.attn"
    bad.write_text(attnc_source_with_typo())
    with pytest.raises(attnc.CompileError, match="nothing"):
        attnc.compile(bad, tmp_path / "bad.so")
    assert not (tmp_path / "bad.so").exists()


def attnc_source_with_typo():
    return "model bad {\n  input x : f32[2, 8]\n  output y = nothing(x)\n}\n"


def test_find_attnc_env(monkeypatch, tmp_path):
    monkeypatch.setenv("ATTNC", str(tmp_path / "no-attnc"))
    assert attnc.find_attnc() == str(tmp_path / "no-attnc")
    with pytest.raises(attnc.CompileError, match="cannot run"):
        attnc.compile(tmp_path / "m.attn", tmp_path / "m.so")


def fake_attnc(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return str(path)


def test_find_attnc_installed(monkeypatch, tmp_path):
    """With no $ATTNC and none on PATH: next to this Python (a venv's bin/),
    else in the prefix the package is installed in; else an error naming
    the ways to give one."""
    monkeypatch.delenv("ATTNC", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "venv"))
    monkeypatch.setattr(sys, "executable", str(tmp_path / "venv" / "bin" / "python"))
    package = tmp_path / "prefix" / "lib" / "python3.11" / "site-packages" / "attnc"
    monkeypatch.setattr(attnc, "__file__", str(package / "__init__.py"))
    with pytest.raises(attnc.CompileError, match="attnc not found: set [$]ATTNC"):
        attnc.find_attnc()
    in_prefix = fake_attnc(tmp_path / "prefix" / "bin" / "attnc")
    assert attnc.find_attnc() == in_prefix
    beside_python = fake_attnc(tmp_path / "venv" / "bin" / "attnc")
    assert attnc.find_attnc() == beside_python


# ------------------------------------------------------------------ threads


def progress_during(call):
    """Runs call() in a second thread while this one counts its own steps;
    returns (seconds the call took, steps of this thread in the middle 40%
    of it). Holding the GIL through the call, this thread could only step
    within a switch interval (0.5 ms here) of its start or after its end."""
    span, ticks, done = {}, [], threading.Event()

    def work():
        span["t0"] = time.perf_counter()
        call()
        span["t1"] = time.perf_counter()
        done.set()

    old = sys.getswitchinterval()
    sys.setswitchinterval(0.0005)
    try:
        t = threading.Thread(target=work)
        t.start()
        while not done.is_set():
            ticks.append(time.perf_counter())
        t.join()
    finally:
        sys.setswitchinterval(old)
    d = span["t1"] - span["t0"]
    lo, hi = span["t0"] + 0.3 * d, span["t1"] - 0.3 * d
    return d, sum(lo < s < hi for s in ticks)


def gil_released(call, tries=3):
    for _ in range(tries):          # a busy machine may starve this thread once
        d, middle = progress_during(call)
        assert d > 0.02, "the call is too short to tell"
        if middle > 10:
            return True
    return False


def test_gil_probe():
    """The probe itself: a C call that releases the GIL (ctypes.CDLL) lets
    this thread go on, one that holds it (ctypes.PyDLL) does not."""
    libc = ctypes.CDLL(None)
    held = ctypes.PyDLL(None)
    assert gil_released(lambda: libc.usleep(50000))
    assert not gil_released(lambda: held.usleep(50000), tries=1)


def test_gil_released_while_running(big):
    x = np.random.default_rng(1).standard_normal((8, 1024, 256)).astype(np.float32)
    with attnc.load(big.lib, weights=big.weights, threads=1) as m:
        m(x=x)                                          # warm
        assert gil_released(lambda: m(x=x)), "is the GIL held while the model runs?"


def test_concurrent_runs_equal_serial(tiny):
    """Threads running one model, and two loads of it, at once give the
    results of serial runs."""
    inputs = [tiny_inputs(8, 16, seed=i) for i in range(6)]
    with attnc.load(tiny.lib, weights=tiny.weights) as m, \
            attnc.load(tiny.lib, weights=tiny.weights) as m2:
        serial = [m(**ins) for ins in inputs]
        results, errors = {}, []

        def work(k, model):
            try:
                for rep in range(20):
                    for i, ins in enumerate(inputs):
                        if (i + rep + k) % 2 == 0:
                            results[(k, rep, i)] = model(**ins)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=work, args=(k, (m, m2)[k % 2])) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        assert len(results) == 4 * 20 * 3
        for (_, _, i), out in results.items():
            for name in ("y", "z"):
                np.testing.assert_array_equal(out[name], serial[i][name])


def test_close_waits_for_runs(big):
    x = np.zeros((4, 512, 256), np.float32)
    m = attnc.load(big.lib, weights=big.weights, threads=1)
    out = {}

    def work():
        try:
            out.update(m(x=x))
        except attnc.Error as e:
            out["error"] = e

    t = threading.Thread(target=work)
    t.start()
    m.close()
    t.join()
    # Either the run finished before close() (which waited for it), or it
    # started after and found the model closed; never a crash.
    assert m.closed
    assert "y" in out or str(out["error"]) == "the model is closed"
