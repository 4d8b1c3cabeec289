"""Choosing tokens as transformers' `generate` does (attnc.sampling), and
Model.generate on the test decoder with KV caches.

The filters against goldens from transformers' own processors
(make_sampling_goldens.py: GenerationMixin._get_logits_processor, so their
order too) on fixed logits: the kept set must be the same token for token,
and the kept logits and the probabilities equal to 1e-6 (both compute in
float32 with the same operations; the softmax's exp may differ in the last
bit). Generation: greedy equals the argmax of one full "run" at every step;
a seeded draw repeats; streaming equals the list; EOS and stop sequences
end a sequence with their tokens; a batch equals each prompt alone; bad
requests raise ArgumentError or ShapeError."""

import json
import os

import numpy as np
import pytest

import attnc
import safetensors_io  # test/e2e, put on sys.path by conftest.py
from attnc import sampling

from test_decode import KV, VOCAB, ids_of  # the tiny GPT-2-like decoder
from conftest import build

GOLDENS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "goldens",
                       "sampling.safetensors")


def golden_cases():
    tensors, meta = safetensors_io.load(GOLDENS, with_metadata=True)
    return tensors, json.loads(meta["cases"])


def our_config(kwargs):
    """transformers' GenerationConfig arguments as attnc's: its defaults are
    temperature 1.0 and top_k 50 when sampling; not sampling is greedy."""
    if not kwargs.get("do_sample"):
        return sampling.SamplingConfig(0.0, 0, 1.0, kwargs.get("repetition_penalty", 1.0))
    return sampling.SamplingConfig(kwargs.get("temperature", 1.0), kwargs.get("top_k", 50),
                                   kwargs.get("top_p", 1.0),
                                   kwargs.get("repetition_penalty", 1.0))


@pytest.mark.parametrize("case", list(golden_cases()[1]))
def test_filters_match_transformers(case):
    tensors, cases = golden_cases()
    config = our_config(cases[case])
    scores = sampling.filtered_logits(tensors["logits"], tensors["seen"], config)
    want = tensors[f"{case}.scores"]
    for row, (got_row, want_row) in enumerate(zip(scores, want)):
        kept, want_kept = np.isfinite(got_row), np.isfinite(want_row)
        # The same kept values: which of several equal logits top-p keeps is
        # torch.sort's (unstable) choice, so positions are compared only in
        # rows without equal logits (row 2 has eight at its top).
        np.testing.assert_allclose(np.sort(got_row[kept]), np.sort(want_row[want_kept]),
                                   rtol=1e-6, atol=0, err_msg=f"{case}, row {row}")
        if len(np.unique(tensors["logits"][row])) == tensors["logits"].shape[1]:
            assert (kept == want_kept).all(), f"{case}, row {row}: other tokens kept"
    if not config.greedy:
        np.testing.assert_allclose(np.sort(sampling.softmax(scores), axis=1),
                                   np.sort(tensors[f"{case}.probs"], axis=1),
                                   rtol=0, atol=1e-6)


def test_the_goldens_cut_something():
    # Each filter case removes tokens somewhere, and some keep several in a
    # row: a test that keeps or removes everything proves nothing.
    tensors, cases = golden_cases()
    width = tensors["logits"].shape[1]
    for case, kwargs in cases.items():
        if kwargs.get("do_sample") and case != "temperature":
            assert np.isfinite(tensors[f"{case}.scores"]).sum(axis=1).min() < width, case
    for case in ("top_k5", "top_p09", "all", "hot"):
        assert np.isfinite(tensors[f"{case}.scores"]).sum(axis=1).max() > 1, case


def test_sampling_draws_from_the_kept_set():
    tensors, _ = golden_cases()
    config = sampling.SamplingConfig(temperature=1.0, top_k=3)
    rng = np.random.default_rng(0)
    kept = np.isfinite(sampling.top_k(tensors["logits"], 3))
    for _ in range(50):
        ids = sampling.next_tokens(tensors["logits"], tensors["seen"], config, rng)
        assert kept[np.arange(len(ids)), ids].all()


@pytest.mark.parametrize("bad", [dict(temperature=-1), dict(top_k=-2), dict(top_k=1.5),
                                 dict(top_p=0), dict(top_p=1.5),
                                 dict(repetition_penalty=0), dict(temperature=float("nan"))])
def test_bad_sampling_settings(bad):
    with pytest.raises(ValueError):
        sampling.SamplingConfig(**bad)


# ------------------------------------------------------------------ generate


@pytest.fixture(scope="module")
def decoder(tmp_path_factory):
    kv = build(tmp_path_factory.mktemp("gen"), "kv", KV)
    with attnc.load(kv.lib, weights=kv.weights) as m:
        yield m


def test_greedy_is_the_argmax_of_one_run(decoder):
    prompt = [3, 1, 4, 1, 5]
    new = decoder.generate(prompt, max_new_tokens=8)
    assert len(new) == 8 and all(isinstance(t, int) for t in new)
    tokens = prompt + new
    logits = decoder.run({"ids": ids_of([tokens])})["logits"][0]
    assert new == np.argmax(logits[len(prompt) - 1:-1], axis=-1).tolist()


def test_int64_prompts_and_a_batch(decoder):
    prompts = np.array([[3, 1, 4], [2, 7, 1]], dtype=np.int64)
    together = decoder.generate(prompts, max_new_tokens=5)
    alone = [decoder.generate(p.tolist(), max_new_tokens=5) for p in prompts]
    assert together == alone


def test_ragged_prompts_equal_each_alone(decoder):
    prompts = [[1, 2, 3, 4, 5], [9], [7, 7]]
    got = decoder.generate(prompts, max_new_tokens=4, repetition_penalty=1.5)
    assert got == [decoder.generate(p, max_new_tokens=4, repetition_penalty=1.5)
                   for p in prompts]


def test_seeded_sampling_repeats(decoder):
    args = dict(max_new_tokens=10, temperature=1.3, top_p=0.9, seed=42)
    a, b = decoder.generate([5, 6], **args), decoder.generate([5, 6], **args)
    assert a == b
    others = {tuple(decoder.generate([5, 6], **{**args, "seed": s})) for s in range(6)}
    assert len(others) > 1, "six seeds drew one sequence: the draw ignores the seed"


def test_stream_equals_the_list(decoder):
    args = dict(max_new_tokens=6, temperature=0.8, seed=1)
    assert list(decoder.generate([4, 4, 2], stream=True, **args)) == \
        decoder.generate([4, 4, 2], **args)
    steps = list(decoder.generate([[1, 2], [3, 4]], stream=True, max_new_tokens=3))
    assert len(steps) == 3 and all(len(s) == 2 for s in steps)


def test_eos_and_stop_end_a_sequence(decoder):
    free = decoder.generate([3, 1, 4], max_new_tokens=8)
    eos = free[2]
    first = free.index(eos)
    assert decoder.generate([3, 1, 4], max_new_tokens=8, eos_token_id=eos) == free[:first + 1]
    assert decoder.generate([3, 1, 4], max_new_tokens=8, eos_token_id=[999, eos]) == \
        free[:first + 1]
    stop = free[3:5]
    end = next(i for i in range(len(free)) if free[max(0, i - 1):i + 1] == stop)
    assert decoder.generate([3, 1, 4], max_new_tokens=8, stop=[stop]) == free[:end + 1]
    # In a batch, a finished sequence stops while the other goes on.
    both = decoder.generate([[3, 1, 4], [3, 1, 4]], max_new_tokens=8, eos_token_id=eos)
    assert both == [free[:first + 1]] * 2


def test_a_finished_sequence_leaves_the_batch(decoder):
    # An EOS that ends the first prompt's sequence early and never comes in
    # the second's: the second goes on alone (its caches moved into a
    # smaller state set) and must equal its run alone.
    a, b = [3, 1, 4], [2, 7, 1, 8, 2]
    free_a, free_b = (decoder.generate(p, max_new_tokens=10) for p in (a, b))
    cut = next(i for i, t in enumerate(free_a) if t not in free_b and i < 9)
    got = decoder.generate([a, b], max_new_tokens=10, eos_token_id=free_a[cut])
    assert got == [free_a[:cut + 1], free_b]


def test_bad_requests(decoder, tiny):
    with pytest.raises(attnc.ArgumentError, match="outside the vocabulary"):
        decoder.generate([1, VOCAB], max_new_tokens=2)
    with pytest.raises(attnc.ArgumentError, match="max_new_tokens"):
        decoder.generate([1], max_new_tokens=0)
    with pytest.raises(attnc.ShapeError, match="rows of the KV cache"):
        decoder.generate([1] * 20, max_new_tokens=5)
    with pytest.raises(attnc.ArgumentError, match="non-empty"):
        decoder.generate([[1], []], max_new_tokens=2)
    with pytest.raises(attnc.ArgumentError, match="top_p"):
        decoder.generate([1], max_new_tokens=2, top_p=0)
    with attnc.load(tiny.lib, weights=tiny.weights) as m:
        with pytest.raises(attnc.ArgumentError, match="cannot generate"):
            m.generate([1], max_new_tokens=2)
