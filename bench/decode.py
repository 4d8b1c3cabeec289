#!/usr/bin/env python3
"""Decoding a GPT-2-small-size model one token at a time (issue 9): attnc's
"decode" entry (KV caches the caller owns, `cache = past.{i}`) against
Hugging Face PyTorch's GPT2LMHeadModel with a static KV cache (StaticCache,
what `generate(cache_implementation="static")` uses), same random weights.
Issue 25: also against llama.cpp (llama-cpp-python; GGUF f32, f16, Q8_0,
Q4_0) and CTranslate2 (float32, int8_float32) made from the same weights
(bench/peers.py says how, and how each is timed), with attnc's f16 and int8
models beside them, each row's bytes read per token and effective
bandwidth, the machine's read bandwidth (bench/read_bw.c), and a table per
context of attnc against the fastest peer at each weight precision.

  bench/.venv/bin/python bench/decode.py                       # everything
  bench/.venv/bin/python bench/decode.py --contexts 128 --threads 1 --no-prefill   # a smoke run

Model: models/gpt2.attn with its 12 layers given KV caches (`state
past.{i}.key/value : f32[B, L, 768]`, `cache = past.{i}`), n_positions N
(default 4096, so that the longest context fits: GPT-2's own is 1024; wpe is
[N, 768]), random weights (attnc --init-weights --seed=1), read at load. The
Hugging Face model is GPT2LMHeadModel(GPT2Config(n_positions=N)) holding the
same weights, eval, torch.inference_mode(), attn_implementation "sdpa" and
"eager" (the better is marked).

Decode at context C (B = 1): the caches hold C - 1 tokens (a prefill of C - 1
random ids), and one token is decoded at position C - 1, attending over C
keys: logits [1, 1, 50257]. PyTorch's sdpa at 2 threads makes the reference
decode logits; every system's must agree with them (max |y - y_ref| <= tol *
max |y_ref|) before it is timed. Timing repeats that same decode step (it
rewrites row C - 1 of every cache; for PyTorch the static cache's counter is
set back to C - 1 between steps, outside the timed region): one warm-up, then
runs for --budget seconds (at least --min-reps, at most --max-reps); the median.

Prefill at S (B = 1, a cache of S rows): the prompt's logits and caches,
timed the same way (the static cache's counter reset to 0 between runs).

A linear fit of decode ms against C per (system, threads) gives the cost of
the weights (intercept) and of each 1000 tokens of context (slope), with R^2.

Each (system, threads, what) runs in a process of its own (this script,
--worker), one after another. Results go to bench/out/decode/results.md,
and decode.png beside it: decode ms per token against context, one line per
row and thread count (matplotlib; without it the results say so).
bench/batched.py reuses its model, peers, check and timing for B > 1.
Method and results: docs/performance.md, "Decoding".
"""

import argparse
import datetime
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import time

from gpt2_source import gpt2_decode_text

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "test", "e2e"))


def check_peers():
    missing = [m for m in ("numpy", "torch", "transformers", "attnc")
               if importlib.util.find_spec(m) is None]
    if missing:
        sys.exit(f"bench/decode.py: error: {', '.join(missing)} not importable by "
                 f"{sys.executable}: set up bench/.venv with bench/setup.sh and run "
                 "bench/.venv/bin/python bench/decode.py")


check_peers()
import numpy as np  # noqa: E402

D, LAYERS, FFN, HEADS, VOCAB = 768, 12, 3072, 12, 50257
# Sum of K*N over one layer's GEMMs (Q|K|V, attention out, FFN up, FFN down).
LAYER_KN = D * 3 * D + D * D + D * FFN + FFN * D
HEAD_KN = D * VOCAB
CONTEXTS = (128, 1024, 4096)
PREFILLS = (128, 1024)
IMPLS = ("sdpa", "eager")


class BenchError(Exception):
    pass


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def decode_flops(c):
    """One token at context c: 2 * (12 * LAYER_KN + the head's K*N) for the
    GEMMs plus 12 * 4 * c * 768 for QK^T and PV over c keys."""
    return 2.0 * (LAYERS * LAYER_KN + HEAD_KN) + LAYERS * 4.0 * c * D


def decode_bytes(c):
    """Bytes one decode step must read at least: every GEMM weight and the
    head (f32), and c rows of keys and values in each layer's caches."""
    return 4.0 * (LAYERS * LAYER_KN + HEAD_KN) + LAYERS * 2 * 4.0 * c * D


def prefill_flops(s):
    """As bench/models.py counts GPT-2: the causal half of QK^T and PV."""
    return 2.0 * s * (LAYERS * LAYER_KN + HEAD_KN) + LAYERS * 4.0 * s * (s + 1) / 2 * D


def bench_model_text(n_positions):
    """models/gpt2.attn with KV caches and n_positions rows of wpe."""
    try:
        return gpt2_decode_text(n_positions)
    except ValueError as e:
        raise BenchError(str(e)) from None


def prompt_ids(c):
    rng = np.random.default_rng([c, VOCAB])
    return rng.integers(0, VOCAB, size=(1, c), dtype=np.int32)


# ------------------------------------------------------------------ workers
# One (system, threads, what) per process; the last stdout line is `RESULT {json}`.


def system_attnc(a, ids, what):
    import attnc

    model = attnc.load(a.lib, weights=a.weights, threads=a.threads)
    n = ids.shape[1]
    if what == "prefill":
        states = model.new_state(batch=1, capacity=n)
        out = {"logits": np.zeros((1, n, VOCAB), np.float32)}

        def run():
            model.prefill({"ids": ids}, states, out=out)
        return run, lambda: out["logits"]
    states = model.new_state(batch=1, capacity=n)
    model.prefill({"ids": ids[:, :-1]}, states)
    last = {"ids": np.ascontiguousarray(ids[:, -1:])}
    out = {"logits": np.zeros((1, 1, VOCAB), np.float32)}

    def run():
        model.decode(last, states, position=n - 1, out=out)
    return run, lambda: out["logits"]


def hf_model(a):
    import torch
    import safetensors_io
    from transformers import GPT2Config, GPT2LMHeadModel

    w = {k: torch.from_numpy(v) for k, v in safetensors_io.load(a.weights).items()}
    config = GPT2Config(n_positions=a.n_positions)
    config._attn_implementation = a.impl
    model = GPT2LMHeadModel(config)
    missing, unexpected = model.transformer.load_state_dict(w, strict=False)
    if missing or unexpected:
        raise BenchError(f"weights do not match the HF model: missing {missing[:5]}, "
                         f"unexpected {unexpected[:5]}")
    if model.lm_head.weight.data_ptr() != model.transformer.wte.weight.data_ptr():
        raise BenchError("lm_head is not tied to wte")
    if model.config._attn_implementation != a.impl:
        raise BenchError(f"asked for attn_implementation {a.impl}, got "
                         f"{model.config._attn_implementation}")
    return model.eval()


def rewind(cache, to):
    """StaticCache writes at its own counter (cumulative_length); setting it
    back makes the next call overwrite the same rows, as a fresh step would."""
    for layer in cache.layers:
        if getattr(layer, "is_initialized", False):
            layer.cumulative_length.fill_(to)


def system_torch(a, ids, what):
    import torch
    from transformers import StaticCache

    torch.set_num_interop_threads(1)
    torch.set_num_threads(a.threads)
    model = hf_model(a)
    t = torch.from_numpy(ids).long()
    n = t.shape[1]
    cache = StaticCache(config=model.config, max_cache_len=n)
    last = {}

    if what == "prefill":
        pos = torch.arange(n)

        def run():
            rewind(cache, 0)
            with torch.inference_mode():
                last.pop("y", None)
                last["y"] = model(input_ids=t, past_key_values=cache, use_cache=True,
                                  cache_position=pos).logits
        return run, lambda: last["y"].numpy()

    with torch.inference_mode():
        model(input_ids=t[:, :-1], past_key_values=cache, use_cache=True,
              cache_position=torch.arange(n - 1))
    tok, pos = t[:, -1:], torch.tensor([n - 1])

    def run():
        rewind(cache, n - 1)
        with torch.inference_mode():
            last.pop("y", None)
            last["y"] = model(input_ids=tok, past_key_values=cache, use_cache=True,
                              cache_position=pos).logits
    return run, lambda: last["y"].numpy()


class DecodeStep:
    """GPT2LMHeadModel's decode step with the past as plain tensors, for the
    ONNX export: (ids [1, 1], position_ids [1, 1], past keys and values [12,
    1, 12, P, 64] each) -> (logits [1, 1, V], present keys and values [12, 1,
    12, P + 1, 64]), as optimum's GPT-2 "with past" graph takes them."""

    @staticmethod
    def module(model):
        import torch
        from transformers import DynamicCache

        class Step(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.m = model

            def forward(self, ids, pos, past_k, past_v):
                cache = DynamicCache(config=self.m.config)
                for i in range(LAYERS):
                    cache.update(past_k[i], past_v[i], i)
                out = self.m(input_ids=ids, position_ids=pos, past_key_values=cache,
                             use_cache=True)
                c = out.past_key_values
                return (out.logits, torch.stack([c.layers[i].keys for i in range(LAYERS)]),
                        torch.stack([c.layers[i].values for i in range(LAYERS)]))
        return Step().eval()


def torch_past(a, ids):
    """Keys and values of ids (prefilled by Hugging Face, sdpa), stacked."""
    import torch
    from transformers import DynamicCache

    torch.set_num_threads(a.threads)
    a.impl = "sdpa"
    model = hf_model(a)
    with torch.inference_mode():
        cache = DynamicCache(config=model.config)
        model(input_ids=torch.from_numpy(ids).long(), past_key_values=cache, use_cache=True)
        k = torch.stack([cache.layers[i].keys for i in range(LAYERS)]).numpy().copy()
        v = torch.stack([cache.layers[i].values for i in range(LAYERS)]).numpy().copy()
    return k, v


def export_onnx(a):
    import torch

    a.impl = "sdpa"
    step = DecodeStep.module(hf_model(a))
    p = 7
    ex = (torch.zeros((1, 1), dtype=torch.long), torch.tensor([[p]]),
          torch.zeros((LAYERS, 1, HEADS, p, D // HEADS)), torch.zeros((LAYERS, 1, HEADS, p, D // HEADS)))
    past = torch.export.Dim("past", min=2, max=a.n_positions - 1)
    with torch.inference_mode():
        torch.onnx.export(step, ex, a.onnx, dynamo=True, external_data=True,
                          input_names=["ids", "pos", "past_k", "past_v"],
                          output_names=["logits", "present_k", "present_v"],
                          dynamic_shapes={"ids": None, "pos": None, "past_k": {3: past},
                                          "past_v": {3: past}})


def system_ort(a, ids, what):
    import onnxruntime as ort

    if what != "decode":
        raise Unsupported("the exported graph is the decode step only (past of at least 2 "
                          "tokens); no prefill graph")
    n = ids.shape[1]
    past_k, past_v = torch_past(a, ids[:, :-1])
    so = ort.SessionOptions()
    so.intra_op_num_threads = a.threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(a.onnx, so, providers=["CPUExecutionProvider"])
    feed = {"ids": ids[:, -1:].astype(np.int64), "pos": np.array([[n - 1]], np.int64),
            "past_k": past_k, "past_v": past_v}
    last = {}

    def run():
        last.pop("y", None)
        last["y"] = sess.run(["logits"], feed)[0]
    return run, lambda: last["y"]


class Unsupported(Exception):
    pass


def system_llama(a, ids, what):
    import peers

    if what != "decode":
        raise Unsupported("decode only (the peers have no prefill rows)")
    return peers.system_llama(a, ids)


def system_ct2(a, ids, what):
    import peers

    if what != "decode":
        raise Unsupported("decode only (the peers have no prefill rows)")
    d = peers.Ct2Decode(a, ids)
    return d.run, d.logits, True


SYSTEMS = {"attnc": system_attnc, "torch": system_torch, "ort": system_ort,
           "llama": system_llama, "ct2": system_ct2}


def worker_main(a):
    if a.what == "export":
        t0 = time.perf_counter()
        export_onnx(a)
        return emit({"status": "saved", "seconds": time.perf_counter() - t0})
    ids = prompt_ids(a.context)
    try:
        got = SYSTEMS[a.system](a, ids, a.what)
    except Unsupported as e:
        return emit({"status": "n/a", "detail": f"n/a: {e}"})
    return emit(check_and_time(a, got, lambda: np.load(a.ref)))


def check_and_time(a, got, reference):
    """Checks a system's output against reference() (unless a.save_out,
    which saves it instead), then times it; the result's dict. got: (run,
    output), or (run, output, True) where run() times itself and returns a
    list of seconds (CTranslate2: the decode steps of one generation)."""
    run, output = got[0], got[1]
    self_timed = len(got) > 2 and got[2]
    res = {}
    if not self_timed:
        t0 = time.perf_counter()
        run()
        res["first_ms"] = (time.perf_counter() - t0) * 1e3
    y = np.array(output(), dtype=np.float32)
    if not np.all(np.isfinite(y)):
        return dict(res, status="bad output", detail="non-finite values")
    if a.save_out:
        np.save(a.save_out, y)
        return dict(res, status="saved")
    ref = reference()
    if y.shape != ref.shape:
        return dict(res, status="bad output",
                    detail=f"shape {y.shape}, reference {ref.shape}")
    err = float(np.max(np.abs(y - ref)))
    scale = float(np.max(np.abs(ref)))
    top, ref_top = np.argmax(y, -1), np.argmax(ref, -1)
    # The reference's logit at this system's top-1 token, below its best.
    top_gap = float(np.max(np.take_along_axis(ref, ref_top[..., None], -1)
                           - np.take_along_axis(ref, top[..., None], -1)))
    res.update(maxerr=err, scale=scale, top_gap=top_gap, tol=a.tol,
               argmax_agree=float(np.mean(top == ref_top)))
    if not err <= a.tol * scale:
        return dict(res, status="disagrees",
                    detail=f"max abs err {err:.3g} > {a.tol:g} * {scale:.3g}, not timed")
    if not top_gap <= a.tol * scale:
        return dict(res, status="disagrees",
                    detail=f"top-1 token's reference logit {top_gap:.3g} below the best "
                           f"> {a.tol:g} * {scale:.3g}, not timed")
    times = []
    if self_timed:
        t_end = time.perf_counter() + a.budget
        while len(times) < a.min_reps or (len(times) < a.max_reps and time.perf_counter() < t_end):
            times.extend(run())
        return dict(res, status="ok", ms=statistics.median(times) * 1e3, runs=len(times),
                    min_ms=min(times) * 1e3, max_ms=max(times) * 1e3)
    run()                                   # warm-up
    t_end = time.perf_counter() + a.budget
    while len(times) < a.max_reps and (len(times) < a.min_reps or time.perf_counter() < t_end):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return dict(res, status="ok", ms=statistics.median(times) * 1e3, runs=len(times),
                min_ms=min(times) * 1e3, max_ms=max(times) * 1e3)


def emit(res):
    print("RESULT " + json.dumps(res), flush=True)


# ------------------------------------------------------------------ driver


def run_cmd(cmd, what):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        raise BenchError(f"{what}: cannot run {cmd[0]}: {e.strerror}") from None
    if r.returncode != 0:
        raise BenchError(f"{what} failed ({' '.join(cmd)}):\n{r.stderr.strip() or r.stdout.strip()}")
    return r.stdout


def worker(a, args, script=__file__):
    """Runs `script --worker ARGS` (this file's, or bench/batched.py's) and
    returns its RESULT."""
    cmd = [sys.executable, os.path.abspath(script), "--worker", "--tol", str(a.tol),
           "--min-reps", str(a.min_reps), "--max-reps", str(a.max_reps),
           "--n-positions", str(a.n_positions), "--weights", a.weights, "--lib", a.lib] + args
    r = subprocess.run(cmd, capture_output=True, text=True)
    for line in reversed(r.stdout.splitlines()):
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    err = (r.stderr.strip().splitlines() or ["no output"])[-1]
    return {"status": "error", "detail": f"worker failed (exit {r.returncode}): {err[:300]}"}


def describe(res):
    if res.get("status") != "ok":
        return res.get("detail", res.get("status"))
    err = f"; err {res['maxerr']:.2g} of {res['scale']:.3g}" if "maxerr" in res else ""
    return (f"{res['ms']:.2f} ms (median of {res['runs']}, min {res['min_ms']:.2f}, "
            f"max {res['max_ms']:.2f}{err})")


def reusable(a, lib, source, text):
    """--reuse: `lib` was compiled from `text` (what `source` holds) by this
    attnc: the library is newer than the attnc binary, so one rebuilt since
    compiles it again."""
    return (a.reuse and os.path.exists(lib) and os.path.exists(source)
            and open(source).read() == text
            and os.path.getmtime(lib) >= os.path.getmtime(a.attnc))


def compile_model(a):
    source = os.path.join(a.workdir, "gpt2_decode.attn")
    text = bench_model_text(a.n_positions)
    a.weights = os.path.join(a.workdir, "gpt2_decode.safetensors")
    a.lib = os.path.join(a.workdir, "gpt2_decode.so")
    reuse = os.path.exists(a.weights) and reusable(a, a.lib, source, text)
    with open(source, "w") as f:
        f.write(text)
    run_cmd([a.attnc, source, f"--init-weights={a.weights}", "--seed=1"], "attnc --init-weights")
    if reuse:
        log(f"reusing {a.lib} (--reuse)")
        return 0.0
    log(f"compiling {source}")
    t0 = time.perf_counter()
    run_cmd([a.attnc, source, "-o", a.lib], "attnc")
    secs = time.perf_counter() - t0
    log(f"  {secs:.1f} s, {os.path.getsize(a.lib) / 2**20:.1f} MiB library")
    return secs


def f32_weight_bytes():
    return 4.0 * (LAYERS * LAYER_KN + HEAD_KN)


def systems(a, what="decode"):
    """[(label, system, extra worker args, meta)]; system None: a row that
    says why it was not run (meta["detail"]). meta: "precision" (of the
    weights, for the goal table), "weight_bytes" read per decode step,
    "cache" (the system whose KV-cache bytes apply, peers.cache_bytes)."""
    f32 = {"precision": "f32", "weight_bytes": f32_weight_bytes(), "cache": "attnc"}
    rows = [("attnc", "attnc", [], f32)]
    for kind, v in (a.variants.items() if what == "decode" else ()):
        if isinstance(v, str):
            rows.append((f"attnc {kind}", None, [], {"detail": v}))
            continue
        lib, weights, wbytes, bits, cache = v
        # An f16 cache rounds keys and values: f16's tolerance at least (as
        # llama.cpp's f32 row, whose cache is f16); an i8 one int8's.
        tol = max(peers_tol(bits), peers_tol(CACHE_TOL[cache]))
        rows.append((f"attnc {kind}", "attnc", ["--lib", lib, "--weights", weights],
                     {"precision": {"q4": "Q4_0"}.get(bits, bits), "weight_bytes": wbytes,
                      "cache": "attnc" if cache == "f32" else f"attnc-{cache}", "tol": tol}))
    rows += [(f"PyTorch {impl}", "torch", ["--impl", impl], f32) for impl in a.impl_list]
    if a.onnx:
        rows.append(("ONNX Runtime", "ort", ["--onnx", a.onnx], f32))
    if what != "decode":
        return rows
    for p, path in a.llama_files.items():
        for kv in a.llama_kv_list:
            # q8_0 caches: llama.cpp's 8-bit K and V (V needs flash attention).
            label = f"llama.cpp {p}" + ("" if kv == "f16" else f" {kv} cache")
            if not isinstance(path, str):
                rows.append((label, None, [], {"detail": str(path)}))
                continue
            import peers
            wbytes, _ = peers.gguf_bytes(path)
            flash = a.flash_attn or kv != "f16"
            tol = peers.tol("llama", p) if kv == "f16" else max(peers.tol("llama", p),
                                                               peers_tol("int8"))
            rows.append((label, "llama", ["--model-file", path, "--llama-kv", kv]
                         + (["--flash-attn"] if flash else []),
                         {"precision": peers.PRECISION_OF[p], "weight_bytes": wbytes,
                          "cache": "llama" if kv == "f16" else f"llama-{kv}", "tol": tol}))
    for p, path in a.ct2_dirs.items():
        label = f"CTranslate2 {p}"
        if not isinstance(path, str):
            rows.append((label, None, [], {"detail": str(path)}))
            continue
        import peers
        rows.append((label, "ct2", ["--model-file", path, "--ct2-steps", str(a.ct2_steps)],
                     {"precision": peers.PRECISION_OF[p], "weight_bytes": peers.ct2_bytes(p),
                      "cache": "ct2", "tol": peers.tol("ct2", p)}))
    return rows


# The agreement tolerance an attnc cache of each dtype needs at least.
CACHE_TOL = {"f32": "f32", "f16": "f16", "i8": "int8"}
# attnc's rows by default: at each weight precision the fastest kind, with
# f16 KV caches as llama.cpp keeps its own by default (session 29, 1 thread:
# int8-a8-kv16 and q4-a8-kv16 1.17-1.45x llama.cpp Q8_0 / Q4_0, where the
# weight-only kinds with f32 caches lost at context 1024).
DEFAULT_VARIANTS = ("f32-kv16", "f16-kv16", "int8-a8-kv16", "q4-a8-kv16")
# --variants suffixes: the caches' dtype of KIND-kv16 and KIND-kv8.
CACHE_SUFFIXES = {"-kv16": "f16", "-kv8": "i8"}


def variant_cache(variant):
    """(KIND, the caches' dtype) of a --variants entry."""
    for suffix, cache in CACHE_SUFFIXES.items():
        if variant.endswith(suffix):
            return variant.removesuffix(suffix), cache
    return variant, "f32"


def variant_list(p, variants):
    """The --variants entries, each checked (parser p's error names the
    unknown one)."""
    out = [x for x in variants.split(",") if x]
    for x in out:
        kind, cache = variant_cache(x)
        if (kind not in ("f16", "int8", "q4", "int8-a8", "q4-a8")
                and not (kind == "f32" and cache != "f32")):
            p.error(f"--variants: unknown variant '{x}' (f16, int8, q4, int8-a8, q4-a8, "
                    "each also with -kv16 or -kv8; f32-kv16, f32-kv8)")
    return out


def peers_tol(precision):
    import peers
    return peers.tol("attnc", precision)


# The matrices the f16 variant keeps in f16, as llama.cpp's f16 GGUF does:
# the token table (also the head), the position table and every layer's
# attention and MLP matrices; norms and biases stay f32.
F16_WEIGHTS = r"(wte|wpe|h\.\{i\}\.(attn\.c_(attn|proj)|mlp\.c_(fc|proj)))"
F16_FILE = r"^((wte|wpe)|h\.[0-9]+\.(attn\.c_(attn|proj)|mlp\.c_(fc|proj)))\.weight$"


def f16_model_text(n_positions):
    import re
    text, n = re.subn(r"( +weight " + F16_WEIGHTS + r"\.weight +: )f32", r"\1f16",
                      bench_model_text(n_positions))
    if n != 6:
        raise BenchError(f"models/gpt2.attn: {n} weights rewritten to f16, expected 6")
    return text


def f16_weights(src, dst):
    import re
    import safetensors_io

    w = safetensors_io.load(src)
    w = {k: (v.astype(np.float16) if re.match(F16_FILE, k) else v) for k, v in w.items()}
    safetensors_io.save(dst + ".tmp", w)
    os.replace(dst + ".tmp", dst)


def prepare_variants(a):
    """attnc's f16, int8 and 4-bit models beside the f32 one. int8 and q4:
    bench/quantized.py's (attention and MLP matrices and the token table, so
    the head tied to it, i8 per output channel, or i4 with a scale per group
    of 32 inputs); f16:
    F16_WEIGHTS in f16; "KIND-kv16": KIND's weights with f16 KV caches,
    "KIND-kv8" with i8 ones (a scale per row and head); "int8-a8", "q4-a8"
    (also with -kv16 or -kv8): the same weights compiled with attnc
    --precision=int8 (int8 activations, integer dot products).
    a.variants maps each to (lib, weights, weight bytes per step, KIND, the
    caches' dtype) or to the reason it is not run."""
    a.variants = {}
    for variant in a.variant_list:
        # "-kv16": the same weights with f16 KV caches (llama.cpp's default);
        # "-kv8": with i8 ones.
        kind, cache = variant_cache(variant)
        a8 = kind.endswith("-a8")
        kind = kind.removesuffix("-a8")
        source = os.path.join(a.workdir, f"gpt2_decode_{variant}.attn")
        weights = os.path.join(a.workdir, f"gpt2_decode_{kind}.safetensors")
        lib = os.path.join(a.workdir, f"gpt2_decode_{variant}.so")
        try:
            import quantized                        # bench/quantized.py
            if kind in ("int8", "q4"):
                text = quantized.model_text(a.n_positions, kind, cache)
                run_cmd([a.attnc, "quantize", a.weights, "-o", weights]
                        + quantized.quantize_args(kind), "attnc quantize")
                wbytes = float(quantized.weight_bytes(kind))
            elif kind == "f32":
                text = quantized.model_text(a.n_positions, kind, cache)
                weights = a.weights
                wbytes = f32_weight_bytes()
            else:
                text = with_cache(f16_model_text(a.n_positions), cache)
                f16_weights(a.weights, weights)
                wbytes = f32_weight_bytes() / 2       # every GEMM matrix and the head
            if not reusable(a, lib, source, text):
                with open(source, "w") as f:
                    f.write(text)
                log(f"compiling {source}")
                run_cmd([a.attnc, source, "-o", lib] + (["--precision=int8"] if a8 else []),
                        f"attnc ({variant})")
            a.variants[variant] = (lib, weights, wbytes, kind, cache)
        except BenchError as e:
            a.variants[variant] = f"not run: {e}"


def with_cache(text, cache):
    """The model's KV caches declared `cache` (f32: unchanged)."""
    import re
    if cache == "f32":
        return text
    text, n = re.subn(r"(state past\.\{i\}\.(key|value) +: )f32\[", rf"\1{cache}[", text)
    if n != 2:
        raise BenchError(f"models/gpt2.attn: {n} states rewritten to {cache}, expected 2")
    if cache == "i8":
        import quantized                            # bench/quantized.py
        text, n = re.subn(r"(    state past\.\{i\}\.value : i8\[B, L, 768\]\n)",
                          rf"\1    state past.{{i}}.key_scale : f32[B, L, {quantized.HEADS}]\n"
                          rf"    state past.{{i}}.value_scale : f32[B, L, {quantized.HEADS}]\n",
                          text)
        if n != 1:
            raise BenchError("models/gpt2.attn: the i8 caches' scales not declared")
    return text


def prepare_peers(a):
    """GGUF files and CTranslate2 directories of the bench's weights (kept
    in WORKDIR/peers while the weights are the same); a.llama_files and
    a.ct2_dirs map each precision to a path or to the reason it is missing.
    Returns a line for the header."""
    a.llama_files, a.ct2_dirs = {}, {}
    want = set(a.peer_list)
    if not want:
        return "peers: not run (--peers '')"
    import peers

    have = {m: importlib.util.find_spec(m) is not None for m in ("llama_cpp", "ctranslate2", "gguf")}
    out = os.path.join(a.workdir, "peers")
    try:
        hf, digest = peers.hf_dir(a.weights, a.n_positions, os.path.join(out, "hf"))
    except Exception as e:                      # noqa: BLE001: the table says why
        hf, digest = None, f"the Hugging Face directory failed: {type(e).__name__}: {e}"

    def files(precisions, missing, make):
        """{precision: a model file, or the PeerError its row prints}."""
        if missing:
            return {p: peers.PeerError(f"not run: {missing} not importable "
                                       "(bench/setup.sh installs it)") for p in precisions}
        if hf is None:
            return {p: peers.PeerError(digest) for p in precisions}
        return make()

    if "llama.cpp" in want:
        a.llama_files = files(
            a.llama_precisions,
            " / ".join(m for m in ("llama_cpp", "gguf") if not have[m]),
            lambda: peers.gguf_files(hf, digest, os.path.join(out, "gguf"), a.n_positions,
                                     a.llama_precisions))
    if "ctranslate2" in want:
        a.ct2_dirs = files(a.ct2_precisions, "" if have["ctranslate2"] else "ctranslate2",
                           lambda: peers.ct2_dirs(hf, digest, out, a.ct2_precisions))
    lines = []
    for p, path in a.llama_files.items():
        if isinstance(path, str):
            head, layers = peers.gguf_types(path)
            wb, _ = peers.gguf_bytes(path)
            lines.append(f"llama.cpp {p}: {os.path.relpath(path, a.workdir)} (layer matrices "
                         f"{layers}, token table / head {head}; {wb / 1e6:.0f} MB read per step)")
    for p, path in a.ct2_dirs.items():
        if isinstance(path, str):
            lines.append(f"CTranslate2 {p}: {os.path.relpath(path, a.workdir)} "
                         f"({peers.ct2_bytes(p) / 1e6:.0f} MB read per step)")
    return "\n".join(lines)


def prepare_onnx(a):
    """Exports the decode step once (cached beside the weights); a.onnx, or
    None with the reason logged."""
    a.onnx = None
    if not a.ort:
        return "not run (--no-ort)"
    if importlib.util.find_spec("onnxruntime") is None or importlib.util.find_spec("onnx") is None:
        return "not run: onnxruntime / onnx not importable (bench/setup.sh installs them)"
    path = os.path.join(a.workdir, "onnx", f"gpt2_decode_step_n{a.n_positions}.onnx")
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        log("exporting the decode step to ONNX (torch.onnx.export, dynamo)")
        r = worker(a, ["--what", "export", "--system", "torch", "--threads", "2",
                       "--onnx", path])
        if r.get("status") != "saved":
            return f"export failed: {r.get('detail')}"
        log(f"  {r['seconds']:.1f} s")
    a.onnx = path
    return f"decode-step graph {os.path.relpath(path, a.workdir)}"


def measure(a, what, c):
    """Reference, then every (system, threads): [(label, threads, result)]."""
    tag = f"{what}_C{c}"
    ref = os.path.join(a.workdir, f"ref_{tag}.npy")
    base = ["--what", what, "--context", str(c), "--budget", str(a.budget)]
    log(f"{tag}: reference (PyTorch sdpa, static cache, 2 threads)")
    r = worker(a, base + ["--system", "torch", "--impl", "sdpa", "--threads", "2",
                          "--save-out", ref])
    if r.get("status") != "saved":
        raise BenchError(f"{tag}: the PyTorch reference failed: {r.get('detail')}")
    rows = []
    for t in a.thread_list:
        for label, system, extra, meta in systems(a, what):
            log(f"  {tag} T={t} {label}")
            if system is None:
                res = {"status": "n/a", "detail": meta["detail"]}
            else:
                tol = ["--tol", str(meta["tol"])] if "tol" in meta else []
                res = worker(a, base + ["--system", system, "--threads", str(t), "--ref", ref]
                             + tol + extra)
                import peers
                res.update(precision=meta["precision"], weight_bytes=meta["weight_bytes"],
                           cache_bytes=peers.cache_bytes(meta["cache"], c))
            log(f"    {describe(res)}")
            rows.append((label, t, res))
    return rows


def best_rows(rows):
    """PyTorch's best impl per thread count is marked."""
    best = {}
    for label, t, r in rows:
        if label.startswith("PyTorch") and r.get("status") == "ok":
            if t not in best or r["ms"] < best[t][1]:
                best[t] = (label, r["ms"])
    return best


def table(what, c, rows, peaks, bw=None):
    """bw: the machine's read bandwidth per thread count (GB/s), for the
    decode table's "% of read bw"."""
    fl = decode_flops(c) if what == "decode" else prefill_flops(c)
    ours = {t: r["ms"] for label, t, r in rows if label == "attnc" and r.get("status") == "ok"}
    best = best_rows(rows)
    bw = bw or {}
    if what == "decode":
        head = (f"decode, B=1, context {c} (one token at position {c - 1}): {fl / 1e9:.3f} GFLOP, "
                f"{decode_bytes(c) / 1e6:.0f} MB of f32 weights and KV cache read per token")
        extra_h = " MB read / token | GB/s read | % of read bw |"
        extra_a = " ---: | ---: | ---: |"
    else:
        head = f"prefill, B=1, S={c}: {fl / 1e9:.1f} GFLOP"
        extra_h, extra_a = "", ""
    n_extra = extra_h.count("|")
    out = [head, "",
           "| system | threads | median ms | runs | GFLOP/s | % of peak |" + extra_h
           + " ratio (ms / attnc ms) | max abs err (of max abs) |",
           "| --- | ---: | ---: | ---: | ---: | ---: |" + extra_a + " ---: | --- |"]
    for label, t, r in rows:
        if r.get("status") != "ok":
            detail = str(r.get("detail", r.get("status"))).replace("|", "\\|").replace("\n", " ")
            out.append(f"| {label} | {t} | - | - | - | - |{' - |' * n_extra} - | {detail} |")
            continue
        gf = fl / (r["ms"] * 1e6)
        ratio = f"{r['ms'] / ours[t]:.2f}" if t in ours else "-"
        mark = " (best)" if label.startswith("PyTorch") and best[t][0] == label else ""
        extra = ""
        if what == "decode":
            nbytes = r.get("weight_bytes", f32_weight_bytes()) + r.get(
                "cache_bytes", decode_bytes(c) - f32_weight_bytes())
            gbs = nbytes / (r["ms"] * 1e6)
            pct = f"{100 * gbs / bw[t]:.0f}" if t in bw else "-"
            extra = f" {nbytes / 1e6:.0f} | {gbs:.1f} | {pct} |"
        err = f"{r['maxerr']:.1e} ({r['scale']:.2f}), argmax {100 * r['argmax_agree']:.0f}%"
        if r.get("tol") is not None and r["tol"] != 1e-3:
            err += f", tol {r['tol']:g}"
        out.append(f"| {label}{mark} | {t} | {r['ms']:.2f} | {r['runs']} | {gf:.1f} | "
                   f"{100 * gf / peaks[t]:.1f} |{extra} {ratio} | {err} |")
    if what == "decode":
        out += ["", goal_table(rows)]
    return "\n".join(out) + "\n"


def goal_table(rows):
    """Issue 25's goal: at equal weight precision, attnc's tokens/s at least
    1.2x the fastest peer's (tokens/s = 1000 / ms)."""
    by = {}
    for label, t, r in rows:
        if r.get("status") == "ok" and r.get("precision"):
            by.setdefault((r["precision"], t), []).append((label, r["ms"]))
    out = ["goal (issue 25): attnc tokens/s >= 1.2x the fastest peer's at the same weight "
           "precision", "",
           "| weights | threads | attnc | ms | fastest peer | ms | attnc tokens/s / peer's | "
           "goal 1.2x |", "| --- | ---: | --- | ---: | --- | ---: | ---: | --- |"]
    for (prec, t) in sorted(by, key=lambda k: (k[1], ["f32", "f16", "int8", "Q4_0"].index(k[0])
                                               if k[0] in ("f32", "f16", "int8", "Q4_0") else 9)):
        ours = [(lb, ms) for lb, ms in by[(prec, t)] if lb.startswith("attnc")]
        theirs = [(lb, ms) for lb, ms in by[(prec, t)] if not lb.startswith("attnc")]
        peer = min(theirs, key=lambda x: x[1]) if theirs else None
        if not ours:
            out.append(f"| {prec} | {t} | none (no attnc row at {prec}) | - | {peer[0]} | "
                       f"{peer[1]:.2f} | - | lost (no row) |")
            continue
        o = min(ours, key=lambda x: x[1])     # the fastest attnc row (of its caches)
        if peer is None:
            out.append(f"| {prec} | {t} | {o[0]} | {o[1]:.2f} | none | - | - | - |")
            continue
        x = peer[1] / o[1]
        verdict = "met" if x >= 1.2 else ("faster, below 1.2x" if x >= 1 else "lost")
        out.append(f"| {prec} | {t} | {o[0]} | {o[1]:.2f} | {peer[0]} | {peer[1]:.2f} | "
                   f"{x:.2f} | {verdict} |")
    return "\n".join(out) + "\n"


def fit_table(decode_rows):
    """decode ms = intercept + slope * context, per (system, threads)."""
    series = {}
    for c, rows in decode_rows.items():
        for label, t, r in rows:
            if r.get("status") == "ok":
                series.setdefault((label, t), []).append((c, r["ms"]))
    out = ["decode ms against context C (least squares over the contexts above)", "",
           "| system | threads | intercept ms | slope ms per 1000 tokens | R^2 | contexts |",
           "| --- | ---: | ---: | ---: | ---: | --- |"]
    for (label, t), pts in series.items():
        if len(pts) < 2:
            continue
        x = np.array([p[0] for p in pts], float)
        y = np.array([p[1] for p in pts], float)
        slope, icpt = np.polyfit(x, y, 1)
        pred = icpt + slope * x
        ss_tot = float(np.sum((y - y.mean()) ** 2))
        r2 = 1.0 - float(np.sum((y - pred) ** 2)) / ss_tot if ss_tot > 0 else 1.0
        out.append(f"| {label} | {t} | {icpt:.2f} | {1000 * slope:.3f} | {r2:.4f} | "
                   f"{', '.join(str(int(v)) for v in x)} |")
    return "\n".join(out) + "\n"


def plot_decode(decode_rows, path):
    """decode ms per token against context, one line per (row, threads),
    log-x, to `path` (PNG); the line for the results, which says where the
    picture is or why there is none."""
    try:
        import matplotlib
    except ImportError:
        return f"no picture: matplotlib is not importable by {sys.executable} (bench/setup.sh)"
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    series = {}
    for c, rows in sorted(decode_rows.items()):
        for label, t, r in rows:
            if r.get("status") == "ok":
                series.setdefault((label, t), []).append((c, r["ms"]))
    fig, ax = plt.subplots(figsize=(9, 5.5), dpi=120)
    # One colour per weight precision, one marker per system.
    colors = {"f32": "tab:blue", "f16": "tab:green", "int8": "tab:orange", "Q4_0": "tab:red"}
    markers = {"attnc": "o", "PyTorch": "s", "ONNX": "D", "llama.cpp": "^", "CTranslate2": "v"}
    precision = {label: r.get("precision") for rows in decode_rows.values()
                 for label, _, r in rows}
    for (label, t), pts in series.items():
        ours = label.startswith("attnc")
        ax.plot([p[0] for p in pts], [p[1] for p in pts], linewidth=2.2 if ours else 1.2,
                linestyle="-" if t == 1 else "--", marker=markers.get(label.split()[0], "x"),
                color=colors.get(precision.get(label), "tab:gray"),
                label=f"{label}, {t} thread{'s' if t > 1 else ''}")
    ax.set_xscale("log")
    ax.set_xticks(sorted(decode_rows), [str(c) for c in sorted(decode_rows)])
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.set_xlabel("context (tokens attended over)")
    ax.set_ylabel("decode ms per token (median)")
    ax.set_title("GPT-2 small decode, B = 1 (colour: weight precision; thick: attnc)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return f"picture: {path} (ms per token against context, per row and threads)"


class BestBandwidth:
    """The machine's read bandwidth per thread count (bench/read_bw.c through
    run.measure_bandwidth), the best of every measurement, as run.BestPeak
    keeps the FMA peak."""

    def __init__(self, work, thread_list):
        self.work, self.thread_list, self.gbs = work, thread_list, {}

    def measure(self):
        import run as bench_run
        log("measuring the read bandwidth")
        try:
            now = bench_run.measure_bandwidth(self.work, self.thread_list)
        except bench_run.BenchError as e:
            raise BenchError(str(e)) from None
        for t, g in now.items():
            self.gbs[t] = max(g, self.gbs.get(t, 0.0))
            log(f"  {t} thread(s): {g:.1f} GB/s (best {self.gbs[t]:.1f})")


def header(a, peaks, isa):
    import run as bench_run      # bench/run.py
    vers, cpu, commit = bench_run.machine_facts(("torch", "transformers", "numpy", "onnxruntime",
                                                 "onnx", "llama_cpp_python", "ctranslate2",
                                                 "gguf"))
    lscpu = ""
    try:
        info = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        keep = ("Model name", "CPU family", "Model:", "CPU(s):", "Thread(s) per core",
                "L2 cache", "L3 cache", "Hypervisor vendor")
        lscpu = "; ".join(" ".join(l.split()) for l in info.splitlines()
                          if l.strip().startswith(keep))
    except OSError:
        pass
    return "\n".join([
        f"# Decode results ({datetime.datetime.now():%Y-%m-%d %H:%M})", "",
        f"- machine: {cpu}, {os.cpu_count()} logical CPUs, {platform.platform()}",
        f"- lscpu: {lscpu}",
        f"- repository at {commit}; attnc {a.attnc}",
        f"- measured FP32 FMA peak (bench/fma_peak.c, {isa}; best of the measurements): "
        + ", ".join(f"{t} thread(s) {g:.1f} GFLOP/s" for t, g in sorted(peaks.items())),
        "- " + ", ".join(f"{k} {v}" for k, v in vers.items())
        + "; PyTorch: GPT2LMHeadModel, StaticCache, set_num_threads(T), "
        "set_num_interop_threads(1), inference_mode, eval",
        f"- model: GPT-2 small sizes, n_positions {a.n_positions}, random weights (seed 1)",
        f"- agreement: max |y - y_ref| <= tol * max |y_ref| and the system's top-1 token's "
        f"y_ref within tol * max |y_ref| of the best, y_ref = PyTorch sdpa with a static "
        f"cache at 2 threads; tol {a.tol:g} for f32 weights, per precision for the others "
        "(bench/peers.py TOL: " + ", ".join(f"{k} {v:g}" for k, v in peers_tols().items())
        + "; llama.cpp's f32 row gets f16's: its KV cache is f16)",
        "- llama.cpp: llama_cpp.Llama(n_ctx=C, n_threads=n_threads_batch=T, n_batch=n_ubatch="
        f"512, flash_attn={a.flash_attn}, f16 KV cache (the default); q8_0 cache rows: "
        "type_k = type_v = GGML_TYPE_Q8_0 and flash_attn=True); decode = n_tokens = C-1 "
        "then eval([last id]): the cache rows from C-1 on are removed and row C-1 written again",
        "- CTranslate2: Generator(intra_threads=T, inter_threads=1); no rewindable decode call, "
        f"so the gaps between the step callbacks of a greedy generation of {a.ct2_steps} tokens "
        "after a C-1-id prompt (decode steps at positions C-1 to "
        f"C+{a.ct2_steps - 3}, or the last {a.ct2_steps - 1} positions of {a.n_positions} where "
        "those would pass them), median over all gaps; logits checked: forward_batch over the C ids",
        "- read bw: bench/read_bw.c (T threads sum 1 GiB; best of the measurements): "
        + ", ".join(f"{t} thread(s) {g:.1f} GB/s" for t, g in sorted(a.bw.items())),
        f"- command: {' '.join(sys.argv)}", ""]) + "\n"


def peers_tols():
    import peers
    return peers.TOL


def parse_args():
    p = argparse.ArgumentParser(description="GPT-2-small decode: attnc's KV caches against "
                                            "Hugging Face PyTorch with a static cache.")
    p.add_argument("--contexts", default=",".join(map(str, CONTEXTS)),
                   help="decode contexts (default 128,1024,4096)")
    p.add_argument("--prefills", default=",".join(map(str, PREFILLS)),
                   help="prefill lengths (default 128,1024)")
    p.add_argument("--no-prefill", action="store_true", help="skip the prefill table")
    p.add_argument("--threads", default="1,2", help="thread counts (default 1,2)")
    p.add_argument("--impls", default=",".join(IMPLS),
                   help="Hugging Face attn_implementation values (default sdpa,eager)")
    p.add_argument("--n-positions", type=int, default=0,
                   help="wpe rows and cache bound (default: the largest context, at least 1024)")
    p.add_argument("--budget", type=float, default=5.0,
                   help="seconds of timed runs per system and setting (default 5)")
    p.add_argument("--min-reps", type=int, default=3)
    p.add_argument("--max-reps", type=int, default=100)
    p.add_argument("--tol", type=float, default=1e-3,
                   help="agreement: max abs error relative to the reference's max abs "
                        "(default 1e-3)")
    p.add_argument("--tools", default=os.path.join(REPO, "build"),
                   help="the build with bin/attnc (default build/)")
    p.add_argument("--workdir", default=os.path.join(HERE, "out", "decode"),
                   help="model, weights, library, references, results.md "
                        "(default bench/out/decode)")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--no-ort", dest="ort", action="store_false",
                   help="skip ONNX Runtime (exported decode step with past keys and values)")
    p.add_argument("--peers", default="llama.cpp,ctranslate2",
                   help="decode peers besides PyTorch and ONNX Runtime (default "
                        "llama.cpp,ctranslate2; '' for none)")
    p.add_argument("--llama-precisions", default="f32,f16,Q8_0,Q4_0",
                   help="GGUF weight types for llama.cpp (default f32,f16,Q8_0,Q4_0)")
    p.add_argument("--ct2-precisions", default="float32,int8_float32",
                   help="CTranslate2 quantizations (default float32,int8_float32)")
    p.add_argument("--ct2-steps", type=int, default=34,
                   help="tokens per CTranslate2 generation (its timed decode steps are the "
                        "gaps between them; default 34)")
    p.add_argument("--flash-attn", action="store_true",
                   help="llama.cpp with flash attention (default: without, llama-cpp-python's "
                        "default; with it, its f16 accumulation of V misses the reference by "
                        "0.32 at context 4096)")
    p.add_argument("--variants", default=",".join(DEFAULT_VARIANTS),
                   help="attnc's rows besides f32: f16 (matrices and tables f16), int8 and q4 "
                        "(bench/quantized.py's models), int8-a8 and q4-a8 (those compiled with "
                        "--precision=int8), each with f16 KV caches as "
                        "KIND-kv16 (also f32-kv16), with i8 ones as KIND-kv8 (also f32-kv8) "
                        f"(default {','.join(DEFAULT_VARIANTS)}: each weight precision's "
                        "fastest, with llama.cpp's default f16 caches; '' for none)")
    p.add_argument("--llama-kv", default="f16",
                   help="llama.cpp's KV cache types, a row each: f16 (its default) and q8_0 "
                        "(type_k = type_v = GGML_TYPE_Q8_0, with flash attention, which V "
                        "needs) (default f16)")
    p.add_argument("--reuse", action="store_true",
                   help="reuse WORKDIR's compiled libraries when their source is unchanged "
                        "and attnc is older than them")
    for opt in ("--system", "--impl", "--lib", "--weights", "--ref", "--save-out", "--what",
                "--onnx", "--model-file"):
        p.add_argument(opt, help=argparse.SUPPRESS)
    p.add_argument("--context", type=int, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.worker:
        a.threads = int(a.threads)
        return a
    a.peer_list = [x for x in a.peers.split(",") if x]
    a.variant_list = variant_list(p, a.variants)
    a.llama_kv_list = [x for x in a.llama_kv.split(",") if x]
    for x in a.llama_kv_list:
        if x not in ("f16", "q8_0"):
            p.error(f"--llama-kv: '{x}' is not f16 or q8_0")
    for x in a.peer_list:
        if x not in ("llama.cpp", "ctranslate2"):
            p.error(f"--peers: unknown peer '{x}' (llama.cpp, ctranslate2)")
    import peers
    a.llama_precisions = [x for x in a.llama_precisions.split(",") if x]
    a.ct2_precisions = [x for x in a.ct2_precisions.split(",") if x]
    for x in a.llama_precisions:
        if x not in peers.LLAMA_PRECISIONS:
            p.error(f"--llama-precisions: '{x}' is not one of {','.join(peers.LLAMA_PRECISIONS)}")
    for x in a.ct2_precisions:
        if x not in peers.CT2_PRECISIONS + ("int8",):
            p.error(f"--ct2-precisions: '{x}' is not one of {','.join(peers.CT2_PRECISIONS)}")
    a.thread_list = [int(t) for t in a.threads.split(",")]
    a.impl_list = [i for i in a.impls.split(",") if i]
    a.context_list = [int(c) for c in a.contexts.split(",") if c]
    a.prefill_list = [] if a.no_prefill else [int(s) for s in a.prefills.split(",") if s]
    if min(a.context_list + a.prefill_list) < 2:
        p.error("contexts and prefill lengths must be at least 2")
    if not a.n_positions:
        a.n_positions = max([1024] + a.context_list + a.prefill_list)
    if max(a.context_list + a.prefill_list) > a.n_positions:
        p.error(f"--n-positions {a.n_positions} is less than the longest context")
    a.attnc = os.path.join(a.tools, "bin", "attnc")
    return a


def main():
    a = parse_args()
    if a.worker:
        return worker_main(a)
    if not os.path.exists(a.attnc):
        raise BenchError(f"{a.attnc} missing: build the project first (./scripts/setup.sh), "
                         "or point --tools at a build")
    os.makedirs(a.workdir, exist_ok=True)
    import run as bench_run

    best = bench_run.BestPeak(a.workdir, a.thread_list)
    peaks = best.peaks

    def measure_peak():
        try:
            return best.measure()
        except bench_run.BenchError as e:
            raise BenchError(str(e)) from None

    bw = BestBandwidth(a.workdir, a.thread_list)
    a.bw = bw.gbs

    def measure_machine():
        isa = measure_peak()
        bw.measure()
        return isa

    isa = measure_machine()
    compile_s = compile_model(a)
    onnx_note = prepare_onnx(a)
    prepare_variants(a)
    peers_note = prepare_peers(a)
    results = os.path.join(a.workdir, "results.md")
    text = header(a, peaks, isa) + (f"compile (attnc, weights read at load): "
                                    f"{'reused' if a.reuse and not compile_s else f'{compile_s:.1f} s'}; "
                                    f"library {os.path.getsize(a.lib) / 2**20:.1f} MiB\n"
                                    f"ONNX Runtime: {onnx_note}\n"
                                    + (peers_note + "\n" if peers_note else ""))
    print(text, flush=True)
    with open(results, "w") as f:
        f.write(text + "\n")

    def emit_text(text):
        print(text, flush=True)
        with open(results, "a") as f:
            f.write(text + "\n")

    decode_rows = {}
    for c in sorted(a.context_list):
        measure_machine()
        decode_rows[c] = measure(a, "decode", c)
        emit_text(table("decode", c, decode_rows[c], peaks, a.bw))
    if len(decode_rows) >= 2:
        emit_text(fit_table(decode_rows))
    if decode_rows:
        emit_text(plot_decode(decode_rows, os.path.join(a.workdir, "decode.png")))
    for s in sorted(a.prefill_list):
        measure_peak()
        emit_text(table("prefill", s, measure(a, "prefill", s), peaks))
    measure_machine()
    emit_text("final FP32 FMA peak (best of every measurement, used above from the point it "
              "was reached): " + ", ".join(f"{t} thread(s) {g:.1f} GFLOP/s"
                                            for t, g in sorted(peaks.items()))
              + "; read bandwidth: " + ", ".join(f"{t} thread(s) {g:.1f} GB/s"
                                                 for t, g in sorted(a.bw.items())))
    log(f"results written to {results}")


if __name__ == "__main__":
    try:
        main()
    except BenchError as e:
        print(f"bench/decode.py: error: {e}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
