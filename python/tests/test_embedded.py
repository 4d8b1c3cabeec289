"""Embedded weights (attnc --weights) against weights read at load, for the
models of the tests that have state (KV caches), each kind of weight once: attnc computes the embedded
constants by running the model's own "init" kernels on the weights file, so
the two libraries must give the same bits for "run", for "prefill" and for
each "decode" step, in every output and in every byte of the caches.

(models/llama.attn, TinyLlama's 1.1B shapes, is left out: embedding its 2.2 GB
of weights would build a 2.2 GB library; test/driver/kv-cache-llama.attn has
its kernels at a small size.)"""

import os

import numpy as np
import pytest

import attnc

from conftest import REPO

# Left out: test/driver/kv-cache-long.attn, whose weights are
# kv-cache-llama's kinds (what it adds, many key tiles, needs contexts past
# 64 that these tests' capacity of 12 never reaches; its lit test decodes
# 640), and test/driver/kv-cache-half.attn, whose weights are kv-cache's
# (its f16 caches are state, not weights: the same kernels write them in
# both libraries).
STATEFUL_MODELS = [
    "test/driver/kv-cache.attn",        # GPT-2: joined Q|K|V, layout(in, out)
    "test/driver/kv-cache-llama.attn",  # GQA, RoPE, gated MLP, RMSNorm
    "test/models/decoder.attn",         # a bf16 weight
]
# Token ids every model above has (its smallest vocabulary is 24).
VOCAB = 24


def same_bits(a, b, what):
    assert a.dtype == b.dtype and a.shape == b.shape, what
    assert a.tobytes() == b.tobytes(), f"{what}: max difference {np.max(np.abs(a - b))}"


@pytest.fixture(scope="module", params=STATEFUL_MODELS)
def twins(request, tmp_path_factory):
    """(load-time model, embedded model) of one model file."""
    tmp = tmp_path_factory.mktemp("embedded")
    source = os.path.join(REPO, request.param)
    weights = attnc.init_weights(source, tmp / "w.safetensors", seed=11)
    load_lib = attnc.compile(source, tmp / "load.so")
    embedded_lib = attnc.compile(source, tmp / "embedded.so", weights=weights)
    with attnc.load(load_lib, weights=weights) as load, attnc.load(embedded_lib) as embedded:
        yield load, embedded


def test_run_is_bit_identical(twins):
    load, embedded = twins
    ids = np.random.default_rng(1).integers(0, VOCAB, size=(2, 9)).astype(np.int32)
    a, b = load.run({"ids": ids}), embedded.run({"ids": ids})
    assert a.keys() == b.keys()
    for name in a:
        same_bits(a[name], b[name], name)


def test_prefill_and_decode_are_bit_identical(twins):
    load, embedded = twins
    assert embedded.entries == load.entries == ("run", "prefill", "decode")
    rng = np.random.default_rng(2)
    prompt = rng.integers(0, VOCAB, size=(2, 5)).astype(np.int32)
    states = [m.new_state(batch=2, capacity=12) for m in twins]
    logits = [m.prefill({"ids": prompt}, s)["logits"] for m, s in zip(twins, states)]
    same_bits(*logits, "prefill logits")
    for position in range(5, 12):
        ids = np.argmax(logits[0][:, -1, :], axis=-1).astype(np.int32)[:, None]
        logits = [m.decode({"ids": ids}, s, position=position)["logits"]
                  for m, s in zip(twins, states)]
        same_bits(*logits, f"decode logits at {position}")
    for name in states[0]:
        same_bits(states[0][name], states[1][name], f"state {name}")


def test_a_ragged_batch_decodes_as_each_sequence_alone(twins):
    # Each sequence of one batch at its own position: RoPE, GQA and the
    # bf16 weight per sequence.
    load, embedded = twins
    prompts = [[3, 1, 4, 1, 5, 9, 2], [6], [5, 3, 5]]
    for m in twins:
        batch = m.generate(prompts, max_new_tokens=5)
        assert batch == [m.generate(p, max_new_tokens=5) for p in prompts]
    assert load.generate(prompts, max_new_tokens=5) == embedded.generate(prompts, max_new_tokens=5)
