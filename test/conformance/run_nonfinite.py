#!/usr/bin/env python3
"""NaN and Inf against Hugging Face transformers: a damaged weight or input
gives the NaN / Inf pattern the module gives.

goldens/nonfinite.safetensors (make_nonfinite_goldens.py) holds, for cases of
three configurations (gpt2_block, bert_layer, llama_lm), what the
transformers module gives with one weight element (norm, Q, K, V, attention
output, MLP) or one input position set to NaN or Inf. For each configuration
this compiles models/<name>.attn once (weights read at load), then per case
writes the configuration's golden weights and inputs with that one element
damaged, runs attn-run and checks every output element:

  * NaN exactly where the module has NaN, +Inf and -Inf exactly where it has
    them (np.isnan / np.isposinf / np.isneginf equal): a NaN that vanishes
    (the online softmax's max, a `sum > 0` test, Halide's exp(NaN) = 0) or
    one that spreads where PyTorch's does not fails;
  * the finite elements within 1e-4 of the module's, the conformance tests'
    tolerance (run_conformance.py says why): a case that damages one batch
    entry leaves the others' outputs as the clean run's.

The functions of one tensor (models/functions.attn) are checked the same
way against torch's on NaN, +-Inf and finite inputs.

Needs only numpy. Ends with `N passed, M failed`; exit status 0 if every
check passed, 1 otherwise, 2 on a usage error.
"""

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))

from run_conformance import run_cmd  # noqa: E402
from run_e2e import Tally  # noqa: E402

TOLERANCE = 1e-4
GOLDEN = os.path.join(HERE, "goldens", "nonfinite.safetensors")


def check(tag, got, want, tally):
    import numpy as np
    if got.shape != want.shape:
        tally.fail(f"{tag}: shape {list(got.shape)}, expected {list(want.shape)}")
        return
    for what, f in (("NaN", np.isnan), ("+Inf", np.isposinf), ("-Inf", np.isneginf)):
        g, w = f(got), f(want)
        if not np.array_equal(g, w):
            first = tuple(int(i) for i in np.argwhere(g != w)[0])
            tally.fail(f"{tag}: {what} at {int(g.sum())} elements, PyTorch at "
                       f"{int(w.sum())}; first difference at {first}: got {got[first]}, "
                       f"expected {want[first]}")
            return
    finite = np.isfinite(want)
    err = float(np.abs(got[finite].astype(np.float64) - want[finite]).max()) \
        if finite.any() else 0.0
    msg = (f"{tag}: NaN at {int(np.isnan(want).sum())}, Inf at "
           f"{int(np.isinf(want).sum())} of {want.size} elements as PyTorch; "
           f"the rest within {err:.3g} (tolerance {TOLERANCE:g})")
    (tally.ok if err <= TOLERANCE else tally.fail)(msg)


def compile_model(name, wd, args, tally):
    """models/<name>.attn as wd/m.so (weights read at load), or None."""
    os.makedirs(wd, exist_ok=True)
    lib = os.path.join(wd, "m.so")
    _, err = run_cmd([args.attnc, os.path.join(HERE, "models", name + ".attn"), "-o", lib],
                     600)
    if err:
        tally.fail(f"{name}: compile failed: {err}")
        return None
    return lib


def run_model(lib, tensors, args):
    """attn-run of `lib` on `tensors` (`input.<name>` the inputs, the rest its
    weights, if any): (outputs, None) or (None, the error)."""
    import safetensors_io as st
    wd = os.path.dirname(lib)
    w_path, x_path, y_path = (os.path.join(wd, f) for f in
                              ("w.safetensors", "in.safetensors", "out.safetensors"))
    weights = {k: v for k, v in tensors.items() if not k.startswith("input.")}
    st.save(x_path, {k[len("input."):]: v for k, v in tensors.items()
                     if k.startswith("input.")})
    cmd = [args.attn_run, lib, "--inputs", x_path, "--outputs", y_path]
    if weights:
        st.save(w_path, weights)
        cmd += ["--weights", w_path]
    if os.path.exists(y_path):
        os.remove(y_path)
    _, err = run_cmd(cmd, 300)
    return (None, err) if err else (st.load(y_path), None)


def run_functions(outputs, golden, args, tally):
    """models/functions.attn on golden `functions.x`, each output against
    torch's."""
    lib = compile_model("functions", os.path.join(args.workdir, "functions"), args, tally)
    if not lib:
        return
    got, err = run_model(lib, {"input.x": golden["functions.x"]}, args)
    if err:
        tally.fail(f"functions: attn-run failed: {err}")
        return
    for out in outputs:
        check(f"functions.{out}", got[out], golden[f"functions.expected.{out}"], tally)


def run_config(name, cases, golden, args, tally):
    """models/<name>.attn on its golden's weights and inputs with each case's
    element damaged."""
    import safetensors_io as st
    lib = compile_model(name, os.path.join(args.workdir, name), args, tally)
    if not lib:
        return
    clean = {k: v for k, v in st.load(os.path.join(HERE, "goldens", name + ".safetensors"))
             .items() if not k.startswith("expected.")}
    for case in cases:
        tag = f"{name}.{case['case']} ({case['tensor']}{case['index']} = {case['value']})"
        damaged = dict(clean)
        damaged[case["tensor"]] = clean[case["tensor"]].copy()
        damaged[case["tensor"]][tuple(case["index"])] = float(case["value"])
        got, err = run_model(lib, damaged, args)
        if err:
            tally.fail(f"{tag}: attn-run failed: {err}")
            continue
        out = case["output"]
        check(tag, got[out], golden[f"{name}.{case['case']}.expected.{out}"], tally)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--attnc", required=True)
    ap.add_argument("--attn-run", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args(argv)
    import safetensors_io as st
    golden, meta = st.load(GOLDEN, with_metadata=True)
    print(f"golden: {os.path.relpath(GOLDEN)}, made with torch {meta['torch_version']}, "
          f"transformers {meta['transformers_version']}")
    tally = Tally()
    for name, cases in json.loads(meta["cases"]).items():
        if name == "functions":
            run_functions(cases[0]["output"], golden, args, tally)
        else:
            run_config(name, cases, golden, args, tally)
    print(f"{tally.passed} passed, {tally.failed} failed")
    return 1 if tally.failed else 0


if __name__ == "__main__":
    sys.exit(main())
