"""Continuous batching of generation over one decoder library (attnc.serve's
replicas use it; it needs no Ray).

One thread runs the decode loop of a model. Its KV caches are one slot array
of `max_batch` rows (Model.new_state(batch=max_batch, capacity=L)); the
sequences being decoded hold rows 0 .. n-1, so every step decodes the
contiguous views `state[:n]`, each sequence at its own position. Between two
steps the loop admits waiting sequences: each is prefilled alone into the
view of row n (`state[n:n+1]`, as Model.generate prefills a prompt) and
joins the batch; a sequence that finishes leaves it, the last row's cache
copied into its row (one row per sequence that ends, never the whole
batch). Each sequence chooses its tokens with its own sampling settings and
random generator, as Model.generate does for one prompt, so a sequence's ids
do not depend on what else is being decoded (greedy ones equal
Model.generate's exactly).

Sequence events go to the `emit` callback a submitter gives, from the loop's
thread: `("token", id)` per new id, then `("done", finish_reason)` with
"stop" (an EOS id, a stop sequence or string) or "length" (max_tokens), or
`("error", message)`."""

import threading
import time
from collections import deque

import numpy as np

from .sampling import SamplingConfig, next_tokens
from .seq2seq import is_seq2seq


class Sequence:
    """One prompt to continue: `prompt` (ids), `max_tokens`, a SamplingConfig,
    `seed`, the ids that end it (`eos`), `stop_when(generated)` (stop
    strings; None for none) and `emit(event)`."""

    def __init__(self, prompt, max_tokens, config, seed, eos, emit, stop_when=None):
        self.prompt = np.asarray(prompt, dtype=np.int32)
        self.max_tokens = int(max_tokens)
        self.config = config
        self.rng = np.random.default_rng(seed)
        self.eos = set(eos or ())
        self.emit = emit
        self.stop_when = stop_when
        self.seen = list(map(int, self.prompt))
        self.generated = []
        self.cancelled = False
        self.submitted = time.monotonic()

    @property
    def position(self):
        """The tokens in its cache rows: the prompt and every generated id
        but the last (which the next decode step feeds)."""
        return len(self.prompt) + len(self.generated) - 1

    def take(self, logits):
        """Chooses the next id from `logits` [1, V]; returns the finish
        reason when the sequence ends with it, else None."""
        token = int(next_tokens(logits, [self.seen], self.config, self.rng)[0])
        self.seen.append(token)
        self.generated.append(token)
        self.emit(("token", token))
        if token in self.eos or (self.stop_when is not None and self.stop_when(self.generated)):
            return "stop"
        if len(self.generated) >= self.max_tokens:
            return "length"
        return None


class Batcher:
    """The decode loop of `model` (an attnc.Model with prefill and decode):
    `submit(sequence)` queues a Sequence; at most `max_batch` decode at
    once. `stats()` gives counters (steps, tokens, the batch sizes seen)."""

    def __init__(self, model, max_batch=8, capacity=None):
        if not (model.has_entry("prefill") and model.has_entry("decode")):
            raise ValueError(f"model '{model.info.name}' has no prefill and decode entries")
        if is_seq2seq(model):
            raise ValueError(f"model '{model.info.name}' is an encoder-decoder: its decode "
                             "takes no prompt; the batcher steps decoder-only models")
        self.model = model
        self.max_batch = int(max_batch)
        ids = [t for t in model.inputs if t.name != "position"]
        self.input = ids[0].name
        logits = [t for t in model.outputs if t.name == "logits"] or model.outputs
        self.output = logits[0].name
        self.states = model.new_state(batch=self.max_batch, capacity=capacity)
        self.capacity = next(iter(self.states.values())).shape[1]
        self.active = []                 # the Sequence of each row 0 .. n-1
        self.waiting = deque()
        self.lock = threading.Condition()
        self.closed = False
        self.steps = self.tokens = self.batch_sum = 0
        self.max_seen = 0
        self.sizes = []                  # each step's batch size, since take_sizes()
        self.thread = threading.Thread(target=self._loop, name="attnc-decode", daemon=True)
        self.thread.start()

    def submit(self, sequence):
        need = len(sequence.prompt) + sequence.max_tokens
        if need > self.capacity:
            raise ValueError(f"a prompt of {len(sequence.prompt)} tokens and "
                             f"{sequence.max_tokens} new ones need more than the "
                             f"{self.capacity} rows of the KV cache")
        with self.lock:
            if self.closed:
                raise RuntimeError("the decode loop is closed")
            self.waiting.append(sequence)
            self.lock.notify()

    def queue_depth(self):
        with self.lock:
            return len(self.waiting)

    def stats(self):
        with self.lock:
            return {"steps": self.steps, "tokens": self.tokens, "active": len(self.active),
                    "waiting": len(self.waiting), "max_batch_seen": self.max_seen,
                    "mean_batch": self.batch_sum / self.steps if self.steps else 0.0}

    def take_sizes(self):
        """The batch size of each step since the last call (for metrics)."""
        with self.lock:
            sizes, self.sizes = self.sizes, []
        return sizes

    def close(self):
        with self.lock:
            self.closed = True
            self.lock.notify()
        self.thread.join()

    # ---------------------------------------------------------------- loop

    def _loop(self):
        while True:
            with self.lock:
                while not self.closed and not self.waiting and not self.active:
                    self.lock.wait()
                if self.closed:
                    pending = list(self.waiting) + self.active
                    self.waiting.clear()
                    break
                joining = []
                while self.waiting and len(self.active) + len(joining) < self.max_batch:
                    joining.append(self.waiting.popleft())
            try:
                for seq in joining:
                    self._join(seq)
                if self.active:
                    self._step()
            except Exception as e:  # noqa: BLE001 - every sequence gets the cause
                message = f"{type(e).__name__}: {e}"
                for seq in self.active + joining:
                    seq.emit(("error", message))
                self.active = []
        for seq in pending:
            seq.emit(("error", "the server is shutting down"))

    def _rows(self, start, stop):
        return {name: a[start:stop] for name, a in self.states.items()}

    def _join(self, seq):
        """Prefills `seq` into the next free row; it joins the batch unless
        its first id ends it."""
        if seq.cancelled:
            return
        row = len(self.active)
        logits = self.model.prefill({self.input: seq.prompt[None, :]},
                                    self._rows(row, row + 1))[self.output]
        reason = seq.take(logits[:, -1, :])
        self.tokens += 1
        if reason:
            seq.emit(("done", reason))
        else:
            self.active.append(seq)

    def _step(self):
        """One decode step of every active sequence, then the finished ones
        leave."""
        n = len(self.active)
        ids = np.array([[s.generated[-1]] for s in self.active], dtype=np.int32)
        position = np.array([s.position for s in self.active], dtype=np.int32)
        logits = self.model.decode({self.input: ids}, self._rows(0, n),
                                   position=position)[self.output][:, -1, :]
        with self.lock:
            self.steps += 1
            self.batch_sum += n
            self.max_seen = max(self.max_seen, n)
            if len(self.sizes) < 100000:
                self.sizes.append(n)
        leaving = []
        for row, seq in enumerate(self.active):
            if seq.cancelled:
                leaving.append(row)
                continue
            reason = seq.take(logits[row:row + 1])
            self.tokens += 1
            if reason:
                seq.emit(("done", reason))
                leaving.append(row)
        # Highest rows first, each replaced by the current last row.
        for row in reversed(leaving):
            last = len(self.active) - 1
            if row != last:
                for a in self.states.values():
                    a[row] = a[last]
                self.active[row] = self.active[last]
            self.active.pop()


def sampling_config(temperature=0.0, top_k=0, top_p=1.0, repetition_penalty=1.0):
    """A SamplingConfig (ValueError for a bad setting)."""
    return SamplingConfig(float(temperature), int(top_k), float(top_p),
                          float(repetition_penalty))
