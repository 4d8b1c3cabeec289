"""attnc --precision=bf16 (issue 25, item 5): the linears' GEMMs multiply
inputs rounded to bf16 (to nearest, ties to even) by bf16 weights (f32 ones
rounded once, at load) and sum the products in f32 (AVX512_BF16's
vdpbf16ps).

The reference is numpy float64 of the ROUNDED inputs and weights: the
rounding is what bf16 means and is emulated exactly here, so what is left is
f32 summation, and the tolerance is f32's. Each test also checks that its
tolerance tells the right arithmetic from two wrong ones: products of the
unrounded f32 values (a library that computes in plain f32), and of values
truncated to bf16 instead of rounded.

The numbers need a CPU with AVX512_BF16 (the library is built for this
machine); elsewhere they are skipped, and the error that a target without it
gets is test/driver/precision-bf16.attn's, which runs everywhere.
"""

import os
import re
import subprocess

import numpy as np
import pytest

import attnc
import safetensors_io as st
from conftest import cpu_has


pytestmark = pytest.mark.skipif(
    not cpu_has("avx512_bf16"),
    reason="this CPU lacks avx512_bf16 (/proc/cpuinfo): --precision=bf16 libraries "
           "for it cannot be built here")

# Two linears that cover the GEMM's cases: 768 inputs (three chunks of 256)
# into 200 outputs (three 64-wide panels and a padded one), and 96 inputs
# (chunks of 32: the largest power of two that divides them) into 64, with
# rows that are no multiple of the 6-row register tile.
K1, N1, K2, N2, B, S = 768, 200, 96, 64, 2, 37

MODEL = f"""\
model lin {{
  dim B <= 4, S <= 64
  input x : f32[B, S, {K1}]
  input u : f32[B, S, {K2}]
  weight a.weight : f32[{N1}, {K1}]
  weight a.bias : f32[{N1}]
  weight c.weight : f32[{K2}, {N2}] layout(in, out)
  output y = linear(x, a)
  output z = linear(u, c)
}}
"""


def bf16_round(a):
    """`a` (f32) rounded to bf16 to nearest, ties to even, as float64."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    return r.astype(np.uint32).view(np.float32).astype(np.float64)


def bf16_truncate(a):
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    return (u & np.uint32(0xFFFF0000)).view(np.float32).astype(np.float64)


def linear(x, w_out_in, bias, narrow):
    """float64 x @ W^T + b of `narrow`ed x and W, and sum |x_i w_i| per
    output (the scale of f32 summation's error)."""
    xr, wr = narrow(x), narrow(w_out_in)
    y = xr @ wr.T + (bias.astype(np.float64) if bias is not None else 0)
    return y, np.abs(xr) @ np.abs(wr).T


# f32 summation of K products against float64: each step within 2^-24 of
# the running sum, a random walk of ~sqrt(K) such errors (measured: 2.0e-7
# of sum |x_i w_i| for y, K = 768 with its bias, 7e-8 for z). 2e-6 leaves a
# margin of 10; products of the unrounded f32 values miss by ~2^-9 /
# sqrt(K) of it per output (measured 5.9e-4 and 1.5e-3 at the worst output),
# truncation by more (1.8e-3, 4.1e-3): both fail by 300x or more.
TOL = 2e-6


def worst(got, want, scale):
    return float(np.max(np.abs(got.astype(np.float64) - want) / scale))


@pytest.fixture(scope="module")
def bf16_linears(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bf16")
    rng = np.random.default_rng(5)
    w = {"a.weight": (rng.standard_normal((N1, K1)) / np.sqrt(K1)).astype(np.float32),
         "a.bias": rng.standard_normal(N1).astype(np.float32),
         "c.weight": (rng.standard_normal((K2, N2)) / np.sqrt(K2)).astype(np.float32)}
    st.save(str(tmp / "w.safetensors"), w)
    (tmp / "lin.attn").write_text(MODEL)
    lib = attnc.compile(tmp / "lin.attn", tmp / "lin.so", precision="bf16")
    model = attnc.load(lib, weights=str(tmp / "w.safetensors"), threads=1)
    x = rng.standard_normal((B, S, K1)).astype(np.float32)
    u = rng.standard_normal((B, S, K2)).astype(np.float32)
    return model, w, x, u


@pytest.mark.parametrize("output", ["y", "z"])
def test_linear_matches_bf16_reference(bf16_linears, output):
    model, w, x, u = bf16_linears
    got = model(x=x, u=u)[output]
    if output == "y":
        args = (x, w["a.weight"], w["a.bias"])
    else:
        args = (u, w["c.weight"].T, None)
    want, scale = linear(*args, bf16_round)
    assert worst(got, want, scale) <= TOL
    # The tolerance tells the bf16 arithmetic from plain f32 and from
    # truncation.
    for wrong in (lambda a: np.asarray(a, np.float64), bf16_truncate):
        bad, _ = linear(*args, wrong)
        assert worst(got, bad, scale) > 20 * TOL


@pytest.mark.parametrize("k, n", [(1280, 64), (80, 40)])
def test_other_lengths_match_bf16_reference(tmp_path, k, n):
    """1280 inputs: on AMX (Sapphire Rapids) 40 tile multiplies into each
    sum tile (compiler/driver/glue/amx.c). 80, no multiple of a tile's 32:
    on AMX CPUs the widened pairs and FMAs (TargetDesc::fastBf16Dot), on
    Zen 4 vdpbf16ps, as for the linears above elsewhere. The same bound
    holds: f32 summation of k products, in another order."""
    (tmp_path / "other.attn").write_text(f"""\
model other {{
  dim B <= 4, S <= 64
  input x : f32[B, S, {k}]
  weight d.weight : f32[{n}, {k}]
  weight d.bias : f32[{n}]
  output y = linear(x, d)
}}
""")
    rng = np.random.default_rng(7)
    w = {"d.weight": (rng.standard_normal((n, k)) / np.sqrt(k)).astype(np.float32),
         "d.bias": rng.standard_normal(n).astype(np.float32)}
    st.save(str(tmp_path / "w.safetensors"), w)
    lib = attnc.compile(tmp_path / "other.attn", tmp_path / "other.so", precision="bf16")
    model = attnc.load(lib, weights=str(tmp_path / "w.safetensors"), threads=2)
    x = rng.standard_normal((B, S, k)).astype(np.float32)
    got = model(x=x)["y"]
    args = (x, w["d.weight"], w["d.bias"])
    want, scale = linear(*args, bf16_round)
    assert worst(got, want, scale) <= TOL
    for wrong in (lambda a: np.asarray(a, np.float64), bf16_truncate):
        bad, _ = linear(*args, wrong)
        assert worst(got, bad, scale) > 20 * TOL


def test_rounding_ties_to_even(bf16_linears):
    """Inputs exactly halfway between two bf16 values round to the even one:
    1 + 2^-8 (halfway between 1 and 1 + 2^-7) to 1, 1 + 3 * 2^-8 to
    1 + 2^-6. With a one-hot row the output is the rounded input times one
    weight, so any other rounding shows."""
    model, w, x, u = bf16_linears
    xs = np.zeros((1, 2, K1), np.float32)
    xs[0, 0, 0] = 1 + 2.0 ** -8
    xs[0, 1, 0] = 1 + 3 * 2.0 ** -8
    got = model(x=xs, u=np.zeros((1, 2, K2), np.float32))["y"]
    wr = bf16_round(w["a.weight"][:, 0])
    b = w["a.bias"].astype(np.float64)
    np.testing.assert_allclose(got[0, 0], b + 1.0 * wr, rtol=0, atol=1e-6)
    np.testing.assert_allclose(got[0, 1], b + (1 + 2.0 ** -6) * wr, rtol=0, atol=1e-6)


def test_nan_and_inf_stay_in_their_row(bf16_linears):
    """A NaN input makes its row's outputs NaN, an Inf its row's Inf (as
    float64 of the rounded operands gives), and no other row moves: on AMX
    the tiles sum 16 rows at once, so a row's NaN must not reach its
    neighbours'."""
    model, w, x, u = bf16_linears
    x = x.copy()
    x[0, 3, 5] = np.nan
    x[1, 7, 0] = np.inf
    got = model(x=x, u=u)["y"]
    with np.errstate(invalid="ignore", over="ignore"):
        want, scale = linear(x, w["a.weight"], w["a.bias"], bf16_round)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    assert np.isnan(got[0, 3]).all() and np.isinf(got[1, 7]).all()
    rows = np.ones(got.shape[:2], bool)
    rows[0, 3] = rows[1, 7] = False
    assert worst(got[rows], want[rows], scale[rows]) <= TOL


def test_embedded_weights_are_the_same_pairs(bf16_linears, tmp_path):
    """attnc --weights packs the pairs at compile time (the init entry run
    on the host): the same library outputs, bit for bit."""
    model, w, x, u = bf16_linears
    st.save(str(tmp_path / "w.safetensors"), w)
    (tmp_path / "lin.attn").write_text(MODEL)
    lib = attnc.compile(tmp_path / "lin.attn", tmp_path / "emb.so",
                        weights=tmp_path / "w.safetensors", precision="bf16")
    got = attnc.load(lib, threads=1)(x=x, u=u)
    want = model(x=x, u=u)
    for name in ("y", "z"):
        np.testing.assert_array_equal(got[name], want[name])


def test_python_forwards_precision(tmp_path):
    (tmp_path / "lin.attn").write_text(MODEL)
    with pytest.raises(attnc.CompileError, match="--precision is 'bf8'"):
        attnc.compile(tmp_path / "lin.attn", tmp_path / "x.so", precision="bf8")


# A decoder: its decode kernels take the GEMV path (one row per sequence)
# and, from 6 sequences on, tiles of sequences (CpuSchedules.cpp,
# scheduleDecodeGemm), both over bf16 pairs; on AMX the micro-kernel, the
# sequences a tile's rows (scheduleAmxDecodeGemm).
D, F, V, H, L = 64, 128, 48, 4, 32
DECODER = f"""\
model dec {{
  dim B, S <= {L}, L <= {L}
  input ids : i32[B, S]
  weight wte.weight : f32[{V}, {D}]
  weight wpe.weight : f32[{L}, {D}]
  weight ln_1.weight : f32[{D}]
  weight ln_1.bias : f32[{D}]
  weight attn.c_attn.weight : f32[{D}, {3 * D}] layout(in, out)
  weight attn.c_attn.bias : f32[{3 * D}]
  weight attn.c_proj.weight : f32[{D}, {D}] layout(in, out)
  weight attn.c_proj.bias : f32[{D}]
  weight ln_2.weight : f32[{D}]
  weight ln_2.bias : f32[{D}]
  weight mlp.c_fc.weight : f32[{D}, {F}] layout(in, out)
  weight mlp.c_fc.bias : f32[{F}]
  weight mlp.c_proj.weight : f32[{D}, {F}]
  weight mlp.c_proj.bias : f32[{D}]
  weight head.weight : f32[{V}, {D}]
  state past.key : f32[B, L, {D}]
  state past.value : f32[B, L, {D}]
  x = embedding(ids, wte) + embedding(positions(S), wpe)
  x = x + self_attention(layer_norm(x, ln_1), heads = {H}, qkv = attn.c_attn,
                         out = attn.c_proj, mask = causal, cache = past)
  h = layer_norm(x, ln_2)
  x = x + linear(gelu(linear(h, mlp.c_fc), approximate = tanh), mlp.c_proj)
  output logits = linear(x, head)
}}
"""


@pytest.fixture(scope="module")
def decoders(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bf16dec")
    (tmp / "dec.attn").write_text(DECODER)
    weights = attnc.init_weights(tmp / "dec.attn", tmp / "dec.safetensors", seed=3)
    return {prec: attnc.load(attnc.compile(tmp / "dec.attn", tmp / f"dec-{prec}.so",
                                           precision=prec), weights=str(weights), threads=1)
            for prec in ("f32", "bf16")}


def logits(model, ids, prompt):
    """Logits of positions prompt.. of `ids`: of one prefill of them all, and
    of a prefill of the prompt and a decode step per position."""
    b, s = ids.shape
    states = model.new_state(batch=b, capacity=L)
    whole = model.prefill({"ids": ids}, states)["logits"][:, prompt:]
    states = model.new_state(batch=b, capacity=L)
    model.prefill({"ids": ids[:, :prompt]}, states)
    steps = [model.decode({"ids": ids[:, p:p + 1]}, states, position=p)["logits"][:, -1]
             for p in range(prompt, s)]
    return whole.astype(np.float64), np.stack(steps, axis=1).astype(np.float64)


# Decode steps read the same bf16 pairs and round their inputs as the
# prefill does, so they agree with it up to f32 summation order: without AMX
# (AMD Zen 4) bit-identical, the f32 library's decode and prefill 4e-7 of the
# largest logit apart. With AMX (Sapphire Rapids) both sum on tiles (the
# micro-kernel, whose sums do not depend on a tile's other rows), so their
# GEMMs agree; the attention's f32 sums run in another order, so a linear's
# input may differ by an ulp and round to the neighbouring bf16 (2^-8 of it)
# now and then, which moves that position's logits: over 12 batches of 1-12
# sequences, 1 of 546 positions moved, by 1.4e-4 of the largest logit, the
# median by 0 (with the decode's GEMMs on FMAs, session 30: 2 positions, up
# to 5.5e-4). A decode that computed in f32 moves the median by 6e-4 to
# 8e-4 and 99% of logits by more than DECODE_TOL; one that read the pairs in
# another order moves them all by far more.
DECODE_TOL = 1e-5
# Positions a rounding flip may move, and how far (3x the largest seen).
DECODE_FLIPPED = 0.1
DECODE_FLIP_TOL = 1.5e-3


@pytest.mark.parametrize("batch", [1, 8])
def test_decode_agrees_with_prefill(decoders, batch):
    ids = np.random.default_rng(batch).integers(0, V, size=(batch, 12)).astype(np.int32)
    whole, steps = logits(decoders["bf16"], ids, 5)
    scale = np.abs(whole).max()
    diff = np.abs(steps - whole)
    assert np.median(diff) <= 0.1 * DECODE_TOL * scale
    assert (diff.max(axis=2) > DECODE_TOL * scale).mean() <= DECODE_FLIPPED
    assert diff.max() <= DECODE_FLIP_TOL * scale
    f32_whole, f32_steps = logits(decoders["f32"], ids, 5)
    assert np.abs(f32_steps - whole).max() > 10 * DECODE_TOL * scale
    assert np.abs(f32_whole - whole).max() > 10 * DECODE_TOL * scale


def test_library_says_its_precision_and_attn_run_checks_by_it(decoders):
    """The descriptor records --precision (attn_model_info.precision), and
    attn-run --check takes bf16's rounding into its tolerance: 4 x 2^-8 of
    the largest logit, as for a bf16 cache, since a decode's linear input may
    round to the neighbouring bf16 (test_decode_agrees_with_prefill). With
    f32's 1e-4 it printed FAILED for most of GPT-2 small's sequences. Eight
    sequences, so the decode's GEMMs run on AMX where there is AMX; sampled,
    so only the logits are compared, not near-tied greedy choices."""
    assert decoders["f32"].info.precision == "f32"
    assert decoders["bf16"].info.precision == "bf16"
    lib = decoders["bf16"].info.path
    attn_run = os.path.join(os.path.dirname(attnc.find_attnc()), "attn-run")
    prompts = [f"--prompt={b % V},{(3 * b + 1) % V},{(7 * b + 2) % V}" for b in range(8)]
    out = subprocess.run(
        [attn_run, lib, "--weights", os.path.join(os.path.dirname(lib), "dec.safetensors"),
         "--generate", "12", *prompts, "--check", "--temperature", "1", "--seed", "5"],
        capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    checks = re.findall(r"logits up to ([0-9.e+-]+), tolerance ([0-9.e+-]+)\): (\w+)",
                        out.stdout)
    assert len(checks) == 8, out.stdout
    for scale, tolerance, verdict in checks:
        assert verdict == "ok"
        assert float(tolerance) == pytest.approx(4 * 2**-8 * max(1.0, float(scale)),
                                                 rel=1e-2)


def test_from_pretrained_forwards_precision(tmp_path):
    """from_pretrained(precision="bf16") compiles the import at bf16 (its
    own cached library): the Llama fixture's logits (a bf16 checkpoint, so
    only the inputs' rounding differs) move off the f32 library's, by 5.2e-3
    of the largest logit measured; 1e-2 bounds it."""
    pytest.importorskip("tokenizers")
    from conftest import REPO
    d = os.path.join(REPO, "test", "import", "fixtures", "llama")
    ids = np.array([[1, 5, 9, 2, 7]], np.int32)
    out = {}
    for prec in ("f32", "bf16"):
        with attnc.from_pretrained(d, cache_dir=tmp_path, precision=prec, threads=1) as m:
            out[prec] = m.model.run({"ids": ids})["logits"]
    diff = np.abs(out["bf16"].astype(np.float64) - out["f32"]).max()
    scale = np.abs(out["f32"]).max()
    assert 0 < diff <= 1e-2 * scale
