"""Quantized token tables (issue 25): a head tied to its token table, the
table i8 (one scale per row) or i4 (one scale per group of G features of a
row), read by `embedding` and by the head `linear(h, wte.weight)` with the
same bytes and scales; against float64 numpy references.

As test_quantized.py: the model's logits against a float64 forward of the
DEQUANTIZED table (quantization error is not measured, only the kernels' f32
arithmetic), its file made by `attnc quantize` itself. Each test checks that
its tolerance tells the right table from wrong ones, in the embedding alone,
in the head alone and in both: scales ignored, each row read with the next
row's scales, and (4 bits) each feature with the next group's scale. Then
imported checkpoints quantized whole by `attnc quantize` (every matrix,
tables included): GPT-2 (tied) and Llama (untied: its input table and its
head both quantized) against their dequantized f32 twins.
"""

import math
import subprocess

import numpy as np
import pytest

import attnc
import safetensors_io as st
from test_quantized import attention_block, attnc_exe, imported_against_twin, layer_norm
from test_quantized4 import dequantize4

# V is not a multiple of the head's panel width, so the head's last panel is
# padded; D holds two groups of G.
D, V, H, S_MAX, G = 64, 100, 4, 32, 32


def model_text(table):
    """A one-layer GPT-2-style decoder with KV caches whose head is tied to
    its token table, declared `table` ("i8" or "i4") with its scales."""
    scale = f"{V}" if table == "i8" else f"{V}, {D // G}"
    return f"""\
model qtied {{
  dim B, S <= {S_MAX}, L <= {S_MAX}
  input ids : i32[B, S]
  weight wte.weight : {table}[{V}, {D}]
  weight wte.weight_scale : f32[{scale}]
  weight wpe.weight : f32[{S_MAX}, {D}]
  weight ln_1.weight : f32[{D}]
  weight ln_1.bias : f32[{D}]
  weight attn.c_attn.weight : f32[{D}, {3 * D}] layout(in, out)
  weight attn.c_attn.bias : f32[{3 * D}]
  weight attn.c_proj.weight : f32[{D}, {D}] layout(in, out)
  weight attn.c_proj.bias : f32[{D}]
  weight ln_f.weight : f32[{D}]
  weight ln_f.bias : f32[{D}]
  state past.key : f32[B, L, {D}]
  state past.value : f32[B, L, {D}]
  x = embedding(ids, wte) + embedding(positions(S), wpe)
  x = x + self_attention(layer_norm(x, ln_1), heads = {H}, qkv = attn.c_attn,
                         out = attn.c_proj, mask = causal, cache = past)
  output logits = linear(layer_norm(x, ln_f), wte.weight)
}}
"""


def random_weights(rng):
    def u(*shape, bound):
        return rng.uniform(-bound, bound, shape).astype(np.float32)
    # Rows (and groups) of very different ranges: a scale of the wrong row
    # or group, or none, is far off.
    ranges = np.exp(rng.uniform(-2, 1, (V, D // G))).astype(np.float32) * 0.5
    table = u(V, D, bound=1) * np.repeat(ranges, G, axis=1)
    return {"wte.weight": table, "wpe.weight": u(S_MAX, D, bound=0.1),
            "ln_1.weight": rng.uniform(0.9, 1.1, D).astype(np.float32),
            "ln_1.bias": u(D, bound=0.02),
            "attn.c_attn.weight": u(D, 3 * D, bound=1 / math.sqrt(D)),
            "attn.c_attn.bias": u(3 * D, bound=0.02),
            "attn.c_proj.weight": u(D, D, bound=1 / math.sqrt(D)),
            "attn.c_proj.bias": u(D, bound=0.02),
            "ln_f.weight": rng.uniform(0.9, 1.1, D).astype(np.float32),
            "ln_f.bias": u(D, bound=0.02)}


def table_of(stored, table, how):
    """float64 [V, D] of the stored table: dequantized right, or with its
    scales "ignored", each row's "next_row"'s, or (i4) each feature's
    "next_group"'s (cyclically)."""
    q, s = stored["wte.weight"], stored["wte.weight_scale"].astype(np.float64)
    if how == "next_row":
        s = np.roll(s, -1, axis=0)
    if table == "i8":
        q = q.astype(np.float64)
        return q if how == "ignored" else q * s[:, None]
    return dequantize4(q, s, False, G, groups={"ignored": "ignored",
                                               "next_group": "shifted"}.get(how, "right"))


def forward(w, emb, head, ids):
    """float64 logits [B, S, V] of the whole sequence, the embedding reading
    the table `emb` and the head `head`."""
    # The model's Conv1D matrices are [in, out]; attention_block takes
    # [out, in].
    w = dict(w, **{k: w[k].T for k in ("attn.c_attn.weight", "attn.c_proj.weight")})
    x = attention_block(emb[ids] + w["wpe.weight"][:ids.shape[1]], w, H)
    return layer_norm(x, w["ln_f.weight"], w["ln_f.bias"]) @ head.T


@pytest.fixture(scope="module", params=["i8", "i4"])
def tied(request, tmp_path_factory):
    table = request.param
    tmp = tmp_path_factory.mktemp(f"tied_{table}")
    f32 = random_weights(np.random.default_rng(25))
    st.save(str(tmp / "f32.safetensors"), f32)
    bits = ["--bits", "4"] if table == "i4" else []
    subprocess.run([attnc_exe(), "quantize", str(tmp / "f32.safetensors"),
                    "-o", str(tmp / "q.safetensors"), "--only", r"^wte\.weight$", *bits],
                   check=True)
    stored = st.load(str(tmp / "q.safetensors"))
    (tmp / "qtied.attn").write_text(model_text(table))
    lib = attnc.compile(tmp / "qtied.attn", tmp / "qtied.so")
    with attnc.load(lib, weights=str(tmp / "q.safetensors"), threads=1) as model:
        yield table, model, stored


# f32 arithmetic against float64: the table's rows dequantized in f32 (one
# rounding), then one attention layer and two norms, the head's 64-term sums
# of O(1) products. Logits here reach |y| ~37 and the errors we see are up
# to ~6e-6 (~1.6e-7 of them: f32 rounding); 5e-5 leaves a margin of ~8 and
# is ~2.6e5x below the smallest wrong table's miss (13: scales ignored in
# the embedding alone), which every test checks exceeds 100x the tolerance.
TOL = 5e-5
WRONG = {"i8": ("ignored", "next_row"), "i4": ("ignored", "next_row", "next_group")}


def check(got, table, stored, ids, last=False):
    """Max |got - reference| within TOL, the reference's logits of every
    position of `ids`, or of its last with `last` (a decode step's)."""
    w = {k: v.astype(np.float64) for k, v in stored.items()}

    def ref(emb, head):
        y = forward(w, emb, head, ids)
        return y[:, -1:] if last else y
    right = table_of(stored, table, "right")
    want = ref(right, right)
    err = np.abs(got - want).max()
    assert err <= TOL, f"max abs error {err:.3e} > {TOL}"
    for how in WRONG[table]:
        bad = table_of(stored, table, how)
        for where, (emb, head) in (("embedding", (bad, right)), ("head", (right, bad)),
                                   ("both", (bad, bad))):
            miss = np.abs(ref(emb, head) - want).max()
            assert miss > 100 * TOL, f"{how} in the {where}: the reference moves only {miss:.3e}"
    return err


def test_prefill_against_dequantized_table(tied):
    table, model, stored = tied
    ids = np.random.default_rng(1).integers(0, V, size=(2, 7)).astype(np.int32)
    states = model.new_state(batch=2, capacity=S_MAX)
    err = check(model.prefill({"ids": ids}, states)["logits"], table, stored, ids)
    print(f"{table} prefill B=2 S=7: max abs error {err:.3e}")


def test_decode_against_dequantized_table(tied):
    """Decode: the head is a GEMV of 2 rows over the table."""
    table, model, stored = tied
    ids = np.random.default_rng(2).integers(0, V, size=(2, 12)).astype(np.int32)
    states = model.new_state(batch=2, capacity=S_MAX)
    model.prefill({"ids": ids[:, :5]}, states)
    worst = 0.0
    for p in range(5, 12):
        out = model.decode({"ids": ids[:, p:p + 1]}, states, position=p)
        worst = max(worst, check(out["logits"], table, stored, ids[:, :p + 1], last=True))
    print(f"{table} decode B=2, positions 5..11: max abs error {worst:.3e}")


def gpt2_dequantize(group):
    """The twin's weights of test/import's GPT-2: its Conv1D matrices
    (`transformer.h.*`) are stored [in, out], its tables [rows, features]."""
    def dequantize(name, q, s):
        in_out = ".h." in name
        if group:
            w = dequantize4(q, s, in_out, group)          # [out, in]
            return w.T if in_out else w
        q, s = q.astype(np.float64), s.astype(np.float64)
        return q * s[None, :] if in_out else q * s[:, None]
    return dequantize


# Both models compute in f32 from the same f32 weight values: they differ by
# the order of the sums (the int8 scale after them) and the rounding of a
# dequantized weight to f32, ~1e-7 of the logits; 1e-5 of the largest.
TWIN_TOL = 1e-5


@pytest.mark.parametrize("bits", [8, 4])
def test_imported_gpt2_quantized_whole(tmp_path, bits):
    """`attnc quantize` without --only on GPT-2: every matrix, the tied
    token table (so the head) and the position table, read quantized by
    the import's model in prefill and decode."""
    group = 16 if bits == 4 else 0
    args = ["--in-out", r"(^|\.)h\.[0-9]+\."] + (["--bits", "4", "--group", "16"] if group else [])
    dtype = "i4" if group else "i8"
    source, err, scale = imported_against_twin(tmp_path, "gpt2", args, dtype,
                                               gpt2_dequantize(group))
    assert f"transformer.wte.weight : {dtype}[100, 32]" in source, source
    assert f"transformer.wpe.weight : {dtype}[32, 32]" in source, source
    assert "output logits = linear(h, transformer.wte.weight)" in source, source
    assert err <= TWIN_TOL * scale, f"max abs error {err:.3e} (logits up to {scale:.3f})"


def test_imported_llama_quantized_whole(tmp_path):
    """Llama's head is its own matrix (lm_head); without --only its input
    table is quantized too, and read one row per token."""
    source, err, scale = imported_against_twin(
        tmp_path, "llama", [], "i8",
        lambda name, q, s: q.astype(np.float64) * s[:, None])
    assert "model.embed_tokens.weight" in source and "embed_tokens.weight_scale" in source
    assert "lm_head.weight_scale : f32[100]" in source, source
    assert err <= TWIN_TOL * scale, f"max abs error {err:.3e} (logits up to {scale:.3f})"
