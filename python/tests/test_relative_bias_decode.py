"""T5's relative position bias on attentions with KV caches: a small
T5-decoder-like stack (2 blocks, rms_norm, unscaled scores, one
`relative_bias` written once and shared by both blocks' `mask = causal & b`,
as T5 computes it in block 0 and reuses it) prefilled, then decoded one token
at a time and two at once, sequences of one batch at their own positions.
A decode's query i of sequence b is at position P_b + i among the cache's
rows, and its bias is the table's entry of bucket(j - (P_b + i)), as
transformers' T5Attention.compute_bias with past_seen_tokens: every step
equals one `run` over the whole sequence and a float64 numpy model that
keeps its own caches. A bias counted from i rather than P_b + i gives other
logits from the first decode on.

A bidirectional table (an encoder's buckets, odd on a decoder but legal)
with no causal term shows the keys after a query at decode as well: a decode
of two tokens lets the first see the second, at distance +1."""

import math

import numpy as np
import pytest

import attnc
import safetensors_io  # test/e2e, put on sys.path by conftest.py

from conftest import build

D, HEADS, FF, VOCAB, LAYERS, BUCKETS = 32, 4, 64, 40, 2, 8
# A max_distance the sequences pass: the exact, the logarithmic and the last
# (far) buckets all occur.
MAX_DISTANCE = 12
ATTN = "decoder.block.{i}.layer.0.SelfAttention"
TABLE = "decoder.block.0.layer.0.SelfAttention.relative_attention_bias"


def source(name, mask, bidirectional):
    return f"""\
model {name} {{
  dim B <= 4, S <= 24, L <= 24
  input ids : i32[B, S]
  weight shared.weight : f32[{VOCAB}, {D}]
  weight {TABLE}.weight : f32[{BUCKETS}, {HEADS}]
  repeat {LAYERS} as i {{
    weight decoder.block.{{i}}.layer.0.layer_norm.weight : f32[{D}]
    weight {ATTN}.q.weight : f32[{D}, {D}]
    weight {ATTN}.k.weight : f32[{D}, {D}]
    weight {ATTN}.v.weight : f32[{D}, {D}]
    weight {ATTN}.o.weight : f32[{D}, {D}]
    weight decoder.block.{{i}}.layer.1.layer_norm.weight : f32[{D}]
    weight decoder.block.{{i}}.layer.1.DenseReluDense.wi.weight : f32[{FF}, {D}]
    weight decoder.block.{{i}}.layer.1.DenseReluDense.wo.weight : f32[{D}, {FF}]
    state cache.{{i}}.key : f32[B, L, {D}]
    state cache.{{i}}.value : f32[B, L, {D}]
  }}
  weight lm_head.weight : f32[{VOCAB}, {D}]
  x = embedding(ids, shared)
  b = relative_bias(x, {TABLE}, bidirectional = {bidirectional},
                    max_distance = {MAX_DISTANCE})
  repeat {LAYERS} as i {{
    h = rms_norm(x, decoder.block.{{i}}.layer.0.layer_norm)
    x = x + self_attention(h, heads = {HEADS}, q = {ATTN}.q, k = {ATTN}.k,
                           v = {ATTN}.v, out = {ATTN}.o, mask = {mask},
                           cache = cache.{{i}}, scale = 1)
    h = rms_norm(x, decoder.block.{{i}}.layer.1.layer_norm)
    x = x + linear(relu(linear(h, decoder.block.{{i}}.layer.1.DenseReluDense.wi)),
                   decoder.block.{{i}}.layer.1.DenseReluDense.wo)
  }}
  output logits = linear(x, lm_head)
}}
"""


# attnc against itself (decode steps against one run): float32 both, the
# attention's sums in another order over the cache's key tiles, so a few ulps
# of logits of magnitude ~1-10: test_decode.py's and attn-run --check's
# 1e-4 * max(1, max |logit|).
TOL = 1e-4
# attnc (float32) against the float64 numpy model: float32 rounding through
# two blocks of 32- and 64-feature products and softmaxes (measured ~1e-6
# relative); the same bound. A wrong bucket moves a score by a table entry,
# O(0.1-1), and the logits by orders of magnitude more than this.
REF_TOL = 1e-4


@pytest.fixture(scope="module")
def decoder(tmp_path_factory):
    return build(tmp_path_factory.mktemp("t5dec"), "t5dec",
                 source("t5dec", "causal & b", "false"))


@pytest.fixture(scope="module")
def both_ways(tmp_path_factory):
    return build(tmp_path_factory.mktemp("t5bi"), "t5bi",
                 source("t5bi", "b", "true"))


def close(a, b):
    scale = max(1.0, float(np.max(np.abs(b))))
    err = float(np.max(np.abs(a - b)))
    assert err <= TOL * scale, f"max abs difference {err:.3g} (logits up to {scale:.3g})"
    return err / scale


def ids_of(tokens):
    return np.ascontiguousarray(tokens, dtype=np.int32)


# ------------------------------------------------------------------ numpy


def bucket(relative, bidirectional):
    """T5Attention._relative_position_bucket, its log in float32 as torch's."""
    n, base = BUCKETS, np.zeros_like(relative)
    if bidirectional:
        n //= 2
        base = np.where(relative > 0, n, 0)
        distance = np.abs(relative)
    else:
        distance = -np.minimum(relative, 0)
    exact = n // 2
    with np.errstate(divide="ignore"):
        ratio = distance.astype(np.float32) / np.float32(exact)
        large = (np.log(ratio) / np.float32(math.log(MAX_DISTANCE / exact))
                 * np.float32(n - exact))
    large = exact + np.where(distance < exact, 0, large).astype(np.int64)
    return base + np.where(distance < exact, distance, np.minimum(large, n - 1))


class Reference:
    """The stack in float64 with its own caches [B, capacity, D]."""

    def __init__(self, built, causal, bidirectional, batch, capacity):
        self.w = {k: v.astype(np.float64)
                  for k, v in safetensors_io.load(built.weights).items()}
        self.causal, self.bidirectional = causal, bidirectional
        self.k = np.zeros((LAYERS, batch, capacity, D))
        self.v = np.zeros((LAYERS, batch, capacity, D))

    def rms(self, x, name):
        return x / np.sqrt((x ** 2).mean(-1, keepdims=True) + 1e-6) * self.w[name]

    def step(self, ids, position):
        """Tokens ids [B, S] after position[b] cached ones, into the caches."""
        w, ids = self.w, np.asarray(ids)
        s = ids.shape[1]
        x = w["shared.weight"][ids]
        table = w[f"{TABLE}.weight"]
        for layer in range(LAYERS):
            a = ATTN.format(i=layer)
            h = self.rms(x, f"decoder.block.{layer}.layer.0.layer_norm.weight")
            q, k, v = (h @ w[f"{a}.{p}.weight"].T for p in "qkv")
            out = np.zeros_like(x)
            for b, p in enumerate(position):
                self.k[layer, b, p:p + s], self.v[layer, b, p:p + s] = k[b], v[b]
                keys, values = self.k[layer, b, :p + s], self.v[layer, b, :p + s]
                rows = p + np.arange(s)[:, None]                # the queries' positions
                relative = np.arange(p + s)[None, :] - rows
                bias = table[bucket(relative, self.bidirectional)]   # [s, keys, heads]
                for hd in range(HEADS):
                    f = slice(hd * D // HEADS, (hd + 1) * D // HEADS)
                    scores = q[b, :, f] @ keys[:, f].T + bias[:, :, hd]
                    if self.causal:
                        scores = np.where(relative <= 0, scores, -np.inf)
                    e = np.exp(scores - scores.max(-1, keepdims=True))
                    out[b, :, f] = (e / e.sum(-1, keepdims=True)) @ values[:, f]
            x = x + out @ w[f"{a}.o.weight"].T
            h = self.rms(x, f"decoder.block.{layer}.layer.1.layer_norm.weight")
            ff = f"decoder.block.{layer}.layer.1.DenseReluDense"
            x = x + np.maximum(h @ w[f"{ff}.wi.weight"].T, 0) @ w[f"{ff}.wo.weight"].T
        return x @ w["lm_head.weight"].T


def test_bucket_reference():
    # transformers' buckets for 8 buckets and max_distance 12, as printed by
    # T5Attention._relative_position_bucket(torch.arange(-20, 21), ...).
    relative = np.arange(-20, 21)
    assert bucket(relative, False).tolist() == [7] * 11 + [6, 6, 6, 5, 4, 4, 3, 2, 1] + [0] * 21
    assert bucket(relative, True).tolist() == ([3] * 16 + [2, 2, 2, 1, 0, 5, 6, 6, 6]
                                               + [7] * 16)


# ------------------------------------------------------------------ decoder


def test_prefill_then_decode_equals_run_and_numpy(decoder):
    # Three sequences at their own positions in one batch: prompts of 6, 2
    # and 4 tokens prefilled into their rows, then 5 single-token steps and
    # one step of two tokens, each sequence at its own P.
    prompts = [[3, 1, 4, 1, 5, 9], [2, 7], [1, 8, 2, 8]]
    rng = np.random.default_rng(3)
    singles = rng.integers(0, VOCAB, (5, 3)).tolist()
    pair = rng.integers(0, VOCAB, (3, 2)).tolist()
    with attnc.load(decoder.lib, weights=decoder.weights) as m:
        states = m.new_state(batch=3, capacity=16)
        ref = Reference(decoder, causal=True, bidirectional=False, batch=3, capacity=16)
        got, want = [[] for _ in prompts], [[] for _ in prompts]
        worst_run, worst_ref = 0.0, 0.0
        for b, p in enumerate(prompts):
            row = {k: v[b:b + 1] for k, v in states.items()}
            got[b].append(m.prefill({"ids": ids_of([p])}, row)["logits"][0])
            one = Reference(decoder, True, False, 1, 16)
            want[b].append(one.step([p], [0])[0])
            ref.k[:, b], ref.v[:, b] = one.k[:, 0], one.v[:, 0]
        position = np.array([len(p) for p in prompts], np.int32)
        for step in singles + [None]:
            ids = [[t] for t in step] if step else pair
            out = m.decode({"ids": ids_of(ids)}, states, position=position)["logits"]
            expected = ref.step(ids, position)
            worst_ref = max(worst_ref, close(out, expected))
            for b in range(3):
                got[b].append(out[b])
                want[b].append(expected[b])
            position = position + len(ids[0])
        for b, p in enumerate(prompts):
            tokens = p + [s[b] for s in singles] + pair[b]
            full = m.run({"ids": ids_of([tokens])})["logits"][0]
            seen = np.concatenate(got[b])
            worst_run = max(worst_run, close(seen, full))
            worst_ref = max(worst_ref, close(seen, np.concatenate(want[b])))
        print(f"decode vs run {worst_run:.3g}, vs numpy {worst_ref:.3g} (of max |logit|)")


def test_decode_past_max_distance(decoder):
    # One sequence of 20 tokens, 13 of them decoded one at a time: distances
    # up to 19, past max_distance (the far bucket) at decode.
    rng = np.random.default_rng(5)
    tokens = rng.integers(0, VOCAB, 20).tolist()
    with attnc.load(decoder.lib, weights=decoder.weights) as m:
        states = m.new_state(capacity=20)
        ref = Reference(decoder, True, False, 1, 20)
        seen = [m.prefill({"ids": ids_of([tokens[:7]])}, states)["logits"]]
        close(seen[0], ref.step([tokens[:7]], [0]))
        for p in range(7, 20):
            seen.append(m.decode({"ids": ids_of([[tokens[p]]])}, states, position=p)["logits"])
            close(seen[-1], ref.step([[tokens[p]]], [p]))
        close(np.concatenate(seen, axis=1), m.run({"ids": ids_of([tokens])})["logits"])


# ------------------------------------------------------------------ bidirectional


def test_bidirectional_decode(both_ways):
    # No causal term: a decode's queries see every key up to P + S - 1,
    # those after them in the second bucket half. From P = 0 a decode is
    # one run; after a prefill, the numpy model with its own caches.
    rng = np.random.default_rng(9)
    tokens = rng.integers(0, VOCAB, (2, 11)).tolist()
    with attnc.load(both_ways.lib, weights=both_ways.weights) as m:
        full = m.run({"ids": ids_of(tokens)})["logits"]
        states = m.new_state(batch=2, capacity=12)
        at_zero = m.decode({"ids": ids_of(tokens)}, states, position=0)["logits"]
        close(at_zero, full)
        close(full, Reference(both_ways, False, True, 2, 12).step(tokens, [0, 0]))

        states = m.new_state(batch=2, capacity=12)
        ref = Reference(both_ways, False, True, 2, 12)
        # Sequences at 5 and 3 tokens, then two tokens at once and one.
        for b, n in enumerate((5, 3)):
            row = {k: v[b:b + 1] for k, v in states.items()}
            m.prefill({"ids": ids_of([tokens[b][:n]])}, row)
            one = Reference(both_ways, False, True, 1, 12)
            one.step([tokens[b][:n]], [0])
            ref.k[:, b], ref.v[:, b] = one.k[:, 0], one.v[:, 0]
        position = np.array([5, 3], np.int32)
        for width in (2, 1, 2):
            ids = [tokens[b][p:p + width] for b, p in enumerate(position)]
            out = m.decode({"ids": ids_of(ids)}, states, position=position)["logits"]
            close(out, ref.step(ids, position))
            position = position + width
