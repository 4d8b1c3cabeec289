"""Independent float64 numpy reference for the end-to-end tests.

Nothing here reads the compiler's IR or parses `.attn` text: the structure of a
model comes from a `BlockSpec` (the parameters of the templates that
run_e2e.py turns into `.attn` files), and the arithmetic is plain numpy in
float64 (the `dtype` arguments exist only so the tolerance can be studied by
running the same code in float32).

Semantics (docs/language.md):
  linear     out_in: W is [out, in], y = x W^T + b;  in_out: W is [in, out], y = x W + b
  layer_norm (x - mean) / sqrt(var + eps) * g + b, biased variance, last dim
  gelu       0.5 x (1 + erf(x / sqrt 2))
  attention  per head h (d_head = D / H): Q_h K_h^T / sqrt(d_head), causal masks
             key j > query i with -inf, softmax over keys, P V_h; heads joined in
             order (head h in columns h*d_head:(h+1)*d_head), then the out
             projection. A packed projection's output columns are [Q | K | V].
"""

import math
from dataclasses import dataclass, field

import numpy as np

LAYOUTS = ("out_in", "in_out")
MASKS = ("none", "causal")
QKVS = ("packed", "separate")
STYLES = ("pre", "post")   # pre: GPT-2 style pre-norm; post: BERT style post-norm
ACTS = ("gelu", "relu")


# --------------------------------------------------------------------------- ops

_erf = np.frompyfunc(math.erf, 1, 1)


def gelu(x):
    x = np.asarray(x)
    return (0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)).astype(np.float64))).astype(x.dtype)


def relu(x):
    return np.maximum(x, 0)


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def silu(x):
    return x * sigmoid(x)


def softmax(s):
    m = s.max(axis=-1, keepdims=True)
    e = np.exp(s - m)
    return e / e.sum(axis=-1, keepdims=True)


def sinusoidal(positions, d):
    """Vaswani et al.'s encoding of integer positions: features 2i and 2i+1
    are sin and cos of p / 10000^(2i/d), interleaved (the PyTorch tutorial's
    PositionalEncoding)."""
    p = np.asarray(positions, dtype=np.float64)[..., None]
    i = np.arange(d // 2, dtype=np.float64)
    angle = p / 10000.0 ** (2.0 * i / d)
    out = np.empty(angle.shape[:-1] + (d,))
    out[..., 0::2] = np.sin(angle)
    out[..., 1::2] = np.cos(angle)
    return out


# The language's functions of one tensor, by builtin name (docs/language.md).
# The e2e configuration `functions` compiles every one of them.
FUNCTIONS = {
    "relu": relu,
    "gelu": gelu,
    "gelu_tanh": gelu_tanh,
    "tanh": np.tanh,
    "sigmoid": sigmoid,
    "silu": silu,
    "softmax": softmax,      # over the last dim
}


def layer_norm(x, g, b, eps):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)   # biased
    return (x - mean) / np.sqrt(var + x.dtype.type(eps)) * g + b


def rms_norm(x, g, eps, offset=0.0):
    """Hugging Face's LlamaRMSNorm (offset 0) and GemmaRMSNorm (offset 1):
    x / sqrt(mean(x^2) + eps) * (offset + g), no centring, no shift."""
    ms = (x * x).mean(axis=-1, keepdims=True)
    return x / np.sqrt(ms + x.dtype.type(eps)) * (offset + g)


def softcap(x, cap):
    """cap * tanh(x / cap): Gemma-2's final_logit_softcapping."""
    return cap * np.tanh(x / cap)


def linear(x, w, b, layout, mm=np.matmul):
    if layout == "out_in":
        y = mm(x, w.T)
    elif layout == "in_out":
        y = mm(x, w)
    else:
        raise ValueError(f"unknown layout {layout!r}")
    return y if b is None else y + b


def attention_core(q, k, v, heads, mask, mm=np.matmul):
    """q, k, v: [B, S, D] already projected. Returns the joined heads [B, S, D]."""
    B, S, D = q.shape
    if D % heads:
        raise ValueError(f"heads={heads} does not divide D={D}")
    dh = D // heads

    def split(t):  # [B, S, D] -> [B, H, S, dh]; head h = columns h*dh:(h+1)*dh
        return t.reshape(B, S, heads, dh).transpose(0, 2, 1, 3)

    qh, kh, vh = split(q), split(k), split(v)
    scores = mm(qh, kh.transpose(0, 1, 3, 2)) / q.dtype.type(math.sqrt(dh))
    if mask == "causal":
        future = np.triu(np.ones((S, S), dtype=bool), k=1)   # key j > query i
        scores = np.where(future, -np.inf, scores)
    elif mask != "none":
        raise ValueError(f"unknown mask {mask!r}")
    o = mm(softmax(scores), vh)                                 # [B, H, S, dh]
    return o.transpose(0, 2, 1, 3).reshape(B, S, D)


def masked_softmax(scores, seen):
    """Softmax over the last axis of the keys each row sees; a row that sees
    no key gets zeros (PyTorch's SDPA). A NaN score the row sees makes the
    row NaN, as in PyTorch (a `s > 0` test would make it zeros)."""
    scores = np.where(seen, scores, -np.inf)
    with np.errstate(invalid="ignore"):
        m = scores.max(axis=-1, keepdims=True)
        m = np.where(np.isneginf(m), 0.0, m)
        e = np.exp(scores - m)
        s = e.sum(axis=-1, keepdims=True)
        return np.where(s == 0, 0.0, e / np.where(s == 0, 1.0, s))


def visible(B, Sq, Sk, causal, window, lengths):
    """[B, 1, Sq, Sk] bool: whether query i sees key j under the mask terms
    (causal, window (left, right), per-batch key lengths)."""
    i = np.arange(Sq)[:, None]
    j = np.arange(Sk)[None, :]
    seen = np.ones((B, 1, Sq, Sk), dtype=bool)
    if causal:
        seen &= j <= i
    if window is not None:
        left, right = window
        seen &= (j >= i - left) & (j <= i + right)
    if lengths is not None:
        seen &= j[None, None] < np.asarray(lengths).reshape(B, 1, 1, 1)
    return seen


def masked_attention(q, k, v, heads, causal=False, window=None, lengths=None,
                     bias=None, return_weights=False):
    """Attention of q [B, Sq, D] over k, v [B, Sk, D] with every mask term of
    the language (docs/language.md): causal (key j <= query i), window
    (i - left <= j <= i + right), lengths (j < lengths[b]) and an additive
    bias broadcast from [Sq, Sk], [B, Sq, Sk] or [B, H, Sq, Sk]. A query
    that sees no key gets zeros. With return_weights, also the
    probabilities [B, H, Sq, Sk]."""
    B, Sq, D = q.shape
    Sk = k.shape[1]
    dh = D // heads

    def split(t):
        return t.reshape(B, t.shape[1], heads, dh).transpose(0, 2, 1, 3)

    scores = split(q) @ split(k).transpose(0, 1, 3, 2) / math.sqrt(dh)
    seen = visible(B, Sq, Sk, causal, window, lengths)
    if bias is not None:
        b = np.asarray(bias, dtype=np.float64)
        b = b.reshape((1,) * (4 - b.ndim) + b.shape) if b.ndim != 3 else b[:, None]
        scores = scores + b
    p = masked_softmax(scores, seen)
    o = (p @ split(v)).transpose(0, 2, 1, 3).reshape(B, Sq, D)
    return (o, p) if return_weights else o


def rope_inv_freq(theta, dims, scaling=None):
    """The dims / 2 frequencies theta^(-2i / dims), in float64, scaled as
    Hugging Face's rope_type: ("linear", factor) divides them by the factor;
    ("llama3", factor, low, high, original_max) divides those whose
    wavelength 2 pi / f exceeds original_max / low by the factor, keeps those
    below original_max / high and blends between with the weight
    (original_max / wavelength - low) / (high - low) on the unscaled one
    (Llama 3.1's `apply_scaling`)."""
    freq = theta ** (-2.0 * np.arange(dims // 2) / dims)
    if scaling is None:
        return freq
    if scaling[0] == "linear":
        return freq / scaling[1]
    _, factor, low, high, original = scaling
    wavelen = 2 * math.pi / freq
    smooth = (original / wavelen - low) / (high - low)
    blended = (1 - smooth) * freq / factor + smooth * freq
    return np.where(wavelen < original / high, freq,
                    np.where(wavelen > original / low, freq / factor, blended))


def rope(x, positions, head_dim, style="half", theta=10000.0, rotary_dims=None,
         scaling=None):
    """Rotary embeddings of every head of x [B, S, n * head_dim] at integer
    positions [S] or [B, S] (Su et al.): the pair (a, b) of features turns
    by the angle p * theta^(-2i / N) to (a cos - b sin, a sin + b cos), for
    the first N = rotary_dims (default head_dim) features of each head; the
    rest pass through (partial rotary, GPT-NeoX). `half` pairs feature i
    with i + N/2 (Hugging Face's rotate_half), `interleaved` pairs 2i with
    2i + 1 (GPT-J). `scaling` as rope_inv_freq."""
    B, S, D = x.shape
    n = rotary_dims or head_dim
    half = n // 2
    freq = rope_inv_freq(theta, n, scaling)                           # [half]
    p = np.broadcast_to(np.asarray(positions, np.float64), (B, S))
    angle = p[..., None] * freq                                       # [B, S, half]
    c, s = np.cos(angle)[:, :, None], np.sin(angle)[:, :, None]       # [B, S, 1, half]
    h = x.reshape(B, S, D // head_dim, head_dim)
    r, rest = h[..., :n], h[..., n:]
    if style == "half":
        a, b = r[..., :half], r[..., half:]
        out = np.concatenate([a * c - b * s, a * s + b * c], axis=-1)
    elif style == "interleaved":
        a, b = r[..., 0::2], r[..., 1::2]
        out = np.stack([a * c - b * s, a * s + b * c], axis=-1).reshape(r.shape)
    else:
        raise ValueError(f"unknown rope style {style!r}")
    return np.concatenate([out, rest], axis=-1).reshape(B, S, D)


def alibi_slopes(heads):
    """ALiBi's head slopes as the paper's reference code (`get_slopes`) has
    them: 2^(-8/n), 2^(-16/n), ... for n heads a power of two; otherwise those
    of the largest power of two below, then every other slope of twice as
    many heads."""
    def power_of_2(n):
        start = 2.0 ** (-8.0 / n)
        return [start ** (i + 1) for i in range(n)]
    if math.log2(heads).is_integer():
        return np.array(power_of_2(heads))
    m = 2 ** math.floor(math.log2(heads))
    return np.array(power_of_2(m) + power_of_2(2 * m)[0::2][:heads - m])


def llm_attention(q, k, v, heads, kv_heads=None, causal=False, window=None,
                  lengths=None, alibi=False, softcap=None, return_weights=False):
    """Attention of today's decoders: q [B, Sq, H * dh], k and v [B, Sk,
    K * dh] with K = kv_heads key/value heads, query head h reading head
    h // (H / K) (grouped-query attention, Hugging Face's repeat_kv); scores
    q.k / sqrt(dh), soft-capped to C tanh(s / C) (Gemma 2), plus ALiBi's
    slope_h * j (BLOOM's form: the key's position), then masked as
    masked_attention."""
    B, Sq, D = q.shape
    Sk = k.shape[1]
    K = kv_heads or heads
    dh = D // heads
    qh = q.reshape(B, Sq, heads, dh).transpose(0, 2, 1, 3)
    kh = np.repeat(k.reshape(B, Sk, K, dh).transpose(0, 2, 1, 3), heads // K, axis=1)
    dv = v.shape[-1] // K
    vh = np.repeat(v.reshape(B, Sk, K, dv).transpose(0, 2, 1, 3), heads // K, axis=1)
    scores = qh @ kh.transpose(0, 1, 3, 2) / math.sqrt(dh)
    if softcap is not None:
        scores = softcap * np.tanh(scores / softcap)
    if alibi:
        scores = scores + alibi_slopes(heads)[None, :, None, None] * np.arange(Sk)
    seen = visible(B, Sq, Sk, causal, window, lengths)
    p = masked_softmax(scores, seen)
    o = (p @ vh).transpose(0, 2, 1, 3).reshape(B, Sq, heads * dv)
    return (o, p) if return_weights else o


# --------------------------------------------------------------- model templates

@dataclass(frozen=True)
class BlockSpec:
    """Parameters of one transformer block template."""
    d_model: int
    heads: int
    ffn: int
    mask: str = "none"          # none | causal
    layout: str = "out_in"      # out_in | in_out (all linear weights)
    qkv: str = "separate"       # packed | separate
    style: str = "post"         # pre (GPT-2) | post (BERT)
    s_max: int = 128
    eps: float = 1e-5
    act: str = "gelu"           # gelu | relu

    def __post_init__(self):
        assert self.mask in MASKS and self.layout in LAYOUTS
        assert self.qkv in QKVS and self.style in STYLES and self.act in ACTS
        assert self.d_model % self.heads == 0

    # Module prefixes, named like Hugging Face GPT-2 (pre) and BERT (post).
    def names(self):
        if self.style == "pre":
            return dict(ln1="ln_1", qkv="attn.c_attn", q="attn.q_proj",
                        k="attn.k_proj", v="attn.v_proj", out="attn.c_proj",
                        ln2="ln_2", fc1="mlp.c_fc", fc2="mlp.c_proj")
        return dict(q="attention.self.query", k="attention.self.key",
                    v="attention.self.value", qkv="attention.self.qkv",
                    out="attention.output.dense",
                    ln1="attention.output.LayerNorm", fc1="intermediate.dense",
                    fc2="output.dense", ln2="output.LayerNorm")

    def linear_shape(self, n_in, n_out):
        return (n_out, n_in) if self.layout == "out_in" else (n_in, n_out)

    def weights(self):
        """Expected weight declarations: list of (name, shape, layout or None)."""
        n, D, F = self.names(), self.d_model, self.ffn
        decls = []

        def lin(prefix, n_in, n_out):
            decls.append((prefix + ".weight", self.linear_shape(n_in, n_out), self.layout))
            decls.append((prefix + ".bias", (n_out,), None))

        def norm(prefix):
            decls.append((prefix + ".weight", (D,), None))
            decls.append((prefix + ".bias", (D,), None))

        if self.style == "pre":
            norm(n["ln1"])
        if self.qkv == "packed":
            lin(n["qkv"], D, 3 * D)
        else:
            for r in ("q", "k", "v"):
                lin(n[r], D, D)
        lin(n["out"], D, D)
        if self.style == "post":
            norm(n["ln1"])
        else:
            norm(n["ln2"])
        lin(n["fc1"], D, F)
        lin(n["fc2"], F, D)
        if self.style == "post":
            norm(n["ln2"])
        return decls


def block_forward(spec, weights, x, dtype=np.float64, mm=np.matmul):
    """Evaluate the block `spec` on x [B, S, D] with `weights` (name -> array).

    Everything is cast to `dtype` (float64 for the reference) first. `mm` is
    the matrix product (a hook for the tolerance study in test_reference.py).
    """
    n = spec.names()
    x = np.asarray(x, dtype=dtype)

    def w(name):
        return np.asarray(weights[name], dtype=dtype)

    def lin(h, prefix):
        b = weights.get(prefix + ".bias")
        return linear(h, w(prefix + ".weight"),
                      None if b is None else np.asarray(b, dtype), spec.layout, mm)

    def norm(h, prefix):
        return layer_norm(h, w(prefix + ".weight"), w(prefix + ".bias"), spec.eps)

    act = gelu if spec.act == "gelu" else relu

    def attn(h):
        D = spec.d_model
        if spec.qkv == "packed":
            p = lin(h, n["qkv"])
            q, k, v = p[..., :D], p[..., D:2 * D], p[..., 2 * D:]
        else:
            q, k, v = lin(h, n["q"]), lin(h, n["k"]), lin(h, n["v"])
        return lin(attention_core(q, k, v, spec.heads, spec.mask, mm), n["out"])

    if spec.style == "pre":
        x1 = x + attn(norm(x, n["ln1"]))
        return x1 + lin(act(lin(norm(x1, n["ln2"]), n["fc1"])), n["fc2"])
    x1 = norm(x + attn(x), n["ln1"])
    return norm(x1 + lin(act(lin(x1, n["fc1"])), n["fc2"]), n["ln2"])


# ----------------------------------------------------------------- random weights

def init_weights(decls, rng):
    """Random float32 weights for declarations (name, shape, layout).

    Chosen so activations stay unit-scale and the test is sensitive:
      * linear weights ~ N(0, 1/fan_in): a projection of unit-variance
        features has unit variance, so the attention logits Q.K/sqrt(d_head)
        have standard deviation ~1 -- softmax is neither uniform nor one-hot;
      * biases ~ N(0, 0.1^2): non-zero, so a dropped bias is visible;
      * norm gains ~ 1 + N(0, 0.1^2), norm biases ~ N(0, 0.1^2).
    A 1-D `.weight` is a norm gain; a 2-D weight is a linear weight whose
    fan-in is its `in` dim under its layout; a weight of more dims (a
    convolution's, reshaped into a matrix) has the fan-in of its dims after
    the first.
    """
    out = {}
    for name, shape, layout in decls:
        shape = tuple(shape)
        if len(shape) == 2:
            fan_in = shape[0] if layout == "in_out" else shape[1]
            a = rng.standard_normal(shape) / math.sqrt(fan_in)
        elif len(shape) == 1 and name.endswith(".weight"):
            a = 1.0 + 0.1 * rng.standard_normal(shape)
        elif len(shape) == 1:
            a = 0.1 * rng.standard_normal(shape)
        elif len(shape) > 2:
            a = rng.standard_normal(shape) / math.sqrt(math.prod(shape[1:]))
        else:
            raise ValueError(f"weight {name}: unexpected rank {len(shape)}")
        out[name] = a.astype(np.float32)
    return out
