"""attnc-serve: attnc models behind HTTP on Ray Serve (docs/serving.md).

    attnc-serve DIR_OR_LIB [DIR_OR_LIB ...] [--weights W] [--name NAME]
                [--replicas N] [--threads T] [--max-batch B] [--port P] [--host H]
                [--address RAY_ADDRESS]

Each model is a Hugging Face directory (imported and compiled into
attnc.from_pretrained's cache, read with its tokenizer) or a compiled
library (with --weights where it reads them at load). attnc-serve starts a
local Ray, or joins the cluster at --address (`ray start --head` there), and
deploys one Ray Serve application:

  router      one ingress (FastAPI) that checks every request against the
              model (malformed JSON, an unknown model, a wrong dtype or
              shape, a prompt over the context, a non-positive max_tokens:
              each a 4xx with a message) before a replica sees it;
  model-NAME  N replicas per model, each loading the library once with T
              threads; a replica is ready once its weights are loaded.
              Tensor requests (KServe v2) of one shape but the batch dim
              that arrive together run as one batch (@serve.batch);
              decoders batch continuously (attnc.batching): one decode
              loop per replica, sequences joining and leaving between
              steps, at most B at once.

Endpoints: KServe v2 (/v2/health/live, /v2/health/ready, /v2/models/NAME,
/v2/models/NAME/ready, POST /v2/models/NAME/infer) for every model; for
decoders OpenAI's POST /v1/completions (stream: server-sent events) and
GET /v1/models."""

import argparse
import asyncio
import json
import os
import signal
import sys
import threading

import numpy as np

from . import protocol
from .protocol import RequestError

APP = "attnc"


# ------------------------------------------------------------------ specs


def resolve(paths, weights=(), names=(), max_context=None, cache_dir=None, tokenizer=None,
            kv_cache=None):
    """The model specs (dicts) of the command line's models: a Hugging Face
    directory is compiled here (attnc.from_pretrained's cache, with
    --max-context and --kv-cache), so every replica only loads it; a
    library takes the next --weights."""
    from .pretrained import _compiled, _eos_ids, _options, _weights
    weights, names = list(weights), list(names)
    specs = []
    for i, path in enumerate(paths):
        path = os.path.abspath(path)
        if os.path.isdir(path):
            if not os.path.isfile(os.path.join(path, "config.json")):
                raise SystemExit(f"attnc-serve: {path}: no config.json: give a Hugging Face "
                                 "model directory or a compiled library")
            if not _weights(path):
                raise SystemExit(f"attnc-serve: {path}: no model.safetensors")
            cache = cache_dir or os.environ.get("ATTNC_CACHE_DIR") or os.path.join(
                os.path.expanduser("~"), ".cache", "attnc")
            lib = _compiled(path, cache, _options(max_context, kv_cache))
            tok = os.path.join(path, "tokenizer.json")
            spec = {"library": lib, "weights": _weights(path),
                    "tokenizer": tok if os.path.isfile(tok) else None, "eos": _eos_ids(path),
                    "name": os.path.basename(path.rstrip("/"))}
        elif os.path.isfile(path):
            w = weights.pop(0) if weights else None
            spec = {"library": path, "weights": os.path.abspath(w) if w else None,
                    "tokenizer": os.path.abspath(tokenizer) if tokenizer else None, "eos": [],
                    "name": os.path.splitext(os.path.basename(path))[0]}
        else:
            raise SystemExit(f"attnc-serve: {path}: no such directory or library")
        if i < len(names):
            spec["name"] = names[i]
        spec["max_context"] = max_context
        specs.append(spec)
    seen = set()
    for spec in specs:
        if spec["name"] in seen:
            raise SystemExit(f"attnc-serve: two models are named '{spec['name']}': give --name "
                             "for each")
        seen.add(spec["name"])
    return specs


def _tokenizer(spec):
    if not spec.get("tokenizer"):
        return None
    from tokenizers import Tokenizer
    return Tokenizer.from_file(spec["tokenizer"])


def _decode_fn(tokenizer):
    if tokenizer is None:
        return None
    return lambda ids: tokenizer.decode(list(ids), skip_special_tokens=True)


# ------------------------------------------------------------------ replica


class ModelReplica:
    """One replica of a model: the library loaded once (its weights read
    before the replica reports ready), a decode loop for a decoder."""

    def __init__(self, spec, threads=1, max_batch=8):
        import attnc
        from .batching import Batcher
        self.spec = spec
        self.model = attnc.load(spec["library"], weights=spec["weights"], threads=threads)
        self.tokenizer = _tokenizer(spec)
        self.decode_text = _decode_fn(self.tokenizer)
        self.meta = protocol.describe(spec["name"], self.model, self.tokenizer is not None,
                                      spec["eos"], spec.get("max_context"))
        self.batcher = None
        if self.meta["decoder"]:
            self.batcher = Batcher(self.model, max_batch=max_batch,
                                   capacity=spec.get("max_context"))
            self.meta["context"] = self.batcher.capacity
        self.batchable = _batch_symbol(self.meta)
        self.runs = self.requests = self.largest_run = 0
        self.metrics = None

    async def metadata(self):
        return self.meta

    async def check_health(self):
        if self.batcher is not None and not self.batcher.thread.is_alive():
            raise RuntimeError("the decode loop has stopped")

    async def stats(self):
        """This replica's counters: tensor runs, the requests they served,
        the most requests one run joined; a decoder's decode loop's."""
        out = {"infer_runs": self.runs, "infer_requests": self.requests,
               "infer_largest_run": self.largest_run}
        if self.batcher:
            out.update(self.batcher.stats())
        return out

    def _count(self, joined):
        self.runs += 1
        self.requests += joined
        self.largest_run = max(self.largest_run, joined)
        if self.metrics:
            self.metrics.infer(joined)

    def start_metrics(self):
        """Records attnc's metrics with Ray's (exported by each node's
        metrics agent; the router's /metrics gathers them)."""
        self.metrics = _Metrics(self.meta["name"], self.batcher)

    # -- tensors

    async def infer(self, requests):
        """Runs a batch of requests (name -> array): those of one shape but
        the batch dim as one run, each of the others alone. Each result is
        a dict of outputs or ("error", status, message)."""
        results = [None] * len(requests)
        groups = {}
        for i, arrays in enumerate(requests):
            groups.setdefault(_shape_key(arrays, self.batchable), []).append(i)
        for key, members in groups.items():
            if key is not None and len(members) > 1:
                try:
                    joined = {n: np.concatenate([requests[i][n] for i in members])
                              for n in requests[members[0]]}
                    out = await asyncio.to_thread(self.model.run, joined)
                    self._count(len(members))
                    start = 0
                    for i in members:
                        b = next(iter(requests[i].values())).shape[0]
                        results[i] = {n: np.ascontiguousarray(a[start:start + b])
                                      for n, a in out.items()}
                        start += b
                    continue
                except Exception:  # noqa: BLE001 - each alone names its own fault
                    pass
            for i in members:
                results[i] = await self._run_one(requests[i])
        return results

    async def _run_one(self, arrays):
        import attnc
        self._count(1)
        try:
            return await asyncio.to_thread(self.model.run, arrays)
        except (attnc.ArgumentError, attnc.ShapeError, attnc.DTypeError) as e:
            return ("error", 400, str(e))
        except Exception as e:  # noqa: BLE001
            return ("error", 500, f"{type(e).__name__}: {e}")

    # -- generation

    async def generate(self, request):
        """Generates after one prompt (ids), yielding dicts: with `stream`,
        {"text", "token_ids"} per new id and a last one with
        "finish_reason"; without, one dict with all of them. An error is
        {"error": message}."""
        from .batching import Sequence, sampling_config
        from .pretrained import StopStrings
        loop = asyncio.get_running_loop()
        events = asyncio.Queue()
        stops = request["stop"]
        stop_when = None
        if stops:
            strings = StopStrings(self.decode_text, [request["prompt"]], stops)
            stop_when = lambda generated: strings(0, generated)  # noqa: E731
        seq = Sequence(request["prompt"], request["max_tokens"],
                       sampling_config(request["temperature"], request["top_k"],
                                       request["top_p"], request["repetition_penalty"]),
                       request["seed"], self.meta["eos"],
                       lambda ev: loop.call_soon_threadsafe(events.put_nowait, ev), stop_when)
        text = protocol.TextOut(self.decode_text, stops)
        try:
            self.batcher.submit(seq)
        except (ValueError, RuntimeError) as e:
            yield {"error": str(e)}
            return
        ids = []
        try:
            while True:
                kind, value = await events.get()
                if kind == "token":
                    ids.append(value)
                    piece = text.feed(value)
                    if request["stream"]:
                        yield {"text": piece, "token_ids": [value]}
                elif kind == "done":
                    piece = text.finish()
                    if request["stream"]:
                        yield {"text": piece, "token_ids": [], "finish_reason": value}
                    else:
                        yield {"text": text.text, "token_ids": ids, "finish_reason": value}
                    return
                else:
                    yield {"error": value}
                    return
        finally:
            seq.cancelled = True       # a client gone: its row leaves the batch

    async def complete(self, request):
        """generate() unstreamed, as one unary call (cheaper through Ray
        Serve than a stream of one item)."""
        async for item in self.generate(dict(request, stream=False)):
            return item


class _Metrics:
    """attnc's Prometheus metrics of one replica (ray.util.metrics):
    generated tokens, the decode loop's queue depth, active sequences and
    batch sizes, tensor requests and the batches they ran in. A task
    samples the decode loop every `period` seconds."""

    BATCHES = [1, 2, 4, 8, 16, 32, 64, 128, 256]

    def __init__(self, model, batcher, period=1.0):
        from ray.util import metrics
        tags = ("model",)
        self.tags = {"model": model}
        self.tokens = metrics.Counter("attnc_generated_tokens", "tokens generated", tags)
        self.rate = metrics.Gauge("attnc_generated_tokens_per_second",
                                  "tokens generated per second over the last period", tags)
        self.queue = metrics.Gauge("attnc_queue_depth",
                                   "sequences waiting to join the decode batch", tags)
        self.active = metrics.Gauge("attnc_active_sequences", "sequences being decoded", tags)
        self.decode_batch = metrics.Histogram("attnc_decode_batch_size",
                                              "sequences per decode step", self.BATCHES, tags)
        self.requests = metrics.Counter("attnc_infer_requests", "tensor requests run", tags)
        self.infer_batch = metrics.Histogram("attnc_infer_batch_size",
                                             "tensor requests per run", self.BATCHES, tags)
        for m in (self.tokens, self.rate, self.queue, self.active, self.decode_batch,
                  self.requests, self.infer_batch):
            m.set_default_tags(self.tags)
        self.batcher, self.period = batcher, period
        if batcher is not None:
            self.task = asyncio.get_running_loop().create_task(self._sample())

    def infer(self, joined):
        self.requests.inc(joined)
        self.infer_batch.observe(joined)

    async def _sample(self):
        last = self.batcher.stats()["tokens"]
        while True:
            await asyncio.sleep(self.period)
            stats = self.batcher.stats()
            new = stats["tokens"] - last
            last = stats["tokens"]
            if new:
                self.tokens.inc(new)
            self.rate.set(new / self.period)
            self.queue.set(stats["waiting"])
            self.active.set(stats["active"])
            for n in self.batcher.take_sizes():
                self.decode_batch.observe(n)


def _batch_symbol(meta):
    """The batch dim's symbol when every input and output leads with it (so
    requests join along dim 0), else None."""
    firsts = [t["dims"][0] if t["dims"] else {} for t in meta["inputs"] + meta["outputs"]]
    if not firsts or any("symbol" not in d for d in firsts):
        return None
    symbols = {d["symbol"] for d in firsts}
    return symbols.pop() if len(symbols) == 1 else None


def _shape_key(arrays, batchable):
    if batchable is None:
        return None
    return tuple(sorted((n, a.shape[1:]) for n, a in arrays.items()))


# ------------------------------------------------------------------ router


# A request whose replica died before it answered goes to another this many
# times (a run or a generation has no effect but its answer), then is
# answered 503 with the cause.
RETRIES = 2


def _replica_lost(e):
    from ray.exceptions import ActorUnavailableError, RayActorError
    from ray.serve.exceptions import ReplicaUnavailableError
    return isinstance(e, (RayActorError, ActorUnavailableError, ReplicaUnavailableError))


def _failure(e):
    """A RequestError naming what went wrong in a replica."""
    text = str(e).strip().splitlines()
    cause = f"{type(e).__name__}: {text[0] if text else ''}"[:400]
    if _replica_lost(e):
        return RequestError(503, f"the model's replica died before it answered ({cause}); "
                                 "Ray Serve restarts it: try again")
    return RequestError(500, f"the model's replica failed: {cause}")


async def _with_retries(call):
    """await call() (a new remote call each time), again on a lost replica."""
    for attempt in range(RETRIES + 1):
        try:
            return await call()
        except RequestError:
            raise
        except Exception as e:  # noqa: BLE001
            if attempt < RETRIES and _replica_lost(e):
                continue
            raise _failure(e) from None


class Router:
    """The HTTP ingress: checks requests, then hands them to the model's
    replicas. `models`: name -> DeploymentHandle; `specs`: name -> spec."""

    def __init__(self, models, specs):
        self.models = models
        self.specs = specs
        self.meta = {}
        self.tokenizers = {n: _tokenizer(s) for n, s in specs.items()}
        self.in_flight = 0             # POSTs being answered (streams until their end)
        self.draining = False

    def _admit(self):
        """Counts a request in, or refuses it while draining."""
        if self.draining:
            raise RequestError(503, "the server is shutting down")
        self.in_flight += 1

    async def drain(self, timeout=30.0):
        """SIGTERM's first step: new requests get 503 (and readiness 503)
        while those in flight finish; returns how many were left at
        `timeout`."""
        self.draining = True
        deadline = asyncio.get_running_loop().time() + timeout
        while self.in_flight and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.05)
        return self.in_flight

    async def _meta(self, name):
        if name not in self.models:
            raise RequestError(404, f"no model '{name}': this server has "
                                    f"{', '.join(sorted(self.models))}")
        if name not in self.meta:
            self.meta[name] = await _with_retries(lambda: self.models[name].metadata.remote())
        return self.meta[name]

    async def ready(self):
        if self.draining:
            return False
        try:
            for name in self.models:
                await self._meta(name)
        except Exception:  # noqa: BLE001
            return False
        return True

    async def infer(self, name, body):
        meta = await self._meta(name)
        arrays, wanted, rid = protocol.parse_infer(meta, protocol.parse_json(body))
        result = await _with_retries(lambda: self.models[name].infer.remote(arrays))
        if isinstance(result, tuple):
            raise RequestError(result[1], result[2])
        return protocol.infer_response(meta, result, wanted, rid)

    async def completion_request(self, body):
        body = protocol.parse_json(body)
        name = body.get("model")
        decoders = [n for n in self.models if (await self._meta(n))["decoder"]]
        if name is None and len(decoders) == 1:
            name = decoders[0]
        if not isinstance(name, str):
            raise RequestError(400, "'model' must name a model: this server has "
                                    f"{', '.join(decoders) or 'no decoders'}")
        meta = await self._meta(name)
        if not meta["decoder"]:
            raise RequestError(400, f"model '{name}' does not generate (it has no KV caches); "
                                    f"use /v2/models/{name}/infer")
        tok = self.tokenizers.get(name)
        encode = (lambda text: tok.encode(text).ids) if tok is not None else None
        return name, protocol.parse_completion(meta, body, encode)

    def _sequences(self, name, req):
        """Per prompt, a function making its generation's remote call (a
        stream of dicts)."""
        handle = self.models[name].options(stream=True)

        def call(one):
            return lambda: handle.generate.remote(one)
        for prompt in req["prompts"]:
            one = dict(req, prompt=prompt)
            del one["prompts"]
            yield call(one)

    async def complete(self, name, req):
        handle = self.models[name]

        def call(prompt):
            one = dict(req, prompt=prompt)
            del one["prompts"]
            return lambda: handle.complete.remote(one)
        results = await asyncio.gather(*(_with_retries(call(p)) for p in req["prompts"]))
        for r in results:
            if r is None or "error" in r:
                raise RequestError(500, (r or {}).get("error", "a replica ended the sequence "
                                                               "without an answer"))
        return protocol.completion_response(protocol.completion_id(), name, results,
                                            sum(len(p) for p in req["prompts"]))

    async def _counted(self, events):
        try:
            async for event in events:
                yield event
        finally:
            self.in_flight -= 1

    async def stream(self, name, req):
        cid = protocol.completion_id()
        queue = asyncio.Queue()
        starts = list(self._sequences(name, req))

        async def pump(index, start):
            sent = False
            for attempt in range(RETRIES + 1):
                try:
                    async for item in start():
                        sent = True
                        await queue.put((index, item))
                    break
                except Exception as e:  # noqa: BLE001 - retried until a token went out
                    if sent or attempt == RETRIES or not _replica_lost(e):
                        await queue.put((index, {"error": _failure(e).message}))
                        break
            await queue.put((index, None))

        tasks = [asyncio.create_task(pump(i, s)) for i, s in enumerate(starts)]
        try:
            left = len(tasks)
            while left:
                index, item = await queue.get()
                if item is None:
                    left -= 1
                elif "error" in item:
                    yield f"data: {json.dumps({'error': {'message': item['error']}})}\n\n"
                else:
                    yield protocol.completion_chunk(cid, name, index, item["text"],
                                                    item["token_ids"],
                                                    item.get("finish_reason"))
            yield "data: [DONE]\n\n"
        finally:
            for t in tasks:
                t.cancel()


async def _cluster_metrics():
    """The Prometheus text of every alive node's metrics agent, each metric's
    HELP and TYPE once."""
    import urllib.request

    import ray

    def fetch(url):
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                return r.read().decode(errors="replace")
        except OSError as e:
            return f"# attnc-serve: {url}: {e}\n"

    urls = [f"http://{n['NodeManagerAddress']}:{n['MetricsExportPort']}/metrics"
            for n in ray.nodes() if n.get("Alive") and n.get("MetricsExportPort")]
    texts = await asyncio.gather(*(asyncio.to_thread(fetch, u) for u in urls))
    return merge_prometheus(texts)


def merge_prometheus(texts):
    """Prometheus texts joined family by family: each metric's HELP and
    TYPE once, then the samples of every text (an exporter writes a
    family's samples after its HELP and TYPE)."""
    families, order, loose = {}, [], []
    for text in texts:
        current = None
        for line in text.splitlines():
            if line.startswith(("# HELP ", "# TYPE ")):
                parts = line.split(" ", 3)
                current = parts[2]
                if current not in families:
                    families[current] = {"HELP": None, "TYPE": None, "samples": []}
                    order.append(current)
                families[current].setdefault(parts[1], None)
                if families[current][parts[1]] is None:
                    families[current][parts[1]] = line
            elif line.startswith("#") or not line.strip():
                if line.startswith("# attnc-serve"):
                    loose.append(line)
            elif current is None:
                loose.append(line)
            else:
                families[current]["samples"].append(line)
    out = list(loose)
    for name in order:
        f = families[name]
        out += [x for x in (f["HELP"], f["TYPE"]) if x] + f["samples"]
    return "\n".join(out) + "\n"


def build_app(specs, replicas=1, threads=1, max_batch=8, replica_cpus=None):
    """The Ray Serve application of `specs`."""
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse, StreamingResponse
    from ray import serve

    app = FastAPI(title="attnc-serve")

    def kserve_error(e):
        return JSONResponse({"error": e.message}, status_code=e.status)

    def openai_error(e):
        return JSONResponse({"error": {"message": e.message,
                                       "type": "invalid_request_error" if e.status < 500
                                       else "server_error", "code": e.status}},
                            status_code=e.status)

    @serve.deployment(name="router", max_ongoing_requests=4096,
                      ray_actor_options={"num_cpus": 0})
    @serve.ingress(app)
    class Ingress(Router):
        @app.get("/v2/health/live")
        async def live(self):
            return {"live": True}

        @app.get("/v2/health/ready")
        async def health_ready(self):
            ok = await self.ready()
            return JSONResponse({"ready": ok}, status_code=200 if ok else 503)

        @app.get("/v2/models/{name}")
        async def model_metadata(self, name: str):
            try:
                return protocol.kserve_metadata(await self._meta(name))
            except RequestError as e:
                return kserve_error(e)

        @app.get("/v2/models/{name}/ready")
        async def model_ready(self, name: str):
            try:
                await self._meta(name)
            except RequestError as e:
                return kserve_error(e)
            return {"name": name, "ready": True}

        @app.post("/v2/models/{name}/infer")
        async def model_infer(self, name: str, request: Request):
            try:
                self._admit()
            except RequestError as e:
                return kserve_error(e)
            try:
                return await self.infer(name, await request.body())
            except RequestError as e:
                return kserve_error(e)
            except Exception as e:  # noqa: BLE001 - a 500 with its cause, never a bare one
                return kserve_error(_failure(e))
            finally:
                self.in_flight -= 1

        @app.get("/v2/models/{name}/stats")
        async def model_stats(self, name: str):
            """The counters of the replica that answers (attnc's own)."""
            try:
                await self._meta(name)
            except RequestError as e:
                return kserve_error(e)
            return await self.models[name].stats.remote()

        @app.get("/metrics")
        async def metrics(self):
            """Prometheus text: every node's Ray metrics (Serve's and
            attnc's own, attnc_*)."""
            from fastapi.responses import PlainTextResponse
            return PlainTextResponse(await _cluster_metrics(),
                                     media_type="text/plain; version=0.0.4")

        @app.get("/v1/models")
        async def list_models(self):
            data = []
            for name in self.models:
                if (await self._meta(name))["decoder"]:
                    data.append({"id": name, "object": "model", "owned_by": "attnc",
                                 "max_model_len": self.meta[name]["context"]})
            return {"object": "list", "data": data}

        @app.post("/v1/completions")
        async def completions(self, request: Request):
            try:
                self._admit()
            except RequestError as e:
                return openai_error(e)
            streaming = False
            try:
                name, req = await self.completion_request(await request.body())
                if req["stream"]:
                    streaming = True   # counted out when the stream ends
                    return StreamingResponse(self._counted(self.stream(name, req)),
                                             media_type="text/event-stream")
                return await self.complete(name, req)
            except RequestError as e:
                return openai_error(e)
            except Exception as e:  # noqa: BLE001
                return openai_error(_failure(e))
            finally:
                if not streaming:
                    self.in_flight -= 1

    options = {"num_cpus": threads if replica_cpus is None else replica_cpus}
    Replica = serve.deployment(_replica_class())
    models = {}
    for spec in specs:
        dep = Replica.options(name=f"model-{spec['name']}", num_replicas=replicas,
                              max_ongoing_requests=max(64, 8 * max_batch),
                              ray_actor_options=options)
        models[spec["name"]] = dep.bind(spec, threads, max_batch)
    return Ingress.bind(models, {s["name"]: s for s in specs})


def _replica_class():
    """ModelReplica with its infer batched by Ray Serve."""
    from ray import serve

    class Replica(ModelReplica):
        def __init__(self, spec, threads=1, max_batch=8, batch_wait_s=0.002):
            super().__init__(spec, threads, max_batch)
            self.infer.set_max_batch_size(max_batch)
            self.infer.set_batch_wait_timeout_s(batch_wait_s)
            try:
                asyncio.get_running_loop()
                self.start_metrics()
            except RuntimeError:       # no loop here: started by the first call
                pass

        async def metadata(self):
            if self.metrics is None:
                self.start_metrics()
            return self.meta

        @serve.batch(max_batch_size=8, batch_wait_timeout_s=0.002)
        async def infer(self, requests):
            return await ModelReplica.infer(self, requests)

    Replica.__name__ = Replica.__qualname__ = "AttncModel"
    return Replica


# ------------------------------------------------------------------ main


def main(argv=None):
    p = argparse.ArgumentParser(
        prog="attnc-serve", description="Serve attnc models over HTTP with Ray Serve: KServe v2 "
        "tensors for every model, OpenAI completions for decoders (docs/serving.md).")
    p.add_argument("models", nargs="+", metavar="DIR_OR_LIB",
                   help="a Hugging Face model directory, or a library compiled by attnc")
    p.add_argument("--weights", action="append", default=[],
                   help="the safetensors file of a library (repeat, in the libraries' order)")
    p.add_argument("--name", action="append", default=[],
                   help="the model's name in URLs (repeat, in the models' order; default: the "
                        "directory's or library's name)")
    p.add_argument("--tokenizer", help="a tokenizer.json for a decoder library")
    p.add_argument("--replicas", type=int, default=1, help="replicas of each model")
    p.add_argument("--threads", type=int, default=1, help="threads of each replica")
    p.add_argument("--replica-cpus", type=float, default=None,
                   help="Ray CPUs each replica reserves (default: --threads)")
    p.add_argument("--max-batch", type=int, default=8,
                   help="sequences decoded at once, tensor requests run at once, per replica")
    p.add_argument("--max-context", type=int, default=None,
                   help="KV cache rows (a directory: attnc --max-context)")
    p.add_argument("--kv-cache", choices=["f32", "f16", "bf16", "i8"], default=None,
                   help="a directory's KV caches' dtype (attnc --kv-cache; default f32)")
    p.add_argument("--cache-dir", default=None, help="where compiled libraries are kept")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--address", default=None,
                   help="a Ray cluster to join (ray start --head's address); default: start a "
                        "local Ray")
    p.add_argument("--proxy-location", default="EveryNode",
                   choices=["EveryNode", "HeadOnly"],
                   help="where Ray Serve runs HTTP proxies (HeadOnly for several nodes on one "
                        "machine)")
    p.add_argument("--drain-timeout", type=float, default=30.0,
                   help="on SIGTERM or Ctrl-C, seconds to let requests in flight finish "
                        "(new ones get 503) before the replicas stop")
    args = p.parse_args(argv)
    for flag in ("replicas", "threads", "max_batch"):
        if getattr(args, flag) < 1:
            p.error(f"--{flag.replace('_', '-')} must be at least 1")

    specs = resolve(args.models, args.weights, args.name, args.max_context, args.cache_dir,
                    args.tokenizer, args.kv_cache)
    import ray
    from ray import serve
    ray.init(address=args.address, logging_level="WARNING", log_to_driver=False,
             configure_logging=True)
    serve.start(http_options={"host": args.host, "port": args.port,
                              "location": args.proxy_location})
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):     # before deploying: never half-deployed
        signal.signal(sig, lambda *_: stop.set())
    app = build_app(specs, args.replicas, args.threads, args.max_batch, args.replica_cpus)
    serve.run(app, name=APP, route_prefix="/")
    names = ", ".join(s["name"] for s in specs)
    if not stop.is_set():
        print(f"attnc-serve: {names} ready at http://{args.host}:{args.port} "
              f"({args.replicas} replica(s) each)", flush=True)
    stop.wait()
    print("attnc-serve: shutting down: draining requests in flight", flush=True)
    try:
        try:
            left = serve.get_app_handle(APP).drain.remote(args.drain_timeout).result()
            if left:
                print(f"attnc-serve: {left} request(s) still in flight after "
                      f"{args.drain_timeout} s", flush=True)
        except Exception as e:  # noqa: BLE001 - shut down all the same
            print(f"attnc-serve: draining failed: {e}", flush=True)
        serve.delete(APP)
        if not args.address:
            serve.shutdown()           # a cluster's Serve may hold others' applications
    finally:
        ray.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
