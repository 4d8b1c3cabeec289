"""4-bit group-wise weight-only quantization (issue 25, item 2): `attnc
quantize --bits 4` and i4 linear weights, against float64 numpy references.

As test_quantized.py does for int8: a GPT-2-style block with a KV cache whose
attention and MLP matrices (and a mix and a head) are i4, one scale per group
of G inputs of each output, made by `attnc quantize --bits 4` itself, against
a float64 forward of the DEQUANTIZED weights `(q - 8) * scale[o, i // G]`.
Quantization error is not measured (the weights are what they are), only the
kernels' f32 arithmetic. Each test checks that its tolerance tells the right
weights from wrong ones: nibbles read in the other order, each input read
with its neighbouring group's scale, and scales ignored must all miss by far
more than the tolerance.
"""

import math
import subprocess

import numpy as np
import pytest

import attnc
import safetensors_io as st
from test_quantized import (LLAMA_MATRICES, attnc_exe, forward, gelu_tanh,  # noqa: F401
                            imported_against_twin, layer_norm, quantize_fails)

D, F, V, H, S_MAX = 64, 128, 48, 4, 32
G = 32          # the group of attnc quantize --bits 4 (its default)
G_HEAD = 16     # the head's, quantized in a second pass with --group 16

MODEL = f"""\
model q4gpt {{
  dim B, S <= {S_MAX}, L <= {S_MAX}
  input ids : i32[B, S]
  weight wte.weight : f32[{V}, {D}]
  weight wpe.weight : f32[{S_MAX}, {D}]
  weight ln_1.weight : f32[{D}]
  weight ln_1.bias : f32[{D}]
  weight attn.c_attn.weight : i4[{D}, {3 * D}] layout(in, out)
  weight attn.c_attn.weight_scale : f32[{D // G}, {3 * D}]
  weight attn.c_attn.bias : f32[{3 * D}]
  weight attn.c_proj.weight : i4[{D}, {D}] layout(in, out)
  weight attn.c_proj.weight_scale : f32[{D // G}, {D}]
  weight attn.c_proj.bias : f32[{D}]
  weight ln_2.weight : f32[{D}]
  weight ln_2.bias : f32[{D}]
  weight mlp.c_fc.weight : i4[{D}, {F}] layout(in, out)
  weight mlp.c_fc.weight_scale : f32[{D // G}, {F}]
  weight mlp.c_fc.bias : f32[{F}]
  weight mlp.c_proj.weight : i4[{D}, {F}]
  weight mlp.c_proj.weight_scale : f32[{D}, {F // G}]
  weight mlp.c_proj.bias : f32[{D}]
  weight mix.weight : i4[{D}, {D}]
  weight mix.weight_scale : f32[{D}, {D // G}]
  weight head.weight : i4[{V}, {D}]
  weight head.weight_scale : f32[{V}, {D // G_HEAD}]
  state past.key : f32[B, L, {D}]
  state past.value : f32[B, L, {D}]
  x = embedding(ids, wte) + embedding(positions(S), wpe)
  x = x + self_attention(layer_norm(x, ln_1), heads = {H}, qkv = attn.c_attn,
                         out = attn.c_proj, mask = causal, cache = past)
  h = layer_norm(x, ln_2)
  x = x + linear(gelu(linear(h, mlp.c_fc), approximate = tanh), mlp.c_proj)
  x = linear(x, mix)
  output logits = linear(x, head)
}}
"""

# (name, shape as stored in f32, stored [in, out], group).
QUANTIZED = (("attn.c_attn.weight", (D, 3 * D), True, G), ("attn.c_proj.weight", (D, D), True, G),
             ("mlp.c_fc.weight", (D, F), True, G), ("mlp.c_proj.weight", (D, F), False, G),
             ("mix.weight", (D, D), False, G), ("head.weight", (V, D), False, G_HEAD))


def quantize4(w, in_out, group):
    """The bytes and scales `attnc quantize --bits 4` must write
    (docs/language.md): per group of `group` inputs of an output, scale =
    max|w| / 7 in f32 (1 for zeros), code = clip(rint(w / scale), -7, 7) + 8,
    two codes of consecutive inputs per byte, the even one low; bytes and
    scales laid out as the matrix is, its `in` divided by 2 or the group."""
    m = (w.T if in_out else w).astype(np.float64)          # [out, in]
    out, n = m.shape
    grouped = np.abs(m).reshape(out, n // group, group).max(axis=2)
    scale = np.where(grouped > 0, (grouped / 7).astype(np.float32), np.float32(1))
    s = np.repeat(scale.astype(np.float64), group, axis=1)
    codes = (np.clip(np.rint(m / s), -7, 7) + 8).astype(np.uint8)
    packed = codes[:, 0::2] | (codes[:, 1::2] << 4)
    return (packed.T, scale.T) if in_out else (packed, scale)


def dequantize4(packed, scale, in_out, group, nibbles="right", groups="right"):
    """float64 [out, in] of a stored 4-bit matrix: `nibbles` "swapped" reads
    the high nibble as the even input; `groups` "shifted" gives each input
    the next group's scale (cyclically); "ignored" no scale at all."""
    b = (packed.T if in_out else packed).astype(np.int64)   # [out, in / 2]
    s = (scale.T if in_out else scale).astype(np.float64)   # [out, in / G]
    lo, hi = b & 15, b >> 4
    if nibbles == "swapped":
        lo, hi = hi, lo
    q = np.empty((b.shape[0], 2 * b.shape[1]))
    q[:, 0::2], q[:, 1::2] = lo, hi
    q -= 8
    if groups == "ignored":
        return q
    if groups == "shifted":
        s = np.roll(s, -1, axis=1)
    return q * np.repeat(s, group, axis=1)


def random_weights(rng):
    def u(*shape, bound=None):
        bound = bound or 1 / math.sqrt(shape[0] if len(shape) == 2 else 1)
        return rng.uniform(-bound, bound, shape).astype(np.float32)
    w = {"wte.weight": u(V, D, bound=0.5), "wpe.weight": u(S_MAX, D, bound=0.1),
         "ln_1.weight": rng.uniform(0.9, 1.1, D).astype(np.float32),
         "ln_1.bias": u(D, bound=0.02), "ln_2.weight": rng.uniform(0.9, 1.1, D).astype(np.float32),
         "ln_2.bias": u(D, bound=0.02),
         "attn.c_attn.bias": u(3 * D, bound=0.02), "attn.c_proj.bias": u(D, bound=0.02),
         "mlp.c_fc.bias": u(F, bound=0.02), "mlp.c_proj.bias": u(D, bound=0.02)}
    for name, shape, in_out, group in QUANTIZED:
        # Groups of very different ranges, so a scale read for the wrong
        # group, or not at all, is far off.
        out, n = (shape[1], shape[0]) if in_out else shape
        ranges = np.exp(rng.uniform(-2, 1, (out, n // group))) / math.sqrt(D)
        f = rng.uniform(-1, 1, (out, n)) * np.repeat(ranges, group, axis=1)
        w[name] = (f.T if in_out else f).astype(np.float32)
    return w


def reference_weights(stored, nibbles="right", groups="right"):
    w = {k: v.astype(np.float64) for k, v in stored.items()
         if not k.endswith("_scale") and v.dtype != np.uint8}
    for name, _, in_out, group in QUANTIZED:
        w[name] = dequantize4(stored[name], stored[name + "_scale"], in_out, group,
                              nibbles, groups)
    return w


@pytest.fixture(scope="module")
def q4model(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("quantized4")
    rng = np.random.default_rng(2504)
    f32 = random_weights(rng)
    st.save(str(tmp / "f32.safetensors"), f32)
    # The file the model reads, made by attnc quantize itself: groups of 32,
    # then the head in groups of 16 (the other tensors copied as they are).
    subprocess.run([attnc_exe(), "quantize", str(tmp / "f32.safetensors"),
                    "-o", str(tmp / "mid.safetensors"), "--bits", "4",
                    "--only", r"^(attn\.c_(attn|proj)|mlp\.c_(fc|proj)|mix)\.weight$",
                    "--in-out", r"^attn\.|c_fc"], check=True)
    subprocess.run([attnc_exe(), "quantize", str(tmp / "mid.safetensors"),
                    "-o", str(tmp / "q4.safetensors"), "--bits", "4", "--group", str(G_HEAD),
                    "--only", r"^head\.weight$"], check=True)
    stored = st.load(str(tmp / "q4.safetensors"))
    (tmp / "q4gpt.attn").write_text(MODEL)
    lib = attnc.compile(tmp / "q4gpt.attn", tmp / "q4gpt.so")
    model = attnc.load(lib, weights=str(tmp / "q4.safetensors"), threads=1)
    return model, stored, f32


# f32 arithmetic against float64, as test_quantized.py's int8 (sums of at
# most F = 128 products of O(1) terms through five GEMMs, attention and two
# norms; each weight is (q - 8) * scale rounded to f32 once in the kernel,
# within 2^-24 relative of the float64 product). The logits are |y| <= ~1
# and we see errors of ~3e-7; 1e-5 leaves a margin of ~30 and is far below
# what wrong nibbles, groups or scales move the reference (0.1 and more,
# asserted in every test).
TOL = 1e-5
WRONG = {"nibbles swapped": dict(nibbles="swapped"), "next group's scale": dict(groups="shifted"),
         "scales ignored": dict(groups="ignored")}


def check(got, ref_of):
    want = ref_of()
    err = np.abs(got - want).max()
    assert err <= TOL, f"max abs error {err:.3e} > {TOL}"
    for what, wrong in WRONG.items():
        miss = np.abs(ref_of(**wrong) - want).max()
        assert miss > 1000 * TOL, f"{what}: the reference moves only {miss:.3e}"
        assert np.abs(got - ref_of(**wrong)).max() > 100 * TOL, what
    return err


def test_prefill_gemm_against_dequantized_reference(q4model):
    model, stored, _ = q4model
    rng = np.random.default_rng(1)
    ids = rng.integers(0, V, size=(2, 7)).astype(np.int32)
    states = model.new_state(batch=2, capacity=S_MAX)
    out = model.prefill({"ids": ids}, states)
    err = check(out["logits"], lambda **k: forward(reference_weights(stored, **k), ids))
    print(f"prefill B=2 S=7: max abs error {err:.3e}")


def test_decode_gemv_against_dequantized_reference(q4model):
    model, stored, _ = q4model
    rng = np.random.default_rng(2)
    ids = rng.integers(0, V, size=(1, 12)).astype(np.int32)
    states = model.new_state(batch=1, capacity=S_MAX)
    model.prefill({"ids": ids[:, :5]}, states)
    worst = 0.0
    for p in range(5, 12):
        out = model.decode({"ids": ids[:, p:p + 1]}, states, position=p)
        worst = max(worst, check(out["logits"][:, -1],
                                 lambda **k: forward(reference_weights(stored, **k),
                                                     ids[:, :p + 1])[:, -1]))
    print(f"decode S=1, positions 5..11: max abs error {worst:.3e}")


def test_decode_batch_of_sequences(q4model):
    """B = 8 sequences decode at once: the decode GEMM's tiles of sequences
    (scheduleDecodeGemm's specialization) over 4-bit panels."""
    model, stored, _ = q4model
    rng = np.random.default_rng(3)
    ids = rng.integers(0, V, size=(8, 6)).astype(np.int32)
    states = model.new_state(batch=8, capacity=S_MAX)
    model.prefill({"ids": ids[:, :4]}, states)
    for p in range(4, 6):
        out = model.decode({"ids": ids[:, p:p + 1]}, states, position=p)
        check(out["logits"][:, -1],
              lambda **k: forward(reference_weights(stored, **k), ids[:, :p + 1])[:, -1])


def test_quantize4_round_trip(q4model):
    _, stored, f32 = q4model
    for name, shape, in_out, group in QUANTIZED:
        b, s = stored[name], stored[name + "_scale"]
        out, n = (shape[1], shape[0]) if in_out else shape
        assert b.dtype == np.uint8
        assert b.shape == ((n // 2, out) if in_out else (out, n // 2))
        assert s.dtype == np.float32
        assert s.shape == ((n // group, out) if in_out else (out, n // group))
        want_b, want_s = quantize4(f32[name], in_out, group)
        np.testing.assert_array_equal(s, want_s)
        np.testing.assert_array_equal(b, want_b)
        # Code 0 (-8) is never written: the range is symmetric.
        assert ((b & 15) > 0).all() and ((b >> 4) > 0).all()
        d = dequantize4(b, s, in_out, group)
        w = (f32[name].T if in_out else f32[name]).astype(np.float64)
        half = np.repeat((s.T if in_out else s).astype(np.float64), group, axis=1) / 2
        assert (np.abs(d - w) <= half * (1 + 1e-6)).all(), name
    for name, w in f32.items():
        if name not in {n for n, *_ in QUANTIZED}:
            np.testing.assert_array_equal(stored[name], w)


def test_quantize4_zero_groups(tmp_path):
    z = np.zeros((2, 8), np.float32)
    z[1, 4:] = [1, -2, 3, -7]
    st.save(str(tmp_path / "a.safetensors"), {"z": z})
    subprocess.run([attnc_exe(), "quantize", str(tmp_path / "a.safetensors"), "-o",
                    str(tmp_path / "b.safetensors"), "--bits", "4", "--group", "4"], check=True)
    b = st.load(str(tmp_path / "b.safetensors"))
    # A group of zeros has scale 1 and codes 8 (0); [1, -2, 3, -7] scale 1 too.
    np.testing.assert_array_equal(b["z_scale"], np.float32([[1, 1], [1, 1]]))
    np.testing.assert_array_equal(b["z"], np.uint8([[0x88, 0x88, 0x88, 0x88],
                                                    [0x88, 0x88, 0x69, 0x1b]]))


def test_quantize4_errors(tmp_path):
    w = np.ones((4, 64), np.float32)
    w[2, 33] = np.nan
    err = quantize_fails(tmp_path, {"a.weight": w}, "--bits", "4")
    assert "tensor 'a.weight'" in err and "NaN at [2, 33]" in err and "4-bit" in err, err
    err = quantize_fails(tmp_path, {"a.weight": np.ones((4, 48), np.float32)}, "--bits", "4")
    assert "tensor 'a.weight'" in err and "48 inputs" in err and "groups of 32" in err, err
    # [in, out]: the inputs are the rows.
    err = quantize_fails(tmp_path, {"a.weight": np.ones((40, 64), np.float32)}, "--bits", "4",
                         "--in-out", "a")
    assert "40 inputs" in err and "[in, out]" in err, err
    err = quantize_fails(tmp_path, {"a.weight": np.ones((4, 9), np.float32)}, "--bits", "4",
                         "--group", "3")
    assert "9 inputs" in err and "bytes of two" in err, err
    err = quantize_fails(tmp_path, {"a.weight": np.ones((4, 64), np.float32)}, "--bits", "3")
    assert "--bits 3" in err, err
    err = quantize_fails(tmp_path, {"a.weight": np.ones((4, 64), np.float32)}, "--group", "16")
    assert "--group applies to --bits 4" in err, err


def test_imported_llama_4bit_matches_its_dequantized_f32_twin(tmp_path):
    """test_quantized.py's imported Llama, its projections and MLP quantized
    with `attnc quantize --bits 4` (groups of 16: two per input row of 32):
    q, k and v join into one GEMM and gate and up interleave, each with its
    group scales; the scales and the nibbles must follow the rows."""
    source, err, scale = imported_against_twin(
        tmp_path, "llama", ["--bits", "4", "--group", "16", *LLAMA_MATRICES], "i4",
        lambda name, q, s: dequantize4(q, s, False, 16))
    assert "q_proj.weight         : i4[32, 32]" in source
    assert "gate_proj.weight_scale : f32[64, 2]" in source
    # Both in f32, each weight (q - 8) * scale rounded once: they differ by
    # the order of the sums, ~1e-7 of the logits.
    assert err <= 1e-5 * scale, f"max abs error {err:.3e} (logits up to {scale:.3f})"


def test_odd_group_scales_each_weight(tmp_path):
    """Groups of 3 inputs (odd: a byte's two inputs may belong to two
    groups) take the per-weight scaling (what GPUs run too) instead of the
    CPUs' per-group sums; against float64 of the dequantized matrix, and far
    from the next group's scales."""
    rng = np.random.default_rng(7)
    n_out, n_in, group = 40, 12, 3
    ranges = np.exp(rng.uniform(-2, 1, (n_out, n_in // group)))
    w = (rng.uniform(-1, 1, (n_out, n_in)) * np.repeat(ranges, group, axis=1)).astype(np.float32)
    st.save(str(tmp_path / "f.safetensors"), {"fc.weight": w})
    subprocess.run([attnc_exe(), "quantize", str(tmp_path / "f.safetensors"), "-o",
                    str(tmp_path / "q.safetensors"), "--bits", "4", "--group", str(group)],
                   check=True)
    stored = st.load(str(tmp_path / "q.safetensors"))
    assert stored["fc.weight_scale"].shape == (n_out, n_in // group)
    (tmp_path / "m.attn").write_text(f"""\
model odd {{
  dim B, S <= 8
  input x : f32[B, S, {n_in}]
  weight fc.weight : i4[{n_out}, {n_in}]
  weight fc.weight_scale : f32[{n_out}, {n_in // group}]
  output y = linear(x, fc)
}}
""")
    lib = attnc.compile(tmp_path / "m.attn", tmp_path / "m.so")
    x = rng.standard_normal((2, 5, n_in)).astype(np.float32)
    with attnc.load(lib, weights=str(tmp_path / "q.safetensors")) as m:
        got = m(x=x)["y"]
    ref = lambda **k: x.astype(np.float64) @ dequantize4(
        stored["fc.weight"], stored["fc.weight_scale"], False, group, **k).T
    err = np.abs(got - ref()).max()
    assert err <= 1e-5, err
    assert np.abs(got - ref(groups="shifted")).max() > 0.1
    assert np.abs(got - ref(nibbles="swapped")).max() > 0.1
