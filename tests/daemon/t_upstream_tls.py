#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# Upstreams over https: verified against --upstream-ca (an upstream the CA
# does not sign is not used: the request falls back to local, said in
# X-Edgeq-Fallback), a public-key pin that does not match is refused too,
# one that matches is used, and plain http to a host that is not loopback
# is refused at start (before anything is sent anywhere).
# timeout: 120
import http.server
import os
import shutil
import ssl
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from edgeqd import Daemon, FakeUpstream, Skip, make_cert, run_tests  # noqa: E402



class TlsUpstream:
    """FakeUpstream's handler behind TLS."""

    def __init__(self, name, cert, key):
        plain = FakeUpstream(name)
        handler = plain.httpd.RequestHandlerClass
        plain.close()
        self.received = plain.received
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.url = "https://127.0.0.1:%d/v1" % self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


def main(t):
    if not shutil.which("openssl"):
        raise Skip("openssl is not installed: no certificates to test with")
    c1, k1, pin1 = make_cert("up1")
    _, _, pin2 = make_cert("up2")
    up = TlsUpstream("public", c1, k1)
    body = {"prompt": "hello", "max_tokens": 2, "edgeq_privacy": "public",
            "edgeq_slo_tokens_per_s": 1e6}
    common = ["--public-url", up.url, "--public-model", "m", "--local-tok-s",
              "5"]

    d = Daemon(*common, "--upstream-ca", c1)
    st, h, j, _ = d.post("/v1/completions", body)
    t.check("an https upstream signed by --upstream-ca is used",
            st == 200 and h["x-edgeq-route"] == "public" and
            len(up.received) == 1, (st, h))
    d.stop()

    d = Daemon(*common)
    st, h, j, _ = d.post("/v1/completions", body)
    t.check("an upstream the system CAs do not sign is not used: local",
            st == 200 and h["x-edgeq-route"] == "local" and
            "x-edgeq-fallback" in h and len(up.received) == 1, (st, h))
    d.stop()

    d = Daemon(*common, "--upstream-ca", c1, "--public-pin", pin2)
    st, h, j, _ = d.post("/v1/completions", body)
    t.check("a key pin that does not match: not used, local",
            st == 200 and h["x-edgeq-route"] == "local" and
            len(up.received) == 1, (st, h))
    d.stop()

    d = Daemon(*common, "--upstream-ca", c1, "--public-pin", pin1)
    st, h, j, _ = d.post("/v1/completions", body)
    t.check("the matching pin: used", st == 200 and
            h["x-edgeq-route"] == "public" and len(up.received) == 2, (st, h))
    d.stop()

    for args, want in (
            (["--public-url", "http://upstream.example.invalid/v1"],
             "only over https"),
            (["--private-url", "ftp://127.0.0.1/v1"], "only http and https"),
            (["--public-url", up.url, "--public-pin", "abc"], "sha256//")):
        try:
            Daemon(*args)
            t.check("refused at start: %s" % args, False)
        except RuntimeError as e:
            t.check("refused at start: %s" % " ".join(args), want in str(e),
                    str(e)[-300:])


run_tests(main)
