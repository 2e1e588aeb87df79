#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# edgeq top's ENGINE lines show the running service from its /metrics and
# /health: the model, tok/s, slots running and waiting, TTFT, KV use, the
# weights and per-device ops; with a keys file, --api-key reads them; with
# no service, the line says why.
# timeout: 90
import hashlib
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from edgeqd import EDGEQ, TMP, Daemon, run_tests  # noqa: E402


def top(*args):
    env = dict(os.environ, EDGEQ_NO_BPF="1")
    r = subprocess.run([EDGEQ, "top", "-n", "2"] + list(args), capture_output=True,
                       text=True, env=env, timeout=30)
    return r.returncode, r.stdout + r.stderr


def main(t):
    d = Daemon("--slots", "2", "--queue", "3")
    for _ in range(3):
        d.post("/v1/completions", {"prompt": "a", "max_tokens": 4})
    rc, out = top("--url", "http://127.0.0.1:%d" % d.port)
    eng = [ln for ln in out.splitlines() if ln.startswith("ENGINE")]
    t.check("top draws ENGINE lines from the service", rc == 0 and eng, out[-600:])
    line = eng[-1] if eng else ""
    t.check("... with the model, the slots and the queue",
            "synthetic tiny" in line and "slots 0/2 running, 0/3 waiting" in line,
            line)
    m = re.search(r"TTFT mean ([0-9.]+) ms", line)
    t.check("... and the TTFT from its histogram (a mean above zero)",
            m is not None and float(m.group(1)) > 0, line)
    t.check("... the weights and the per-device ops",
            any(ln.startswith("WEIGHTS mmap") and "cpu" in ln
                for ln in out.splitlines()), out[-600:])
    d.stop()

    keys = os.path.join(TMP, "top-keys.conf")
    with open(keys, "w") as f:
        f.write("[scraper]\nkey_sha256 = %s\nendpoints = metrics\n" %
                hashlib.sha256(b"k-top").hexdigest())
    os.chmod(keys, 0o600)
    d = Daemon("--keys-file", keys)
    rc, out = top("--url", "http://127.0.0.1:%d" % d.port)
    t.check("behind a keys file without a key: says 401",
            "HTTP 401" in out, out[-400:])
    rc, out = top("--url", "http://127.0.0.1:%d" % d.port, "--api-key", "k-top")
    t.check("with a key that may read /metrics: shown",
            "slots 0/1 running" in out, out[-400:])
    d.stop()
    rc, out = top("--url", "http://127.0.0.1:1")
    t.check("no service: the ENGINE line says so, top still runs",
            rc == 0 and "no edgeq serve answers" in out, out[-400:])


run_tests(main)
