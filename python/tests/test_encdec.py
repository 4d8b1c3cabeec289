"""Decoding an encoder-decoder from caches: a small model whose decoder
caches both its self-attentions' keys and values (`cache = self.{i}`) and its
cross-attentions' keys and values of the encoder's output (`cache =
cross.{i}`, states [B, T, F] with the memory's T). A prefill of a decoder
prefix runs the encoder and writes every cache; each decode takes the
decoder's new token and the encoder's lengths only (the encoder is dead
there, and its ids are no input of the decode), and must give the logits of
an independent float64 numpy forward pass over the whole prefix, and of one
"run" over it. The encoder's sequences are ragged (padding(lengths) in the
encoder and over the memory in the cross-attentions)."""

import numpy as np
import pytest

import attnc
import safetensors_io  # test/e2e, put on sys.path by conftest.py

from conftest import build

D, HEADS, SRC_VOCAB, VOCAB, LAYERS = 16, 2, 20, 24, 2

ENCDEC = """\
model encdec {
  dim B <= 4, T <= 12, S <= 16, L <= 16
  input src : i32[B, T]
  input src_lengths : i32[B]
  input ids : i32[B, S]
  weight enc_emb.weight : f32[20, 16]
  weight enc.ln.weight : f32[16]
  weight enc.ln.bias : f32[16]
  weight enc.attn.qkv.weight : f32[48, 16]
  weight enc.attn.qkv.bias : f32[48]
  weight enc.attn.out.weight : f32[16, 16]
  weight dec_emb.weight : f32[24, 16]
  weight dec_pos.weight : f32[16, 16]
  repeat 2 as i {
    weight dec.{i}.ln.weight : f32[16]
    weight dec.{i}.ln.bias : f32[16]
    weight dec.{i}.self.qkv.weight : f32[48, 16]
    weight dec.{i}.self.out.weight : f32[16, 16]
    weight dec.{i}.cross.q.weight : f32[16, 16]
    weight dec.{i}.cross.q.bias : f32[16]
    weight dec.{i}.cross.kv.weight : f32[32, 16]
    weight dec.{i}.cross.kv.bias : f32[32]
    weight dec.{i}.cross.out.weight : f32[16, 16]
    state self.{i}.key : f32[B, L, 16]
    state self.{i}.value : f32[B, L, 16]
    state cross.{i}.key : f32[B, T, 16]
    state cross.{i}.value : f32[B, T, 16]
  }
  m = embedding(src, enc_emb)
  m = m + self_attention(layer_norm(m, enc.ln), heads = 2, qkv = enc.attn.qkv,
                         out = enc.attn.out, mask = padding(src_lengths))
  x = embedding(ids, dec_emb) + embedding(positions(S), dec_pos)
  repeat 2 as i {
    x = x + self_attention(layer_norm(x, dec.{i}.ln), heads = 2, qkv = dec.{i}.self.qkv,
                           out = dec.{i}.self.out, mask = causal, cache = self.{i})
    x = x + cross_attention(x, m, heads = 2, q = dec.{i}.cross.q, kv = dec.{i}.cross.kv,
                            out = dec.{i}.cross.out, mask = padding(src_lengths),
                            cache = cross.{i})
  }
  output logits = linear(x, dec_emb.weight)
}
"""

# Ragged sources: lengths 7, 4 and 2 of T = 7 (the padding holds id 0).
SRC = np.array([[3, 1, 4, 1, 5, 9, 2],
                [6, 5, 3, 5, 0, 0, 0],
                [8, 9, 0, 0, 0, 0, 0]], np.int32)
LENGTHS = np.array([7, 4, 2], np.int32)

# Against the float64 reference: float32 rounding through two layers of
# 16-feature projections and softmaxes, logits of magnitude ~1-5: a few
# 1e-6 absolute; 1e-4 of the largest logit leaves room for the order of
# the sums (the bound attn-run --generate --check uses).
TOL = 1e-4


@pytest.fixture(scope="module")
def encdec(tmp_path_factory):
    return build(tmp_path_factory.mktemp("encdec"), "encdec", ENCDEC)


@pytest.fixture
def model(encdec):
    with attnc.load(encdec.lib, weights=encdec.weights) as m:
        yield m


@pytest.fixture(scope="module")
def w(encdec):
    return {k: v.astype(np.float64) for k, v in safetensors_io.load(encdec.weights).items()}


def close(a, b):
    scale = max(1.0, float(np.max(np.abs(b))))
    err = float(np.max(np.abs(a - b)))
    assert err <= TOL * scale, f"max abs difference {err:.3g} (logits up to {scale:.3g})"
    return err


# ------------------------------------------------------------------ reference


def layer_norm(x, g, b):
    mean = x.mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + 1e-5) * g + b


def attend(q, k, v, visible):
    """Heads of q [S, D] over k, v [T, D]; visible [S, T] booleans."""
    hd = D // HEADS
    out = np.zeros_like(q)
    for h in range(HEADS):
        cols = slice(h * hd, (h + 1) * hd)
        s = q[:, cols] @ k[:, cols].T / np.sqrt(hd)
        s = np.where(visible, s, -np.inf)
        p = np.exp(s - s.max(-1, keepdims=True))
        out[:, cols] = (p / p.sum(-1, keepdims=True)) @ v[:, cols]
    return out


def memory(w, src, length):
    """The encoder's output [T, D] of one sequence."""
    m = w["enc_emb.weight"][src]
    h = layer_norm(m, w["enc.ln.weight"], w["enc.ln.bias"])
    qkv = h @ w["enc.attn.qkv.weight"].T + w["enc.attn.qkv.bias"]
    keys = np.arange(len(src))[None, :] < length
    visible = np.broadcast_to(keys, (len(src), len(src)))
    a = attend(qkv[:, :D], qkv[:, D:2 * D], qkv[:, 2 * D:], visible)
    return m + a @ w["enc.attn.out.weight"].T


def cross_kv(w, mem, i):
    kv = mem @ w[f"dec.{i}.cross.kv.weight"].T + w[f"dec.{i}.cross.kv.bias"]
    return kv[:, :D], kv[:, D:]


def reference(w, src, length, ids):
    """Logits [S, V] of one sequence's decoder ids [S] over its source."""
    mem = memory(w, src, length)
    s = len(ids)
    x = w["dec_emb.weight"][ids] + w["dec_pos.weight"][:s]
    causal = np.tril(np.ones((s, s), bool))
    padded = np.broadcast_to(np.arange(len(src))[None, :] < length, (s, len(src)))
    for i in range(LAYERS):
        h = layer_norm(x, w[f"dec.{i}.ln.weight"], w[f"dec.{i}.ln.bias"])
        qkv = h @ w[f"dec.{i}.self.qkv.weight"].T
        a = attend(qkv[:, :D], qkv[:, D:2 * D], qkv[:, 2 * D:], causal)
        x = x + a @ w[f"dec.{i}.self.out.weight"].T
        q = x @ w[f"dec.{i}.cross.q.weight"].T + w[f"dec.{i}.cross.q.bias"]
        k, v = cross_kv(w, mem, i)
        x = x + attend(q, k, v, padded) @ w[f"dec.{i}.cross.out.weight"].T
    return x @ w["dec_emb.weight"].T


# ------------------------------------------------------------------ tests


def test_entries_take_their_own_inputs(model):
    names = lambda entry: [t.name for t in model.entry_inputs(entry)]  # noqa: E731
    assert names("run") == [t.name for t in model.inputs] == ["src", "src_lengths", "ids"]
    assert names("prefill") == ["src", "src_lengths", "ids"]
    # The decode reads the cross-attention caches, not the encoder.
    assert names("decode") == ["src_lengths", "ids", "position"]
    position = model.entry_inputs("decode")[2]
    assert position.dtype == np.int32 and position.shape == ("B",)
    cross = [t for t in model.states if t.name.startswith("cross.")]
    assert [t.shape for t in cross] == [("B", "T", D)] * 4
    with pytest.raises(attnc.ArgumentError, match="has no entry 'train'"):
        model.entry_inputs("train")


def test_prefill_then_decode_equals_reference_and_run(model, w):
    B, T = SRC.shape
    rng = np.random.default_rng(3)
    prefix = rng.integers(0, VOCAB, size=(B, 3)).astype(np.int32)
    states = model.new_state(batch=B, capacity=10, T=T)
    assert states["cross.0.key"].shape == (B, T, D)
    assert states["self.0.key"].shape == (B, 10, D)
    seen = model.prefill({"src": SRC, "src_lengths": LENGTHS, "ids": prefix},
                         states)["logits"]
    tokens = prefix
    errors = []
    for b in range(B):
        errors.append(close(seen[b], reference(w, SRC[b], LENGTHS[b], tokens[b])))
    # The prefill wrote each cross cache: the memory's keys and values.
    for b in range(B):
        k, v = cross_kv(w, memory(w, SRC[b], LENGTHS[b]), 1)
        np.testing.assert_allclose(states["cross.1.key"][b], k, atol=1e-5)
        np.testing.assert_allclose(states["cross.1.value"][b], v, atol=1e-5)
    for step in range(4):
        nxt = np.argmax(seen[:, -1, :], axis=-1).astype(np.int32)[:, None]
        position = tokens.shape[1]
        tokens = np.concatenate([tokens, nxt], axis=1)
        # No encoder ids: the memory is in the cross caches.
        seen = model.decode({"src_lengths": LENGTHS, "ids": nxt}, states,
                            position=position)["logits"]
        assert seen.shape == (B, 1, VOCAB)
        for b in range(B):
            ref = reference(w, SRC[b], LENGTHS[b], tokens[b])
            errors.append(close(seen[b, 0], ref[-1]))
        full = model.run({"src": SRC, "src_lengths": LENGTHS, "ids": tokens})["logits"]
        close(seen[:, 0], full[:, -1])
    print(f"max abs error against float64: {max(errors):.3g}")


def test_decode_refuses_the_encoder_ids(model):
    B, T = SRC.shape
    states = model.new_state(batch=B, capacity=8, T=T)
    model.prefill({"src": SRC, "src_lengths": LENGTHS, "ids": SRC[:, :2] % VOCAB}, states)
    with pytest.raises(attnc.ArgumentError) as e:
        model.decode({"src": SRC, "src_lengths": LENGTHS, "ids": SRC[:, :1]}, states,
                     position=2)
    assert str(e.value) == (
        "entry 'decode' of model 'encdec' has no input named 'src': its inputs are "
        "src_lengths, ids, position ('src' is an input of 'run' that 'decode' does not "
        "read: leave it out)")


def test_cross_caches_must_have_the_memorys_length(model):
    # The cross caches and the encoder's ids both bind T: a prefill with
    # caches of another length is refused before anything runs.
    B, T = SRC.shape
    states = model.new_state(batch=B, capacity=8, T=T + 1)
    with pytest.raises(attnc.ShapeError) as e:
        model.prefill({"src": SRC, "src_lengths": LENGTHS, "ids": SRC[:, :2]}, states)
    assert "symbol T is 7 in input 'src' dim 1 but 8 in state 'cross.0.key' dim 1: " \
        "give every input and state the same T" in str(e.value)
    assert not any(a.any() for a in states.values())


def test_generate_an_encoder_decoder(model):
    """Model.generate reads the prompts as the encoder's ids (attnc.seq2seq):
    greedy ids equal those `run` over the whole decoder prefix chooses step
    by step, for the ragged prompts of SRC one by one and as one batch."""
    with pytest.raises(attnc.ArgumentError, match="decoder_start_token_id"):
        model.generate([1, 2], 3)
    prompts = [SRC[b, :n].tolist() for b, n in enumerate(LENGTHS)]
    want = []
    for p in prompts:
        ids = [0]
        for _ in range(4):
            logits = model.run({"src": np.array([p], np.int32),
                                "src_lengths": np.array([len(p)], np.int32),
                                "ids": np.array([ids], np.int32)})["logits"]
            ids.append(int(np.argmax(logits[0, -1])))
        want.append(ids[1:])
    assert model.generate(prompts, 4, decoder_start_token_id=0) == want
    for p, w in zip(prompts, want):
        assert model.generate(p, 4, decoder_start_token_id=0) == w
