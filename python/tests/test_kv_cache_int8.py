"""KV caches in 8 bits: `state P.key : i8[B, L, F]` with its scales
`state P.key_scale : f32[B, L, KV_HEADS]` (and the value's). A decoder block
(self-attention with a cache, residual, ReLU MLP) takes activations whose
keys and values are exact in f32 and float64 alike (inputs and weights are
multiples of 2^-6), so the kernels' keys and values are the reference's bit
for bit and the quantization is the one difference a reference has to model.

The reference quantizes as docs/language.md says: per (sequence, row,
key/value head), scale = max |x| / 127 in f32, q = x / scale in f32 rounded
to nearest even (numpy's rint), within +-127; an all-zero head scale 0. The
caches must hold exactly that (integers and scales bit for bit), and every
decode must match a float64 block reading q * scale to TOL, while the same
reference with a wrong scale (max / 128), with one scale per row instead of
per head, or reading the unquantized f32 keys misses by more than 20 TOL.
With grouped-query attention (2 key/value heads for 4 query heads) too."""

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
  weight o.weight : f32[{d}, {d}]
  weight o.bias : f32[{d}]
  weight fc.weight : f32[{ff}, {d}]
  weight proj.weight : f32[{d}, {ff}]
  state past.key : i8[B, L, {kv}]
  state past.value : i8[B, L, {kv}]
  state past.key_scale : f32[B, L, {kv_heads}]
  state past.value_scale : f32[B, L, {kv_heads}]
  y = x + self_attention(x, heads = {heads}, kv_heads = {kv_heads}, qkv = qkv,
                         out = o, mask = causal, cache = past)
  output z = y + linear(relu(linear(y, fc)), proj)
}}
"""

# The kernels compute the attention (scores as scale_k * sum q k_i8, values
# weighted by p * scale_v), its projection and the MLP in f32: against
# float64 reading the same dequantized rows, relative errors of a few 1e-7 of
# the outputs' magnitude. The quantization itself moves the outputs by ~1e-3
# (an element's error is up to scale / 2 = max / 254).
TOL = 2e-6


@pytest.fixture(scope="module", params=[4, 2], ids=["mha", "gqa"])
def block(request, tmp_path_factory):
    kv_heads = request.param
    kv = kv_heads * HEAD_DIM
    rng = np.random.default_rng(11)
    w = {"qkv.weight": sixty_fourths(rng, (D + 2 * kv, D), 0.5),
         "o.weight": sixty_fourths(rng, (D, D), 0.5),
         "o.bias": sixty_fourths(rng, (D,), 0.5),
         "fc.weight": sixty_fourths(rng, (FF, D), 0.5),
         "proj.weight": sixty_fourths(rng, (D, FF), 0.5)}
    tmp = tmp_path_factory.mktemp(f"int8kv{kv_heads}")
    safetensors_io.save(tmp / "w.safetensors", {k: v.astype(np.float32) for k, v in w.items()})
    source = tmp / "block.attn"
    source.write_text(BLOCK.format(d=D, qkv=D + 2 * kv, ff=FF, heads=HEADS, kv=kv,
                                   kv_heads=kv_heads))
    lib = attnc.compile(source, tmp / "block.so")
    with attnc.load(lib, weights=tmp / "w.safetensors") as m:
        yield kv_heads, w, m


# ------------------------------------------------------------------ reference


def quantize(a, groups):
    """int8 values and f32 scales of `a` [B, T, F] per group of F / groups
    features, as the cache stores them (docs/language.md)."""
    a = np.asarray(a, np.float32)
    g = a.reshape(*a.shape[:-1], groups, -1)
    scale = np.max(np.abs(g), axis=-1) / np.float32(127)          # f32 division
    with np.errstate(invalid="ignore", divide="ignore"):
        q = np.rint(g / scale[..., None])                          # f32, half to even
    q = np.where(scale[..., None] > 0, np.clip(q, -127, 127), 0)
    return q.reshape(a.shape).astype(np.int8), scale.astype(np.float32)


def dequantize(q, scale):
    groups = scale.shape[-1]
    g = q.astype(np.float64).reshape(*q.shape[:-1], groups, -1)
    return (g * scale.astype(np.float64)[..., None]).reshape(q.shape)


def reference(w, x, keys, values, offset, kv_heads):
    """The block over the rows `x` [B, S, D] at positions offset .. offset+S-1,
    attending over `keys` and `values` [B, offset+S, KV], in float64."""
    q = x @ w["qkv.weight"][:D].T
    B, S, _ = x.shape
    T = keys.shape[1]
    split = lambda t: t.reshape(B, -1, t.shape[-1] // HEAD_DIM, HEAD_DIM).transpose(0, 2, 1, 3)
    repeat = lambda t: np.repeat(split(t), HEADS // kv_heads, axis=1)
    scores = split(q) @ repeat(keys).transpose(0, 1, 3, 2) / np.sqrt(HEAD_DIM)
    seen = np.arange(T)[None, :] <= offset + np.arange(S)[:, None]
    scores = np.where(seen, scores, -np.inf)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    att = (p @ repeat(values)).transpose(0, 2, 1, 3).reshape(B, S, D)
    y = x + att @ w["o.weight"].T + w["o.bias"]
    return y + np.maximum(y @ w["fc.weight"].T, 0) @ w["proj.weight"].T


def kv_of(w, x, kv_heads):
    """K and V of rows `x`: exact in f32 (and so the kernels' own)."""
    kv = kv_heads * HEAD_DIM
    k = x @ w["qkv.weight"][D:D + kv].T
    v = x @ w["qkv.weight"][D + kv:].T
    assert np.array_equal(k, k.astype(np.float32)) and np.array_equal(v, v.astype(np.float32))
    return k, v


def relative_error(got, want):
    return float(np.max(np.abs(got - want)) / max(1.0, np.max(np.abs(want))))


# ------------------------------------------------------------------ tests


def test_states(block):
    kv_heads, _, m = block
    dtypes = {t.name: t.dtype_name for t in m.states}
    assert dtypes == {"past.key": "i8", "past.value": "i8",
                      "past.key_scale": "f32", "past.value_scale": "f32"}
    states = m.new_state(batch=2, capacity=8)
    assert states["past.key"].dtype == np.int8 and states["past.key"].shape == (2, 8, kv_heads * HEAD_DIM)
    assert states["past.key_scale"].dtype == np.float32
    assert states["past.key_scale"].shape == (2, 8, kv_heads)


def test_decodes_read_the_quantized_cache(block):
    kv_heads, w, m = block
    rng = np.random.default_rng(5)
    B, P, steps = 2, 5, [1, 1, 1, 2, 1]
    total = P + sum(steps)
    x = sixty_fourths(rng, (B, total, D), 2.0)
    x[1, 2] = 0.0                       # an all-zero row: scale 0
    states = m.new_state(batch=B, capacity=total + 1)
    k, v = kv_of(w, x, kv_heads)
    qk, sk = quantize(k, kv_heads)
    qv, sv = quantize(v, kv_heads)

    # Prefill attends over its own (f32) keys: the f32 block's outputs.
    got = m.prefill({"x": x[:, :P].astype(np.float32)}, states)["z"]
    assert relative_error(got, reference(w, x[:, :P], k[:, :P], v[:, :P], 0, kv_heads)) <= TOL

    wrong = {
        "scale max/128": (dequantize(qk, sk * 127 / 128), dequantize(qv, sv * 127 / 128)),
        "one scale per row": tuple(dequantize(*quantize(t, 1)) for t in (k, v)),
        "the f32 cache": (k, v),
    }
    position, worst, misses = P, 0.0, dict.fromkeys(wrong, 0.0)
    for s in steps:
        rows = x[:, position:position + s]
        got = m.decode({"x": rows.astype(np.float32)}, states, position=position)["z"]
        end = position + s
        want = reference(w, rows, dequantize(qk, sk)[:, :end], dequantize(qv, sv)[:, :end],
                         position, kv_heads)
        worst = max(worst, relative_error(got, want))
        for name, (kk, vv) in wrong.items():
            other = reference(w, rows, kk[:, :end], vv[:, :end], position, kv_heads)
            misses[name] = max(misses[name], relative_error(got, other))
        position = end
    print(f"kv_heads {kv_heads}: {worst:.3g} against the reference; misses {misses}")
    assert worst <= TOL, f"{worst:.3g} against the quantized reference"
    for name, miss in misses.items():
        assert miss > 20 * TOL, f"{name} is within {miss:.3g}: the check cannot tell"
    # The rows written: the reference's integers and scales, bit for bit.
    np.testing.assert_array_equal(states["past.key"][:, :total], qk)
    np.testing.assert_array_equal(states["past.value"][:, :total], qv)
    np.testing.assert_array_equal(states["past.key_scale"][:, :total], sk)
    np.testing.assert_array_equal(states["past.value_scale"][:, :total], sv)
    assert (sk[1, 2] == 0).all() and not qk[1, 2].any()
    assert not states["past.key"][:, total:].any()


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_a_non_finite_key_makes_the_attention_nan(block, bad):
    """A NaN or Inf among a row's keys: the row's scales are NaN (its
    integers 0), and every decode that sees the row gives NaN, as the f32
    cache's attention does (exp(inf - inf), 0 * inf), not a finite guess."""
    kv_heads, w, m = block
    rng = np.random.default_rng(3)
    x = sixty_fourths(rng, (1, 4, D), 2.0).astype(np.float32)
    x[0, 1, 0] = bad
    states = m.new_state(batch=1, capacity=8)
    m.prefill({"x": x[:, :3]}, states)
    assert np.isnan(states["past.key_scale"][0, 1]).all()
    assert np.isnan(states["past.value_scale"][0, 1]).all()
    assert not states["past.key"][0, 1].any()
    assert np.isfinite(states["past.key_scale"][0, [0, 2]]).all()
    got = m.decode({"x": x[:, 3:]}, states, position=3)["z"]
    assert np.isnan(got).all()


def test_a_state_of_another_dtype_is_refused(block):
    _, _, m = block
    states = m.new_state(batch=1, capacity=4)
    states["past.key"] = np.zeros(states["past.key"].shape, np.uint8)
    with pytest.raises(attnc.DTypeError, match="state 'past.key'"):
        m.prefill({"x": np.zeros((1, 2, D), np.float32)}, states)
    states = m.new_state(batch=1, capacity=4)
    states["past.key_scale"] = np.zeros((1, 4, 3), np.float32)
    with pytest.raises(attnc.ShapeError, match="past.key_scale"):
        m.prefill({"x": np.zeros((1, 2, D), np.float32)}, states)
