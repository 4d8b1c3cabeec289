"""attnc.pretrained's incremental text: streaming and stop strings decode
each new id with a few ids of context (TextTail), not the whole sequence
at every step. Checked with Hugging Face `tokenizers` alone (no model): a
byte-level tokenizer with no merges, so every byte is a token and a
multi-byte character is split over several, and the Metaspace BPE
tokenizers of the decoder fixtures (merged pieces, leading spaces)."""

import json
import os

import pytest

from attnc.pretrained import StopStrings, TextTail, stream_text
from conftest import REPO

tokenizers = pytest.importorskip("tokenizers")

FIXTURES = os.path.join(REPO, "test", "import", "fixtures")


@pytest.fixture(scope="module")
def byte_tokenizer():
    """One token per byte (GPT-2's byte-to-character alphabet, no merges)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    tok = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(alphabet)}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    return tok


def counting(tok):
    """decode, and a list that counts the ids it decodes."""
    count = [0]

    def decode(ids):
        count[0] += len(ids)
        return tok.decode(list(ids), skip_special_tokens=True)
    return decode, count


def pieces_of(decode, ids):
    return [p[0] for p in stream_text(([i] for i in ids), [TextTail(decode)])]


def test_a_character_split_over_tokens_streams_whole(byte_tokenizer):
    text = "né 😀 ok"
    ids = byte_tokenizer.encode(text).ids
    assert len(ids) == len(text.encode())  # é is 2 tokens, 😀 is 4
    decode, _ = counting(byte_tokenizer)
    pieces = pieces_of(decode, ids)
    assert "".join(pieces) == text == decode(ids)
    assert not any("\ufffd" in p for p in pieces)
    assert "😀" in pieces and "é" in pieces
    # Held back while incomplete: one empty piece per byte before the last
    # of é (1) and of 😀 (3).
    assert pieces.count("") == 4
    assert len(pieces) == len(ids)


def test_an_incomplete_character_at_the_end_is_flushed(byte_tokenizer):
    ids = byte_tokenizer.encode("ok 😀").ids[:-1]
    decode, _ = counting(byte_tokenizer)
    pieces = pieces_of(decode, ids)
    assert "".join(pieces) == decode(ids) and decode(ids).endswith("\ufffd")
    assert len(pieces) == len(ids) + 1  # the last step holds the rest


@pytest.mark.parametrize("name", ["gpt2", "llama"])
def test_the_stream_joins_to_the_text_in_linear_time(name):
    """The fixtures' tokenizers (Metaspace: a leading space on a word's
    first piece) over their golden generations, repeated to 400 ids: the
    joined stream is the decoded text, and the ids decoded in all grow
    linearly (a full decode per step would be n^2 / 2 = 80000)."""
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(os.path.join(FIXTURES, name, "tokenizer.json"))
    with open(os.path.join(FIXTURES, name, "text_golden.json")) as f:
        cases = json.load(f)["cases"]
    ids = [i for c in cases for i in c["ids"]]
    ids = (ids * (400 // len(ids) + 1))[:400]
    decode, count = counting(tok)
    pieces = pieces_of(decode, ids)
    assert "".join(pieces) == tok.decode(ids, skip_special_tokens=True)
    assert count[0] < 8 * len(ids)


def test_a_batch_streams_each_sequence(byte_tokenizer):
    decode, _ = counting(byte_tokenizer)
    a, b = (byte_tokenizer.encode(t).ids for t in ("ab€", "x"))
    steps = [[a[0], b[0]], [a[1], None], [a[2], None], [a[3], None], [a[4], None]]
    tails = [TextTail(decode), TextTail(decode)]
    out = list(stream_text(iter(steps), tails))
    assert out == [["a", "x"], ["b", ""], ["", ""], ["", ""], ["€", ""]]


def stop_reference(decode, prompt, ids, stops):
    """Where transformers' StopStringCriteria ends a sequence: after the
    first token whose text completes a stop string, which may begin in the
    prompt (the full decode of prompt + ids so far has it ending past the
    prompt's text), or None; transformers' goldens agree (below)."""
    base = len(decode(prompt))
    for k in range(1, len(ids) + 1):
        text = decode(prompt + ids[:k])
        if any(text.find(s, max(0, base - len(s) + 1)) >= 0 for s in stops):
            return k
    return None


def stops_at(stop, ids):
    return next((k for k in range(1, len(ids) + 1) if stop(0, ids[:k])), None)


@pytest.mark.parametrize("stops", [["lo w"], ["😀"], ["zz", "d 😀 e"], ["é"],
                                   ["hello"], ["never"], ["o", "lo w"], ["t: h"]])
def test_stop_strings_end_where_a_full_decode_would(byte_tokenizer, stops):
    prompt = byte_tokenizer.encode("prompt: ").ids
    ids = byte_tokenizer.encode("hello world 😀 end é").ids
    decode, _ = counting(byte_tokenizer)
    stop = StopStrings(decode, [prompt], stops)
    assert stops_at(stop, ids) == stop_reference(decode, prompt, ids, stops)


@pytest.mark.parametrize("name", ["gpt2", "llama"])
def test_stop_strings_end_where_transformers_does(name):
    """The fixtures' goldens: for two-character substrings of each golden
    text, how many ids transformers' generate(stop_strings=[s]) returned
    (make_text_fixtures.py). Their BPE merges letters into pieces: a stop
    string may end inside a token, which is kept, or begin in the prompt."""
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(os.path.join(FIXTURES, name, "tokenizer.json"))
    with open(os.path.join(FIXTURES, name, "text_golden.json")) as f:
        cases = json.load(f)["cases"]
    decode, _ = counting(tok)
    checked = 0
    for case in cases:
        prompt, ids = case["prompt_ids"], case["ids"]
        for s, n in case["stops"].items():
            assert stops_at(StopStrings(decode, [prompt], [s]), ids) == n, s
            assert stop_reference(decode, prompt, ids, [s]) == n, s
            checked += 1
    assert checked >= 9


def test_a_stop_string_may_begin_in_the_prompt():
    """GPT-2 fixture, prompt "... looks at every", first token "▁every":
    transformers' generate(stop_strings=["y "]) stops after that token (its
    golden), though the text of the generated ids alone, "every", has no
    "y "."""
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(os.path.join(FIXTURES, "gpt2", "tokenizer.json"))
    with open(os.path.join(FIXTURES, "gpt2", "text_golden.json")) as f:
        case = json.load(f)["cases"][1]
    assert case["prompt"].endswith("every")
    assert case["stops"]["y "] == 1
    decode, _ = counting(tok)
    assert stops_at(StopStrings(decode, [case["prompt_ids"]], ["y "]), case["ids"]) == 1
    assert not decode(case["ids"][:1]).startswith(" ")
