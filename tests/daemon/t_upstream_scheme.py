#!/usr/bin/env python3
# Upstreams are http and https only: a file:// endpoint that would answer
# (the file exists where the request path points) is refused by libcurl's
# protocol restriction (CURLOPT_PROTOCOLS_STR, or the CURLOPT_PROTOCOLS
# bitmask before libcurl 7.85: tests/floor runs this on that build too), so
# the request falls back to local and says so.
# timeout: 60
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from edgeqd import TMP, Daemon, run_tests  # noqa: E402


def main(t):
    up = os.path.join(TMP, "fileup")
    os.makedirs(os.path.join(up, "v1"), exist_ok=True)
    answer = {"id": "cmpl-file", "object": "text_completion", "model": "file",
              "choices": [{"index": 0, "text": "FROM A FILE", "finish_reason": "stop"}]}
    with open(os.path.join(up, "v1", "completions"), "w") as f:
        json.dump(answer, f)
    d = Daemon("--pressure", "off", "--public-url", "file://" + up, "--local-tok-s", "5")
    st, h, j, raw = d.post("/v1/completions", {"prompt": "x", "max_tokens": 4,
                                               "edgeq_privacy": "public",
                                               "edgeq_slo_tokens_per_s": 50})
    t.check("answered", st == 200, st)
    t.check("not from the file:// endpoint", b"FROM A FILE" not in raw)
    t.check("ran locally after the refused endpoint",
            h.get("x-edgeq-route") == "local" and "x-edgeq-fallback" in h, h)
    log = d.logtext()
    # refused before any transfer: not "HTTP status 0" after reading the file
    t.check("the endpoint failed for its scheme (libcurl: unsupported protocol)",
            "upstream-failed" in log and "nsupported protocol" in log,
            [ln for ln in log.splitlines() if "failed" in ln][-1:])
    d.stop()


run_tests(main)
