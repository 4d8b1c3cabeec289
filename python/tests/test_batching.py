"""attnc.batching without Ray: sequences of mixed lengths and settings
joining and leaving one decode loop of max_batch rows give exactly the ids
Model.generate gives each alone (greedy and seeded sampling); a sequence too
long for the caches is refused; a cancelled one leaves the batch. With f32
and with bf16 caches."""

import os
import threading

import numpy as np
import pytest

import attnc
from attnc.batching import Batcher, Sequence, sampling_config

from conftest import REPO

GPT2 = os.path.join(REPO, "test", "import", "fixtures", "gpt2")


# bf16 caches too: rows copied between slots as the bf16 bits (uint16
# without ml_dtypes).
@pytest.fixture(scope="module", params=["f32", "bf16"])
def lm(request, tmp_path_factory):
    with attnc.from_pretrained(GPT2, cache_dir=tmp_path_factory.mktemp("cache"),
                               kv_cache=request.param) as m:
        yield m


def run(batcher, sequences):
    """Submits the (prompt, max_tokens, config, seed) of `sequences` at
    once; returns each one's (ids, finish reason)."""
    ids = [[] for _ in sequences]
    ends = [None] * len(sequences)
    done = [threading.Event() for _ in sequences]

    def emit(i):
        def on(event):
            if event[0] == "token":
                ids[i].append(event[1])
            else:
                ends[i] = event
                done[i].set()
        return on

    for i, (prompt, n, config, seed) in enumerate(sequences):
        batcher.submit(Sequence(prompt, n, config, seed, batcher_eos, emit(i)))
    for d in done:
        assert d.wait(60)
    return ids, ends


batcher_eos = [0]


@pytest.mark.parametrize("max_batch", [1, 3, 8])
def test_joining_and_leaving_changes_no_sequence(lm, max_batch):
    rng = np.random.default_rng(max_batch)
    sequences = []
    for i in range(40):
        prompt = [int(t) for t in rng.integers(1, 100, size=int(rng.integers(1, 20)))]
        n = int(rng.integers(1, 33 - len(prompt)))
        config = sampling_config() if i % 2 else sampling_config(0.9, 20, 0.95)
        sequences.append((prompt, n, config, i))
    batcher = Batcher(lm.model, max_batch=max_batch)
    try:
        ids, ends = run(batcher, sequences)
        stats = batcher.stats()
    finally:
        batcher.close()
    for (prompt, n, config, seed), got, end in zip(sequences, ids, ends):
        want = lm.model.generate(prompt, n, config.temperature, config.top_k, config.top_p,
                                 seed=seed, eos_token_id=batcher_eos)
        assert got == want
        assert end == ("done", "length" if len(got) == n and got[-1] != 0 else "stop")
    assert stats["max_batch_seen"] == max_batch and stats["active"] == 0


def test_a_sequence_over_the_caches_is_refused(lm):
    batcher = Batcher(lm.model, max_batch=2)
    try:
        with pytest.raises(ValueError, match="32 rows"):
            batcher.submit(Sequence([1] * 20, 13, sampling_config(), None, [], print))
        ids, _ = run(batcher, [([1] * 20, 12, sampling_config(), None)])
        assert len(ids[0]) <= 12
    finally:
        batcher.close()


def test_an_encoder_decoder_is_refused(tmp_path):
    """The batcher steps decoder-only models: BART's decode takes no prompt,
    so it is refused by name rather than decoded wrongly."""
    bart = os.path.join(REPO, "test", "import", "fixtures", "bart")
    with attnc.from_pretrained(bart, cache_dir=tmp_path) as m:
        with pytest.raises(ValueError, match="is an encoder-decoder"):
            Batcher(m.model, max_batch=2)
