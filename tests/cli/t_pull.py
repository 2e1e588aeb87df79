#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# edgeq pull against a local server that behaves like a model hub: a
# resolve URL that redirects to a CDN-style URL (X-Linked-Etag and
# X-Linked-Size on the redirect), Range and If-Range, ETags, a connection
# dropped mid-file, a stalled transfer, a wrong checksum, 404/403, HTML
# instead of GGUF, a redirect to a refused scheme, a full disk. Loopback
# only; never the network.
# timeout: 240
import hashlib
import http.server
import json
import os
import shutil
import socketserver
import subprocess
import sys
import tempfile
import threading
import time

EDGEQ = os.environ.get("EDGEQ", "build/edgeq")
TOP = os.environ.get("EDGEQ_TOP", ".")
O = os.environ.get("O", "build")
TMP = tempfile.mkdtemp(dir=os.environ.get("EDGEQ_TEST_TMP", "/tmp"))


class Hub:
    """Files by name; per-name behaviour switches; a log of requests."""

    def __init__(self):
        self.files = {}
        self.linked = {}        # name -> digest stated on the redirect
        self.etag = {}          # name -> ETag on the CDN (None: none)
        self.drop_after = {}    # name -> [bytes, times]: close mid-body
        self.stall_after = {}   # name -> [bytes, times]: hang mid-body
        self.chunked = set()    # names served without a length
        self.status = {}        # name -> forced status (404, 403, ...)
        self.location = {}      # name -> forced redirect target
        self.need_token = None
        self.log = []
        self.lock = threading.Lock()
        hub = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                hub.handle(self)

        class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True
            allow_reuse_address = True

            def handle_error(self, request, client_address):
                pass  # clients that hang up are part of the tests

        self.srv = S(("127.0.0.1", 0), H)
        self.port = self.srv.server_address[1]
        self.base = "http://127.0.0.1:%d" % self.port
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def add(self, name, data):
        self.files[name] = data
        sha = hashlib.sha256(data).hexdigest()
        self.linked[name] = sha
        self.etag[name] = sha
        return sha

    def requests(self, prefix):
        with self.lock:
            return [r for r in self.log if r["path"].startswith(prefix)]

    def handle(self, h):
        path = h.path
        with self.lock:
            self.log.append({"path": path, "range": h.headers.get("Range"),
                             "if_range": h.headers.get("If-Range"),
                             "auth": h.headers.get("Authorization")})
        parts = path.split("/")
        # /OWNER/REPO/resolve/REV/.../NAME  -> redirect to the CDN
        if len(parts) >= 6 and parts[3] == "resolve":
            name = parts[-1]
            if self.need_token and h.headers.get("Authorization") != \
                    "Bearer " + self.need_token:
                return self.plain(h, 401, b"unauthorized")
            if name not in self.files:
                return self.plain(h, 404, b"Entry not found")
            h.send_response(302)
            loc = self.location.get(
                name, "http://localhost:%d/cdn/%s/%s" %
                (self.port, self.linked[name][:8], name))
            h.send_header("Location", loc)
            h.send_header("X-Linked-Etag", '"%s"' % self.linked[name])
            h.send_header("X-Linked-Size", str(len(self.files[name])))
            h.send_header("ETag", 'W/"redirect-etag"')
            h.send_header("Content-Length", "0")
            h.end_headers()
            return
        if len(parts) >= 3 and parts[1] in ("cdn", "files"):
            return self.serve_file(h, parts[-1])
        return self.plain(h, 404, b"no such path")

    def plain(self, h, code, body, ctype="text/plain"):
        h.send_response(code)
        h.send_header("Content-Type", ctype)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    def serve_file(self, h, name):
        if name in self.status:
            return self.plain(h, self.status[name], b"refused")
        if name in self.location:
            h.send_response(302)
            h.send_header("Location", self.location[name])
            h.send_header("Content-Length", "0")
            h.end_headers()
            return
        if name not in self.files:
            return self.plain(h, 404, b"no such file")
        data = self.files[name]
        etag = self.etag.get(name)
        start = 0
        rng = h.headers.get("Range")
        ifr = h.headers.get("If-Range")
        if rng and (ifr is None or (etag and ifr.strip('"') == etag)):
            start = int(rng.split("=")[1].split("-")[0])
            if start >= len(data):
                h.send_response(416)
                h.send_header("Content-Range", "bytes */%d" % len(data))
                h.send_header("Content-Length", "0")
                h.end_headers()
                return
            h.send_response(206)
            h.send_header("Content-Range", "bytes %d-%d/%d" %
                          (start, len(data) - 1, len(data)))
        else:
            h.send_response(200)
        if etag:
            h.send_header("ETag", '"%s"' % etag)
        body = data[start:]
        chunked = name in self.chunked
        if chunked:
            h.send_header("Transfer-Encoding", "chunked")
        else:
            h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        cut = None
        for table, action in ((self.drop_after, "drop"),
                              (self.stall_after, "stall")):
            spec = table.get(name)
            if spec and spec[1] > 0:
                spec[1] -= 1
                cut = (max(0, spec[0] - start), action)
        try:
            if cut:
                piece = body[:cut[0]]
                if chunked:
                    h.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                else:
                    h.wfile.write(piece)
                h.wfile.flush()
                if cut[1] == "stall":
                    time.sleep(6)
                h.close_connection = True
                return
            if chunked:
                for i in range(0, len(body), 65536):
                    c = body[i:i + 65536]
                    h.wfile.write(b"%x\r\n%s\r\n" % (len(c), c))
                h.wfile.write(b"0\r\n\r\n")
            else:
                h.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass


class Results:
    def __init__(self):
        self.passed = self.failed = self.skipped = 0

    def check(self, what, cond, detail=""):
        if cond:
            self.passed += 1
            print("ok - %s" % what)
        else:
            self.failed += 1
            print("FAIL - %s %s" % (what, str(detail)[:2000]))
        sys.stdout.flush()
        return cond

    def skip(self, what, why):
        self.skipped += 1
        print("skip - %s: %s" % (what, why))


def pull(*args, store, env=None):
    e = dict(os.environ)
    e["EDGEQ_PULL_RETRY_DELAY_MS"] = "50"
    e.pop("HF_TOKEN", None)
    e.pop("HF_ENDPOINT", None)
    e.update(env or {})
    p = subprocess.run([EDGEQ, "pull", "--json", "-d", store] + list(args),
                       capture_output=True, text=True, env=e, timeout=120)
    out = None
    if p.returncode == 0:
        try:
            out = json.loads(p.stdout)
        except ValueError:
            pass
    return p.returncode, out, p.stderr


def model_bytes():
    gen = os.path.join(TOP, O, "tools", "gguf-gen")
    path = os.path.join(TMP, "tiny.gguf")
    subprocess.run([gen, "-o", path, "--shape", "tiny", "--type", "q8_0"],
                   check=True, stdout=subprocess.DEVNULL)
    with open(path, "rb") as f:
        return f.read()


def fresh_store(tag):
    d = os.path.join(TMP, "store-" + tag)
    shutil.rmtree(d, ignore_errors=True)
    return d


def main(t):
    data = model_bytes()
    other = bytearray(data)
    other[-1] ^= 0xff  # same size, another digest (tensor data only)
    other = bytes(other)
    hub = Hub()
    sha = hub.add("m.gguf", data)
    half = len(data) // 2

    # 1. a plain URL, digest from the ETag
    st = fresh_store("plain")
    rc, out, err = pull(hub.base + "/files/m.gguf", store=st)
    t.check("plain URL pulls", rc == 0 and out, (rc, err))
    if out:
        with open(out["path"], "rb") as f:
            t.check("file in the store is byte-identical", f.read() == data)
        t.check("digest verified from the ETag",
                out["verified_by"] == "ETag" and out["sha256"] == sha, out)
        with open(out["manifest"]) as f:
            man = json.load(f)
        t.check("unsigned manifest names the model and its sha256",
                man["model"]["sha256"] == sha and "signature" not in man
                and man["schema"] == "edgeq-manifest/1", man.get("model"))
        t.check("nothing left in .partial",
                os.listdir(os.path.join(st, ".partial")) == [])

    # 2. hf: through the hub's redirect to a CDN-style URL
    st = fresh_store("hf")
    n0 = len(hub.log)
    rc, out, err = pull("hf:owner/repo/sub/dir/m.gguf", "--endpoint",
                        hub.base + "/", store=st)
    t.check("hf: pulls", rc == 0 and out, (rc, err))
    reqs = hub.log[n0:]
    t.check("hf: asks resolve/main with the file's path, then the CDN",
            len(reqs) == 2 and
            reqs[0]["path"] == "/owner/repo/resolve/main/sub/dir/m.gguf"
            and reqs[1]["path"].startswith("/cdn/"), reqs)
    if out:
        t.check("digest verified from X-Linked-Etag",
                out["verified_by"] == "X-Linked-Etag" and out["sha256"] == sha,
                out)
        t.check("store name is the file's base name",
                out["path"] == os.path.join(st, "m.gguf"), out)
    rc, out, err = pull("hf:owner/repo/m.gguf", "--endpoint", hub.base,
                        "--revision", "v1.0", store=fresh_store("rev"))
    t.check("--revision goes into the resolve URL",
            rc == 0 and hub.requests("/owner/repo/resolve/v1.0/m.gguf"),
            (rc, err))

    # 3. the connection drops mid-file: resumed with Range in the same run
    st = fresh_store("drop")
    hub.drop_after["m.gguf"] = [half, 1]
    n0 = len(hub.log)
    rc, out, err = pull(hub.base + "/files/m.gguf", store=st)
    t.check("a dropped connection is resumed", rc == 0 and out, (rc, err))
    reqs = hub.log[n0:]
    t.check("the second request asks for the rest with Range and If-Range",
            len(reqs) == 2 and reqs[1]["range"] == "bytes=%d-" % half and
            reqs[1]["if_range"] == '"%s"' % sha, reqs)
    if out:
        with open(out["path"], "rb") as f:
            t.check("resumed file is byte-identical", f.read() == data)
        t.check("two attempts reported", out["attempts"] == 2, out)

    # 4. interrupted run, then a new run resumes from the partial file
    st = fresh_store("resume")
    hub.drop_after["m.gguf"] = [half, 1]
    rc, out, err = pull(hub.base + "/files/m.gguf", "--retries", "0",
                        store=st)
    part = os.path.join(st, ".partial", "m.gguf.part")
    t.check("without retries a drop fails with exit 1 and says so",
            rc == 1 and "pull again to resume" in err, (rc, err))
    t.check("the partial file keeps what arrived",
            os.path.exists(part) and os.path.getsize(part) == half)
    t.check("nothing under the final name",
            not os.path.exists(os.path.join(st, "m.gguf")))
    n0 = len(hub.log)
    rc, out, err = pull(hub.base + "/files/m.gguf", store=st)
    t.check("the next pull resumes", rc == 0 and out and
            out["resumed_from"] == half, (rc, out, err))
    t.check("and asks only for the rest",
            hub.log[n0]["range"] == "bytes=%d-" % half, hub.log[n0:])
    if out:
        with open(out["path"], "rb") as f:
            t.check("resumed-across-runs file is byte-identical",
                    f.read() == data)

    # 5. the file changed on the server: If-Range fails, start again
    st = fresh_store("changed")
    hub.add("c.gguf", data)
    hub.drop_after["c.gguf"] = [half, 1]
    rc, _, _ = pull(hub.base + "/files/c.gguf", "--retries", "0", store=st)
    sha2 = hub.add("c.gguf", other)
    rc, out, err = pull(hub.base + "/files/c.gguf", store=st)
    t.check("a file changed on the server is fetched whole",
            rc == 0 and out and out["sha256"] == sha2, (rc, out, err))

    # 6. a stalled transfer is given up and resumed
    st = fresh_store("stall")
    hub.stall_after["m.gguf"] = [half, 1]
    rc, out, err = pull(hub.base + "/files/m.gguf", "--stall-timeout", "2",
                        store=st)
    t.check("a stalled transfer is resumed", rc == 0 and out and
            out["attempts"] == 2, (rc, out, err))

    # 7. wrong checksums
    st = fresh_store("badsum")
    hub.add("w.gguf", data)
    hub.linked["w.gguf"] = "0" * 64
    rc, out, err = pull("hf:o/r/w.gguf", "--endpoint", hub.base, store=st)
    t.check("a wrong X-Linked-Etag is exit 3", rc == 3, (rc, err))
    t.check("the error names both digests",
            "checksum mismatch" in err and "0" * 64 in err and sha in err,
            err)
    t.check("a mismatched file is in neither the store nor .partial",
            not os.path.exists(os.path.join(st, "w.gguf")) and
            os.listdir(os.path.join(st, ".partial")) == [])
    rc, out, err = pull(hub.base + "/files/m.gguf", "--sha256", "ab" * 32,
                        store=fresh_store("badsum2"))
    t.check("a wrong --sha256 is exit 3", rc == 3 and "--sha256" in err,
            (rc, err))
    rc, out, err = pull(hub.base + "/files/m.gguf", "--sha256", sha.upper(),
                        store=fresh_store("goodsum"))
    t.check("a right --sha256 (upper case) passes",
            rc == 0 and out["verified_by"] == "--sha256", (rc, err))
    rc, out, err = pull(hub.base + "/files/m.gguf", "--sha256", "xyz",
                        store=fresh_store("malsum"))
    t.check("a malformed --sha256 is a usage error", rc == 2, (rc, err))

    # 8. no digest stated
    hub.add("n.gguf", data)
    hub.etag["n.gguf"] = None
    rc, out, err = pull(hub.base + "/files/n.gguf",
                        store=fresh_store("nosum"))
    t.check("no digest: pulled, with a warning", rc == 0 and
            out["verified_by"] is None and "not verified" in err, (rc, err))
    rc, out, err = pull(hub.base + "/files/n.gguf", "--require-sha256",
                        store=fresh_store("nosum2"))
    t.check("--require-sha256 refuses it", rc == 3 and "SHA-256" in err,
            (rc, err))

    # 9. server errors
    rc, out, err = pull(hub.base + "/files/none.gguf",
                        store=fresh_store("404"))
    t.check("404 is exit 1, 'not found'", rc == 1 and "not found" in err,
            (rc, err))
    hub.add("p.gguf", data)
    hub.status["p.gguf"] = 403
    rc, out, err = pull(hub.base + "/files/p.gguf", store=fresh_store("403"))
    t.check("403 is exit 5 and mentions a token",
            rc == 5 and "token" in err, (rc, err))
    hub.need_token = "s3cret"
    n0 = len(hub.log)
    rc, out, err = pull("hf:o/r/m.gguf", "--endpoint", hub.base,
                        store=fresh_store("tok"), env={"HF_TOKEN": "s3cret"})
    reqs = hub.log[n0:]
    t.check("$HF_TOKEN goes to the hub", rc == 0 and
            reqs[0]["auth"] == "Bearer s3cret", (rc, err, reqs))
    t.check("but not to the CDN host it redirects to",
            len(reqs) == 2 and reqs[1]["auth"] is None, reqs)
    rc, out, err = pull("hf:o/r/m.gguf", "--endpoint", hub.base,
                        store=fresh_store("notok"))
    t.check("a hub that wants a token: exit 5", rc == 5, (rc, err))
    hub.need_token = None

    # 10. not a GGUF (an HTML error page with status 200)
    hub.add("h.gguf", b"<html><body>Rate limited</body></html>\n")
    rc, out, err = pull(hub.base + "/files/h.gguf", store=fresh_store("html"))
    t.check("HTML instead of GGUF is exit 3", rc == 3 and "GGUF" in err,
            (rc, err))

    # 11. redirect and scheme policy (no connection is made for refusals)
    hub.add("r.gguf", data)
    hub.location["r.gguf"] = "file:///etc/passwd"
    rc, out, err = pull(hub.base + "/files/r.gguf", store=fresh_store("file"))
    t.check("a redirect to file:// is refused", rc == 3 and
            "only http and https" in err, (rc, err))
    rc, out, err = pull("http://models.example.invalid/m.gguf",
                        store=fresh_store("remote"))
    t.check("plain http to a remote host is refused before connecting",
            rc == 3 and "not loopback" in err, (rc, err))
    rc, out, err = pull("ftp://127.0.0.1/m.gguf", store=fresh_store("ftp"))
    t.check("an ftp source is a usage error", rc == 2, (rc, err))
    for bad in ("hf:owner", "hf:owner/repo", "hf:o/r/../x.gguf",
                "hf:o w/r/x.gguf"):
        rc, out, err = pull(bad, store=fresh_store("bad"))
        t.check("bad source %r is a usage error" % bad, rc == 2, (rc, err))
    rc, out, err = pull(hub.base + "/files/m.gguf", "--name", "../evil",
                        store=fresh_store("badname"))
    t.check("a name with a path is refused", rc == 2, (rc, err))

    # 12. already present
    st = fresh_store("twice")
    pull(hub.base + "/files/m.gguf", store=st)
    rc, out, err = pull(hub.base + "/files/m.gguf", store=st)
    t.check("a second pull of the same name is refused",
            rc == 1 and "already in the store" in err, (rc, err))
    rc, out, err = pull(hub.base + "/files/m.gguf", "--force", store=st)
    t.check("--force replaces it", rc == 0, (rc, err))

    # 13. chunked (no length), and a full disk
    hub.add("k.gguf", data)
    hub.chunked.add("k.gguf")
    rc, out, err = pull(hub.base + "/files/k.gguf", store=fresh_store("chunk"))
    t.check("a chunked response (no length) pulls",
            rc == 0 and out["sha256"] == sha, (rc, err))
    small = os.path.join(TMP, "small")
    os.makedirs(small, exist_ok=True)
    mounted = os.geteuid() == 0 and subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", small],
        capture_output=True).returncode == 0
    if not mounted:
        t.skip("full disk", "cannot mount a small tmpfs here (needs root)")
    else:
        try:
            rc, out, err = pull(hub.base + "/files/m.gguf",
                                store=os.path.join(small, "s1"))
            t.check("a known size that does not fit: exit 4 before writing",
                    rc == 4 and "MiB free" in err, (rc, err))
            rc, out, err = pull(hub.base + "/files/k.gguf",
                                store=os.path.join(small, "s2"))
            t.check("the disk filling up mid-transfer: exit 4",
                    rc == 4 and "full" in err, (rc, err))
            part = os.path.join(small, "s2", ".partial", "k.gguf.part")
            t.check("what fitted is kept to resume",
                    os.path.exists(part) and os.path.getsize(part) > 0)
        finally:
            subprocess.run(["umount", small])

    # 14. two pulls of one name at once
    hub.add("s.gguf", data)
    hub.stall_after["s.gguf"] = [half, 1]
    st = fresh_store("lock")
    first = subprocess.Popen([EDGEQ, "pull", "-d", st, "--stall-timeout", "3",
                              hub.base + "/files/s.gguf"],
                             stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    deadline = time.time() + 10
    while time.time() < deadline and not hub.requests("/files/s.gguf"):
        time.sleep(0.05)
    time.sleep(0.3)
    rc, out, err = pull(hub.base + "/files/s.gguf", store=st)
    t.check("a second pull of a name being pulled: refused",
            rc == 1 and "another pull" in err, (rc, err))
    t.check("the first one still finishes", first.wait(60) == 0)


if __name__ == "__main__":
    if not os.access(os.path.join(TOP, O, "tools", "gguf-gen"), os.X_OK):
        print("gguf-gen is not built")
        sys.exit(77)
    r = Results()
    try:
        main(r)
    except Exception as e:
        import traceback
        traceback.print_exc()
        r.check("test ran to the end", False, repr(e))
    print("%d passed, %d failed, %d skipped" % (r.passed, r.failed, r.skipped))
    sys.exit(1 if r.failed else 0)
