#!/usr/bin/env python3
"""Batched decode (issue 25, item 4): one decode step of B sequences, each at
its own position, for attnc and the peers of bench/decode.py, same model and
random weights (bench/decode.py's GPT-2 small with KV caches, its f32
library and int8 variant, its GGUF and CTranslate2 conversions).

  bench/.venv/bin/python bench/batched.py                      # contexts 128,1024; B 1,8,32; 1 thread
  bench/.venv/bin/python bench/batched.py --contexts 128 --batches 1,8 --peers '' --variants ''   # a smoke run

Sequences: at context C, sequence b holds n_b ids (n_b drawn in [C/2, C],
numpy seed [C, 25]; the ids random, seed [C, b, 50257]); B = 8 takes
sequences 0 to 7 of the 32, B = 1 sequence 0. The caches hold each
sequence's first n_b - 1 ids, and one step decodes every sequence's last
id at its own position n_b - 1, attending over its n_b keys: logits [B, 1,
50257]. The timed step repeats that step (each system rewrites its rows
n_b - 1): one warm-up, then --budget seconds (at least --min-reps), the
median; tokens/s = B / step time.

  - attnc: the decode entry with `position` i32[B] (n_b - 1 each), states
    [B, max n_b, 768] per cache; each sequence prefilled alone into its row
    (a [1, L, 768] view), as Model.generate does with ragged prompts.
  - PyTorch (HF GPT2LMHeadModel, sdpa): what generate() does with ragged
    prompts: left padding to the longest, attention_mask, position_ids
    from the mask (cumsum - 1), a StaticCache of max n_b rows (its counter
    set back before each step, as bench/decode.py does). Each step attends
    over max n_b rows of every sequence, the pads masked.
  - llama.cpp (llama-cpp-python's low-level API, as llama.cpp's
    examples/batched): a context with n_seq_max = B, kv_unified false (a
    cache stream per sequence; llama.cpp's advice for sequences that share
    no prefix), n_ctx = B * max n_b rounded up to 256 per sequence, f16 KV
    cache, flash attention off (bench/decode.py's reasons); each sequence
    prefilled in chunks of 512 with its seq_id; the step is one llama_batch
    of B tokens, token b at pos n_b - 1 with seq_id b, its logits on; the
    rewind (llama_memory_seq_rm of each sequence's rows from n_b - 1 on)
    is inside the timed call, as Llama.eval's is in bench/decode.py.
  - CTranslate2: Generator.generate_batch of the B prompts (the first
    n_b - 1 ids each), greedy, --ct2-steps tokens each. It has no ragged
    positions: it runs the prompts together up to the shortest's length,
    then feeds the rest of each longer prompt one token per step while the
    shorter ones generate, so all sequences of a step are at one position
    (the shortest prompt's length + k: fewer keys than n_b for the others).
    Its steps 0 .. --ct2-steps - 1 (every sequence in the batch: the
    shortest ones generate from step 0) are timed by the gaps between
    consecutive steps' first callbacks (bench/peers.py's Ct2Decode,
    batched); the steps after them (the longer prompts' rest and their
    tokens) run untimed. Logits checked: forward_batch of the sequences
    (groups of 4: the prompt path, with its padding), each at position
    n_b - 1.
  - ONNX Runtime: bench/decode.py's exported step has one sequence and
    one past length for all: its row says so, not run.

Agreement before timing, as bench/decode.py's (its check_and_time): every
sequence's logits against the reference, PyTorch sdpa at 2 threads running
each sequence alone (B = 1, no padding, no cache: a forward of its n_b ids,
the last position), max |y - y_ref| <= tol * max |y_ref| over the batch and
each sequence's top-1 within tol * max |y_ref| of the best; tol per weight
precision (bench/peers.py TOL).

Each (context, threads, B, system) runs in a process of its own, one after
another. Results: WORKDIR/batched.md (WORKDIR as bench/decode.py's: the
compiled libraries and converted peers are shared with it).
`--profile` adds attn-run's per-kernel profile of attnc's decode steps at
the largest B (`attn-run --generate --prompts --profile`, the same ragged
prompts). Method and results: docs/performance.md, "Batched decode".
"""

import argparse
import datetime
import os
import subprocess
import sys

import decode                      # bench/decode.py: model, peers, check and timing
from decode import BenchError, VOCAB, log, np

CONTEXTS = (128, 1024)
BATCHES = (1, 8, 32)
LLAMA_CHUNK = 512
ORT = ("ONNX Runtime", None, [], {"detail": "n/a: bench/decode.py's exported decode step takes "
                                  "one sequence (ids [1, 1]) and one past length for all"})


def sequences(c, n):
    """The n sequences of context c: lists of n_b ids, n_b in [c/2, c]."""
    lengths = np.random.default_rng([c, 25]).integers(c // 2, c + 1, size=n)
    return [np.random.default_rng([c, b, VOCAB]).integers(0, VOCAB, size=int(m), dtype=np.int32)
            for b, m in enumerate(lengths)]


# ------------------------------------------------------------------ workers
# One (system, threads, context, B) per process; the last stdout line is
# `RESULT {json}` (decode.emit).


def system_reference(a, seqs):
    """Saves [n, 1, V]: each sequence alone through HF sdpa, no cache."""
    import torch

    torch.set_num_threads(a.threads)
    a.impl = "sdpa"
    model = decode.hf_model(a)
    out = []
    with torch.inference_mode():
        for s in seqs:
            t = torch.from_numpy(s).long()[None]
            out.append(model(input_ids=t, logits_to_keep=1).logits[0].numpy().copy())
    np.save(a.save_out, np.stack(out))
    return decode.emit({"status": "saved"})


def system_attnc(a, seqs):
    import attnc

    model = attnc.load(a.lib, weights=a.weights, threads=a.threads)
    states = model.new_state(batch=len(seqs), capacity=max(len(s) for s in seqs))
    for b, s in enumerate(seqs):
        model.prefill({"ids": s[None, :-1]}, {k: v[b:b + 1] for k, v in states.items()})
    last = {"ids": np.array([[s[-1]] for s in seqs], np.int32)}
    pos = np.array([len(s) - 1 for s in seqs], np.int32)
    out = {"logits": np.zeros((len(seqs), 1, VOCAB), np.float32)}

    def run():
        model.decode(last, states, position=pos, out=out)
    return run, lambda: out["logits"]


def system_torch(a, seqs):
    import torch
    from transformers import StaticCache

    torch.set_num_interop_threads(1)
    torch.set_num_threads(a.threads)
    model = decode.hf_model(a)
    n, L = len(seqs), max(len(s) for s in seqs)
    ids = torch.zeros((n, L), dtype=torch.long)
    mask = torch.zeros((n, L), dtype=torch.long)
    for b, s in enumerate(seqs):
        ids[b, L - len(s):] = torch.from_numpy(s)
        mask[b, L - len(s):] = 1
    cache = StaticCache(config=model.config, max_cache_len=L)
    # generate()'s positions for left padding: the count of real tokens before.
    prompt_pos = (mask[:, :-1].cumsum(-1) - 1).clamp(min=0)
    with torch.inference_mode():
        model(input_ids=ids[:, :-1], attention_mask=mask[:, :-1], position_ids=prompt_pos,
              past_key_values=cache, cache_position=torch.arange(L - 1), use_cache=True,
              logits_to_keep=1)
    tok, pos = ids[:, -1:], torch.tensor([[len(s) - 1] for s in seqs])
    step = torch.tensor([L - 1])
    last = {}

    def run():
        decode.rewind(cache, L - 1)
        with torch.inference_mode():
            last.pop("y", None)
            last["y"] = model(input_ids=tok, attention_mask=mask, position_ids=pos,
                              past_key_values=cache, cache_position=step, use_cache=True).logits
    return run, lambda: last["y"].numpy()


def system_llama(a, seqs):
    import llama_cpp as L
    from peers import PeerError

    L.llama_backend_init()
    model = L.llama_model_load_from_file(a.model_file.encode(), L.llama_model_default_params())
    if not model:
        raise PeerError(f"llama.cpp cannot load {a.model_file}")
    if L.llama_vocab_n_tokens(L.llama_model_get_vocab(model)) != VOCAB:
        raise PeerError(f"llama.cpp read a vocabulary that is not {VOCAB} tokens")
    n = len(seqs)
    p = L.llama_context_default_params()
    p.n_seq_max = n
    p.kv_unified = False
    p.n_ctx = n * -(-max(len(s) for s in seqs) // 256) * 256
    p.n_batch = p.n_ubatch = LLAMA_CHUNK
    p.n_threads = p.n_threads_batch = a.threads
    p.flash_attn_type = (L.LLAMA_FLASH_ATTN_TYPE_ENABLED if a.flash_attn
                         else L.LLAMA_FLASH_ATTN_TYPE_DISABLED)
    ctx = L.llama_init_from_model(model, p)
    if not ctx:
        raise PeerError(f"llama_init_from_model failed (n_ctx {p.n_ctx}, n_seq_max {n})")
    batch = L.llama_batch_init(LLAMA_CHUNK, 0, 1)

    def fill(tokens):
        """tokens: (id, position, sequence, logits wanted) each."""
        batch.n_tokens = len(tokens)
        for i, (t, pos, seq, want) in enumerate(tokens):
            batch.token[i], batch.pos[i], batch.n_seq_id[i] = int(t), pos, 1
            batch.seq_id[i][0], batch.logits[i] = seq, want

    def submit():
        rc = L.llama_decode(ctx, batch)
        if rc != 0:
            raise PeerError(f"llama_decode returned {rc}")

    for b, s in enumerate(seqs):
        for i in range(0, len(s) - 1, LLAMA_CHUNK):
            chunk = s[i:min(i + LLAMA_CHUNK, len(s) - 1)]
            fill([(t, i + j, b, j == len(chunk) - 1) for j, t in enumerate(chunk)])
            submit()
    mem = L.llama_get_memory(ctx)
    fill([(s[-1], len(s) - 1, b, True) for b, s in enumerate(seqs)])

    def run():
        for b, s in enumerate(seqs):
            L.llama_memory_seq_rm(mem, b, len(s) - 1, -1)
        submit()

    def output():
        return np.stack([np.ctypeslib.as_array(L.llama_get_logits_ith(ctx, i), shape=(VOCAB,))
                         for i in range(n)])[:, None, :].copy()
    return run, output


def system_ct2(a, seqs):
    import time
    import ctranslate2
    import peers

    gen = ctranslate2.Generator(a.model_file, device="cpu", compute_type="default",
                                intra_threads=a.threads, inter_threads=1)
    if max(len(s) for s in seqs) + a.ct2_steps > a.n_positions:
        raise peers.PeerError(f"--ct2-steps {a.ct2_steps} pass n_positions {a.n_positions}")
    vocab = peers.stand_in_vocab()
    prompts = [[vocab[t] for t in s[:-1]] for s in seqs]

    def logits():
        out = []
        for g in range(0, len(seqs), 4):
            group = seqs[g:g + 4]
            y = np.array(gen.forward_batch([[int(t) for t in s] for s in group]))
            out += [y[i, len(s) - 1:len(s)] for i, s in enumerate(group)]
        return np.stack(out)

    def run():
        first = {}

        def cb(step):
            first.setdefault(step.step, time.perf_counter())
            return False

        gen.generate_batch(prompts, max_length=a.ct2_steps, min_length=a.ct2_steps,
                           sampling_topk=1, include_prompt_in_result=False, callback=cb)
        # Steps 0 .. ct2_steps - 1: every sequence in the batch (the shortest
        # prompts generate from step 0, the longer ones are still being fed).
        if any(k not in first for k in range(a.ct2_steps)):
            raise peers.PeerError(f"CTranslate2 made steps {sorted(first)}, "
                                  f"not 0 to {a.ct2_steps - 1}")
        return np.diff([first[k] for k in range(a.ct2_steps)]).tolist()
    return run, logits, True


SYSTEMS = {"attnc": system_attnc, "torch": system_torch, "llama": system_llama,
           "ct2": system_ct2}


def worker_main(a):
    seqs = sequences(a.context, a.seqs)[:a.batch]
    if a.system == "ref":
        return system_reference(a, seqs)
    got = SYSTEMS[a.system](a, seqs)
    return decode.emit(decode.check_and_time(a, got, lambda: np.load(a.ref)[:a.batch]))


# ------------------------------------------------------------------ driver


def measure(a, c):
    """The reference, then every (threads, B, system): [(label, threads, B, result)]."""
    ref = os.path.join(a.workdir, f"ref_batched_C{c}_n{a.seqs}_N{a.n_positions}.npy")
    base = ["--context", str(c), "--seqs", str(a.seqs), "--budget", str(a.budget)]
    if not (a.reuse and os.path.exists(ref)):
        log(f"C={c}: reference (PyTorch sdpa, each sequence alone, 2 threads)")
        r = decode.worker(a, base + ["--system", "ref", "--batch", str(a.seqs), "--threads", "2",
                                     "--save-out", ref], __file__)
        if r.get("status") != "saved":
            raise BenchError(f"C={c}: the PyTorch reference failed: {r.get('detail')}")
    rows = []
    for t in a.thread_list:
        for n in a.batch_list:
            for label, system, extra, meta in decode.systems(a) + [ORT]:
                log(f"  C={c} T={t} B={n} {label}")
                if system is None:
                    res = {"status": "n/a", "detail": meta["detail"]}
                else:
                    tol = ["--tol", str(meta["tol"])] if "tol" in meta else []
                    res = decode.worker(a, base + ["--system", system, "--threads", str(t),
                                                   "--batch", str(n), "--ref", ref] + tol + extra,
                                        __file__)
                    res["precision"] = meta["precision"]
                log(f"    {decode.describe(res)}")
                rows.append((label, t, n, res))
    return rows


def table(a, c, rows):
    lens = sequences(c, a.seqs)
    head = (f"batched decode, context {c}: each sequence at its own length n_b in "
            f"[{c // 2}, {c}] (B = {max(a.batch_list)}: " + ", ".join(str(len(s)) for s in lens)
            + "), one step of B tokens; ms per step and tokens/s = B / step time")
    out = [head, "", "| system | threads | " + " | ".join(f"B={n} ms | B={n} tokens/s"
                                                         for n in a.batch_list)
           + " | max abs err (of max abs), worst B |",
           "| --- | ---: |" + " ---: | ---: |" * len(a.batch_list) + " --- |"]
    by = {}
    for label, t, n, r in rows:
        by.setdefault((label, t), {})[n] = r
    for (label, t), res in by.items():
        cells, errs, notes = [], [], []
        for n in a.batch_list:
            r = res.get(n, {})
            if r.get("status") == "ok":
                cells.append(f"{r['ms']:.1f} | {1000 * n / r['ms']:.0f}")
                errs.append((r["maxerr"], r["scale"], r["argmax_agree"]))
            else:
                cells.append("- | -")
                notes.append(f"B={n}: " + str(r.get("detail", r.get("status"))))
        err = ""
        if errs:
            e = max(errs)
            err = f"{e[0]:.1e} ({e[1]:.2f}), argmax {100 * min(x[2] for x in errs):.0f}%"
        if not errs and len(set(x.split(": ", 1)[1] for x in notes)) == 1:
            notes = [notes[0].split(": ", 1)[1]]         # the same reason at every B
        detail = "; ".join([err] * bool(err) + notes).replace("|", "\\|").replace("\n", " ")
        out.append(f"| {label} | {t} | " + " | ".join(cells) + f" | {detail} |")
    return "\n".join(out) + "\n\n" + goal_table(rows) + "\n"


def goal_table(rows):
    """Issue 25: at the largest B, attnc's fastest row against every peer
    that batches, at the same weight precision (8-bit: weight-only int8 or
    int8-a8, whichever is faster, as decode.py's goal table picks)."""
    big = max(n for _, _, n, _ in rows)
    ok = [(label, t, r) for label, t, n, r in rows if n == big and r.get("status") == "ok"]
    out = [f"goal (issue 25): at B = {big}, attnc ahead of every peer that batches "
           "(attnc tokens/s / the peer's, same weight precision)", "",
           "| weights | threads | attnc | peer | attnc tokens/s / peer's | verdict |",
           "| --- | ---: | --- | --- | ---: | --- |"]
    for label, t, r in ok:
        if label.startswith("attnc"):
            continue
        ours = [(lb, x) for lb, tt, x in ok if lb.startswith("attnc") and tt == t
                and x["precision"] == r["precision"]]
        if not ours:
            out.append(f"| {r['precision']} | {t} | none | {label} | - | no attnc row |")
            continue
        lb, x = min(ours, key=lambda o: o[1]["ms"])
        ratio = r["ms"] / x["ms"]
        out.append(f"| {r['precision']} | {t} | {lb} | {label} | {ratio:.2f} | "
                   f"{'ahead' if ratio > 1 else 'behind'} |")
    return "\n".join(out) + "\n"


def profile(a, c):
    """attn-run's per-kernel profile of attnc's decode steps at the largest B."""
    n = max(a.batch_list)
    prompts = os.path.join(a.workdir, f"prompts_C{c}_B{n}.txt")
    with open(prompts, "w") as f:
        # attn-run decodes each prompt's next token itself: the prompt is all n_b ids.
        f.writelines(",".join(map(str, s[:-1])) + "\n" for s in sequences(c, a.seqs)[:n])
    cmd = [os.path.join(a.tools, "bin", "attn-run"), a.lib, "--weights", a.weights,
           "--generate", "8", "--prompts", prompts, "--profile", "--threads",
           str(a.thread_list[0])]
    log(f"C={c}: {' '.join(cmd)}")
    text = decode.run_cmd(cmd, "attn-run --profile")
    keep = "\n".join(l for l in text.splitlines() if not l.startswith("tokens:"))
    return (f"attnc f32, B = {n}, context {c}: `{' '.join(os.path.basename(x) for x in cmd)}`"
            f" (7 decode steps, positions n_b - 1 on)\n\n```\n{keep}\n```\n")


def header(a):
    import run as bench_run
    vers, cpu, commit = bench_run.machine_facts(("torch", "transformers", "numpy",
                                                 "llama_cpp_python", "ctranslate2"))
    load = open("/proc/loadavg").read().split()[:3] if os.path.exists("/proc/loadavg") else []
    return "\n".join([
        f"# Batched decode ({datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC)",
        "", f"- machine: {cpu}, {os.cpu_count()} logical CPUs; load average at the start: "
        + " ".join(load),
        f"- repository at {commit}; attnc {a.attnc}",
        "- " + ", ".join(f"{k} {v}" for k, v in vers.items()),
        f"- model: GPT-2 small sizes, n_positions {a.n_positions}, random weights (seed 1)",
        f"- command: {' '.join(sys.argv)}", ""]) + "\n"


def parse_args():
    p = argparse.ArgumentParser(description="Batched GPT-2-small decode, ragged positions: "
                                            "attnc against PyTorch, llama.cpp, CTranslate2.")
    p.add_argument("--contexts", default=",".join(map(str, CONTEXTS)),
                   help="context bounds C: sequence lengths drawn in [C/2, C] (default 128,1024)")
    p.add_argument("--batches", default=",".join(map(str, BATCHES)),
                   help="batch sizes B (default 1,8,32)")
    p.add_argument("--threads", default="1", help="thread counts (default 1)")
    p.add_argument("--budget", type=float, default=3.0,
                   help="seconds of timed steps per row (default 3)")
    p.add_argument("--min-reps", type=int, default=3)
    p.add_argument("--max-reps", type=int, default=100)
    p.add_argument("--tol", type=float, default=1e-3,
                   help="agreement of f32 rows (default 1e-3; other precisions: peers.TOL)")
    p.add_argument("--tools", default=os.path.join(decode.REPO, "build"),
                   help="the build with bin/attnc and bin/attn-run (default build/)")
    p.add_argument("--workdir", default=os.path.join(decode.HERE, "out", "decode"),
                   help="bench/decode.py's (default bench/out/decode)")
    p.add_argument("--peers", default="llama.cpp,ctranslate2")
    p.add_argument("--llama-precisions", default="f32,Q8_0")
    p.add_argument("--ct2-precisions", default="float32,int8_float32")
    p.add_argument("--ct2-steps", type=int, default=17,
                   help="tokens per CTranslate2 generation: its steps are the gaps (default 17)")
    p.add_argument("--flash-attn", action="store_true", help="llama.cpp with flash attention")
    p.add_argument("--variants", default="int8",
                   help="attnc's rows besides f32: f16, int8, q4, int8-a8, q4-a8 (those two "
                        "compiled with --precision=int8), each also with f16 KV caches as "
                        "KIND-kv16 (also f32-kv16) or i8 ones as KIND-kv8, as in "
                        "bench/decode.py (default int8)")
    p.add_argument("--reuse", action="store_true",
                   help="reuse WORKDIR's compiled libraries when their source is unchanged "
                        "and attnc is older than them, and its references")
    p.add_argument("--profile", action="store_true",
                   help="attn-run --profile of attnc f32's decode at the largest B, each context")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    # decode.systems() passes --llama-kv: this bench's llama.cpp caches are f16.
    for opt in ("--system", "--impl", "--lib", "--weights", "--ref", "--save-out", "--model-file",
                "--llama-kv"):
        p.add_argument(opt, help=argparse.SUPPRESS)
    for opt in ("--context", "--batch", "--seqs", "--n-positions"):
        p.add_argument(opt, type=int, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.worker:
        a.threads = int(a.threads)
        return a
    a.context_list = [int(c) for c in a.contexts.split(",") if c]
    a.batch_list = sorted(int(n) for n in a.batches.split(",") if n)
    a.thread_list = [int(t) for t in a.threads.split(",") if t]
    if not a.context_list or min(a.context_list) < 4:
        p.error("--contexts: each at least 4")
    if not a.batch_list or min(a.batch_list) < 1:
        p.error("--batches: each at least 1")
    a.seqs = max(a.batch_list)
    a.peer_list = [x for x in a.peers.split(",") if x]
    a.variant_list = decode.variant_list(p, a.variants)
    a.llama_precisions = [x for x in a.llama_precisions.split(",") if x]
    a.llama_kv_list = ["f16"]
    a.ct2_precisions = [x for x in a.ct2_precisions.split(",") if x]
    import peers
    for x in a.peer_list:
        if x not in ("llama.cpp", "ctranslate2"):
            p.error(f"--peers: unknown peer '{x}' (llama.cpp, ctranslate2)")
    for x in a.llama_precisions:
        if x not in peers.LLAMA_PRECISIONS:
            p.error(f"--llama-precisions: '{x}' is not one of {','.join(peers.LLAMA_PRECISIONS)}")
    for x in a.ct2_precisions:
        if x not in peers.CT2_PRECISIONS:
            p.error(f"--ct2-precisions: '{x}' is not one of {','.join(peers.CT2_PRECISIONS)}")
    # bench/decode.py's default, so that its compiled models and peers are reused.
    a.n_positions = max([4096] + [c + a.ct2_steps for c in a.context_list])
    a.attnc = os.path.join(a.tools, "bin", "attnc")
    a.impl_list, a.onnx = ["sdpa"], None
    return a


def main():
    a = parse_args()
    if a.worker:
        a.save_out = getattr(a, "save_out", None)
        return worker_main(a)
    if not os.path.exists(a.attnc):
        raise BenchError(f"{a.attnc} missing: build the project first (./scripts/setup.sh), "
                         "or point --tools at a build")
    os.makedirs(a.workdir, exist_ok=True)
    decode.compile_model(a)
    decode.prepare_variants(a)
    peers_note = decode.prepare_peers(a)
    results = os.path.join(a.workdir, "batched.md")
    text = header(a) + (peers_note + "\n" if peers_note else "")
    print(text, flush=True)
    with open(results, "w") as f:
        f.write(text + "\n")
    for c in sorted(a.context_list):
        text = table(a, c, measure(a, c))
        if a.profile:
            text += "\n" + profile(a, c)
        print(text, flush=True)
        with open(results, "a") as f:
            f.write(text + "\n")
    log(f"results written to {results}")


if __name__ == "__main__":
    try:
        main()
    except BenchError as e:
        print(f"bench/batched.py: error: {e}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
