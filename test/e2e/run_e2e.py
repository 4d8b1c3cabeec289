#!/usr/bin/env python3
"""End-to-end numeric test: compile a model with attnc, run it with attn-run,
and compare against the independent float64 reference (reference.py).

For one named configuration (see --list):
  1. write the model's `.attn` text from a template (or take a file from
     models/), and random float32 weights for its declarations (fixed seed);
  2. compile once:  attnc MODEL.attn -o MODEL.so (with --weights-at=compile:
     --weights W.safetensors, embedded in the library);
  3. for every (B, S): write x ~ N(0, 1) of shape [B, S, D], run
     attn-run MODEL.so --weights W.safetensors --inputs IN --outputs OUT
     (without --weights when embedded), read `y`, check it is finite
     and within the tolerance of the float64 reference computed from the very
     same float32 weights and inputs.

Exit status: 0 if every run passed, 1 if any failed, 2 on a usage error.

Tolerance (default 1e-4, absolute, on unit-scale data): fp32 has epsilon
1.2e-7; the longest reduction is the FFN down projection (3072 terms for the
real models), whose rounding error accumulates like sqrt(n) * eps * |values|
(~1e-5 at worst for a sequential sum of n = 3072 unit terms), and layer norm's
division by the standard deviation and the residual stream (|y| up to ~5)
amplify that by small factors, to ~1e-5. Measured (test_reference.py): the
same reference evaluated in float32 with strictly sequential accumulation
differs from float64 by at most 6.3e-6 on the 768-wide models (|y| up to ~5)
and 1.4e-6 on the small ones. 1e-4 leaves >10x headroom for other summation
orders and exp/erf implementations, yet catches any real bug: a missing mask,
a 1/d_head scale, heads joined in the wrong order or a dropped Q bias give
errors of 1e-1 to 7 with these weights, and even the tanh form of GELU in
place of the erf form gives ~5e-4.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import zlib
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

from reference import BlockSpec  # noqa: E402
from graphs import GRAPHS, GraphConfig  # noqa: E402

DEFAULT_TOL = 1e-4

SMALL_RUNS = [(b, s) for b in (1, 3) for s in (1, 7, 77, 128)]
REAL_RUNS = [(1, 1), (1, 64), (2, 33)]


@dataclass(frozen=True)
class Config:
    spec: BlockSpec
    runs: tuple                 # ((B, S), ...)
    model_file: str = None      # a file under the repo, instead of the template
    reject_runs: tuple = ()     # (B, S) that attn-run must refuse (S > S_max)
    about: str = ""


def _small(heads, mask, layout, qkv, style, ffn, act="gelu", **kw):
    spec = BlockSpec(d_model=48, heads=heads, ffn=ffn, mask=mask, layout=layout,
                     qkv=qkv, style=style, s_max=128,
                     eps=1e-5 if style == "pre" else 1e-12, act=act)
    return Config(spec=spec, runs=tuple(SMALL_RUNS), **kw)


# Named configurations. The small ones (d_model 48, divisible by 1, 4 and 12;
# S_max 128) together cover heads {1, 4, 12} x mask {none, causal} x layout
# {out_in, in_out} x qkv {packed, separate} x style {pre, post}, each value
# of each axis in several combinations; the last two are the real models.
CONFIGS = {
    "gpt_h1_causal_inout_packed": _small(1, "causal", "in_out", "packed", "pre", 192),
    "gpt_h4_causal_inout_packed": _small(4, "causal", "in_out", "packed", "pre", 192,
                                         reject_runs=((1, 129),)),
    "gpt_h12_causal_inout_packed": _small(12, "causal", "in_out", "packed", "pre", 192),
    "bert_h1_none_outin_separate": _small(1, "none", "out_in", "separate", "post", 96),
    "bert_h4_none_outin_separate": _small(4, "none", "out_in", "separate", "post", 96),
    "bert_h12_none_outin_separate": _small(12, "none", "out_in", "separate", "post", 96),
    "gpt_h4_none_outin_separate": _small(4, "none", "out_in", "separate", "pre", 96),
    "gpt_h12_causal_outin_packed_relu": _small(12, "causal", "out_in", "packed", "pre", 96,
                                               act="relu"),
    "bert_h12_causal_inout_packed": _small(12, "causal", "in_out", "packed", "post", 192),
    "bert_h4_none_inout_separate": _small(4, "none", "in_out", "separate", "post", 192),
    "gpt2_block": Config(
        spec=BlockSpec(d_model=768, heads=12, ffn=3072, mask="causal", layout="in_out",
                       qkv="packed", style="pre", s_max=1024, eps=1e-5),
        runs=tuple(REAL_RUNS), model_file="models/gpt2_block.attn"),
    "bert_layer": Config(
        spec=BlockSpec(d_model=768, heads=12, ffn=3072, mask="none", layout="out_in",
                       qkv="separate", style="post", s_max=512, eps=1e-12),
        runs=tuple(REAL_RUNS), model_file="models/bert_layer.attn"),
}
# Whole graphs with their own numpy forward (graphs.py).
CONFIGS.update(GRAPHS)


# ----------------------------------------------------------------- .attn text

def attn_text(name, spec):
    """The `.attn` source of the template `spec` (syntax of docs/language.md)."""
    n, D = spec.names(), spec.d_model
    lines = [f"# Generated by test/e2e/run_e2e.py for configuration {name}.",
             f"model {name} {{",
             f"  dim B, S <= {spec.s_max}",
             f"  input x : f32[B, S, {D}]",
             ""]
    for wname, shape, layout in spec.weights():
        dims = ", ".join(str(d) for d in shape)
        suffix = " layout(in, out)" if layout == "in_out" else ""
        lines.append(f"  weight {wname} : f32[{dims}]{suffix}")
    lines.append("")
    eps = re.sub(r"e([-+])0*(\d)", r"e\1\2", f"{spec.eps:g}")   # 1e-05 -> 1e-5
    if spec.qkv == "packed":
        proj = f"qkv = {n['qkv']}"
    else:
        proj = (f"q = {n['q']},\n                      k = {n['k']},\n"
                f"                      v = {n['v']}")

    def attn(src):
        return (f"self_attention({src}, heads = {spec.heads}, {proj},\n"
                f"                      out = {n['out']}, mask = {spec.mask})")

    if spec.style == "pre":
        # ln_1 uses the explicit (x, gain, bias) form and ln_2 the module
        # prefix form, so both forms of layer_norm are exercised.
        ln1 = n["ln1"]
        lines += [
            f"  h  = layer_norm(x, {ln1}.weight, {ln1}.bias, eps = {eps})",
            f"  a  = {attn('h')}",
            "  x1 = x + a",
            f"  h2 = layer_norm(x1, {n['ln2']}, eps = {eps})",
            f"  f  = linear({spec.act}(linear(h2, {n['fc1']})), {n['fc2']})",
            "  output y = x1 + f",
        ]
    else:
        # The first linear of the FFN uses the explicit (x, W, b) form.
        fc1 = n["fc1"]
        lines += [
            f"  a  = {attn('x')}",
            f"  x1 = layer_norm(x + a, {n['ln1']}, eps = {eps})",
            f"  u  = {spec.act}(linear(x1, {fc1}.weight, {fc1}.bias))",
            f"  f  = linear(u, {n['fc2']})",
            f"  y  = layer_norm(x1 + f, {n['ln2']}, eps = {eps})",
            "  output y",
        ]
    lines.append("}")
    return "\n".join(lines) + "\n"


_WEIGHT_RE = re.compile(
    r"^[ \t]*weight[ \t]+([A-Za-z_][A-Za-z0-9_.]*)[ \t]*:[ \t]*(f32|i32|bf16|f16)[ \t]*"
    r"\[([^\]]*)\][ \t]*(?:layout[ \t]*\([ \t]*(\w+)[ \t]*,[ \t]*(\w+)[ \t]*\))?",
    re.M)


def parse_weight_decls(text):
    """(name, shape, layout) for every `weight NAME : f32[...]` line (or
    bf16 / f16: the graphs that declare those generate their own weights).

    A regex over the text, only to know which weights to generate; not the
    compiler's parser.
    """
    text = re.sub(r"#[^\n]*", "", text)
    # `repeat N as i { ... }` (not nested): the body N times, {i} replaced.
    text = re.sub(r"repeat\s+(\d+)\s+as\s+(\w+)\s*\{(.*?)\n\s*\}",
                  lambda m: "\n".join(m.group(3).replace("{" + m.group(2) + "}", str(i))
                                      for i in range(int(m.group(1)))),
                  text, flags=re.S)
    decls = []
    for m in _WEIGHT_RE.finditer(text):
        name, dtype, dims, l0, l1 = m.groups()
        if dtype == "i32":
            raise ValueError(f"weight {name}: weights are floats")
        shape = tuple(int(d) for d in dims.split(","))
        layout = None
        if len(shape) == 2:
            layout = "in_out" if (l0, l1) == ("in", "out") else "out_in"
        decls.append((name, shape, layout))
    return decls


# ----------------------------------------------------------------- running

class Tally:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def ok(self, msg):
        self.passed += 1
        print("PASS " + msg, flush=True)

    def fail(self, msg):
        self.failed += 1
        print("FAIL " + msg, flush=True)


def run_cmd(cmd, timeout):
    print("  $ " + " ".join(cmd), flush=True)
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=timeout)
    except FileNotFoundError as e:
        return None, f"cannot execute: {e}"
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout} s"
    return p, None


def describe_rc(rc):
    return f"killed by signal {-rc}" if rc < 0 else f"exit status {rc}"


def seed_of(*parts):
    return zlib.crc32("/".join(str(p) for p in parts).encode())


def compare(got, ref):
    """Max abs error, its index, and max relative error |d| / max(|ref|, 1e-3)."""
    import numpy as np
    d = np.abs(got.astype(np.float64) - ref)
    idx = np.unravel_index(int(np.argmax(d)), d.shape)
    rel = d / np.maximum(np.abs(ref), 1e-3)
    ridx = np.unravel_index(int(np.argmax(rel)), rel.shape)
    return float(d[idx]), idx, float(rel[ridx]), ridx


def compile_model(name, model_path, weights_path, wd, args):
    """Compiles with attnc; returns the library path, or (None, why). With
    --weights-at=load the library reads `weights_path` when attn-run loads
    it (attn_run_command passes it), else it embeds them."""
    lib = os.path.join(wd, name + ".so")
    if os.path.exists(lib):
        os.remove(lib)
    cmd = [args.attnc, model_path, "-o", lib]
    args.load_weights = None
    if args.weights_at == "load":
        args.load_weights = weights_path
    else:
        cmd += ["--weights", weights_path]
    if args.target:
        cmd.append("--target=" + args.target)
    if args.schedule:
        cmd.append("--schedule=" + args.schedule)
    p, err = run_cmd(cmd, args.compile_timeout)
    if err or p.returncode != 0 or not os.path.exists(lib):
        why = err or (describe_rc(p.returncode) if p.returncode else "no library written")
        if p is not None:
            sys.stdout.write(p.stdout)
            sys.stdout.write(p.stderr)
        return None, why
    return lib, None


def attn_run_command(args, lib):
    """attn-run LIB, with the weights file when the library reads it at load."""
    cmd = [args.attn_run, lib]
    if getattr(args, "load_weights", None):
        cmd += ["--weights", args.load_weights]
    return cmd + (getattr(args, "attn_run_arg", None) or [])


def run_model(args, lib, wd, B, S, inputs, threads, tally, tag):
    """Runs `lib` on `inputs` with attn-run; returns its outputs by name, or
    None after recording the failure."""
    import safetensors_io as st
    in_path = os.path.join(wd, f"in_B{B}_S{S}.safetensors")
    out_path = os.path.join(wd, f"out_B{B}_S{S}.safetensors")
    st.save(in_path, inputs)
    if os.path.exists(out_path):
        os.remove(out_path)
    p, err = run_cmd(attn_run_command(args, lib) + ["--inputs", in_path, "--outputs", out_path]
                     + threads, args.run_timeout)
    if err or p.returncode != 0:
        if p is not None:
            sys.stdout.write(p.stdout)
            sys.stdout.write(p.stderr)
        tally.fail(f"{tag}: attn-run failed: {err or describe_rc(p.returncode)}")
        return None
    try:
        return st.load(out_path)
    except (OSError, ValueError) as e:
        tally.fail(f"{tag}: cannot read the outputs: {e}")
        return None


class LoadTimeTwin:
    """--weights-at=compile: the same model built to read its weights at
    load (in WD/load-time), compiled on first use. The embedded library's
    constants come from the twin's own "init" kernels, run by attnc at
    build time, so every output must match it bit for bit (NaN included)."""

    def __init__(self, args, name, model_path, weights_path, wd):
        import copy
        self.args = copy.copy(args)
        self.args.weights_at = "load"
        self.name, self.model_path, self.weights_path = name, model_path, weights_path
        self.wd = os.path.join(wd, "load-time")
        self.lib, self.why = None, None

    def check(self, B, S, inputs, threads, tally, tag, outs):
        if self.lib is None and self.why is None:
            os.makedirs(self.wd, exist_ok=True)
            self.lib, self.why = compile_model(self.name, self.model_path,
                                               self.weights_path, self.wd, self.args)
        tag += " (embedded against load-time)"
        if self.why:
            tally.fail(f"{tag}: compile failed: {self.why}")
            return
        twin = run_model(self.args, self.lib, self.wd, B, S, inputs, threads, tally, tag)
        if twin is None:
            return
        differ = [k for k in sorted(set(outs) | set(twin))
                  if k not in outs or k not in twin or outs[k].dtype != twin[k].dtype
                  or outs[k].shape != twin[k].shape
                  or outs[k].tobytes() != twin[k].tobytes()]
        if differ:
            tally.fail(f"{tag}: outputs {differ} are not bit-identical")
        else:
            tally.ok(f"{tag}: {len(outs)} outputs bit-identical")


def round_weights(weights, dtype):
    """(what the file stores, the float32 values it holds) of float32 weights
    rounded to `dtype` ("f32", "bf16" or "f16"), to nearest even."""
    import numpy as np
    import safetensors_io as st
    if dtype == "f32":
        return weights, weights
    if dtype == "bf16":
        stored = {k: st.to_bf16(v) for k, v in weights.items()}
        return stored, {k: v.to_float32() for k, v in stored.items()}
    if dtype == "f16":
        stored = {k: v.astype(np.float16) for k, v in weights.items()}
        return stored, {k: v.astype(np.float32) for k, v in stored.items()}
    raise ValueError(f"unknown weight dtype {dtype!r}")


def run_graph(name, cfg, args, tally):
    """A GraphConfig: every output against its float64 forward."""
    import numpy as np
    import safetensors_io as st
    from reference import init_weights

    wd = os.path.join(args.workdir, name)
    os.makedirs(wd, exist_ok=True)
    print(f"== {name}: graph {cfg.about}(workdir {wd})", flush=True)
    model_path = os.path.join(wd, name + ".attn")
    with open(model_path, "w") as f:
        f.write(cfg.text)
    weights = init_weights(cfg.weights, np.random.default_rng(seed_of(args.seed, name, "w")))
    stored, weights = round_weights(weights, cfg.weight_dtype)
    weights_path = os.path.join(wd, "weights.safetensors")
    st.save(weights_path, stored)
    lib, why = compile_model(name, model_path, weights_path, wd, args)
    if not lib:
        for _ in cfg.runs:
            tally.fail(f"{name}: compile failed: {why}")
        return
    threads = ["--threads", str(args.threads)] if args.threads else []
    twin = LoadTimeTwin(args, name, model_path, weights_path, wd)

    def make_inputs(B, S):
        rng = np.random.default_rng(seed_of(args.seed, name, "x", B, S))
        inputs = {}
        for k, make in cfg.inputs.items():
            if make.__code__.co_argcount == 3:      # (B, S, rng) -> array
                inputs[k] = make(B, S, rng)
            else:                                   # (B, S) -> shape
                inputs[k] = rng.standard_normal(make(B, S)).astype(np.float32)
        return inputs

    for B, S, bad, message in cfg.rejects:
        tag = f"{name} B={B} S={S} {sorted(bad)} (must be refused)"
        inputs = make_inputs(B, S)
        inputs.update(bad)
        in_path = os.path.join(wd, f"reject_B{B}_S{S}.safetensors")
        st.save(in_path, inputs)
        p, err = run_cmd(attn_run_command(args, lib) + ["--inputs", in_path, "--outputs",
                          os.path.join(wd, "reject_out.safetensors")] + threads,
                         args.run_timeout)
        # The kernel's own words right after "failed: ", with nothing of
        # Halide's ("Requirement Failed: (false) <value> ") before them.
        if err or p.returncode <= 0 or f"failed: {message}" not in p.stderr:
            tally.fail(f"{tag}: expected a refusal 'failed: {message}', got "
                       f"{err or describe_rc(p.returncode)}: {p.stderr.strip() if p else ''}")
        else:
            tally.ok(f"{tag}: refused: {p.stderr.strip().splitlines()[-1]}")
    for B, S in cfg.runs:
        tag = f"{name} B={B} S={S}"
        inputs = make_inputs(B, S)
        outs = run_model(args, lib, wd, B, S, inputs, threads, tally, tag)
        if outs is None:
            continue
        if args.weights_at == "compile":
            twin.check(B, S, inputs, threads, tally, tag, outs)
        expected = cfg.forward(weights, {k: v.astype(np.float64) if v.dtype == np.float32 else v
                                         for k, v in inputs.items()})
        for out_name, want in expected.items():
            got = outs.get(out_name)
            if got is None or got.shape != want.shape:
                tally.fail(f"{tag} {out_name}: got "
                           f"{None if got is None else list(got.shape)}, "
                           f"expected {list(want.shape)}")
                continue
            if not np.isfinite(got).all():
                tally.fail(f"{tag} {out_name}: non-finite values")
                continue
            if out_name in cfg.exact_zeros:
                stray = int(np.count_nonzero(got[want == 0]))
                if stray:
                    tally.fail(f"{tag} {out_name}: {stray} entries that must be exactly "
                               f"0 (masked) are not")
                    continue
            err_abs, idx, err_rel, _ = compare(got, np.asarray(want, dtype=np.float64))
            msg = (f"{tag} {out_name}: max abs err {err_abs:.3e} at "
                   f"{tuple(int(i) for i in idx)}; max rel err {err_rel:.3e}; "
                   f"tol {args.tolerance:g}")
            (tally.fail if err_abs > args.tolerance else tally.ok)(msg)


def run_config(name, cfg, args, tally):
    import numpy as np
    if isinstance(cfg, GraphConfig):
        return run_graph(name, cfg, args, tally)
    import safetensors_io as st
    from reference import block_forward, init_weights

    spec = cfg.spec
    wd = os.path.join(args.workdir, name)
    os.makedirs(wd, exist_ok=True)
    print(f"== {name}: d_model={spec.d_model} heads={spec.heads} ffn={spec.ffn} "
          f"mask={spec.mask} layout={spec.layout} qkv={spec.qkv} style={spec.style} "
          f"act={spec.act} S_max={spec.s_max}  (workdir {wd})", flush=True)
    n_runs = len(cfg.runs) + len(cfg.reject_runs)

    def fail_all(why):
        for _ in range(n_runs):
            tally.fail(f"{name}: {why}")

    # 1. model text and weights
    if cfg.model_file:
        model_path = os.path.join(REPO, cfg.model_file)
        with open(model_path) as f:
            text = f.read()
    else:
        text = attn_text(name, spec)
        model_path = os.path.join(wd, name + ".attn")
        with open(model_path, "w") as f:
            f.write(text)
    decls = parse_weight_decls(text)
    expected = [(w, tuple(s), l) for w, s, l in spec.weights()]
    if sorted(decls) != sorted(expected):
        missing = sorted(set(expected) - set(decls))
        extra = sorted(set(decls) - set(expected))
        fail_all(f"the weights declared in {model_path} do not match the "
                 f"template {spec}: missing {missing}, unexpected {extra}")
        return
    weights = init_weights(decls, np.random.default_rng(seed_of(args.seed, name, "w")))
    weights_path = os.path.join(wd, "weights.safetensors")
    st.save(weights_path, weights)

    # 2. compile once
    lib, why = compile_model(name, model_path, weights_path, wd, args)
    if not lib:
        fail_all(f"compile failed: {why}")
        return

    base = attn_run_command(args, lib)
    if args.threads:
        threads = ["--threads", str(args.threads)]
    else:
        threads = []

    # 3. numeric runs
    D = spec.d_model
    twin = LoadTimeTwin(args, name, model_path, weights_path, wd)
    for B, S in cfg.runs:
        tag = f"{name} B={B} S={S}"
        rng = np.random.default_rng(seed_of(args.seed, name, "x", B, S))
        x = rng.standard_normal((B, S, D)).astype(np.float32)
        outs = run_model(args, lib, wd, B, S, {"x": x}, threads, tally, tag)
        if outs is None:
            continue
        if args.weights_at == "compile":
            twin.check(B, S, {"x": x}, threads, tally, tag, outs)
        if "y" not in outs:
            tally.fail(f"{tag}: no output named 'y' (has {sorted(outs)})")
            continue
        y = outs["y"]
        if y.dtype != np.float32 or y.shape != (B, S, D):
            tally.fail(f"{tag}: output y is {y.dtype}{list(y.shape)}, "
                       f"expected float32{[B, S, D]}")
            continue
        bad = ~np.isfinite(y)
        if bad.any():
            first = tuple(int(i) for i in np.argwhere(bad)[0])
            tally.fail(f"{tag}: {int(bad.sum())} non-finite output values, "
                       f"first at {first}: {y[first]}")
            continue
        ref = block_forward(spec, weights, x)
        err_abs, idx, err_rel, ridx = compare(y, ref)
        idx = tuple(int(i) for i in idx)
        ridx = tuple(int(i) for i in ridx)
        msg = (f"{tag}: max abs err {err_abs:.3e} at {idx} "
               f"(got {y[idx]:.6g}, ref {ref[idx]:.6g}); max rel err {err_rel:.3e} "
               f"at {ridx}; max |ref| {np.abs(ref).max():.3g}; tol {args.tolerance:g}")
        if err_abs > args.tolerance:
            tally.fail(msg)
        else:
            tally.ok(msg)

    # 4. inputs beyond the declared bound must be refused, not run
    for B, S in cfg.reject_runs:
        tag = f"{name} B={B} S={S} (> S_max {spec.s_max}, must be rejected)"
        x = np.zeros((B, S, D), dtype=np.float32)
        in_path = os.path.join(wd, f"in_B{B}_S{S}.safetensors")
        out_path = os.path.join(wd, f"out_B{B}_S{S}.safetensors")
        st.save(in_path, {"x": x})
        p, err = run_cmd(base + ["--inputs", in_path, "--outputs", out_path] + threads,
                         args.run_timeout)
        if err:
            tally.fail(f"{tag}: {err}")
        elif p.returncode == 0:
            tally.fail(f"{tag}: attn-run accepted it (exit 0)")
        elif p.returncode < 0:
            tally.fail(f"{tag}: attn-run crashed ({describe_rc(p.returncode)})")
        elif not p.stderr.strip():
            tally.fail(f"{tag}: attn-run exited {p.returncode} with no message")
        else:
            tally.ok(f"{tag}: refused, {describe_rc(p.returncode)}: "
                     f"{p.stderr.strip().splitlines()[-1]}")


def select_configs(ap, args, configs):
    """The names --config asks for ('all' for every one of `configs`);
    exits through `ap` with the known names on an unknown one."""
    if not args.config:
        ap.error("--config NAME is required (see --list)")
    names = []
    for c in args.config:
        if c == "all":
            names += list(configs)
        elif c in configs:
            names.append(c)
        else:
            ap.error(f"unknown configuration {c!r}; known: {', '.join(configs)}")
    return names


def tools_missing(args):
    """Reports and returns True when attnc or attn-run is not executable."""
    for tool in (args.attnc, args.attn_run):
        if not (os.path.isfile(tool) and os.access(tool, os.X_OK)):
            print(f"error: {tool} is not an executable file", file=sys.stderr)
            return True
    return False


def add_common_arguments(ap, workdir_holds, default_tol):
    """The options run_e2e.py and run_conformance.py share: which
    configurations, the tools, the work directory, attnc's schedule and
    target, the tolerance and the timeouts."""
    ap.add_argument("--config", action="append", metavar="NAME",
                    help="configuration to run (repeatable; 'all' for every one)")
    ap.add_argument("--list", action="store_true", help="list configuration names")
    ap.add_argument("--attnc", default=os.path.join(REPO, "build", "bin", "attnc"))
    ap.add_argument("--attn-run", default=os.path.join(REPO, "build", "bin", "attn-run"))
    ap.add_argument("--workdir", help=f"where to write {workdir_holds} (default: a new "
                    "temporary directory, kept)")
    ap.add_argument("--schedule", help="passed to attnc as --schedule=...")
    ap.add_argument("--target", help="passed to attnc as --target=...")
    ap.add_argument("--weights-at", choices=("load", "compile"), default="load",
                    help="load: the library reads the weights file when attn-run "
                    "loads it (attnc without --weights; the default); compile: "
                    "attnc embeds them (attnc --weights)")
    ap.add_argument("--tolerance", type=float, default=default_tol,
                    help=f"max abs error allowed (default {default_tol:g})")
    ap.add_argument("--compile-timeout", type=float, default=900)
    ap.add_argument("--run-timeout", type=float, default=300)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_common_arguments(ap, "models, weights, inputs and outputs", DEFAULT_TOL)
    ap.add_argument("--threads", type=int, help="passed to attn-run as --threads N")
    ap.add_argument("--attn-run-arg", action="append", metavar="ARG",
                    help="passed to every attn-run call (repeatable), e.g. "
                    "--attn-run-arg=--device-memory")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--print-model", action="store_true",
                    help="print the .attn text of the configuration(s) and exit")
    args = ap.parse_args(argv)

    if args.list:
        for name, cfg in CONFIGS.items():
            print(name)
        return 0
    names = select_configs(ap, args, CONFIGS)
    if args.print_model:
        for name in names:
            cfg = CONFIGS[name]
            if isinstance(cfg, GraphConfig):
                sys.stdout.write(cfg.text)
            elif cfg.model_file:
                with open(os.path.join(REPO, cfg.model_file)) as f:
                    sys.stdout.write(f.read())
            else:
                sys.stdout.write(attn_text(name, cfg.spec))
        return 0
    if tools_missing(args):
        return 2
    args.workdir = os.path.abspath(args.workdir or tempfile.mkdtemp(prefix="attnc-e2e-"))
    os.makedirs(args.workdir, exist_ok=True)

    tally = Tally()
    for name in names:
        run_config(name, CONFIGS[name], args, tally)
    print(f"{tally.passed} passed, {tally.failed} failed")
    return 1 if tally.failed else 0


if __name__ == "__main__":
    sys.exit(main())
