#!/usr/bin/env python3
"""Whole models (issue 7's cost item): GPT-2 small (models/gpt2.attn, token ids
-> logits) and BERT-base (models/bert_base.attn, token ids -> last hidden
state) compiled by attnc, against PyTorch running the same Hugging Face model
(GPT2LMHeadModel / BertModel without pooler, built from GPT2Config() /
BertConfig(), the real sizes) with the same weights.

  bench/.venv/bin/python bench/models.py                 # both models, 1x128 and 8x128, 1 and 2 threads
  bench/.venv/bin/python bench/models.py --model gpt2 --shape 1x128 --threads 2

Per model: random weights (attnc MODEL --init-weights=W --seed=1), compiled
once (compile time and library size are printed); per shape, Hugging Face's
eager-attention model at 2 threads makes the reference output, and every
system (ours, PyTorch with attn_implementation "eager" and "sdpa") must agree
with it (max |y - y_ref| <= --tol * max |y_ref|) before it is timed. Each
(system, threads) runs in a process of its own (this script, --worker), one
after another. Timing: one warm-up run, then enough runs for --budget seconds,
at least --min-reps and at most --max-reps; the median is reported. Method and
results: docs/performance.md, "Whole models".

Needs the built project (build/bin/attnc; --tools for another build) and
torch + transformers + numpy + the attnc package (bench/setup.sh).
"""

import argparse
import datetime
import importlib.util
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "test", "e2e"))


def check_peers():
    missing = [m for m in ("numpy", "torch", "transformers", "attnc")
               if importlib.util.find_spec(m) is None]
    if missing:
        sys.exit(f"bench/models.py: error: {', '.join(missing)} not importable by "
                 f"{sys.executable}: set up bench/.venv with bench/setup.sh (it pins torch, "
                 "transformers, numpy and installs attnc from python/) and run bench/.venv/bin/python bench/models.py")


check_peers()
import numpy as np  # noqa: E402

D, LAYERS, FFN = 768, 12, 3072
# Sum of K*N over one layer's GEMMs (Q|K|V, attention out, FFN up, FFN down).
LAYER_KN = D * 3 * D + D * D + D * FFN + FFN * D


@dataclass(frozen=True)
class Spec:
    name: str
    model_file: str
    output: str        # our output's name
    vocab: int
    causal: bool
    head_kn: int       # K*N of a GEMM after the layers (GPT-2's LM head), 0 if none


MODELS = {
    "gpt2": Spec("gpt2", "models/gpt2.attn", "logits", 50257, True, D * 50257),
    "bert_base": Spec("bert_base", "models/bert_base.attn", "y", 30522, False, 0),
}
SHAPES = ((1, 128), (8, 128))
IMPLS = ("eager", "sdpa")


class BenchError(Exception):
    pass


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def flops(spec, b, s):
    """Useful flops of one forward pass, one count for every system:
    2 * B*S * (12 * LAYER_KN + head K*N) for the GEMMs (the LM head's
    768 x 50257 for GPT-2; embeddings are gathers, not counted) plus
    4 * B * S * S_eff * 768 per layer for QK^T and PV, S_eff = S, or (S+1)/2
    under GPT-2's causal mask (the masked half is not counted, as in
    blocks.flops). Norms, softmax, GELU and biases are left out."""
    s_eff = (s + 1) / 2 if spec.causal else s
    return 2.0 * b * s * (LAYERS * LAYER_KN + spec.head_kn) + LAYERS * 4.0 * b * s * s_eff * D


def make_inputs(spec, b, s):
    rng = np.random.default_rng([b, s, spec.vocab])
    ins = {"ids": rng.integers(0, spec.vocab, size=(b, s), dtype=np.int32)}
    if spec.name == "bert_base":
        ins["token_type_ids"] = rng.integers(0, 2, size=(b, s), dtype=np.int32)
        ins["lengths"] = np.full((b,), s, dtype=np.int32)     # no padding
    return ins


# ------------------------------------------------------------------ workers
# One (system, threads) per process; the last stdout line is `RESULT {json}`.


def system_ours(a, spec, ins):
    import attnc

    model = attnc.load(a.lib, threads=a.threads)
    b, s = ins["ids"].shape
    y = np.zeros((b, s, spec.vocab if spec.name == "gpt2" else D), np.float32)
    out = {spec.output: y}
    return (lambda: model.run(ins, out=out)), lambda: y


def hf_model(spec, weights_path, impl):
    """The Hugging Face model of the real size in eval mode, holding the
    weights attnc compiled in."""
    import torch
    import safetensors_io

    w = {k: torch.from_numpy(v) for k, v in safetensors_io.load(weights_path).items()}
    if spec.name == "gpt2":
        from transformers import GPT2Config, GPT2LMHeadModel
        config = GPT2Config()
        config._attn_implementation = impl
        model = GPT2LMHeadModel(config)
        target = model.transformer      # the Hub's GPT-2 keys have no `transformer.`
    else:
        from transformers import BertConfig, BertModel
        config = BertConfig()
        config._attn_implementation = impl
        model = BertModel(config, add_pooling_layer=False)
        target = model
    missing, unexpected = target.load_state_dict(w, strict=False)
    if missing or unexpected:
        raise BenchError(f"{spec.name}: weights do not match the HF model: missing {missing[:5]}, "
                         f"unexpected {unexpected[:5]}")
    if spec.name == "gpt2" and model.lm_head.weight.data_ptr() != target.wte.weight.data_ptr():
        raise BenchError("gpt2: lm_head is not tied to wte")
    if model.config._attn_implementation != impl:
        raise BenchError(f"asked for attn_implementation {impl}, got {model.config._attn_implementation}")
    return model.eval()


def system_torch(a, spec, ins):
    import torch

    torch.set_num_interop_threads(1)
    torch.set_num_threads(a.threads)
    model = hf_model(spec, a.weights, a.impl)
    t = {k: torch.from_numpy(v).long() for k, v in ins.items()}
    last = {}
    if spec.name == "gpt2":
        def fwd():
            return model(input_ids=t["ids"], use_cache=False).logits
    else:
        b, s = ins["ids"].shape
        mask = (torch.arange(s)[None, :] < t["lengths"][:, None]).long()

        def fwd():
            return model(input_ids=t["ids"], token_type_ids=t["token_type_ids"],
                         attention_mask=mask).last_hidden_state

    def run():
        with torch.inference_mode():
            last.pop("y", None)      # the previous result is freed first
            last["y"] = fwd()

    return run, lambda: last["y"].numpy()


def worker_main(a):
    spec = MODELS[a.model]
    with np.load(a.inputs) as z:
        ins = {k: np.ascontiguousarray(z[k]) for k in z.files}
    run, output = (system_ours if a.system == "ours" else system_torch)(a, spec, ins)
    res = {}
    t0 = time.perf_counter()
    run()
    res["first_ms"] = (time.perf_counter() - t0) * 1e3
    y = np.asarray(output(), dtype=np.float32)
    if not np.all(np.isfinite(y)):
        return emit(dict(res, status="bad output", detail="non-finite values"))
    if a.save_out:
        np.save(a.save_out, y)
        return emit(dict(res, status="saved"))
    ref = np.load(a.ref)
    if y.shape != ref.shape:
        return emit(dict(res, status="bad output", detail=f"shape {y.shape}, reference {ref.shape}"))
    err = float(np.max(np.abs(y - ref)))
    scale = float(np.max(np.abs(ref)))
    res.update(maxerr=err, scale=scale, meanerr=float(np.mean(np.abs(y - ref))))
    if a.model == "gpt2":
        res["argmax_agree"] = float(np.mean(np.argmax(y, -1) == np.argmax(ref, -1)))
    del y, ref
    if not err <= a.tol * scale:
        return emit(dict(res, status="disagrees",
                         detail=f"max abs err {err:.3g} > {a.tol:g} * {scale:.3g}, not timed"))
    t0 = time.perf_counter()
    run()                                   # warm-up
    warm = time.perf_counter() - t0
    reps = min(a.max_reps, max(a.min_reps, int(a.budget / max(warm, 1e-6))))
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return emit(dict(res, status="ok", ms=statistics.median(times) * 1e3, runs=reps,
                     min_ms=min(times) * 1e3, max_ms=max(times) * 1e3))


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


def worker(a, args):
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--tol", str(a.tol),
           "--budget", str(a.budget), "--min-reps", str(a.min_reps),
           "--max-reps", str(a.max_reps)] + args
    r = subprocess.run(cmd, capture_output=True, text=True)
    for line in reversed(r.stdout.splitlines()):
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    err = (r.stderr.strip().splitlines() or ["no output"])[-1]
    return {"status": "error", "detail": f"worker failed (exit {r.returncode}): {err[:300]}"}


def describe(res):
    if res.get("status") != "ok":
        return res.get("detail", res.get("status"))
    return (f"{res['ms']:.1f} ms (median of {res['runs']}, min {res['min_ms']:.1f}, "
            f"max {res['max_ms']:.1f}; err {res['maxerr']:.2g} of {res['scale']:.3g})")


def compile_model(a, spec):
    weights = os.path.join(a.workdir, f"{spec.name}.safetensors")
    lib = os.path.join(a.workdir, f"{spec.name}.so")
    run_cmd([a.attnc, os.path.join(REPO, spec.model_file), f"--init-weights={weights}",
             "--seed=1"], "attnc --init-weights")
    log(f"compiling {spec.model_file}")
    t0 = time.perf_counter()
    run_cmd([a.attnc, os.path.join(REPO, spec.model_file), "--weights", weights, "-o", lib],
            "attnc")
    secs = time.perf_counter() - t0
    info = {"compile_s": secs, "lib_bytes": os.path.getsize(lib),
            "weights_bytes": os.path.getsize(weights)}
    log(f"  {secs:.1f} s, {info['lib_bytes'] / 2**20:.1f} MiB library "
        f"({info['weights_bytes'] / 2**20:.1f} MiB of weights file)")
    return weights, lib, info


def run_shape(a, spec, weights, lib, b, s, peaks):
    tag = f"{spec.name}_B{b}_S{s}"
    inputs = os.path.join(a.workdir, f"in_{tag}.npz")
    np.savez(inputs, **make_inputs(spec, b, s))
    ref = os.path.join(a.workdir, f"ref_{tag}.npy")
    base = ["--model", spec.name, "--inputs", inputs]
    log(f"{tag}: reference output (Hugging Face, eager attention, 2 threads)")
    r = worker(a, base + ["--system", "torch", "--impl", "eager", "--threads", "2",
                          "--weights", weights, "--save-out", ref])
    if r.get("status") != "saved":
        raise BenchError(f"{tag}: the PyTorch reference failed: {r.get('detail')}")
    rows = []
    for t in a.thread_list:
        log(f"  {tag} T={t} attnc")
        res = worker(a, base + ["--system", "ours", "--threads", str(t), "--lib", lib, "--ref", ref])
        log(f"    {describe(res)}")
        rows.append(("attnc", t, res))
        for impl in a.impl_list:
            log(f"  {tag} T={t} PyTorch {impl}")
            res = worker(a, base + ["--system", "torch", "--impl", impl, "--threads", str(t),
                                    "--weights", weights, "--ref", ref])
            log(f"    {describe(res)}")
            rows.append((f"PyTorch {impl}", t, res))
    return table(spec, b, s, rows, peaks)


def table(spec, b, s, rows, peaks):
    fl = flops(spec, b, s)
    ours = {t: r["ms"] for label, t, r in rows if label == "attnc" and r.get("status") == "ok"}
    torch_best = {}
    for label, t, r in rows:
        if label.startswith("PyTorch") and r.get("status") == "ok":
            if t not in torch_best or r["ms"] < torch_best[t][1]:
                torch_best[t] = (label, r["ms"])
    out = [f"{spec.name} B={b} S={s}: {fl / 1e9:.1f} GFLOP per run", "",
           "| system | B | S | threads | median ms | runs | GFLOP/s | % of peak | "
           "ratio (ms / attnc ms) | max abs err (of max abs) |",
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for label, t, r in rows:
        if r.get("status") != "ok":
            detail = str(r.get("detail", r.get("status"))).replace("|", "\\|")
            out.append(f"| {label} | {b} | {s} | {t} | - | - | - | - | - | {detail} |")
            continue
        gf = fl / (r["ms"] * 1e6)
        ratio = f"{r['ms'] / ours[t]:.2f}" if t in ours else "-"
        best = " (best)" if label.startswith("PyTorch") and torch_best[t][0] == label else ""
        err = f"{r['maxerr']:.1e} ({r['scale']:.2f})"
        if "argmax_agree" in r:
            err += f", argmax {100 * r['argmax_agree']:.1f}%"
        out.append(f"| {label}{best} | {b} | {s} | {t} | {r['ms']:.1f} | {r['runs']} | {gf:.1f} | "
                   f"{100 * gf / peaks[t]:.1f} | {ratio} | {err} |")
    if torch_best:
        tb = min(torch_best, key=lambda t: torch_best[t][1])
        out += ["", f"PyTorch's best: {torch_best[tb][0]} at {tb} thread(s), "
                    f"{torch_best[tb][1]:.1f} ms"
                + (f"; attnc at {tb} thread(s) {ours[tb]:.1f} ms "
                   f"(PyTorch ms / attnc ms = {torch_best[tb][1] / ours[tb]:.2f})" if tb in ours else "")]
    return "\n".join(out) + "\n"


def header(a, peaks, isa):
    import run as bench_run      # bench/run.py
    vers, cpu, commit = bench_run.machine_facts(("torch", "transformers", "numpy"))
    return "\n".join([
        f"# Whole-model results ({datetime.datetime.now():%Y-%m-%d %H:%M})", "",
        f"- machine: {cpu}, {os.cpu_count()} logical CPUs, {platform.platform()}",
        f"- repository at {commit}; attnc {a.attnc}",
        f"- measured FP32 FMA peak at the start (bench/fma_peak.c, {isa}; re-measured "
        "before each shape, the best so far is used): "
        + ", ".join(f"{t} thread(s) {g:.1f} GFLOP/s" for t, g in sorted(peaks.items())),
        "- " + ", ".join(f"{k} {v}" for k, v in vers.items())
        + "; PyTorch: set_num_threads(T), set_num_interop_threads(1), inference_mode, eval",
        f"- agreement: max |y - y_ref| <= {a.tol:g} * max |y_ref|, y_ref = Hugging Face eager "
        "at 2 threads", f"- command: {' '.join(sys.argv)}", ""]) + "\n"


def parse_args():
    p = argparse.ArgumentParser(description="GPT-2 small and BERT-base, attnc against "
                                            "Hugging Face PyTorch.")
    p.add_argument("--model", action="append", choices=sorted(MODELS),
                   help="only this model (repeatable; default: both)")
    p.add_argument("--shape", action="append", metavar="BxS",
                   help="only this shape (repeatable; default 1x128 and 8x128)")
    p.add_argument("--threads", default="1,2", help="thread counts (default 1,2)")
    p.add_argument("--impls", default=",".join(IMPLS),
                   help="Hugging Face attn_implementation values to time (default eager,sdpa)")
    p.add_argument("--budget", type=float, default=20.0,
                   help="seconds of timed runs per system and setting (default 20)")
    p.add_argument("--min-reps", type=int, default=3)
    p.add_argument("--max-reps", type=int, default=10)
    p.add_argument("--tol", type=float, default=1e-3,
                   help="agreement: max abs error relative to the reference's max abs (default 1e-3)")
    p.add_argument("--tools", default=os.path.join(REPO, "build"),
                   help="the build with bin/attnc (default build/)")
    p.add_argument("--workdir", default=os.path.join(HERE, "out", "models"),
                   help="weights, libraries, inputs, references, results.md "
                        "(default bench/out/models)")
    # Worker mode (started by the driver).
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    for opt in ("--system", "--impl", "--inputs", "--lib", "--weights", "--ref", "--save-out"):
        p.add_argument(opt, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.worker:
        a.threads = int(a.threads)
        a.model = a.model[0]
        return a
    a.models = a.model or list(MODELS)
    a.thread_list = [int(t) for t in a.threads.split(",")]
    a.impl_list = [i for i in a.impls.split(",") if i]
    a.shapes = []
    for text in a.shape or [f"{b}x{s}" for b, s in SHAPES]:
        m = re.fullmatch(r"(\d+)x(\d+)", text)
        if not m:
            p.error(f"--shape wants BxS, e.g. 1x128, got '{text}'")
        a.shapes.append((int(m.group(1)), int(m.group(2))))
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
    import run as bench_run      # bench/run.py: the FMA peak, compiled and measured the same way

    best = bench_run.BestPeak(a.workdir, a.thread_list)
    peaks = best.peaks

    def measure_peak():
        try:
            return best.measure()
        except bench_run.BenchError as e:
            raise BenchError(str(e)) from None

    isa = measure_peak()
    results = os.path.join(a.workdir, "results.md")
    text = header(a, peaks, isa)
    print(text, flush=True)
    with open(results, "w") as f:
        f.write(text)
    for name in a.models:
        spec = MODELS[name]
        weights, lib, info = compile_model(a, spec)
        text = (f"## {name}\n\ncompile: {info['compile_s']:.1f} s; library "
                f"{info['lib_bytes'] / 2**20:.1f} MiB; weights file "
                f"{info['weights_bytes'] / 2**20:.1f} MiB\n")
        print(text, flush=True)
        with open(results, "a") as f:
            f.write(text + "\n")
        for b, s in a.shapes:
            measure_peak()
            text = run_shape(a, spec, weights, lib, b, s, peaks)
            print(text, flush=True)
            with open(results, "a") as f:
                f.write(text + "\n")
    measure_peak()
    text = ("final FP32 FMA peak (best of every measurement, used above from the point it "
            "was reached): " + ", ".join(f"{t} thread(s) {g:.1f} GFLOP/s"
                                          for t, g in sorted(peaks.items())) + "\n")
    print(text, flush=True)
    with open(results, "a") as f:
        f.write(text)
    log(f"results written to {results}")


if __name__ == "__main__":
    try:
        main()
    except BenchError as e:
        print(f"bench/models.py: error: {e}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
