#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# The API-keys file: one key per application. A key registered as
# confidential is never routed upstream whatever its requests assert; a
# public one is, when the SLO asks for it; endpoints and routes a key may
# not use are refused (403); a rate limit and a concurrency cap answer 429
# with Retry-After; /metrics needs a key unless --metrics-public; every
# routing decision is audited with the key's name and never the prompt;
# SIGHUP reloads the keys without dropping a stream in flight, and a broken
# file keeps the old keys.
# timeout: 180
import hashlib
import json
import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from edgeqd import TMP, Daemon, FakeUpstream, run_tests  # noqa: E402

MARK = "PROMPT-TEXT-MARKER-91c2"


def h(tok):
    return hashlib.sha256(tok.encode()).hexdigest()


def keys_text(extra=""):
    return ("[conf-app]\nkey_sha256 = %s\nclass = confidential\n\n"
            "[pub-app]\nkey_sha256 = %s\nclass = public\n\n"
            "[local-only]\nkey_sha256 = %s\nclass = public\nroutes = local\n\n"
            "[capped]\nkey_sha256 = %s\nconcurrency = 1\n\n"
            "[slow]\nkey_sha256 = %s\nrate = 2/min\nburst = 1\n\n"
            "[scraper]\nkey_sha256 = %s\nendpoints = metrics\n%s" %
            (h("k-conf"), h("k-pub"), h("k-local"), h("k-capped"),
             h("k-slow"), h("k-scrape"), extra))


def write_keys(path, text):
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.chmod(path + ".tmp", 0o600)
    os.rename(path + ".tmp", path)


def auth(tok):
    return {"Authorization": "Bearer " + tok}


def main(t):
    pub = FakeUpstream("public")
    keys = os.path.join(TMP, "keys.conf")
    write_keys(keys, keys_text())
    d = Daemon("--keys-file", keys, "--public-url", pub.url,
               "--public-model", "pub-model", "--local-tok-s", "5",
               "--slots", "2", "--queue", "4")

    def post(tok, cls=None, slo=None, path="/v1/completions", **kw):
        body = {"prompt": MARK, "max_tokens": 3, "temperature": 0}
        if cls:
            body["edgeq_privacy"] = cls
        if slo:
            body["edgeq_slo_tokens_per_s"] = slo
        body.update(kw)
        if "messages" in body:
            del body["prompt"]
        return d.post(path, body, auth(tok) if tok else None)

    # unknown or missing keys
    st, hd, j, _ = post(None)
    t.check("no key: 401 with an OpenAI error body", st == 401 and
            j["error"]["type"] == "invalid_request_error", (st, j))
    st, _, _, _ = post("k-nope")
    t.check("unknown key: 401", st == 401, st)

    # a confidential application never leaves the box, whatever it asks
    st, hd, j, _ = post("k-conf", cls="public", slo=1e6)
    t.check("confidential key asking public + unmeetable SLO stays local",
            st == 200 and hd["x-edgeq-privacy"] == "confidential" and
            hd["x-edgeq-route"] == "local" and not pub.received, (st, hd))
    st, hd, j, _ = post("k-conf", cls="public", slo=1e6,
                        path="/v1/chat/completions",
                        messages=[{"role": "user", "content": MARK}])
    t.check("... and on chat completions", st == 200 and
            hd["x-edgeq-route"] == "local" and not pub.received, (st, hd))

    # a public one goes upstream when the SLO needs it
    st, hd, j, _ = post("k-pub", cls="public", slo=1e6)
    t.check("public key + SLO unmet -> public endpoint",
            st == 200 and hd["x-edgeq-route"] == "public" and
            len(pub.received) == 1, (st, hd))
    st, hd, j, _ = post("k-pub", cls="confidential", slo=1e6)
    t.check("a public app may still ask for confidential",
            st == 200 and hd["x-edgeq-route"] == "local" and
            len(pub.received) == 1, (st, hd))
    st, hd, j, _ = post("k-local", cls="public", slo=1e6)
    t.check("routes = local keeps a public request local",
            st == 200 and hd["x-edgeq-route"] == "local" and
            len(pub.received) == 1, (st, hd))

    # endpoints
    st, hd, raw = d.request("GET", "/metrics", headers=auth("k-pub"))
    j = json.loads(raw)
    t.check("/metrics is not among a default key's endpoints: 403",
            st == 403 and "pub-app" in j["error"]["message"], (st, j))
    st, hd, body = d.request("GET", "/metrics", headers=auth("k-scrape"))
    t.check("the scraper key reads /metrics", st == 200, st)
    st, hd, j, _ = post("k-scrape")
    t.check("... and may not generate: 403", st == 403, st)
    st, _, _ = d.request("GET", "/metrics")
    t.check("/metrics without a key: 401", st == 401, st)
    st, _, _ = d.request("GET", "/health")
    t.check("/health needs no key", st == 200, st)

    # rate: burst 1, 2/min
    st1, _, _, _ = post("k-slow")
    st2, hd, j, _ = post("k-slow")
    t.check("rate limit: the second request in a burst of 1 is 429",
            st1 == 200 and st2 == 429 and
            "slow" in j["error"]["message"], (st1, st2, j))
    t.check("429 has Retry-After of the bucket's refill (about 30 s)",
            hd.get("retry-after") and 25 <= int(hd["retry-after"]) <= 31,
            hd.get("retry-after"))

    # concurrency cap of 1: a stream in flight blocks the second request
    out = {}

    # a second daemon whose tokens take 40 ms each, so a request stays in
    # flight long enough
    d2 = Daemon("--keys-file", keys, "--slots", "2", "--queue", "4",
                "--token-delay", "40")
    th = threading.Thread(target=lambda: out.update(
        r=d2.post("/v1/completions", {"prompt": "a", "max_tokens": 40,
                                      "temperature": 0},
                  auth("k-capped"), timeout=60)))
    th.start()
    deadline = time.time() + 10
    while time.time() < deadline:
        if "edgeq_requests_running 1" in d2.request(
                "GET", "/metrics", headers=auth("k-scrape"))[2].decode():
            break
        time.sleep(0.05)
    st, hd, j, _ = d2.post("/v1/completions", {"prompt": "b", "max_tokens": 2},
                           auth("k-capped"))
    t.check("concurrency cap 1: a second request in flight is 429",
            st == 429 and "in flight" in j["error"]["message"], (st, j))
    st, _, _, _ = d2.post("/v1/completions", {"prompt": "b", "max_tokens": 2},
                          auth("k-pub"))
    t.check("another key is not held back by it", st == 200, st)

    # SIGHUP while the capped stream is in flight: new keys, stream survives
    write_keys(keys, keys_text("\n[late]\nkey_sha256 = %s\n" % h("k-late")))
    d2.proc.send_signal(signal.SIGHUP)
    deadline = time.time() + 10
    st = 0
    while time.time() < deadline:
        st, _, _, _ = d2.post("/v1/completions",
                              {"prompt": "c", "max_tokens": 1},
                              auth("k-late"))
        if st == 200:
            break
        time.sleep(0.1)
    t.check("SIGHUP: a key added to the file works", st == 200, st)
    st, hd, j, _ = d2.post("/v1/completions", {"prompt": "b", "max_tokens": 2},
                           auth("k-capped"))
    t.check("the reload kept the capped key's in-flight count (429)",
            st == 429, (st, j))
    th.join(60)
    t.check("the request in flight across the reload finished",
            out.get("r") and out["r"][0] == 200, out.get("r"))
    # the key's slot is released when the server has finished the
    # connection (MHD's completion callback), which can come a moment
    # after the client has read the last byte: not at once, but soon
    deadline = time.time() + 5
    while True:
        st, _, _, _ = d2.post("/v1/completions",
                              {"prompt": "b", "max_tokens": 2},
                              auth("k-capped"))
        if st != 429 or time.time() > deadline:
            break
        time.sleep(0.05)
    t.check("after it finished the capped key is admitted again", st == 200,
            st)

    # a broken file keeps the old keys
    write_keys(keys, "[broken\n")
    d2.proc.send_signal(signal.SIGHUP)
    time.sleep(0.5)
    st, _, _, _ = d2.post("/v1/completions", {"prompt": "c", "max_tokens": 1},
                          auth("k-late"))
    t.check("a broken keys file on SIGHUP: the old keys still work",
            st == 200, st)
    t.check("... and the error is logged with the file's line",
            "not reloaded" in d2.logtext() and "keys.conf:1" in d2.logtext(),
            d2.logtext()[-800:])
    d2.stop()

    # the audit trail: key names, class and route, never the prompt
    log = d.logtext()
    t.check("routing decisions are logged with the key's name",
            "key conf-app route confidential -> local" in log and
            "key pub-app route public -> public" in log, log[-1500:])
    t.check("the prompt text is never logged", MARK not in log)
    d.stop()

    # start-up refusals
    write_keys(keys, "[a]\nclass = public\n")
    try:
        Daemon("--keys-file", keys)
        t.check("a keys file without hashes refuses to start", False)
    except RuntimeError as e:
        t.check("a keys file without hashes refuses to start, naming it",
                "[a] has no key_sha256" in str(e), str(e)[-400:])
    write_keys(keys, keys_text())
    os.chmod(keys, 0o666)
    try:
        Daemon("--keys-file", keys)
        t.check("a world-writable keys file refuses to start", False)
    except RuntimeError as e:
        t.check("a world-writable keys file refuses to start",
                "writable by others" in str(e), str(e)[-400:])
    os.chmod(keys, 0o600)
    d3 = Daemon("--keys-file", keys, "--metrics-public")
    st, _, _ = d3.request("GET", "/metrics")
    t.check("--metrics-public: /metrics without a key", st == 200, st)
    st, _, _, _ = d3.post("/v1/completions", {"prompt": "x", "max_tokens": 1})
    t.check("... but generation still needs one", st == 401, st)
    d3.stop()


run_tests(main)
