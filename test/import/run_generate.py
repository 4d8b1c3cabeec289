#!/usr/bin/env python3
"""Greedy generation on an import fixture against transformers' ids: after
`attnc fixtures/<name> -o m.so`, each prompt of the fixture's
text_golden.json (make_text_fixtures.py) must give transformers' greedy
ids, token for token,

  1. by examples/generate.cpp (built against libattnrt and its public
     headers), one prompt at a time;
  2. by attn-run --generate with every prompt at once: one ragged batch
     (the prompts differ in length), one `tokens:` line per prompt, and
     --check running each sequence alone.

With --kv-cache f16 (or bf16) the library keeps its caches in that type:
the decodes read rounded keys and values, and the ids must still be
transformers' (f32) greedy ids.

Prints PASS or FAIL per check, ends with `N passed, M failed`; exit status
0 if all passed, 1 if any failed.
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fixture", required=True, help="gpt2 or llama")
    ap.add_argument("--attnc", required=True)
    ap.add_argument("--attn-run", required=True)
    ap.add_argument("--example", required=True, help="the built examples/generate")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--kv-cache", default="f32",
                    help="the caches' dtype (attnc --kv-cache): f16 and bf16 round the "
                         "keys and values the decodes read; the golden ids must still match")
    args = ap.parse_args(argv)
    fixture = os.path.join(HERE, "fixtures", args.fixture)
    weights = os.path.join(fixture, "model.safetensors")
    with open(os.path.join(fixture, "text_golden.json")) as f:
        golden = json.load(f)
    wd = os.path.join(args.workdir, "generate-" + args.fixture +
                      ("" if args.kv_cache == "f32" else "-" + args.kv_cache))
    os.makedirs(wd, exist_ok=True)
    lib = os.path.join(wd, "m.so")
    subprocess.run([args.attnc, fixture, "--kv-cache", args.kv_cache, "-o", lib], check=True)
    n = str(golden["max_new_tokens"])
    prompts = [",".join(str(i) for i in case["prompt_ids"]) for case in golden["cases"]]
    wants = [" ".join(str(i) for i in case["ids"]) for case in golden["cases"]]
    assert len({len(case["prompt_ids"]) for case in golden["cases"]}) > 1, \
        "the prompts are of one length: the batch would not be ragged"
    failed = passed = 0

    def tally(ok, what, detail=""):
        nonlocal failed, passed
        failed += not ok
        passed += ok
        print(f"{'PASS' if ok else 'FAIL'}: {args.fixture} {what}{'' if ok else detail}")

    for prompt, want in zip(prompts, wants):
        p = subprocess.run([args.example, lib, weights, n, prompt], capture_output=True,
                           text=True)
        got = p.stdout.strip()
        tally(p.returncode == 0 and got == want, f"examples/generate {prompt} -> {got}",
              f" (transformers: {want}) {p.stderr}")

    cmd = [args.attn_run, lib, "--weights", weights, "--generate", n, "--check"]
    for prompt in prompts:
        cmd += ["--prompt", prompt]
    p = subprocess.run(cmd, capture_output=True, text=True)
    lines = p.stdout.splitlines()
    got = [l[len("tokens: "):] for l in lines if l.startswith("tokens: ")]
    checks = [l for l in lines if l.startswith("check:")]
    tally(p.returncode == 0 and got == wants,
          f"attn-run --generate, {len(prompts)} prompts as one batch: {got}",
          f" (transformers: {wants}) {p.stdout}{p.stderr}")
    tally(len(checks) == len(prompts) and all(l.endswith(": ok") for l in checks),
          "attn-run --check: each sequence alone", "\n" + "\n".join(checks))
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
