#!/usr/bin/env python3
# The privacy router against two fake upstreams on loopback that record what
# they receive. Confidential produces zero upstream requests in every
# scenario (SLO unmeetable, local overload, local down); internal goes to the
# private endpoint; public to the public one only when the local sustained
# speed misses the SLO; a failing upstream falls back to local, said in the
# response, the log and the metrics.
# timeout: 120
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from edgeqd import Daemon, FakeUpstream, dead_port, run_tests, value  # noqa: E402

MARK = "CONFIDENTIAL-MARKER-7f3a"


def main(t):
    priv = FakeUpstream("private")
    pub = FakeUpstream("public")
    common = ["--private-url", priv.url, "--private-model", "priv-model",
              "--private-key", "pk-123", "--public-url", pub.url,
              "--public-model", "pub-model", "--local-tok-s", "50"]
    d = Daemon(*common, "--slots", "1", "--queue", "0", "--token-delay", "20")

    def post(cls=None, slo=None, stream=False, path="/v1/completions", headers=None, **kw):
        body = {"prompt": MARK if cls in (None, "confidential") else "hello", "max_tokens": 4}
        if path.endswith("chat/completions"):
            body = {"messages": [{"role": "user", "content": body["prompt"]}], "max_tokens": 4}
        if cls:
            body["edgeq_privacy"] = cls
        if slo:
            body["edgeq_slo_tokens_per_s"] = slo
        if stream:
            body["stream"] = True
        body.update(kw)
        if stream:
            return d.stream(path, body, headers)
        return d.post(path, body, headers)

    def counts():
        return len(priv.received), len(pub.received)

    # confidential: default class, with and without an SLO
    st, h, j, _ = post()
    t.check("default class is confidential -> local", st == 200 and
            h["x-edgeq-privacy"] == "confidential" and h["x-edgeq-route"] == "local")
    st, h, j, _ = post("confidential", slo=1e6)
    t.check("confidential with an unmeetable SLO stays local", st == 200 and
            h["x-edgeq-route"] == "local" and counts() == (0, 0), (st, h, counts()))
    st, h, j, _ = post("public", slo=1e6, headers={"X-Edgeq-Privacy": "confidential"})
    t.check("stricter of header and body wins (confidential)", st == 200 and
            h["x-edgeq-route"] == "local" and counts() == (0, 0))

    # internal: private endpoint when the local SLO is out of reach
    st, h, j, _ = post("internal", slo=1e6)
    t.check("internal + SLO unmet -> private endpoint", st == 200 and
            h["x-edgeq-route"] == "private" and counts() == (1, 0), (st, h, counts()))
    t.check("private answer relayed", j and j["choices"][0]["text"] == "from-private")
    rq = priv.received[-1]
    t.check("forwarded to /v1/completions", rq["path"] == "/v1/completions", rq["path"])
    t.check("edgeq fields stripped, model replaced",
            "edgeq_privacy" not in rq["body"] and "edgeq_slo_tokens_per_s" not in rq["body"] and
            rq["body"]["model"] == "priv-model", rq["body"])
    t.check("endpoint key sent, not the client's", rq["headers"].get("Authorization") == "Bearer pk-123")
    st, h, j, _ = post("internal", slo=5)
    t.check("internal + SLO met -> local", st == 200 and h["x-edgeq-route"] == "local" and
            counts() == (1, 0))
    st, h, j, _ = post("internal")
    t.check("internal without SLO -> local", h["x-edgeq-route"] == "local")

    # public: public endpoint only when the sustained speed misses the SLO
    st, h, j, _ = post("public", slo=5)
    t.check("public + SLO met -> local", st == 200 and h["x-edgeq-route"] == "local" and
            counts() == (1, 0))
    st, h, j, _ = post("public", slo=1e6, path="/v1/chat/completions")
    t.check("public + SLO unmet -> public endpoint", st == 200 and h["x-edgeq-route"] == "public"
            and counts() == (1, 1), (st, h, counts()))
    t.check("chat forwarded to /v1/chat/completions",
            pub.received[-1]["path"] == "/v1/chat/completions" and
            j["choices"][0]["message"]["content"] == "from-public")
    t.check("public endpoint gets no private key",
            pub.received[-1]["headers"].get("Authorization") != "Bearer pk-123")
    st, h, ev, raw = post("public", stream=True, headers={"X-Edgeq-Deadline": "0.001"})
    t.check("deadline header: public stream relayed as SSE",
            st == 200 and h["x-edgeq-route"] == "public" and ev[-1] == "[DONE]" and
            "".join(e["choices"][0]["text"] for e in ev[:-1]) == "from-public", (st, raw[:200]))

    # local overload: 1 slot, queue 0, one long generation running
    out = {}

    def long_one():
        out["r"] = post("confidential", max_tokens=200, temperature=0)
    th = threading.Thread(target=long_one)
    th.start()
    deadline = time.time() + 5
    while value(d.metrics(), "edgeq_requests_running") < 1 and time.time() < deadline:
        time.sleep(0.02)
    before = counts()
    st, h, j, _ = post("confidential")
    t.check("confidential under overload -> 429, not offloaded", st == 429 and counts() == before,
            (st, counts()))
    st, h, j, _ = post("public")
    t.check("public under overload -> public endpoint", st == 200 and
            h["x-edgeq-route"] == "public")
    st, h, j, _ = post("internal")
    t.check("internal under overload -> private endpoint", st == 200 and
            h["x-edgeq-route"] == "private")
    th.join()
    t.check("the long confidential one completed locally", out["r"][0] == 200 and
            out["r"][1]["x-edgeq-route"] == "local")

    fam = d.metrics()
    t.check("decisions counted by class/route/reason",
            value(fam, "edgeq_router_decisions_total", **{"class": "public", "route": "public",
                                                         "reason": "slo-unmet"}) >= 1 and
            value(fam, "edgeq_router_decisions_total", **{"class": "public", "route": "public",
                                                         "reason": "overloaded"}) == 1 and
            value(fam, "edgeq_router_decisions_total", **{"class": "confidential",
                                                         "route": "reject"}) == 1)
    t.check("upstream successes counted",
            value(fam, "edgeq_upstream_requests_total", endpoint="public", result="ok") >= 3)
    log = d.logtext()
    t.check("every decision logged without prompt text",
            log.count("event=route-decision") >= 12 and MARK not in log and "hello" not in log)
    d.stop()

    # failing upstreams: private answers 500, public is not listening
    priv.mode = "fail"
    d = Daemon("--private-url", priv.url, "--public-url",
               "http://127.0.0.1:%d/v1" % dead_port(), "--local-tok-s", "50")
    n0 = counts()[0]
    st, h, j, _ = post("internal", slo=1e6)
    t.check("private 500 -> local fallback", st == 200 and h["x-edgeq-route"] == "local" and
            h.get("x-edgeq-fallback", "").startswith("private") and
            j["edgeq"]["fallback_from"].startswith("private") and counts()[0] == n0 + 1,
            (st, h, j))
    st, h, j, _ = post("public", slo=1e6)
    t.check("public unreachable -> private tried next -> local",
            st == 200 and h["x-edgeq-route"] == "local" and "x-edgeq-fallback" in h, (st, h))
    st, h, ev, _ = post("internal", slo=1e6, stream=True)
    t.check("streaming fallback answers locally in SSE", st == 200 and
            h["x-edgeq-route"] == "local" and ev[-1] == "[DONE]")
    fam = d.metrics()
    t.check("upstream failures counted",
            value(fam, "edgeq_upstream_requests_total", result="failed") >= 3)
    t.check("fallback decisions counted",
            value(fam, "edgeq_router_decisions_total", reason="upstream-failed") >= 3)
    t.check("fallback logged", "event=upstream-failed" in d.logtext())
    d.stop()
    priv.mode = "ok"

    # local down (model still loading): confidential refused, others offloaded
    d = Daemon(*common, "--load-delay", "4000", wait=False)
    before = counts()
    st, h, j, _ = post("confidential")
    t.check("confidential with local down -> 503, not offloaded",
            st == 503 and counts() == before, (st, counts()))
    st, h, j, _ = post("public")
    t.check("public with local down -> public endpoint", st == 200 and
            h["x-edgeq-route"] == "public")
    st, h, j, _ = post("internal")
    t.check("internal with local down -> private endpoint", st == 200 and
            h["x-edgeq-route"] == "private")
    d.stop()

    every = [json.dumps(r["body"]) for r in priv.received + pub.received]
    t.check("no confidential prompt ever reached an upstream (%d upstream requests)" % len(every),
            all(MARK not in b for b in every))
    priv.close()
    pub.close()


run_tests(main)
