#!/usr/bin/env python3
# /metrics edgeq_device_ops_total from the placement executor of every slot:
# without --device-queue all decode-step matrix ops are counted on the cpu and
# grow with the generated tokens; with queues run in-process (test hook
# EDGEQ_TEST_INLINE_AGENT) ops are counted on the queue, and an agent that
# dies moves them back to the cpu and counts a lost agent.
# timeout: 90
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import edgeqd  # noqa: E402
from edgeqd import value  # noqa: E402

# a queue device twice the cpu's bandwidth and free to call: matmuls go there
FAST = "[device.npu]\nops = matmul\ndtypes = all\ngflops = 1e5\nmem_gbs = 40\n" \
       "launch_us = 0\nop_us = 0\nsync_us = 0\n"


def gen(d, n):
    st, _, j, raw = d.post("/v1/completions", {"prompt": "Once upon a time", "max_tokens": n,
                                               "temperature": 0})
    assert st == 200, raw
    return j["usage"]["completion_tokens"], j["choices"][0]["text"]


def main(t):
    edgeqd.model_path()
    d = edgeqd.Daemon("--no-prefix-cache")
    try:
        m0 = d.metrics()
        t.check("cpu counter exported, 0 before any request",
                value(m0, "edgeq_device_ops_total", device="cpu") == 0,
                m0.get("edgeq_device_ops_total"))
        t.check("counter type", m0["edgeq_device_ops_total"]["type"] == "counter")
        n1, text_cpu = gen(d, 4)
        c1 = value(d.metrics(), "edgeq_device_ops_total", device="cpu")
        n2, _ = gen(d, 12)
        c2 = value(d.metrics(), "edgeq_device_ops_total", device="cpu")
        t.check("cpu ops grow with generated tokens", 0 < c1 < c2, (c1, c2))
        # one decode step per generated token after the first (prefill)
        per1, per2 = c1 / (n1 - 1), (c2 - c1) / (n2 - 1)
        t.check("same ops per decode step (%g)" % per1, per1 == per2 and per1 == int(per1),
                (n1, c1, n2, c2))
        t.check("no other device without --device-queue",
                len(m0["edgeq_device_ops_total"]["samples"]) == 1)
    finally:
        d.stop()

    prof = os.path.join(edgeqd.TMP, "fast.ini")
    with open(prof, "w") as f:
        f.write(FAST)
    d = edgeqd.Daemon("--no-prefix-cache", "--device-queue", "npu0",
                      env={"EDGEQ_DEVICES": prof, "EDGEQ_TEST_INLINE_AGENT": "0"})
    try:
        n, text = gen(d, 6)
        m = d.metrics()
        q, c = (value(m, "edgeq_device_ops_total", device=x) for x in ("npu0", "cpu"))
        t.check("ops counted on the queue", q and q > 0, (q, c))
        t.check("same text as all-cpu", text.startswith(text_cpu), (text, text_cpu))
        t.check("no agent lost", value(m, "edgeq_device_agents_lost_total") == 0)
    finally:
        d.stop()

    # the session's one pressure monitor reaches every slot's placement:
    # npu0's cooling device (a fake sysfs) at its top state pauses the
    # queue (as the module does), so decode steps stop using it
    root = os.path.join(edgeqd.TMP, "sys-cool")
    cd = os.path.join(root, "class", "thermal", "cooling_device0")
    os.makedirs(cd, exist_ok=True)
    for k, v in (("type", "edgeq-npu0"), ("cur_state", "10"), ("max_state", "10")):
        with open(os.path.join(cd, k), "w") as f:
            f.write(v + "\n")
    d = edgeqd.Daemon("--no-prefix-cache", "--slots", "2", "--device-queue", "npu0",
                      "--pressure", "psi",
                      env={"EDGEQ_DEVICES": prof, "EDGEQ_TEST_INLINE_AGENT": "0",
                           "EDGEQ_SYSFS_ROOT": root})
    try:
        gen(d, 4)  # by its end the monitor's first state has been applied
        m = d.metrics()
        q1, c1 = (value(m, "edgeq_device_ops_total", device=x) for x in ("npu0", "cpu"))
        n, text = gen(d, 6)
        m = d.metrics()
        q2, c2 = (value(m, "edgeq_device_ops_total", device=x) for x in ("npu0", "cpu"))
        t.check("a throttled queue seen by the session's monitor: decode on the cpu",
                q2 == q1 and c2 > c1, (q1, c1, q2, c2))
        t.check("throttled: same text", text.startswith(text_cpu), (text, text_cpu))
        log = d.logtext()
        t.check("one pressure monitor for the two slots",
                log.count("event=pressure") == 1 and "pressure monitor: psi" in log, log[-400:])
    finally:
        d.stop()

    # the agent dies at its 6th op: the rest runs on the cpu, no error
    d = edgeqd.Daemon("--no-prefix-cache", "--device-queue", "npu0",
                      env={"EDGEQ_DEVICES": prof, "EDGEQ_TEST_INLINE_AGENT": "5"})
    try:
        n, text = gen(d, 6)
        m = d.metrics()
        q, c = (value(m, "edgeq_device_ops_total", device=x) for x in ("npu0", "cpu"))
        t.check("agent lost: 5 ops on the queue, the rest on the cpu", q == 5 and c > 0, (q, c))
        t.check("agent lost: counted", value(m, "edgeq_device_agents_lost_total") == 1)
        t.check("agent lost: same text, no error", text.startswith(text_cpu), (text, text_cpu))
        t.check("agent lost: logged", "event=agent-lost" in d.logtext(), d.logtext()[-300:])
    finally:
        d.stop()

    # a queue that does not exist (no edgeq.ko queue): load fails naming it
    d = edgeqd.Daemon("--device-queue", "nosuchq0=npu", wait=False)
    rc = d.proc.wait(timeout=30)
    log = d.logtext()
    t.check("missing queue: serve exits non-zero naming it",
            rc != 0 and "--device-queue nosuchq0: no such queue" in log, (rc, log[-300:]))
    d.stop()


edgeqd.run_tests(main)
