"""Choosing the next token from a decoder's logits, as Hugging Face
transformers' `generate` does: the repetition penalty, then (when sampling)
temperature, top-k and top-p, each with transformers' exact rule, then a
draw from the softmax of what is left; greedy (temperature 0) takes the
largest logit after the penalty.

Every function takes and returns float32 logits [B, V]; a filtered-out token
gets -inf, as transformers' `filter_value`."""

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SamplingConfig:
    """How the next token is chosen. temperature 0 is greedy; top_k 0 and
    top_p 1.0 keep every token; repetition_penalty 1.0 changes nothing."""
    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0
    repetition_penalty: float = 1.0

    def __post_init__(self):
        if not (np.isfinite(self.temperature) and self.temperature >= 0):
            raise ValueError(f"temperature must be 0 (greedy) or positive, got {self.temperature}")
        if isinstance(self.top_k, bool) or int(self.top_k) != self.top_k or self.top_k < 0:
            raise ValueError(f"top_k must be an integer >= 0 (0: no top-k), got {self.top_k}")
        if not 0.0 < self.top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1] (1: no top-p), got {self.top_p}")
        if not (np.isfinite(self.repetition_penalty) and self.repetition_penalty > 0):
            raise ValueError("repetition_penalty must be positive (1.0: none), got "
                             f"{self.repetition_penalty}")

    @property
    def greedy(self):
        return self.temperature == 0.0


def repetition_penalty(logits, seen, penalty):
    """transformers' RepetitionPenaltyLogitsProcessor: each token of row b's
    `seen` ids (prompt and generated) has its logit divided by `penalty`
    when positive, multiplied when negative."""
    if penalty == 1.0:
        return logits
    out = logits.copy()
    for b, ids in enumerate(seen):
        ids = np.unique(np.asarray(ids, dtype=np.int64))
        ids = ids[(ids >= 0) & (ids < logits.shape[1])]
        row = out[b, ids]
        out[b, ids] = np.where(row < 0, row * np.float32(penalty), row / np.float32(penalty))
    return out


def temperature(logits, t):
    """transformers' TemperatureLogitsWarper (applied when t != 1)."""
    return logits if t == 1.0 else logits / np.float32(t)


def top_k(logits, k):
    """transformers' TopKLogitsWarper: tokens below the k-th largest logit
    go (ties with it stay); k 0 keeps all."""
    if k == 0 or k >= logits.shape[1]:
        return logits
    kth = -np.partition(-logits, k - 1, axis=1)[:, k - 1:k]
    return np.where(logits < kth, np.float32(-np.inf), logits)


def top_p(logits, p):
    """transformers' TopPLogitsWarper: sorted ascending, the tokens whose
    cumulative probability is <= 1 - p go, the largest always stays."""
    if p >= 1.0:
        return logits
    order = np.argsort(logits, axis=1, kind="stable")
    ordered = np.take_along_axis(logits, order, axis=1)
    cumulative = np.cumsum(softmax(ordered), axis=1, dtype=np.float32)
    drop_sorted = cumulative <= np.float32(1 - p)
    drop_sorted[:, -1] = False
    drop = np.zeros_like(drop_sorted)
    np.put_along_axis(drop, order, drop_sorted, axis=1)
    return np.where(drop, np.float32(-np.inf), logits)


def softmax(logits):
    """float32 softmax over the last axis; -inf logits get 0."""
    shifted = logits - np.max(logits, axis=-1, keepdims=True)
    e = np.exp(shifted, dtype=np.float32)
    return e / np.sum(e, axis=-1, keepdims=True, dtype=np.float32)


def filtered_logits(logits, seen, config):
    """The logits after the penalty and, when sampling, the warpers, in
    transformers' order; what `next_tokens` draws from."""
    logits = np.asarray(logits, dtype=np.float32)
    logits = repetition_penalty(logits, seen, config.repetition_penalty)
    if config.greedy:
        return logits
    logits = temperature(logits, config.temperature)
    logits = top_k(logits, config.top_k)
    return top_p(logits, config.top_p)


def next_tokens(logits, seen, config, rng):
    """One id per row of `logits` [B, V]: the largest when greedy, else a draw
    from the filtered distribution with `rng` (a numpy Generator)."""
    scores = filtered_logits(logits, seen, config)
    if config.greedy:
        return np.argmax(scores, axis=1).astype(np.int64)
    probs = softmax(scores).astype(np.float64)
    probs /= probs.sum(axis=1, keepdims=True)
    return np.array([rng.choice(probs.shape[1], p=row) for row in probs], dtype=np.int64)
