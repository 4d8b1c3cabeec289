#!/usr/bin/env python3
"""Self-test of the e2e reference (reference.py), the safetensors I/O and the
harness's tables; needs numpy only, not the compiler.

  1. the float64 reference agrees with a naive implementation written with
     explicit Python loops (per batch, head, query, key), on a tiny config
     (d_model 8, heads 2, S 5) for every template variant;
  2. causal masking: query i attends only to keys j <= i; changing a masked
     key/value (a later position) leaves earlier outputs unchanged;
  3. both weight layouts give identical results when the weights are
     transposed; packed and separate Q/K/V agree when the packed weight is the
     concatenation;
  4. safetensors round trip, and a file built byte by byte from the spec;
  5. the tolerance: the reference evaluated in float32 with sequential
     accumulation stays well below run_e2e's tolerance, while typical bugs
     (no mask, wrong scale, heads swapped, dropped bias, tanh GELU) exceed it
     by far;
  6. test/e2e/CMakeLists.txt registers exactly run_e2e.py's configurations.
"""

import json
import math
import os
import re
import struct
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import reference as ref  # noqa: E402
import run_e2e  # noqa: E402
import safetensors_io as st  # noqa: E402

FAILURES = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        FAILURES.append(what)


# ----------------------------------------------------- the naive loop version

def naive_block(spec, W, x):
    """The block with explicit loops over plain Python floats."""
    B, S, D = x.shape
    H, dh = spec.heads, spec.d_model // spec.heads
    n = spec.names()
    X = [[[float(v) for v in x[b, s]] for s in range(S)] for b in range(B)]

    def vec(name):
        return [float(v) for v in W[name]]

    def lin(row, prefix):
        w = W[prefix + ".weight"]
        bias = vec(prefix + ".bias")
        n_out = len(bias)
        out = []
        for o in range(n_out):
            acc = bias[o]
            for i in range(len(row)):
                wv = w[o, i] if spec.layout == "out_in" else w[i, o]
                acc += row[i] * float(wv)
            out.append(acc)
        return out

    def norm(row, prefix):
        g, bb = vec(prefix + ".weight"), vec(prefix + ".bias")
        mean = sum(row) / len(row)
        var = sum((v - mean) ** 2 for v in row) / len(row)
        return [(v - mean) / math.sqrt(var + spec.eps) * g[i] + bb[i]
                for i, v in enumerate(row)]

    def act(v):
        if spec.act == "relu":
            return v if v > 0 else 0.0
        return 0.5 * v * (1.0 + math.erf(v / math.sqrt(2.0)))

    def attn(seq):  # seq: S rows of D
        if spec.qkv == "packed":
            p = [lin(r, n["qkv"]) for r in seq]
            Q = [r[:D] for r in p]
            K = [r[D:2 * D] for r in p]
            V = [r[2 * D:] for r in p]
        else:
            Q = [lin(r, n["q"]) for r in seq]
            K = [lin(r, n["k"]) for r in seq]
            V = [lin(r, n["v"]) for r in seq]
        joined = [[0.0] * D for _ in range(S)]
        for h in range(H):
            c0 = h * dh
            for i in range(S):
                keys = [j for j in range(S) if spec.mask == "none" or j <= i]
                s = {j: sum(Q[i][c0 + t] * K[j][c0 + t] for t in range(dh)) / math.sqrt(dh)
                     for j in keys}
                m = max(s.values())
                e = {j: math.exp(s[j] - m) for j in keys}
                z = sum(e.values())
                for t in range(dh):
                    joined[i][c0 + t] = sum(e[j] / z * V[j][c0 + t] for j in keys)
        return [lin(r, n["out"]) for r in joined]

    def add(a, b):
        return [[u + v for u, v in zip(ra, rb)] for ra, rb in zip(a, b)]

    def ffn(seq):
        return [lin([act(v) for v in lin(r, n["fc1"])], n["fc2"]) for r in seq]

    Y = []
    for b in range(B):
        xb = X[b]
        if spec.style == "pre":
            x1 = add(xb, attn([norm(r, n["ln1"]) for r in xb]))
            y = add(x1, ffn([norm(r, n["ln2"]) for r in x1]))
        else:
            x1 = [norm(r, n["ln1"]) for r in add(xb, attn(xb))]
            y = [norm(r, n["ln2"]) for r in add(x1, ffn(x1))]
        Y.append(y)
    return np.array(Y, dtype=np.float64)


def tiny(**kw):
    base = dict(d_model=8, heads=2, ffn=16, s_max=8)
    base.update(kw)
    return ref.BlockSpec(**base)


def all_tiny_specs():
    for style in ref.STYLES:
        for mask in ref.MASKS:
            for layout in ref.LAYOUTS:
                for qkv in ref.QKVS:
                    for act in ref.ACTS:
                        yield tiny(style=style, mask=mask, layout=layout, qkv=qkv, act=act,
                                   eps=1e-5 if style == "pre" else 1e-12)


def rand_weights(spec, seed):
    return ref.init_weights(spec.weights(), np.random.default_rng(seed))


def rand_x(B, S, D, seed):
    return np.random.default_rng(seed).standard_normal((B, S, D)).astype(np.float32)


# --------------------------------------------------------------------- tests

def test_against_naive():
    x = rand_x(2, 5, 8, 1)
    worst = 0.0
    for i, spec in enumerate(all_tiny_specs()):
        W = rand_weights(spec, 100 + i)
        d = float(np.abs(ref.block_forward(spec, W, x) - naive_block(spec, W, x)).max())
        worst = max(worst, d)
        check(d < 1e-12, f"reference == naive loops: style={spec.style} mask={spec.mask} "
              f"layout={spec.layout} qkv={spec.qkv} act={spec.act}: max diff {d:.1e}")
    # heads 1 and 4 (d_head 8 and 2) too
    for heads in (1, 4):
        spec = tiny(heads=heads, mask="causal")
        W = rand_weights(spec, 7)
        d = float(np.abs(ref.block_forward(spec, W, x) - naive_block(spec, W, x)).max())
        check(d < 1e-12, f"reference == naive loops: heads={heads}: max diff {d:.1e}")


def test_causal():
    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal((2, 5, 8)) for _ in range(3))
    j = 3
    o = ref.attention_core(q, k, v, 2, "causal")
    k2, v2 = k.copy(), v.copy()
    k2[:, j] += 5.0
    v2[:, j] += 5.0
    o2 = ref.attention_core(q, k2, v2, 2, "causal")
    check(np.array_equal(o[:, :j], o2[:, :j]),
          "causal: changing key/value at j=3 leaves queries i<3 unchanged")
    check(np.abs(o[:, j:] - o2[:, j:]).min(axis=-1).min() > 1e-6,
          "causal: ... and changes every query i>=3")
    o_none = ref.attention_core(q, k, v, 2, "none")
    o2_none = ref.attention_core(q, k2, v2, 2, "none")
    check(np.abs(o_none[:, :j] - o2_none[:, :j]).min() > 1e-9,
          "mask none: the same change does reach queries i<3")
    # Row 0 of a causal attention is exactly V's row 0 (one key, weight 1).
    check(np.allclose(o[:, 0], v[:, 0], atol=1e-15, rtol=0), "causal: query 0 sees only key 0")

    # At block level: perturbing token j changes no output before j.
    for style in ref.STYLES:
        spec = tiny(mask="causal", style=style)
        W = rand_weights(spec, 3)
        x = rand_x(2, 5, 8, 4)
        x2 = x.copy()
        x2[:, j] += 1.0
        y, y2 = ref.block_forward(spec, W, x), ref.block_forward(spec, W, x2)
        check(np.array_equal(y[:, :j], y2[:, :j]) and np.abs(y[:, j:] - y2[:, j:]).max() > 1e-3,
              f"causal block ({style}): token 3 affects outputs 3.. only")


def test_layouts_and_packing():
    x = rand_x(2, 5, 8, 5)
    for style in ref.STYLES:
        for qkv in ref.QKVS:
            a = tiny(style=style, qkv=qkv, layout="out_in", mask="causal")
            b = tiny(style=style, qkv=qkv, layout="in_out", mask="causal")
            Wa = rand_weights(a, 6)
            Wb = {k: (w.T.copy() if w.ndim == 2 else w) for k, w in Wa.items()}
            d = float(np.abs(ref.block_forward(a, Wa, x) - ref.block_forward(b, Wb, x)).max())
            check(d < 1e-13, f"layout out_in == in_out with transposed weights "
                  f"({style}, {qkv}): max diff {d:.1e}")
    for style in ref.STYLES:
        for layout in ref.LAYOUTS:
            sep = tiny(style=style, layout=layout, qkv="separate")
            pk = tiny(style=style, layout=layout, qkv="packed")
            Ws = rand_weights(sep, 8)
            ns, npk = sep.names(), pk.names()
            axis = 0 if layout == "out_in" else 1
            Wp = {k: v for k, v in Ws.items()
                  if not any(k.startswith(ns[r] + ".") for r in "qkv")}
            Wp[npk["qkv"] + ".weight"] = np.concatenate(
                [Ws[ns[r] + ".weight"] for r in "qkv"], axis=axis)
            Wp[npk["qkv"] + ".bias"] = np.concatenate([Ws[ns[r] + ".bias"] for r in "qkv"])
            d = float(np.abs(ref.block_forward(sep, Ws, x) - ref.block_forward(pk, Wp, x)).max())
            check(d < 1e-13, f"packed [Q|K|V] == separate ({style}, {layout}): max diff {d:.1e}")


def test_safetensors():
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "t.safetensors")
        t = {"a.weight": np.arange(12, dtype=np.float32).reshape(3, 4) / 7,
             "lengths": np.array([3, -1, 2**31 - 1], dtype=np.int32),
             "scalar": np.array(2.5, dtype=np.float32),
             "empty": np.zeros((0, 4), dtype=np.float32)}
        st.save(p, t, metadata={"format": "pt"})
        back, meta = st.load(p, with_metadata=True)
        same = all(back[k].dtype == v.dtype and back[k].shape == v.shape
                   and np.array_equal(back[k], v) for k, v in t.items())
        check(same and set(back) == set(t) and meta == {"format": "pt"},
              "safetensors round trip (F32, I32, scalar, empty, metadata)")
        raw = open(p, "rb").read()
        (n,) = struct.unpack("<Q", raw[:8])
        check(n % 8 == 0 and json.loads(raw[8:8 + n])["a.weight"]["dtype"] == "F32",
              "safetensors header is JSON padded to 8 bytes")
        # A file written by hand from the format description.
        hdr = json.dumps({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                          "n": {"dtype": "I32", "shape": [1], "data_offsets": [8, 12]}}).encode()
        with open(p, "wb") as f:
            f.write(struct.pack("<Q", len(hdr)) + hdr + struct.pack("<ffi", 1.5, -2.0, 7))
        back = st.load(p)
        check(back["x"].tolist() == [1.5, -2.0] and back["n"].tolist() == [7]
              and back["n"].dtype == np.int32, "safetensors reads a hand-built file")
        with open(p, "wb") as f:
            f.write(struct.pack("<Q", len(hdr)) + hdr + b"\0" * 4)
        try:
            st.load(p)
            check(False, "safetensors rejects truncated data")
        except ValueError:
            check(True, "safetensors rejects truncated data")


def seq_matmul(a, b):
    """float32 matmul accumulating sequentially over k (worst plausible order)."""
    shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1])
    acc = np.zeros(shape, dtype=np.float32)
    for k in range(a.shape[-1]):
        acc += a[..., :, k:k + 1] * b[..., k:k + 1, :]
    return acc


def mutated_forward(spec, W, x, bug):
    """The reference with one deliberate bug, to show the tolerance catches it."""
    if bug == "no mask":
        return ref.block_forward(ref.BlockSpec(**{**spec.__dict__, "mask": "none"}), W, x)
    if bug == "dropped q bias":
        W = dict(W)
        n = spec.names()
        if spec.qkv == "packed":
            b = W[n["qkv"] + ".bias"].copy()
            b[:spec.d_model] = 0
            W[n["qkv"] + ".bias"] = b
        else:
            W[n["q"] + ".bias"] = np.zeros_like(W[n["q"] + ".bias"])
        return ref.block_forward(spec, W, x)
    saved = ref.attention_core, ref.gelu
    try:
        if bug == "scale 1/d_head":
            def core(q, k, v, heads, mask, mm=np.matmul):
                dh = q.shape[-1] // heads
                return saved[0](q / math.sqrt(dh), k, v, heads, mask, mm)
            ref.attention_core = core
        elif bug == "heads reversed":
            def core(q, k, v, heads, mask, mm=np.matmul):
                o = saved[0](q, k, v, heads, mask, mm)
                B, S, D = o.shape
                return o.reshape(B, S, heads, D // heads)[:, :, ::-1].reshape(B, S, D)
            ref.attention_core = core
        elif bug == "tanh gelu":
            def g(x):
                return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
            ref.gelu = g
        return ref.block_forward(spec, W, x)
    finally:
        ref.attention_core, ref.gelu = saved


def test_tolerance():
    tol = run_e2e.DEFAULT_TOL
    cases = [("gpt2_block", (1, 64)), ("bert_layer", (1, 64)),
             ("gpt_h12_causal_inout_packed", (3, 128)), ("bert_h4_none_outin_separate", (3, 77))]
    for name, (B, S) in cases:
        spec = run_e2e.CONFIGS[name].spec
        W = ref.init_weights(spec.weights(), np.random.default_rng(11))
        x = rand_x(B, S, spec.d_model, 12)
        y64 = ref.block_forward(spec, W, x)
        y32 = ref.block_forward(spec, W, x, dtype=np.float32, mm=seq_matmul)
        e = float(np.abs(y32 - y64).max())
        check(e < tol / 5, f"fp32 sequential-sum error {name} B={B} S={S}: {e:.2e} "
              f"(|y| max {np.abs(y64).max():.2f}) < tol/5 = {tol / 5:.0e}")
        bugs = ["scale 1/d_head", "dropped q bias", "tanh gelu"]
        if spec.mask == "causal":
            bugs.append("no mask")
        if spec.heads > 1:
            bugs.append("heads reversed")
        for bug in bugs:
            if bug == "tanh gelu" and spec.act != "gelu":
                continue
            # The tanh approximation of GELU differs from the erf form by at
            # most ~5e-4, a subtler bug than the structural ones.
            k = 2 if bug == "tanh gelu" else 10
            e = float(np.abs(mutated_forward(spec, W, x, bug) - y64).max())
            check(e > k * tol, f"bug '{bug}' in {name} B={B} S={S}: error {e:.2e} > {k}*tol")


def test_cmake_lists_configs():
    with open(os.path.join(HERE, "CMakeLists.txt")) as f:
        text = f.read()
    listed = []
    for var in ("ATTNC_E2E_CONFIGS", "ATTNC_E2E_WHOLE_MODEL_CONFIGS"):
        m = re.search(r"set\(" + var + r"([^)]*)\)", text)
        listed += m.group(1).split() if m else []
    check(sorted(listed) == sorted(run_e2e.CONFIGS) and len(set(listed)) == len(listed),
          f"CMakeLists.txt lists run_e2e.py's configurations ({len(listed)} vs "
          f"{len(run_e2e.CONFIGS)})")
    for name, cfg in run_e2e.CONFIGS.items():
        if isinstance(cfg, run_e2e.GraphConfig):
            decls = run_e2e.parse_weight_decls(cfg.text)
            check(sorted(decls) == sorted((w, tuple(s), l) for w, s, l in cfg.weights),
                  f"graph {name}: declared weights match its weight list")
            continue
        if cfg.model_file:
            with open(os.path.join(run_e2e.REPO, cfg.model_file)) as f:
                decls = run_e2e.parse_weight_decls(f.read())
        else:
            decls = run_e2e.parse_weight_decls(run_e2e.attn_text(name, cfg.spec))
        check(sorted(decls) == sorted((w, tuple(s), l) for w, s, l in cfg.spec.weights()),
              f"config {name}: declared weights match the template")


def test_functions():
    """reference.FUNCTIONS against their definitions on Python floats."""
    defs = {
        "relu": lambda v: max(v, 0.0),
        "gelu": lambda v: 0.5 * v * (1 + math.erf(v / math.sqrt(2))),
        "gelu_tanh": lambda v: 0.5 * v * (1 + math.tanh(
            math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3))),
        "tanh": math.tanh,
        "sigmoid": lambda v: 1 / (1 + math.exp(-v)),
        "silu": lambda v: v / (1 + math.exp(-v)),
        "softmax": None,    # not elementwise: checked on rows below
    }
    check(sorted(defs) == sorted(ref.FUNCTIONS), "every function has a definition here")
    xs = np.linspace(-6, 6, 49)
    row = [0.5, -1.0, 3.0, 0.0]
    want = [math.exp(v) / sum(math.exp(u) for u in row) for v in row]
    got = ref.FUNCTIONS["softmax"](np.array([row, row]))
    check(float(np.abs(got - np.array([want, want])).max()) < 1e-12,
          "softmax normalises each row of the last dim")
    for name, f in ref.FUNCTIONS.items():
        if defs.get(name):
            e = max(abs(float(f(np.array([v]))[0]) - defs[name](v)) for v in xs)
            check(e < 1e-12, f"function {name} matches its definition ({e:.1e})")
    # Distinct functions really differ (a swapped lowering would be caught).
    check(float(np.abs(ref.gelu(xs) - ref.gelu_tanh(xs)).max()) > 2e-4,
          "gelu and gelu_tanh differ by more than 2 tolerances somewhere")


def test_rms_norm_and_softcap():
    """reference.rms_norm and softcap against their definitions on Python
    floats (LlamaRMSNorm, GemmaRMSNorm's 1 + weight, Gemma-2's capping)."""
    row, g, eps = [0.5, -1.0, 3.0, 0.0], [1.1, 0.9, -0.2, 2.0], 1e-6
    inv = 1 / math.sqrt(sum(v * v for v in row) / len(row) + eps)
    err = 0.0
    for offset in (0.0, 1.0):
        got = ref.rms_norm(np.array([row]), np.array(g), eps, offset)[0]
        err = max(err, max(abs(got[i] - row[i] * inv * (offset + g[i]))
                           for i in range(len(row))))
    check(err < 1e-12, f"rms_norm matches its definition ({err:.1e})")
    xs = np.linspace(-100, 100, 41)
    e = max(abs(float(ref.softcap(np.array([v]), 30.0)[0]) - 30 * math.tanh(v / 30))
            for v in xs)
    check(e < 1e-12, f"softcap matches its definition ({e:.1e})")


def test_sinusoidal():
    """reference.sinusoidal against the paper's formula on Python floats:
    PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(...)."""
    d, positions = 6, [[0, 1, 7], [40, 2, 999]]
    got = ref.sinusoidal(np.array(positions, np.int32), d)
    check(got.shape == (2, 3, d), "sinusoidal appends the feature dim")
    err = 0.0
    for b, row in enumerate(positions):
        for s, pos in enumerate(row):
            for i in range(d // 2):
                angle = pos / 10000 ** (2 * i / d)
                err = max(err, abs(got[b, s, 2 * i] - math.sin(angle)),
                          abs(got[b, s, 2 * i + 1] - math.cos(angle)))
    check(err < 1e-12, f"sinusoidal matches the paper's formula ({err:.1e})")


def test_llm_attention():
    """reference.rope, alibi_slopes and llm_attention on Python floats and
    against the plain attention: a rotation keeps each pair's length and
    makes q.k depend on the distance only; the published slopes; GQA with
    kv_heads = heads is masked_attention, and with K < heads it is attention
    over repeated K/V heads."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 5, 8))
    for style, pairs in (("half", [(0, 2), (1, 3)]), ("interleaved", [(0, 1), (2, 3)])):
        r = ref.rope(x, np.arange(5), 4, style, theta=100.0)
        check(np.allclose(r[:, 0], x[:, 0], atol=1e-15), f"rope {style}: position 0 is the identity")
        for a, b in pairs:
            check(np.allclose(np.hypot(r[..., a], r[..., b]), np.hypot(x[..., a], x[..., b])),
                  f"rope {style}: pair ({a}, {b}) keeps its length")
        # Feature pair (a, b) with frequency index i turns by p * 100^(-2i/4).
        a, b = pairs[1]
        angle = 3 * 100.0 ** (-2 * 1 / 4)
        want = x[0, 3, a] * math.cos(angle) - x[0, 3, b] * math.sin(angle)
        check(abs(r[0, 3, a] - want) < 1e-12, f"rope {style}: the angle of pair ({a}, {b})")
        q = ref.rope(np.broadcast_to(x[:, :1], x.shape), np.arange(5), 4, style)
        k = ref.rope(np.broadcast_to(x[:, 1:2], x.shape), np.arange(5), 4, style)
        dots = [float(q[0, i, :4] @ k[0, i - 1, :4]) for i in range(1, 5)]
        check(max(dots) - min(dots) < 1e-12, f"rope {style}: q.k depends on the distance only")
    # Partial rotary: features past rotary_dims pass through, the first
    # rotary_dims rotate as a head of that many features would.
    r = ref.rope(x, np.arange(5), 8, "half", rotary_dims=4)
    check(np.array_equal(r[..., 4:], x[..., 4:]), "partial rope: the rest pass through")
    check(np.allclose(r[..., :4], ref.rope(x[..., :4], np.arange(5), 4)),
          "partial rope: the rotated part is a 4-feature head's")
    # Scaled frequencies, against Llama 3.1's published apply_scaling written
    # out per frequency, and linear as a division.
    f = ref.rope_inv_freq(10000.0, 16)
    check(np.allclose(ref.rope_inv_freq(10000.0, 16, ("linear", 4.0)), f / 4), "linear scaling")
    want = []
    for freq in f:
        wavelen = 2 * math.pi / freq
        if wavelen < 64 / 4:
            want.append(freq)
        elif wavelen > 64 / 1:
            want.append(freq / 8)
        else:
            smooth = (64 / wavelen - 1) / (4 - 1)
            want.append((1 - smooth) * freq / 8 + smooth * freq)
    check(np.allclose(ref.rope_inv_freq(10000.0, 16, ("llama3", 8.0, 1.0, 4.0, 64.0)), want),
          "llama3 scaling")
    check(np.allclose(ref.alibi_slopes(8), [2.0 ** -(i + 1) for i in range(8)]),
          "alibi slopes of 8 heads: 1/2 .. 1/256")
    check(np.allclose(ref.alibi_slopes(6), [2 ** -2, 2 ** -4, 2 ** -6, 2 ** -8, 2 ** -1, 2 ** -3]),
          "alibi slopes of 6 heads: 4 of the power of two, then 2 interleaved")
    q, k, v = (rng.standard_normal((2, 6, 8)) for _ in range(3))
    check(np.allclose(ref.llm_attention(q, k, v, 2, causal=True, lengths=[6, 3]),
                      ref.masked_attention(q, k, v, 2, causal=True, lengths=[6, 3])),
          "llm_attention without its extras is masked_attention")
    kv = rng.standard_normal((2, 6, 4))
    rep = np.concatenate([kv, kv], axis=-1)    # the one kv head repeated for 2
    check(np.allclose(ref.llm_attention(q, kv, kv, 2, 1), ref.masked_attention(q, rep, rep, 2)),
          "multi-query attention reads the one key/value head for every head")


def test_masked_softmax_nonfinite():
    """A NaN score a row sees makes the row NaN; one it does not see changes
    nothing; a row that sees no key is zeros (PyTorch's SDPA)."""
    s = np.array([[1.0, np.nan, 2.0], [0.5, 1.5, np.nan], [3.0, 1.0, 2.0]])
    seen = np.array([[True, True, True], [True, True, False], [False, False, False]])
    p = ref.masked_softmax(s, seen)
    check(np.isnan(p[0]).all(), "masked softmax: a seen NaN score makes the row NaN")
    check(np.isfinite(p[1]).all() and np.isclose(p[1].sum(), 1.0) and p[1, 2] == 0.0,
          "masked softmax: an unseen NaN score changes nothing")
    check(np.array_equal(p[2], np.zeros(3)), "masked softmax: a row that sees no key is zeros")
    p = ref.masked_softmax(np.array([[np.inf, 0.0]]), np.array([[True, True]]))
    check(np.isnan(p).all(), "masked softmax: a seen +Inf score makes the row NaN (Inf - Inf)")


def main():
    test_masked_softmax_nonfinite()
    test_functions()
    test_sinusoidal()
    test_rms_norm_and_softcap()
    test_llm_attention()
    test_against_naive()
    test_causal()
    test_layouts_and_packing()
    test_safetensors()
    test_tolerance()
    test_cmake_lists_configs()
    print(f"{len(FAILURES)} failed" if FAILURES else "all reference self-tests passed")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
