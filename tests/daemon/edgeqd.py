# SPDX-License-Identifier: GPL-2.0-or-later
"""Helpers for the daemon tests: start `edgeq serve` on loopback, talk to it,
parse SSE and Prometheus text, and run fake OpenAI-compatible upstreams that
record what they receive. Loopback addresses only."""
import http.client
import itertools
import http.server
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

EDGEQ = os.environ.get("EDGEQ", "build/edgeq")
TOP = os.environ.get("EDGEQ_TOP", ".")
O = os.environ.get("O", "build")
TMP = tempfile.mkdtemp(dir=os.environ.get("EDGEQ_TEST_TMP", "/tmp"))


class Skip(Exception):
    pass


def make_cert(tag):
    """A self-signed certificate for localhost and 127.0.0.1 in TMP: the
    certificate's and the key's paths, and its public-key pin (curl's
    sha256//BASE64 of the SPKI)."""
    import base64
    import hashlib
    c, k = os.path.join(TMP, tag + ".crt"), os.path.join(TMP, tag + ".key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                    "-keyout", k, "-out", c, "-days", "2", "-subj",
                    "/CN=localhost", "-addext",
                    "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                   check=True, capture_output=True)
    der = subprocess.run(["openssl", "x509", "-in", c, "-pubkey", "-noout"],
                         check=True, capture_output=True).stdout
    spki = subprocess.run(["openssl", "pkey", "-pubin", "-outform", "der"],
                          input=der, check=True, capture_output=True).stdout
    pin = "sha256//" + base64.b64encode(hashlib.sha256(spki).digest()).decode()
    return c, k, pin


def model_path():
    """The tiny synthetic model (built once per test run with gguf-gen)."""
    m = os.environ.get("EDGEQ_SERVE_MODEL")
    if m:
        return m
    gen = os.path.join(TOP, O, "tools", "gguf-gen")
    cache = os.path.join(os.environ.get("EDGEQ_TEST_TMP", TMP), "serve-tiny.gguf")
    if os.path.exists(cache):
        return cache
    if not os.access(gen, os.X_OK):
        raise Skip("no model: %s (the decoder's generator) is not built" % gen)
    tmp = cache + ".%d" % os.getpid()
    subprocess.run([gen, "-o", tmp, "--shape", "tiny", "--type", "q8_0"],
                   check=True, stdout=subprocess.DEVNULL)
    os.rename(tmp, cache)
    return cache


class Results:
    def __init__(self):
        self.passed = self.failed = 0

    def check(self, what, cond, detail=""):
        if cond:
            self.passed += 1
            print("ok - %s" % what)
        else:
            self.failed += 1
            print("FAIL - %s %s" % (what, detail))
        sys.stdout.flush()
        return cond

    def finish(self):
        print("%d passed, %d failed, 0 skipped" % (self.passed, self.failed))
        sys.exit(1 if self.failed else 0)


def run_tests(main):
    """Run main(results); turn Skip into exit 77."""
    r = Results()
    try:
        main(r)
    except Skip as e:
        print(e)
        sys.exit(77)
    except Exception as e:  # a crash is a failure, with what we have
        import traceback
        traceback.print_exc()
        r.check("test ran to the end", False, repr(e))
    r.finish()


_seq = itertools.count()


class Daemon:
    def __init__(self, *args, env=None, wait=True, model=True):
        n = next(_seq)
        self.portfile = os.path.join(TMP, "port.%d" % n)
        self.logpath = os.path.join(TMP, "log.%d" % n)
        cmd = [EDGEQ, "serve", "--port", "0", "--port-file", self.portfile,
               "--log-target", "stderr", "--config", "/dev/null"]
        if model:
            cmd += ["-m", model_path()]
        cmd += list(args)
        e = dict(os.environ)
        for k in list(e):
            if k.startswith("EDGEQ_") and k not in ("EDGEQ_TEST_TMP", "EDGEQ_CALIBRATION"):
                del e[k]
        if env:
            e.update(env)
        self.log = open(self.logpath, "w")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=self.log, env=e)
        self.port = None
        deadline = time.time() + 10
        while time.time() < deadline and self.port is None:
            if os.path.exists(self.portfile):
                self.port = int(open(self.portfile).read())
            elif self.proc.poll() is not None:
                raise RuntimeError("daemon exited: %s" % self.logtext())
            else:
                time.sleep(0.02)
        if wait:
            self.wait_ready()

    def logtext(self):
        if not self.log.closed:
            self.log.flush()
        return open(self.logpath).read()

    def wait_ready(self, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            st, _, _ = self.request("GET", "/health")
            if st == 200:
                return
            time.sleep(0.05)
        raise RuntimeError("daemon not ready: %s" % self.logtext())

    def conn(self, timeout=30):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, timeout=30):
        c = self.conn(timeout)
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body)
        c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        data = r.read()
        hdrs = {k.lower(): v for k, v in r.getheaders()}
        c.close()
        return r.status, hdrs, data

    def post(self, path, body, headers=None, timeout=30):
        st, h, data = self.request("POST", path, body, headers, timeout)
        try:
            j = json.loads(data)
        except ValueError:
            j = None
        return st, h, j, data

    def stream(self, path, body, headers=None):
        """POST with stream: true; returns status, headers, [events], raw."""
        st, h, data = self.request("POST", path, body, headers)
        return st, h, parse_sse(data.decode()), data

    def metrics(self):
        st, _, data = self.request("GET", "/metrics")
        assert st == 200, st
        return parse_prometheus(data.decode())

    def stop(self, sig=signal.SIGTERM, timeout=20):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode


def parse_sse(text):
    """Events of a text/event-stream body: JSON objects, and the string
    '[DONE]'. Raises ValueError on anything but data: lines and blanks."""
    events = []
    for block in text.split("\n\n"):
        if not block.strip():
            continue
        for line in block.split("\n"):
            if not line.startswith("data: "):
                raise ValueError("not an SSE data line: %r" % line)
            payload = line[6:]
            events.append(payload if payload == "[DONE]" else json.loads(payload))
    return events


_sample = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})? (\S+)$')
_label = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(,|$)')


def parse_prometheus(text):
    """Parse the text exposition format strictly. Returns
    {family: {"type", "help", "samples": [(name, labels, value)]}}."""
    fam = {}
    for n, line in enumerate(text.split("\n"), 1):
        if not line:
            continue
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            parts = line.split(" ", 3)
            if len(parts) < 4:
                raise ValueError("line %d: bad comment %r" % (n, line))
            f = fam.setdefault(parts[2], {"type": None, "help": None, "samples": []})
            if parts[1] == "TYPE":
                if parts[3] not in ("counter", "gauge", "histogram", "summary", "untyped"):
                    raise ValueError("line %d: bad type" % n)
                if f["samples"]:
                    raise ValueError("line %d: TYPE after samples" % n)
                f["type"] = parts[3]
            else:
                f["help"] = parts[3]
            continue
        if line.startswith("#"):
            continue
        m = _sample.match(line)
        if not m:
            raise ValueError("line %d: bad sample %r" % (n, line))
        name, labels, value = m.group(1), {}, float(m.group(4))
        if m.group(3):
            rest = m.group(3)
            while rest:
                lm = _label.match(rest)
                if not lm:
                    raise ValueError("line %d: bad labels %r" % (n, rest))
                labels[lm.group(1)] = lm.group(2)
                rest = rest[lm.end():]
        base = name
        for suf in ("_bucket", "_sum", "_count"):
            if name.endswith(suf) and name[:-len(suf)] in fam and \
                    fam[name[:-len(suf)]]["type"] == "histogram":
                base = name[:-len(suf)]
        if base not in fam or not fam[base]["type"]:
            raise ValueError("line %d: %s has no TYPE" % (n, name))
        fam[base]["samples"].append((name, labels, value))
    for name, f in fam.items():
        if not f["help"]:
            raise ValueError("%s has no HELP" % name)
        if f["type"] == "histogram":
            buckets = [(s[1]["le"], s[2]) for s in f["samples"] if s[0].endswith("_bucket")]
            vals = [v for _, v in buckets]
            if vals != sorted(vals) or buckets[-1][0] != "+Inf":
                raise ValueError("%s: buckets not cumulative" % name)
            count = [s[2] for s in f["samples"] if s[0] == name + "_count"][0]
            if count != vals[-1]:
                raise ValueError("%s: +Inf bucket != count" % name)
    return fam


def value(fam, name, **labels):
    """Sum of the samples of @name whose labels include @labels."""
    f = fam.get(name)
    for suf in ("_bucket", "_sum", "_count"):
        if not f and name.endswith(suf):
            f = fam.get(name[:-len(suf)])
    if not f:
        return None
    tot = 0.0
    for n, l, v in f["samples"]:
        if n == name and all(l.get(k) == str(x) for k, x in labels.items()):
            tot += v
    return tot


class FakeUpstream:
    """An OpenAI-compatible server on 127.0.0.1 that records requests.
    mode: "ok" answers; "fail" answers 500."""

    def __init__(self, name, mode="ok"):
        self.name, self.mode, self.received = name, mode, []
        up = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                n = int(self.headers.get("Content-Length", 0))
                body = self.rfile.read(n)
                up.received.append({"path": self.path, "headers": dict(self.headers),
                                    "body": json.loads(body or b"{}")})
                if up.mode == "fail":
                    msg = b'{"error":{"message":"boom"}}'
                    self.send_response(500)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(msg)))
                    self.end_headers()
                    self.wfile.write(msg)
                    return
                req = up.received[-1]["body"]
                text = "from-" + up.name
                chat = self.path.endswith("/chat/completions")
                if req.get("stream"):
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Connection", "close")
                    self.end_headers()
                    for piece in (text[:5], text[5:]):
                        ch = {"id": "up-1", "object": "chat.completion.chunk" if chat else "text_completion",
                              "created": 1, "model": req.get("model", "x"),
                              "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}
                                          if chat else {"index": 0, "text": piece, "finish_reason": None}]}
                        self.wfile.write(b"data: " + json.dumps(ch).encode() + b"\n\n")
                        self.wfile.flush()
                    self.wfile.write(b"data: [DONE]\n\n")
                    self.close_connection = True
                    return
                if chat:
                    out = {"id": "up-1", "object": "chat.completion", "created": 1,
                           "model": req.get("model", "x"),
                           "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                        "finish_reason": "stop"}],
                           "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
                else:
                    out = {"id": "up-1", "object": "text_completion", "created": 1,
                           "model": req.get("model", "x"),
                           "choices": [{"index": 0, "text": text, "finish_reason": "stop"}],
                           "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
                data = json.dumps(out).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.port = self.httpd.server_address[1]
        self.url = "http://127.0.0.1:%d/v1" % self.port
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def dead_port():
    """A loopback port with nothing listening."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p
