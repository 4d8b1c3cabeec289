"""The imported GPT-2 fixture (test/import/fixtures/gpt2: 2 layers of 4
heads of 8, random weights) with i8 KV caches (`from_pretrained(kv_cache=
"i8")`, attnc import --kv-cache i8) against the same model with f32 caches:
a prefill, then teacher-forced decodes to the end of the context, the same
tokens fed to both. Every decode reads quantized keys and values, each
within half a step (1/254) of its head's largest, so the logits move by a
small multiple of that of their scale: BOUND, 4 / 254 of the logits' largest
magnitude (attn-run --check's tolerance for an i8 cache). Measured here:
0.067 of logits up to 26 (2.6e-3 of them, a sixth of BOUND). The two must differ (the decodes did read the i8 rows), and
greedy generation from the golden prompts gives transformers' ids."""

import json
import os

import numpy as np
import pytest

import attnc
import tokenizers  # noqa: F401 (from_pretrained needs it)

from conftest import REPO

GPT2 = os.path.join(REPO, "test", "import", "fixtures", "gpt2")
BOUND = 4 / 254


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    cache = tmp_path_factory.mktemp("kv8")
    with attnc.from_pretrained(GPT2, cache_dir=cache) as f32, \
            attnc.from_pretrained(GPT2, cache_dir=cache, kv_cache="i8") as i8:
        yield f32, i8


def test_the_caches_are_i8_with_scales(pair):
    _, i8 = pair
    dtypes = {t.name: t.dtype_name for t in i8.model.states}
    assert dtypes["cache.0.key"] == "i8" and dtypes["cache.1.value"] == "i8"
    assert dtypes["cache.0.key_scale"] == "f32" and len(dtypes) == 8


def test_decodes_against_the_f32_cache(pair):
    f32, i8 = pair
    rng = np.random.default_rng(4)
    context, prompt = 32, 6
    ids = rng.integers(0, 100, size=(2, context), dtype=np.int32)
    logits = []
    for m in (f32.model, i8.model):
        states = m.new_state(batch=2, capacity=context)
        out = [m.prefill({"ids": ids[:, :prompt]}, states)["logits"][:, -1]]
        for p in range(prompt, context):
            out.append(m.decode({"ids": ids[:, p:p + 1]}, states, position=p)["logits"][:, -1])
        logits.append(np.stack(out))
    ref, got = logits
    worst = float(np.abs(got - ref).max())
    scale = float(np.abs(ref).max())
    agree = (ref.argmax(-1) == got.argmax(-1)).mean()
    print(f"i8 against f32 caches over {ref.shape[0]} steps: max |logit error| {worst:.3g} "
          f"(logits up to {scale:.3g}), top-1 agreement {agree:.3f}")
    assert 0 < worst <= BOUND * scale
    # The prefill attends over its own f32 keys: the same logits.
    np.testing.assert_allclose(got[0], ref[0], rtol=0, atol=1e-5 * scale)


def test_greedy_generation_gives_transformers_ids(pair):
    _, i8 = pair
    with open(os.path.join(GPT2, "text_golden.json")) as f:
        g = json.load(f)
    for case in g["cases"]:
        assert i8.generate(case["prompt_ids"], max_new_tokens=g["max_new_tokens"]) == case["ids"]
