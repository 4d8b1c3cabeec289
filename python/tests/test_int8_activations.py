"""int8 activations (issue 25): `attnc --precision=int8`, whose linears with
i8 or 4-bit weights quantize their input rows and sum integer products,
against a float64 numpy reference that quantizes the activations exactly as
docs/language.md documents it:

  per row and block of 32 inputs: scale = absmax / 127 (f32), each input's
  integer round(x / scale) (f32 division, nearest even) in -127..127; an
  all-zero block has scale 0 and integers 0; a row with a NaN or infinite
  input gives NaN outputs.

The linears read the embedding sum x = wte[id] + wpe[position], which numpy
forms bit for bit as the kernel does (one f32 addition), so the reference
quantizes the very inputs the kernel does and its integer sums are exact;
only the kernel's f32 scaling and summing of the block sums is rounded. Each
test checks that a wrong block size (16, 64), a missing activation or weight
scale, and f32 activations (weight-only quantization) all miss by far more
than the tolerance.
"""

import math

import numpy as np
import pytest

import attnc
import safetensors_io as st
from conftest import cpu_has

D, N, V, S_MAX, BLOCK = 128, 44, 40, 32, 32

MODEL = f"""\
model a8 {{
  dim B, S <= {S_MAX}, L <= {S_MAX}
  input ids : i32[B, S]
  weight wte.weight : f32[{V}, {D}]
  weight wpe.weight : f32[{S_MAX}, {D}]
  weight q8.weight : i8[{N}, {D}]
  weight q8.weight_scale : f32[{N}]
  weight q8.bias : f32[{N}]
  weight t8.weight : i8[{D}, {N}] layout(in, out)
  weight t8.weight_scale : f32[{N}]
  weight q4.weight : i4[{N}, {D}]
  weight q4.weight_scale : f32[{N}, {D // BLOCK}]
  weight q4.bias : f32[{N}]
  weight f.weight : f32[{N}, {D}]
  weight attn.c_attn.weight : f32[{3 * D}, {D}]
  weight attn.c_proj.weight : f32[{D}, {D}]
  state past.key : f32[B, L, {D}]
  state past.value : f32[B, L, {D}]
  x = embedding(ids, wte) + embedding(positions(S), wpe)
  output a = linear(x, q8)
  output b = linear(x, t8)
  output c = linear(x, q4)
  output d = linear(x, f)
  output y = x + self_attention(x, heads = 2, qkv = attn.c_attn, out = attn.c_proj,
                                mask = causal, cache = past)
}}
"""


def random_weights(rng):
    def u(*shape, bound=1.0):
        return rng.uniform(-bound, bound, shape).astype(np.float32)
    # Blocks of very different ranges (so a wrong block or scale is far
    # off), a zero block in every row of wte (scale 0).
    wte = u(V, D) * np.repeat(np.exp(rng.uniform(-3, 1, (V, D // BLOCK))), BLOCK, axis=1)
    wte[:, BLOCK:2 * BLOCK] = 0
    return {
        "wte.weight": wte.astype(np.float32), "wpe.weight": u(S_MAX, D, bound=0.01),
        "q8.weight": rng.integers(-127, 128, (N, D)).astype(np.int8),
        "q8.weight_scale": np.exp(rng.uniform(-6, -3, N)).astype(np.float32),
        "q8.bias": u(N, bound=0.1),
        "t8.weight": rng.integers(-127, 128, (D, N)).astype(np.int8),
        "t8.weight_scale": np.exp(rng.uniform(-6, -3, N)).astype(np.float32),
        "q4.weight": rng.integers(0, 256, (N, D // 2)).astype(np.uint8),
        "q4.weight_scale": np.exp(rng.uniform(-5, -1, (N, D // BLOCK))).astype(np.float32),
        "q4.bias": u(N, bound=0.1),
        "f.weight": u(N, D, bound=0.1),
        "attn.c_attn.weight": u(3 * D, D, bound=0.1), "attn.c_proj.weight": u(D, D, bound=0.1)}


def quantize_rows(x, block=BLOCK):
    """The documented activation quantization of f32 rows x [..., D]:
    (integers as float64 [..., D], block scales as float64 [..., D / block])."""
    xb = x.reshape(*x.shape[:-1], D // block, block)
    scale = np.abs(xb).max(axis=-1) / np.float32(127)             # f32
    safe = np.where(scale > 0, scale, np.float32(1))[..., None]
    q = np.where(scale[..., None] > 0, np.clip(np.rint(xb / safe), -127, 127), 0)
    return q.reshape(x.shape).astype(np.float64), scale.astype(np.float64)


def weights_out_in(w, name):
    """[out, in] float64 integers of a stored matrix (4-bit: q - 8) and its
    scales as [out, in / BLOCK] (i8: one per output, repeated)."""
    if name == "q4":
        b = w["q4.weight"].astype(np.int64)
        q = np.empty((b.shape[0], D))
        q[:, 0::2], q[:, 1::2] = (b & 15) - 8, (b >> 4) - 8
        return q, w["q4.weight_scale"].astype(np.float64)
    q = w[name + ".weight"].astype(np.float64)
    q = q.T if name == "t8" else q
    s = w[name + ".weight_scale"].astype(np.float64)
    return q, np.repeat(s[:, None], D // BLOCK, axis=1)


def reference(w, x, name, wrong=None):
    """float64 outputs [..., N] of linear `name` on f32 rows x; `wrong`
    names a deliberately wrong reading."""
    q, sw = weights_out_in(w, name)
    bias = w.get(name + ".bias", np.zeros(len(q), np.float32)).astype(np.float64)
    if wrong == "f32 activations":
        return x.astype(np.float64) @ (q * np.repeat(sw, BLOCK, axis=1)).T + bias
    if wrong == "no weight scale":
        sw = np.ones_like(sw)
    if wrong in ("blocks of 16", "blocks of 64"):
        block = int(wrong.split()[-1])
        xq, sa = quantize_rows(x, block)
        return (xq * np.repeat(sa, block, axis=-1)) @ (q * np.repeat(sw, BLOCK, axis=1)).T + bias
    xq, sa = quantize_rows(x)
    if wrong == "no activation scale":
        sa = np.ones_like(sa)
    # sum over blocks of sa[b] * sw[n, b] * (integer dot of the block).
    dots = np.einsum("...bk,nbk->...nb", xq.reshape(*x.shape[:-1], D // BLOCK, BLOCK),
                     q.reshape(len(q), D // BLOCK, BLOCK))
    return np.einsum("...nb,...b,nb->...n", dots, sa, sw) + bias


def magnitude(w, x, name):
    """sum of |terms| of each output: what its f32 rounding scales with."""
    q, sw = weights_out_in(w, name)
    xq, sa = quantize_rows(x)
    dots = np.einsum("...bk,nbk->...nb", np.abs(xq).reshape(*x.shape[:-1], D // BLOCK, BLOCK),
                     np.abs(q).reshape(len(q), D // BLOCK, BLOCK))
    return np.einsum("...nb,...b,nb->...n", dots, sa, sw) + 1e-30


# The integer block sums are exact; each output is then K / 4 lane products
# f32(dot) * scale summed in f32 over chunks, the lanes added in f32 and
# (i8) the output scale and bias applied: ~K / 4 + 10 roundings of 2^-24
# relative to partial sums bounded by the sum of |terms|, a bound of 2.5e-6
# of it at K = 128 (we see ~1e-7). 4e-6 of the magnitude leaves a margin; the
# wrong readings miss by 1e-3 of it and more (asserted below).
REL_TOL = 4e-6
WRONG = ("f32 activations", "no weight scale", "no activation scale", "blocks of 16",
         "blocks of 64")


def check(got, w, x, name):
    want = reference(w, x, name)
    mag = magnitude(w, x, name)
    err = (np.abs(got - want) / mag).max()
    assert err <= REL_TOL, f"{name}: max error {err:.3e} of the magnitude > {REL_TOL}"
    for wrong in WRONG:
        miss = (np.abs(got - reference(w, x, name, wrong)) / mag).max()
        assert miss > 100 * REL_TOL, f"{name}: {wrong} misses by only {miss:.3e}"
    return err


def embedded(w, ids, start):
    """x as the kernel forms it: one f32 addition of the two rows."""
    return w["wte.weight"][ids] + w["wpe.weight"][start:start + ids.shape[1]]


@pytest.fixture(scope="module")
def a8model(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("int8_activations")
    w = random_weights(np.random.default_rng(2508))
    st.save(str(tmp / "w.safetensors"), w)
    (tmp / "a8.attn").write_text(MODEL)
    lib = attnc.compile(tmp / "a8.attn", tmp / "a8.so", precision="int8")
    f32lib = attnc.compile(tmp / "a8.attn", tmp / "f32.so")
    model = attnc.load(lib, weights=str(tmp / "w.safetensors"), threads=1)
    f32model = attnc.load(f32lib, weights=str(tmp / "w.safetensors"), threads=1)
    return model, f32model, w


def test_prefill_and_decode_batch_of_two(a8model):
    model, f32model, w = a8model
    ids = np.random.default_rng(1).integers(0, V, size=(2, 9)).astype(np.int32)
    states = model.new_state(batch=2, capacity=S_MAX)
    out = model.prefill({"ids": ids[:, :6]}, states)
    x = embedded(w, ids[:, :6], 0)
    worst = max(check(out[name], w, x, lin) for name, lin in (("a", "q8"), ("b", "t8"),
                                                              ("c", "q4")))
    for p in range(6, 9):
        out = model.decode({"ids": ids[:, p:p + 1]}, states, position=p)
        x = embedded(w, ids[:, p:p + 1], p)
        worst = max([worst] + [check(out[name], w, x, lin)
                               for name, lin in (("a", "q8"), ("b", "t8"), ("c", "q4"))])
    print(f"prefill B=2 S=6, decode B=2: max error {worst:.3e} of the magnitude")


def test_f32_linears_unchanged(a8model):
    """A linear with f32 weights computes as at --precision=f32 (its input
    is not quantized): the same f32 outputs as the default library's within
    f32 rounding, and the attention output too."""
    model, f32model, w = a8model
    ids = np.random.default_rng(2).integers(0, V, size=(2, 5)).astype(np.int32)
    got = model.prefill({"ids": ids}, model.new_state(batch=2, capacity=S_MAX))
    want = f32model.prefill({"ids": ids}, f32model.new_state(batch=2, capacity=S_MAX))
    x = embedded(w, ids, 0).astype(np.float64)
    np.testing.assert_allclose(got["d"], x @ w["f.weight"].astype(np.float64).T,
                               rtol=0, atol=1e-5)
    np.testing.assert_allclose(got["d"], want["d"], rtol=0, atol=1e-6)
    np.testing.assert_allclose(got["y"], want["y"], rtol=0, atol=1e-5)


def linear_model(n=N):
    return f"""\
model lin {{
  dim B, S <= 8
  input x : f32[B, S, {D}]
  weight q8.weight : i8[{n}, {D}]
  weight q8.weight_scale : f32[{n}]
  weight q8.bias : f32[{n}]
  weight q4.weight : i4[{n}, {D}]
  weight q4.weight_scale : f32[{n}, {D // BLOCK}]
  weight q4.bias : f32[{n}]
  output a = linear(x, q8)
  output c = linear(x, q4)
}}
"""


@pytest.mark.parametrize("target", ["host", "x86-64-linux-avx2-fma-f16c"])
def test_zero_nan_and_inf_rows(tmp_path, target):
    """An all-zero row gives the bias exactly (scale 0, integers 0); a row
    with a NaN or an infinite input gives NaN outputs (an int8 integer of
    NaN would be a silent wrong number); the other rows are unaffected. On
    the host (VNNI where it has it) and on AVX2 (pmaddwd pairs)."""
    if target != "host" and not cpu_has("avx2"):
        pytest.skip("the host cannot run AVX2 code")
    rng = np.random.default_rng(3)
    w = random_weights(rng)
    w = {k: v for k, v in w.items() if k.startswith(("q8.", "q4."))}
    st.save(str(tmp_path / "w.safetensors"), w)
    (tmp_path / "lin.attn").write_text(linear_model())
    lib = attnc.compile(tmp_path / "lin.attn", tmp_path / "lin.so", target=target,
                        precision="int8")
    x = rng.standard_normal((2, 5, D)).astype(np.float32)
    x[0, 1] = 0
    x[0, 2, 7] = np.nan
    x[1, 3, 100] = np.inf
    x[1, 4, 5] = -np.inf
    with attnc.load(lib, weights=str(tmp_path / "w.safetensors"), threads=1) as m:
        out = m(x=x)
    bad = np.zeros((2, 5), bool)
    bad[0, 2] = bad[1, 3] = bad[1, 4] = True
    for name, lin in (("a", "q8"), ("c", "q4")):
        assert np.isnan(out[name][bad]).all(), name
        assert np.isfinite(out[name][~bad]).all(), name
        np.testing.assert_array_equal(out[name][0, 1], w[lin + ".bias"])
        check(out[name][~bad], w, x[~bad], lin)


def test_fewer_outputs_than_a_vector(tmp_path):
    """8 outputs (half an AVX-512 vector of floats): the schedule reduces
    the lane sums of a tile of 8 outputs together rather than 16 (44 takes
    tiles of 16, the last shifted inwards)."""
    rng = np.random.default_rng(4)
    w = {k: v[:8] for k, v in random_weights(rng).items() if k.startswith(("q8.", "q4."))}
    st.save(str(tmp_path / "w.safetensors"), w)
    (tmp_path / "lin.attn").write_text(linear_model(8))
    lib = attnc.compile(tmp_path / "lin.attn", tmp_path / "lin.so", precision="int8")
    x = rng.standard_normal((2, 3, D)).astype(np.float32)
    with attnc.load(lib, weights=str(tmp_path / "w.safetensors"), threads=1) as m:
        out = m(x=x)
    for name, lin in (("a", "q8"), ("c", "q4")):
        check(out[name], w, x, lin)


def test_precision_is_checked(tmp_path):
    (tmp_path / "lin.attn").write_text(linear_model())
    with pytest.raises(attnc.CompileError,
                       match="'int4', but the linears compute in f32, bf16 or int8"):
        attnc.compile(tmp_path / "lin.attn", tmp_path / "lin.so", precision="int4")


# The int8 GEMM (lowerings/Int8Gemm.cpp): on a VNNI target i8 matrices of
# whole blocks are packed into quads of inputs and their outputs run in
# vectors, tiles of rows x outputs (schedules/cpu/QuantGemmSchedule.cpp):
# fewer rows than a tile go row by row, more in tiles with the last one
# shifted inwards; outputs not a multiple of 16 (44, 8) end in a tile
# shifted inwards (or a narrower vector). The block sums are exact in i32
# and each output adds K / 32 block terms in f32, fewer roundings than the
# dot products' lanes: REL_TOL holds.
GEMM = f"""\
model gemm {{
  dim B, S <= 96
  input x : f32[B, S, {D}]
  weight q8.weight : i8[{N}, {D}]
  weight q8.weight_scale : f32[{N}]
  weight q8.bias : f32[{N}]
  weight t8.weight : i8[{D}, {N}] layout(in, out)
  weight t8.weight_scale : f32[{N}]
  weight s8.weight : i8[8, {D}]
  weight s8.weight_scale : f32[8]
  weight s8.bias : f32[8]
  output a = linear(x, q8)
  output b = linear(x, t8)
  output e = linear(x, s8)
}}
"""
GEMM_LINEARS = (("a", "q8"), ("b", "t8"), ("e", "s8"))


@pytest.fixture(scope="module")
def gemm_model(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("int8_gemm")
    rng = np.random.default_rng(2509)
    w = {k: v for k, v in random_weights(rng).items() if k.startswith(("q8.", "t8."))}
    w["s8.weight"] = rng.integers(-127, 128, (8, D)).astype(np.int8)
    w["s8.weight_scale"] = np.exp(rng.uniform(-6, -3, 8)).astype(np.float32)
    w["s8.bias"] = rng.uniform(-0.1, 0.1, 8).astype(np.float32)
    st.save(str(tmp / "w.safetensors"), w)
    (tmp / "gemm.attn").write_text(GEMM)
    lib = attnc.compile(tmp / "gemm.attn", tmp / "gemm.so", precision="int8")
    with attnc.load(lib, weights=str(tmp / "w.safetensors"), threads=1) as m:
        yield m, w, tmp


def gemm_rows(rng, shape):
    """f32 rows [..., D] whose blocks have very different ranges, a zero
    block in each."""
    x = rng.standard_normal((*shape, D)) * np.repeat(
        np.exp(rng.uniform(-3, 1, (*shape, D // BLOCK))), BLOCK, axis=-1)
    x[..., BLOCK:2 * BLOCK] = 0
    return x.astype(np.float32)


@pytest.mark.parametrize("batch,rows", [(1, 1), (1, 2), (1, 5), (1, 6), (1, 17),
                                        (1, 70), (3, 17), (2, 96)])
def test_gemm_rows(gemm_model, batch, rows):
    model, w, _ = gemm_model
    x = gemm_rows(np.random.default_rng(rows * 10 + batch), (batch, rows))
    out = model(x=x)
    worst = max(check(out[name], w, x, lin) for name, lin in GEMM_LINEARS)
    print(f"B={batch} S={rows}: max error {worst:.3e} of the magnitude")


def test_gemm_zero_nan_and_inf_rows(gemm_model):
    """Zero, NaN and Inf rows in the first, a middle and the last (shifted)
    tile of rows: NaN outputs for the rows with a non-finite input, the
    bias for the zero rows, the other rows unaffected."""
    model, w, _ = gemm_model
    x = gemm_rows(np.random.default_rng(4), (1, 23))
    bad = np.zeros((1, 23), bool)
    for r in (0, 12, 22):
        x[0, r] = 0
    for r, value in ((1, np.nan), (9, np.inf), (21, -np.inf)):
        x[0, r, 3 * r % D] = value
        bad[0, r] = True
    out = model(x=x)
    for name, lin in GEMM_LINEARS:
        assert np.isnan(out[name][bad]).all(), name
        assert np.isfinite(out[name][~bad]).all(), name
        bias = w.get(lin + ".bias", np.zeros(out[name].shape[-1], np.float32))
        for r in (0, 12, 22):
            np.testing.assert_array_equal(out[name][0, r], bias)
        check(out[name][~bad], w, x[~bad], lin)


@pytest.mark.parametrize("batch", [1, 2, 5, 17, 33])
def test_batched_decode_ragged_positions(a8model, batch):
    """A decode step of B sequences at their own positions: the i8 linears
    by the GEMM (tiles of sequences from 6 up), the 4-bit one as before."""
    model, f32model, w = a8model
    rng = np.random.default_rng(100 + batch)
    ids = rng.integers(0, V, size=(batch, 1)).astype(np.int32)
    position = rng.integers(0, S_MAX - 1, size=batch).astype(np.int32)
    states = model.new_state(batch=batch, capacity=S_MAX)
    out = model.decode({"ids": ids}, states, position=position)
    x = w["wte.weight"][ids] + w["wpe.weight"][position][:, None, :]
    worst = max(check(out[name], w, x, lin)
                for name, lin in (("a", "q8"), ("b", "t8"), ("c", "q4")))
    print(f"decode B={batch}: max error {worst:.3e} of the magnitude")


def test_gemm_embedded_weights(gemm_model):
    """Weights embedded in the library are packed into quads as at load:
    the same outputs, bit for bit."""
    model, w, tmp = gemm_model
    lib = attnc.compile(tmp / "gemm.attn", tmp / "embedded.so", precision="int8",
                        weights=tmp / "w.safetensors")
    x = gemm_rows(np.random.default_rng(5), (2, 13))
    want = model(x=x)
    with attnc.load(lib, threads=1) as m:
        got = m(x=x)
    for name, _ in GEMM_LINEARS:
        np.testing.assert_array_equal(got[name], want[name])
