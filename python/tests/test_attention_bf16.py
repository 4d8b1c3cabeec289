"""A prefill attention at --precision=bf16 on AMX (Sapphire Rapids): its two
products run on AMX tiles (lowerings/Attention.cpp, compiler/driver/glue/
amx.c's attention externs), with operands rounded to bf16 (to nearest, ties
to even) and sums in f32:
- the scores: the queries times the scale (an f32 product), rounded, by the
  keys, rounded;
- the weighted values: each key tile's probabilities, exp(score - the
  tile's maximum) in f32, rounded, by the values, rounded. The online
  softmax then folds the tiles as in f32, and the row sums add the
  unrounded probabilities.

The reference emulates exactly that in float64, key tile by key tile
(TargetDesc::attentionKeyTile: 128 keys for AMX products, 64 under a
causal mask; with the other size the median error is 5e-6 to 3e-5, 50x
past the tolerance and more, so the tile size is checked too); what is
left is f32 summation
and the f32 exp, whose error may flip a probability to the neighbouring
bf16 now and then. It also checks that its tolerance tells this arithmetic
from the f32 attention of every other precision and CPU.

Needs a CPU with AMX-BF16; test/driver/attention-bf16-amx.attn checks
where the externs are called on any host.
"""

import math
import os
import re
import subprocess

import numpy as np
import pytest

import attnc
import reference as ref  # test/e2e, put on sys.path by conftest.py
from conftest import cpu_has
from test_precision_bf16 import bf16_round


pytestmark = pytest.mark.skipif(
    not cpu_has("amx_bf16"),
    reason="this CPU lacks amx_bf16 (/proc/cpuinfo): the AMX attention does not run here")

HEADS = 4


def key_tile(causal):
    return 64 if causal else 128

SOURCE = """\
model att {{
  dim B <= 2, S <= 160, T <= 160
  input q : f32[B, S, 256]
  input k : f32[B, {keys}, {kv}]
  input v : f32[B, {keys}, {kv}]
  input lengths : i32[B]
  output y = attention(q, k, v, heads = 4, kv_heads = {kv_heads}{mask})
}}
"""

# Three models (each compile takes ~10 s of CI): the causal one also has
# grouped-query heads (two query heads per key head).
CASES = {
    "none": dict(kv_heads=4, mask=""),
    "padding": dict(kv_heads=4, mask=", mask = padding(lengths)"),
    "grouped-causal": dict(kv_heads=2, mask=", mask = causal"),
}


@pytest.fixture(scope="module", params=list(CASES))
def model(request, tmp_path_factory):
    case = CASES[request.param]
    tmp = tmp_path_factory.mktemp("attbf16")
    # A causal mask needs the keys along the queries' dim.
    keys = "S" if "causal" in request.param else "T"
    text = SOURCE.format(kv=64 * case["kv_heads"], kv_heads=case["kv_heads"],
                         mask=case["mask"], keys=keys)
    (tmp / "att.attn").write_text(text)
    lib = attnc.compile(tmp / "att.attn", tmp / "att.so", precision="bf16")
    return request.param, case["kv_heads"], attnc.load(lib, threads=1), lib


def emulated(q, k, v, kv_heads, causal, lengths, softcap=None, alibi=False, bias=None):
    """float64 of the AMX attention's arithmetic (the module's docstring);
    soft-cap, ALiBi and an additive bias [B, H, S, T] change the scores
    after the tile product, in that order (docs/language.md)."""
    B, S, _ = q.shape
    T = k.shape[1]
    dh = q.shape[2] // HEADS
    scale = np.float32(1 / math.sqrt(dh))
    qr = bf16_round(q.astype(np.float32) * scale)
    kr, vr = bf16_round(k), bf16_round(v)
    seen = ref.visible(B, S, T, causal, None, lengths)[:, 0]
    out = np.zeros((B, S, HEADS * dh))
    for b in range(B):
        for h in range(HEADS):
            g = h // (HEADS // kv_heads)
            s = qr[b, :, h * dh:(h + 1) * dh] @ kr[b, :, g * dh:(g + 1) * dh].T
            if softcap is not None:
                s = softcap * np.tanh(s / softcap)
            if alibi:
                s = s + ref.alibi_slopes(HEADS)[h] * (np.arange(T)[None, :] - np.arange(S)[:, None])
            if bias is not None:
                s = s + bias[b, h]
            top = np.full(S, -1e30)
            total = np.zeros(S)
            acc = np.zeros((S, dh))
            tile = key_tile(causal)
            for t in range(0, T, tile):
                vis = seen[b, :, t:t + tile]
                st = np.where(vis, s[:, t:t + tile], -1e30)
                m = st.max(axis=1)
                p = np.where(vis, np.exp(st - m[:, None]), 0.0)
                o = bf16_round(p.astype(np.float32)) @ vr[b, t:t + tile, g * dh:(g + 1) * dh]
                new = np.maximum(top, m)
                keep, add = np.exp(top - new), np.exp(m - new)
                total = total * keep + p.sum(axis=1) * add
                acc = acc * keep[:, None] + o * add[:, None]
                top = new
            # A row that sees no key is zeros; a NaN sum stays NaN.
            with np.errstate(invalid="ignore", divide="ignore"):
                out[b, :, h * dh:(h + 1) * dh] = np.where(
                    total[:, None] == 0, 0.0, acc / total[:, None])
    return out


# Errors in units of the largest |value|. Measured (Sapphire Rapids, no
# mask, S = 37 to 160): the median output 5e-9 from the emulation (f32
# sums), but a probability within f32's error of a bf16 rounding boundary
# rounds the other way now and then (an f32 exp and f32 scores against
# float64), which moves its row's outputs by up to one bf16 step of that
# probability: at S = 100, 32 of 51200 outputs past 2e-5, the largest
# 7.6e-5. The f32 attention (nothing rounded) misses the emulation by a
# median of 1.6e-4 to 2.2e-4 with 93-95% of its outputs past 2e-5: the
# median and the share past TOL tell the two apart by far.
MEDIAN_TOL = 1e-7
TOL = 2e-5
FLIPPED = 0.01
# One flip moves an output by at most 2^-8 of the largest value (a bf16 step
# of a probability below 1); 2^-8 / 4 is 13x the largest move seen.
FLIP_TOL = 2.0 ** -10


def check(got, want, scale, what):
    err = np.abs(got - want) / scale
    assert np.median(err) <= MEDIAN_TOL, f"{what}: median {np.median(err):.3g}"
    assert (err > TOL).mean() <= FLIPPED, f"{what}: {(err > TOL).mean():.3g} past {TOL}"
    assert err.max() <= FLIP_TOL, f"{what}: {err.max():.3g}"


@pytest.mark.parametrize("S", [37, 64, 100, 160])
def test_matches_the_bf16_emulation(model, S):
    name, kv_heads, m, _ = model
    rng = np.random.default_rng(S)
    B = 2
    q = (2 * rng.standard_normal((B, S, 256))).astype(np.float32)
    k = rng.standard_normal((B, S, 64 * kv_heads)).astype(np.float32)
    v = rng.standard_normal((B, S, 64 * kv_heads)).astype(np.float32)
    lengths = np.array([S, max(1, S // 3)], dtype=np.int32)
    causal = "causal" in name
    lens = lengths if name == "padding" else None
    got = m.run({"q": q, "k": k, "v": v, "lengths": lengths})["y"].astype(np.float64)
    want = emulated(q, k, v, kv_heads, causal, lens)
    scale = np.abs(v).max()
    check(got, want, scale, f"{name}, S = {S}")
    f32 = ref.llm_attention(q.astype(np.float64), k.astype(np.float64), v.astype(np.float64),
                            HEADS, kv_heads=kv_heads, causal=causal, lengths=lens)
    f32_err = np.abs(f32 - want) / scale
    assert np.median(f32_err) > 100 * MEDIAN_TOL and (f32_err > TOL).mean() > 0.5


@pytest.mark.parametrize("S, T", [(50, 130), (130, 20)])
def test_keys_of_another_length(model, S, T):
    """Queries and keys of different lengths (cross-attention's shape): more
    key tiles than query tiles, and a single partial key tile."""
    name, kv_heads, m, _ = model
    if "causal" in name:
        pytest.skip("a causal mask's queries and keys are one sequence")
    rng = np.random.default_rng(S + T)
    q = rng.standard_normal((2, S, 256)).astype(np.float32)
    k = rng.standard_normal((2, T, 64 * kv_heads)).astype(np.float32)
    v = rng.standard_normal((2, T, 64 * kv_heads)).astype(np.float32)
    lengths = np.array([T, max(1, T // 2)], dtype=np.int32)
    lens = lengths if name == "padding" else None
    got = m.run({"q": q, "k": k, "v": v, "lengths": lengths})["y"].astype(np.float64)
    check(got, emulated(q, k, v, kv_heads, False, lens), np.abs(v).max(), f"{name}, {S} x {T}")


def test_non_finite_values_as_the_emulation(model):
    """An infinite value and a NaN key reach the outputs as the emulation's
    (IEEE products and sums of the rounded operands): NaN where an infinite
    value meets a zero weight or the other infinity, infinite where it has
    weight. Under a causal mask the rows before the infinite value's key are
    not compared: they skip its key tile, where the emulation (as PyTorch's
    math path) multiplies its zero weight (test_attention_nonfinite.py says
    more)."""
    name, kv_heads, m, _ = model
    rng = np.random.default_rng(11)
    B, S = 2, 100
    q = rng.standard_normal((B, S, 256)).astype(np.float32)
    k = rng.standard_normal((B, S, 64 * kv_heads)).astype(np.float32)
    v = rng.standard_normal((B, S, 64 * kv_heads)).astype(np.float32)
    v[0, 70, 5] = np.inf
    k[1, 20, 3] = np.nan
    lengths = np.array([S, 50], dtype=np.int32)
    causal = "causal" in name
    lens = lengths if name == "padding" else None
    got = m.run({"q": q, "k": k, "v": v, "lengths": lengths})["y"].astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        want = emulated(q, k, v, kv_heads, causal, lens)
    if causal:
        got, want = got[:, 70:], want[:, 70:]
    assert np.isnan(want).any() and np.isposinf(want).any()
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.array_equal(np.isposinf(got), np.isposinf(want))
    fin = np.isfinite(want)
    check(got[fin], want[fin], np.abs(v[np.isfinite(v)]).max(), name)


def test_two_threads_give_the_same_outputs(model):
    """Tasks per (head, batch) on two threads, each calling the externs with
    its own tiles: the outputs are one thread's, bit for bit."""
    name, kv_heads, m, lib = model
    rng = np.random.default_rng(3)
    inputs = {"q": rng.standard_normal((2, 150, 256)).astype(np.float32),
              "k": rng.standard_normal((2, 150, 64 * kv_heads)).astype(np.float32),
              "v": rng.standard_normal((2, 150, 64 * kv_heads)).astype(np.float32),
              "lengths": np.array([150, 77], dtype=np.int32)}
    with attnc.load(lib, threads=2) as two:
        assert np.array_equal(two.run(inputs)["y"], m.run(inputs)["y"])


# The score terms applied after the AMX tile product: Gemma 2's soft-cap
# with ALiBi under a causal mask (key tiles of 64), and a per-head additive
# mask tensor (key tiles of 128).
TERMS = {
    "softcap-alibi": ("", ", mask = causal & alibi, softcap = 30"),
    "bias": ("  input m : f32[B, 4, S, S]\n", ", mask = m"),
}


@pytest.mark.parametrize("terms", list(TERMS))
def test_score_terms_match_the_emulation(terms, tmp_path):
    """Measured (Sapphire Rapids): soft-cap and ALiBi at a median 3e-8 of the
    largest value (f32's tanh and slopes; 5e-9 without them), 0.2-0.3% of
    outputs past TOL, the largest 3.1e-4; the bias at 1e-8, none past TOL.
    The f32 attention, and the emulation without the soft-cap (or the
    bias), miss by a median of 1.8e-4 and more."""
    extra, args = TERMS[terms]
    (tmp_path / "att.attn").write_text(
        "model att {\n  dim B <= 2, S <= 160\n  input q : f32[B, S, 256]\n"
        "  input k : f32[B, S, 256]\n  input v : f32[B, S, 256]\n" + extra +
        f"  output y = attention(q, k, v, heads = 4{args})\n}}\n")
    lib = attnc.compile(tmp_path / "att.attn", tmp_path / "att.so", precision="bf16")
    with attnc.load(lib, threads=1) as m:
        for S in (70, 150):
            rng = np.random.default_rng(S)
            q = (2 * rng.standard_normal((2, S, 256))).astype(np.float32)
            k = rng.standard_normal((2, S, 256)).astype(np.float32)
            v = rng.standard_normal((2, S, 256)).astype(np.float32)
            inputs = {"q": q, "k": k, "v": v}
            bias = None
            if terms == "bias":
                bias = (3 * rng.standard_normal((2, 4, S, S))).astype(np.float32)
                bias[:, :, :, S // 2] = -np.inf   # a hidden key in every row
                inputs["m"] = bias
            got = m.run(inputs)["y"].astype(np.float64)
            want = emulated(q, k, v, 4, terms != "bias", None,
                            softcap=30.0 if terms != "bias" else None,
                            alibi=terms != "bias", bias=bias)
            scale = np.abs(v).max()
            check(got, want, scale, f"{terms}, S = {S}")
            # Without the term, or in f32: far past the tolerance.
            q64, k64, v64 = (t.astype(np.float64) for t in (q, k, v))
            if terms == "bias":
                f32 = ref.masked_attention(q64, k64, v64, HEADS, bias=bias.astype(np.float64))
                without = emulated(q, k, v, 4, False, None)
            else:
                f32 = ref.llm_attention(q64, k64, v64, HEADS, causal=True, alibi=True,
                                        softcap=30.0)
                without = emulated(q, k, v, 4, True, None, alibi=True)
            for other in (f32, without):
                err = np.abs(other - want) / scale
                assert np.median(err) > 100 * MEDIAN_TOL and (err > TOL).mean() > 0.5


def test_two_batch_dims(tmp_path):
    """Inputs [B, N, S, D]: the externs address each head by every batch dim
    (attn_amx_head_at); each (b, n) is the rank-3 emulation's."""
    (tmp_path / "att.attn").write_text(
        "model att {\n  dim B <= 2, N <= 3, S <= 160\n"
        "  input q : f32[B, N, S, 256]\n  input k : f32[B, N, S, 256]\n"
        "  input v : f32[B, N, S, 256]\n"
        "  output y = attention(q, k, v, heads = 4)\n}\n")
    lib = attnc.compile(tmp_path / "att.attn", tmp_path / "att.so", precision="bf16")
    rng = np.random.default_rng(21)
    q = (2 * rng.standard_normal((2, 3, 140, 256))).astype(np.float32)
    k = rng.standard_normal((2, 3, 140, 256)).astype(np.float32)
    v = rng.standard_normal((2, 3, 140, 256)).astype(np.float32)
    with attnc.load(lib, threads=1) as m:
        got = m.run({"q": q, "k": k, "v": v})["y"].astype(np.float64)
    for n in range(3):
        want = emulated(q[:, n], k[:, n], v[:, n], 4, False, None)
        check(got[:, n], want, np.abs(v).max(), f"n = {n}")


# A decoder of head dim 64: its prefill's attention runs on AMX tiles, its
# decode steps' on f32 vectors.
DECODER = """\
model dec {
  dim B, S <= 64, L <= 64
  input ids : i32[B, S]
  weight wte.weight : f32[96, 128]
  weight ln.weight : f32[128]
  weight ln.bias : f32[128]
  weight attn.c_attn.weight : f32[128, 384] layout(in, out)
  weight attn.c_proj.weight : f32[128, 128] layout(in, out)
  weight head.weight : f32[96, 128]
  state past.key : f32[B, L, 128]
  state past.value : f32[B, L, 128]
  x = embedding(ids, wte)
  x = x + self_attention(layer_norm(x, ln), heads = 2, qkv = attn.c_attn,
                         out = attn.c_proj, mask = causal, cache = past,
                         rope = half)
  output logits = linear(x, head)
}
"""


def test_decode_steps_agree_with_the_prefill(tmp_path):
    """attn-run --check (4 x 2^-8 of the largest logit at bf16) passes for a
    decoder whose prefill attends on AMX tiles and whose decode steps in f32:
    the attention's rounding is within what bf16 already allows. Measured:
    here 4.8e-4 to 5.9e-4 (logits up to 0.4-0.8), against 6e-8 to 9e-8 for
    the f32 library; 2.0e-3 to 2.4e-3 of the largest logit for a 12-layer
    GPT-2-small shape (130-token prompts, 15 steps). The difference must
    also be past f32 summation's (1e-5 of the largest logit), or the
    prefill did not round."""
    (tmp_path / "dec.attn").write_text(DECODER)
    weights = attnc.init_weights(tmp_path / "dec.attn", tmp_path / "dec.safetensors", seed=4)
    lib = attnc.compile(tmp_path / "dec.attn", tmp_path / "dec.so", precision="bf16")
    attn_run = os.path.join(os.path.dirname(attnc.find_attnc()), "attn-run")
    rng = np.random.default_rng(8)
    prompts = ["--prompt=" + ",".join(str(t) for t in rng.integers(0, 96, 40))
               for _ in range(4)]
    out = subprocess.run(
        [attn_run, str(lib), "--weights", str(weights), "--generate", "10", *prompts,
         "--check", "--temperature", "1", "--seed", "5"],
        capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    checks = re.findall(r"max abs difference ([0-9.e+-]+) \(logits up to ([0-9.e+-]+), "
                        r"tolerance ([0-9.e+-]+)\): (\w+)", out.stdout)
    assert len(checks) == 4, out.stdout
    for diff, scale, tolerance, verdict in checks:
        assert verdict == "ok"
        assert float(diff) > 1e-5 * float(scale)
