"""attnc.from_pretrained: a Hugging Face model directory (config.json,
model.safetensors or a sharded checkpoint's model.safetensors.index.json and
shards, tokenizer.json, generation_config.json) to text.

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
from .seq2seq import is_seq2seq

WEIGHTS = "model.safetensors"
INDEX = "model.safetensors.index.json"


def _weights(directory):
    """The checkpoint attnc imports and the runtime reads: model.safetensors,
    else a sharded checkpoint's index (as transformers looks for them)."""
    for name in (WEIGHTS, INDEX):
        path = os.path.join(directory, name)
        if os.path.isfile(path):
            return path
    return None


def _shards(index):
    """The shard files a sharded checkpoint's index names, sorted; the
    runtime checks them (names inside the directory, each readable)."""
    try:
        with open(index, "rb") as f:
            weight_map = json.load(f).get("weight_map")
        names = sorted(set(weight_map.values()))
    except (ValueError, AttributeError, TypeError):
        return []      # malformed: attnc refuses it with the reason
    return [os.path.join(os.path.dirname(index), n) for n in names if isinstance(n, str)]


def _cache_key(directory, options):
    """What the compiled library depends on: attnc's version and its
    executable's bytes (a rebuilt attnc keeps its version), config.json,
    the checkpoint's header (names, dtypes, shapes; not the weights, which
    are read at load) and the import options. A sharded checkpoint's header
    is its index and every shard's header."""
    h = hashlib.sha256()
    h.update(_run_attnc(["--version"], "attnc --version").stdout.encode())
    with open(os.path.realpath(find_attnc()), "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    with open(os.path.join(directory, "config.json"), "rb") as f:
        h.update(f.read())
    weights = _weights(directory)
    files = [weights]
    if weights.endswith(".json"):
        with open(weights, "rb") as f:
            h.update(f.read())
        files = _shards(weights)
    for path in files:
        h.update(os.path.basename(path).encode())
        try:
            with open(path, "rb") as f:
                raw = f.read(8)
                if len(raw) == 8:
                    h.update(f.read(min(struct.unpack("<Q", raw)[0], 100 << 20)))
        except OSError:
            pass       # a missing shard: attnc names it
    h.update(json.dumps(options, sort_keys=True).encode())
    return h.hexdigest()[:32]


def _options(max_context=None, kv_cache=None, precision=None):
    """The import and compile options of a compiled library, as its cache
    key reads them; f32 caches and GEMMs add nothing, so their libraries
    keep their keys."""
    options = {"max_context": max_context}
    if kv_cache not in (None, "f32"):
        options["kv_cache"] = str(kv_cache)
    if precision not in (None, "f32"):
        options["precision"] = str(precision)
    return options


def _compiled(directory, cache_dir, options):
    """The library of `directory`, compiled on a miss."""
    os.makedirs(cache_dir, exist_ok=True)
    lib = os.path.join(cache_dir, _cache_key(directory, options) + ".so")
    if not os.path.exists(lib):
        args = [directory, "-o", lib]
        if options.get("max_context"):
            args.append(f"--max-context={options['max_context']}")
        if options.get("kv_cache"):
            args.append(f"--kv-cache={options['kv_cache']}")
        if options.get("precision"):
            args.append(f"--precision={options['precision']}")
        # attnc writes the library atomically, and keeps the compiled kernels
        # it reuses in the same directory.
        _run_attnc(args, "attnc", cache_dir=cache_dir)
    return lib


def _generation_value(directory, key):
    """generation_config.json's `key`, else config.json's, else None."""
    for name in ("generation_config.json", "config.json"):
        path = os.path.join(directory, name)
        if os.path.exists(path):
            with open(path) as f:
                value = json.load(f).get(key)
            if value is not None:
                return value
    return None


def _eos_ids(directory):
    """The eos_token_id (an int or a list of them), as a list."""
    eos = _generation_value(directory, "eos_token_id")
    return [] if eos is None else eos if isinstance(eos, list) else [eos]


class TextTail:
    """The text of one sequence's generated ids, decoded incrementally: each
    new id decodes with the few ids before it (the last piece's) as context,
    not the whole sequence again, so a step costs the same at token 1000 as
    at token 1. A piece is held back while the decoded text ends in U+FFFD (a
    character whose UTF-8 bytes are split over ids not all generated yet) or
    does not yet extend the context's text (a merged piece), as
    transformers' TextStreamer and vLLM's incremental detokenizer do.
    `text` is the text so far (starting with `context`'s, ids decoded before
    the generated ones); `flush()` adds what is held back at the end, after
    which `text` equals `decode(context + all ids)`."""

    def __init__(self, decode, context=()):
        self.decode, self.ids = decode, list(context)
        self.given = len(self.ids)
        self.text = decode(self.ids) if self.ids else ""
        self.prefix, self.read = 0, len(self.ids)  # ids[prefix:read]: the last piece's

    def feed(self, ids):
        """Takes the ids of `ids` (the whole generated sequence so far) past
        those already fed; returns the text they add (maybe "")."""
        self.ids.extend(ids[len(self.ids) - self.given:])
        before = self.decode(self.ids[self.prefix:self.read])
        after = self.decode(self.ids[self.prefix:])
        if len(after) <= len(before) or after.endswith("\ufffd") \
                or not after.startswith(before):
            return ""
        piece = after[len(before):]
        self.text += piece
        self.prefix, self.read = self.read, len(self.ids)
        return piece

    def flush(self):
        """The rest of the text, held back until the end (an incomplete
        character the model never completed): decodes the sequence once."""
        full = self.decode(self.ids)
        piece = full[len(self.text):] if full.startswith(self.text) else ""
        self.text += piece
        return piece


class StopStrings:
    """stop_when for generation, as transformers' StopStringCriteria: a
    sequence ends at the first generated token that completes one of
    `stops`, the token kept whole (a stop string may end inside it) and
    generate returning the ids up to it. A stop string may begin in the
    prompt ("every" + " every" holds "y "), so each sequence's text starts
    with its prompt's last ids (`prompts`). Only the text a new token could
    complete is searched."""

    def __init__(self, decode, prompts, stops):
        self.stops = stops
        longest = max(len(s) for s in stops)
        self.tails = [TextTail(decode, prompt_tail(decode, p, longest)) for p in prompts]

    def __call__(self, b, generated):
        tail = self.tails[b]
        old = len(tail.text)
        if not tail.feed(generated):
            return False
        return any(tail.text.find(s, max(0, old - len(s) + 1)) >= 0 for s in self.stops)


def prompt_tail(decode, prompt, chars):
    """The fewest last ids of `prompt` whose text has at least `chars`
    characters, and one more (the first id's text may lose a leading
    space)."""
    j = len(prompt)
    while j > 0 and len(decode(prompt[j:])) < chars:
        j -= 1
    return list(prompt[max(0, j - 1):])


def stream_text(steps, tails):
    """Each step's new text per sequence (the `tails`, one per sequence, fed
    the ids of `steps`), then, when some
    text was held back to the end, one last step with it: the pieces of a
    sequence join to its final text."""
    ids = [[] for _ in tails]
    for tokens in steps:
        out = []
        for b, token in enumerate(tokens):
            if token is None:
                out.append("")
                continue
            ids[b].append(token)
            out.append(tails[b].feed(ids[b]))
        yield out
    rest = [tail.flush() for tail in tails]
    if any(rest):
        yield rest


class Pretrained:
    """A loaded model with its tokenizer (from_pretrained). `model` is the
    attnc.Model, `tokenizer` the tokenizers.Tokenizer, `eos_token_id` the
    ids that end a sequence."""

    def __init__(self, directory, model, tokenizer):
        self.directory, self.model, self.tokenizer = directory, model, tokenizer
        self.eos_token_id = _eos_ids(directory)
        # An encoder-decoder's start and forced tokens.
        self.special = {k: _generation_value(directory, k)
                        for k in ("decoder_start_token_id", "forced_bos_token_id",
                                  "forced_eos_token_id")}

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
        sequence also ends at generation_config.json's EOS and at the token
        that completes one of the `stop` strings (a string or a list), kept
        whole, as transformers' stop_strings (a stop string may begin in the
        prompt). With `stream`, an iterator over the pieces of text (for a
        batch, a list of pieces per step, "" for a sequence with nothing
        new; a character split over tokens comes whole once complete), which
        join to the text generate returns. Both decode incrementally: a step
        costs the same however long the text."""
        texts = isinstance(prompt, str) or (
            isinstance(prompt, (list, tuple)) and prompt and isinstance(prompt[0], str))
        if not texts:
            return self.model.generate(prompt, max_new_tokens, temperature, top_k, top_p,
                                       repetition_penalty, seed, self.eos_token_id,
                                       stream=stream, **self.special)
        single = isinstance(prompt, str)
        prompts = [prompt] if single else list(prompt)
        stops = [stop] if isinstance(stop, str) else list(stop or [])
        if any(not s for s in stops):
            raise ArgumentError("a stop string must not be empty", 4)
        encoded = [self.encode(p) for p in prompts]
        # An encoder-decoder's output begins after its start token, not
        # after the prompt (the encoder's): a stop string lies in it whole.
        tails = [[] for _ in encoded] if is_seq2seq(self.model) else encoded
        stop_when = StopStrings(self.decode, tails, stops) if stops else None
        result = generate(self.model, encoded, max_new_tokens,
                          temperature, top_k, top_p, repetition_penalty, seed,
                          self.eos_token_id, None, stream, stop_when, **self.special)
        if stream:
            tails = [TextTail(self.decode) for _ in prompts]
            pieces = stream_text(result, tails)
            return (p[0] for p in pieces) if single else pieces
        texts = [self.decode(ids) for ids in result]
        return texts[0] if single else texts

    def close(self):
        self.model.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def from_pretrained(directory, threads=None, max_context=None, cache_dir=None,
                    kv_cache=None, precision=None):
    """Imports, compiles (cached) and loads the Hugging Face model in
    `directory` with its tokenizer. `threads`: the thread pool's size;
    `max_context`: attnc's --max-context (the KV caches' rows); `kv_cache`:
    attnc's --kv-cache, the caches' dtype ("f32", the default; "f16" or
    "bf16": half the bytes a decode step reads; "i8": about a quarter, a
    decoder's only); `precision`: attnc's --precision, what the linears'
    GEMMs multiply ("f32", the default, "bf16", or "int8": the i8 and 4-bit
    linears of a quantized checkpoint also quantize their inputs);
    `cache_dir`:
    where compiled libraries are kept, and the compiled kernels attnc reuses
    (default $ATTNC_CACHE_DIR, else ~/.cache/attnc). Raises FileError for a missing file, CompileError with
    attnc's message for a model it cannot import, ArgumentError for a
    tokenizer that does not fit the model."""
    directory = os.path.abspath(os.fspath(directory))
    for name in ("config.json", WEIGHTS, "tokenizer.json"):
        if not (os.path.isfile(os.path.join(directory, name))
                or name == WEIGHTS and _weights(directory)):
            raise FileError(f"{directory}: no {name}: give a Hugging Face model directory "
                            "(config.json, model.safetensors or a sharded checkpoint's "
                            f"{INDEX} and shards, tokenizer.json)", 2)
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise ImportError("attnc.from_pretrained reads tokenizer.json with Hugging Face's "
                          "`tokenizers`: pip install tokenizers") from None
    cache_dir = cache_dir or os.environ.get("ATTNC_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "attnc")
    lib = _compiled(directory, os.fspath(cache_dir),
                    _options(max_context, kv_cache, precision))
    tokenizer = Tokenizer.from_file(os.path.join(directory, "tokenizer.json"))
    model = load(lib, weights=_weights(directory), threads=threads)
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
