#!/usr/bin/env python3
# Concurrency limit and queue (429), cancellation when the client goes
# away (generation stops: metric and log), SIGTERM with requests in flight.
# Uses the --token-delay test hook so generations last long enough, and
# greedy decoding so a sampled end-of-sequence cannot end one early.
# timeout: 120
import http.client
import json
import os
import signal
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from edgeqd import Daemon, run_tests, value  # noqa: E402


def bg_post(d, body, out, key, headers=None):
    def run():
        try:
            out[key] = d.post("/v1/completions", body, headers, timeout=60)
        except Exception as e:  # noqa
            out[key] = (None, None, None, repr(e).encode())
    th = threading.Thread(target=run)
    th.start()
    return th


def wait_metric(d, name, want, timeout=10, **labels):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = value(d.metrics(), name, **labels)
        if v is not None and v >= want:
            return v
        time.sleep(0.05)
    return value(d.metrics(), name, **labels)


def main(t):
    # 1 slot, queue of 1, 20 ms per token
    d = Daemon("--slots", "1", "--queue", "1", "--token-delay", "20")
    out = {}
    a = bg_post(d, {"prompt": "a", "max_tokens": 40, "temperature": 0}, out, "a")
    wait_metric(d, "edgeq_requests_running", 1)
    b = bg_post(d, {"prompt": "b", "max_tokens": 2}, out, "b")
    wait_metric(d, "edgeq_requests_waiting", 1)
    st, h, j, _ = d.post("/v1/completions", {"prompt": "c", "max_tokens": 2})
    t.check("third request with 1 slot + queue 1 -> 429", st == 429, st)
    t.check("429 has an OpenAI error body and Retry-After",
            j and j["error"]["type"] and h.get("retry-after"), (j, h))
    a.join()
    b.join()
    t.check("running request completed", out["a"][0] == 200)
    t.check("queued request served after it", out["b"][0] == 200)
    fam = d.metrics()
    t.check("429 counted", value(fam, "edgeq_http_requests_total", status="429") == 1)
    t.check("overload counted by the router",
            value(fam, "edgeq_router_decisions_total", reason="reject-overloaded") +
            value(fam, "edgeq_router_decisions_total", reason="confidential") >= 3)

    # cancellation: stream 200 tokens, read a few, drop the connection
    gen0 = value(d.metrics(), "edgeq_generation_tokens_total")
    c = http.client.HTTPConnection("127.0.0.1", d.port, timeout=30)
    c.request("POST", "/v1/completions", json.dumps({"prompt": "x", "max_tokens": 200, "temperature": 0,
                                                     "stream": True}),
              {"Content-Type": "application/json"})
    r = c.getresponse()
    got = r.fp.read1(256) if hasattr(r.fp, "read1") else r.read(64)
    t.check("stream started", r.status == 200 and got)
    time.sleep(0.1)
    c.sock.shutdown(socket.SHUT_RDWR)
    c.close()
    v = wait_metric(d, "edgeq_requests_cancelled_total", 1)
    t.check("client disconnect cancels generation (metric)", v == 1, v)
    time.sleep(0.3)
    fam = d.metrics()
    gen = value(fam, "edgeq_generation_tokens_total") - gen0
    t.check("generation stopped well before max_tokens", gen < 100, gen)
    t.check("slot freed after cancel", value(fam, "edgeq_requests_running") == 0)
    t.check("cancellation logged", "cancelled=1" in d.logtext())

    # non-streaming client that gives up once its generation runs
    body = json.dumps({"prompt": "x", "max_tokens": 200, "temperature": 0}).encode()
    s = socket.create_connection(("127.0.0.1", d.port))
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n" % len(body) + body)
    wait_metric(d, "edgeq_requests_running", 1)
    s.close()
    v = wait_metric(d, "edgeq_requests_cancelled_total", 2)
    t.check("non-streaming client timeout cancels too", v == 2, v)

    # SIGTERM with one in flight: it finishes within the bound, exit 0
    out = {}
    deadline = time.time() + 10  # the cancelled ones gone first
    while time.time() < deadline and value(d.metrics(), "edgeq_requests_running"):
        time.sleep(0.05)
    a = bg_post(d, {"prompt": "a", "max_tokens": 20, "temperature": 0}, out, "a")
    wait_metric(d, "edgeq_requests_running", 1)
    t0 = time.time()
    rc = d.stop(signal.SIGTERM)
    a.join()
    t.check("SIGTERM: in-flight request finished", out["a"][0] == 200, out["a"][:1])
    t.check("SIGTERM: exit 0", rc == 0, rc)
    t.check("SIGTERM: quick", time.time() - t0 < 5)

    # two slots decode concurrently (token by token through one engine):
    # every answer equals its sequential greedy answer
    d = Daemon("--slots", "2", "--queue", "4")
    prompts = ["alpha", "beta gamma", "delta", "epsilon zeta eta"]
    solo = {}
    for p in prompts:
        solo[p] = d.post("/v1/completions", {"prompt": p, "max_tokens": 24,
                                             "temperature": 0})[2]["choices"][0]["text"]
    out = {}
    ths = [bg_post(d, {"prompt": p, "max_tokens": 24, "temperature": 0}, out, p)
           for p in prompts]
    for th in ths:
        th.join()
    t.check("4 requests on 2 slots all answered",
            all(out[p][0] == 200 for p in prompts), [out[p][0] for p in prompts])
    t.check("concurrent greedy answers equal the sequential ones",
            all(out[p][2]["choices"][0]["text"] == solo[p] for p in prompts))
    d.stop()

    # SIGTERM with a request longer than the bound: cancelled, exit 0 within it
    d = Daemon("--slots", "1", "--token-delay", "50", "--shutdown-timeout", "1")
    out = {}
    a = bg_post(d, {"prompt": "a", "max_tokens": 200, "temperature": 0}, out, "a")
    wait_metric(d, "edgeq_requests_running", 1)
    t0 = time.time()
    rc = d.stop(signal.SIGTERM)
    el = time.time() - t0
    a.join()
    t.check("SIGTERM past the bound: exit 0", rc == 0, rc)
    t.check("SIGTERM past the bound: stops in ~1 s", 0.8 < el < 4, el)
    t.check("SIGTERM past the bound: request answered 503", out["a"][0] == 503, out["a"][:1])
    t.check("SIGTERM logged", "stopping" in d.logtext() and "1 request(s) had to be cancelled"
            in d.logtext())


run_tests(main)
