"""Generation with an encoder-decoder library (BART, T5 as attnc import
writes them): "prefill" reads the encoder's ids (and lengths) once, runs
the decoder over its start token and writes the decoder's KV caches and
the encoder's keys and values (the cross-attention caches, [B, T, F]);
"decode" then takes only the new decoder tokens (and the lengths).

The roles of the inputs come from the entries: the i32 [B, T] input that
prefill reads and decode does not is the encoder's ids; decode's i32
[B, S] input is the decoder's ids and its i32 [B] input, if any, the
encoder's lengths. Prompts of different lengths encode as one padded batch
(their lengths mask the padding), as transformers' attention_mask does.
Tokens are chosen as generation.py chooses them, after transformers'
forced BOS (the first token) and forced EOS (the last one allowed)."""

import numpy as np

from .generation import decode_loop, shrink


def is_seq2seq(model):
    """Whether `model`'s decode entry reads fewer inputs than its prefill:
    an encoder-decoder whose encoder runs at prefill only."""
    if not (model.has_entry("prefill") and model.has_entry("decode")):
        return False
    decode = {t.name for t in model.entry_inputs("decode")}
    return any(t.name not in decode for t in model.entry_inputs("prefill"))


def _ids_like(t, rank):
    return t.dtype == np.int32 and len(t.dims) == rank


class Request:
    """The roles of the model's inputs, the prompts and the special ids,
    checked. `base` is generation's request of the same call (sampling,
    stops, max_new_tokens and the prompts as int32 arrays)."""

    def __init__(self, model, base, decoder_start_token_id, forced_bos_token_id,
                 forced_eos_token_id):
        from . import ArgumentError, ShapeError
        name = model.info.name
        decode = [t for t in model.entry_inputs("decode") if t.name != "position"]
        names = {t.name for t in decode}
        encoder = [t for t in model.entry_inputs("prefill") if t.name not in names]
        ids = [t for t in decode if _ids_like(t, 2)]
        lengths = [t for t in decode if _ids_like(t, 1)]
        if len(encoder) != 1 or not _ids_like(encoder[0], 2) or len(ids) != 1 \
                or len(lengths) > 1 or len(ids) + len(lengths) != len(decode):
            raise ArgumentError(
                f"model '{name}' cannot generate as an encoder-decoder: it needs one "
                "input of encoder ids i32[B, T] that only prefill reads, one of decoder "
                "ids i32[B, S] and at most one of encoder lengths i32[B]; prefill reads "
                f"{[repr(t) for t in model.entry_inputs('prefill')]}, decode "
                f"{[repr(t) for t in decode]}", 4)
        self.encoder, self.input = encoder[0].name, ids[0].name
        self.lengths = lengths[0].name if lengths else None
        self.encoder_dim = encoder[0].dims[1]
        if decoder_start_token_id is None:
            raise ArgumentError(f"model '{name}' is an encoder-decoder: give "
                                "decoder_start_token_id (generation_config.json's)", 4)
        self.special = {}
        for what, v in (("decoder_start_token_id", decoder_start_token_id),
                        ("forced_bos_token_id", forced_bos_token_id),
                        ("forced_eos_token_id", forced_eos_token_id)):
            if v is None:
                continue
            if isinstance(v, bool) or int(v) != v or not 0 <= v < base.vocab:
                raise ArgumentError(f"{what} {v!r} is not a token id in [0, {base.vocab})",
                                    4)
            self.special[what] = int(v)
        longest = max(len(p) for p in base.prompts)
        bound = self.encoder_dim.max
        if self.encoder_dim.is_dynamic and bound is not None and longest > bound:
            raise ShapeError(f"a prompt of {longest} tokens is longer than the encoder's "
                             f"{bound} ({self.encoder_dim.symbol}): shorten it, or compile "
                             "the model with a larger --max-context", 7)
        if not self.encoder_dim.is_dynamic and longest > self.encoder_dim.extent:
            raise ShapeError(f"a prompt of {longest} tokens is longer than the encoder's "
                             f"{self.encoder_dim.extent}", 7)

    def force(self, logits, step, max_new_tokens):
        """transformers' ForcedBOS / ForcedEOS logits processors: at the first
        step only the BOS, at the last one only the EOS keeps its logit."""
        forced = None
        if step == 0:
            forced = self.special.get("forced_bos_token_id")
        if forced is None and step == max_new_tokens - 1:
            forced = self.special.get("forced_eos_token_id")
        if forced is None:
            return logits
        out = np.full_like(logits, -np.inf)
        out[:, forced] = logits[:, forced]
        return out


def steps(model, base, request, rng):
    """generation.decode_loop over an encoder-decoder: the prompts encode as
    one padded batch, then the decoders step together from the start
    token."""
    prompts = base.prompts
    batch, longest = len(prompts), max(len(p) for p in prompts)
    lengths = np.array([len(p) for p in prompts], dtype=np.int32)
    encoder = np.zeros((batch, longest), dtype=np.int32)
    for b, p in enumerate(prompts):
        encoder[b, :len(p)] = p
    dims = {request.encoder_dim.symbol: longest} if request.encoder_dim.is_dynamic else {}
    states = model.new_state(batch=batch, capacity=1 + base.max_new_tokens, **dims)
    start = request.special["decoder_start_token_id"]
    inputs = {request.encoder: encoder,
              request.input: np.full((batch, 1), start, dtype=np.int32)}
    if request.lengths:
        inputs[request.lengths] = lengths
    last = model.prefill(inputs, states)[base.output][:, -1, :]

    def advance(ids, keep, step):
        nonlocal states, lengths
        states = shrink(states, keep)
        inputs = {request.input: ids}
        if request.lengths:
            if keep is not None:
                lengths = lengths[keep]
            inputs[request.lengths] = lengths
        return model.decode(inputs, states, position=1 + step)[base.output][:, -1, :]

    # transformers' repetition penalty sees the decoder's ids, the start
    # token included.
    return decode_loop(base, rng, last, [[start] for _ in prompts], advance,
                       lambda logits, step: request.force(logits, step,
                                                          base.max_new_tokens))
