"""Decoding from Python: a tiny GPT-2-like model with KV caches (`state` and
`cache = past.{i}`, as test/driver/kv-cache.attn) through Model.states,
has_entry, new_state, prefill and decode. Prefill + decode steps must give
the logits of one "run" over the whole sequence; the caches are the caller's
arrays, written in place (their rows checked against a float64 numpy K and V);
bad states are refused with the package's errors; a decode past the capacity
raises and leaves every state byte as it was; two state sets are two
independent sequences; a copied state set forks a sequence."""

import numpy as np
import pytest

import attnc
import safetensors_io  # test/e2e, put on sys.path by conftest.py

from conftest import build

D, HEADS, VOCAB, LAYERS = 32, 4, 40, 2

KV = """\
model kv {
  dim B <= 8, S <= 24, L <= 24
  input ids : i32[B, S]
  weight wte.weight : f32[40, 32]
  weight wpe.weight : f32[24, 32]
  repeat 2 as i {
    weight h.{i}.ln_1.weight : f32[32]
    weight h.{i}.ln_1.bias : f32[32]
    weight h.{i}.attn.c_attn.weight : f32[32, 96] layout(in, out)
    weight h.{i}.attn.c_attn.bias : f32[96]
    weight h.{i}.attn.c_proj.weight : f32[32, 32] layout(in, out)
    weight h.{i}.attn.c_proj.bias : f32[32]
    weight h.{i}.mlp.fc.weight : f32[64, 32]
    weight h.{i}.mlp.proj.weight : f32[32, 64]
    state past.{i}.key : f32[B, L, 32]
    state past.{i}.value : f32[B, L, 32]
  }
  weight ln_f.weight : f32[32]
  weight ln_f.bias : f32[32]
  x = embedding(ids, wte) + embedding(positions(S), wpe)
  repeat 2 as i {
    x = x + self_attention(layer_norm(x, h.{i}.ln_1), heads = 4,
                           qkv = h.{i}.attn.c_attn, out = h.{i}.attn.c_proj,
                           mask = causal, cache = past.{i})
    x = x + linear(gelu(linear(x, h.{i}.mlp.fc)), h.{i}.mlp.proj)
  }
  output logits = linear(layer_norm(x, ln_f), wte.weight)
}
"""

STATE_NAMES = [f"past.{i}.{kv}" for i in range(LAYERS) for kv in ("key", "value")]

# Prefill + decode against one run: both compute in float32 and differ only in
# the order of the attention's sums (the cache's key tiles against those of
# one pass), so rounding: a few ulps of logits of magnitude ~1-5. attn-run
# --generate --check uses the same bound, 1e-4 * max(1, max |logit|).
TOL = 1e-4
# The cache's rows against a float64 numpy layer_norm + projection over 32
# features: float32 rounding of O(1) values.
CACHE_ATOL = 1e-5


@pytest.fixture(scope="module")
def kv(tmp_path_factory):
    return build(tmp_path_factory.mktemp("kv"), "kv", KV)


@pytest.fixture
def model(kv):
    with attnc.load(kv.lib, weights=kv.weights) as m:
        yield m


def ids_of(tokens):
    return np.ascontiguousarray(tokens, dtype=np.int32)


def close(a, b):
    scale = max(1.0, float(np.max(np.abs(b))))
    err = float(np.max(np.abs(a - b)))
    assert err <= TOL * scale, f"max abs difference {err:.3g} (logits up to {scale:.3g})"


def generate(model, states, prompt, steps):
    """Greedy: prefill `prompt` [B, P], then `steps` single-token decodes.
    Returns (tokens [B, P + steps], every one fed; logits [B, P + steps, V]
    as the calls gave them)."""
    logits = model.prefill({"ids": ids_of(prompt)}, states)["logits"]
    seen, tokens = [logits], np.asarray(prompt, dtype=np.int32)
    for _ in range(steps):
        nxt = np.argmax(seen[-1][:, -1, :], axis=-1).astype(np.int32)[:, None]
        position = tokens.shape[1]
        tokens = np.concatenate([tokens, nxt], axis=1)
        seen.append(model.decode({"ids": nxt}, states, position=position)["logits"])
    return tokens, np.concatenate(seen, axis=1)


# ------------------------------------------------------------------ describe


def test_states_and_entries(model, tiny):
    assert [t.name for t in model.states] == STATE_NAMES
    for t in model.states:
        assert t.dtype == np.float32 and t.dtype_name == "f32"
        assert t.shape == ("B", "L", D)
        assert t.dims[1] == attnc.Dim(symbol="L", max=24)
    assert model.entries == ("run", "prefill", "decode")
    assert model.has_entry("decode") and model.has_entry("prefill") and model.has_entry("run")
    assert not model.has_entry("train")
    with attnc.load(tiny.lib, weights=tiny.weights) as m:
        assert m.states == [] and m.entries == ("run",) and not m.has_entry("decode")
        with pytest.raises(attnc.ArgumentError, match="has no states"):
            m.new_state()


def test_new_state(model):
    states = model.new_state(batch=3, capacity=10)
    assert list(states) == STATE_NAMES
    for a in states.values():
        assert a.shape == (3, 10, D) and a.dtype == np.float32 and not a.any()
        assert a.flags.c_contiguous and a.flags.writeable
    assert model.new_state()["past.0.key"].shape == (1, 24, D)      # the bound of L
    with pytest.raises(attnc.DimOutOfBoundsError, match=r"capacity 25 for L .*at most 24"):
        model.new_state(capacity=25)
    with pytest.raises(attnc.DimOutOfBoundsError, match=r"batch 0 for B"):
        model.new_state(batch=0)


# ------------------------------------------------------------------ numerics


def test_prefill_then_decode_equals_one_run(model):
    rng = np.random.default_rng(1)
    prompt = rng.integers(0, VOCAB, size=(2, 5))
    states = model.new_state(batch=2, capacity=16)
    tokens, seen = generate(model, states, prompt, steps=8)
    assert seen.shape == (2, 13, VOCAB)
    full = model.run({"ids": ids_of(tokens)})["logits"]              # every token fed
    close(seen, full)
    # Rows past the last token were never written (zero-copy, in place).
    for a in states.values():
        assert a[:, :13].any(axis=-1).all() and not a[:, 13:].any()


def test_cache_holds_the_keys_and_values(model, kv):
    # Layer 0's cache rows against numpy: K and V of layer_norm(x, ln_1).
    w = {k: v.astype(np.float64) for k, v in safetensors_io.load(kv.weights).items()}
    prompt = np.array([[3, 1, 4, 1, 5, 9, 2]])
    states = model.new_state(batch=1, capacity=8)
    model.prefill({"ids": ids_of(prompt)}, states)
    x = w["wte.weight"][prompt[0]] + w["wpe.weight"][:7]
    mean = x.mean(-1, keepdims=True)
    h = (x - mean) / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + 1e-5)
    h = h * w["h.0.ln_1.weight"] + w["h.0.ln_1.bias"]
    qkv = h @ w["h.0.attn.c_attn.weight"] + w["h.0.attn.c_attn.bias"]      # layout(in, out)
    np.testing.assert_allclose(states["past.0.key"][0, :7], qkv[:, D:2 * D], atol=CACHE_ATOL)
    np.testing.assert_allclose(states["past.0.value"][0, :7], qkv[:, 2 * D:], atol=CACHE_ATOL)
    assert not states["past.0.key"][0, 7:].any()


def test_decode_several_tokens_at_once(model):
    prompt = np.array([[7, 8, 9]])
    more = np.array([[10, 11, 12, 13]])
    states = model.new_state(capacity=7)
    model.prefill({"ids": ids_of(prompt)}, states)
    got = model.decode({"ids": ids_of(more)}, states, position=3)["logits"]
    full = model.run({"ids": ids_of(np.concatenate([prompt, more], axis=1))})["logits"]
    close(got, full[:, 3:])


def test_decode_with_position_array_and_out(model):
    states = model.new_state(batch=2, capacity=4)
    model.prefill({"ids": ids_of([[1, 2], [3, 4]])}, states)
    out = np.empty((2, 1, VOCAB), np.float32)
    r = model.run({"ids": ids_of([[5], [6]]), "position": np.array([2, 2], np.int32)},
                  out={"logits": out}, entry="decode", states=states)
    assert r["logits"] is out
    close(out, model.run({"ids": ids_of([[1, 2, 5], [3, 4, 6]])})["logits"][:, 2:])


def test_sequences_of_one_batch_decode_at_their_own_positions(model):
    # Ragged prompts: each prefilled into its own row of one state set (a
    # row of a state is a [1, L, F] view the runtime writes in place), then
    # decoded together, each sequence at its own position.
    prompts = [[3, 1, 4, 1, 5, 9], [2, 7], [1, 8, 2, 8]]
    states = model.new_state(batch=3, capacity=12)
    for b, p in enumerate(prompts):
        model.prefill({"ids": ids_of([p])}, {k: v[b:b + 1] for k, v in states.items()})
    steps = [[6, 5, 3], [1, 4, 1], [2, 2, 2]]   # three tokens per sequence, one per step
    seen = []
    for i, step in enumerate(steps):
        position = np.array([len(p) + i for p in prompts], np.int32)
        seen.append(model.decode({"ids": ids_of([[t] for t in step])}, states,
                                 position=position)["logits"])
    for b, p in enumerate(prompts):
        full = model.run({"ids": ids_of([p + [s[b] for s in steps]])})["logits"]
        close(np.concatenate([s[b:b + 1] for s in seen], axis=1), full[:, len(p):])
    # A sequence past its capacity fails the whole step before any row is
    # written, naming the sequence.
    saved = snapshot(states)
    with pytest.raises(attnc.KernelError, match="position 12 of sequence 1 needs 13 rows"):
        model.decode({"ids": ids_of([[1], [1], [1]])}, states,
                     position=np.array([9, 12, 7], np.int32))
    assert snapshot(states) == saved


def test_a_batch_of_eight_decodes_as_each_sequence_alone(model):
    # From a register tile's rows up (TargetDesc::gemmRowTile: 6 on x86), a
    # decode's GEMMs tile the sequences, the last tile shifted inwards (of 8,
    # rows 2 to 5 are computed twice); one sequence takes the GEMVs. Each
    # output sums its products in the same order either way, so the logits
    # are those of each sequence decoded alone, bit for bit.
    rng = np.random.default_rng(8)
    prompts = [rng.integers(0, VOCAB, n).tolist() for n in (5, 1, 7, 3, 2, 6, 4, 8)]
    states = model.new_state(batch=8, capacity=16)
    alone = [model.new_state(capacity=16) for _ in prompts]
    for b, p in enumerate(prompts):
        model.prefill({"ids": ids_of([p])}, {k: v[b:b + 1] for k, v in states.items()})
        model.prefill({"ids": ids_of([p])}, alone[b])
    for i in range(3):
        step = rng.integers(0, VOCAB, len(prompts))
        position = np.array([len(p) + i for p in prompts], np.int32)
        batched = model.decode({"ids": ids_of(step[:, None])}, states,
                               position=position)["logits"]
        for b, p in enumerate(prompts):
            one = model.decode({"ids": ids_of([[step[b]]])}, alone[b],
                               position=len(p) + i)["logits"]
            np.testing.assert_array_equal(batched[b:b + 1], one)


def test_two_sequences_in_two_state_sets(model):
    a_prompt, b_prompt = np.array([[1, 2, 3, 4]]), np.array([[30, 20, 10]])
    a, b = model.new_state(capacity=12), model.new_state(capacity=12)
    la = [model.prefill({"ids": ids_of(a_prompt)}, a)["logits"]]
    lb = [model.prefill({"ids": ids_of(b_prompt)}, b)["logits"]]
    a_toks, b_toks = [5, 6, 7, 8], [11, 12, 13, 14, 15]
    # Interleaved: each step of one sequence between steps of the other.
    for i in range(5):
        if i < len(a_toks):
            la.append(model.decode({"ids": [[a_toks[i]]]}, a, position=4 + i)["logits"])
        lb.append(model.decode({"ids": [[b_toks[i]]]}, b, position=3 + i)["logits"])
    full_a = model.run({"ids": ids_of([a_prompt[0].tolist() + a_toks])})["logits"]
    full_b = model.run({"ids": ids_of([b_prompt[0].tolist() + b_toks])})["logits"]
    close(np.concatenate(la, axis=1), full_a)
    close(np.concatenate(lb, axis=1), full_b)


def test_copied_states_fork_a_sequence(model):
    states = model.new_state(capacity=10)
    model.prefill({"ids": ids_of([[2, 7, 1, 8]])}, states)
    model.decode({"ids": [[2]]}, states, position=4)
    fork = {k: v.copy() for k, v in states.items()}
    before = {k: v.copy() for k, v in states.items()}
    # The same tokens from the copy give the same continuation, bit for bit
    # (the same kernels on the same rows).
    for i, t in enumerate([8, 1, 8]):
        x = model.decode({"ids": [[t]]}, states, position=5 + i)["logits"]
        y = model.decode({"ids": [[t]]}, fork, position=5 + i)["logits"]
        np.testing.assert_array_equal(x, y)
    # Another token from a second copy taken before: its own continuation,
    # and the original's rows 0..4 are untouched by it.
    other = {k: v.copy() for k, v in before.items()}
    z = model.decode({"ids": [[3]]}, other, position=5)["logits"]
    close(z, model.run({"ids": ids_of([[2, 7, 1, 8, 2, 3]])})["logits"][:, 5:])
    for k in states:
        np.testing.assert_array_equal(states[k][:, :5], before[k][:, :5])


# ------------------------------------------------------------------ errors


def snapshot(states):
    return {k: v.tobytes() for k, v in states.items()}


def test_decode_past_capacity_raises_and_writes_nothing(model):
    states = model.new_state(capacity=6)
    model.prefill({"ids": ids_of([[1, 2, 3, 4, 5]])}, states)
    model.decode({"ids": [[6]]}, states, position=5)                 # row 5: the last
    saved = snapshot(states)
    with pytest.raises(attnc.KernelError, match="decoding 1 tokens at position 6 of sequence 0 "
                                                "needs 7 rows of the KV cache, which has 6 "
                                                "rows"):
        model.decode({"ids": [[7]]}, states, position=6)
    assert snapshot(states) == saved
    with pytest.raises(attnc.KernelError, match="needs 8 rows"):
        model.decode({"ids": [[7, 8]]}, states, position=6)
    assert snapshot(states) == saved
    with pytest.raises(attnc.KernelError, match="prefill of 7 tokens does not fit"):
        model.prefill({"ids": ids_of([[1] * 7])}, states)
    assert snapshot(states) == saved


def test_bad_states_refused(model):
    ids = {"ids": ids_of([[1, 2]])}
    good = model.new_state(capacity=4)
    saved = snapshot(good)

    def with_(name, value):
        return dict(good, **{name: value})

    with pytest.raises(attnc.DTypeError, match="state 'past.0.key' is a numpy float64 array "
                                               "but the model keeps it as float32"):
        model.prefill(ids, with_("past.0.key", np.zeros((1, 4, D))))
    with pytest.raises(attnc.DTypeError):
        model.prefill(ids, with_("past.1.value", np.zeros((1, 4, D), np.float16)))
    with pytest.raises(attnc.ShapeError, match="past.1.key"):             # F is 32
        model.prefill(ids, with_("past.1.key", np.zeros((1, 4, 16), np.float32)))
    with pytest.raises(attnc.ShapeError):                                   # rank 2
        model.prefill(ids, with_("past.1.key", np.zeros((4, D), np.float32)))
    with pytest.raises(attnc.Error):                       # capacities disagree (L)
        model.prefill(ids, with_("past.0.value", np.zeros((1, 5, D), np.float32)))
    with pytest.raises(attnc.Error):                       # batch 2 against ids' batch 1
        model.prefill(ids, model.new_state(batch=2, capacity=4))
    with pytest.raises(attnc.DimOutOfBoundsError):                          # L <= 24
        model.prefill(ids, {k: np.zeros((1, 25, D), np.float32) for k in good})
    with pytest.raises(attnc.ArgumentError, match="writable C-contiguous"):
        model.prefill(ids, with_("past.0.key", np.zeros((1, D, 4), np.float32).transpose(0, 2, 1)))
    frozen = np.zeros((1, 4, D), np.float32)
    frozen.flags.writeable = False
    with pytest.raises(attnc.ArgumentError, match="writable C-contiguous"):
        model.prefill(ids, with_("past.0.key", frozen))
    with pytest.raises(TypeError, match="must be a numpy array"):
        model.prefill(ids, with_("past.0.key", [[[0.0] * D] * 4]))
    missing = dict(good)
    del missing["past.1.value"]
    with pytest.raises(attnc.ArgumentError, match="states"):
        model.prefill(ids, missing)
    missing["past.9.key"] = np.zeros((1, 4, D), np.float32)
    with pytest.raises(attnc.ArgumentError, match="no state named 'past.9.key'"):
        model.prefill(ids, missing)
    with pytest.raises(attnc.ArgumentError, match="takes no states"):
        model.run(ids, states=good)
    with pytest.raises(attnc.ArgumentError):                   # decode needs `position`
        model.run(ids, entry="decode", states=good)
    with pytest.raises(attnc.ArgumentError):
        model.run(ids, entry="train", states=good)
    assert snapshot(good) == saved
