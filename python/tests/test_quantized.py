"""int8 weight-only quantization (issue 25, item 2): `attnc quantize` and i8
linear weights, against float64 numpy references.

The numeric tests compare a model whose linear matrices are i8 (with their
per-output-channel scales) with a float64 forward of the DEQUANTIZED weights
`scale[o] * q[o, :]`: quantization error is not measured here (the weights
are what they are), only the kernels' f32 arithmetic, so the f32 tolerance
applies. Each test also checks that its tolerance tells the right weights
from wrong ones: a reference that ignores the scales, or applies them per
input channel, must miss by far more than the tolerance.
"""

import math
import os
import pathlib
import subprocess

import numpy as np
import pytest

import attnc
import safetensors_io as st

D, F, V, H, S_MAX = 64, 128, 48, 4, 32

MODEL = f"""\
model qgpt {{
  dim B, S <= {S_MAX}, L <= {S_MAX}
  input ids : i32[B, S]
  weight wte.weight : f32[{V}, {D}]
  weight wpe.weight : f32[{S_MAX}, {D}]
  weight ln_1.weight : f32[{D}]
  weight ln_1.bias : f32[{D}]
  weight attn.c_attn.weight : i8[{D}, {3 * D}] layout(in, out)
  weight attn.c_attn.weight_scale : f32[{3 * D}]
  weight attn.c_attn.bias : f32[{3 * D}]
  weight attn.c_proj.weight : i8[{D}, {D}] layout(in, out)
  weight attn.c_proj.weight_scale : f32[{D}]
  weight attn.c_proj.bias : f32[{D}]
  weight ln_2.weight : f32[{D}]
  weight ln_2.bias : f32[{D}]
  weight mlp.c_fc.weight : i8[{D}, {F}] layout(in, out)
  weight mlp.c_fc.weight_scale : f32[{F}]
  weight mlp.c_fc.bias : f32[{F}]
  weight mlp.c_proj.weight : i8[{D}, {F}]
  weight mlp.c_proj.weight_scale : f32[{D}]
  weight mlp.c_proj.bias : f32[{D}]
  weight mix.weight : i8[{D}, {D}]
  weight mix.weight_scale : f32[{D}]
  weight head.weight : i8[{V}, {D}]
  weight head.weight_scale : f32[{V}]
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

# (name, shape, stored [in, out]) of the quantized matrices.
QUANTIZED = (("attn.c_attn.weight", (D, 3 * D), True), ("attn.c_proj.weight", (D, D), True),
             ("mlp.c_fc.weight", (D, F), True), ("mlp.c_proj.weight", (D, F), False),
             ("mix.weight", (D, D), False), ("head.weight", (V, D), False))


def attnc_exe():
    return attnc.find_attnc()


def quantize(w, in_out):
    """The int8 and scales `attnc quantize` must write (docs/language.md)."""
    rows = w.T if in_out else w
    m = np.abs(rows.astype(np.float64)).max(axis=1)
    scale = np.where(m > 0, (m / 127).astype(np.float32), np.float32(1))
    q = np.clip(np.rint(rows / scale[:, None].astype(np.float64)), -127, 127).astype(np.int8)
    return (q.T if in_out else q), scale


def dequantize(q, scale, in_out):
    q = q.astype(np.float64)
    s = scale.astype(np.float64)
    return q * s[None, :] if in_out else q * s[:, None]


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
    for name, shape, in_out in QUANTIZED:
        # Rows (output channels) of very different ranges: a scale applied to
        # the wrong channel, or not at all, is far off.
        outs = shape[1] if in_out else shape[0]
        ranges = np.exp(rng.uniform(-2, 1, outs)).astype(np.float32) / math.sqrt(D)
        f = rng.uniform(-1, 1, shape).astype(np.float32)
        f = f * (ranges[None, :] if in_out else ranges[:, None])
        w[name] = f
    return w


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def layer_norm(x, g, b):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * g + b


def attention_block(x, w, heads):
    """x plus float64 causal self-attention of layer_norm(x, ln_1) with the
    packed Q|K|V `attn.c_attn` and the projection `attn.c_proj` of `w`
    (matrices [out, in]), biases included."""
    B, S, D = x.shape
    h = layer_norm(x, w["ln_1.weight"], w["ln_1.bias"])
    qkv = h @ w["attn.c_attn.weight"].T + w["attn.c_attn.bias"]
    hd = D // heads
    q, k, v = (qkv[..., i * D:(i + 1) * D].reshape(B, S, heads, hd).transpose(0, 2, 1, 3)
               for i in range(3))
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(hd)
    scores = np.where(np.tril(np.ones((S, S), bool)), scores, -np.inf)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    a = (p @ v).transpose(0, 2, 1, 3).reshape(B, S, D)
    return x + a @ w["attn.c_proj.weight"].T + w["attn.c_proj.bias"]


def forward(w, ids):
    """float64 logits [B, S, V] of the whole sequence; `w` holds float64
    matrices, each [out, in] (the quantized ones as reference_weights gives
    them, all of them here)."""
    S = ids.shape[1]
    x = attention_block(w["wte.weight"][ids] + w["wpe.weight"][:S], w, H)
    h = layer_norm(x, w["ln_2.weight"], w["ln_2.bias"])
    u = gelu_tanh(h @ w["mlp.c_fc.weight"].T + w["mlp.c_fc.bias"])
    x = x + u @ w["mlp.c_proj.weight"].T + w["mlp.c_proj.bias"]
    x = x @ w["mix.weight"].T
    return x @ w["head.weight"].T


def reference_weights(stored, scales="right"):
    """float64 weights of the file `stored`, the i8 matrices dequantized
    [out, in] with their scales ("right"), without ("ignored") or with them
    applied along the input dim ("per_input", where the dims agree)."""
    w = {k: v.astype(np.float64) for k, v in stored.items() if not k.endswith("_scale")}
    for name, shape, in_out in QUANTIZED:
        q = stored[name].astype(np.float64)
        q = q.T if in_out else q                       # [out, in]
        s = stored[name + "_scale"].astype(np.float64)
        if scales == "right":
            w[name] = q * s[:, None]
        elif scales == "ignored":
            w[name] = q
        elif q.shape[0] == q.shape[1]:
            w[name] = q * s[None, :]
        else:
            w[name] = q * s[:, None]
    return w


@pytest.fixture(scope="module")
def qmodel(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("quantized")
    rng = np.random.default_rng(25)
    f32 = random_weights(rng)
    st.save(str(tmp / "f32.safetensors"), f32)
    # The file the model reads, made by attnc quantize itself.
    subprocess.run([attnc_exe(), "quantize", str(tmp / "f32.safetensors"),
                    "-o", str(tmp / "int8.safetensors"),
                    "--only", r"^(attn\.c_(attn|proj)|mlp\.c_(fc|proj)|mix|head)\.weight$",
                    "--in-out", r"^attn\.|c_fc"], check=True)
    stored = st.load(str(tmp / "int8.safetensors"))
    (tmp / "qgpt.attn").write_text(MODEL)
    lib = attnc.compile(tmp / "qgpt.attn", tmp / "qgpt.so")
    model = attnc.load(lib, weights=str(tmp / "int8.safetensors"), threads=1)
    return model, stored, f32


# f32 arithmetic against float64: sums of at most F = 128 products of O(1)
# terms (layer-normed activations, |w| <= ~2.7 / sqrt(D) per channel)
# through five GEMMs, attention and two norms, each f32 op within 2^-24
# relative. The logits are |y| <= ~1.2 here and we see errors of ~4e-7;
# 1e-5 leaves a margin of ~25 and is still ~70000x below the error of the
# scales applied per input channel (0.7) and ~1e16x below ignoring them
# (checked below, in every test).
TOL = 1e-5


def check(got, stored, ref_of):
    want = ref_of("right")
    err = np.abs(got - want).max()
    assert err <= TOL, f"max abs error {err:.3e} > {TOL}"
    for wrong in ("ignored", "per_input"):
        miss = np.abs(ref_of(wrong) - want).max()
        assert miss > 100 * TOL, f"scales {wrong}: the reference moves only {miss:.3e}"
    return err


def test_prefill_gemm_against_dequantized_reference(qmodel):
    model, stored, _ = qmodel
    rng = np.random.default_rng(1)
    ids = rng.integers(0, V, size=(2, 7)).astype(np.int32)
    states = model.new_state(batch=2, capacity=S_MAX)
    out = model.prefill({"ids": ids}, states)
    err = check(out["logits"], stored,
                lambda s: forward(reference_weights(stored, s), ids))
    print(f"prefill B=2 S=7: max abs error {err:.3e}")


def test_decode_gemv_against_dequantized_reference(qmodel):
    model, stored, _ = qmodel
    rng = np.random.default_rng(2)
    ids = rng.integers(0, V, size=(1, 12)).astype(np.int32)
    states = model.new_state(batch=1, capacity=S_MAX)
    model.prefill({"ids": ids[:, :5]}, states)
    worst = 0.0
    for p in range(5, 12):
        out = model.decode({"ids": ids[:, p:p + 1]}, states, position=p)
        worst = max(worst, check(out["logits"][:, -1], stored,
                                 lambda s: forward(reference_weights(stored, s),
                                                   ids[:, :p + 1])[:, -1]))
    print(f"decode S=1, positions 5..11: max abs error {worst:.3e}")


def test_quantize_round_trip(qmodel, tmp_path):
    _, stored, f32 = qmodel
    for name, shape, in_out in QUANTIZED:
        q, s = stored[name], stored[name + "_scale"]
        assert q.dtype == np.int8 and q.shape == shape
        assert s.dtype == np.float32 and s.shape == ((shape[1] if in_out else shape[0]),)
        assert q.min() >= -127
        want_q, want_s = quantize(f32[name], in_out)
        np.testing.assert_array_equal(s, want_s)
        np.testing.assert_array_equal(q, want_q)
        d = dequantize(q, s, in_out)
        half = (s[None, :] if in_out else s[:, None]).astype(np.float64) / 2
        assert (np.abs(d - f32[name]) <= half * (1 + 1e-6)).all(), name
    # Everything else is copied as it was.
    for name, w in f32.items():
        if name not in dict((n, 0) for n, _, _ in QUANTIZED):
            assert stored[name].dtype == w.dtype
            np.testing.assert_array_equal(stored[name], w)


def test_a_square_matrix_quantized_the_other_way_is_refused(qmodel, tmp_path):
    """attn.c_proj.weight is square and declared layout(in, out); quantized
    without it in --in-out, its scales go with its inputs, which its shape
    cannot tell. The file records how attnc quantize read it: the runtime
    refuses it at load (the library says how it reads each quantized
    matrix), and attnc refuses it when embedding it, each naming the
    matrix and the fix. mix.weight, square and [out, in], is read as
    quantized (recorded "out, in"), so it is not named."""
    tmp = pathlib.Path(qmodel[0].info.path).parent
    bad = tmp_path / "bad.safetensors"
    subprocess.run([attnc_exe(), "quantize", str(tmp / "f32.safetensors"), "-o", str(bad),
                    "--only", r"^(attn\.c_(attn|proj)|mlp\.c_(fc|proj)|mix|head)\.weight$",
                    "--in-out", r"c_attn|c_fc"], check=True)
    want = ("weight 'attn.c_proj.weight' in '" + str(bad) + "' was quantized as stored "
            "[out, in] but the model reads it [in, out], so its scales are on the wrong "
            "axis: quantize it again with it in attnc quantize's --in-out")
    with pytest.raises(attnc.Error) as load:
        attnc.load(tmp / "qgpt.so", weights=str(bad))
    assert want in str(load.value) and "mix.weight" not in str(load.value)
    with pytest.raises(attnc.CompileError) as embed:
        attnc.compile(tmp / "qgpt.attn", tmp_path / "embedded.so", weights=bad)
    assert want in str(embed.value) and "mix.weight" not in str(embed.value)
    assert not (tmp_path / "embedded.so").exists()


def test_quantize_zero_rows_bf16_and_default_choice(tmp_path):
    z = np.zeros((3, 5), np.float32)
    z[1] = [1, -2, 3, -4, 127]
    bf = st.to_bf16(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
    st.save(str(tmp_path / "a.safetensors"),
            {"z": z, "bf": bf, "vec": np.ones(4, np.float32), "ids": np.arange(6, dtype=np.int32).reshape(2, 3)})
    subprocess.run([attnc_exe(), "quantize", str(tmp_path / "a.safetensors"),
                    "-o", str(tmp_path / "b.safetensors")], check=True)
    b = st.load(str(tmp_path / "b.safetensors"))
    # Every 2-D float tensor by default; a zero row has scale 1 and zeros.
    assert sorted(b) == ["bf", "bf_scale", "ids", "vec", "z", "z_scale"]
    np.testing.assert_array_equal(b["z_scale"], np.float32([1, 1, 1]))
    np.testing.assert_array_equal(b["z"][1], [1, -2, 3, -4, 127])
    np.testing.assert_array_equal(b["z"][0], 0)
    want_q, want_s = quantize(bf.to_float32(), False)
    np.testing.assert_array_equal(b["bf"], want_q)
    np.testing.assert_array_equal(b["bf_scale"], want_s)


def quantize_fails(tmp_path, tensors, *args, input_name="in.safetensors"):
    src = tmp_path / input_name
    if tensors is not None:
        st.save(str(src), tensors)
    out = tmp_path / "out.safetensors"
    p = subprocess.run([attnc_exe(), "quantize", str(src), "-o", str(out), *args],
                       capture_output=True, text=True)
    assert p.returncode == 1, p.stderr
    assert not out.exists(), "a failed quantize must write nothing"
    assert not [f for f in os.listdir(tmp_path) if ".tmp" in f], "temporary files left"
    return p.stderr


def test_quantize_errors(tmp_path):
    w = np.ones((4, 3), np.float32)
    w[2, 1] = np.nan
    err = quantize_fails(tmp_path, {"a.weight": w})
    assert "tensor 'a.weight'" in err and "NaN at [2, 1]" in err, err
    w[2, 1] = -np.inf
    err = quantize_fails(tmp_path, {"a.weight": w})
    assert "-Inf at [2, 1]" in err, err
    err = quantize_fails(tmp_path, {"a.weight": np.ones((2, 2), np.float32),
                                    "a.bias": np.ones(2, np.float32)}, "--only", r"^a\.")
    assert "chooses tensor 'a.bias'" in err and "F32[2]" in err, err
    err = quantize_fails(tmp_path, {"a.weight": np.ones((2, 2), np.float32),
                                    "a.weight_scale": np.ones(2, np.float32)},
                         "--only", r"weight$")
    assert "'a.weight_scale'" in err and "already" in err, err
    err = quantize_fails(tmp_path, {"a.weight": np.ones((2, 2), np.float32)}, "--only", "nothing")
    assert "matches no tensor" in err, err
    err = quantize_fails(tmp_path, None, input_name="missing.safetensors")
    assert "missing.safetensors" in err, err


# Twin source -> its library: twins of one model (the same f32
# declarations, e.g. the int8 and 4-bit tests') are compiled once.
_twin_libraries = {}


def imported_against_twin(tmp_path, fixture, quantize_args, dtype, dequantize):
    """test/import's checkpoint `fixture`, quantized by `attnc quantize
    *quantize_args` and imported. Returns (the import's source, max |logit
    error|, the logits' max |value|) of its prefill and decodes against the
    same model with every `dtype` matrix declared f32 and holding
    `dequantize(name, stored, scale)`: the scales must follow the rows
    through joins, interleavings and tables."""
    fixture = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "test", "import", "fixtures", fixture)
    quantized = tmp_path / "quantized"
    quantized.mkdir()
    for f in ("config.json", "generation_config.json"):
        (quantized / f).write_bytes(open(os.path.join(fixture, f), "rb").read())
    subprocess.run([attnc_exe(), "quantize", os.path.join(fixture, "model.safetensors"),
                    "-o", str(quantized / "model.safetensors"), *quantize_args], check=True)
    source = subprocess.run([attnc_exe(), "import", str(quantized)], check=True,
                            capture_output=True, text=True).stdout
    (tmp_path / "quantized.attn").write_text(source)
    # The twin: the quantized declarations as f32, their scales gone (and
    # the comments, which name this test's directory); the weights
    # dequantized.
    twin = "\n".join(line.replace(f": {dtype}[", ": f32[") for line in source.splitlines()
                     if "weight_scale" not in line and not line.startswith("#")) + "\n"
    (tmp_path / "f32.attn").write_text(twin)
    raw = st.load(str(quantized / "model.safetensors"))
    deq = {k: (dequantize(k, v, raw[k + "_scale"]).astype(np.float32)
               if k + "_scale" in raw else v)
           for k, v in raw.items() if not k.endswith("_scale")}
    st.save(str(tmp_path / "f32.safetensors"), deq)
    outs = {}
    for name, weights in (("quantized", quantized / "model.safetensors"),
                          ("f32", tmp_path / "f32.safetensors")):
        lib = _twin_libraries.get(twin) if name == "f32" else None
        lib = lib or attnc.compile(tmp_path / f"{name}.attn", tmp_path / f"{name}.so")
        if name == "f32":
            _twin_libraries[twin] = lib
        with attnc.load(lib, weights=str(weights), threads=1) as m:
            ids = np.random.default_rng(3).integers(0, 100, size=(2, 9)).astype(np.int32)
            states = m.new_state(batch=2, capacity=16)
            logits = [m.prefill({"ids": ids[:, :6]}, states)["logits"]]
            for p in range(6, 9):
                logits.append(m.decode({"ids": ids[:, p:p + 1]}, states, position=p)["logits"])
            outs[name] = np.concatenate(logits, axis=1)
    return (source, float(np.abs(outs["quantized"] - outs["f32"]).max()),
            float(np.abs(outs["f32"]).max()))


# test/import's Llama (bf16; separate q, k, v that attnc joins into one GEMM,
# and a gated MLP whose gate and up it interleaves): its attention and MLP
# matrices.
LLAMA_MATRICES = ["--only", r"layers\.[0-9]+\.(self_attn|mlp)\.[a-z]+_proj\.weight$"]


def test_imported_llama_int8_matches_its_dequantized_f32_twin(tmp_path):
    """The imported Llama with i8 matrices (`attnc import` declares the I8
    matrices i8 with their per-output scales) against its dequantized twin."""
    source, err, scale = imported_against_twin(
        tmp_path, "llama", LLAMA_MATRICES, "i8",
        lambda name, q, s: q.astype(np.float64) * s[:, None])
    assert "q_proj.weight         : i8[32, 32]" in source
    assert "gate_proj.weight_scale : f32[64]" in source
    # Both in f32: they differ by the rounding of scale * q to f32 and the
    # order of the sums (the scale after them), ~1e-7 of the logits. Gate's
    # and up's scales swapped in the interleaving miss by 0.8 of 4.
    assert err <= 1e-5 * scale, f"max abs error {err:.3e} (logits up to {scale:.3f})"
