"""attnc.from_pretrained on the decoder fixtures of test/import (GPT-2, and
Llama with a BOS-adding tokenizer and bf16 weights): the prompt's ids equal
transformers' tokenizer's, and greedy generation equals transformers'
`generate` token for token and in text (goldens from
test/import/make_text_fixtures.py, pinned torch 2.15.0, transformers 5.23.0,
tokenizers 0.23.3); the compiled library is cached; batches, streaming,
stop strings and bad directories."""

import json
import os
import shutil

import pytest

import attnc
import tokenizers  # noqa: F401 (scripts/setup.sh installs it; from_pretrained needs it)

from conftest import REPO

FIXTURES = os.path.join(REPO, "test", "import", "fixtures")


def golden(name):
    with open(os.path.join(FIXTURES, name, "text_golden.json")) as f:
        return json.load(f)


@pytest.fixture(scope="module", params=["gpt2", "llama"])
def lm(request, tmp_path_factory):
    cache = tmp_path_factory.mktemp("cache")
    with attnc.from_pretrained(os.path.join(FIXTURES, request.param), cache_dir=cache) as m:
        yield request.param, m, cache


def test_greedy_equals_transformers(lm):
    name, m, _ = lm
    g = golden(name)
    for case in g["cases"]:
        assert m.encode(case["prompt"]) == case["prompt_ids"]
        assert m.generate(case["prompt_ids"], max_new_tokens=g["max_new_tokens"]) == case["ids"]
        assert m.generate(case["prompt"], max_new_tokens=g["max_new_tokens"]) == case["text"]


def libraries(cache):
    """The libraries in a from_pretrained cache (beside them, attnc keeps
    the kernels it compiled: kernels/, halide-runtime/)."""
    return sorted(f for f in os.listdir(cache) if f.endswith(".so"))


def test_the_library_is_cached(lm):
    name, _, cache = lm
    libs = libraries(cache)
    assert len(libs) == 1
    # attnc was given the same directory for what it compiled.
    assert os.listdir(os.path.join(cache, "kernels"))
    before = os.stat(os.path.join(cache, libs[0])).st_mtime_ns
    with attnc.from_pretrained(os.path.join(FIXTURES, name), cache_dir=cache):
        pass
    assert libraries(cache) == libs
    assert os.stat(os.path.join(cache, libs[0])).st_mtime_ns == before
    # Another --max-context is another library (its key, as _compiled
    # reads it: compiling it would only repeat the compile above).
    from attnc.pretrained import _cache_key, _options
    d = os.path.join(FIXTURES, name)
    assert _cache_key(d, _options(max_context=16)) != _cache_key(d, _options())
    assert _cache_key(d, _options(kv_cache="f32")) == _cache_key(d, _options())
    # So is another --precision; f32, the default, keeps the key.
    assert _cache_key(d, _options(precision="bf16")) != _cache_key(d, _options())
    assert _cache_key(d, _options(precision="f32")) == _cache_key(d, _options())


def test_a_batch_and_a_stream(lm):
    name, m, _ = lm
    cases = golden(name)["cases"]
    n = golden(name)["max_new_tokens"]
    prompts = [c["prompt"] for c in cases]
    assert m.generate(prompts, max_new_tokens=n) == [c["text"] for c in cases]
    pieces = list(m.generate(prompts[0], max_new_tokens=n, stream=True))
    assert "".join(pieces) == cases[0]["text"] and len(pieces) > 1


def test_a_stop_string_ends_the_text(lm):
    name, m, _ = lm
    case = golden(name)["cases"][1]
    text = case["text"]
    stop = text[len(text) // 2:len(text) // 2 + 3]
    got = m.generate(case["prompt"], max_new_tokens=12, stop=[stop, "never appears"])
    # Where transformers' stop_strings end it: the first token after which
    # the text from the prompt on holds the stop string past the prompt's
    # (test_text_stream.py checks this rule against transformers' goldens).
    base = len(m.decode(case["prompt_ids"]))
    k = next(k for k in range(1, 13)
             if m.decode(case["prompt_ids"] + case["ids"][:k]).find(stop, base - 2) >= 0)
    assert got == m.decode(case["ids"][:k]) and len(got) < len(text)
    # transformers' generate(stop_strings=[s]) on every golden case.
    for c in golden(name)["cases"]:
        for s, n in c["stops"].items():
            assert m.generate(c["prompt"], max_new_tokens=12, stop=s) == \
                m.decode(c["ids"][:n]), s
    # A stop string longer than anything generated changes nothing.
    assert m.generate(case["prompt"], max_new_tokens=12, stop="x" * 200) == text
    # Streamed, the pieces join to the same text.
    pieces = m.generate(case["prompt"], max_new_tokens=12, stop=stop, stream=True)
    assert "".join(pieces) == got


def test_a_sharded_checkpoint(tmp_path):
    """The llama fixture split into 3 shards and an index generates the
    same; the cache key covers every shard's header."""
    import sys
    sys.path.insert(0, os.path.join(REPO, "test", "import", "Inputs"))
    from edit_config import shard
    from attnc.pretrained import _cache_key
    d = tmp_path / "llama"
    shutil.copytree(os.path.join(FIXTURES, "llama"), d)
    shard(str(d), 3)
    assert not (d / "model.safetensors").exists()
    g = golden("llama")
    with attnc.from_pretrained(d, cache_dir=tmp_path / "cache") as m:
        case = g["cases"][0]
        assert m.generate(case["prompt"], max_new_tokens=g["max_new_tokens"]) == case["text"]
    key = _cache_key(str(d), {"max_context": None})
    shard3 = d / "model-00003-of-00003.safetensors"
    blob = shard3.read_bytes()
    n = int.from_bytes(blob[:8], "little")
    header = json.loads(blob[8:8 + n])
    header["__metadata__"] = {"edited": "yes"}
    text = json.dumps(header).encode()
    shard3.write_bytes(len(text).to_bytes(8, "little") + text + blob[8 + n:])
    assert _cache_key(str(d), {"max_context": None}) != key
    # A missing shard: attnc names it.
    shard3.unlink()
    with pytest.raises(attnc.CompileError, match="shard 'model-00003-of-00003.safetensors'"):
        attnc.from_pretrained(d, cache_dir=tmp_path / "cache")


def test_cache_key_follows_the_attnc_executable(tmp_path, monkeypatch):
    """A rebuilt attnc (same --version, other bytes) compiles again rather
    than reusing the old one's library."""
    from attnc.pretrained import _cache_key
    exe = tmp_path / "attnc"
    shutil.copy2(attnc.find_attnc(), exe)
    monkeypatch.setenv("ATTNC", str(exe))
    d = os.path.join(FIXTURES, "gpt2")
    key = _cache_key(d, {"max_context": None})
    assert _cache_key(d, {"max_context": None}) == key
    with open(exe, "ab") as f:
        f.write(b"\0")           # a different build: ELF ignores trailing bytes
    assert _cache_key(d, {"max_context": None}) != key


def test_bad_directories(tmp_path, lm):
    name, m, cache = lm
    with pytest.raises(attnc.FileError, match="no tokenizer.json"):
        d = tmp_path / "no-tokenizer"
        shutil.copytree(os.path.join(FIXTURES, name), d)
        os.remove(d / "tokenizer.json")
        attnc.from_pretrained(d, cache_dir=cache)
    with pytest.raises(attnc.FileError, match="no config.json"):
        attnc.from_pretrained(tmp_path, cache_dir=cache)
    # A tokenizer with more tokens than the model's logits.
    from tokenizers import Tokenizer
    d = tmp_path / "big-tokenizer"
    shutil.copytree(os.path.join(FIXTURES, name), d)
    tok = Tokenizer.from_file(str(d / "tokenizer.json"))
    tok.add_tokens([f"extra{i}" for i in range(200)])
    tok.save(str(d / "tokenizer.json"))
    with pytest.raises(attnc.ArgumentError, match="tokens but the model's logits have 100"):
        attnc.from_pretrained(d, cache_dir=cache)
    # An architecture attnc does not import.
    d = tmp_path / "unknown"
    shutil.copytree(os.path.join(FIXTURES, name), d)
    config = json.loads((d / "config.json").read_text())
    config["architectures"] = ["MadeUpForCausalLM"]
    (d / "config.json").write_text(json.dumps(config))
    with pytest.raises(attnc.CompileError, match="MadeUpForCausalLM"):
        attnc.from_pretrained(d, cache_dir=cache)
    # A prompt past the caches' rows (32 positions).
    with pytest.raises(attnc.ShapeError, match="rows of the KV cache"):
        m.generate("one two three " * 12, max_new_tokens=4)


@pytest.fixture(scope="module")
def half_caches(tmp_path_factory):
    """One library cache per fixture for the half-precision tests below, so
    attnc-serve's test finds the library from_pretrained compiled."""
    return tmp_path_factory.mktemp("half")


@pytest.mark.parametrize("name,kv_cache", [("gpt2", "f16"), ("llama", "bf16")])
def test_half_precision_caches_generate_transformers_ids(name, kv_cache, half_caches):
    """kv_cache="f16" / "bf16" (attnc --kv-cache): the decodes read rounded
    keys and values, and on these fixtures greedy generation still gives
    transformers' (f32-cache) ids, one prompt at a time and as one ragged
    batch (generation's rows shrink as sequences end)."""
    g = golden(name)
    n = g["max_new_tokens"]
    d = os.path.join(FIXTURES, name)
    with attnc.from_pretrained(d, cache_dir=half_caches / name, kv_cache=kv_cache) as m:
        assert {t.dtype_name for t in m.model.states} == {kv_cache}
        for case in g["cases"]:
            assert m.generate(case["prompt_ids"], max_new_tokens=n) == case["ids"]
        assert m.generate([c["prompt_ids"] for c in g["cases"]],
                          max_new_tokens=n) == [c["ids"] for c in g["cases"]]
    # Another cache dtype is another library (f32 is the default's:
    # test_the_library_is_cached).
    from attnc.pretrained import _cache_key, _options
    assert _cache_key(d, _options(kv_cache=kv_cache)) != _cache_key(d, _options())


def test_serve_compiles_the_caches_dtype(half_caches):
    """attnc-serve --kv-cache f16: resolve() uses from_pretrained's cache
    under the same key (no Ray needed here): it finds the library the test
    above compiled (or compiles it, run alone), and from_pretrained then
    finds resolve's."""
    from attnc.serve import resolve
    directory = os.path.join(FIXTURES, "gpt2")
    cache = half_caches / "gpt2"
    [spec] = resolve([directory], cache_dir=cache, kv_cache="f16")
    with attnc.load(spec["library"], weights=spec["weights"]) as m:
        assert {t.dtype_name for t in m.states} == {"f16"}
    with attnc.from_pretrained(directory, cache_dir=cache, kv_cache="f16"):
        pass
    assert libraries(cache) == [os.path.basename(spec["library"])]
