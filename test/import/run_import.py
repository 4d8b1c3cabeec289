#!/usr/bin/env python3
"""The `attnc import` check: each fixture of make_fixtures.py, a tiny Hugging
Face model directory, imported, compiled and run against the outputs
transformers computed from it.

For one fixture (see --list):

  1. attnc import fixtures/<name> -o WORKDIR/model.attn   (the source alone)
  2. attnc fixtures/<name> -o WORKDIR/m.so                 (import + compile)
  3. attn-run m.so --weights fixtures/<name>/model.safetensors with the
     golden's inputs (`input.<name>` of fixtures/<name>/golden.safetensors,
     under the model's input names), and each output compared with its
     `expected.<name>`, every element; an expected output the default head
     does not give (a MaskedLM encoder's `logits`) is compared from a
     library built with `attnc fixtures/<name> --head=<name>`;
  4. decoders: attn-run --generate 8 --prompt <the first 5 ids> --check:
     prefill and 7 decodes from the KV caches give the logits of one run
     over the whole sequence (attn-run's own tolerance).

With --sharded, the fixture is first copied into WORKDIR and its
model.safetensors split into 3 shards and model.safetensors.index.json
(Inputs/edit_config.py --shard), which every step then reads instead: a
sharded checkpoint must give the same outputs.

Needs only numpy. Prints PASS or FAIL per check, ends with `N passed, M
failed`; exit status 0 if all passed, 1 if any failed, 2 on a usage error.

Tolerance: 1e-5 relative, i.e. max |got - expected| <= 1e-5 * max
|expected| over the output. Both sides compute in float32 from the same
weights (a bf16 or f16 checkpoint widened exactly, as attnc does), so the
difference is summation order and the rounding of exp, tanh and erf:
a few ulp of the largest outputs. Relative, because the tied heads of
GPT-2 and Qwen2 read unit-scale embedding tables and give logits up to
~30, while the encoders' states are ~3 (an absolute bound would be 10x
looser for one than the other). Measured: see docs/import.md.
"""

import argparse
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "test", "e2e"))
sys.path.insert(0, os.path.join(HERE, "Inputs"))

from run_e2e import Tally, describe_rc, run_cmd, select_configs, tools_missing  # noqa: E402

DEFAULT_TOL = 1e-5
FIXTURES = os.path.join(HERE, "fixtures")
# name -> whether it is a decoder (KV caches, --generate). The
# encoder-decoders (bart, t5_conditional) compare their run's logits here;
# python/tests/test_seq2seq.py generates with them (attn-run --generate
# reads decoders whose decode takes the prompt's inputs).
CONFIGS = {"gpt2": True, "llama": True, "llama3": True, "llama_linear": True,
           "gemma2": True, "gpt_neox": True, "gpt_neox_seq": True,
           "mistral": True, "qwen2": True,
           "bert": False, "roberta": False, "distilbert": False, "t5": False,
           "vit": False, "bart": False, "t5_conditional": False}


def run_ok(cmd, timeout):
    """run_cmd, with a failing exit status as the error and the command's
    output shown."""
    p, err = run_cmd(cmd, timeout)
    if err is None and p.returncode != 0:
        sys.stdout.write(p.stdout + p.stderr)
        err = describe_rc(p.returncode)
    return p, err


def run_lib(name, lib, weights, in_path, wd, out_name, args, tally):
    """attn-run `lib` on the golden's inputs: its outputs, or None (a
    failure counted)."""
    import safetensors_io as st

    out_path = os.path.join(wd, out_name)
    p, err = run_ok([args.attn_run, lib, "--weights", weights, "--inputs", in_path,
                     "--outputs", out_path], args.timeout)
    if err:
        tally.fail(f"{name}: attn-run {os.path.basename(lib)} failed: {err}")
        return None
    return st.load(out_path)


def compare(what, y, want, tolerance, tally):
    import numpy as np

    if y is None or y.shape != want.shape:
        tally.fail(f"{what}: attn-run wrote "
                   f"{'nothing' if y is None else list(y.shape)}, expected "
                   f"{list(want.shape)}")
        return
    scale = float(np.abs(want).max())
    err = float(np.abs(y.astype(np.float64) - want).max())
    rel = err / scale
    (tally.ok if rel <= tolerance else tally.fail)(
        f"{what} {list(want.shape)}: max abs error {err:.3g}, "
        f"{rel:.3g} of max |expected| {scale:.3g} (tolerance {tolerance:g})")


def run_fixture(name, args, tally):
    import safetensors_io as st

    fixture = os.path.join(FIXTURES, name)
    weights = os.path.join(fixture, "model.safetensors")
    wd = os.path.join(args.workdir, name + ("-sharded" if args.sharded else ""))
    os.makedirs(wd, exist_ok=True)
    print(f"== {name} (workdir {wd})", flush=True)
    if args.sharded:
        import shutil

        from edit_config import shard
        copy = os.path.join(wd, "checkpoint")
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(fixture, copy)
        shard(copy, 3)
        fixture, weights = copy, os.path.join(copy, "model.safetensors.index.json")
        name += " (sharded)"

    source = os.path.join(wd, "model.attn")
    p, err = run_ok([args.attnc, "import", fixture, "-o", source], args.timeout)
    if err or not os.path.getsize(source):
        tally.fail(f"{name}: attnc import failed: {err or 'empty source'}")
        return
    tally.ok(f"{name}: attnc import wrote {os.path.getsize(source)} bytes of .attn")

    lib = os.path.join(wd, "m.so")
    p, err = run_ok([args.attnc, fixture, "-o", lib], args.timeout)
    if err:
        tally.fail(f"{name}: attnc {fixture} -o m.so failed: {err}")
        return

    golden, meta = st.load(os.path.join(FIXTURES, name.split()[0], "golden.safetensors"),
                           with_metadata=True)
    print(f"  golden: {meta.get('module')}, transformers "
          f"{meta.get('transformers_version')}", flush=True)
    inputs = {k[len("input."):]: v for k, v in golden.items() if k.startswith("input.")}
    expected = {k[len("expected."):]: v for k, v in golden.items()
                if k.startswith("expected.")}
    in_path = os.path.join(wd, "in.safetensors")
    st.save(in_path, inputs)
    got = run_lib(name, lib, weights, in_path, wd, "out.safetensors", args, tally)
    if got is None:
        return
    for out, want in expected.items():
        y = got.get(out)
        if y is None:
            # An output of another head (an encoder's logits): its own
            # library, built with --head=NAME.
            other = os.path.join(wd, f"m-{out}.so")
            p, err = run_ok([args.attnc, fixture, f"--head={out}", "-o", other],
                            args.timeout)
            if err:
                tally.fail(f"{name}: attnc {fixture} --head={out} failed: {err}")
                continue
            y = (run_lib(name, other, weights, in_path, wd, f"out-{out}.safetensors",
                         args, tally) or {}).get(out)
        compare(f"{name} {out}", y, want, args.tolerance, tally)

    if CONFIGS[name.split()[0]]:
        prompt = ",".join(str(int(t)) for t in inputs["ids"][0, :5])
        p, err = run_ok([args.attn_run, lib, "--weights", weights, "--generate", "8",
                         "--prompt", prompt, "--check"], args.timeout)
        line = next((l for l in (p.stdout if p else "").splitlines()
                     if l.startswith("check:")), "")
        if err or not line.endswith(": ok"):
            tally.fail(f"{name}: --generate --check: {err or line or 'no check line'}")
        else:
            tally.ok(f"{name}: {line}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", action="append", metavar="NAME",
                    help="fixture to run (repeatable; 'all' for every one)")
    ap.add_argument("--list", action="store_true", help="list the fixtures")
    ap.add_argument("--attnc", default=os.path.join(REPO, "build", "bin", "attnc"))
    ap.add_argument("--attn-run", default=os.path.join(REPO, "build", "bin", "attn-run"))
    ap.add_argument("--workdir", help="where to write the sources, libraries and "
                    "outputs (default: a new temporary directory, kept)")
    ap.add_argument("--tolerance", type=float, default=DEFAULT_TOL,
                    help=f"max error relative to max |expected| (default {DEFAULT_TOL:g})")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--sharded", action="store_true",
                    help="split each fixture's checkpoint into 3 shards first")
    args = ap.parse_args(argv)
    if args.list:
        print("\n".join(CONFIGS))
        return 0
    names = select_configs(ap, args, CONFIGS)
    if tools_missing(args):
        return 2
    args.workdir = os.path.abspath(args.workdir or tempfile.mkdtemp(prefix="attnc-import-"))
    tally = Tally()
    for name in names:
        run_fixture(name, args, tally)
    print(f"{tally.passed} passed, {tally.failed} failed")
    return 1 if tally.failed else 0


if __name__ == "__main__":
    sys.exit(main())
