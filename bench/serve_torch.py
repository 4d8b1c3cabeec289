#!/usr/bin/env python3
"""The PyTorch peer of attnc-serve for bench/serve.py (issue 24's comparison):
the same Ray Serve, serving the same Hugging Face decoder directory in
PyTorch (transformers' AutoModelForCausalLM.generate, greedy or sampled),
concurrent requests batched by Ray Serve's @serve.batch (at most
--max-batch, one batch generating at a time, the next forming meanwhile),
one replica with --threads torch threads. It answers the subset of
attnc-serve's POST /v1/completions that bench/serve.py sends (prompt text
or ids, max_tokens, temperature 0) in the same shape (each choice's
token_ids), and GET /v2/health/ready.

Needs torch, transformers and ray[serve] in the Python that runs it (not
attnc's venv, which has no torch):

  python bench/serve_torch.py DIR --threads 2 --max-batch 32 --port 8001

It prints `serve_torch: ready at http://HOST:PORT` once the model is loaded
and serves until SIGTERM or Ctrl-C."""

import argparse
import asyncio
import os
import signal
import threading


def build(path, threads, max_batch, wait_s):
    import torch
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse
    from ray import serve

    api = FastAPI()

    @serve.deployment(num_replicas=1, ray_actor_options={"num_cpus": threads},
                      max_ongoing_requests=4 * max_batch)
    @serve.ingress(api)
    class TorchGPT:
        def __init__(self):
            import transformers
            torch.set_num_threads(threads)
            self.model = transformers.AutoModelForCausalLM.from_pretrained(path).eval()
            gen = self.model.generation_config
            eos = gen.eos_token_id
            self.eos = set(eos if isinstance(eos, list) else [] if eos is None else [eos])
            self.pad = gen.pad_token_id if gen.pad_token_id is not None else (
                min(self.eos) if self.eos else 0)
            tok = os.path.join(path, "tokenizer.json")
            self.tokenizer = None
            if os.path.isfile(tok):
                from tokenizers import Tokenizer
                self.tokenizer = Tokenizer.from_file(tok)
            self.batches = []

        @api.get("/v2/health/ready")
        async def ready(self):
            return {"ready": True}

        @api.get("/stats")
        async def stats(self):
            n = len(self.batches)
            return {"batches": n, "mean_batch": sum(self.batches) / n if n else 0,
                    "max_batch": max(self.batches, default=0)}

        @serve.batch(max_batch_size=max_batch, batch_wait_timeout_s=wait_s)
        async def generate(self, items):
            return await asyncio.to_thread(self._generate, items)

        def _generate(self, items):
            # items: (ids, max_tokens); one generate per max_tokens (greedy only)
            self.batches.append(len(items))
            out = [None] * len(items)
            groups = {}
            for i, (ids, max_tokens) in enumerate(items):
                groups.setdefault(max_tokens, []).append(i)
            for max_tokens, idx in groups.items():
                width = max(len(items[i][0]) for i in idx)
                ids = torch.full((len(idx), width), self.pad, dtype=torch.long)
                mask = torch.zeros((len(idx), width), dtype=torch.long)
                for row, i in enumerate(idx):        # left padding
                    p = items[i][0]
                    ids[row, width - len(p):] = torch.tensor(p)
                    mask[row, width - len(p):] = 1
                with torch.inference_mode():
                    gen = self.model.generate(ids, attention_mask=mask, do_sample=False,
                                              max_new_tokens=max_tokens, pad_token_id=self.pad)
                for row, i in enumerate(idx):
                    new = gen[row, width:].tolist()
                    for k, t in enumerate(new):          # keep the EOS, as attnc-serve
                        if t in self.eos:
                            new = new[:k + 1]
                            break
                    out[i] = new
            return out

        @api.post("/v1/completions")
        async def completions(self, request: Request):
            body = await request.json()
            prompt = body.get("prompt")
            if isinstance(prompt, str):
                if self.tokenizer is None:
                    return JSONResponse({"error": {"message": "no tokenizer: give ids"}}, 400)
                prompt = self.tokenizer.encode(prompt).ids
            if float(body.get("temperature", 1.0)) != 0:
                return JSONResponse({"error": {"message": "greedy only (temperature 0)"}}, 400)
            max_tokens = int(body.get("max_tokens", 16))
            ids = await self.generate((list(prompt), max_tokens))
            text = self.tokenizer.decode(ids, skip_special_tokens=True) if self.tokenizer else ""
            return {"object": "text_completion", "model": body.get("model"),
                    "choices": [{"index": 0, "text": text, "token_ids": ids,
                                 "finish_reason": "stop" if ids and ids[-1] in self.eos
                                 and len(ids) < max_tokens else "length"}],
                    "usage": {"prompt_tokens": len(prompt), "completion_tokens": len(ids)}}

    return TorchGPT.bind()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model", help="a Hugging Face decoder directory")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--max-batch", type=int, default=8)
    p.add_argument("--batch-wait-ms", type=float, default=2.0)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8001)
    args = p.parse_args()
    import ray
    from ray import serve
    ray.init(logging_level="WARNING", log_to_driver=False, configure_logging=True)
    serve.start(http_options={"host": args.host, "port": args.port})
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    serve.run(build(os.path.abspath(args.model), args.threads, args.max_batch,
                    args.batch_wait_ms / 1000), name="torch", route_prefix="/")
    print(f"serve_torch: ready at http://{args.host}:{args.port}", flush=True)
    stop.wait()
    serve.shutdown()
    ray.shutdown()


if __name__ == "__main__":
    main()
