"""Device memory from Python: the tiny model and the decoder of
test_decode.py built for OpenCL and run on PoCL (no GPU needed), with their
inputs, outputs and KV caches as DeviceArrays. Runs on device memory must
give the outputs of runs through host memory bit for bit (the same kernels
read the same values); against the CPU build, float32 rounding. Mixed
groups, missing outputs, other models' arrays and a host model's device
memory are refused.

ctest sets ATTNC_OPENCL=1 when the build found an OpenCL loader (CI always
does); run by hand without it, the module is skipped."""

import os

import numpy as np
import pytest

import attnc

from conftest import TINY, build
from test_decode import KV, STATE_NAMES

pytestmark = pytest.mark.skipif(
    os.environ.get("ATTNC_OPENCL") != "1",
    reason="no OpenCL here (ctest sets ATTNC_OPENCL=1 when the build found one)")

# The OpenCL build against the CPU build: both float32, in another order of
# the sums of a 12-feature layer norm and an 8-input linear: rounding only.
CPU_ATOL = 1e-5


def build_opencl(tmp, name, text):
    source = tmp / f"{name}.attn"
    source.write_text(text)
    weights = attnc.init_weights(source, tmp / f"{name}.safetensors", seed=7)
    lib = attnc.compile(source, tmp / f"{name}_cl.so", target="host-opencl")
    return lib, weights


@pytest.fixture(scope="module")
def tiny_cl(tmp_path_factory):
    lib, weights = build_opencl(tmp_path_factory.mktemp("tiny_cl"), "tiny", TINY)
    with attnc.load(lib, weights=weights) as m:
        yield m, weights


def tiny_inputs(b=2, s=5):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((b, s, 8)).astype(np.float32)
    ids = rng.integers(0, 10, (b, s)).astype(np.int32)
    return x, ids


def test_device_and_arrays(tiny_cl):
    m, _ = tiny_cl
    assert m.device == "opencl"
    x, _ = tiny_inputs()
    d = m.device_array(x)
    assert d.shape == x.shape and d.dtype == np.float32 and d.ptr
    assert np.array_equal(d.numpy(), x)
    assert not hasattr(d, "__cuda_array_interface__")  # OpenCL memory
    d.free()
    assert d.ptr == 0
    d.free()  # idempotent


def test_run_on_device_equals_host_and_cpu(tiny_cl, tiny):
    m, weights = tiny_cl
    x, ids = tiny_inputs()
    host = m.run({"x": x, "ids": ids})
    y = m.device_array((2, 5, 12))
    z = m.device_array((2, 5, 12))
    got = m.run({"x": m.device_array(x), "ids": m.device_array(ids)},
                out={"y": y, "z": z})
    assert got["y"] is y and got["z"] is z
    assert np.array_equal(y.numpy(), host["y"])
    assert np.array_equal(z.numpy(), host["z"])
    with attnc.load(tiny.lib, weights=weights) as cpu:
        ref = cpu.run({"x": x, "ids": ids})
    np.testing.assert_allclose(y.numpy(), ref["y"], rtol=0, atol=CPU_ATOL)

    # Inputs on the host, outputs on the device: a group at a time.
    y2 = m.device_array((2, 5, 12))
    m.run({"x": x, "ids": ids}, out={"y": y2, "z": z})
    assert np.array_equal(y2.numpy(), host["y"])


def test_bad_device_runs_are_refused(tiny_cl, tiny):
    m, weights = tiny_cl
    x, ids = tiny_inputs()
    y, z = m.device_array((2, 5, 12)), m.device_array((2, 5, 12))
    with pytest.raises(attnc.ArgumentError, match="inputs mix host and device"):
        m.run({"x": m.device_array(x), "ids": ids}, out={"y": y, "z": z})
    with pytest.raises(attnc.ArgumentError, match="give every output in out=.*missing z"):
        m.run({"x": m.device_array(x), "ids": m.device_array(ids)}, out={"y": y})
    small = m.device_array((2, 4, 12))
    with pytest.raises(attnc.ShapeError, match=r"output 'z' has dims \[2, 4, 12\]"):
        m.run({"x": m.device_array(x), "ids": m.device_array(ids)},
              out={"y": y, "z": small})
    freed = m.device_array(x)
    freed.free()
    with pytest.raises(attnc.ArgumentError, match="freed device array"):
        m.run({"x": freed, "ids": m.device_array(ids)}, out={"y": y, "z": z})
    with pytest.raises(attnc.ShapeError, match="cannot copy an array of shape"):
        y.copy_from(np.zeros((3, 5, 12), np.float32))
    with attnc.load(tiny.lib, weights=weights) as cpu:
        assert cpu.device == "host"
        with pytest.raises(attnc.ArgumentError, match="runs on the host"):
            cpu.device_array((2, 5, 12))
        with pytest.raises(attnc.ArgumentError, match="device array of another model"):
            cpu.run({"x": m.device_array(x), "ids": m.device_array(ids)},
                    out={"y": y, "z": z})


def test_kv_caches_on_the_device(tmp_path_factory):
    lib, weights = build_opencl(tmp_path_factory.mktemp("kv_cl"), "kv", KV)
    with attnc.load(lib, weights=weights) as m:
        prompt = np.array([[1, 2, 3, 4]], dtype=np.int32)
        host_states = m.new_state(batch=1, capacity=12)
        dev_states = {n: m.device_array(a) for n, a in host_states.items()}
        want = m.prefill({"ids": prompt}, host_states)["logits"]
        logits = m.device_array(want.shape)
        m.prefill({"ids": prompt}, dev_states, out={"logits": logits})
        assert np.array_equal(logits.numpy(), want)
        token = np.array([[5]], dtype=np.int32)
        want = m.decode({"ids": token}, host_states, position=4)["logits"]
        step = m.device_array(want.shape)
        m.decode({"ids": token}, dev_states, position=4, out={"logits": step})
        assert np.array_equal(step.numpy(), want)
        # The caches were written in place on the device, row for row.
        for name in STATE_NAMES:
            assert np.array_equal(dev_states[name].numpy(), host_states[name])
