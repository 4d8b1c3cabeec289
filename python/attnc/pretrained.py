"""attnc.from_pretrained: a Hugging Face model directory (config.json,
model.safetensors, tokenizer.json, generation_config.json) to text.

The directory is imported and compiled by the attnc executable (`attnc DIR
-o lib.so`, docs/import.md) into a cache keyed by what the library depends
on (attnc's version, config.json, the checkpoint's tensor header and the
options), so a second call only loads; the weights are read from the
directory at load. Text goes through Hugging Face's `tokenizers` reading
tokenizer.json; generation is Model.generate's (attnc.generation)."""

import hashlib
import json
import os
import struct

from . import ArgumentError, FileError, _run_attnc, find_attnc, load
from .generation import generate

WEIGHTS = "model.safetensors"


def _cache_key(directory, options):
    """What the compiled library depends on: attnc's version, config.json,
    the checkpoint's header (names, dtypes, shapes; not the weights, which
    are read at load) and the import options."""
    h = hashlib.sha256()
    h.update(_run_attnc(["--version"], "attnc --version").stdout.encode())
    h.update(os.path.realpath(find_attnc()).encode())
    with open(os.path.join(directory, "config.json"), "rb") as f:
        h.update(f.read())
    with open(os.path.join(directory, WEIGHTS), "rb") as f:
        raw = f.read(8)
        if len(raw) == 8:
            h.update(f.read(struct.unpack("<Q", raw)[0]))
    h.update(json.dumps(options, sort_keys=True).encode())
    return h.hexdigest()[:32]


def _compiled(directory, cache_dir, options):
    """The library of `directory`, compiled on a miss."""
    os.makedirs(cache_dir, exist_ok=True)
    lib = os.path.join(cache_dir, _cache_key(directory, options) + ".so")
    if not os.path.exists(lib):
        args = [directory, "-o", lib]
        if options.get("max_context"):
            args.append(f"--max-context={options['max_context']}")
        _run_attnc(args, "attnc")      # writes the library atomically
    return lib


def _eos_ids(directory):
    """generation_config.json's eos_token_id, else config.json's (an int or a
    list of them), as a list."""
    for name in ("generation_config.json", "config.json"):
        path = os.path.join(directory, name)
        if os.path.exists(path):
            with open(path) as f:
                eos = json.load(f).get("eos_token_id")
            if eos is not None:
                return eos if isinstance(eos, list) else [eos]
    return []


class Pretrained:
    """A loaded model with its tokenizer (from_pretrained). `model` is the
    attnc.Model, `tokenizer` the tokenizers.Tokenizer, `eos_token_id` the
    ids that end a sequence."""

    def __init__(self, directory, model, tokenizer):
        self.directory, self.model, self.tokenizer = directory, model, tokenizer
        self.eos_token_id = _eos_ids(directory)

    def encode(self, text):
        """The ids the tokenizer gives `text`, special tokens included (a BOS
        where the tokenizer adds one), as transformers' tokenizer(text)."""
        return self.tokenizer.encode(text).ids

    def decode(self, ids):
        return self.tokenizer.decode(list(ids), skip_special_tokens=True)

    def generate(self, prompt, max_new_tokens=32, temperature=0.0, top_k=0, top_p=1.0,
                 repetition_penalty=1.0, seed=None, stop=None, stream=False):
        """Text after `prompt` (a string, or a list of strings for a batch;
        token ids in give token ids out), as Model.generate chooses it; a
        sequence also ends at generation_config.json's EOS and at the first
        of the `stop` strings (a string or a list) its text contains. With
        `stream`, an iterator over the pieces of text (for a batch, a list of
        pieces per step, "" for a sequence with nothing new)."""
        texts = isinstance(prompt, str) or (
            isinstance(prompt, (list, tuple)) and prompt and isinstance(prompt[0], str))
        if not texts:
            return self.model.generate(prompt, max_new_tokens, temperature, top_k, top_p,
                                       repetition_penalty, seed, self.eos_token_id,
                                       stream=stream)
        single = isinstance(prompt, str)
        prompts = [prompt] if single else list(prompt)
        stops = [stop] if isinstance(stop, str) else list(stop or [])
        if any(not s for s in stops):
            raise ArgumentError("a stop string must not be empty", 4)
        stop_when = (lambda ids: any(s in self.decode(ids) for s in stops)) if stops else None
        result = generate(self.model, [self.encode(p) for p in prompts], max_new_tokens,
                          temperature, top_k, top_p, repetition_penalty, seed,
                          self.eos_token_id, None, stream, stop_when)
        if stream:
            pieces = self._pieces(result, len(prompts))
            return (p[0] for p in pieces) if single else pieces
        texts = [self.decode(ids) for ids in result]
        return texts[0] if single else texts

    def _pieces(self, steps, batch):
        """Each step's new text per sequence: the decoded text's growth,
        held back while it ends in an incomplete character."""
        ids, shown = [[] for _ in range(batch)], [""] * batch
        for tokens in steps:
            out = []
            for b, token in enumerate(tokens):
                if token is not None:
                    ids[b].append(token)
                text = self.decode(ids[b])
                if text.endswith("\ufffd") or not text.startswith(shown[b]):
                    out.append("")
                    continue
                out.append(text[len(shown[b]):])
                shown[b] = text
            yield out

    def close(self):
        self.model.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def from_pretrained(directory, threads=None, max_context=None, cache_dir=None):
    """Imports, compiles (cached) and loads the Hugging Face model in
    `directory` with its tokenizer. `threads`: the thread pool's size;
    `max_context`: attnc's --max-context (the KV caches' rows); `cache_dir`:
    where compiled libraries are kept (default $ATTNC_CACHE_DIR, else
    ~/.cache/attnc). Raises FileError for a missing file, CompileError with
    attnc's message for a model it cannot import, ArgumentError for a
    tokenizer that does not fit the model."""
    directory = os.path.abspath(os.fspath(directory))
    for name in ("config.json", WEIGHTS, "tokenizer.json"):
        if not os.path.isfile(os.path.join(directory, name)):
            raise FileError(f"{directory}: no {name}: give a Hugging Face model directory "
                            "(config.json, model.safetensors, tokenizer.json)", 2)
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise ImportError("attnc.from_pretrained reads tokenizer.json with Hugging Face's "
                          "`tokenizers`: pip install tokenizers") from None
    cache_dir = cache_dir or os.environ.get("ATTNC_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "attnc")
    lib = _compiled(directory, os.fspath(cache_dir), {"max_context": max_context})
    tokenizer = Tokenizer.from_file(os.path.join(directory, "tokenizer.json"))
    model = load(lib, weights=os.path.join(directory, WEIGHTS), threads=threads)
    logits = [t for t in model.outputs if t.name == "logits"]
    vocab = logits[0].dims[-1].extent if logits else None
    if vocab is None:
        model.close()
        raise ArgumentError(f"{directory}: the model gives no logits to generate from "
                            f"(outputs {[t.name for t in model.outputs]})", 4)
    if tokenizer.get_vocab_size() > vocab:
        model.close()
        raise ArgumentError(f"{directory}/tokenizer.json has {tokenizer.get_vocab_size()} "
                            f"tokens but the model's logits have {vocab}: the tokenizer is "
                            "not this model's", 4)
    return Pretrained(directory, model, tokenizer)
