#!/usr/bin/env python3
"""The benchmark (issue 3): our compiled blocks against the peers a user would
pick, on the same inputs and weights. Run it with bench/run.sh; method and
settings: docs/performance.md.

For each block (BERT-base layer, GPT-2 block), shape (B, S) and thread count T
it prints a markdown table with one row per system: median ms, GFLOP/s (one
flop count for all, blocks.flops), % of the FP32 FMA peak measured at the start
for T threads, the ratio system ms / our hand ms, and the peak extra resident
memory of a run. Every system's output is checked against our hand schedule's
before it is timed. Tables also go to WORKDIR/results.md (default bench/out/).

Every (system, T) runs in its own process (worker.py); the systems of one
table are timed in turns (time_in_turns), so they meet the same load.
"""

import argparse
import datetime
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import platform
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import blocks  # noqa: E402

ATTNC = os.path.join(REPO, "build", "bin", "attnc")   # --attnc overrides
MIB = 1024 * 1024
SCHEDULES = ("hand", "naive", "auto")
# Row order and names of the systems; "torch" is the best of two workers.
SYSTEMS = ("hand", "naive", "auto", "torch", "ort", "openvino")
LABELS = {"hand": "attnc hand", "naive": "attnc naive", "auto": "attnc auto",
          "torch": "PyTorch", "ort": "ONNX Runtime", "openvino": "OpenVINO"}


class BenchError(Exception):
    pass


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def parse_args():
    p = argparse.ArgumentParser(
        description="Benchmark attnc's blocks against PyTorch, ONNX Runtime and OpenVINO.",
        epilog="Default: the full table of issue 3 (both blocks, all shapes, 1 and 2 threads).")
    p.add_argument("--block", action="append", choices=sorted(blocks.BLOCKS),
                   help="only this block (repeatable; default: both)")
    p.add_argument("--shape", action="append", metavar="BxS",
                   help="only this shape, e.g. 1x128 (repeatable; default: the block's list)")
    p.add_argument("--threads", help="thread counts, comma-separated (default 1,2)")
    p.add_argument("--systems", default=",".join(SYSTEMS),
                   help=f"systems to run (default {','.join(SYSTEMS)}); hand always runs")
    p.add_argument("--quick", action="store_true",
                   help="smoke run: shape 1x128, 1 thread, short timing (explicit "
                        "--shape/--threads still apply)")
    p.add_argument("--reps", type=int, default=0,
                   help="timed runs per system (default: enough for --min-time, 5..50)")
    p.add_argument("--min-time", type=float, default=3.0,
                   help="seconds of timed runs per system and setting (default 3)")
    p.add_argument("--single-above", type=float, default=10.0,
                   help="a system whose first run takes longer is timed by that run "
                        "alone, with no warm-up (default 10 s)")
    p.add_argument("--tol", type=float, default=1e-3,
                   help="agreement tolerance, max abs difference to our output (default 1e-3)")
    p.add_argument("--timeout", type=float, default=3600,
                   help="seconds one worker may take (default 3600)")
    p.add_argument("--attnc", default=ATTNC,
                   help="the attnc to compile with (default build/bin/attnc)")
    p.add_argument("--workdir", default=os.path.join(HERE, "out"),
                   help="models, weights, inputs, ONNX files, results.md (default bench/out)")
    a = p.parse_args()
    a.blocks = a.block or sorted(blocks.BLOCKS)
    try:
        a.thread_list = [int(t) for t in (a.threads or "1,2").split(",")]
    except ValueError:
        p.error(f"--threads wants counts like 1,2, got '{a.threads}'")
    if not a.thread_list or min(a.thread_list) < 1:
        p.error("--threads wants counts >= 1")
    a.system_list = [s for s in SYSTEMS if s in a.systems.split(",") or s == "hand"]
    unknown = set(a.systems.split(",")) - set(SYSTEMS)
    if unknown:
        p.error(f"unknown system(s) {sorted(unknown)}; known: {','.join(SYSTEMS)}")
    if a.quick:
        a.shape = a.shape or ["1x128"]
        if a.threads is None:
            a.thread_list = [1]
        a.min_time, a.min_reps, a.max_reps = 0.3, 3, 10
    else:
        a.min_reps, a.max_reps = 5, 50
    shapes = []
    for text in a.shape or []:
        m = re.fullmatch(r"(\d+)x(\d+)", text)
        if not m:
            p.error(f"--shape wants BxS, e.g. 1x128, got '{text}'")
        shapes.append((int(m.group(1)), int(m.group(2))))
    a.shapes = shapes
    return a


# ------------------------------------------------------------------ set-up


def run_cmd(cmd, what, timeout=None):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except OSError as e:
        raise BenchError(f"{what}: cannot run {cmd[0]}: {e.strerror} (being rebuilt? "
                         "build the project first: ./scripts/setup.sh)") from None
    except subprocess.TimeoutExpired:
        raise BenchError(f"{what} took more than {timeout} s ({' '.join(cmd)})") from None
    if r.returncode != 0:
        raise BenchError(f"{what} failed ({' '.join(cmd)}):\n{r.stderr.strip() or r.stdout.strip()}")
    return r.stdout


def run_probe(work, name, opt, thread_list):
    """Compiles bench/NAME.c and runs it for each thread count; returns its
    lines as dicts of their `key=value` fields."""
    cc = shutil.which("cc")
    if not cc:
        raise BenchError(f"no C compiler 'cc' for bench/{name}.c: apt-get install gcc")
    exe = os.path.join(work, name)
    run_cmd([cc, opt, "-march=native", "-pthread", os.path.join(HERE, f"{name}.c"),
             "-o", exe], f"compiling bench/{name}.c")
    out = run_cmd([exe] + [str(t) for t in thread_list], f"bench/{name}")
    return [dict(kv.split("=") for kv in line.split()) for line in out.splitlines()]


def measure_peak(work, thread_list):
    """Compiles and runs fma_peak.c; returns {threads: GFLOP/s} and its ISA."""
    peaks, isa = {}, "?"
    for f in run_probe(work, "fma_peak", "-O2", thread_list):
        peaks[int(f["threads"])] = float(f["gflops"])
        isa = f"{f['isa']}, {f['acc']} accumulators"
    return peaks, isa


def measure_bandwidth(work, thread_list):
    """Compiles and runs read_bw.c; returns {threads: GB/s read}."""
    return {int(f["threads"]): float(f["gbs"])
            for f in run_probe(work, "read_bw", "-O3", thread_list)}


class BestPeak:
    """The FP32 FMA peak per thread count, the best of every measurement: on a
    shared machine one measurement can catch a neighbour's load, so the whole-
    model and decode benchmarks measure again before each shape. `peaks` maps
    threads to GFLOP/s and fills in as measure() runs."""

    def __init__(self, work, thread_list):
        self.work, self.thread_list, self.peaks = work, thread_list, {}

    def measure(self):
        """Measures once more, keeps the best per thread count; returns the ISA."""
        log("measuring the FP32 FMA peak")
        now, isa = measure_peak(self.work, self.thread_list)
        for t, g in now.items():
            self.peaks[t] = max(g, self.peaks.get(t, 0.0))
        return isa


def attnc_schedules():
    """The --schedule values this attnc accepts (per its --help)."""
    text = run_cmd([ATTNC, "--help"], "attnc --help")
    return {s for s in SCHEDULES if re.search(rf"=\s*{s}\b", text)}


def prepare_block(block, work, system_list, accepted):
    """Writes the model with the bench's sequence bound, its weights (seeded,
    same every run), and compiles our libraries. Returns (weights path, hash,
    {schedule: lib path or 'n/a (...)' text})."""
    with open(os.path.join(REPO, block.model_file)) as f:
        text = f.read()
    text, n = re.subn(r"dim B, S <= \d+", f"dim B, S <= {block.s_max}", text)
    if n != 1:
        raise BenchError(f"{block.model_file}: no 'dim B, S <= N' line to raise the bound in")
    model = os.path.join(work, f"{block.name}.attn")
    with open(model, "w") as f:
        f.write(text)
    weights = os.path.join(work, f"{block.name}.safetensors")
    run_cmd([ATTNC, model, f"--init-weights={weights}", "--seed=1"], "attnc --init-weights")
    with open(weights, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:12]
    libs = {}
    for sched in SCHEDULES:
        if sched not in system_list:
            continue
        if sched not in accepted:
            libs[sched] = f"n/a (attnc has no --schedule={sched})"
            continue
        lib = os.path.join(work, f"{block.name}_{sched}.so")
        log(f"compiling {block.name} --schedule={sched}")
        t0 = time.time()
        try:
            run_cmd([ATTNC, model, "--weights", weights, f"--schedule={sched}", "-o", lib],
                    f"attnc --schedule={sched}")
            libs[sched] = lib
            log(f"  {time.time() - t0:.1f} s")
        except BenchError as e:
            if sched == "hand":
                raise BenchError(f"{block.name}: our hand schedule does not compile, nothing "
                                 f"to compare with:\n{e}") from None
            msg = next((l for l in str(e).splitlines()[1:] if "error" in l), str(e).splitlines()[-1])
            libs[sched] = f"n/a (attnc --schedule={sched} failed: {msg.strip()[:160]})"
            log(f"  {libs[sched]}")
    return weights, digest, libs


def export_onnx(block, weights, digest, b, s, work):
    """One ONNX file per (block, weights, shape, torch version), cached."""
    tv = importlib.metadata.version("torch")
    path = os.path.join(work, "onnx", f"{block.name}_B{b}_S{s}_{digest}_torch{tv}.onnx")
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        log(f"exporting {block.name} {b}x{s} to ONNX")
        run_cmd([sys.executable, os.path.join(HERE, "export_onnx.py"), "--block", block.name,
                 "--weights", weights, "--b", str(b), "--s", str(s), "--out", path],
                "ONNX export", timeout=1800)
    return path


# ------------------------------------------------------------------ workers


# A turn: about this many seconds of one system's runs, then a pause that
# lets its thread pool go idle before the next system's turn (Intel
# OpenMP's workers spin for KMP_BLOCKTIME, 200 ms by default, after a
# parallel region).
TURN_SECONDS = 0.3
PAUSE_SECONDS = 0.25


class Worker:
    """A worker.py process (`args` its arguments): its RESULT, or with
    --turns, told when to run first (time_in_turns)."""

    def __init__(self, a, args):
        cmd = [sys.executable, os.path.join(HERE, "worker.py")] + args
        self.timeout = a.timeout
        self.err = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.err, text=True)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.runs, self.seconds = 0, 0.0

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def expect(self, *prefixes):
        """The next line starting with one of `prefixes` (a RESULT ends the
        worker early), or an error result when it dies or times out."""
        while True:
            try:
                line = self.lines.get(timeout=self.timeout)
            except queue.Empty:
                self.proc.kill()
                return "RESULT", {"status": "error", "detail": f"timed out after {self.timeout:.0f} s"}
            if line is None:
                self.proc.wait()
                self.err.seek(0)
                err = (self.err.read().strip().splitlines() or ["no output"])[-1]
                return "RESULT", {"status": "error",
                                  "detail": f"worker failed (exit {self.proc.returncode}): {err[:200]}"}
            word, _, rest = line.strip().partition(" ")
            if word == "RESULT":
                self.proc.wait()
                return word, json.loads(rest)
            if word in prefixes:
                return word, rest

    def turn(self, n):
        self.proc.stdin.write(f"RUN {n}\n")
        self.proc.stdin.flush()
        word, rest = self.expect("TIMES")
        if word == "RESULT":
            return rest
        times = [float(t) for t in rest.split()]
        self.runs += len(times)
        self.seconds += sum(times)
        return None

    def finish(self):
        self.proc.stdin.write("DONE\n")
        self.proc.stdin.flush()
        return self.expect()[1]


def time_in_turns(a, x, ref, threads, jobs):
    """Times `jobs` ([(system, extra args)]) in turns: each
    worker is started and taken through its agreement run, warm-up and
    memory figures alone, one after another; then, round after round, each
    runs about TURN_SECONDS of timed runs while the others wait, until each
    has --min-time seconds and --min-reps runs (at most --max-reps; exactly
    --reps when given). So every system meets the same load from other
    processes, which one system timed after another did not (issue 25, item
    1: on a shared machine our row moved 30% between two runs, the peers'
    3%).
    Returns each job's result, in order."""
    results, live = [None] * len(jobs), []
    for i, (system, extra) in enumerate(jobs):
        log(f"  T={threads} {system} {' '.join(extra[2:])}: agreement, warm-up, memory")
        w = Worker(a, ["--system", system, "--x", x, "--threads", str(threads),
                       "--tol", str(a.tol), "--single-above", str(a.single_above),
                       "--ref", ref, "--turns"] + extra)
        word, rest = w.expect("READY")
        if word == "RESULT":
            results[i] = rest
            log(f"    {describe(rest)}")
        else:
            live.append((i, w, max(float(rest), 1e-6)))

    def wants(w):
        if a.reps:
            return a.reps - w.runs
        if w.runs >= a.max_reps or (w.runs >= a.min_reps and w.seconds >= a.min_time):
            return 0
        return a.max_reps - w.runs

    def pending():
        return [(i, w, warm) for i, w, warm in live if results[i] is None and wants(w) > 0]

    while pending():
        for i, w, warm in pending():
            results[i] = w.turn(min(wants(w), max(1, round(TURN_SECONDS / warm))))
            time.sleep(PAUSE_SECONDS)
    for i, w, _ in live:
        if results[i] is None:
            results[i] = w.finish()
        log(f"  T={threads} {jobs[i][0]} {' '.join(jobs[i][1][2:])}: {describe(results[i])}")
    return results


def describe(res):
    if res.get("status") != "ok":
        return res.get("detail", res.get("status"))
    return f"{res['ms']:.2f} ms ({res['runs']} runs)"


# ------------------------------------------------------------------ tables


def table(block, b, s, threads, peak, rows):
    """rows: [(label, result dict, note)]; the first is our hand schedule."""
    fl = blocks.flops(block, b, s)
    hand = rows[0][1]
    hand_ms = hand.get("ms") if hand.get("status") == "ok" else None
    out = [f"### {block.name} ({'causal' if block.causal else 'bidirectional'}) "
           f"B={b} S={s}, {threads} thread{'s' if threads > 1 else ''}",
           "",
           f"{fl / 1e9:.2f} GFLOP per run; measured FP32 peak at {threads} thread(s): "
           f"{peak:.1f} GFLOP/s",
           "",
           "| system | ms | GFLOP/s | % of peak | ratio (ms / hand ms) | extra MiB | "
           "extra MiB warm | notes |",
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for label, res, note in rows:
        if res.get("status") != "ok":
            detail = str(res.get("detail", res.get("status"))).replace("|", "\\|")
            out.append(f"| {label} | - | - | - | - | - | - | {detail} |")
            continue
        ms = res["ms"]
        gf = fl / (ms * 1e6)
        ratio = f"{ms / hand_ms:.2f}" if hand_ms else "-"
        mem = f"{res['extra'] / MIB:.1f}" if "extra" in res else "-"
        warm = f"{res['extra_warm'] / MIB:.1f}" if "extra_warm" in res else "-"
        notes = [f"{res['runs']} run{'s' if res['runs'] > 1 else ''}"
                 + (", no warm-up; extra MiB of that first run (includes paging in code "
                    "and weights)" if res.get("single") else ", median")]
        if "maxdiff" in res:
            notes.append(f"max diff {res['maxdiff']:.1e}")
        if note:
            notes.append(note)
        out.append(f"| {label} | {ms:.2f} | {gf:.1f} | {100 * gf / peak:.1f} | {ratio} | "
                   f"{mem} | {warm} | {'; '.join(notes)} |")
    return "\n".join(out) + "\n"


def machine_facts(packages):
    """The installed versions of `packages`, the CPU's model name and the
    repository's commit, for the header of a results table."""
    vers = {}
    for pkg in packages:
        try:
            vers[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            vers[pkg] = "not installed"
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    commit = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip() or "?"
    return vers, cpu, commit


def header(a, peaks, isa, accepted):
    vers, cpu, commit = machine_facts(("torch", "onnxruntime", "openvino", "numpy"))
    lines = [f"# Benchmark results ({datetime.datetime.now():%Y-%m-%d %H:%M})", "",
             f"- machine: {cpu}, {os.cpu_count()} logical CPUs, {platform.platform()}",
             f"- repository at {commit}; attnc schedules accepted: {', '.join(sorted(accepted))}",
             "- measured FP32 FMA peak (bench/fma_peak.c, " + isa + "): "
             + ", ".join(f"{t} thread(s) {g:.1f} GFLOP/s" for t, g in sorted(peaks.items())),
             "- peers: " + ", ".join(f"{k} {v}" for k, v in vers.items()),
             f"- command: bench/run.sh {' '.join(sys.argv[1:])}".rstrip(),
             f"- agreement tolerance: max |y - y_hand| <= {a.tol:g}",
             "- ratio = system ms / our hand-schedule ms (> 1: we are faster)",
             "- extra MiB: peak extra resident memory of one run of a fresh instance; "
             "extra MiB warm: of a run after warm-up (docs/performance.md)", ""]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ main


def main():
    global ATTNC
    a = parse_args()
    ATTNC = a.attnc
    if not os.path.exists(ATTNC):
        raise BenchError(f"{ATTNC} missing: build the project first (./scripts/setup.sh)")
    if importlib.util.find_spec("attnc") is None:
        raise BenchError(f"the attnc package is not importable by {sys.executable}: "
                         "run bench/setup.sh (it installs python/ into bench/.venv)")
    os.makedirs(a.workdir, exist_ok=True)
    results_path = os.path.join(a.workdir, "results.md")

    log("measuring the FP32 FMA peak")
    peaks, isa = measure_peak(a.workdir, a.thread_list)
    accepted = attnc_schedules()
    with open(results_path, "w") as f:
        f.write(header(a, peaks, isa, accepted))
    print(header(a, peaks, isa, accepted))

    for name in a.blocks:
        block = blocks.BLOCKS[name]
        weights, digest, libs = prepare_block(block, a.workdir, a.system_list, accepted)
        for b, s in a.shapes or block.shapes:
            if s > block.s_max:
                raise BenchError(f"shape {b}x{s}: S is beyond the bench's bound {block.s_max} for {name}")
            run_shape(a, block, b, s, weights, digest, libs, peaks, results_path)
    log(f"results written to {results_path}")


def run_shape(a, block, b, s, weights, digest, libs, peaks, results_path):
    tag = f"{block.name}_B{b}_S{s}"
    x = os.path.join(a.workdir, f"x_{tag}.npy")
    np.save(x, np.random.default_rng([b, s]).standard_normal((b, s, blocks.D)).astype(np.float32))
    ref = os.path.join(a.workdir, f"ref_{tag}.npy")
    log(f"{block.name} {b}x{s}: reference output (hand schedule)")
    r = Worker(a, ["--system", "ours", "--x", x, "--threads", "1", "--save-out", ref,
                   "--block", block.name, "--lib", libs["hand"]]).expect()[1]
    if r.get("status") != "saved":
        raise BenchError(f"our hand schedule failed at {b}x{s}: {r.get('detail')}")
    onnx = None
    if {"ort", "openvino"} & set(a.system_list):
        try:
            onnx = export_onnx(block, weights, digest, b, s, a.workdir)
        except BenchError as e:
            onnx = "n/a (" + str(e).splitlines()[-1][:150] + ")"

    naive = None
    for threads in a.thread_list:
        # Each row is a result or the indices of its jobs, timed together.
        jobs, plan = [], []

        def job(system, extra):
            jobs.append((system, ["--block", block.name] + extra))
            return len(jobs) - 1

        for sys_name in a.system_list:
            label = LABELS[sys_name]
            if sys_name in SCHEDULES:
                lib = libs[sys_name]
                if lib.startswith("n/a"):
                    plan.append((label, {"status": "n/a", "detail": lib}, ""))
                elif sys_name == "naive":
                    # Serial: it ignores the thread count, so one run serves
                    # every column.
                    if naive is None:
                        naive_threads = threads
                        plan.append((label, [job("ours", ["--lib", lib])], "serial schedule"))
                    else:
                        plan.append((label, naive, "serial schedule; same measurement as the "
                                     f"{naive_threads}-thread table"))
                else:
                    plan.append((label, [job("ours", ["--lib", lib])], ""))
            elif sys_name == "torch":
                # Best of its thread settings: intra-op T, interop 1 or default.
                plan.append((label, [job("torch", ["--weights", weights, "--interop", io])
                                     for io in ("1", "default")], ""))
            elif onnx is None or onnx.startswith("n/a"):
                plan.append((label, {"status": "n/a", "detail": onnx or "no ONNX file"}, ""))
            else:
                plan.append((label, [job(sys_name, ["--onnx", onnx])],
                             "intra_op_num_threads=%d, inter_op 1" % threads if sys_name == "ort"
                             else "INFERENCE_NUM_THREADS=%d, precision f32" % threads))
        log(f"{block.name} {b}x{s} T={threads}: {len(jobs)} workers, in turns")
        results = time_in_turns(a, x, ref, threads, jobs)
        rows = []
        for label, got, note in plan:
            if isinstance(got, dict):
                rows.append((label, got, note))
                continue
            if label == LABELS["torch"]:
                tries = dict(zip(("1", "default"), (results[j] for j in got)))
                ok = {io: r for io, r in tries.items() if r.get("status") == "ok"}
                if ok:
                    io = min(ok, key=lambda k: ok[k]["ms"])
                    other = [k for k in ok if k != io]
                    rows.append((label, ok[io], f"set_num_threads({threads}), interop {io}"
                                 + (f" (interop {other[0]}: {ok[other[0]]['ms']:.2f} ms)"
                                    if other else "")))
                else:
                    rows.append((label, tries["1"], ""))
                continue
            res = results[got[0]]
            if label == LABELS["naive"]:
                naive = res
            rows.append((label, res, note))
        text = table(block, b, s, threads, peaks[threads], rows)
        print(text, flush=True)
        with open(results_path, "a") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    try:
        main()
    except BenchError as e:
        print(f"bench: error: {e}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
