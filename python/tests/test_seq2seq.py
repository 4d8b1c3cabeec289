"""Encoder-decoder generation on the fixtures of test/import (BART and T5
as attnc import writes them): greedy ids and text equal transformers'
`generate` (goldens from make_fixtures.py and make_text_fixtures.py,
pinned torch 2.15.0, transformers 5.23.0), a ragged batch of encoder
prompts equals transformers' batched generate, every decode step's logits
equal a run over the whole decoder prefix, and decode takes no encoder
ids."""

import json
import os
import sys

import numpy as np
import pytest

import attnc

from conftest import REPO

sys.path.insert(0, os.path.join(REPO, "test", "e2e"))
import safetensors_io as st  # noqa: E402

FIXTURES = os.path.join(REPO, "test", "import", "fixtures")


@pytest.fixture(scope="module", params=["bart", "t5_conditional"])
def s2s(request, tmp_path_factory):
    cache = tmp_path_factory.mktemp("cache")
    directory = os.path.join(FIXTURES, request.param)
    with attnc.from_pretrained(directory, cache_dir=cache) as m:
        yield request.param, directory, m


def test_greedy_text_equals_transformers(s2s):
    name, directory, m = s2s
    with open(os.path.join(directory, "text_golden.json")) as f:
        g = json.load(f)
    for case in g["cases"]:
        assert m.encode(case["prompt"]) == case["prompt_ids"]
        assert m.generate(case["prompt_ids"], max_new_tokens=g["max_new_tokens"]) == case["ids"]
        assert m.generate(case["prompt"], max_new_tokens=g["max_new_tokens"]) == case["text"]


def golden(directory):
    g = st.load(os.path.join(directory, "golden.safetensors"))
    lengths = g["input.lengths"]
    prompts = [g["input.ids"][b, :n].tolist() for b, n in enumerate(lengths)]
    return g, prompts


def test_a_ragged_batch_equals_transformers(s2s):
    """Encoder prompts of 7, 4 and 1 tokens in one batch; transformers pads
    a sequence after its EOS, the golden is cut there."""
    name, directory, m = s2s
    g, prompts = golden(directory)
    want = g["generate.ids"]
    eos = set(m.eos_token_id)
    got = m.generate(prompts, max_new_tokens=want.shape[1])
    for b, ids in enumerate(got):
        expected = want[b].tolist()
        end = next((i + 1 for i, t in enumerate(expected) if t in eos), len(expected))
        assert ids == expected[:end], f"sequence {b}"
    # Each prompt alone gives what it gives in the batch.
    for b, p in enumerate(prompts):
        assert m.generate(p, max_new_tokens=want.shape[1]) == got[b]


def test_decode_steps_equal_one_run(s2s):
    """Prefill the start token, then decode the golden's generated ids one
    at a time (teacher forcing): each step's logits equal `run` over the
    encoder's ids and the whole decoder prefix. 1e-5 of the largest logit:
    both compute in f32 from the same weights; the caches hold exactly the
    keys and values a run computes, so only the GEMV's summation order
    differs from the run's GEMM."""
    name, directory, m = s2s
    model = m.model
    g, prompts = golden(directory)
    ids, lengths = g["input.ids"], g["input.lengths"]
    start = m.special["decoder_start_token_id"]
    steps = g["generate.ids"][:, :5]
    batch = ids.shape[0]
    states = model.new_state(batch=batch, capacity=1 + steps.shape[1], T=ids.shape[1])
    first = np.full((batch, 1), start, dtype=np.int32)
    logits = [model.prefill({"ids": ids, "lengths": lengths, "decoder_ids": first},
                            states)["logits"][:, -1]]
    for k in range(steps.shape[1] - 1):
        logits.append(model.decode({"decoder_ids": steps[:, k:k + 1], "lengths": lengths},
                                   states, position=1 + k)["logits"][:, -1])
    prefix = np.concatenate([first, steps[:, :-1]], axis=1)
    run = model.run({"ids": ids, "lengths": lengths, "decoder_ids": prefix})["logits"]
    got = np.stack(logits, axis=1)
    assert got.shape == run.shape
    scale = np.abs(run).max()
    assert np.abs(got - run).max() <= 1e-5 * scale


def test_decode_takes_no_encoder_ids(s2s):
    name, directory, m = s2s
    model = m.model
    assert {t.name for t in model.entry_inputs("prefill")} == {"ids", "lengths",
                                                               "decoder_ids"}
    assert {t.name for t in model.entry_inputs("decode")} == {"lengths", "decoder_ids",
                                                              "position"}
    states = model.new_state(batch=1, capacity=4, T=3)
    model.prefill({"ids": [[5, 6, 7]], "lengths": [3], "decoder_ids": [[0]]}, states)
    with pytest.raises(attnc.Error, match="ids"):
        model.decode({"ids": [[5, 6, 7]], "lengths": [3], "decoder_ids": [[4]]}, states,
                     position=1)


def test_bad_requests(s2s):
    name, directory, m = s2s
    with pytest.raises(attnc.ArgumentError, match="decoder_start_token_id"):
        m.model.generate([5, 6], max_new_tokens=2)
    with pytest.raises(attnc.ShapeError, match="longer than the encoder"):
        m.generate([5] * 600, max_new_tokens=2)
    with pytest.raises(attnc.ShapeError, match="rows of the KV cache"):
        m.generate([5, 6], max_new_tokens=10_000)


@pytest.mark.parametrize("name,kv_cache", [("bart", "f16"), ("t5_conditional", "bf16")])
def test_half_precision_caches_generate_transformers_ids(name, kv_cache, tmp_path):
    """Self- and cross-attention caches in f16 / bf16 (attnc --kv-cache; T5's
    decodes add relative position biases over the cache's rows): greedy ids
    still equal transformers' (f32) on these fixtures, alone and batched."""
    directory = os.path.join(FIXTURES, name)
    with open(os.path.join(directory, "text_golden.json")) as f:
        g = json.load(f)
    with attnc.from_pretrained(directory, cache_dir=tmp_path, kv_cache=kv_cache) as m:
        assert {t.dtype_name for t in m.model.states} == {kv_cache}
        for case in g["cases"]:
            assert m.generate(case["prompt_ids"], max_new_tokens=g["max_new_tokens"]) == \
                case["ids"]
        gold, prompts = golden(directory)
        want = gold["generate.ids"]
        eos = set(m.eos_token_id)
        for b, ids in enumerate(m.generate(prompts, max_new_tokens=want.shape[1])):
            expected = want[b].tolist()
            end = next((i + 1 for i, t in enumerate(expected) if t in eos), len(expected))
            assert ids == expected[:end], f"sequence {b}"
