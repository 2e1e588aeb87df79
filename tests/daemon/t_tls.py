#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# TLS on the listener: HTTPS verified against the certificate's CA, plain
# HTTP refused on that port, SIGHUP switching to a new certificate while a
# request in flight under the old one finishes, a broken certificate kept
# out (at start: refused with the file names; on reload: the old one stays).
# timeout: 120
import http.client
import os
import shutil
import signal
import ssl
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from edgeqd import TMP, Daemon, Skip, make_cert, run_tests  # noqa: E402



def https(port, ca, path="/health", body=None, timeout=30):
    ctx = ssl.create_default_context(cafile=ca)
    c = http.client.HTTPSConnection("127.0.0.1", port, context=ctx,
                                    timeout=timeout)
    if body is None:
        c.request("GET", path)
    else:
        c.request("POST", path, body=body,
                  headers={"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def main(t):
    if not shutil.which("openssl"):
        raise Skip("openssl is not installed: no certificates to test with")
    c1, k1, _ = make_cert("one")
    c2, k2, _ = make_cert("two")
    cert, key = os.path.join(TMP, "srv.crt"), os.path.join(TMP, "srv.key")
    shutil.copy(c1, cert)
    shutil.copy(k1, key)

    class TlsDaemon(Daemon):
        def wait_ready(self, timeout=30):
            deadline = time.time() + timeout
            while time.time() < deadline:
                try:
                    if https(self.port, c1)[0] == 200:
                        return
                except OSError:
                    pass
                time.sleep(0.05)
            raise RuntimeError("not ready: " + self.logtext())

    d = TlsDaemon("--tls-cert", cert, "--tls-key", key, "--token-delay", "40")
    st, data = https(d.port, c1)
    t.check("HTTPS /health verified against the certificate", st == 200, st)
    try:
        d.request("GET", "/health", timeout=3)
        plain = True
    except (OSError, http.client.HTTPException):
        plain = False
    t.check("plain HTTP on the TLS port gets no answer", not plain)
    try:
        https(d.port, c2)
        t.check("a client trusting another CA refuses the server", False)
    except ssl.SSLError:
        t.check("a client trusting another CA refuses the server", True)

    # a request in flight across the reload
    res = {}
    th = threading.Thread(target=lambda: res.update(r=https(
        d.port, c1, "/v1/completions",
        b'{"prompt":"a","max_tokens":25,"temperature":0}')))
    th.start()
    time.sleep(0.4)
    shutil.copy(c2, cert)
    shutil.copy(k2, key)
    d.proc.send_signal(signal.SIGHUP)
    deadline = time.time() + 10
    ok = False
    while time.time() < deadline and not ok:
        try:
            ok = https(d.port, c2)[0] == 200
        except (OSError, ssl.SSLError):
            time.sleep(0.1)
    t.check("SIGHUP: new connections get the new certificate", ok)
    th.join(30)
    t.check("the request in flight under the old certificate finished",
            res.get("r") and res["r"][0] == 200, res.get("r"))

    # a broken certificate on reload: the current one stays
    with open(cert, "w") as f:
        f.write("not a certificate\n")
    d.proc.send_signal(signal.SIGHUP)
    time.sleep(0.8)
    st, _ = https(d.port, c2)
    t.check("a broken certificate on SIGHUP: the old one still serves",
            st == 200, st)
    t.check("... and the log says why",
            "TLS certificate was not reloaded" in d.logtext(),
            d.logtext()[-600:])
    d.stop()

    # start-up refusals
    try:
        Daemon("--tls-cert", cert, "--tls-key", key)
        t.check("a broken certificate at start is refused", False)
    except RuntimeError as e:
        t.check("a broken certificate at start is refused, naming the files",
                "PEM certificate" in str(e) and cert in str(e), str(e)[-400:])
    try:
        Daemon("--tls-cert", c1)
        t.check("--tls-cert without --tls-key is refused", False)
    except RuntimeError as e:
        t.check("--tls-cert without --tls-key is refused",
                "--tls-key" in str(e), str(e)[-400:])


run_tests(main)
