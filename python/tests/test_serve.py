"""attnc-serve on a Ray cluster of two nodes on this machine (`ray start
--head --num-cpus 1` and `ray start --address ... --num-cpus 1`), serving two
replicas each of test/import's GPT-2 fixture (a decoder with a tokenizer)
and BERT fixture (an encoder): concurrent requests of mixed lengths, every
answer equal to the library's own (ids exactly, greedy and seeded sampling;
tensors within 1e-6), streaming equal to non-streaming, each bad request a
4xx and the server serving on; a replica killed under load, then SIGTERM
under load. Ray must start: the tests fail, never skip,
without it (scripts/setup.sh installs ray[serve])."""

import concurrent.futures
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import numpy as np
import pytest

import attnc
from attnc.generation import generate
from attnc.pretrained import StopStrings

from conftest import REPO

import ray  # noqa: F401  (a missing ray fails the module: CI installs it)

FIXTURES = os.path.join(REPO, "test", "import", "fixtures")
GPT2 = os.path.join(FIXTURES, "gpt2")
BERT = os.path.join(FIXTURES, "bert")
BIN = os.path.dirname(sys.executable)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what, check, timeout, procs=()):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for p, log in procs:
            if p.poll() is not None:
                pytest.fail(f"{what}: {p.args[0]} exited with {p.returncode}:\n{tail(log)}")
        if check():
            return
        time.sleep(0.3)
    pytest.fail(f"{what}: not within {timeout} s:\n" + "\n".join(tail(log) for _, log in procs))


def tail(path, n=4000):
    try:
        with open(path, errors="replace") as f:
            return f.read()[-n:]
    except OSError:
        return ""


def request(port, path, body=None, raw=None):
    """(status, parsed JSON body or text) of a GET, or a POST of `body`
    (JSON) or `raw` (bytes)."""
    data = raw if raw is not None else None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            status, text = r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        status, text = e.code, e.read().decode()
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text


def events(text):
    """The server-sent events of a stream: the JSON chunks, then '[DONE]'."""
    out = []
    for block in text.split("\n\n"):
        if block.strip():
            assert block.startswith("data: "), block
            payload = block[len("data: "):]
            out.append(payload if payload == "[DONE]" else json.loads(payload))
    return out


class Server:
    def __init__(self, port, procs, cache):
        self.port, self.procs, self.cache = port, procs, cache


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    # Ray's sockets need a short path: its temp dir lives in /tmp.
    ray_tmp = tempfile.mkdtemp(prefix="attnc-ray-", dir="/tmp")
    logs = tmp_path_factory.mktemp("serve-logs")
    cache = str(tmp_path_factory.mktemp("serve-cache"))
    # Token authentication, with this cluster's own token: without
    # RAY_AUTH_MODE, `ray start --head` turns it on when ~/.ray/auth_token
    # exists (any earlier local ray.init() writes one) while
    # `ray start --address` does not, and the worker is refused.
    token = os.path.join(ray_tmp, "auth_token")
    with open(token, "w") as f:
        f.write(secrets.token_hex(32))
    # Metrics reach each node's exporter every second (default 10).
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0", ATTNC=attnc.find_attnc(),
               ATTNC_CACHE_DIR=cache, RAY_metrics_report_interval_ms="1000",
               RAY_AUTH_MODE="token", RAY_AUTH_TOKEN_PATH=token)
    env.pop("RAY_AUTH_TOKEN", None)
    gcs = free_port()
    address = f"127.0.0.1:{gcs}"
    ray_exe = os.path.join(BIN, "ray")
    procs = []

    def start(name, args):
        log = logs / f"{name}.log"
        p = subprocess.Popen(args, stdout=open(log, "w"), stderr=subprocess.STDOUT, env=env,
                             start_new_session=True)
        procs.append((p, str(log)))
        return p

    def nodes():
        r = subprocess.run([ray_exe, "status", "--address", address], capture_output=True,
                           text=True, env=env)
        if r.returncode != 0:
            return 0
        active = r.stdout.split("Active:")[-1].split("Pending:")[0]
        return active.count("node_")

    common = ["--block", "--num-cpus", "1", "--disable-usage-stats",
              "--dashboard-agent-listen-port", "0"]
    def compile_models():
        # What attnc-serve compiles first, while Ray starts.
        from attnc.pretrained import _compiled
        for d in (GPT2, BERT):
            _compiled(d, cache, {"max_context": None})

    try:
        compiling = concurrent.futures.ThreadPoolExecutor(1).submit(compile_models)
        start("head", [ray_exe, "start", "--head", "--port", str(gcs), "--temp-dir", ray_tmp,
                       "--include-dashboard", "false",
                       "--ray-client-server-port", str(free_port())] + common)
        wait_for("ray start --head", lambda: _listening(gcs), 90, procs)
        start("worker", [ray_exe, "start", "--address", address] + common)
        compiling.result()
        wait_for("ray start --head, --address", lambda: nodes() >= 2, 90, procs)
        port = free_port()
        start("serve", [os.path.join(BIN, "attnc-serve"), GPT2, BERT, "--address", address,
                        "--replicas", "2", "--replica-cpus", "0.5", "--threads", "1",
                        "--max-batch", "8", "--port", str(port),
                        "--proxy-location", "HeadOnly"])
        wait_for("attnc-serve", lambda: _ready(port), 180, procs)
        yield Server(port, procs, cache)
    finally:
        # attnc-serve first (it deletes its app), then both nodes at once;
        # what is left of a node after 5 s (`ray start --block` stops its
        # processes when terminated, slowly) is killed: each was started in
        # its own session, so its process group is its processes alone.
        for group in (procs[2:], procs[:2]):
            for p, _ in group:
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + 5
            for p, _ in group:
                try:
                    p.wait(max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    pass
        for p, _ in procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
        shutil.rmtree(ray_tmp, ignore_errors=True)


def _listening(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def _ready(port):
    try:
        return request(port, "/v2/health/ready")[0] == 200
    except OSError:
        return False


@pytest.fixture(scope="module")
def gpt2(server):
    # The cache attnc-serve compiled into: the same library.
    with attnc.from_pretrained(GPT2, cache_dir=server.cache) as m:
        yield m


@pytest.fixture(scope="module")
def bert(server):
    from attnc.pretrained import _compiled, _weights
    lib = _compiled(BERT, server.cache, {"max_context": None})
    with attnc.load(lib, weights=_weights(BERT)) as m:
        yield m


# ------------------------------------------------------------------ expected


def expected_completion(m, prompt, max_tokens, temperature=0.0, top_k=0, top_p=1.0, seed=None,
                        stop=()):
    """(ids, text, finish_reason) the library gives one prompt."""
    ids = m.encode(prompt) if isinstance(prompt, str) else list(prompt)
    fired = []
    if stop:
        strings = StopStrings(m.decode, [ids], list(stop))

        def stop_when(b, generated):
            fired.append(strings(b, generated))
            return fired[-1]
    else:
        stop_when = None
    out = generate(m.model, [ids], max_tokens, temperature, top_k, top_p, 1.0, seed,
                   m.eos_token_id, None, False, stop_when)[0]
    text = m.decode(out)
    cuts = [i for i in (text.find(s) for s in stop) if i >= 0]
    ended = out[-1] in m.eos_token_id or (fired and fired[-1])
    return out, text[:min(cuts)] if cuts else text, "stop" if ended else "length"


def completion_cases(rng, n):
    """`n` completion requests of mixed prompts, lengths and settings."""
    words = ["Hello", "world", "the", "cat", "sat", "on", "a", "mat", "every", "day"]
    cases = []
    for i in range(n):
        k = int(rng.integers(1, 6))
        if i % 3 == 2:
            prompt = [int(t) for t in rng.integers(0, 100, size=int(rng.integers(1, 12)))]
            length = len(prompt)
        else:
            prompt = " ".join(rng.choice(words, size=k))
            length = 3 * len(prompt)          # at most, for this tokenizer
        body = {"model": "gpt2", "prompt": prompt,
                "max_tokens": int(rng.integers(1, max(2, min(24, 32 - length)))),
                "temperature": 0.0}
        if i % 4 == 1:
            body.update(temperature=0.8, top_k=20, top_p=0.9, seed=i)
        if i % 7 == 3:
            body["stop"] = [" a", "xyz"]
        cases.append(body)
    return cases


def bert_case(rng):
    b, s = int(rng.integers(1, 3)), int(rng.integers(2, 16))
    ids = rng.integers(0, 100, size=(b, s)).astype(np.int32)
    types = rng.integers(0, 2, size=(b, s)).astype(np.int32)
    lengths = rng.integers(1, s + 1, size=(b,)).astype(np.int32)
    body = {"inputs": [
        {"name": "ids", "datatype": "INT32", "shape": [b, s], "data": ids.ravel().tolist()},
        {"name": "token_type_ids", "datatype": "INT32", "shape": [b, s],
         "data": types.tolist()},                      # nested data is taken too
        {"name": "lengths", "datatype": "INT32", "shape": [b], "data": lengths.tolist()}]}
    return body, {"ids": ids, "token_type_ids": types, "lengths": lengths}


# ------------------------------------------------------------------ tests


def test_endpoints(server):
    port = server.port
    assert request(port, "/v2/health/live") == (200, {"live": True})
    assert request(port, "/v2/health/ready") == (200, {"ready": True})
    status, meta = request(port, "/v2/models/bert")
    assert status == 200 and meta["name"] == "bert"
    assert [i["name"] for i in meta["inputs"]] == ["ids", "token_type_ids", "lengths"]
    assert meta["outputs"] == [{"name": "hidden", "datatype": "FP32", "shape": [-1, -1, 32]}]
    assert request(port, "/v2/models/gpt2/ready") == (200, {"name": "gpt2", "ready": True})
    status, models = request(port, "/v1/models")
    assert status == 200
    assert [(d["id"], d["max_model_len"]) for d in models["data"]] == [("gpt2", 32)]


def test_concurrent_requests_equal_the_library(server, gpt2, bert):
    """Completions (greedy and seeded sampling, text and id prompts, stop
    strings) and tensor requests, all at once from 32 clients."""
    rng = np.random.default_rng(0)
    completions = completion_cases(rng, 150)
    tensors = [bert_case(rng) for _ in range(50)]

    def call(job):
        kind, body = job
        path = "/v1/completions" if kind == "lm" else "/v2/models/bert/infer"
        return request(server.port, path, body)

    jobs = [("lm", c) for c in completions] + [("enc", b) for b, _ in tensors]
    order = rng.permutation(len(jobs))
    with concurrent.futures.ThreadPoolExecutor(32) as pool:
        answers = dict(zip(order, pool.map(call, [jobs[i] for i in order])))
    ids_seen = set()
    for i, body in enumerate(completions):
        status, r = answers[i]
        assert status == 200, (body, r)
        assert r["id"] not in ids_seen
        ids_seen.add(r["id"])
        ids, text, reason = expected_completion(
            gpt2, body["prompt"], body["max_tokens"], body["temperature"],
            body.get("top_k", 0), body.get("top_p", 1.0), body.get("seed"),
            body.get("stop", ()))
        choice = r["choices"][0]
        assert choice["token_ids"] == ids, body
        assert choice["text"] == text, body
        assert choice["finish_reason"] == reason, body
    for j, (body, arrays) in enumerate(tensors):
        status, r = answers[len(completions) + j]
        assert status == 200, r
        want = bert.run(arrays)["hidden"]
        (out,) = r["outputs"]
        assert out["name"] == "hidden" and out["shape"] == list(want.shape)
        got = np.asarray(out["data"], dtype=np.float32).reshape(want.shape)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)


def test_metrics(server):
    """/metrics: Ray's (Serve's among them) and attnc's, after the load of
    the test before."""
    def sample(text, name, model):
        values = [float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                  if line.startswith(name + "{") and f'model="{model}"' in line]
        return sum(values)

    texts = []

    def exported():
        status, text = request(server.port, "/metrics")
        texts.append(text)
        return status == 200 and sample(text, "ray_attnc_generated_tokens_total", "gpt2") > 0 \
            and sample(text, "ray_attnc_infer_requests_total", "bert") > 0
    wait_for("attnc's metrics", exported, 30)
    text = texts[-1]
    assert "# TYPE ray_attnc_decode_batch_size histogram" in text
    assert text.count("# TYPE ray_attnc_decode_batch_size ") == 1
    assert "ray_attnc_queue_depth{" in text and "ray_serve_" in text


def test_streaming_equals_non_streaming(server):
    bodies = [{"model": "gpt2", "prompt": "the cat sat", "max_tokens": 12, "temperature": 0},
              {"model": "gpt2", "prompt": "Hello world", "max_tokens": 15, "temperature": 0,
               "stop": [" a", "Q"]},
              {"model": "gpt2", "prompt": [5, 17, 42], "max_tokens": 9, "temperature": 0.7,
               "seed": 3},
              {"model": "gpt2", "prompt": ["on a mat", [1, 2, 3]], "max_tokens": 6,
               "temperature": 0}]
    for body in bodies:
        status, whole = request(server.port, "/v1/completions", body)
        assert status == 200, whole
        status, text = request(server.port, "/v1/completions", dict(body, stream=True))
        assert status == 200
        chunks = events(text)
        assert chunks[-1] == "[DONE]"
        for choice in whole["choices"]:
            mine = [c["choices"][0] for c in chunks[:-1]
                    if c["choices"][0]["index"] == choice["index"]]
            assert "".join(c["text"] for c in mine) == choice["text"], body
            assert sum((c["token_ids"] for c in mine), []) == choice["token_ids"], body
            assert [c["finish_reason"] for c in mine][-1] == choice["finish_reason"]
            assert all(c["finish_reason"] is None for c in mine[:-1])


def test_bad_requests_get_4xx_and_the_server_serves_on(server):
    good_lm = {"model": "gpt2", "prompt": "the cat", "max_tokens": 4, "temperature": 0}
    good_enc, _ = bert_case(np.random.default_rng(1))
    ids = good_enc["inputs"][0]
    cases = [
        ("/v1/completions", b'{"model": "gpt2", "prompt": "x"', 400, "not valid JSON"),
        ("/v1/completions", b'[1, 2]', 400, "JSON object"),
        ("/v1/completions", dict(good_lm, model="nope"), 404, "no model 'nope'"),
        ("/v1/completions", dict(good_lm, model="bert"), 400, "does not generate"),
        ("/v1/completions", dict(good_lm, max_tokens=0), 400, "max_tokens"),
        ("/v1/completions", dict(good_lm, max_tokens=-3), 400, "max_tokens"),
        ("/v1/completions", dict(good_lm, max_tokens=2.5), 400, "max_tokens"),
        ("/v1/completions", dict(good_lm, prompt="the cat " * 20), 400, "context of 32"),
        ("/v1/completions", dict(good_lm, prompt=[1, 2, 300]), 400, "outside the vocabulary"),
        ("/v1/completions", dict(good_lm, prompt=[]), 400, "'prompt'"),
        ("/v1/completions", dict(good_lm, temperature=-1), 400, "temperature"),
        ("/v1/completions", dict(good_lm, top_p=0), 400, "top_p"),
        ("/v1/completions", dict(good_lm, stop=[""]), 400, "stop"),
        ("/v2/models/nope/infer", good_enc, 404, "no model 'nope'"),
        ("/v2/models/bert/infer", b"{", 400, "not valid JSON"),
        ("/v2/models/bert/infer", {"inputs": [dict(ids, datatype="FP32")] +
                                   good_enc["inputs"][1:]}, 400, "input 'ids'"),
        ("/v2/models/bert/infer", {"inputs": [dict(ids, shape=[1, 2, 3])] +
                                   good_enc["inputs"][1:]}, 400, "input 'ids'"),
        ("/v2/models/bert/infer", {"inputs": [dict(ids, shape=[1, 64], data=[0] * 64)] +
                                   good_enc["inputs"][1:]}, 400, "input 'ids'"),
        ("/v2/models/bert/infer", {"inputs": [dict(ids, data=ids["data"][:-1])] +
                                   good_enc["inputs"][1:]}, 400, "input 'ids'"),
        ("/v2/models/bert/infer", {"inputs": good_enc["inputs"][1:]}, 400, "ids"),
        ("/v2/models/bert/infer", {"inputs": good_enc["inputs"] + [
            {"name": "extra", "datatype": "FP32", "shape": [1], "data": [0]}]}, 400,
         "no input 'extra'"),
    ]
    for path, body, status, words in cases:
        raw = body if isinstance(body, bytes) else None
        got, r = request(server.port, path, None if raw else body, raw)
        assert got == status, (path, body, r)
        message = r["error"]["message"] if path.startswith("/v1") else r["error"]
        assert words in message, (path, message)
        assert request(server.port, "/v1/completions", good_lm)[0] == 200
        assert request(server.port, "/v2/models/bert/infer", good_enc)[0] == 200


def replica_pids(server, deployment):
    """The processes of `deployment`'s replicas in this test's cluster: the
    descendants of its `ray start` processes (the machine may run others)."""
    children = {}
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmd = f.read().split(b"\0")[0].decode(errors="replace")
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append((int(pid), cmd))
    found, todo = [], [p.pid for p, _ in server.procs[:2]]
    while todo:
        for pid, cmd in children.get(todo.pop(), []):
            todo.append(pid)
            if cmd.startswith(f"ray::ServeReplica:attnc:{deployment}"):
                found.append(pid)
    return found


def test_a_replica_killed_under_load(server, gpt2):
    """Every request still gets its answer, or a 503 naming the cause; Ray
    Serve brings the deployment back to two replicas."""
    # Two replicas first: Serve may be replacing one. CI once found a single
    # replica here, before any test had killed one; its output did not say why.
    pids = []

    def two_replicas():
        pids[:] = replica_pids(server, "model-gpt2")
        return len(pids) == 2

    wait_for("two gpt2 replicas", two_replicas, 90, server.procs)
    rng = np.random.default_rng(5)
    cases = completion_cases(rng, 120)
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        futures = [pool.submit(request, server.port, "/v1/completions", c) for c in cases]
        time.sleep(0.3)
        os.kill(pids[0], signal.SIGKILL)
        in_flight = sum(not f.done() for f in futures)
        answers = [f.result() for f in futures]
    failed = 0
    for body, (status, r) in zip(cases, answers):
        if status == 503:
            assert "died" in r["error"]["message"], r
            failed += 1
            continue
        assert status == 200, (body, r)
        ids, _, _ = expected_completion(
            gpt2, body["prompt"], body["max_tokens"], body["temperature"],
            body.get("top_k", 0), body.get("top_p", 1.0), body.get("seed"),
            body.get("stop", ()))
        assert r["choices"][0]["token_ids"] == ids
    assert in_flight > 0             # killed under load
    assert failed < len(cases) // 2  # (lost replicas' requests go to the other)
    wait_for("a second gpt2 replica again",
             lambda: len(set(replica_pids(server, "model-gpt2")) - {pids[0]}) == 2, 90,
             server.procs)
    good = {"model": "gpt2", "prompt": "the cat", "max_tokens": 4, "temperature": 0}
    for _ in range(4):
        assert request(server.port, "/v1/completions", good)[0] == 200


def test_python_m_attnc_serve_help():
    r = subprocess.run([sys.executable, "-m", "attnc.serve", "--help"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and "--replicas" in r.stdout and "--max-batch" in r.stdout


def test_sigterm_drains_the_requests_in_flight(server):
    """The last test of the server: SIGTERM under load. Requests in flight
    finish (200), new ones get 503 while they do, then the application is
    deleted (Ray's proxy answers 404) and attnc-serve exits 0."""
    serve_proc = server.procs[2][0]
    body = {"model": "gpt2", "prompt": "the cat sat", "max_tokens": 20, "temperature": 0}
    _, whole = request(server.port, "/v1/completions", body)

    def call(_):
        try:
            status, r = request(server.port, "/v1/completions", body)
        except urllib.error.URLError as e:       # the proxy gone: refused, never reset
            assert isinstance(e.reason, ConnectionRefusedError), e
            return "refused", None, time.monotonic()
        return status, r, time.monotonic()

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        futures = [pool.submit(call, i) for i in range(400)]
        time.sleep(0.5)
        serve_proc.send_signal(signal.SIGTERM)
        term = time.monotonic()
        answers = [f.result() for f in futures]
    # Every answer is in; what is left is Ray deleting the application and
    # stopping (the replicas' graceful stop, then Ray's own), which took over
    # 60 s on a loaded 2-core machine beside ctest's other tests.
    assert serve_proc.wait(180) == 0
    after = 0
    for status, r, done in answers:
        if status == 200:
            assert r["choices"][0]["token_ids"] == whole["choices"][0]["token_ids"]
            after += done > term
        elif status == 503:
            assert r["error"]["message"] == "the server is shutting down"
        else:
            assert status in (404, "refused"), (status, r)
    assert after > 0                       # answered while draining
