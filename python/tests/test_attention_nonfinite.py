"""Non-finite values where attention reads keys no query sees: past the last
key, and a KV cache's stale rows.

A CPU prefill attention reads whole key tiles: the keys past the last one
have weight 0 and read the values as zeros (lowerings/Attention.cpp's padded
values). They were the last key's value, clamped to it, and 0 times an
infinite one made every output of that feature NaN where PyTorch's is
infinite.

Under a causal mask the rows before the bad key do not see it, and what
they hold in its feature depends on the implementation even within
PyTorch: its math path multiplies the zero weight too (NaN; so does attnc
where the row shares a key tile with the key), its CPU flash kernel skips
whole blocks of unseen keys (at S = 1100, 75 NaN rows against the math
path's 1099, PyTorch 2.15). Those entries are not compared.

A KV cache's rows past the visible ones (what an earlier sequence left) are
read as zeros for the same reason: Hugging Face's caches end at the
visible rows, so nothing there may reach an output.

The reference is test/e2e/reference.py's masked attention in float64
(softmax, then the weights times the values as a matmul, as PyTorch's math
path does). Finite outputs match within 1e-5 (f32 scores, exp and sums over
at most 100 keys of N(0, 1) values, outputs of order 1); NaN and infinite
ones exactly, position by position.
"""

import numpy as np
import pytest

import attnc
import reference as ref  # test/e2e, put on sys.path by conftest.py
from conftest import build

SOURCE = """\
model att {{
  dim B <= 2, S <= 128
  input q : f32[B, S, 32]
  input k : f32[B, S, 32]
  input v : f32[B, S, 32]
  output y = attention(q, k, v, heads = 2{mask})
}}
"""


@pytest.fixture(scope="module", params=["none", "causal"])
def model(request, tmp_path_factory):
    mask = "" if request.param == "none" else ", mask = causal"
    built = build(tmp_path_factory.mktemp("att"), "att",
                  SOURCE.format(mask=mask))
    return request.param == "causal", attnc.load(built.lib)


# 5 and 37: one key tile, part of it past the last key; 100: two, the
# second part past it.
@pytest.mark.parametrize("S", [5, 37, 100])
@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_a_last_value_that_is_not_finite(model, S, bad):
    causal, m = model
    rng = np.random.default_rng(S)
    q, k, v = (rng.standard_normal((2, S, 32), dtype=np.float32)
               for _ in range(3))
    v[0, S - 1, 3] = bad      # head 0
    v[1, S - 1, 20] = bad     # head 1
    y = m.run({"q": q, "k": k, "v": v})["y"]
    with np.errstate(invalid="ignore"):
        want = ref.masked_attention(q.astype(np.float64), k.astype(np.float64),
                                    v.astype(np.float64), 2, causal=causal)
    compared = np.ones(y.shape, dtype=bool)
    if causal:
        compared[0, :S - 1, 3] = compared[1, :S - 1, 20] = False
    y, want = y[compared], want[compared]
    assert np.array_equal(np.isnan(y), np.isnan(want))
    assert np.array_equal(np.isinf(y) & (y > 0), np.isinf(want) & (want > 0))
    assert np.array_equal(np.isinf(y) & (y < 0), np.isinf(want) & (want < 0))
    finite = np.isfinite(want)
    np.testing.assert_allclose(y[finite], want[finite], rtol=1e-5, atol=1e-5)
    # The row that sees the bad value has it in that feature (infinite:
    # its weight is positive), the other features stay finite.
    last = m.run({"q": q, "k": k, "v": v})["y"][0, S - 1]
    assert np.isnan(last[3]) if np.isnan(bad) else last[3] == bad
    assert np.isfinite(np.delete(last, 3)).all()


CACHED = """\
model cached {{
  dim B <= 2, S <= 16, L <= 40
  input x : f32[B, S, 32]
  weight qkv.weight : f32[96, 32]
  weight o.weight : f32[32, 32]
  state past.key : {t}[B, L, 32]
  state past.value : {t}[B, L, 32]
{scales}  output y = self_attention(x, heads = 2, qkv = qkv, out = o, mask = causal,
                            cache = past)
}}
"""
I8_SCALES = """\
  state past.key_scale : f32[B, L, 2]
  state past.value_scale : f32[B, L, 2]
"""


@pytest.mark.parametrize("bad", [np.inf, np.nan])
@pytest.mark.parametrize("cache", ["f32", "f16", "i8"])
def test_stale_cache_rows_are_never_read(tmp_path, cache, bad):
    """A cache's rows past the visible ones hold what an earlier sequence
    left there (attnc.batching reuses a finished sequence's row): non-finite
    ones (an f16 cache that overflowed; an i8 cache's scales) must not reach
    the outputs. The decode steps read the same key tile as those rows: each
    step's output equals that of a cache that held zeros, bit for bit."""
    source = CACHED.format(t=cache, scales=I8_SCALES if cache == "i8" else "")
    built = build(tmp_path, "cached", source)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 9, 32), dtype=np.float32)
    with attnc.load(built.lib, weights=built.weights) as m:
        outs = []
        for stale in (False, True):
            states = m.new_state(batch=2, capacity=37)
            if stale:
                for a in states.values():
                    a[...] = bad if a.dtype.kind == "f" else -128
            ys = [m.prefill({"x": x[:, :5]}, states)["y"]]
            for p in range(5, 9):
                ys.append(m.decode({"x": x[:, p:p + 1]}, states,
                                   position=np.array([p, p], np.int32))["y"])
            outs.append(np.concatenate(ys, axis=1))
    clean, stale = outs
    assert np.isfinite(clean).all()
    assert np.array_equal(stale, clean)
