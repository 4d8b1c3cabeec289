#!/usr/bin/env python3
"""Load on a running completions server (attnc-serve, docs/serving.md):
requests/s, generated tokens/s and p50/p99 latency at several
concurrencies, greedy, every request the same prompt and max_tokens, with
`ignore_eos`-free settings (a request may end early at an EOS: tokens/s
counts the tokens the answers hold). Standard library only.

  attnc-serve hf/gpt2 --replicas 1 --threads 2 --max-batch 32 --port 8000 &
  python bench/serve.py --url http://127.0.0.1:8000 --model gpt2 --concurrency 1 8 32 128

Or, in one run, both sides of issue 24's comparison: attnc-serve and the
same Ray Serve serving the same Hugging Face directory in PyTorch
(bench/serve_torch.py, run by a Python with torch, transformers and
ray[serve]), each started here in turn, their greedy ids for the prompt
compared, then measured the same way (a directory without tokenizer.json
is sent --prompt-ids):

  python bench/serve.py --compare hf/gpt2 --torch-python /tmp/golden-venv/bin/python \
      --threads 2 --max-batch 32 --max-context 128 --concurrency 1 8 32 128 --rounds 2"""

import argparse
import concurrent.futures
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
# GPT-2's ids of "The quick brown fox jumps over the lazy dog"
DEFAULT_IDS = [464, 2068, 7586, 21831, 18045, 625, 262, 16931, 3290]


def post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    start = time.perf_counter()
    try:
        with urllib.request.urlopen(req, timeout=600) as r:
            answer = json.loads(r.read())
    except urllib.error.HTTPError as e:
        raise SystemExit(f"{url}: HTTP {e.code}: {e.read().decode(errors='replace')[:500]}")
    return time.perf_counter() - start, len(answer["choices"][0]["token_ids"])


def level(url, body, concurrency, requests):
    with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
        post(url, body)                                   # warm
        start = time.perf_counter()
        results = list(pool.map(lambda _: post(url, body), range(requests)))
        wall = time.perf_counter() - start
    latency = sorted(r[0] for r in results)
    tokens = sum(r[1] for r in results)
    return {"concurrency": concurrency, "requests": requests, "wall_s": round(wall, 3),
            "requests_per_s": round(requests / wall, 2), "tokens_per_s": round(tokens / wall, 1),
            "p50_ms": round(1000 * statistics.median(latency), 2),
            "p99_ms": round(1000 * latency[min(len(latency) - 1, int(0.99 * len(latency)))], 2)}


def measure(url, body, levels, requests, as_json, label="", rounds=8):
    url = url.rstrip("/") + "/v1/completions"
    first, _ = post(url, body)
    print(f"{label}first request: {1000 * first:.1f} ms", flush=True)
    base, rows = None, []
    for c in levels:
        r = level(url, body, c, requests or max(32, rounds * c))
        base = base or r["tokens_per_s"]
        r["vs_first_level"] = round(r["tokens_per_s"] / base, 2)
        rows.append(r)
        if as_json:
            print(json.dumps(dict(r, server=label.strip(": ") or None)), flush=True)
        else:
            print(f"{label}concurrency {c:4d}: {r['requests_per_s']:8.2f} req/s "
                  f"{r['tokens_per_s']:9.1f} tok/s ({r['vs_first_level']:5.2f}x c={levels[0]}) "
                  f"p50 {r['p50_ms']:8.2f} ms  p99 {r['p99_ms']:8.2f} ms", flush=True)
    return rows


def get(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status
    except Exception:  # noqa: BLE001 - not up yet
        return None


class Server:
    """A server process started here, ready once GET ready_url answers 200."""

    def __init__(self, name, argv, base_url, log):
        self.name, self.base_url = name, base_url
        self.log = open(log, "w")
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        print(f"{name}: {' '.join(argv)}  (log {log})", flush=True)

    def wait_ready(self, timeout=600):
        start = time.time()
        while time.time() - start < timeout:
            if self.proc.poll() is not None:
                raise SystemExit(f"{self.name} exited ({self.proc.returncode}): see {self.log.name}")
            if get(self.base_url + "/v2/health/ready") == 200:
                print(f"{self.name}: ready after {time.time() - start:.1f} s", flush=True)
                return
            time.sleep(1)
        raise SystemExit(f"{self.name}: not ready after {timeout} s: see {self.log.name}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()                  # SIGTERM: both drain, then stop Ray
            try:
                self.proc.wait(90)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def compare(args, body):
    model = os.path.abspath(args.compare)
    torch_python = args.torch_python
    if not torch_python:
        raise SystemExit("--compare needs --torch-python: a Python with torch, transformers "
                         "and ray[serve] for bench/serve_torch.py")
    name = os.path.basename(model.rstrip("/"))
    url = f"http://127.0.0.1:{args.port}"
    logdir = args.log_dir
    os.makedirs(logdir, exist_ok=True)
    sides = [
        ("attnc", [sys.executable, "-m", "attnc.serve", model, "--replicas", "1",
                   "--threads", str(args.threads), "--max-batch", str(args.max_batch),
                   "--port", str(args.port)]
         + (["--max-context", str(args.max_context)] if args.max_context else [])),
        ("torch", [torch_python, os.path.join(HERE, "serve_torch.py"), model,
                   "--threads", str(args.threads), "--max-batch", str(args.max_batch),
                   "--port", str(args.port)]),
    ]
    print(f"model {model}; prompt {body['prompt']!r}; max_tokens {body['max_tokens']}, greedy; "
          f"{args.threads} threads, max batch {args.max_batch}, 1 replica", flush=True)
    print(f"attnc side: {sys.executable}; torch side: {torch_python}", flush=True)
    results, ids = {}, {}
    for side, argv in sides:
        server = Server(side, argv, url, os.path.join(logdir, f"{side}.log"))
        try:
            server.wait_ready()
            req = urllib.request.Request(url + "/v1/completions", data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=600) as r:
                ids[side] = json.loads(r.read())["choices"][0]["token_ids"]
            print(f"{side}: greedy ids {ids[side]}", flush=True)
            results[side] = measure(url, body, args.concurrency, args.requests, args.json,
                                    f"{side}: ", args.rounds)
            stats = url + (f"/v2/models/{name}/stats" if side == "attnc" else "/stats")
            try:
                with urllib.request.urlopen(stats, timeout=10) as r:
                    print(f"{side}: replica stats {r.read().decode()[:400]}", flush=True)
            except Exception as e:  # noqa: BLE001 - informative only
                print(f"{side}: no stats ({e})", flush=True)
        finally:
            server.stop()
    same = ids["attnc"] == ids["torch"]
    if same:
        print("outputs: the same greedy ids from both servers", flush=True)
    else:
        k = next((k for k, (a, b) in enumerate(zip(ids["attnc"], ids["torch"])) if a != b),
                 min(len(ids["attnc"]), len(ids["torch"])))
        print(f"outputs: DIFFER from token {k} (attnc {ids['attnc'][k:k + 4]}, "
              f"torch {ids['torch'][k:k + 4]})", flush=True)
    print()
    print(f"| server | concurrency | requests | req/s | gen tok/s | x c={args.concurrency[0]} "
          f"| p50 ms | p99 ms |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for side in ("attnc", "torch"):
        for r in results[side]:
            print(f"| {side} | {r['concurrency']} | {r['requests']} | {r['requests_per_s']:.2f} "
                  f"| {r['tokens_per_s']:.1f} | {r['vs_first_level']:.2f} | {r['p50_ms']:.0f} "
                  f"| {r['p99_ms']:.0f} |")
    for c in args.concurrency:
        a = next(r for r in results["attnc"] if r["concurrency"] == c)
        t = next(r for r in results["torch"] if r["concurrency"] == c)
        print(f"concurrency {c}: attnc/torch generated tok/s {a['tokens_per_s'] / t['tokens_per_s']:.2f}x")
    return 0 if same else 1


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", default="http://127.0.0.1:8000")
    p.add_argument("--model", default=None)
    p.add_argument("--prompt", default="The quick brown fox jumps over the lazy dog")
    p.add_argument("--prompt-ids", type=int, nargs="+", default=None,
                   help="send these token ids instead of --prompt (a model without a tokenizer; "
                        "--compare's default there: GPT-2's ids of the default prompt)")
    p.add_argument("--max-tokens", type=int, default=32)
    p.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32, 128])
    p.add_argument("--requests", type=int, default=0,
                   help="requests per level (default: --rounds x concurrency, at least 32)")
    p.add_argument("--rounds", type=int, default=8,
                   help="requests per level are this many times the concurrency (at least 32)")
    p.add_argument("--json", action="store_true", help="one JSON line per level")
    p.add_argument("--compare", metavar="HF_DIR", default=None,
                   help="start attnc-serve, then bench/serve_torch.py, on this Hugging Face "
                        "directory, one after the other, and measure both (ignores --url)")
    p.add_argument("--torch-python", default=os.environ.get("ATTNC_TORCH_PYTHON"),
                   help="--compare: the Python that runs bench/serve_torch.py "
                        "(default $ATTNC_TORCH_PYTHON)")
    p.add_argument("--threads", type=int, default=2, help="--compare: threads of the replica")
    p.add_argument("--max-batch", type=int, default=32, help="--compare: max batch")
    p.add_argument("--max-context", type=int, default=None,
                   help="--compare: attnc-serve's --max-context (KV cache rows)")
    p.add_argument("--port", type=int, default=8000, help="--compare: the servers' port")
    p.add_argument("--log-dir", default="/tmp/attnc-bench-serve",
                   help="--compare: the servers' logs")
    args = p.parse_args()
    prompt = args.prompt_ids
    if prompt is None and args.compare and not os.path.isfile(
            os.path.join(args.compare, "tokenizer.json")):
        prompt = DEFAULT_IDS
    body = {"prompt": prompt if prompt is not None else args.prompt,
            "max_tokens": args.max_tokens, "temperature": 0}
    if args.model:
        body["model"] = args.model
    if args.compare:
        cpu = platform.processor() or "?"
        try:
            cpu = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                       if line.startswith("model name"))
        except (OSError, StopIteration):
            pass
        print(f"{cpu}, {os.cpu_count()} CPUs; {time.strftime('%Y-%m-%d %H:%M %Z')}", flush=True)
        return compare(args, body)
    measure(args.url, body, args.concurrency, args.requests, args.json, rounds=args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
