"""KV caches in f16 and bf16: `state P.key : f16[B, L, F]` (or bf16). A
decoder block (self-attention with a cache, residual, ReLU MLP) takes f32
activations whose keys and values are exact in f32 and float64 alike (inputs
and weights are multiples of 2^-6, so every product and sum is exact), so the
kernels' keys and values are the reference's bit for bit, and the rounding to
the cache's type is the one difference a reference has to model.

Checked: the cache rows are numpy's rounding of K and V to nearest even
(float16 as `astype`, bf16 the nearer of its two neighbours, ties to even),
bit for bit; prefill, which attends over its own keys, gives what the f32
block gives; every decode step matches a float64 reference that reads the
cache's rounded rows to TOL relative, and the same reference without the
rounding misses by more than TOL, so the rounding does happen where the
cache is read. bf16 states are uint16 bits without ml_dtypes; a state of
another dtype is refused by name. On OpenCL (PoCL, ATTNC_OPENCL=1), where
the caches are uint16 bits rounded by HalfBits' integer code, the same rows
bit for bit. Greedy generation with an f16 cache:
test_pretrained.py."""

import os

import numpy as np
import pytest

import attnc
from conftest import sixty_fourths
import safetensors_io  # test/e2e, put on sys.path by conftest.py

D, HEADS, FF = 32, 4, 64
HEAD_DIM = D // HEADS

BLOCK = """\
model block {{
  dim B <= 4, S <= 16, L <= 16
  input x : f32[B, S, {d}]
  weight qkv.weight : f32[{qkv}, {d}]
  weight qkv.bias : f32[{qkv}]
  weight o.weight : f32[{d}, {d}]
  weight o.bias : f32[{d}]
  weight fc.weight : f32[{ff}, {d}]
  weight proj.weight : f32[{d}, {ff}]
  state past.key : {t}[B, L, {d}]
  state past.value : {t}[B, L, {d}]
  y = x + self_attention(x, heads = {heads}, qkv = qkv, out = o, mask = causal,
                         cache = past)
  output z = y + linear(relu(linear(y, fc)), proj)
}}
"""

# The kernels compute the attention, its projection and the MLP in f32
# (exp, sums over 32 features and up to 16 keys): against float64, relative
# errors of a few 1e-7 of the outputs' magnitude.
TOL = 2e-6


@pytest.fixture(scope="module")
def weights(tmp_path_factory):
    rng = np.random.default_rng(11)
    w = {"qkv.weight": sixty_fourths(rng, (3 * D, D), 0.5),
         "qkv.bias": sixty_fourths(rng, (3 * D,), 0.5),
         "o.weight": sixty_fourths(rng, (D, D), 0.5),
         "o.bias": sixty_fourths(rng, (D,), 0.5),
         "fc.weight": sixty_fourths(rng, (FF, D), 0.5),
         "proj.weight": sixty_fourths(rng, (D, FF), 0.5)}
    path = tmp_path_factory.mktemp("halfkv") / "w.safetensors"
    safetensors_io.save(path, {k: v.astype(np.float32) for k, v in w.items()})
    return path, w


@pytest.fixture(scope="module", params=["f32", "f16", "bf16"])
def block(request, tmp_path_factory, weights):
    dtype = request.param
    tmp = tmp_path_factory.mktemp(f"block_{dtype}")
    source = tmp / "block.attn"
    source.write_text(BLOCK.format(d=D, qkv=3 * D, ff=FF, heads=HEADS, t=dtype))
    lib = attnc.compile(source, tmp / "block.so")
    with attnc.load(lib, weights=weights[0]) as m:
        yield dtype, m


# ------------------------------------------------------------------ reference


def round_bf16(a):
    """float32 `a` to the nearest bf16 (ties to even), as float64; NaN stays
    NaN. Independent of the kernels' bit trick: the nearer of the two bf16
    neighbours, compared in float64."""
    a = np.asarray(a, np.float32)
    bits = a.view(np.uint32)
    down = (bits & np.uint32(0xFFFF0000)).view(np.float32).astype(np.float64)
    up_bits = (bits & np.uint32(0xFFFF0000)) + np.uint32(0x10000)
    up = up_bits.view(np.float32).astype(np.float64)
    top = (up_bits & np.uint32(0x7FFFFFFF)) == np.uint32(0x7F800000)
    x = a.astype(np.float64)
    up = np.where(top, np.copysign(2.0 ** 128, x), up)       # past the largest: inf
    d_down, d_up = np.abs(x - down), np.abs(up - x)
    odd = ((bits >> np.uint32(16)) & np.uint32(1)) == 1
    choose_up = (d_up < d_down) | ((d_up == d_down) & odd)
    r = np.where(choose_up, up, down)
    return np.where(np.isnan(x) | np.isinf(x), x, np.where(np.isinf(r), np.copysign(np.inf, x), r))


def round_to(dtype, a):
    """What a cache of `dtype` holds of the f32 values `a`, as float64."""
    if dtype == "f16":
        return np.asarray(a, np.float32).astype(np.float16).astype(np.float64)
    if dtype == "bf16":
        return round_bf16(a)
    return np.asarray(a, np.float64)


def as_float64(dtype, cache):
    """A state array's values: float16, ml_dtypes.bfloat16 or uint16 bf16 bits."""
    if dtype == "bf16":
        bits = cache.view(np.uint16).astype(np.uint32) << np.uint32(16)
        return bits.view(np.float32).astype(np.float64)
    return cache.astype(np.float64)


def reference(w, x, keys, values, offset):
    """The block over the rows `x` [B, S, D] at positions offset .. offset+S-1,
    attending over `keys` and `values` [B, offset+S, D], in float64."""
    q = x @ w["qkv.weight"][:D].T + w["qkv.bias"][:D]
    B, S, _ = x.shape
    T = keys.shape[1]
    heads = lambda t: t.reshape(B, -1, HEADS, HEAD_DIM).transpose(0, 2, 1, 3)
    scores = heads(q) @ heads(keys).transpose(0, 1, 3, 2) / np.sqrt(HEAD_DIM)
    seen = np.arange(T)[None, :] <= offset + np.arange(S)[:, None]
    scores = np.where(seen, scores, -np.inf)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    att = (p @ heads(values)).transpose(0, 2, 1, 3).reshape(B, S, D)
    y = x + att @ w["o.weight"].T + w["o.bias"]
    return y + np.maximum(y @ w["fc.weight"].T, 0) @ w["proj.weight"].T


def kv_of(w, x):
    """K and V of rows `x`: exact in f32 (and so the kernels' own)."""
    k = x @ w["qkv.weight"][D:2 * D].T + w["qkv.bias"][D:2 * D]
    v = x @ w["qkv.weight"][2 * D:].T + w["qkv.bias"][2 * D:]
    assert np.array_equal(k, k.astype(np.float32)) and np.array_equal(v, v.astype(np.float32))
    return k, v


def relative_error(got, want):
    return float(np.max(np.abs(got - want)) / max(1.0, np.max(np.abs(want))))


# ------------------------------------------------------------------ tests


def test_state_dtypes(block):
    dtype, m = block
    for t in m.states:
        assert t.dtype_name == dtype
    states = m.new_state(batch=2, capacity=8)
    want = {"f32": np.float32, "f16": np.float16}.get(dtype)
    for a in states.values():
        assert a.shape == (2, 8, D) and not a.view(np.uint8).any()
        if want is not None:
            assert a.dtype == want
        else:   # bf16: ml_dtypes.bfloat16 when installed, else its bits
            assert a.dtype.itemsize == 2 and a.dtype != np.float16


def test_prefill_then_decodes_read_the_rounded_cache(block, weights):
    dtype, m = block
    w = weights[1]
    rng = np.random.default_rng(5)
    B, P, steps = 2, 5, [1, 1, 1, 2, 1]
    total = P + sum(steps)
    x = sixty_fourths(rng, (B, total, D), 2.0)
    states = m.new_state(batch=B, capacity=total + 1)
    k, v = kv_of(w, x)

    # Prefill attends over its own (f32) keys: the f32 block's outputs.
    got = m.prefill({"x": x[:, :P].astype(np.float32)}, states)["z"]
    want = reference(w, x[:, :P], k[:, :P], v[:, :P], 0)
    assert relative_error(got, want) <= TOL
    # Its rows in the caches: K and V rounded to nearest even, bit for bit.
    np.testing.assert_array_equal(as_float64(dtype, states["past.key"])[:, :P],
                                  round_to(dtype, k[:, :P]))
    np.testing.assert_array_equal(as_float64(dtype, states["past.value"])[:, :P],
                                  round_to(dtype, v[:, :P]))

    position, worst, worst_unrounded = P, 0.0, 0.0
    for s in steps:
        rows = x[:, position:position + s]
        got = m.decode({"x": rows.astype(np.float32)}, states, position=position)["z"]
        end = position + s
        # Every key and value a decode reads is a cache row.
        want = reference(w, rows, round_to(dtype, k[:, :end]), round_to(dtype, v[:, :end]),
                         position)
        unrounded = reference(w, rows, k[:, :end], v[:, :end], position)
        worst = max(worst, relative_error(got, want))
        worst_unrounded = max(worst_unrounded, relative_error(got, unrounded))
        position = end
    print(f"{dtype}: {worst:.3g} against the rounded reference, "
          f"{worst_unrounded:.3g} against the unrounded one")
    assert worst <= TOL, f"{dtype}: {worst:.3g} against the rounded reference"
    np.testing.assert_array_equal(as_float64(dtype, states["past.key"])[:, :total],
                                  round_to(dtype, k))
    assert not states["past.key"][:, total:].view(np.uint8).any()
    if dtype == "f32":
        assert worst_unrounded <= TOL
    else:
        # Without the rounding the reference misses: the decodes did read
        # rounded rows (f16: ~1e-4 of the outputs, bf16: ~1e-3).
        assert worst_unrounded > 20 * TOL, (
            f"{dtype}: {worst_unrounded:.3g} against the unrounded reference")


@pytest.mark.parametrize("block", ["f16", "bf16"], indirect=True)
def test_nan_stays_nan_and_f16_overflows_to_infinity(block):
    dtype, m = block
    states = m.new_state(batch=1, capacity=4)
    x = np.zeros((1, 2, D), np.float32)
    x[0, 0] = 1e6             # keys and values ~1e6: past f16's 65504, within bf16's range
    x[0, 1, 0] = np.nan       # NaN keys and values
    m.prefill({"x": x}, states)
    key = as_float64(dtype, states["past.key"])[0]
    assert np.isnan(key[1]).all()
    if dtype == "f16":
        assert np.isinf(key[0]).any()
    else:
        assert np.isfinite(key[0]).all()
        assert np.max(np.abs(key[0])) > 65504


def test_a_state_of_another_dtype_is_refused(block):
    dtype, m = block
    states = m.new_state(batch=1, capacity=4)
    other = np.float64 if dtype == "f32" else np.float32
    states["past.key"] = np.zeros((1, 4, D), other)
    with pytest.raises(attnc.DTypeError, match="state 'past.key' is a numpy"):
        m.prefill({"x": np.zeros((1, 2, D), np.float32)}, states)
    # The runtime's own check, under the package's: a state of another
    # dtype is refused by name before anything runs.
    given = "F16" if dtype == "f32" else "F32"
    states["past.key"] = np.zeros((1, 4, D), np.float16 if dtype == "f32" else np.float32)
    raw = [(name, a if name == "past.key" else m._state(name, a))
           for name, a in states.items()]
    with pytest.raises(attnc.DTypeError,
                       match=f"state 'past.key' has dtype {given} but the model expects "
                             f"{dtype.upper()}"):
        m._m.run([("x", np.zeros((1, 2, D), np.float32))], [], "prefill", raw)


@pytest.mark.parametrize("block", ["bf16"], indirect=True)
def test_bf16_state_as_uint16_bits(block):
    dtype, m = block
    # uint16 arrays of the bits are accepted whether or not ml_dtypes is there.
    states = {t.name: np.zeros((1, 4, D), np.uint16) for t in m.states}
    x = np.full((1, 1, D), 1.0 + 2.0 ** -6, np.float32)    # 1.015625: 7 bits, exact in bf16
    m.prefill({"x": x}, states)
    assert states["past.key"].any()


@pytest.mark.skipif(os.environ.get("ATTNC_OPENCL") != "1",
                    reason="no OpenCL here (ctest sets ATTNC_OPENCL=1 when the build found one)")
@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_opencl_rounds_as_the_cpu(dtype, weights, tmp_path):
    """On OpenCL without cl_khr_fp16 (PoCL) the caches are uint16 bits,
    rounded by HalfBits' integer code rather than Halide's casts: the same
    rows bit for bit, and the decodes within TOL of the rounded reference."""
    w = weights[1]
    source = tmp_path / "block.attn"
    source.write_text(BLOCK.format(d=D, qkv=3 * D, ff=FF, heads=HEADS, t=dtype))
    lib = attnc.compile(source, tmp_path / "block_cl.so", target="host-opencl")
    rng = np.random.default_rng(9)
    x = sixty_fourths(rng, (1, 6, D), 2.0)
    k, v = kv_of(w, x)
    with attnc.load(lib, weights=weights[0]) as m:
        assert m.device == "opencl"
        states = m.new_state(batch=1, capacity=8)
        m.prefill({"x": x[:, :4].astype(np.float32)}, states)
        got = m.decode({"x": x[:, 4:].astype(np.float32)}, states, position=4)["z"]
    np.testing.assert_array_equal(as_float64(dtype, states["past.key"])[:, :6],
                                  round_to(dtype, k))
    np.testing.assert_array_equal(as_float64(dtype, states["past.value"])[:, :6],
                                  round_to(dtype, v))
    want = reference(w, x[:, 4:], round_to(dtype, k), round_to(dtype, v), 4)
    assert relative_error(got, want) <= TOL
