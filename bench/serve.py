#!/usr/bin/env python3
"""Load on a running completions server (attnc-serve, docs/serving.md):
requests/s, generated tokens/s and p50/p99 latency at several
concurrencies, greedy, every request the same prompt and max_tokens, with
`ignore_eos`-free settings (a request may end early at an EOS: tokens/s
counts the tokens the answers hold). Standard library only.

  attnc-serve hf/gpt2 --replicas 1 --threads 2 --max-batch 32 --port 8000 &
  python bench/serve.py --url http://127.0.0.1:8000 --model gpt2 --concurrency 1 8 32 128

Not yet here: the same deployment serving the Hugging Face model in
PyTorch (issue 24's comparison); point --url at such a server to measure it
the same way."""

import argparse
import concurrent.futures
import json
import statistics
import time
import urllib.request


def post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    start = time.perf_counter()
    with urllib.request.urlopen(req, timeout=600) as r:
        answer = json.loads(r.read())
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


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", default="http://127.0.0.1:8000")
    p.add_argument("--model", default=None)
    p.add_argument("--prompt", default="The quick brown fox jumps over the lazy dog")
    p.add_argument("--max-tokens", type=int, default=32)
    p.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32, 128])
    p.add_argument("--requests", type=int, default=0,
                   help="requests per level (default: 8 x concurrency, at least 32)")
    p.add_argument("--json", action="store_true", help="one JSON line per level")
    args = p.parse_args()
    url = args.url.rstrip("/") + "/v1/completions"
    body = {"prompt": args.prompt, "max_tokens": args.max_tokens, "temperature": 0}
    if args.model:
        body["model"] = args.model
    first, _ = post(url, body)
    print(f"first request: {1000 * first:.1f} ms")
    base = None
    for c in args.concurrency:
        r = level(url, body, c, args.requests or max(32, 8 * c))
        base = base or r["tokens_per_s"]
        if args.json:
            print(json.dumps(r))
        else:
            print(f"concurrency {c:4d}: {r['requests_per_s']:8.2f} req/s "
                  f"{r['tokens_per_s']:9.1f} tok/s ({r['tokens_per_s'] / base:5.2f}x c={args.concurrency[0]}) "
                  f"p50 {r['p50_ms']:8.2f} ms  p99 {r['p99_ms']:8.2f} ms")


if __name__ == "__main__":
    main()
