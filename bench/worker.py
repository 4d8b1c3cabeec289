#!/usr/bin/env python3
"""Times one system on one input at one thread setting, in a process of its own
(so thread pools never mix and memory is measured cleanly). run.py starts it;
its last stdout line is `RESULT {json}`.

Systems:
  ours     a library built by attnc, through the attnc Python package; --lib
  torch    the block as a PyTorch module (blocks.torch_module); --weights,
           --interop default|1 (torch.set_num_interop_threads(1) or not)
  ort      ONNX Runtime, CPU execution provider; --onnx
  openvino OpenVINO, CPU plugin, f32 precision forced; --onnx

What one worker does, in order:
  1. load the system and the input x (our output y is allocated and touched
     first: a caller-provided buffer is not the run's memory);
  2. first run, timed; agreement: max |y - y_ref| against our hand schedule's
     output (--ref); over --tol: report it and stop (no timing);
  3. if the first run took longer than --single-above seconds: it is the
     timing (one run, no warm-up), its memory is measured around that first run
     (so it also counts paging in code and weights), and we stop;
  4. one warm-up run; then the two memory figures, each "peak extra resident
     memory of one run" = VmHWM after it - VmRSS before it, with the peak
     reset just before (echo 5 > /proc/self/clear_refs):
       extra      the first run of a second, fresh instance (a second
                  attn_model_load / InferenceSession / OpenVINO compile; torch
                  modules keep no workspace), after malloc_trim(0) returned the
                  heap's free memory to the system. Code and weights are
                  resident by then, so this is the memory the computation
                  needs: workspaces a system allocates once and keeps (our
                  temporaries, ORT's arena) count, as do peers' outputs, which
                  they allocate per run;
       extra_warm one more run of the warm instance: only memory newly
                  touched in steady state (0 for anything that keeps or
                  caches its workspace), the figure the issue asked for;
  5. repetitions: enough to fill --min-time seconds at the warm run's
     speed, within [--min-reps, --max-reps] (or exactly --reps); the
     median is reported. With --turns, run.py decides instead: the worker
     prints `READY <warm run's seconds>` and, for each line `RUN n` on
     stdin, runs n times and prints `TIMES` and their seconds, until
     `DONE`; so the systems of a table take turns and share the machine's
     noise (bench/run.py, time_in_turns).
"""

import argparse
import ctypes
import gc
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "test", "e2e"))

import numpy as np  # noqa: E402

MIB = 1024 * 1024


def proc_status_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {field}")


def reset_peak_rss():
    # "5" resets VmHWM to the current RSS (Linux >= 4.0).
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def measured(run):
    """Runs `run` once; returns (seconds, peak extra resident bytes)."""
    gc.collect()
    reset_peak_rss()
    before = proc_status_kib("VmRSS")
    t0 = time.perf_counter()
    run()
    secs = time.perf_counter() - t0
    extra = max(0, proc_status_kib("VmHWM") - before) * 1024
    return secs, extra


# ------------------------------------------------------------------ systems
# Each returns (run, output, fresh): run() runs once; output() gives the last
# result as a float32 numpy array; fresh() makes a second instance sharing the
# loaded code and weights and returns its run().


def ours(a, x):
    import attnc

    def instance():
        # The same path is dlopened once: instances share kernels and weights
        # and each owns its temporaries.
        model = attnc.load(a.lib, threads=a.threads)
        y = np.empty_like(x)
        y.fill(0.0)
        ins, out = {"x": x}, {"y": y}     # x read in place, y written in place
        return (lambda: model.run(ins, out=out)), y

    run, y = instance()
    return run, lambda: y, lambda: instance()[0]


def torch_system(a, x):
    import torch

    # The interop pool must be sized before any parallel work starts.
    if a.interop == "1":
        torch.set_num_interop_threads(1)
    torch.set_num_threads(a.threads)
    import blocks
    import safetensors_io

    mod = blocks.torch_module(blocks.BLOCKS[a.block], safetensors_io.load(a.weights))
    xt = torch.from_numpy(x)
    last = {}

    def run():
        # inference_mode: TransformerEncoderLayer takes its fast path here.
        with torch.inference_mode():
            last.pop("y", None)      # the previous result is freed first
            last["y"] = mod(xt)

    return run, lambda: last["y"].numpy(), lambda: run


def ort_system(a, x):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = a.threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    last = {}

    def instance():
        sess = ort.InferenceSession(a.onnx, so, providers=["CPUExecutionProvider"])
        name = sess.get_inputs()[0].name

        def run():
            last.pop("y", None)
            last["y"] = sess.run(None, {name: x})[0]
        return run

    return instance(), lambda: last["y"], instance


def openvino_system(a, x):
    import openvino as ov

    core = ov.Core()
    config = {
        "INFERENCE_NUM_THREADS": a.threads,
        # f32 forced: on AMX/AVX512-BF16 machines the CPU plugin's default
        # inference precision is bf16, which would not be an fp32 comparison.
        "INFERENCE_PRECISION_HINT": "f32",
        "PERFORMANCE_HINT": "LATENCY",
    }

    def instance():
        # A fresh instance is a fresh compile: infer requests of one compiled
        # model share its intermediate buffers.
        compiled = core.compile_model(a.onnx, "CPU", config)
        precision = str(compiled.get_property("INFERENCE_PRECISION_HINT"))
        if "32" not in precision:
            raise RuntimeError(f"OpenVINO ignored the f32 precision hint (got {precision})")
        req = compiled.create_infer_request()
        return req, lambda: req.infer({0: x})

    req, run = instance()
    return run, lambda: req.get_output_tensor(0).data, lambda: instance()[1]


SYSTEMS = {"ours": ours, "torch": torch_system, "ort": ort_system, "openvino": openvino_system}


# ------------------------------------------------------------------ main


def main():
    p = argparse.ArgumentParser(description="time one system (started by bench/run.py)")
    p.add_argument("--system", required=True, choices=sorted(SYSTEMS))
    p.add_argument("--block", required=True)
    p.add_argument("--x", required=True, help="input .npy, [B, S, 768] float32")
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--lib"), p.add_argument("--weights"), p.add_argument("--onnx")
    p.add_argument("--interop", choices=("default", "1"), default="default")
    p.add_argument("--ref", help="our hand schedule's output .npy to agree with")
    p.add_argument("--save-out", help="write the output here and stop (makes --ref)")
    p.add_argument("--tol", type=float, default=1e-3)
    p.add_argument("--single-above", type=float, default=10.0)
    p.add_argument("--min-time", type=float, default=3.0)
    p.add_argument("--min-reps", type=int, default=5)
    p.add_argument("--max-reps", type=int, default=50)
    p.add_argument("--reps", type=int, default=0)
    p.add_argument("--turns", action="store_true",
                   help="after the warm-up, time runs when told on stdin (run.py's turns)")
    a = p.parse_args()

    x = np.load(a.x)
    run, output, fresh = SYSTEMS[a.system](a, x)
    res = {}
    first, first_extra = measured(run)
    res["first_ms"] = first * 1e3
    y = np.asarray(output(), dtype=np.float32)
    if y.shape != x.shape or not np.all(np.isfinite(y)):
        res.update(status="bad output", detail=f"shape {y.shape}, finite {np.all(np.isfinite(y))}")
        return emit(res)
    if a.save_out:
        np.save(a.save_out, y)
        return emit(dict(res, status="saved"))
    if a.ref:
        diff = float(np.max(np.abs(y - np.load(a.ref))))
        res["maxdiff"] = diff
        if not diff <= a.tol:
            res.update(status="disagrees", detail=f"disagrees: max abs diff to ours {diff:.3g} > {a.tol:g}, not timed")
            return emit(res)
    del y

    if first > a.single_above:
        return emit(dict(res, status="ok", ms=first * 1e3, runs=1, single=True,
                         extra=first_extra))
    run()                                   # warm-up
    run2 = fresh()
    malloc_trim()
    _, res["extra"] = measured(run2)
    del run2
    warm, res["extra_warm"] = measured(run)
    if a.turns:
        times = serve_turns(run, warm)
    else:
        reps = a.reps or min(a.max_reps, max(a.min_reps, int(a.min_time / max(warm, 1e-6))))
        times = timed_runs(run, reps)
    if not times:
        return emit(dict(res, status="error", detail="no timed run (run.py stopped early)"))
    return emit(dict(res, status="ok", ms=statistics.median(times) * 1e3, runs=len(times),
                     min_ms=min(times) * 1e3, single=False))


def timed_runs(run, n):
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return times


def serve_turns(run, warm):
    """The --turns protocol (see the module's docstring); returns every
    timed run's seconds."""
    print(f"READY {warm:.6f}", flush=True)
    times = []
    for line in sys.stdin:
        words = line.split()
        if not words or words[0] != "RUN":
            break
        turn = timed_runs(run, int(words[1]))
        times += turn
        print("TIMES " + " ".join(f"{t:.6f}" for t in turn), flush=True)
    return times


def malloc_trim():
    """Returns glibc's free heap memory to the system, so memory a run takes
    from the heap is counted again rather than hidden by an earlier run."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def emit(res):
    print("RESULT " + json.dumps(res), flush=True)


if __name__ == "__main__":
    main()
