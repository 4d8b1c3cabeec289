#!/usr/bin/env python3
"""attnc --precision=bf16 against attnc f32, PyTorch (f32, and autocast
bf16) and, where openvino is installed, OpenVINO (f32, and bf16: its CPU
plugin's default on AMX and AVX512_BF16 CPUs) on bench/blocks.py's BERT
layer and GPT-2 block: prefill ms, GFLOP/s, the fraction of one core's f32
FMA and bf16 peaks measured on the spot (bench/bf16_peak.c: AMX's tile
multiply where the CPU has it, else vdpbf16ps) times the threads, and each
bf16 output's error against its own system's f32 output. See
docs/performance.md.

    PYTHONPATH=DIR_WITH_attnc python bench/precision.py [--block bert] \\
        [--shape 1x128] [--threads 1] [--reps 30]

Runs with any Python that has numpy, torch and the attnc package (e.g.
/tmp/golden-venv with PYTHONPATH holding an `attnc` link to a build's
package). The systems run in turns, one run each per round, in one process,
so that a shared machine's load falls on all of them alike; medians are
reported, of wall time and of the process's CPU time (getrusage), which
a loaded machine's waits for a core do not inflate; GFLOP/s and the peak
fractions are of the CPU time at 1 thread, of the wall time otherwise.
Weights: attnc --init-weights --seed=1, as bench/run.py.
"""

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "test", "e2e"))

import numpy as np  # noqa: E402

import attnc  # noqa: E402
import blocks  # noqa: E402
import safetensors_io as st  # noqa: E402


def peaks(work):
    """One core's bf16 and f32 FMA GFLOP/s (bench/bf16_peak.c, compiled here
    with -march=native): the bf16 ceiling is AMX's tile multiply where the
    CPU has it (attnc's prefill GEMMs and oneDNN's run on it there), else
    AVX512_BF16's dot product. Returns (bf16, f32, name of the bf16 one)."""
    exe = os.path.join(work, "bf16_peak")
    subprocess.run(["cc", "-O2", "-march=native", os.path.join(HERE, "bf16_peak.c"),
                    "-o", exe], check=True)
    out = subprocess.run([exe], check=True, capture_output=True, text=True).stdout
    f32 = float(re.search(r"f32_gflops=([\d.]+)", out).group(1))
    amx = re.search(r"amx_gflops=([\d.]+)", out)
    if amx and float(amx.group(1)) > 0:
        return float(amx.group(1)), f32, "AMX tdpbf16ps"
    return float(re.search(r"bf16_gflops=([\d.]+)", out).group(1)), f32, "vdpbf16ps"


def openvino_runner(block, weights, b, s, precision, threads, work):
    """OpenVINO's CPU plugin on the block exported to ONNX (bench/export_onnx.py),
    inference precision `precision` ("f32" or "bf16", its default on AMX and
    AVX512_BF16 CPUs), checked to have taken; None without openvino."""
    try:
        import openvino as ov
    except ImportError:
        return None
    onnx = os.path.join(work, f"{block.name}_{b}x{s}.onnx")
    if not os.path.exists(onnx):
        subprocess.run([sys.executable, os.path.join(HERE, "export_onnx.py"), "--block",
                        block.name, "--weights", weights, "--b", str(b), "--s", str(s),
                        "--out", onnx], check=True)
    compiled = ov.Core().compile_model(onnx, "CPU", {
        "INFERENCE_NUM_THREADS": threads, "INFERENCE_PRECISION_HINT": precision,
        "PERFORMANCE_HINT": "LATENCY"})
    took = str(compiled.get_property("INFERENCE_PRECISION_HINT"))
    if precision[-2:] not in took:
        raise RuntimeError(f"OpenVINO ignored the {precision} precision hint (got {took})")
    req = compiled.create_infer_request()
    return lambda x: (req.infer({0: x}), req.get_output_tensor(0).data.copy())[1]


def errors(got, ref):
    """max |got - ref| / max |ref| and rms(got - ref) / rms(ref)."""
    d = got.astype(np.float64) - ref
    return (float(np.abs(d).max() / np.abs(ref).max()),
            float(np.sqrt((d ** 2).mean() / (ref ** 2).mean())))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--block", action="append", choices=sorted(blocks.BLOCKS))
    p.add_argument("--shape", action="append", metavar="BxS")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--reps", type=int, default=30)
    p.add_argument("--attnc", default=os.path.join(REPO, "build", "bin", "attnc"))
    a = p.parse_args()
    os.environ["ATTNC"] = a.attnc
    import torch
    torch.set_num_threads(a.threads)
    work = tempfile.mkdtemp(prefix="attnc-precision-")
    bf16, fma, bf16_unit = peaks(work)
    bf16, fma = a.threads * bf16, a.threads * fma
    print(f"threads={a.threads}; peaks (bench/bf16_peak.c, one core's x {a.threads}): "
          f"f32 FMA {fma:.0f} GFLOP/s, bf16 {bf16_unit} {bf16:.0f} GFLOP/s; "
          f"load {os.getloadavg()[0]:.1f}")
    shapes = [tuple(int(v) for v in s.split("x")) for s in a.shape or ["1x128", "8x128", "1x512"]]
    rng = np.random.default_rng(0)
    print("| block | BxS | system | ms (median) | CPU ms | GFLOP/s | % f32 peak | % bf16 peak "
          "| over attnc f32 | max err / max | rms err / rms |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name in a.block or ["bert", "gpt2"]:
        block = blocks.BLOCKS[name]
        model = os.path.join(REPO, block.model_file)
        weights = os.path.join(work, f"{name}.safetensors")
        subprocess.run([a.attnc, model, f"--init-weights={weights}", "--seed=1"], check=True)
        libs = {prec: attnc.compile(model, os.path.join(work, f"{name}-{prec}.so"),
                                    precision=prec) for prec in ("f32", "bf16")}
        ours = {prec: attnc.load(lib, weights=weights, threads=a.threads)
                for prec, lib in libs.items()}
        mod = blocks.torch_module(block, st.load(weights))
        for b, s in shapes:
            x = rng.standard_normal((b, s, blocks.D)).astype(np.float32)
            xt = torch.from_numpy(x)

            def torch_run(dtype):
                with torch.inference_mode(), torch.autocast("cpu", torch.bfloat16,
                                                            enabled=dtype == "bf16"):
                    return mod(xt).float().numpy()

            systems = {"attnc f32": lambda: ours["f32"](x=x),
                       "attnc bf16": lambda: ours["bf16"](x=x),
                       "PyTorch f32": lambda: torch_run("f32"),
                       "PyTorch bf16 (autocast)": lambda: torch_run("bf16")}
            for prec in ("f32", "bf16"):
                run = openvino_runner(block, weights, b, s, prec, a.threads, work)
                if run:
                    systems[f"OpenVINO {prec}"] = lambda run=run: run(x)
            outs = {k: f() for k, f in systems.items()}      # warm-up and outputs
            outs = {k: (next(iter(v.values())) if isinstance(v, dict) else v)
                    for k, v in outs.items()}
            ref = {"attnc": outs["attnc f32"].astype(np.float64),
                   "PyTorch": outs["PyTorch f32"].astype(np.float64),
                   "OpenVINO": outs.get("OpenVINO f32", outs["PyTorch f32"]).astype(np.float64)}
            times = {k: [] for k in systems}
            cpu = {k: [] for k in systems}
            for _ in range(a.reps):
                for k, f in systems.items():
                    c0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
                    f()
                    t1, c1 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
                    times[k].append(t1 - t0)
                    cpu[k].append(c1.ru_utime - c0.ru_utime + c1.ru_stime - c0.ru_stime)
            use = cpu if a.threads == 1 else times
            base = statistics.median(use["attnc f32"])
            flop = blocks.flops(block, b, s)
            for k in systems:
                ms, cms = statistics.median(times[k]), statistics.median(cpu[k])
                gf = flop / statistics.median(use[k]) / 1e9
                mx, rms = errors(outs[k], ref[k.split()[0]])
                err = f"{mx:.1e} | {rms:.1e}" if "bf16" in k else "— | —"
                print(f"| {name} | {b}x{s} | {k} | {ms * 1e3:.2f} | {cms * 1e3:.2f} | "
                      f"{gf:.0f} | {100 * gf / fma:.0f}% | {100 * gf / bf16:.0f}% | "
                      f"{statistics.median(use[k]) / base:.2f} | {err} |", flush=True)
    print(f"load after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
