#!/usr/bin/env python3
# Configuration: flag > EDGEQ_* environment > config file > default, for
# every kind of key; config file errors; the documented keys all exist.
# timeout: 60
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from edgeqd import EDGEQ, TMP, Daemon, model_path, run_tests, value  # noqa: E402


def write(name, text):
    p = os.path.join(TMP, name)
    with open(p, "w") as f:
        f.write(text)
    return p


def queue_and_slots(d):
    fam = d.metrics()
    return value(fam, "edgeq_queue_limit"), value(fam, "edgeq_slots")


def main(t):
    model = model_path()
    conf = write("edgeq.conf", "[limits]\nqueue = 3\nslots = 2\n[router]\nprivacy-default = public\n"
                 "[model]\nmodel = %s\n" % model)
    # file only (and --config): queue 3 from the file, model from the file
    d = Daemon("--config", conf, model=False)
    q, s = queue_and_slots(d)
    t.check("file beats default", q == 3 and s == 2, (q, s))
    st, h, j, _ = d.post("/v1/completions", {"prompt": "x", "max_tokens": 1})
    t.check("file sets privacy-default", h.get("x-edgeq-privacy") == "public", h)
    d.stop()
    # env beats file
    d = Daemon("--config", conf, model=False, env={"EDGEQ_QUEUE": "5"})
    t.check("env beats file", queue_and_slots(d) == (5, 2))
    d.stop()
    # flag beats env and file
    d = Daemon("--config", conf, "--queue", "7", model=False, env={"EDGEQ_QUEUE": "5"})
    t.check("flag beats env", queue_and_slots(d) == (7, 2))
    d.stop()
    # EDGEQ_CONFIG names the file
    env = {k: v for k, v in os.environ.items() if not k.startswith("EDGEQ_")}
    env["EDGEQ_CONFIG"] = write("missing-model.conf", "[model]\nmodel = /nonexistent.gguf\n")
    r = subprocess.run([EDGEQ, "serve", "--port", "0", "--log-target", "stderr"],
                       env=env, capture_output=True, text=True, timeout=20)
    t.check("EDGEQ_CONFIG is read (its model is tried)", r.returncode != 0 and
            "/nonexistent.gguf" in r.stderr, r.stderr[-300:])

    def refused(what, args, envx=None, needle=""):
        e = dict(env)
        e.pop("EDGEQ_CONFIG", None)
        e.update(envx or {})
        r = subprocess.run([EDGEQ, "serve"] + args, env=e, capture_output=True, text=True,
                           timeout=20)
        t.check(what, r.returncode == 2 and needle in r.stderr, (r.returncode, r.stderr[-300:]))

    refused("unknown key in the file -> exit 2",
            ["--config", write("bad1.conf", "[x]\nfrobnicate = 1\n"), "-m", model], None,
            "unknown key 'frobnicate'")
    refused("bad value in the file -> exit 2",
            ["--config", write("bad2.conf", "slots = many\n"), "-m", model], None, "slots")
    refused("syntax error in the file -> exit 2",
            ["--config", write("bad3.conf", "[unclosed\n"), "-m", model], None, "syntax")
    refused("missing explicit config -> exit 2", ["--config", "/nonexistent/edgeq.conf"], None,
            "/nonexistent/edgeq.conf")
    refused("bad env value -> exit 2", ["-m", model], {"EDGEQ_SLOTS": "x"}, "EDGEQ_SLOTS")
    refused("bad privacy-default -> exit 2", ["-m", model, "--privacy-default", "secret"], None,
            "privacy-default")
    refused("no model -> exit 2", ["--config", "/dev/null"], None, "no model")

    # every key of the shipped example file is a flag
    top = os.environ.get("EDGEQ_TOP", ".")
    keys = []
    for line in open(os.path.join(top, "tools/systemd/edgeq.conf")):
        line = line.strip().lstrip("#").strip()
        if "=" in line and not line.startswith("["):
            keys.append(line.split("=")[0].strip())
    h = subprocess.run([EDGEQ, "help", "serve"], capture_output=True, text=True).stdout
    missing = [k for k in keys if "--" + k + " " not in h and "--" + k + "\n" not in h and
               "--%s " % k not in h]
    t.check("every key of tools/systemd/edgeq.conf is a flag (%d keys)" % len(keys),
            keys and not missing, missing)
    doc = open(os.path.join(top, "Documentation/admin-guide.rst")).read() \
        if os.path.exists(os.path.join(top, "Documentation/admin-guide.rst")) else ""
    flags = [l.split("--")[1].split()[0] for l in h.splitlines() if l.strip().startswith("--")
             or ", --" in l]
    undocumented = [f for f in flags if f != "help" and "``%s``" % f not in doc]
    t.check("every serve flag documented in the admin guide", not undocumented, undocumented)


run_tests(main)
