#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# /metrics passes the checks `promtool check metrics` makes (its lint
# rules, applied here to a real scrape after traffic of every kind; and
# promtool itself when it is installed): HELP and TYPE for every family,
# counters end in _total, no abbreviated units (ms, sec, ...), snake_case,
# histogram series complete (_bucket with le, +Inf, _sum, _count), no
# _total/_count/_sum/_bucket on other types, no sample twice.
# timeout: 120
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from edgeqd import Daemon, run_tests  # noqa: E402

ABBREV = {"ms", "msec", "msecs", "sec", "secs", "min", "mins", "hr", "hrs",
          "us", "usec", "ns", "nsec", "kb", "mb", "gb", "kib", "mib", "gib",
          "pct", "percent"}
NAME = re.compile(r"^[a-z_:][a-z0-9_:]*$")
SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$")


def lint(text):
    problems = []
    helps, types, seen = {}, {}, set()
    for ln in text.splitlines():
        if not ln:
            continue
        if ln.startswith("# HELP "):
            name = ln.split(" ", 3)[2]
            if name in helps:
                problems.append("HELP twice: " + name)
            helps[name] = ln
            continue
        if ln.startswith("# TYPE "):
            _, _, name, typ = ln.split(" ", 3)
            if name in types:
                problems.append("TYPE twice: " + name)
            types[name] = typ
            continue
        if ln.startswith("#"):
            continue
        m = SAMPLE.match(ln)
        if not m:
            problems.append("unparsable line: " + ln)
            continue
        name, labels = m.group(1), m.group(2) or ""
        if (name, labels) in seen:
            problems.append("sample twice: %s%s" % (name, labels))
        seen.add((name, labels))
        base = name
        for suf in ("_bucket", "_sum", "_count"):
            if name.endswith(suf) and name[:-len(suf)] in types and \
                    types[name[:-len(suf)]] == "histogram":
                base = name[:-len(suf)]
        if base not in types:
            problems.append("no TYPE for " + name)
            continue
        if base not in helps:
            problems.append("no HELP for " + base)
        typ = types[base]
        if typ == "histogram" and name.endswith("_bucket") and "le=" not in labels:
            problems.append("bucket without le: " + ln)
        if typ != "histogram" and re.search(r"_(bucket|sum|count)$", name):
            problems.append("%s is a %s with a histogram suffix" % (name, typ))
    for name, typ in types.items():
        if not NAME.match(name):
            problems.append("not snake_case: " + name)
        parts = set(name.split("_"))
        if parts & ABBREV:
            problems.append("abbreviated unit in %s: %s" % (name, parts & ABBREV))
        if typ == "counter" and not name.endswith("_total"):
            problems.append("counter without _total: " + name)
        if typ != "counter" and name.endswith("_total"):
            problems.append("%s ends in _total but is a %s" % (name, typ))
        if typ == "histogram":
            if (name + "_sum", "") not in seen or \
                    (name + "_count", "") not in seen:
                problems.append("histogram without _sum/_count: " + name)
            if not any(n == name + "_bucket" and 'le="+Inf"' in lab
                       for n, lab in seen):
                problems.append("histogram without +Inf: " + name)
    return problems


def main(t):
    d = Daemon("--slots", "1")
    # greedy and 4 tokens: at least 3 gaps between passes, whatever the
    # sampler or this thread's timing does
    d.post("/v1/completions", {"prompt": "a", "max_tokens": 4,
                               "temperature": 0})
    d.post("/v1/chat/completions",
           {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2})
    d.post("/v1/completions", {"frobnicate": 1})
    d.request("DELETE", "/v1/models")
    st, _, data = d.request("GET", "/metrics")
    text = data.decode()
    t.check("/metrics answers", st == 200, st)
    problems = lint(text)
    t.check("the scrape passes promtool's lint rules", not problems,
            "\n".join(problems))
    # the lint itself catches what it is meant to
    bad = ("# HELP edgeq_x_ms_per_second x\n# TYPE edgeq_x_ms_per_second gauge\n"
           "edgeq_x_ms_per_second 1\n# TYPE edgeq_c counter\nedgeq_c 1\n")
    got = lint(bad)
    t.check("lint self-test: abbreviated unit, missing _total and HELP found",
            any("abbreviated" in p for p in got) and
            any("without _total" in p for p in got) and
            any("no HELP" in p for p in got), got)
    vals = dict(re.findall(r"^(edgeq_inter_token_latency_seconds_(?:sum|count)) (\S+)$",
                           text, re.M))
    n = float(vals.get("edgeq_inter_token_latency_seconds_count", 0))
    mean = float(vals.get("edgeq_inter_token_latency_seconds_sum", 0)) / n if n else -1
    t.check("inter-token latency is a real gap (mean %.4f s over %d)" % (mean, n),
            n > 0 and 0 <= mean < 5, vals)
    promtool = shutil.which("promtool")
    if promtool:
        r = subprocess.run([promtool, "check", "metrics"], input=text,
                           capture_output=True, text=True)
        t.check("promtool check metrics is clean", r.returncode == 0,
                r.stdout + r.stderr)
    else:
        print("promtool is not installed: its own run skipped, its rules checked above")
    d.stop()


run_tests(main)
