#!/usr/bin/env python3
# edgeq serve on loopback: health while loading, models, completions, chat,
# SSE streaming in OpenAI's shapes, stop sequences, metrics that parse,
# every 4xx path, bearer token, unix socket.
# timeout: 120
import json
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from edgeqd import Daemon, parse_prometheus, run_tests, value, TMP  # noqa: E402


def chat_body(**kw):
    b = {"messages": [{"role": "system", "content": "be brief"},
                                   {"role": "user", "content": "hello there"}],
         "max_tokens": 8, "temperature": 0}
    b.update(kw)
    return b


def check_stream(t, events, kind, n_max):
    t.check("%s stream ends with [DONE]" % kind, events and events[-1] == "[DONE]")
    objs = [e for e in events if e != "[DONE]"]
    want = "chat.completion.chunk" if kind == "chat" else "text_completion"
    t.check("%s chunks have id/object/created/model/choices" % kind,
            all(e["object"] == want and e["id"] and isinstance(e["created"], int)
                and e["model"] and "choices" in e for e in objs))
    t.check("%s chunks share one id" % kind, len({e["id"] for e in objs}) == 1)
    fins = [c["finish_reason"] for e in objs for c in e["choices"] if c["finish_reason"]]
    t.check("%s stream has exactly one finish_reason" % kind, len(fins) == 1, fins)
    if kind == "chat":
        t.check("first chat delta carries the role",
                objs[0]["choices"][0]["delta"].get("role") == "assistant")
        text = "".join(c["delta"].get("content", "") for e in objs for c in e["choices"])
    else:
        text = "".join(c["text"] for e in objs for c in e["choices"])
    return text, fins[0] if fins else None


def main(t):
    d = Daemon("--load-delay", "1500", "--slots", "2", wait=False)
    st, h, body = d.request("GET", "/health")
    t.check("health is 503 while loading", st == 503, st)
    j = json.loads(body)
    t.check("loading health has an OpenAI error body",
            j["error"]["message"] == "model is loading" and j["error"]["type"])
    st, _, j, _ = d.post("/v1/completions", {"prompt": "hi", "max_tokens": 2})
    t.check("generation while loading is 503 (confidential stays)", st == 503, st)
    d.wait_ready()
    st, h, body = d.request("GET", "/health")
    t.check("health is 200 when ready", st == 200 and json.loads(body)["status"] == "ok")

    st, _, body = d.request("GET", "/v1/models")
    j = json.loads(body)
    t.check("models lists one model",
            st == 200 and j["object"] == "list" and len(j["data"]) == 1 and
            j["data"][0]["object"] == "model" and j["data"][0]["id"])
    model_id = j["data"][0]["id"]

    # completions, non-streaming
    st, h, j, _ = d.post("/v1/completions", {"prompt": "Once upon a time", "max_tokens": 12,
                                             "temperature": 0})
    ok = st == 200 and j["object"] == "text_completion" and j["id"].startswith("cmpl-")
    t.check("completion 200 with object text_completion", ok, (st, j))
    t.check("completion carries model, created, choices[0].text",
            j["model"] == model_id and isinstance(j["created"], int) and
            isinstance(j["choices"][0]["text"], str) and j["choices"][0]["index"] == 0)
    u = j["usage"]
    t.check("usage counts tokens", u["completion_tokens"] >= 1 and u["prompt_tokens"] >= 2 and
            u["total_tokens"] == u["prompt_tokens"] + u["completion_tokens"], u)
    t.check("finish_reason is length or stop", j["choices"][0]["finish_reason"] in ("length", "stop"))
    t.check("response says the route", h.get("x-edgeq-route") == "local" and
            h.get("x-edgeq-privacy") == "confidential")
    greedy = j["choices"][0]["text"]
    st, _, j2, _ = d.post("/v1/completions", {"prompt": "Once upon a time", "max_tokens": 12,
                                              "temperature": 0})
    t.check("greedy completion is repeatable (prefix cache on)",
            j2["choices"][0]["text"] == greedy, (greedy, j2["choices"][0]["text"]))

    # stop sequence: cut the greedy text before a piece of itself (printable
    # ASCII: the synthetic model also emits bytes that are not UTF-8)
    cands = [k for k in range(1, len(greedy) - 1)
             if all(33 <= ord(ch) < 127 for ch in greedy[k:k + 2]) and
             greedy.find(greedy[k:k + 2]) == k]
    t.check("greedy text has a printable piece to stop at", bool(cands), greedy)
    if cands:
        k = cands[len(cands) // 2]
        stop = greedy[k:k + 2]
        st, _, j3, _ = d.post("/v1/completions", {"prompt": "Once upon a time",
                                                  "max_tokens": 12, "temperature": 0,
                                                  "stop": [stop, "never-seen-xyz"]})
        t.check("stop sequence cuts the text and says stop",
                j3["choices"][0]["text"] == greedy[:k] and
                j3["choices"][0]["finish_reason"] == "stop", (greedy, stop, j3["choices"]))

    # chat, non-streaming
    st, h, j, _ = d.post("/v1/chat/completions", chat_body())
    t.check("chat 200 with chat.completion", st == 200 and j["object"] == "chat.completion" and
            j["id"].startswith("chatcmpl-"), (st, j))
    m = j["choices"][0]["message"]
    t.check("chat message is the assistant's", m["role"] == "assistant" and
            isinstance(m["content"], str))
    t.check("chat usage present", j["usage"]["completion_tokens"] >= 1)
    st, _, j, _ = d.post("/v1/chat/completions", chat_body(
        messages=[{"role": "user", "content": [{"type": "text", "text": "hi"}]}]))
    t.check("content as text parts accepted", st == 200, (st, j))

    # streaming
    st, h, ev, raw = d.stream("/v1/chat/completions", chat_body(stream=True, max_tokens=6))
    t.check("chat stream is text/event-stream", st == 200 and
            h.get("content-type", "").startswith("text/event-stream"), (st, h))
    text, fin = check_stream(t, ev, "chat", 6)
    st, _, jn, _ = d.post("/v1/chat/completions", chat_body(max_tokens=6))
    t.check("streamed text equals the non-streamed (greedy)",
            text == jn["choices"][0]["message"]["content"], (text, jn["choices"][0]))
    st, h, ev, raw = d.stream("/v1/completions", {"prompt": "abc", "max_tokens": 5,
                                                  "stream": True, "temperature": 0,
                                                  "stream_options": {"include_usage": True}})
    text, fin = check_stream(t, ev, "completions", 5)
    usage = [e for e in ev if e != "[DONE]" and e.get("usage")]
    t.check("include_usage adds a final usage chunk with empty choices",
            len(usage) == 1 and usage[0]["choices"] == [] and
            usage[0]["usage"]["completion_tokens"] >= 1, usage)

    # metrics
    try:
        fam = d.metrics()
        t.check("metrics parse (HELP, TYPE, histograms cumulative)", True)
    except Exception as e:  # noqa
        fam = {}
        t.check("metrics parse (HELP, TYPE, histograms cumulative)", False, repr(e))
    t.check("generated tokens counted", (value(fam, "edgeq_generation_tokens_total") or 0) >= 10)
    t.check("prompt tokens counted", (value(fam, "edgeq_prompt_tokens_total") or 0) >= 10)
    t.check("TTFT histogram observed", (value(fam, "edgeq_time_to_first_token_seconds_count") or 0) >= 5)
    t.check("inter-token latency histogram observed",
            (value(fam, "edgeq_inter_token_latency_seconds_count") or 0) >= 5)
    t.check("running and waiting gauges", value(fam, "edgeq_requests_running") == 0 and
            value(fam, "edgeq_requests_waiting") == 0)
    t.check("KV cache use exported", 0 < (value(fam, "edgeq_kv_cache_usage_ratio") or 0) <= 1)
    t.check("router decisions counted", value(fam, "edgeq_router_decisions_total",
                                              **{"class": "confidential", "route": "local"}) >= 5)
    t.check("no family is a placeholder zero without a source",
            all(f["help"] for f in fam.values()))

    # bad requests: each 4xx path, in OpenAI's error shape
    def bad(what, path, body, status, param=None, headers=None, raw=False):
        st, _, data = d.request("POST", path, body if raw else json.dumps(body), headers)
        try:
            err = json.loads(data)["error"]
            shape = isinstance(err["message"], str) and isinstance(err["type"], str) and \
                "param" in err and "code" in err
        except Exception:  # noqa
            err, shape = None, False
        t.check("%s -> %d with an error body" % (what, status),
                st == status and shape and (param is None or err["param"] == param), (st, data[:200]))

    bad("malformed JSON", "/v1/completions", '{"prompt": "x",', 400, raw=True)
    bad("body not an object", "/v1/completions", "[1,2]", 400, raw=True)
    bad("empty body", "/v1/completions", "", 400, raw=True)
    bad("unknown field", "/v1/completions", {"prompt": "x", "frobnicate": 1}, 400, "frobnicate")
    bad("mistyped max_tokens", "/v1/completions", {"prompt": "x", "max_tokens": "9"}, 400, "max_tokens")
    bad("mistyped temperature", "/v1/chat/completions", chat_body(temperature="hot"), 400, "temperature")
    bad("mistyped stream", "/v1/completions", {"prompt": "x", "stream": "yes"}, 400, "stream")
    bad("temperature out of range", "/v1/completions", {"prompt": "x", "temperature": 9}, 400,
        "temperature")
    bad("max_tokens over the cap", "/v1/completions", {"prompt": "x", "max_tokens": 10 ** 6}, 400,
        "max_tokens")
    bad("n > 1", "/v1/completions", {"prompt": "x", "n": 2}, 400, "n")
    bad("missing prompt", "/v1/completions", {"max_tokens": 1}, 400, "prompt")
    bad("missing messages", "/v1/chat/completions", {"model": "x"}, 400, "messages")
    st, _, j, _ = d.post("/v1/completions", {"model": "no-such-model", "prompt": "a"})
    t.check("a model this server does not have: 404 model_not_found",
            st == 404 and j["error"]["code"] == "model_not_found" and
            j["error"]["param"] == "model", (st, j))
    st, _, j, _ = d.post("/v1/completions", {"model": model_id, "prompt": "a",
                                             "max_tokens": 1})
    t.check("the model's own id is served", st == 200, (st, j))
    bad("messages not an array", "/v1/chat/completions", {"messages": "hi"}, 400, "messages")
    bad("bad role", "/v1/chat/completions", {"messages": [{"role": "wizard", "content": "x"}]},
        400, "messages")
    bad("prompt-only field in chat", "/v1/chat/completions", chat_body(prompt="x"), 400, "prompt")
    bad("unknown privacy class", "/v1/completions", {"prompt": "x", "edgeq_privacy": "secret"},
        400, "edgeq_privacy")
    bad("bad privacy header", "/v1/completions", {"prompt": "x"}, 400,
        headers={"X-Edgeq-Privacy": "secret"})
    bad("prompt longer than the context", "/v1/completions", {"prompt": "word " * 5000}, 400,
        "prompt")
    bad("oversized body", "/v1/completions", {"prompt": "x" * (1100 * 1024)}, 413)
    # a body announced far over the limit is refused before it is sent
    s = socket.create_connection(("127.0.0.1", d.port), timeout=10)
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: 100000000\r\n\r\n{")
    resp = b""
    while b'"error"' not in resp:
        try:
            b = s.recv(4096)
        except OSError:
            break
        if not b:
            break
        resp += b
    s.close()
    t.check("100 MB announced -> 413 before the body is read",
            resp.startswith(b"HTTP/1.1 413") and b'"error"' in resp, resp[:60])
    st, _, data = d.request("GET", "/v1/nothing")
    t.check("unknown path -> 404 JSON", st == 404 and json.loads(data)["error"])
    st, _, data = d.request("GET", "/v1/completions")
    t.check("wrong method -> 405 JSON", st == 405 and json.loads(data)["error"])
    t.check("daemon still healthy after bad requests", d.request("GET", "/health")[0] == 200)
    logtext = d.logtext()
    t.check("prompts never reach the log", "Once upon a time" not in logtext and
            "hello there" not in logtext)
    t.check("clean exit on SIGTERM", d.stop() == 0)

    # bearer token and unix socket
    keyf = os.path.join(TMP, "key")
    with open(keyf, "w") as f:
        f.write("s3cret\n")
    sock = os.path.join(TMP, "edgeq.sock")
    d = Daemon("--api-key-file", keyf, "--unix-socket", sock, "--socket-mode", "0600")
    st, _, data = d.request("GET", "/v1/models")
    t.check("no token -> 401 JSON", st == 401 and json.loads(data)["error"])
    st, _, data = d.request("GET", "/v1/models", headers={"Authorization": "Bearer nope"})
    t.check("wrong token -> 401", st == 401)
    st, _, data = d.request("GET", "/v1/models", headers={"Authorization": "Bearer s3cret"})
    t.check("right token -> 200", st == 200)
    t.check("health needs no token", d.request("GET", "/health")[0] == 200)
    t.check("unix socket has the configured mode", (os.stat(sock).st_mode & 0o777) == 0o600,
            oct(os.stat(sock).st_mode))
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)
    s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    resp = b""
    while True:
        b = s.recv(4096)
        if not b:
            break
        resp += b
    s.close()
    t.check("unix socket serves HTTP", resp.startswith(b"HTTP/1.1 200"), resp[:40])
    t.check("clean exit", d.stop() == 0)
    t.check("unix socket removed on exit", not os.path.exists(sock))
    t.check("default listen is loopback", "listening on 127.0.0.1 port" in d.logtext())

    # prompts reach the log only when asked for
    d = Daemon("--log-prompts")
    d.post("/v1/completions", {"prompt": "PROMPT-IN-LOG-42", "max_tokens": 2})
    d.stop()
    t.check("--log-prompts writes the prompt", "PROMPT-IN-LOG-42" in d.logtext())


run_tests(main)
