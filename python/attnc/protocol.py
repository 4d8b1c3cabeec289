"""The HTTP protocols attnc.serve speaks, as plain functions (no Ray): what a
model says about itself (`describe`), the KServe v2 tensor protocol's
requests and responses, and OpenAI's completions requests, each checked
against the model with a RequestError (an HTTP status and a message naming
what is wrong) for a request the model cannot take."""

import json
import time
import uuid

import numpy as np

from .seq2seq import is_seq2seq

# attnc dtype name <-> KServe v2 datatype, and the numpy dtype of its data.
KSERVE_DATATYPES = {"f32": "FP32", "i32": "INT32", "f16": "FP16", "bf16": "BF16"}
NUMPY_DTYPES = {"FP32": np.float32, "INT32": np.int32, "FP16": np.float16}


class RequestError(Exception):
    """A request refused: `status` (400, 404, ...) and `message`."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status, self.message = status, message


# ------------------------------------------------------------------ describe


def _tensor(t):
    return {"name": t.name, "datatype": KSERVE_DATATYPES.get(t.dtype_name, t.dtype_name.upper()),
            "dims": [{"extent": d.extent} if not d.is_dynamic else
                     {"symbol": d.symbol, "max": d.max} for d in t.dims]}


def describe(name, model, has_tokenizer=False, eos=(), context=None):
    """What the router needs of a loaded attnc.Model to check requests: a
    dict (JSON-able) with its inputs, outputs and, for a decoder, its
    context (KV cache rows), vocabulary and EOS ids."""
    # An encoder-decoder (attnc.seq2seq) is served by its tensors only: the
    # continuous batcher steps decoders whose decode takes the prompt's input.
    decoder = model.has_entry("prefill") and model.has_entry("decode") \
        and not is_seq2seq(model)
    meta = {"name": name, "model": model.info.name, "target": model.info.target,
            "inputs": [_tensor(t) for t in model.inputs],
            "outputs": [_tensor(t) for t in model.outputs],
            "decoder": bool(decoder), "tokenizer": bool(has_tokenizer),
            "eos": list(eos)}
    if decoder:
        logits = [t for t in model.outputs if t.name == "logits"] or model.outputs
        meta["vocab"] = logits[0].dims[-1].extent
        cap = model.states[0].dims[1]
        meta["context"] = int(context or cap.max or 0) or None
    return meta


def kserve_metadata(meta):
    """GET /v2/models/{name}: dynamic dims are -1."""
    def shape(t):
        return [d["extent"] if "extent" in d else -1 for d in t["dims"]]
    return {"name": meta["name"], "versions": ["1"], "platform": "attnc",
            "inputs": [{"name": t["name"], "datatype": t["datatype"], "shape": shape(t)}
                       for t in meta["inputs"]],
            "outputs": [{"name": t["name"], "datatype": t["datatype"], "shape": shape(t)}
                        for t in meta["outputs"]]}


def parse_json(body):
    """The JSON object of a request body, or RequestError(400)."""
    try:
        value = json.loads(body)
    except (ValueError, UnicodeDecodeError) as e:
        raise RequestError(400, f"the body is not valid JSON: {e}") from None
    if not isinstance(value, dict):
        raise RequestError(400, f"the body must be a JSON object, not {type(value).__name__}")
    return value


# ------------------------------------------------------------------ KServe v2


def parse_infer(meta, body):
    """A KServe v2 infer request checked against the model: (inputs, name
    -> numpy array of the model's dtype and the given shape; the outputs
    asked for, None for all; the request id)."""
    name = meta["name"]
    inputs = body.get("inputs")
    if not isinstance(inputs, list) or not inputs:
        raise RequestError(400, "'inputs' must be a non-empty list of tensors "
                                "({name, datatype, shape, data})")
    declared = {t["name"]: t for t in meta["inputs"]}
    arrays, bound = {}, {}
    for i, entry in enumerate(inputs):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise RequestError(400, f"inputs[{i}] must be an object with a 'name'")
        iname = entry["name"]
        t = declared.get(iname)
        if t is None:
            raise RequestError(400, f"model '{name}' has no input '{iname}': its inputs are "
                                    f"{', '.join(declared)}")
        if iname in arrays:
            raise RequestError(400, f"input '{iname}' is given twice")
        datatype = entry.get("datatype")
        if datatype != t["datatype"]:
            raise RequestError(400, f"input '{iname}' has datatype {datatype!r} but model "
                                    f"'{name}' expects {t['datatype']}")
        shape = entry.get("shape")
        if not isinstance(shape, list) or not all(
                isinstance(d, int) and not isinstance(d, bool) for d in shape):
            raise RequestError(400, f"input '{iname}': 'shape' must be a list of integers")
        dims = t["dims"]
        if len(shape) != len(dims):
            raise RequestError(400, f"input '{iname}' has shape {shape} of rank {len(shape)} "
                                    f"but model '{name}' expects rank {len(dims)} "
                                    f"({_dims_text(dims)})")
        for axis, (n, d) in enumerate(zip(shape, dims)):
            if "extent" in d:
                if n != d["extent"]:
                    raise RequestError(400, f"input '{iname}' has shape {shape}: dim {axis} "
                                            f"must be {d['extent']} ({_dims_text(dims)})")
                continue
            sym = d["symbol"]
            if n < 1 or (d["max"] is not None and n > d["max"]):
                most = f" and at most {d['max']}" if d["max"] is not None else ""
                raise RequestError(400, f"input '{iname}' has shape {shape}: dim {axis} "
                                        f"({sym}) must be at least 1{most}")
            if sym in bound and bound[sym][0] != n:
                raise RequestError(400, f"input '{iname}' has shape {shape}: dim {axis} "
                                        f"({sym}) is {n} but input '{bound[sym][1]}' gives "
                                        f"{sym} = {bound[sym][0]}")
            bound.setdefault(sym, (n, iname))
        arrays[iname] = _array(iname, entry.get("data"), datatype, shape)
    missing = [n for n in declared if n not in arrays]
    if missing:
        raise RequestError(400, f"model '{name}' needs input(s) {', '.join(missing)}")
    outputs = body.get("outputs")
    if outputs is not None:
        known = {t["name"] for t in meta["outputs"]}
        if not isinstance(outputs, list) or not all(
                isinstance(o, dict) and isinstance(o.get("name"), str) for o in outputs):
            raise RequestError(400, "'outputs' must be a list of {name}")
        outputs = [o["name"] for o in outputs]
        for o in outputs:
            if o not in known:
                raise RequestError(400, f"model '{name}' has no output '{o}': its outputs are "
                                        f"{', '.join(sorted(known))}")
    rid = body.get("id")
    return arrays, outputs, rid if isinstance(rid, str) else None


def _dims_text(dims):
    return "[" + ", ".join(str(d["extent"]) if "extent" in d else
                           d["symbol"] + (f"<={d['max']}" if d["max"] is not None else "")
                           for d in dims) + "]"


def _array(iname, data, datatype, shape):
    dtype = NUMPY_DTYPES.get(datatype)
    if dtype is None:
        raise RequestError(400, f"input '{iname}': datatype {datatype} is not served over "
                                "JSON (FP32, INT32, FP16)")
    if not isinstance(data, list):
        raise RequestError(400, f"input '{iname}': 'data' must be a list (row-major, flat or "
                                "nested)")
    try:
        raw = np.asarray(data)
    except ValueError:
        raise RequestError(400, f"input '{iname}': 'data' is a ragged nested list") from None
    size = int(np.prod(shape, dtype=np.int64))
    if raw.size != size or (raw.ndim > 1 and list(raw.shape) != shape):
        raise RequestError(400, f"input '{iname}': 'data' holds {raw.size} values in shape "
                                f"{list(raw.shape)} but shape {shape} needs {size}")
    if raw.size and raw.dtype.kind not in "iuf" or raw.dtype == np.bool_:
        raise RequestError(400, f"input '{iname}': 'data' must hold numbers")
    if dtype is np.int32:
        if raw.size and raw.dtype.kind == "f":
            raise RequestError(400, f"input '{iname}' is INT32 but 'data' holds non-integers")
        if raw.size and (raw.min() < -2**31 or raw.max() >= 2**31):
            raise RequestError(400, f"input '{iname}': a value is outside INT32's range")
    return np.ascontiguousarray(raw.astype(dtype).reshape(shape))


def infer_response(meta, outputs, wanted, rid):
    """The KServe v2 response of a run's outputs (name -> array)."""
    datatypes = {t["name"]: t["datatype"] for t in meta["outputs"]}
    names = wanted or [t["name"] for t in meta["outputs"]]
    body = {"model_name": meta["name"], "model_version": "1",
            "outputs": [{"name": n, "datatype": datatypes[n], "shape": list(outputs[n].shape),
                         "data": outputs[n].ravel().tolist()} for n in names]}
    if rid is not None:
        body["id"] = rid
    return body


# ------------------------------------------------------------------ OpenAI


def _number(body, key, default, kind=float):
    value = body.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (
            kind is int and int(value) != value):
        what = "an integer" if kind is int else "a number"
        raise RequestError(400, f"'{key}' must be {what}, got {value!r}")
    return kind(value)


def parse_completion(meta, body, encode):
    """An OpenAI completions request checked against the decoder `meta`:
    a dict with `prompts` (lists of ids), `max_tokens`, the sampling
    settings, `seed`, `stop` (strings), `stream`. `encode(text)` tokenizes
    (None: text prompts are refused)."""
    name = meta["name"]
    prompt = body.get("prompt")
    if isinstance(prompt, str):
        prompts = [prompt]
    elif isinstance(prompt, list) and prompt and all(
            isinstance(p, int) and not isinstance(p, bool) for p in prompt):
        prompts = [prompt]
    elif isinstance(prompt, list) and prompt and all(
            isinstance(p, str) or (isinstance(p, list) and p and all(
                isinstance(i, int) and not isinstance(i, bool) for i in p)) for p in prompt):
        prompts = list(prompt)
    else:
        raise RequestError(400, "'prompt' must be a string, a non-empty list of token ids, "
                                "or a list of those")
    if body.get("n", 1) != 1 or body.get("best_of", 1) not in (1, None):
        raise RequestError(400, "only n = 1 (one choice per prompt) is served")
    if body.get("echo"):
        raise RequestError(400, "'echo' is not served")
    if body.get("logprobs") is not None:
        raise RequestError(400, "'logprobs' is not served")
    max_tokens = _number(body, "max_tokens", 16, int)
    if max_tokens < 1:
        raise RequestError(400, f"'max_tokens' must be a positive integer, got {max_tokens}")
    temperature = _number(body, "temperature", 1.0)
    top_p = _number(body, "top_p", 1.0)
    top_k = _number(body, "top_k", 0, int)
    if top_k == -1:
        top_k = 0                      # vLLM's "off"
    penalty = _number(body, "repetition_penalty", 1.0)
    from .sampling import SamplingConfig
    try:
        SamplingConfig(temperature, top_k, top_p, penalty)
    except ValueError as e:
        raise RequestError(400, str(e)) from None
    seed = body.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise RequestError(400, f"'seed' must be a non-negative integer, got {seed!r}")
    stop = body.get("stop")
    stops = [stop] if isinstance(stop, str) else stop if stop is not None else []
    if not isinstance(stops, list) or not all(isinstance(s, str) and s for s in stops):
        raise RequestError(400, "'stop' must be a non-empty string or a list of them")
    if stops and encode is None:
        raise RequestError(400, f"model '{name}' has no tokenizer: 'stop' strings need one")
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise RequestError(400, "'stream' must be true or false")
    ids = []
    vocab, context = meta["vocab"], meta["context"]
    for i, p in enumerate(prompts):
        where = "the prompt" if len(prompts) == 1 else f"prompt {i}"
        if isinstance(p, str):
            if encode is None:
                raise RequestError(400, f"model '{name}' has no tokenizer: give the prompt "
                                        "as token ids")
            p = encode(p)
            if not p:
                raise RequestError(400, f"{where} is empty")
        bad = [t for t in p if not 0 <= t < vocab]
        if bad:
            raise RequestError(400, f"{where}: token id {bad[0]} is outside the vocabulary "
                                    f"[0, {vocab})")
        if context is not None and len(p) + max_tokens > context:
            raise RequestError(400, f"model '{name}' has a context of {context} tokens, but "
                                    f"{where} has {len(p)} tokens and max_tokens is "
                                    f"{max_tokens} ({len(p) + max_tokens}): shorten the prompt "
                                    "or max_tokens")
        ids.append(list(map(int, p)))
    return {"prompts": ids, "max_tokens": max_tokens, "temperature": temperature,
            "top_p": top_p, "top_k": top_k, "repetition_penalty": penalty, "seed": seed,
            "stop": stops, "stream": stream}


def completion_id():
    return "cmpl-" + uuid.uuid4().hex


def completion_response(cid, model, choices, prompt_tokens):
    """The non-streamed response: `choices`, one dict per prompt with
    text, token_ids and finish_reason."""
    completion = sum(len(c["token_ids"]) for c in choices)
    return {"id": cid, "object": "text_completion", "created": int(time.time()),
            "model": model,
            "choices": [{"index": i, "text": c["text"], "token_ids": c["token_ids"],
                         "logprobs": None, "finish_reason": c["finish_reason"]}
                        for i, c in enumerate(choices)],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion,
                      "total_tokens": prompt_tokens + completion}}


def completion_chunk(cid, model, index, text, token_ids, finish_reason=None):
    """One server-sent event of a streamed response."""
    chunk = {"id": cid, "object": "text_completion", "created": int(time.time()),
             "model": model,
             "choices": [{"index": index, "text": text, "token_ids": token_ids,
                          "logprobs": None, "finish_reason": finish_reason}]}
    return f"data: {json.dumps(chunk)}\n\n"


class TextOut:
    """The text of one generated sequence for a response: pieces as ids
    come (TextTail's incremental decoding), with OpenAI's rule for stop
    strings: the text ends before the first stop string it holds. While
    stop strings are set, the last len(longest) - 1 characters are held back
    (they may begin a stop string), so the streamed pieces join to exactly
    the text of the whole response."""

    def __init__(self, decode, stops=()):
        from .pretrained import TextTail
        self.tail = TextTail(decode) if decode is not None else None
        self.stops = list(stops)
        self.hold = max((len(s) for s in self.stops), default=1) - 1
        self.ids, self.sent = [], 0

    def feed(self, token):
        """The text it is now safe to send after id `token`."""
        self.ids.append(token)
        if self.tail is None:
            return ""
        self.tail.feed(self.ids)
        safe = len(self.tail.text) - self.hold
        if safe <= self.sent:
            return ""
        piece = self.tail.text[self.sent:safe]
        self.sent = safe
        return piece

    def finish(self):
        """The rest of the text, up to the first stop string."""
        if self.tail is None:
            return ""
        self.tail.flush()
        text = self.tail.text
        cut = min((i for i in (text.find(s) for s in self.stops) if i >= 0), default=len(text))
        end = max(cut, self.sent)        # what was sent cannot be taken back
        piece = text[self.sent:end]
        self.sent = end
        return piece

    @property
    def text(self):
        return self.tail.text[:self.sent] if self.tail is not None else ""
