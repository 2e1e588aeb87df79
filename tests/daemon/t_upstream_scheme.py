#!/usr/bin/env python3
# Upstreams are http and https only: a file:// endpoint that would answer
# (the file exists where the request path points) is refused when serve
# starts, naming the scheme (tests/floor runs this on the floor build too;
# libcurl's protocol restriction, CURLOPT_PROTOCOLS_STR or the bitmask
# before 7.85, stays behind it as a second line).
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
    try:
        Daemon("--pressure", "off", "--public-url", "file://" + up, "--local-tok-s", "5")
        t.check("a file:// endpoint is refused at start", False)
    except RuntimeError as e:
        t.check("a file:// endpoint is refused at start, naming why",
                "only http and https" in str(e), str(e)[-300:])


run_tests(main)
