"""Generation at the level of token ids with a decoder library (one with
"prefill" and "decode"): prefill the prompts, then decode one token at a
time from the KV caches, choosing each with attnc.sampling (transformers'
rules), until `max_new_tokens`, an EOS id or a stop sequence.

The prompts of a list decode as one batch, each sequence at its own
position (prompts of different lengths are prefilled one by one, each into
its row of the caches)."""

import numpy as np

from .sampling import SamplingConfig, next_tokens


class _Request:
    """What Model.generate was asked, checked against the model."""

    def __init__(self, model, prompt, max_new_tokens, config, eos_token_id, stop,
                 stop_when=None, encoder_decoder=False):
        from . import ArgumentError, ShapeError
        if not (model.has_entry("prefill") and model.has_entry("decode")):
            raise ArgumentError(f"model '{model.info.name}' cannot generate: it has no KV "
                                "caches ('prefill' and 'decode' entries); declare them with "
                                "'state' and 'cache = P'", 4)
        prefill = [t.name for t in model.entry_inputs("prefill")]
        decode = [t.name for t in model.entry_inputs("decode") if t.name != "position"]
        if not encoder_decoder and decode != prefill:
            raise ArgumentError(f"model '{model.info.name}' cannot generate: its decode "
                                f"takes other inputs ({', '.join(decode)}) than its prefill "
                                f"({', '.join(prefill)}), as an encoder-decoder's does; "
                                "generate handles decoders whose steps take the prompt's "
                                "inputs: call prefill and decode yourself", 4)
        ids = [t for t in model.inputs if t.name != "position"]
        if encoder_decoder:
            self.input = None  # seq2seq.Request finds the roles
        elif len(ids) != 1 or ids[0].dtype != np.int32 or len(ids[0].dims) != 2:
            raise ArgumentError(f"model '{model.info.name}' cannot generate: it needs one "
                                "input of token ids i32[B, S], it has "
                                f"{[repr(t) for t in model.inputs]}", 4)
        else:
            self.input = ids[0].name
        logits = [t for t in model.outputs if t.name == "logits"] or model.outputs
        if len(logits) != 1 or len(logits[0].dims) != 3 or logits[0].dims[2].is_dynamic:
            raise ArgumentError(f"model '{model.info.name}' cannot generate: it needs one "
                                "output of logits [B, S, V] (or one named 'logits')", 4)
        self.output = logits[0].name
        self.vocab = logits[0].dims[2].extent
        self.single = len(prompt) == 0 or np.isscalar(prompt[0])
        prompts = [prompt] if self.single else list(prompt)
        if not prompts:
            raise ArgumentError("no prompts: give a list of token ids, or a list of them", 4)
        self.prompts = []
        for b, p in enumerate(prompts):
            a = np.asarray(p)
            where = "the prompt" if self.single else f"prompt {b}"
            if a.ndim != 1 or a.size == 0 or not np.issubdtype(a.dtype, np.integer):
                raise ArgumentError(f"{where} must be a non-empty list of token ids", 4)
            bad = np.flatnonzero((a < 0) | (a >= self.vocab))
            if bad.size:
                raise ArgumentError(f"{where}: token id {int(a[bad[0]])} at position "
                                    f"{int(bad[0])} is outside the vocabulary "
                                    f"[0, {self.vocab})", 4)
            self.prompts.append(a.astype(np.int32))
        if isinstance(max_new_tokens, bool) or int(max_new_tokens) != max_new_tokens \
                or max_new_tokens < 1:
            raise ArgumentError(f"max_new_tokens must be a positive integer, got "
                                f"{max_new_tokens!r}", 4)
        self.max_new_tokens = int(max_new_tokens)
        capacity = model.states[0].dims[1]
        # An encoder-decoder's decoder caches hold its start token and the
        # new ones; the prompt is the encoder's.
        longest = 1 if encoder_decoder else max(len(p) for p in self.prompts)
        what = "the decoder's start token" if encoder_decoder \
            else f"a prompt of {longest} tokens"
        if capacity.max is not None and longest + self.max_new_tokens > capacity.max:
            raise ShapeError(f"{what} and {self.max_new_tokens} new "
                             f"ones need {longest + self.max_new_tokens} rows of the KV "
                             f"cache, which holds at most {capacity.max} "
                             f"({capacity.symbol}): shorten the prompt or max_new_tokens, "
                             "or compile the model with a larger bound", 7)
        self.config = config
        eos = [] if eos_token_id is None else np.atleast_1d(eos_token_id).tolist()
        self.eos = {int(e) for e in eos}
        self.stop = [list(map(int, s)) for s in (stop or [])]
        if any(not s for s in self.stop):
            raise ArgumentError("a stop sequence must hold at least one token id", 4)
        self.stop_when = stop_when

    def finished(self, b, generated):
        """Whether sequence `b` ends with the tokens it has `generated`."""
        if generated[-1] in self.eos:
            return True
        if any(generated[-len(s):] == s for s in self.stop if len(s) <= len(generated)):
            return True
        return self.stop_when is not None and self.stop_when(b, generated)


def _prefill(model, request, states):
    """The logits [B, V] of each prompt's last token, its keys and values
    written into its row of `states`: one prefill for prompts of one length,
    else one per prompt into its row (a [1, L, F] view of each state)."""
    prompts = request.prompts
    if len({len(p) for p in prompts}) == 1:
        logits = model.prefill({request.input: np.stack(prompts)}, states)[request.output]
        return logits[:, -1, :]
    rows = []
    for b, p in enumerate(prompts):
        row = {name: a[b:b + 1] for name, a in states.items()}
        rows.append(model.prefill({request.input: p[None, :]}, row)[request.output][0, -1])
    return np.stack(rows)


def decode_loop(request, rng, last, seen, advance, force=None):
    """The steps of every generation once its prompts are prefilled: yields,
    per step, the new token of each prompt, or None for a sequence that has
    finished. `last` is the logits [n, V] of the active sequences (after
    `force(logits, step)` when given), `seen[b]` the ids the repetition
    penalty reads; a sequence that ends leaves the batch, and
    `advance(tokens, keep, step)` decodes the chosen tokens ([n, 1] i32) of
    those still active, `keep` their rows in the previous batch (None when
    none left), and gives their next logits."""
    active = list(range(len(seen)))  # the prompt of each row of the batch
    generated = [[] for _ in seen]
    for step in range(request.max_new_tokens):
        logits = force(last, step) if force else last
        chosen = next_tokens(logits, [seen[b] for b in active], request.config, rng)
        out = [None] * len(seen)
        keep = []
        for row, b in enumerate(active):
            token = int(chosen[row])
            seen[b].append(token)
            generated[b].append(token)
            out[b] = token
            if not request.finished(b, generated[b]):
                keep.append(row)
        yield out
        if not keep or step + 1 == request.max_new_tokens:
            return
        shrunk = len(keep) < len(active)
        if shrunk:
            active = [active[row] for row in keep]
            chosen = chosen[keep]
        last = advance(chosen.astype(np.int32)[:, None], keep if shrunk else None, step)


def shrink(states, keep):
    """The states of the rows `keep` only: a copy once per sequence that
    ends, instead of decoding it on."""
    return states if keep is None else \
        {name: np.ascontiguousarray(a[keep]) for name, a in states.items()}


def _steps(model, request, rng):
    """decode_loop over a decoder-only model: the prompts decode as one
    batch, each sequence at its own position."""
    prompts = request.prompts
    lengths = np.array([len(p) for p in prompts], dtype=np.int32)
    states = model.new_state(batch=len(prompts),
                             capacity=int(lengths.max()) + request.max_new_tokens)
    positions = lengths

    def advance(ids, keep, step):
        nonlocal states, positions
        states = shrink(states, keep)
        if keep is not None:
            positions = positions[keep]
        return model.decode({request.input: ids}, states,
                            position=positions + step)[request.output][:, -1, :]

    last = _prefill(model, request, states)
    return decode_loop(request, rng, last, [list(p) for p in prompts], advance)


def generate(model, prompt, max_new_tokens, temperature=0.0, top_k=0, top_p=1.0,
             repetition_penalty=1.0, seed=None, eos_token_id=None, stop=None, stream=False,
             stop_when=None, decoder_start_token_id=None, forced_bos_token_id=None,
             forced_eos_token_id=None):
    """Model.generate: see its docstring. `stop_when(b, generated ids)` ends
    sequence `b` too when true (attnc.pretrained's stop strings). An
    encoder-decoder (attnc.seq2seq) takes the prompts as the encoder's ids
    and starts its decoder at `decoder_start_token_id`."""
    from . import ArgumentError, seq2seq
    try:
        config = SamplingConfig(temperature, top_k, top_p, repetition_penalty)
    except ValueError as e:
        raise ArgumentError(str(e), 4) from None
    encoder_decoder = seq2seq.is_seq2seq(model)
    request = _Request(model, prompt, max_new_tokens, config, eos_token_id, stop, stop_when,
                       encoder_decoder)
    rng = np.random.default_rng(seed)
    if encoder_decoder:
        roles = seq2seq.Request(model, request, decoder_start_token_id,
                                forced_bos_token_id, forced_eos_token_id)
        steps = seq2seq.steps(model, request, roles, rng)
    else:
        steps = _steps(model, request, rng)
    if stream:
        return (tokens[0] if request.single else tokens for tokens in steps)
    generated = [[] for _ in request.prompts]
    for tokens in steps:
        for b, token in enumerate(tokens):
            if token is not None:
                generated[b].append(token)
    return generated[0] if request.single else generated
